// Streams and events.
//
// The stream model follows PyTorch: each thread has one current stream per device, initially
// the legacy default stream (stream 0, which orders itself against every blocking stream);
// Stream::create hands out streams from a pool of 32 per priority per device, round robin,
// created non-blocking on the pool's first use and kept for the life of the process. A stream
// per create() call would cost a driver call and a destroy each time and invite leaks; one
// shared side stream would serialize independent work. The pool bounds both.
#include <atomic>
#include <mutex>
#include <vector>

#include "core/cuda_hooks.h"
#include "cuda/cuda_check.h"
#include "cuda/event_pool.h"
#include "cuda/runtime.h"
#include "wick/cuda.h"
#include "wick/error.h"

namespace wick::detail::gpu {

namespace {

constexpr int kStreamsPerPool = 32;

struct StreamPool {
  std::once_flag created[2];
  cudaStream_t streams[2][kStreamsPerPool] = {};
  std::atomic<uint32_t> next[2] = {0, 0};
};

StreamPool& stream_pool(int d) {
  static StreamPool* pools = new StreamPool[kMaxCudaDevices];  // lives as long as the streams
  return pools[d];
}

thread_local cudaStream_t tl_streams[kMaxCudaDevices] = {};

struct EventPool {
  std::mutex mu;
  std::vector<cudaEvent_t> free;
};

EventPool& event_pool(int d) {
  static EventPool* pools = new EventPool[kMaxCudaDevices];
  return pools[d];
}

}  // namespace

cudaStream_t current_cuda_stream(int d) { return tl_streams[d]; }

cudaEvent_t acquire_event(int d) {
  EventPool& p = event_pool(d);
  {
    std::lock_guard<std::mutex> lock(p.mu);
    if (!p.free.empty()) {
      cudaEvent_t e = p.free.back();
      p.free.pop_back();
      return e;
    }
  }
  CudaDeviceScope scope(d);
  cudaEvent_t e = nullptr;
  WICK_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "event");
  return e;
}

void release_event(int d, cudaEvent_t e) {
  EventPool& p = event_pool(d);
  std::lock_guard<std::mutex> lock(p.mu);
  p.free.push_back(e);
}

}  // namespace wick::detail::gpu

namespace wick::cuda {

using namespace wick::detail::gpu;

Stream Stream::create(int device, int priority) {
  const int d = detail::resolve_cuda_device(Device(kCUDA, device), "Stream::create").index();
  const int level = priority < 0 ? 1 : 0;  // 0: normal, 1: high
  StreamPool& pool = stream_pool(d);
  std::call_once(pool.created[level], [&] {
    CudaDeviceScope scope(d);
    int least = 0, greatest = 0;
    WICK_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest), "Stream::create");
    const int prio = level == 1 ? greatest : least;
    for (auto& s : pool.streams[level])
      WICK_CUDA_CHECK(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, prio), "Stream::create");
  });
  const uint32_t i = pool.next[level].fetch_add(1, std::memory_order_relaxed) % kStreamsPerPool;
  return Stream(d, pool.streams[level][i]);
}

void Stream::wait_stream(const Stream& other) const {
  if (*this == other) return;
  cudaEvent_t e = acquire_event(other.device_);
  {
    CudaDeviceScope scope(other.device_);
    WICK_CUDA_CHECK(cudaEventRecord(e, other.native_), "wait_stream");
  }
  {
    CudaDeviceScope scope(device_);
    // The wait takes the event's state now; re-recording it later does not affect this wait.
    WICK_CUDA_CHECK(cudaStreamWaitEvent(native_, e, 0), "wait_stream");
  }
  release_event(other.device_, e);
}

void Stream::wait_event(const Event& e) const { e.wait(*this); }

bool Stream::query() const {
  CudaDeviceScope scope(device_);
  cudaError_t r = cudaStreamQuery(native_);
  if (r == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return false;
  }
  WICK_CUDA_CHECK(r, "Stream::query");
  return true;
}

void Stream::synchronize() const {
  check_device_not_capturing(device_, "Stream::synchronize");
  CudaDeviceScope scope(device_);
  WICK_CUDA_CHECK(cudaStreamSynchronize(native_), "Stream::synchronize");
}

Stream current_stream(int device) {
  const int d = detail::resolve_cuda_device(Device(kCUDA, device), "current_stream").index();
  return Stream(d, tl_streams[d]);
}

Stream default_stream(int device) {
  const int d = detail::resolve_cuda_device(Device(kCUDA, device), "default_stream").index();
  return Stream(d, nullptr);
}

void set_current_stream(const Stream& s) {
  check_cuda_device(s.device_index(), "set_current_stream");
  tl_streams[s.device_index()] = s.native();
}

StreamGuard::StreamGuard(const Stream& s)
    : previous_device_(current_device()), previous_stream_(current_stream(s.device_index())) {
  check_cuda_device(s.device_index(), "StreamGuard");
  if (s.device_index() != previous_device_) switch_device(s.device_index(), /*create=*/true);
  tl_streams[s.device_index()] = s.native();
}

StreamGuard::~StreamGuard() {
  tl_streams[previous_stream_.device_index()] = previous_stream_.native();
  if (previous_stream_.device_index() != previous_device_) {
    try {
      switch_device(previous_device_, /*create=*/false);
    } catch (...) {
    }
  }
}

Event::Event(bool enable_timing) : timing_(enable_timing) {}

Event::~Event() {
  if (event_) (void)cudaEventDestroy(event_);  // errors at process exit are of no use
}

Event::Event(Event&& o) noexcept
    : event_(std::exchange(o.event_, nullptr)), device_(o.device_), timing_(o.timing_) {}

Event& Event::operator=(Event&& o) noexcept {
  if (this != &o) {
    if (event_) (void)cudaEventDestroy(event_);
    event_ = std::exchange(o.event_, nullptr);
    device_ = o.device_;
    timing_ = o.timing_;
  }
  return *this;
}

void Event::record() { record(current_stream()); }

void Event::record(const Stream& s) {
  CudaDeviceScope scope(s.device_index());
  if (!event_) {
    WICK_CUDA_CHECK(cudaEventCreateWithFlags(&event_, timing_ ? cudaEventDefault : cudaEventDisableTiming),
                    "Event.record");
    device_ = s.device_index();
  }
  WICK_CHECK(device_ == s.device_index(), DeviceError, "Event.record", "the event belongs to cuda:", device_,
             " but the stream to cuda:", s.device_index());
  WICK_CUDA_CHECK(cudaEventRecord(event_, s.native()), "Event.record");
}

void Event::wait(const Stream& s) const {
  if (!event_) return;  // never recorded: nothing to wait for
  CudaDeviceScope scope(s.device_index());
  WICK_CUDA_CHECK(cudaStreamWaitEvent(s.native(), event_, 0), "Event.wait");
}

bool Event::query() const {
  if (!event_) return true;
  cudaError_t r = cudaEventQuery(event_);
  if (r == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return false;
  }
  WICK_CUDA_CHECK(r, "Event.query");
  return true;
}

void Event::synchronize() const {
  if (event_ && device_ >= 0) check_device_not_capturing(device_, "Event.synchronize");
  if (event_) WICK_CUDA_CHECK(cudaEventSynchronize(event_), "Event.synchronize");
}

float Event::elapsed_time(const Event& end) const {
  WICK_CHECK(timing_ && end.timing_, ValueError, "elapsed_time",
             "both events must be created with Event(/*enable_timing=*/true)");
  WICK_CHECK(event_ && end.event_, ValueError, "elapsed_time", "both events must be recorded first");
  // Waits for both, so the figure is ready (PyTorch asks the caller to synchronize first).
  synchronize();
  end.synchronize();
  float ms = 0;
  WICK_CUDA_CHECK(cudaEventElapsedTime(&ms, event_, end.event_), "elapsed_time");
  return ms;
}

}  // namespace wick::cuda
