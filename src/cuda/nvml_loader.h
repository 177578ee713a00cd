// NVML (libnvidia-ml.so.1) opened with dlopen: the one loader that devices_by_free_memory
// (src/cuda/nvml.cpp) and the wick-smi program (tools/smi) share. NVML ships with the driver,
// not the toolkit, so neither the library nor wick-smi links it, and this file needs neither
// CUDA's headers nor the rest of wick: wick-smi compiles it on its own.
// The declarations are the few of nvml.h that are used, in its stable ABI (the _v2/_v3 entry
// points exist since drivers of 2021; the older names are the fallback).
#pragma once

#include <string>

namespace wick::detail::nvml {

using Return = int;
using Device = struct nvmlDevice_st*;
constexpr Return kSuccess = 0;
constexpr Return kInsufficientSize = 7;
constexpr unsigned long long kValueNotAvailable = ~0ull;

struct Memory {
  unsigned long long total, free, used;
};
struct Utilization {
  unsigned gpu, memory;
};
// nvmlProcessInfo_v2_t, the layout of the _v2 and _v3 process queries.
struct ProcessInfo {
  unsigned pid;
  unsigned long long usedGpuMemory;
  unsigned gpuInstanceId, computeInstanceId;
};

using ProcessQuery = Return (*)(Device, unsigned*, ProcessInfo*);

// The entry points. Those before the optional ones are in every NVML: load() fails without them.
struct Api {
  void* lib = nullptr;
  Return (*init)() = nullptr;
  Return (*shutdown)() = nullptr;
  const char* (*error_string)(Return) = nullptr;
  Return (*count)(unsigned*) = nullptr;
  Return (*handle)(unsigned, Device*) = nullptr;
  Return (*name)(Device, char*, unsigned) = nullptr;
  Return (*memory)(Device, Memory*) = nullptr;
  // Optional: some drivers, GPUs or MIG instances don't report these.
  Return (*driver_version)(char*, unsigned) = nullptr;
  Return (*uuid)(Device, char*, unsigned) = nullptr;
  Return (*utilization)(Device, Utilization*) = nullptr;
  Return (*temperature)(Device, int, unsigned*) = nullptr;
  Return (*power)(Device, unsigned*) = nullptr;
  Return (*power_limit)(Device, unsigned*) = nullptr;
  Return (*process_name)(unsigned, char*, unsigned) = nullptr;
  ProcessQuery compute_processes = nullptr;
  ProcessQuery graphics_processes = nullptr;
};

// What load() found: api.lib is null when it failed, and then error says why; missing is
// true when the library itself could not be loaded (no driver), false when it lacks entry points.
struct Loaded {
  Api api;
  std::string error;
  bool missing = false;
};

// Loads the library at path (a file name dlopen searches for, or a path) and its entry points.
Loaded load(const char* path);

// Unloads what load() loaded (no NVML call may follow).
void unload(Api& api);

}  // namespace wick::detail::nvml
