// devices_by_free_memory through NVML, which ships with the driver and reads every GPU's memory
// without a CUDA context. Loaded with dlopen so that wick neither links nor needs it.
#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "wick/cuda.h"
#include "wick/error.h"

namespace wick::cuda {

namespace {

// The few NVML declarations used (nvml.h, stable ABI since the _v2 entry points).
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
struct nvmlMemory_t {
  unsigned long long total, free, used;
};

struct Nvml {
  void* lib = nullptr;
  std::string error;
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  nvmlReturn_t (*count)(unsigned*) = nullptr;
  nvmlReturn_t (*handle)(unsigned, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;
};

template <class F>
bool load(void* lib, const char* name, F& f) {
  f = reinterpret_cast<F>(dlsym(lib, name));
  return f != nullptr;
}

const Nvml& nvml() {
  static const Nvml n = [] {
    Nvml n;
    n.lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!n.lib) {
      const char* e = dlerror();
      n.error = e ? e : "dlopen failed";
      return n;
    }
    if (!load(n.lib, "nvmlInit_v2", n.init) || !load(n.lib, "nvmlShutdown", n.shutdown) ||
        !load(n.lib, "nvmlDeviceGetCount_v2", n.count) || !load(n.lib, "nvmlDeviceGetHandleByIndex_v2", n.handle) ||
        !load(n.lib, "nvmlDeviceGetMemoryInfo", n.memory) || !load(n.lib, "nvmlErrorString", n.error_string)) {
      n.error = "libnvidia-ml.so.1 lacks an expected function";
      n.lib = nullptr;
    }
    return n;
  }();
  return n;
}

void check(const Nvml& n, nvmlReturn_t r, const char* what) {
  if (r != 0)
    detail::raise<DeviceError>("devices_by_free_memory", "NVML ", what, " failed: ", n.error_string(r));
}

}  // namespace

std::vector<int> devices_by_free_memory() {
  const Nvml& n = nvml();
  WICK_CHECK(n.lib != nullptr, DeviceError, "devices_by_free_memory",
             "NVML (libnvidia-ml.so.1, installed with the NVIDIA driver) could not be loaded: ", n.error);
  static std::mutex mu;  // NVML init/shutdown are reference counted, but keep the calls in order
  std::lock_guard<std::mutex> lock(mu);
  check(n, n.init(), "nvmlInit");
  struct Gpu {
    int index;
    unsigned long long free;
  };
  std::vector<Gpu> gpus;
  try {
    unsigned count = 0;
    check(n, n.count(&count), "nvmlDeviceGetCount");
    for (unsigned i = 0; i < count; ++i) {
      nvmlDevice_t h = nullptr;
      check(n, n.handle(i, &h), "nvmlDeviceGetHandleByIndex");
      nvmlMemory_t m{};
      check(n, n.memory(h, &m), "nvmlDeviceGetMemoryInfo");
      gpus.push_back({int(i), m.free});
    }
  } catch (...) {
    n.shutdown();
    throw;
  }
  n.shutdown();
  // NVML numbers GPUs in PCI bus order, as CUDA_VISIBLE_DEVICES does with CUDA_DEVICE_ORDER=PCI_BUS_ID
  // (and, for identical GPUs, with CUDA's default order too). Ties keep that order.
  std::stable_sort(gpus.begin(), gpus.end(), [](const Gpu& a, const Gpu& b) { return a.free > b.free; });
  std::vector<int> out;
  for (auto& g : gpus) out.push_back(g.index);
  return out;
}

}  // namespace wick::cuda
