// What wick-smi shows, read through the library's NVML loader (src/cuda/nvml_loader.h), which
// needs neither the CUDA toolkit nor a driver to build.
#include "smi/nvml.h"

#include <algorithm>
#include <cstdlib>

#include "cuda/nvml_loader.h"

namespace wick::smi {

namespace {

namespace nvml = wick::detail::nvml;
using nvml::Api;
using nvml::kInsufficientSize;
using nvml::kSuccess;
using nvml::kValueNotAvailable;
using nvml::ProcessQuery;

std::string text(char* buf) { return std::string(buf); }

std::vector<GpuProcess> processes(const Api& api, nvml::Device h, ProcessQuery query, bool graphics) {
  std::vector<GpuProcess> out;
  if (!query) return out;
  std::vector<nvml::ProcessInfo> infos(16);
  unsigned n = unsigned(infos.size());
  nvml::Return r = query(h, &n, infos.data());
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
  nvml::Loaded loaded = nvml::load(path);
  if (!loaded.api.lib) {
    q.driver_missing = loaded.missing;
    q.error = loaded.missing ? std::string("no NVIDIA driver found: ") + path + " could not be loaded (" +
                                   loaded.error + ")"
                             : loaded.error;
    return q;
  }
  Api& api = loaded.api;

  nvml::Return r = api.init();
  if (r != kSuccess) {
    q.error = std::string("NVML could not start: ") + api.error_string(r) +
              " (is the NVIDIA driver loaded, and does its version match the library?)";
    nvml::unload(api);
    return q;
  }
  char buf[256] = {};
  if (api.driver_version && api.driver_version(buf, sizeof buf) == kSuccess) q.driver_version = text(buf);
  unsigned count = 0;
  r = api.count(&count);
  if (r != kSuccess) q.error = std::string("NVML could not count the GPUs: ") + api.error_string(r);
  for (unsigned i = 0; i < count && q.error.empty(); ++i) {
    nvml::Device h = nullptr;
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
    nvml::Memory m{};
    if (api.memory(h, &m) == kSuccess) {
      g.memory_total = m.total;
      g.memory_free = m.free;
      g.memory_used = m.used;
    }
    nvml::Utilization u{};
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
  nvml::unload(api);
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
