// The NVML loader (nvml_loader.h).
#include "cuda/nvml_loader.h"

#include <initializer_list>

#include <dlfcn.h>

namespace wick::detail::nvml {

namespace {

// The first of the names the library has (null when it has none).
template <class F>
void sym(void* lib, std::initializer_list<const char*> names, F& f) {
  f = nullptr;
  for (const char* n : names) {
    f = reinterpret_cast<F>(dlsym(lib, n));
    if (f) return;
  }
}

}  // namespace

Loaded load(const char* path) {
  Loaded out;
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    out.error = e ? e : "dlopen failed";
    out.missing = true;
    return out;
  }
  Api& a = out.api;
  sym(lib, {"nvmlInit_v2", "nvmlInit"}, a.init);
  sym(lib, {"nvmlShutdown"}, a.shutdown);
  sym(lib, {"nvmlErrorString"}, a.error_string);
  sym(lib, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"}, a.count);
  sym(lib, {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"}, a.handle);
  sym(lib, {"nvmlDeviceGetName"}, a.name);
  sym(lib, {"nvmlDeviceGetMemoryInfo"}, a.memory);
  sym(lib, {"nvmlSystemGetDriverVersion"}, a.driver_version);
  sym(lib, {"nvmlDeviceGetUUID"}, a.uuid);
  sym(lib, {"nvmlDeviceGetUtilizationRates"}, a.utilization);
  sym(lib, {"nvmlDeviceGetTemperature"}, a.temperature);
  sym(lib, {"nvmlDeviceGetPowerUsage"}, a.power);
  sym(lib, {"nvmlDeviceGetEnforcedPowerLimit"}, a.power_limit);
  sym(lib, {"nvmlSystemGetProcessName"}, a.process_name);
  sym(lib, {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"},
      a.compute_processes);
  sym(lib, {"nvmlDeviceGetGraphicsRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v2"},
      a.graphics_processes);
  if (!a.init || !a.shutdown || !a.error_string || !a.count || !a.handle || !a.name || !a.memory) {
    out.error = std::string(path) + " lacks functions every NVML has; is it the NVIDIA driver's library?";
    dlclose(lib);
    out.api = Api{};
    return out;
  }
  a.lib = lib;
  return out;
}

void unload(Api& api) {
  if (api.lib) dlclose(api.lib);
  api = Api{};
}

}  // namespace wick::detail::nvml
