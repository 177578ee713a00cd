// NVML through dlopen: the handful of declarations wick-smi needs, copied in shape from nvml.h
// (stable ABI; the _v2/_v3 entry points exist since drivers of 2021), so that building wick-smi
// needs neither the CUDA toolkit nor a driver.
#include "smi/nvml.h"

#include <algorithm>
#include <cstdlib>

#include <dlfcn.h>

namespace wick::smi {

namespace {

using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
constexpr nvmlReturn_t kSuccess = 0;
constexpr nvmlReturn_t kInsufficientSize = 7;
constexpr unsigned long long kValueNotAvailable = ~0ull;

struct nvmlMemory_t {
  unsigned long long total, free, used;
};
struct nvmlUtilization_t {
  unsigned gpu, memory;
};
// nvmlProcessInfo_v2_t, the layout of the _v2 and _v3 process queries.
struct nvmlProcessInfo_t {
  unsigned pid;
  unsigned long long usedGpuMemory;
  unsigned gpuInstanceId, computeInstanceId;
};

using ProcessQuery = nvmlReturn_t (*)(nvmlDevice_t, unsigned*, nvmlProcessInfo_t*);

struct Api {
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*driver_version)(char*, unsigned) = nullptr;
  nvmlReturn_t (*count)(unsigned*) = nullptr;
  nvmlReturn_t (*handle)(unsigned, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  // Optional: some GPUs (or MIG instances) don't report these.
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*power)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*power_limit)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*process_name)(unsigned, char*, unsigned) = nullptr;
  ProcessQuery compute_processes = nullptr;
  ProcessQuery graphics_processes = nullptr;
};

template <class F>
void sym(void* lib, const char* name, F& f) {
  f = reinterpret_cast<F>(dlsym(lib, name));
}

// First of the names the library has.
template <class F>
void sym_any(void* lib, std::initializer_list<const char*> names, F& f) {
  for (const char* n : names) {
    sym(lib, n, f);
    if (f) return;
  }
}

std::string text(char* buf) { return std::string(buf); }

std::vector<GpuProcess> processes(const Api& api, nvmlDevice_t h, ProcessQuery query, bool graphics) {
  std::vector<GpuProcess> out;
  if (!query) return out;
  std::vector<nvmlProcessInfo_t> infos(16);
  unsigned n = unsigned(infos.size());
  nvmlReturn_t r = query(h, &n, infos.data());
  // Processes may start between the two calls: ask again with room to spare.
  for (int tries = 0; r == kInsufficientSize && tries < 3; ++tries) {
    infos.resize(size_t(n) + 16);
    n = unsigned(infos.size());
    r = query(h, &n, infos.data());
  }
  if (r != kSuccess) return out;
  for (unsigned i = 0; i < n; ++i) {
    GpuProcess p;
    p.pid = infos[i].pid;
    p.graphics = graphics;
    if (infos[i].usedGpuMemory != kValueNotAvailable) p.used_memory = infos[i].usedGpuMemory;
    char name[256] = {};
    if (api.process_name && api.process_name(p.pid, name, sizeof name) == kSuccess) p.name = text(name);
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace

GpuQuery query_gpus() {
  GpuQuery q;
  const char* override_path = std::getenv("WICK_NVML_LIBRARY");
  const char* path = override_path && *override_path ? override_path : "libnvidia-ml.so.1";
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    q.driver_missing = true;
    q.error = std::string("no NVIDIA driver found: ") + path + " could not be loaded (" +
              (e ? e : "dlopen failed") + ")";
    return q;
  }
  Api api;
  sym_any(lib, {"nvmlInit_v2", "nvmlInit"}, api.init);
  sym(lib, "nvmlShutdown", api.shutdown);
  sym(lib, "nvmlErrorString", api.error_string);
  sym(lib, "nvmlSystemGetDriverVersion", api.driver_version);
  sym_any(lib, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"}, api.count);
  sym_any(lib, {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"}, api.handle);
  sym(lib, "nvmlDeviceGetName", api.name);
  sym(lib, "nvmlDeviceGetUUID", api.uuid);
  sym(lib, "nvmlDeviceGetMemoryInfo", api.memory);
  sym(lib, "nvmlDeviceGetUtilizationRates", api.utilization);
  sym(lib, "nvmlDeviceGetTemperature", api.temperature);
  sym(lib, "nvmlDeviceGetPowerUsage", api.power);
  sym(lib, "nvmlDeviceGetEnforcedPowerLimit", api.power_limit);
  sym(lib, "nvmlSystemGetProcessName", api.process_name);
  sym_any(lib, {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"},
          api.compute_processes);
  sym_any(lib, {"nvmlDeviceGetGraphicsRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v2"},
          api.graphics_processes);
  if (!api.init || !api.shutdown || !api.error_string || !api.count || !api.handle || !api.name ||
      !api.memory) {
    q.error = std::string(path) + " lacks functions every NVML has; is it the NVIDIA driver's library?";
    dlclose(lib);
    return q;
  }

  nvmlReturn_t r = api.init();
  if (r != kSuccess) {
    q.error = std::string("NVML could not start: ") + api.error_string(r) +
              " (is the NVIDIA driver loaded, and does its version match the library?)";
    dlclose(lib);
    return q;
  }
  char buf[256] = {};
  if (api.driver_version && api.driver_version(buf, sizeof buf) == kSuccess) q.driver_version = text(buf);
  unsigned count = 0;
  r = api.count(&count);
  if (r != kSuccess) q.error = std::string("NVML could not count the GPUs: ") + api.error_string(r);
  for (unsigned i = 0; i < count && q.error.empty(); ++i) {
    nvmlDevice_t h = nullptr;
    if ((r = api.handle(i, &h)) != kSuccess) {
      q.error = "NVML could not open GPU " + std::to_string(i) + ": " + api.error_string(r);
      break;
    }
    GpuInfo g;
    g.index = int(i);
    char name[256] = {};
    if (api.name(h, name, sizeof name) == kSuccess) g.name = text(name);
    char uuid[96] = {};
    if (api.uuid && api.uuid(h, uuid, sizeof uuid) == kSuccess) g.uuid = text(uuid);
    nvmlMemory_t m{};
    if (api.memory(h, &m) == kSuccess) {
      g.memory_total = m.total;
      g.memory_free = m.free;
      g.memory_used = m.used;
    }
    nvmlUtilization_t u{};
    if (api.utilization && api.utilization(h, &u) == kSuccess) {
      g.utilization_gpu = u.gpu;
      g.utilization_memory = u.memory;
    }
    unsigned v = 0;
    if (api.temperature && api.temperature(h, /*NVML_TEMPERATURE_GPU*/ 0, &v) == kSuccess)
      g.temperature_c = v;
    if (api.power && api.power(h, &v) == kSuccess) g.power_w = v / 1000.0;
    if (api.power_limit && api.power_limit(h, &v) == kSuccess) g.power_limit_w = v / 1000.0;
    g.processes = processes(api, h, api.compute_processes, false);
    for (auto& p : processes(api, h, api.graphics_processes, true)) {
      bool seen =
          std::any_of(g.processes.begin(), g.processes.end(), [&](auto& c) { return c.pid == p.pid; });
      if (!seen) g.processes.push_back(std::move(p));
    }
    q.gpus.push_back(std::move(g));
  }
  api.shutdown();
  dlclose(lib);
  return q;
}

std::vector<int> order_by_free_memory(const std::vector<GpuInfo>& gpus) {
  std::vector<const GpuInfo*> sorted;
  for (auto& g : gpus) sorted.push_back(&g);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const GpuInfo* a, const GpuInfo* b) { return a->memory_free > b->memory_free; });
  std::vector<int> out;
  for (auto* g : sorted) out.push_back(g->index);
  return out;
}

}  // namespace wick::smi
