// The CUDA runtime as PyTorch exposes it: devices, guards, streams, events, memory.
//
//   if (wick::cuda::is_available()) {
//     wick::cuda::DeviceGuard g(1);                 // cuda:1 is current in this scope
//     auto s = wick::cuda::Stream::create();        // a stream from cuda:1's pool
//     wick::cuda::StreamGuard sg(s);                // ops in this scope run on s
//     std::cout << wick::cuda::memory_allocated();  // bytes held by live tensors
//   }
// Built without CUDA, is_available() is false and the rest throws DeviceError.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "wick/device.h"

typedef struct CUstream_st* cudaStream_t;
typedef struct CUevent_st* cudaEvent_t;

namespace wick::cuda {

// ---- devices
bool is_available();
int device_count();
// LibTorch's torch::cuda::cudnn_is_available(): a GPU and a build with cuDNN
// (is_available() && torch.backends.cudnn.is_available()).
bool cudnn_is_available();
int current_device();
void set_device(int device);
std::string get_device_name(int device = -1);
struct DeviceProperties {
  std::string name;
  int64_t total_memory = 0;
  int multi_processor_count = 0;
  int major = 0, minor = 0;
  std::string uuid;        // "GPU-xxxxxxxx-..."
  std::string pci_bus_id;  // "0000:41:00.0"
};
DeviceProperties get_device_properties(int device = -1);
// {free, total} bytes on the device.
std::pair<int64_t, int64_t> mem_get_info(int device = -1);
// Waits for all work on the device (-1: the current one).
void synchronize(int device = -1);
// Physical GPU indices, most free memory first, read through NVML without a CUDA context.
std::vector<int> devices_by_free_memory();

// Makes a device current for a scope (`with torch.cuda.device(i):`).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  explicit DeviceGuard(Device device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

class Event;

// A handle to a CUDA stream of one device; cheap to copy (streams live for the process).
class Stream {
 public:
  // A stream from the device's pool (round robin; priority 0 normal, -1 high).
  static Stream create(int device = -1, int priority = 0);
  Stream(int device, cudaStream_t native) : device_(device), native_(native) {}
  int device_index() const { return device_; }
  Device device() const { return Device(kCUDA, device_); }
  cudaStream_t native() const { return native_; }
  // Work queued on this stream after this call waits for work queued on other so far.
  void wait_stream(const Stream& other) const;
  void wait_event(const Event& e) const;
  bool query() const;  // true when all work queued on it has completed
  void synchronize() const;
  bool operator==(const Stream& o) const { return native_ == o.native_ && device_ == o.device_; }
  bool operator!=(const Stream& o) const { return !(*this == o); }

 private:
  int device_;
  cudaStream_t native_;
};

Stream current_stream(int device = -1);
Stream default_stream(int device = -1);
void set_current_stream(const Stream& s);

// Makes s (and its device) current for a scope (`with torch.cuda.stream(s):`).
class StreamGuard {
 public:
  explicit StreamGuard(const Stream& s);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  int previous_device_;
  Stream previous_stream_;
};

// A CUDA event, created lazily on its first record. Owns the event: movable, not copyable.
class Event {
 public:
  explicit Event(bool enable_timing = false);
  ~Event();
  Event(Event&& o) noexcept;
  Event& operator=(Event&& o) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record();  // on the current stream
  void record(const Stream& s);
  void wait(const Stream& s) const;  // s waits for this event
  bool query() const;
  void synchronize() const;
  // Milliseconds from this event to end (both recorded, timing enabled).
  float elapsed_time(const Event& end) const;
  cudaEvent_t native() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
  int device_ = -1;
  bool timing_;
};

// ---- memory (the caching allocator, PyTorch's names)
int64_t memory_allocated(int device = -1);
int64_t max_memory_allocated(int device = -1);
int64_t memory_reserved(int device = -1);
int64_t max_memory_reserved(int device = -1);
inline int64_t memory_cached(int device = -1) { return memory_reserved(device); }
inline int64_t max_memory_cached(int device = -1) { return max_memory_reserved(device); }
void empty_cache();
void reset_peak_memory_stats(int device = -1);
// Zeroes the allocated/freed totals and the event counters (num_alloc_retries, num_ooms, ...).
void reset_accumulated_memory_stats(int device = -1);
std::map<std::string, int64_t> memory_stats(int device = -1);
std::string memory_summary(int device = -1);
void set_per_process_memory_fraction(double fraction, int device = -1);

// ---- CUDA graphs (torch.cuda.CUDAGraph)
//
//   wick::cuda::Graph g;
//   {
//     wick::cuda::GraphCapture capture(g);  // a side stream, capture_begin, capture_end
//     static_out = model(static_in);        // queued into the graph, not run
//   }
//   static_in.copy_(batch);                 // new data into the captured input
//   g.replay();                             // reruns every captured kernel
// docs/cuda_graphs.md shows a whole training step captured this way.

// A private memory pool: allocations made while capturing into it come from it and keep their
// addresses for the graph's life. Graphs captured with the same handle share one pool.
using MempoolId = std::pair<uint64_t, uint64_t>;
MempoolId graph_pool_handle();
// Whether the current stream of the current device is capturing a graph.
bool is_current_stream_capturing();

class Graph {
 public:
  Graph();
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  // Starts capturing the current stream, which must not be the default stream. Until
  // capture_end, allocations on that stream come from pool (a new private pool when {0, 0})
  // and calls that cannot be captured (copies to or from the host, item(), synchronize,
  // empty_cache, random numbers, Adam's step) raise a DeviceError naming the call.
  void capture_begin(MempoolId pool = {0, 0});
  void capture_end();
  // Launches the captured work on the current stream.
  void replay();
  // Frees the graph; its pool's memory returns once no graph and no tensor uses it.
  void reset();
  MempoolId pool() const;
  // The captured graph (a cudaGraph_t), as PyTorch's raw_cuda_graph(): for inspecting it with
  // the CUDA runtime (its nodes, cudaGraphDebugDotPrint). It stays owned by this Graph and is
  // valid until reset() or destruction. ValueError without a successful capture.
  void* raw_cuda_graph() const;

 private:
  struct Impl;
  Impl* impl_;
};

// `with torch.cuda.graph(g):` a side stream (after the current stream's work) made current,
// g.capture_begin(pool); at the end of the scope g.capture_end(), the previous stream made
// current again and made to wait for the side stream.
class GraphCapture {
 public:
  explicit GraphCapture(Graph& g, MempoolId pool = {0, 0});
  ~GraphCapture() noexcept(false);
  GraphCapture(const GraphCapture&) = delete;
  GraphCapture& operator=(const GraphCapture&) = delete;

 private:
  Graph& graph_;
  Stream previous_;
  Stream side_;
  int uncaught_;  // exceptions in flight when the capture began
};

// ---- random numbers
void manual_seed(uint64_t seed);      // the current device's generator
void manual_seed_all(uint64_t seed);  // every device's

}  // namespace wick::cuda

namespace wick {
// ATen's at::getNumGPUs(): cuda::device_count() (0 without CUDA).
inline size_t getNumGPUs() { return size_t(cuda::device_count()); }
}  // namespace wick
