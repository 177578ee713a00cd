// Tells compute-sanitizer's initcheck which memory a library kernel wrote (docs/design.md 8,
// "Checking the GPU code"). initcheck tracks the stores of kernels it instruments; the GEMM and
// convolution kernels of cuBLASLt and cuDNN write their outputs in ways it does not follow, so
// every later read of a GEMM's output would be reported as uninitialized. After such a call
// the output range is marked initialized through NVTX's memory API. Without a tool attached
// (the normal case) the NVTX call returns at once.
#pragma once

#include <cstddef>

#include <cuda_runtime.h>

namespace wick::detail::gpu {

// Marks [ptr, ptr + bytes) as written by work queued on stream.
void mark_initialized(const void* ptr, size_t bytes, cudaStream_t stream);

}  // namespace wick::detail::gpu
