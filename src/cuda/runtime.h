// Internals of the CUDA runtime shared by src/cuda: the device count, which devices wick has
// made a context on, the scope that makes a device the CUDA runtime's current one, and the
// thread's current streams.
#pragma once

#include <atomic>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "core/cuda_hooks.h"
#include "wick/cuda.h"

namespace wick::detail::gpu {

inline constexpr int kMaxCudaDevices = 64;

// Visible devices; 0 when there is no driver or no GPU. Read once, on first use.
int device_count();
// Throws DeviceError naming op, the device count and CUDA_VISIBLE_DEVICES unless 0 <= d < count.
void check_cuda_device(int d, const char* op);

// wick's current device when it differs from the runtime's: a guard restored a device that has
// no context yet, and making it the runtime's device would create one. -1: the runtime's.
inline thread_local int tl_target_device = -1;

// Devices on which wick has made a CUDA call that needs a context (bit d for cuda:d).
inline std::atomic<uint64_t> g_used_devices{0};
inline void mark_device_used(int d) {
  const uint64_t bit = uint64_t(1) << d;
  if (!(g_used_devices.load(std::memory_order_relaxed) & bit)) g_used_devices.fetch_or(bit);
}
inline bool device_used(int d) { return g_used_devices.load(std::memory_order_relaxed) & (uint64_t(1) << d); }

// Makes `device` wick's current device: through cudaSetDevice when it has a context (or
// `create`), else only as tl_target_device so that no context is made on it.
void switch_device(int device, bool create);

// CudaDeviceScope (core/cuda_hooks.h, for the NCCL process group too): d is the CUDA runtime's
// current device for a scope.
using wick::detail::CudaDeviceScope;

// Graphs being captured on each device (graph.cpp); while none is, the checks below cost a load.
inline std::atomic<int> g_captures[kMaxCudaDevices];
// DeviceError "[op] ..." when stream (of device d) is capturing a graph: for calls that cannot
// be captured (host copies, item()).
void check_stream_not_capturing(int d, cudaStream_t stream, const char* op,
                                const char* why = "it makes the host wait for the device");
// Whether stream (of device d) is capturing a graph now. Checks whose answer the host would wait
// for (indices in range, integer divisors not zero) run on the device instead while it is, and
// stop the kernel there (a device-side assertion, as PyTorch's inside a graph; docs/design.md §8).
bool stream_is_capturing(int d, cudaStream_t stream);
// DeviceError "[op] ..." while any graph is being captured on device d: for calls that would
// synchronize it.
void check_device_not_capturing(int d, const char* op);

// For memory and handles made once and kept outside any graph (cuBLASLt's workspace, library
// handles, the allocator's segments): while this thread captures a graph, such calls
// (cudaMalloc, cudaHostAlloc) would invalidate the capture in its mode; in relaxed mode for the
// scope they are allowed. No-op when no graph is being captured.
class RelaxedCaptureMode {
 public:
  RelaxedCaptureMode() {
    for (const auto& c : g_captures)
      if (c.load(std::memory_order_relaxed) != 0) {
        active_ = true;
        break;
      }
    if (active_) (void)cudaThreadExchangeStreamCaptureMode(&mode_);
  }
  ~RelaxedCaptureMode() {
    if (active_) (void)cudaThreadExchangeStreamCaptureMode(&mode_);
  }
  RelaxedCaptureMode(const RelaxedCaptureMode&) = delete;
  RelaxedCaptureMode& operator=(const RelaxedCaptureMode&) = delete;

 private:
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;
  bool active_ = false;
};

// The calling thread's current stream of device d (nullptr: the legacy default stream).
cudaStream_t current_cuda_stream(int d);
// Multiprocessors of device d (cached).
int sm_count(int d);

}  // namespace wick::detail::gpu
