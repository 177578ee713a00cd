// cuBLASLt for the CUDA GEMM: one handle per device, one workspace per (device, stream), and
// a cache of matmul plans (descriptors and the chosen algorithm) keyed by problem shape.
//
//   cublasLtHandle_t h = blas::handle(device);
//   blas::Workspace ws = blas::workspace(device, stream);   // ws.ptr, ws.bytes
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstddef>

namespace wick::detail::gpu::blas {

// Throws DeviceError "[op] cuBLAS error: NAME (description) (file:line: expr)".
[[noreturn]] void cublas_fail(cublasStatus_t status, const char* op, const char* expr, const char* file, int line);

cublasLtHandle_t handle(int device);

struct Workspace {
  void* ptr = nullptr;
  size_t bytes = 0;
};
// Allocated on first use with cudaMalloc and kept for the process (like the handle), outside
// the caching allocator so that memory_allocated() counts only tensors.
Workspace workspace(int device, cudaStream_t stream);

}  // namespace wick::detail::gpu::blas

#define WICK_CUBLAS_CHECK(expr, op)                                                    \
  do {                                                                                 \
    cublasStatus_t wick_st_ = (expr);                                                  \
    if (wick_st_ != CUBLAS_STATUS_SUCCESS) [[unlikely]]                                \
      ::wick::detail::gpu::blas::cublas_fail(wick_st_, op, #expr, __FILE__, __LINE__); \
  } while (0)
