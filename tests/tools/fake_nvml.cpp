// A stand-in for libnvidia-ml.so.1 that wick-smi's tests load through WICK_NVML_LIBRARY: three
// GPUs with known memory and one process, or none with FAKE_NVML_GPUS=0.
#include <cstdlib>
#include <cstring>

#include "cuda/nvml_loader.h"  // the structs' layouts, as the loader reads them

namespace {

namespace nvml = wick::detail::nvml;

struct Gpu {
  const char* name;
  unsigned long long total_mib, used_mib;
  unsigned util;
};
constexpr Gpu kGpus[] = {
    {"Fake GPU A", 1000, 900, 90},
    {"Fake GPU B", 4000, 500, 10},
    {"Fake GPU C", 2000, 100, 0},
};

unsigned gpu_count() {
  const char* e = std::getenv("FAKE_NVML_GPUS");
  return e ? unsigned(std::atoi(e)) : 3u;
}

int copy(char* to, unsigned len, const char* from) {
  if (std::strlen(from) + 1 > len) return nvml::kInsufficientSize;
  std::strcpy(to, from);
  return 0;
}

}  // namespace

extern "C" {

int nvmlInit_v2() { return 0; }
int nvmlShutdown() { return 0; }
const char* nvmlErrorString(int) { return "fake error"; }
int nvmlSystemGetDriverVersion(char* v, unsigned len) { return copy(v, len, "999.1"); }
int nvmlDeviceGetCount_v2(unsigned* n) {
  *n = gpu_count();
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned i, void** h) {
  if (i >= gpu_count()) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *h = const_cast<Gpu*>(&kGpus[i]);
  return 0;
}
int nvmlDeviceGetName(void* h, char* name, unsigned len) {
  return copy(name, len, static_cast<Gpu*>(h)->name);
}
int nvmlDeviceGetMemoryInfo(void* h, nvml::Memory* m) {
  auto* g = static_cast<Gpu*>(h);
  m->total = g->total_mib << 20;
  m->used = g->used_mib << 20;
  m->free = m->total - m->used;
  return 0;
}
int nvmlDeviceGetUtilizationRates(void* h, nvml::Utilization* u) {
  u->gpu = static_cast<Gpu*>(h)->util;
  u->memory = 1;
  return 0;
}
// One compute process on the first GPU.
int nvmlDeviceGetComputeRunningProcesses_v3(void* h, unsigned* n, nvml::ProcessInfo* infos) {
  if (h != &kGpus[0]) {
    *n = 0;
    return 0;
  }
  if (*n < 1) {
    *n = 1;
    return nvml::kInsufficientSize;
  }
  *n = 1;
  infos[0] = {4242, 800ull << 20, 0, 0};
  return 0;
}
int nvmlSystemGetProcessName(unsigned pid, char* name, unsigned len) {
  return pid == 4242 ? copy(name, len, "trainer") : 3;
}

}  // extern "C"
