// What the cuDNN paths (cudnn_conv.cpp, cudnn_rnn.cpp, cudnn_batch_norm.cpp) share: one handle
// per device and the dtype mapping. Only with cuDNN (WICK_HAVE_CUDNN).
//
// Handles: one per device, made on first use and shared by threads and by the three paths. A
// cuDNN call runs on the stream set on its handle, so the handle's mutex covers cudnnSetStream
// and the calls after it (host time only: the kernels are queued, not waited for). PyTorch keeps
// a handle per thread instead; with one host thread per GPU (DataParallel) the lock is almost
// never contended.
#pragma once

#ifdef WICK_HAVE_CUDNN

#include <mutex>

#include <cudnn.h>

#include "wick/tensor.h"

namespace wick::detail::gpu {

struct CudnnHandle {
  std::once_flag once;
  cudnnHandle_t handle = nullptr;
  std::mutex mu;  // held from cudnnSetStream to the end of the calls that stream is set for
};

// The handle of a device, made on first use (a failure raises DeviceError naming op).
CudnnHandle& cudnn_handle(int device, const char* op);

// Throws DeviceError "[op] cuDNN error: MESSAGE (file:line: expr)".
[[noreturn]] void cudnn_fail(const char* op, cudnnStatus_t status, const char* expr, const char* file, int line);

// float16, bfloat16, float64 as themselves; everything else as float.
cudnnDataType_t cudnn_data_type(Dtype dt);

}  // namespace wick::detail::gpu

#define WICK_CUDNN_OP_CHECK(op, expr)                            \
  do {                                                           \
    cudnnStatus_t wick_st_ = (expr);                             \
    if (wick_st_ != CUDNN_STATUS_SUCCESS) [[unlikely]]           \
      ::wick::detail::gpu::cudnn_fail(op, wick_st_, #expr, __FILE__, __LINE__); \
  } while (0)

#endif  // WICK_HAVE_CUDNN
