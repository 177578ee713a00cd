// Copies between the host and GPUs, and between GPUs (docs/design.md, "Pinned memory and
// copies"):
// - host to device from pinned memory with non_blocking: queued on the device's current
//   stream, returns at once; the pinned block is not reused before the copy ends.
// - from or to pageable memory: synchronous. Large copies go through pinned staging buffers
//   filled by several threads while the previous chunk is in flight: the driver's own staging
//   runs one thread and one chunk at a time (about 7 GB/s on an H100 host), which is what
//   makes pageable copies slow in PyTorch.
// - device to host: synchronous unless non_blocking into pinned memory.
// - device to device: asynchronous; between GPUs on the source's current stream, with
//   barriers against the destination's current stream, through peer access when the GPUs
//   have it (else cudaMemcpyPeerAsync stages through the host itself).
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <set>
#include <utility>

#include "core/cuda_hooks.h"
#include "cuda/cuda_check.h"
#include "cuda/event_pool.h"
#include "cuda/pinned_allocator.h"
#include "cuda/runtime.h"
#include "wick/cuda.h"
#include "wick/error.h"
#include "wick/tensor.h"

namespace wick::detail::gpu {

namespace {

constexpr const char* kOp = "copy_";
constexpr size_t kStagedMin = size_t(512) << 10;  // below this the driver's staging is as good
constexpr size_t kStageChunk = size_t(8) << 20;  // bytes per staging buffer
constexpr int kStageBuffers = 3;

// memcpy split over up to 8 threads, 128 KiB or more each: one core copies about 10 GB/s, the
// PCIe link takes 55.
void parallel_memcpy(void* dst, const void* src, size_t n) {
  const int threads = int(std::min<size_t>({8, size_t(omp_get_max_threads()), n >> 17}));
  if (threads <= 1 || omp_in_parallel()) {
    std::memcpy(dst, src, n);
    return;
  }
  const size_t piece = ((n + threads - 1) / threads + 63) & ~size_t(63);  // covers all n bytes
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int t = 0; t < threads; ++t) {
    const size_t begin = size_t(t) * piece;
    if (begin < n) std::memcpy(static_cast<char*>(dst) + begin, static_cast<const char*>(src) + begin, std::min(piece, n - begin));
  }
}

struct Staging {
  DataPtr buffers[kStageBuffers];
  cudaEvent_t events[kStageBuffers] = {};
  bool busy[kStageBuffers] = {};
  int device;
  explicit Staging(int d) : device(d) {
    for (int i = 0; i < kStageBuffers; ++i) {
      buffers[i] = pinned_allocator()->allocate(kStageChunk);
      events[i] = acquire_event(d);
    }
  }
  ~Staging() {
    for (int i = 0; i < kStageBuffers; ++i) release_event(device, events[i]);
  }
  void* buffer(int i) { return buffers[i].get(); }
};

void staged_h2d(char* dst, const char* src, size_t n, int device, cudaStream_t stream) {
  Staging s(device);
  for (size_t off = 0, i = 0; off < n; off += kStageChunk, ++i) {
    const int b = int(i % kStageBuffers);
    const size_t len = std::min(kStageChunk, n - off);
    if (s.busy[b]) WICK_CUDA_CHECK(cudaEventSynchronize(s.events[b]), kOp);
    parallel_memcpy(s.buffer(b), src + off, len);
    WICK_CUDA_CHECK(cudaMemcpyAsync(dst + off, s.buffer(b), len, cudaMemcpyHostToDevice, stream), kOp);
    WICK_CUDA_CHECK(cudaEventRecord(s.events[b], stream), kOp);
    s.busy[b] = true;
  }
  WICK_CUDA_CHECK(cudaStreamSynchronize(stream), kOp);
}

void staged_d2h(char* dst, const char* src, size_t n, int device, cudaStream_t stream) {
  Staging s(device);
  const size_t chunks = (n + kStageChunk - 1) / kStageChunk;
  auto drain = [&](size_t i) {  // chunk i has been queued: wait for it and copy it out
    const int b = int(i % kStageBuffers);
    const size_t off = i * kStageChunk;
    WICK_CUDA_CHECK(cudaEventSynchronize(s.events[b]), kOp);
    parallel_memcpy(dst + off, s.buffer(b), std::min(kStageChunk, n - off));
  };
  for (size_t i = 0; i < chunks; ++i) {
    if (i >= size_t(kStageBuffers)) drain(i - kStageBuffers);
    const int b = int(i % kStageBuffers);
    const size_t off = i * kStageChunk;
    WICK_CUDA_CHECK(cudaMemcpyAsync(s.buffer(b), src + off, std::min(kStageChunk, n - off), cudaMemcpyDeviceToHost,
                                    stream), kOp);
    WICK_CUDA_CHECK(cudaEventRecord(s.events[b], stream), kOp);
  }
  for (size_t i = chunks > size_t(kStageBuffers) ? chunks - kStageBuffers : 0; i < chunks; ++i) drain(i);
}

void enable_peer_access(int from, int to) {
  static std::mutex mu;
  static std::set<std::pair<int, int>> done;
  std::lock_guard<std::mutex> lock(mu);
  if (!done.insert({from, to}).second) return;
  int can = 0;
  WICK_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, from, to), kOp);
  if (!can) return;
  CudaDeviceScope scope(from);
  cudaError_t e = cudaDeviceEnablePeerAccess(to, 0);
  if (e == cudaErrorPeerAccessAlreadyEnabled) (void)cudaGetLastError();
  else WICK_CUDA_CHECK(e, kOp);
}

void host_to_device(const Tensor& dst, const Tensor& src, size_t n, bool non_blocking) {
  const int d = dst.device().index();
  CudaDeviceScope scope(d);
  cudaStream_t stream = current_cuda_stream(d);
  check_stream_not_capturing(d, stream, kOp);
  char* to = static_cast<char*>(dst.data_ptr());
  const char* from = static_cast<const char*>(src.data_ptr());
  if (is_pinned_ptr(from)) {
    WICK_CUDA_CHECK(cudaMemcpyAsync(to, from, n, cudaMemcpyHostToDevice, stream), kOp);
    if (non_blocking) pinned_record_stream(src.impl()->storage()->data_ptr(), d, stream);
    else WICK_CUDA_CHECK(cudaStreamSynchronize(stream), kOp);
  } else if (n < kStagedMin) {
    WICK_CUDA_CHECK(cudaMemcpyAsync(to, from, n, cudaMemcpyHostToDevice, stream), kOp);
    WICK_CUDA_CHECK(cudaStreamSynchronize(stream), kOp);
  } else {
    staged_h2d(to, from, n, d, stream);
  }
}

void device_to_host(const Tensor& dst, const Tensor& src, size_t n, bool non_blocking) {
  const int d = src.device().index();
  CudaDeviceScope scope(d);
  cudaStream_t stream = current_cuda_stream(d);
  check_stream_not_capturing(d, stream, kOp);
  char* to = static_cast<char*>(dst.data_ptr());
  const char* from = static_cast<const char*>(src.data_ptr());
  if (is_pinned_ptr(to)) {
    WICK_CUDA_CHECK(cudaMemcpyAsync(to, from, n, cudaMemcpyDeviceToHost, stream), kOp);
    if (non_blocking) pinned_record_stream(dst.impl()->storage()->data_ptr(), d, stream);
    else WICK_CUDA_CHECK(cudaStreamSynchronize(stream), kOp);
  } else if (n < kStagedMin) {
    WICK_CUDA_CHECK(cudaMemcpyAsync(to, from, n, cudaMemcpyDeviceToHost, stream), kOp);
    WICK_CUDA_CHECK(cudaStreamSynchronize(stream), kOp);
  } else {
    staged_d2h(to, from, n, d, stream);
  }
}

void device_to_device(const Tensor& dst, const Tensor& src, size_t n) {
  const int sd = src.device().index(), dd = dst.device().index();
  void* to = dst.data_ptr();
  const void* from = src.data_ptr();
  if (sd == dd) {
    CudaDeviceScope scope(sd);
    WICK_CUDA_CHECK(cudaMemcpyAsync(to, from, n, cudaMemcpyDeviceToDevice, current_cuda_stream(sd)), kOp);
    return;
  }
  // As PyTorch: copy on the source's current stream, after the destination's current stream
  // has reached this point, and make the destination's stream wait for the copy.
  cudaStream_t copy_stream = current_cuda_stream(sd);
  cudaStream_t dst_stream = current_cuda_stream(dd);
  enable_peer_access(sd, dd);
  cudaEvent_t dst_ready = acquire_event(dd), copied = acquire_event(sd);
  {
    CudaDeviceScope scope(dd);
    WICK_CUDA_CHECK(cudaEventRecord(dst_ready, dst_stream), kOp);
  }
  {
    CudaDeviceScope scope(sd);
    WICK_CUDA_CHECK(cudaStreamWaitEvent(copy_stream, dst_ready, 0), kOp);
    WICK_CUDA_CHECK(cudaMemcpyPeerAsync(to, dd, from, sd, n, copy_stream), kOp);
    WICK_CUDA_CHECK(cudaEventRecord(copied, copy_stream), kOp);
  }
  {
    CudaDeviceScope scope(dd);
    WICK_CUDA_CHECK(cudaStreamWaitEvent(dst_stream, copied, 0), kOp);
  }
  release_event(dd, dst_ready);
  release_event(sd, copied);
}

}  // namespace

}  // namespace wick::detail::gpu

namespace wick::detail {

void cuda_copy(const Tensor& dst, const Tensor& src, bool non_blocking) {
  WICK_CHECK(dst.dtype() == src.dtype() && dst.numel() == src.numel() && dst.is_contiguous() && src.is_contiguous(),
             ValueError, gpu::kOp, "cuda_copy expects contiguous tensors of one dtype and size");
  const size_t n = size_t(src.nbytes());
  if (n == 0) return;
  const bool to_cuda = dst.is_cuda(), from_cuda = src.is_cuda();
  if (to_cuda && from_cuda) gpu::device_to_device(dst, src, n);
  else if (to_cuda) gpu::host_to_device(dst, src, n, non_blocking);
  else if (from_cuda) gpu::device_to_host(dst, src, n, non_blocking);
  else raise<ValueError>(gpu::kOp, "cuda_copy needs a CUDA tensor on one side");
}

}  // namespace wick::detail
