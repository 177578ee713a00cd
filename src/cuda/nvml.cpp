// devices_by_free_memory through NVML, which ships with the driver and reads every GPU's memory
// without a CUDA context. Loaded with dlopen (nvml_loader.h) so that wick neither links nor needs it.
#include <algorithm>
#include <cstdint>
#include <mutex>
#include <vector>

#include "cuda/nvml_loader.h"
#include "wick/cuda.h"
#include "wick/error.h"

namespace wick::cuda {

namespace {

namespace nvml = detail::nvml;

// Loaded once and kept: the library stays mapped for the process's life.
const nvml::Loaded& nvml_library() {
  static const nvml::Loaded n = nvml::load("libnvidia-ml.so.1");
  return n;
}

void check(const nvml::Api& n, nvml::Return r, const char* what) {
  if (r != nvml::kSuccess)
    detail::raise<DeviceError>("devices_by_free_memory", "NVML ", what, " failed: ", n.error_string(r));
}

}  // namespace

std::vector<int> devices_by_free_memory() {
  const nvml::Loaded& loaded = nvml_library();
  WICK_CHECK(
      loaded.api.lib != nullptr, DeviceError, "devices_by_free_memory",
      "NVML (libnvidia-ml.so.1, installed with the NVIDIA driver) could not be loaded: ", loaded.error);
  const nvml::Api& n = loaded.api;
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
      nvml::Device h = nullptr;
      check(n, n.handle(i, &h), "nvmlDeviceGetHandleByIndex");
      nvml::Memory m{};
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
