// CUDA graphs (torch.cuda.CUDAGraph): a stream's work captured once and replayed, with the
// memory it allocates kept in a private pool of the caching allocator so that the addresses
// the graph's kernels use stay valid between replays (docs/design.md section 8).
#include <atomic>
#include <exception>

#include "core/cuda_hooks.h"
#include "cuda/alloc_config.h"
#include "cuda/caching_allocator.h"
#include "cuda/cuda_check.h"
#include "cuda/runtime.h"
#include "wick/cuda.h"
#include "wick/error.h"

namespace wick::detail::gpu {

void check_stream_not_capturing(int d, cudaStream_t stream, const char* op, const char* why) {
  if (g_captures[d].load(std::memory_order_relaxed) == 0 || stream == nullptr) [[likely]]
    return;
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  WICK_CUDA_CHECK(cudaStreamIsCapturing(stream, &status), op);
  WICK_CHECK(status != cudaStreamCaptureStatusActive, DeviceError, op, op,
             " cannot run while the current stream of cuda:", d, " is capturing a CUDA graph: ", why,
             ". Do it before capture_begin() or after capture_end().");
}

bool stream_is_capturing(int d, cudaStream_t stream) {
  if (g_captures[d].load(std::memory_order_relaxed) == 0 || stream == nullptr) [[likely]]
    return false;
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  WICK_CUDA_CHECK(cudaStreamIsCapturing(stream, &status), "capture");
  return status == cudaStreamCaptureStatusActive;
}

void check_device_not_capturing(int d, const char* op) {
  WICK_CHECK(g_captures[d].load(std::memory_order_relaxed) == 0, DeviceError, op, op,
             " cannot run while a CUDA graph is being captured on cuda:", d,
             ": waiting for the device would invalidate the capture. Do it after capture_end().");
}

}  // namespace wick::detail::gpu

namespace wick::detail {

void cuda_check_not_capturing(Device d, const char* op, const char* why) {
  const int i = d.index() >= 0 ? d.index() : wick::cuda::current_device();
  if (gpu::g_captures[i].load(std::memory_order_relaxed) == 0) [[likely]]
    return;
  gpu::check_stream_not_capturing(i, gpu::current_cuda_stream(i), op, why);
}

}  // namespace wick::detail

namespace wick::cuda {

using detail::gpu::CudaDeviceScope;

namespace {
// Pool ids: graph_pool_handle() hands out {0, n}; a graph's own pool is {n, 0}.
std::atomic<uint64_t> g_next_pool{1};
}  // namespace

MempoolId graph_pool_handle() { return {0, g_next_pool.fetch_add(1)}; }

bool is_current_stream_capturing() {
  if (!is_available()) return false;
  const int d = current_device();
  if (detail::gpu::g_captures[d].load(std::memory_order_relaxed) == 0) return false;
  cudaStream_t s = detail::gpu::current_cuda_stream(d);
  if (s == nullptr) return false;
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  WICK_CUDA_CHECK(cudaStreamIsCapturing(s, &status), "is_current_stream_capturing");
  return status == cudaStreamCaptureStatusActive;
}

struct Graph::Impl {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  int device = -1;
  cudaStream_t stream = nullptr;  // the capturing stream, while capturing
  MempoolId pool{0, 0};
  bool capturing = false;
  bool holds_pool = false;  // counted in the pool's users

  // Ends a capture that failed or is abandoned; what was captured is thrown away.
  void abandon_capture() {
    if (!capturing) return;
    CudaDeviceScope scope(device);
    cudaGraph_t g = nullptr;
    (void)cudaStreamEndCapture(stream, &g);
    (void)cudaGetLastError();
    if (g) (void)cudaGraphDestroy(g);
    detail::gpu::device_caching_allocator(device).end_capture(stream);
    detail::gpu::g_captures[device].fetch_sub(1);
    capturing = false;
  }
  void drop_pool() {
    if (!holds_pool) return;
    holds_pool = false;
    detail::gpu::device_caching_allocator(device).release_pool(pool);
  }
};

Graph::Graph() : impl_(new Impl) {}

Graph::~Graph() {
  try {
    reset();
  } catch (const std::exception&) {
    // a destructor cannot throw; the graph's handles leak
  }
  delete impl_;
}

void Graph::capture_begin(MempoolId pool) {
  const char* op = "Graph.capture_begin";
  WICK_CHECK(is_available(), DeviceError, op, "CUDA graphs need a CUDA device; none is available");
  WICK_CHECK(!impl_->capturing, ValueError, op, "this graph is already capturing");
  WICK_CHECK(impl_->exec == nullptr, ValueError, op,
             "This Graph instance already owns a captured graph. To capture a new graph, create a new "
             "instance or reset() this one.");
  WICK_CHECK(detail::gpu::alloc_config().caching, ValueError, op,
             "CUDA graphs need the caching allocator (WICK_NO_CUDA_MEMORY_CACHING is set)");
  const int d = current_device();
  cudaStream_t s = detail::gpu::current_cuda_stream(d);
  WICK_CHECK(s != nullptr, DeviceError, op,
             "CUDA graphs must be captured on a non-default stream. (However, after capture, it's ok to "
             "replay them on the default stream.)");
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  WICK_CUDA_CHECK(cudaStreamIsCapturing(s, &status), op);
  WICK_CHECK(status == cudaStreamCaptureStatusNone, ValueError, op, "the current stream of cuda:", d,
             " is already capturing a graph");
  const MempoolId id = pool == MempoolId{0, 0} ? MempoolId{g_next_pool.fetch_add(1), 0} : pool;
  auto& alloc = detail::gpu::device_caching_allocator(d);
  alloc.begin_capture(id, s);
  detail::gpu::g_captures[d].fetch_add(1);
  cudaError_t e;
  {
    CudaDeviceScope scope(d);
    // Thread-local: only unsafe calls of this thread invalidate the capture, so other threads
    // driving other work (DataLoader workers, other GPUs) are not disturbed.
    e = cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
  }
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    alloc.end_capture(s);
    detail::gpu::g_captures[d].fetch_sub(1);
    alloc.release_pool(id);
    WICK_CUDA_CHECK(e, op);
  }
  impl_->device = d;
  impl_->stream = s;
  impl_->pool = id;
  impl_->capturing = true;
  impl_->holds_pool = true;
}

void Graph::capture_end() {
  const char* op = "Graph.capture_end";
  WICK_CHECK(impl_->capturing, ValueError, op, "capture_end() without a capture_begin()");
  WICK_CHECK(detail::gpu::current_cuda_stream(impl_->device) == impl_->stream, ValueError, op,
             "Capture must end on the same stream it began on.");
  const int d = impl_->device;
  cudaGraph_t g = nullptr;
  cudaError_t e;
  {
    CudaDeviceScope scope(d);
    e = cudaStreamEndCapture(impl_->stream, &g);
  }
  detail::gpu::device_caching_allocator(d).end_capture(impl_->stream);
  detail::gpu::g_captures[d].fetch_sub(1);
  impl_->capturing = false;
  if (e != cudaSuccess || g == nullptr) {
    (void)cudaGetLastError();
    if (g) (void)cudaGraphDestroy(g);
    impl_->drop_pool();
    detail::raise<DeviceError>(
        op, "the capture on cuda:", d, " was invalidated (", cudaGetErrorString(e),
        "): a call that cannot be captured ran on the capturing stream or waited for it");
  }
  cudaGraphExec_t exec = nullptr;
  {
    CudaDeviceScope scope(d);
    e = cudaGraphInstantiate(&exec, g, 0);
  }
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    (void)cudaGraphDestroy(g);
    impl_->drop_pool();
    WICK_CUDA_CHECK(e, op);
  }
  impl_->graph = g;
  impl_->exec = exec;
}

void Graph::replay() {
  const char* op = "Graph.replay";
  WICK_CHECK(impl_->exec != nullptr, ValueError, op,
             "Called Graph.replay without a preceding successful capture.");
  const int d = impl_->device;
  CudaDeviceScope scope(d);
  cudaStream_t s = detail::gpu::current_cuda_stream(d);
  WICK_CUDA_CHECK(cudaGraphLaunch(impl_->exec, s), op);
}

void Graph::reset() {
  if (impl_->device < 0) return;
  impl_->abandon_capture();
  {
    CudaDeviceScope scope(impl_->device);
    if (impl_->exec) WICK_CUDA_CHECK(cudaGraphExecDestroy(impl_->exec), "Graph.reset");
    if (impl_->graph) WICK_CUDA_CHECK(cudaGraphDestroy(impl_->graph), "Graph.reset");
  }
  impl_->exec = nullptr;
  impl_->graph = nullptr;
  impl_->drop_pool();
}

MempoolId Graph::pool() const { return impl_->pool; }

void* Graph::raw_cuda_graph() const {
  WICK_CHECK(impl_->graph != nullptr, ValueError, "Graph.raw_cuda_graph",
             "Called Graph.raw_cuda_graph without a preceding successful capture.");
  return impl_->graph;
}

namespace {
// The current stream, for GraphCapture: without a CUDA device the error names GraphCapture, the
// call made, rather than the stream lookup inside it.
Stream capture_previous_stream() {
  WICK_CHECK(is_available(), DeviceError, "GraphCapture", "CUDA graphs need a CUDA device; none is available");
  return current_stream();
}
}  // namespace

GraphCapture::GraphCapture(Graph& g, MempoolId pool)
    : graph_(g), previous_(capture_previous_stream()), side_(Stream::create()),
      uncaught_(std::uncaught_exceptions()) {
  side_.wait_stream(previous_);
  set_current_stream(side_);
  try {
    graph_.capture_begin(pool);
  } catch (...) {
    set_current_stream(previous_);
    throw;
  }
}

GraphCapture::~GraphCapture() noexcept(false) {
  if (std::uncaught_exceptions() > uncaught_) {
    // leaving by an exception: the capture is thrown away, and this must not throw
    try {
      graph_.reset();
    } catch (const std::exception&) {}
    set_current_stream(previous_);
    return;
  }
  try {
    graph_.capture_end();
  } catch (...) {
    set_current_stream(previous_);
    throw;
  }
  set_current_stream(previous_);
  previous_.wait_stream(side_);
}

}  // namespace wick::cuda
