// The CUDA entry points of a build without CUDA: is_available() is false, device_count() is 0,
// and everything that would need a GPU throws DeviceError("[op] wick was built without CUDA").
// What PyTorch lets a CPU-only program call harmlessly (empty_cache, manual_seed) does nothing.
#include <utility>

#include "core/cuda_hooks.h"
#include "core/cudnn_attention.h"
#include "core/cudnn_batch_norm.h"
#include "core/cudnn_rnn.h"
#include "core/flash_attention.h"
#include "core/kernel_table.h"
#include "wick/cuda.h"
#include "wick/detail/storage.h"
#include "wick/error.h"

namespace wick::detail {

namespace {
[[noreturn]] void no_cuda(const char* op) { raise<DeviceError>(op, "wick was built without CUDA"); }
}  // namespace

void cuda_copy(const Tensor&, const Tensor&, bool) { no_cuda("copy_"); }
void cuda_record_stream(const Tensor&, const wick::cuda::Stream&) { no_cuda("record_stream"); }
void cuda_check_not_capturing(Device, const char*, const char*) {}
Device resolve_cuda_device(Device, const char* op) { no_cuda(op); }
void cuda_flash_attention_forward(const FlashAttentionArgs&) { no_cuda("scaled_dot_product_attention"); }
void cuda_flash_attention_backward(const FlashAttentionArgs&) { no_cuda("scaled_dot_product_attention"); }
std::string cuda_cudnn_attention_unusable(const CudnnAttentionProblem&, bool) { return "wick was built without CUDA"; }
void cuda_cudnn_attention_forward(const CudnnAttentionArgs&) { no_cuda("scaled_dot_product_attention"); }
void cuda_cudnn_attention_backward(const CudnnAttentionArgs&) { no_cuda("scaled_dot_product_attention"); }
bool cuda_cudnn_rnn_built() { return false; }
std::optional<CudnnRnnWeightSpace> cuda_cudnn_rnn_weight_space(const CudnnRnnConfig&, Dtype, Device) {
  return std::nullopt;
}
CudnnRnnForwardResult cuda_cudnn_rnn_forward(const CudnnRnnConfig&, const Tensor&, const Tensor&, const Tensor&,
                                             std::span<const Tensor>, bool, uint64_t) {
  no_cuda("RNN");
}
CudnnRnnGrads cuda_cudnn_rnn_backward(const CudnnRnnConfig&, const Tensor&, const Tensor&, const Tensor&,
                                      const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                      const Tensor&, const Tensor&, uint64_t, bool) {
  no_cuda("RNN");
}
bool cuda_cudnn_batch_norm_built() { return false; }
CudnnBatchNormForward cuda_cudnn_batch_norm_forward(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                                    const Tensor&, double, double) {
  no_cuda("batch_norm");
}
std::array<Tensor, 3> cuda_cudnn_batch_norm_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                                     const Tensor&, double) {
  no_cuda("batch_norm");
}
Allocator* cuda_allocator(int) { no_cuda("empty"); }
Allocator* pinned_allocator() { no_cuda("pin_memory"); }
bool is_pinned_ptr(const void*) { return false; }
const KernelTable& cuda_kernels() { no_cuda("cuda"); }

}  // namespace wick::detail

namespace wick::cuda {

using detail::no_cuda;

bool is_available() { return false; }
int device_count() { return 0; }
int current_device() { no_cuda("current_device"); }
void set_device(int device) {
  // The argument is checked first, as in a CUDA build: a bad index is the caller's error either way.
  WICK_CHECK(device >= -1, ValueError, "set_device", "Device index must be -1 or non-negative, got ", device);
  no_cuda("set_device");
}
std::string get_device_name(int) { no_cuda("get_device_name"); }
DeviceProperties get_device_properties(int) { no_cuda("get_device_properties"); }
std::pair<int64_t, int64_t> mem_get_info(int) { no_cuda("mem_get_info"); }
void synchronize(int) { no_cuda("synchronize"); }
std::vector<int> devices_by_free_memory() { no_cuda("devices_by_free_memory"); }

DeviceGuard::DeviceGuard(int) { no_cuda("DeviceGuard"); }
DeviceGuard::DeviceGuard(Device) { no_cuda("DeviceGuard"); }
DeviceGuard::~DeviceGuard() = default;

Stream Stream::create(int, int) { no_cuda("Stream::create"); }
void Stream::wait_stream(const Stream&) const { no_cuda("wait_stream"); }
void Stream::wait_event(const Event&) const { no_cuda("wait_event"); }
bool Stream::query() const { no_cuda("Stream::query"); }
void Stream::synchronize() const { no_cuda("Stream::synchronize"); }
Stream current_stream(int) { no_cuda("current_stream"); }
Stream default_stream(int) { no_cuda("default_stream"); }
void set_current_stream(const Stream&) { no_cuda("set_current_stream"); }

StreamGuard::StreamGuard(const Stream& s) : previous_device_(-1), previous_stream_(s) {
  no_cuda("StreamGuard");
}
StreamGuard::~StreamGuard() = default;

// An Event can be made (it holds nothing until recorded); using it throws.
Event::Event(bool enable_timing) : timing_(enable_timing) {}
Event::~Event() = default;
Event::Event(Event&& o) noexcept : event_(o.event_), device_(o.device_), timing_(o.timing_) {}
Event& Event::operator=(Event&& o) noexcept {
  event_ = o.event_;
  device_ = o.device_;
  timing_ = o.timing_;
  return *this;
}
void Event::record() { no_cuda("Event.record"); }
void Event::record(const Stream&) { no_cuda("Event.record"); }
void Event::wait(const Stream&) const { no_cuda("Event.wait"); }
bool Event::query() const { return true; }  // never recorded: nothing pending
void Event::synchronize() const {}
float Event::elapsed_time(const Event&) const { no_cuda("elapsed_time"); }

int64_t memory_allocated(int) { no_cuda("memory_allocated"); }
int64_t max_memory_allocated(int) { no_cuda("max_memory_allocated"); }
int64_t memory_reserved(int) { no_cuda("memory_reserved"); }
int64_t max_memory_reserved(int) { no_cuda("max_memory_reserved"); }
void empty_cache() {}  // nothing is cached
void reset_peak_memory_stats(int) { no_cuda("reset_peak_memory_stats"); }
void reset_accumulated_memory_stats(int) { no_cuda("reset_accumulated_memory_stats"); }
std::map<std::string, int64_t> memory_stats(int) { no_cuda("memory_stats"); }
std::string memory_summary(int) { no_cuda("memory_summary"); }
void set_per_process_memory_fraction(double, int) { no_cuda("set_per_process_memory_fraction"); }

MempoolId graph_pool_handle() { no_cuda("graph_pool_handle"); }
bool is_current_stream_capturing() { return false; }
Graph::Graph() : impl_(nullptr) {}
Graph::~Graph() = default;
void Graph::capture_begin(MempoolId) { no_cuda("Graph.capture_begin"); }
void Graph::capture_end() { no_cuda("Graph.capture_end"); }
void Graph::replay() { no_cuda("Graph.replay"); }
void Graph::reset() {}
MempoolId Graph::pool() const { return {0, 0}; }
void* Graph::raw_cuda_graph() const {
  detail::raise<ValueError>("Graph.raw_cuda_graph",
                            "Called Graph.raw_cuda_graph without a preceding successful capture.");
}
GraphCapture::GraphCapture(Graph& g, MempoolId) : graph_(g), previous_(-1, nullptr), side_(-1, nullptr) {
  no_cuda("GraphCapture");
}
GraphCapture::~GraphCapture() noexcept(false) {}

// As torch.cuda.manual_seed{,_all}: silently ignored without CUDA.
void manual_seed(uint64_t) {}
void manual_seed_all(uint64_t) {}

}  // namespace wick::cuda
