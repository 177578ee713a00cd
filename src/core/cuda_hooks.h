// What core (and the CUDA runtime's own files) call of the CUDA backend outside the kernel
// table: copies across devices, stream bookkeeping of a tensor's memory, device resolution, and
// the scope that makes a device the CUDA runtime's current one (for the NCCL process group too).
// src/cuda defines them; a CPU-only build links src/no_cuda, whose versions throw DeviceError
// "[op] wick was built without CUDA".
#pragma once

#include "wick/cuda.h"
#include "wick/tensor.h"

namespace wick::detail {

// Copies between devices (at least one CUDA), same dtype, both contiguous, same numel.
// Host to device from pageable memory and device to host are synchronous unless
// non_blocking with pinned host memory.
void cuda_copy(const Tensor& dst, const Tensor& src, bool non_blocking);
// Marks t's memory as used on stream s (Tensor::record_stream).
void cuda_record_stream(const Tensor& t, const wick::cuda::Stream& s);
// DeviceError "[op] ..." when d's current stream is capturing a CUDA graph (item(), random
// numbers: calls whose result a replay could not reproduce).
void cuda_check_not_capturing(Device d, const char* op, const char* why);
// Resolves "cuda" to the current device and checks the index ("[op] ..." DeviceError).
Device resolve_cuda_device(Device d, const char* op);

// Makes device the CUDA runtime's current device for a scope, for the calls that need a context
// (allocations, launches, copies, the legacy default stream, NCCL's calls). On exit wick's
// current device is what it was; the runtime's is switched back only when that needs no new
// context. Only in builds with CUDA.
class CudaDeviceScope {
 public:
  explicit CudaDeviceScope(int device);
  ~CudaDeviceScope();
  CudaDeviceScope(const CudaDeviceScope&) = delete;
  CudaDeviceScope& operator=(const CudaDeviceScope&) = delete;

 private:
  int restore_ = -1;  // wick's device to restore on exit; -1: nothing to do
};

}  // namespace wick::detail
