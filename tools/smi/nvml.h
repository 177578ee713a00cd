// What wick-smi shows of each GPU, read through NVML without creating a CUDA context.
//
//   auto q = wick::smi::query_gpus();
//   if (!q.error.empty()) std::cerr << q.error;          // no driver, or NVML failed
//   for (auto& g : q.gpus) std::cout << g.index << " " << g.name << " " << g.memory_free << "\n";
//
// NVML (libnvidia-ml.so.1) ships with the driver, not the toolkit: it is loaded with dlopen, so
// wick-smi runs, and says so, on machines without one. WICK_NVML_LIBRARY names another file to
// load instead (tests use it to simulate a machine without a driver).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace wick::smi {

struct GpuProcess {
  unsigned pid = 0;
  std::string name;                     // empty when NVML can't tell (another container)
  std::optional<uint64_t> used_memory;  // bytes; NVML may not know
  bool graphics = false;                // a graphics context rather than a compute one
};

struct GpuInfo {
  int index = 0;  // NVML's index: PCI bus order, as nvidia-smi numbers the GPUs
  std::string name, uuid;
  uint64_t memory_total = 0, memory_free = 0, memory_used = 0;
  std::optional<unsigned> utilization_gpu, utilization_memory;  // percent over the last sample period
  std::optional<unsigned> temperature_c;
  std::optional<double> power_w, power_limit_w;
  std::vector<GpuProcess> processes;
};

struct GpuQuery {
  // Empty when NVML answered; else why there is nothing to show (no driver, NVML failed).
  std::string error;
  bool driver_missing = false;  // NVML could not be loaded at all
  std::string driver_version;
  std::vector<GpuInfo> gpus;
};

GpuQuery query_gpus();

// Physical indices, most free memory first (ties: lower index first), as
// wick::cuda::devices_by_free_memory orders them.
std::vector<int> order_by_free_memory(const std::vector<GpuInfo>& gpus);

}  // namespace wick::smi
