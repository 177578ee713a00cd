// Checking CUDA calls. Every runtime call goes through WICK_CUDA_CHECK(expr, "op"), which
// throws DeviceError("[op] CUDA error: ... (file:line: expr)"); every kernel launch is
// followed by WICK_CUDA_AFTER_LAUNCH("op", stream), which also synchronizes under
// CUDA_LAUNCH_BLOCKING=1 so that a failing kernel is reported by the op that launched it.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>

namespace wick::detail::gpu {

// Throws DeviceError (OutOfMemoryError for cudaErrorMemoryAllocation) naming op, the CUDA
// error, and where the call was made. Clears the error first when it is not sticky.
[[noreturn]] void raise_cuda_error(cudaError_t err, const char* op, const char* expr, const char* file,
                                   int line);

// True when CUDA_LAUNCH_BLOCKING=1 (read once).
bool launch_blocking();

// After a kernel launch on stream: reports a launch error as op's; with CUDA_LAUNCH_BLOCKING=1
// waits for the kernel and reports its failure as op's too.
void after_launch_impl(const char* op, cudaStream_t stream, const char* file, int line);

// A driver function (its CUDA 12.0 version) as the runtime hands it out, or null: wick does not
// link libcuda.
void* driver_entry_point(const char* name);

// Launches kernel (a __global__ function's address) with args (pointers to its parameters, in
// order) through the driver's cuLaunchKernel and a function handle cached in *handle (one per
// kernel and device; null until the first launch): about 0.3 us of host time less than the
// runtime's launch (docs/design.md, "Host cost of a launch"). Falls back to cudaLaunchKernel
// where the driver's entry point or the handle is missing, or the driver refuses the launch
// (a thread without the device's context current, a bad configuration: the runtime then
// binds the context or reports the error). A failed launch raises DeviceError naming op. Does
// what WICK_CUDA_AFTER_LAUNCH does too: the driver's answer is the launch's error, so the
// runtime's error state needs no query after a launch the driver took.
void launch_kernel(const void* kernel, std::atomic<void*>& handle, dim3 grid, dim3 block, cudaStream_t stream,
                   void** args, const char* op);

}  // namespace wick::detail::gpu

#define WICK_CUDA_CHECK(expr, op)                                                      \
  do {                                                                                 \
    cudaError_t wick_err_ = (expr);                                                    \
    if (wick_err_ != cudaSuccess) [[unlikely]]                                         \
      ::wick::detail::gpu::raise_cuda_error(wick_err_, op, #expr, __FILE__, __LINE__); \
  } while (0)

#define WICK_CUDA_AFTER_LAUNCH(op, stream) \
  ::wick::detail::gpu::after_launch_impl(op, stream, __FILE__, __LINE__)
