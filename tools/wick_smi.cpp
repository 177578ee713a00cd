// wick-smi: each GPU's name, memory, utilization and processes, read through NVML without
// creating a CUDA context (so it is safe to run beside a training job).
//
//   wick-smi                 # the table
//   wick-smi --order free    # GPUs by free memory, then the CUDA_VISIBLE_DEVICES= line to use
//   export $(wick-smi --order free | tail -n 1)
//
// Exit status: 0 when NVML answered with at least one GPU; 1 when there is no driver, no GPU,
// or NVML failed (the reason goes to stderr, stdout stays empty), so scripts can test for a GPU.
#include <cstdio>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include "smi/nvml.h"

namespace {

using wick::smi::GpuInfo;

std::string mib(uint64_t bytes) { return std::to_string(bytes >> 20) + "MiB"; }

template <class T>
std::string or_na(const std::optional<T>& v, const char* unit) {
  return v ? std::to_string(*v) + unit : std::string("N/A");
}

std::string fmt(const char* format, auto... args) {
  char buf[512];
  std::snprintf(buf, sizeof buf, format, args...);
  return buf;
}

void print_table(const wick::smi::GpuQuery& q) {
  std::cout << "NVIDIA driver " << (q.driver_version.empty() ? "(version unknown)" : q.driver_version) << ", "
            << q.gpus.size() << (q.gpus.size() == 1 ? " GPU" : " GPUs") << " (NVML, PCI bus order)\n\n";
  std::cout << fmt("%-3s  %-28s  %21s  %10s  %8s  %8s  %5s  %13s\n", "GPU", "Name", "Memory used / total",
                   "Free", "GPU-Util", "Mem-Util", "Temp", "Power");
  for (const GpuInfo& g : q.gpus) {
    std::string power = g.power_w ? fmt("%.0fW", *g.power_w) : std::string("N/A");
    if (g.power_limit_w) power += fmt(" / %.0fW", *g.power_limit_w);
    std::string used = mib(g.memory_used) + " / " + mib(g.memory_total);
    std::cout << fmt("%3d  %-28s  %21s  %10s  %8s  %8s  %5s  %13s\n", g.index, g.name.c_str(), used.c_str(),
                     mib(g.memory_free).c_str(), or_na(g.utilization_gpu, "%").c_str(),
                     or_na(g.utilization_memory, "%").c_str(), or_na(g.temperature_c, "C").c_str(),
                     power.c_str());
  }
  std::cout << "\nProcesses\n";
  bool any = false;
  for (const GpuInfo& g : q.gpus) {
    for (const auto& p : g.processes) {
      if (!any) std::cout << fmt("%-3s  %8s  %4s  %10s  %s\n", "GPU", "PID", "Type", "Memory", "Name");
      any = true;
      std::cout << fmt("%3d  %8u  %4s  %10s  %s\n", g.index, p.pid, p.graphics ? "G" : "C",
                       p.used_memory ? mib(*p.used_memory).c_str() : "N/A",
                       p.name.empty() ? "(not visible)" : p.name.c_str());
    }
  }
  if (!any) std::cout << "  No running processes found\n";
}

void print_by_free(const wick::smi::GpuQuery& q) {
  std::cout << "GPUs by free memory, most first (NVML indices, PCI bus order; with GPUs of different kinds "
               "also set CUDA_DEVICE_ORDER=PCI_BUS_ID):\n";
  std::string line = "CUDA_VISIBLE_DEVICES=";
  bool first = true;
  for (int i : wick::smi::order_by_free_memory(q.gpus)) {
    const GpuInfo& g = q.gpus[size_t(i)];
    std::cout << fmt("%3d  %-28s  %10s free of %s\n", g.index, g.name.c_str(), mib(g.memory_free).c_str(),
                     mib(g.memory_total).c_str());
    line += (first ? "" : ",") + std::to_string(g.index);
    first = false;
  }
  std::cout << line << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"wick-smi: the GPUs of this machine, read through NVML without creating a CUDA context."};
  std::string order = "index";
  app.add_option("--order", order,
                 "index: the table of every GPU; free: GPUs by free memory and the "
                 "CUDA_VISIBLE_DEVICES= line to use")
      ->check(CLI::IsMember({"index", "free"}));
  app.footer(
      "Exit status: 0 with at least one GPU; 1 without a driver or a GPU, or when NVML fails.\n"
      "WICK_NVML_LIBRARY=path loads another NVML than libnvidia-ml.so.1.\n");
  CLI11_PARSE(app, argc, argv);

  const wick::smi::GpuQuery q = wick::smi::query_gpus();
  if (!q.error.empty()) {
    std::cerr << "wick-smi: " << q.error << "\n";
    if (q.driver_missing)
      std::cerr << "wick-smi: this machine has no usable NVIDIA GPU; wick runs on the CPU (wick-train "
                   "--device cpu).\n";
    return 1;
  }
  if (q.gpus.empty()) {
    std::cerr << "wick-smi: the NVIDIA driver " << q.driver_version << " is loaded but reports no GPU.\n";
    return 1;
  }
  if (order == "free") print_by_free(q);
  else print_table(q);
  return 0;
}
