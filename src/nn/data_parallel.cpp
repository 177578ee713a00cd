// nn::DataParallel: scatter, replicate, parallel apply, gather, with the autograd nodes that
// make the backward pass go through all of it (ScatterBackward, BroadcastBackward,
// GatherBackward, PyTorch's names).
//
// Replicas. The module itself runs on device_ids[0]. The replicas on the other devices are
// made once by Module::replicate(); each forward binds their registered parameters and buffers
// (the TensorImpls the replica's own members also hold) to views of the broadcast buffers, and
// makes the parameters outputs of one BroadcastBackward node per broadcast bucket, whose inputs
// are the module's parameters. Its backward adds the bucket's gradients of all replicas on
// device_ids[1..] (flattened: one reduction per bucket) and hands the sum, on device_ids[0],
// to the module's parameters, where the engine adds it to the gradient of the replica that is
// the module itself. The nodes are eager_ (the engine runs them as soon as their gradients are
// all there), so the reductions overlap the backward of the layers before them.
//
// Threads and streams. Each further device has a worker thread kept for the life of the
// DataParallel. A forward takes the caller's current stream of every device; the scatter,
// the broadcast, each replica and the gather run on those streams, and each backward node runs
// its cross-device copies with the same streams current, so that the engine's stream ordering
// (a consumer waits for the producer's stream) covers them.
#include "wick/nn/data_parallel.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "autograd/function.h"
#include "autograd/meta.h"
#include "core/comm_plan.h"
#include "core/timeline.h"
#include "wick/amp.h"
#include "wick/autograd.h"
#include "wick/cuda.h"
#include "wick/cuda_comm.h"
#include "wick/ops.h"

namespace wick::nn {

namespace {

using autograd::Node;
using autograd::variable_list;
namespace comm = wick::cuda::comm;

constexpr const char* kOp = "DataParallel";

// DataParallel's phases ("scatter.begin", "replica.forward.end", "reduce[3].copy.end", ...) go
// into the process's timeline (core/timeline.h), each on the device's current stream.
wick::detail::Timeline& step_timeline() { return wick::detail::process_timeline(); }

// ---- a worker thread that runs one job at a time

class Worker {
 public:
  Worker() : thread_([this] { loop(); }) {}
  ~Worker() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  void submit(std::function<void()> job) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      job_ = std::move(job);
      busy_ = true;
    }
    cv_.notify_all();
  }
  void wait() {
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [&] { return !busy_; });
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || busy_; });
      if (!busy_) return;  // stopping with nothing to do
      auto job = std::move(job_);
      lock.unlock();
      job();  // catches its own exceptions
      lock.lock();
      busy_ = false;
      done_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_, done_;
  std::function<void()> job_;
  bool busy_ = false, stop_ = false;
  std::thread thread_;
};

// ---- streams: every node below runs its work with the forward's streams current

class StreamsGuard {
 public:
  explicit StreamsGuard(const std::vector<cuda::Stream>& streams) {
    guards_.reserve(streams.size());
    for (const auto& s : streams) guards_.push_back(std::make_unique<cuda::StreamGuard>(s));
  }
  ~StreamsGuard() {
    while (!guards_.empty()) guards_.pop_back();  // the last made restores first
  }
  StreamsGuard(const StreamsGuard&) = delete;
  StreamsGuard& operator=(const StreamsGuard&) = delete;

 private:
  std::vector<std::unique_ptr<cuda::StreamGuard>> guards_;
};

Device gpu(int d) { return Device(kCUDA, d); }

// Makes t (a registered tensor of a replica) a plain tensor over value's memory.
void bind(const Tensor& t, const Tensor& value) {
  auto* impl = t.impl();
  impl->set_storage(value.impl()->storage());
  impl->set_dtype(value.dtype());
  impl->set_geometry(DimVector(value.sizes()), DimVector(value.strides()), value.storage_offset());
  if (auto* m = autograd::meta(t)) {
    m->grad_fn.reset();
    m->output_nr = 0;
    m->grad = Tensor();
  }
  impl->set_requires_grad(false);
}

// The nodes below move gradients between GPUs by collectives, which do not record: under
// create_graph (grad mode on in backward) they refuse instead of cutting the gradients' graph.
void check_no_double_backward(const Node& node) {
  if (GradMode::is_enabled()) [[unlikely]]
    wick::detail::raise<NotImplementedError>("backward", "double backward is not implemented for ", node.name(),
                                             " (call backward without create_graph)");
}

// Inputs: one bucket of the module's parameters (on devices[0]); outputs: the same parameters'
// replicas on devices[1..], replica after replica. Backward: per input, the sum of its
// replicas' gradients on devices[0].
class BroadcastBackward final : public Node {
 public:
  // streams: the forward's (the replicas' gradients are made there); sides: one side stream per
  // device, on which the reduction runs so that it overlaps the backward still running on the
  // forward's streams. The node's own stream (the engine's ordering) is sides[0].
  BroadcastBackward(std::vector<int> devices, std::vector<cuda::Stream> streams,
                    std::vector<cuda::Stream> sides, size_t bucket)
      : devices_(std::move(devices)), streams_(std::move(streams)), sides_(std::move(sides)),
        bucket_(bucket) {}
  std::string name() const override { return "BroadcastBackward"; }

  variable_list apply(variable_list&& grads) override {
    check_no_double_backward(*this);
    const size_t n = input_metadata_.size(), replicas = devices_.size() - 1;
    // Here the engine has made sides_[0] current on devices_[0] and made it wait for the
    // streams that produced grads. Work on device r runs on sides_[r] after streams_[r].
    // Each replica's side stream waits for the points where its gradients were made (events
    // the engine hands over), not for its forward stream's tail: the host has queued much more
    // of that replica's backward by now, and waiting for all of it would hold the reduction
    // until that replica's backward ends (docs/design.md section 9).
    std::vector<std::vector<cuda::Event>> ready = std::move(input_ready_);
    input_ready_.clear();
    std::vector<Tensor> flats;  // per replica: the bucket's gradients, flattened (zeros where none came)
    std::vector<size_t> from;   // the replica of each flat
    for (size_t r = 1; r <= replicas; ++r) {
      bool any = false, tail = false;
      for (size_t j = 0; j < n; ++j) {
        const size_t slot = (r - 1) * n + j;
        if (!grads[slot].defined()) continue;
        any = true;
        if (slot >= ready.size() || ready[slot].empty()) tail = true;  // no event: wait for all
        else
          for (const cuda::Event& e : ready[slot]) e.wait(sides_[r]);
      }
      if (!any) continue;
      if (tail) sides_[r].wait_stream(streams_[r]);
      cuda::StreamGuard guard(sides_[r]);
      if (step_timeline().enabled()) step_timeline().mark(phase("grads_ready"), devices_[r]);
      std::vector<Tensor> parts;
      for (size_t j = 0; j < n; ++j) {
        const Tensor& g = grads[(r - 1) * n + j];
        const auto& meta = input_metadata_[j];
        if (g.defined()) {
          // g's memory belongs to the replica's stream: keep it from reuse until the side
          // stream has read it
          g.record_stream(sides_[r]);
          parts.push_back(g.contiguous().view({g.numel()}));
        } else {
          parts.push_back(zeros({numel(meta)}, TensorOptions().dtype(meta.dtype).device(gpu(devices_[r]))));
        }
      }
      flats.push_back(parts.size() == 1 ? parts[0] : cat(parts, 0));
      from.push_back(r);
    }
    variable_list out(n);
    if (flats.empty()) return out;
    Tensor sum;
    {
      std::vector<cuda::Stream> sides;
      for (size_t r : from) sides.push_back(sides_[r]);
      StreamsGuard guard(sides);
      // one replica: a copy to devices[0]; more: reduced onto the first of them, then copied
      Tensor total = flats.size() == 1 ? flats[0] : comm::reduce_add(flats, devices_[from[0]]);
      cuda::StreamGuard source(sides_[from[0]]);
      sum = total.to(gpu(devices_[0]));  // on the source's side stream; sides_[0] waits for it
      if (step_timeline().enabled()) step_timeline().mark(phase("copy.end"), devices_[from[0]]);
    }
    if (step_timeline().enabled()) step_timeline().mark(phase("end"), devices_[0]);
    // sum is read on whichever stream consumes the gradients (the parameters' accumulation)
    sum.record_stream(streams_[0]);
    int64_t off = 0;
    for (size_t j = 0; j < n; ++j) {
      const int64_t k = numel(input_metadata_[j]);
      if (needs_input_grad(j)) out[j] = sum.narrow(0, off, k).view(IntArrayRef(input_metadata_[j].sizes));
      off += k;
    }
    return out;
  }

 private:
  static int64_t numel(const autograd::InputMetadata& m) {
    int64_t n = 1;
    for (int64_t s : m.sizes) n *= s;
    return n;
  }
  std::string phase(const char* what) const { return "reduce[" + std::to_string(bucket_) + "]." + what; }
  std::vector<int> devices_;
  std::vector<cuda::Stream> streams_, sides_;
  size_t bucket_;
};

// Input: the batch; outputs: its pieces on the devices. Backward: the pieces' gradients
// gathered on the batch's device.
class ScatterBackward final : public Node {
 public:
  ScatterBackward(std::vector<cuda::Stream> streams, std::vector<std::vector<int64_t>> sizes, int64_t dim,
                  Device source, std::vector<int> devices)
      : streams_(std::move(streams)), sizes_(std::move(sizes)), dim_(dim), source_(source),
        devices_(std::move(devices)) {}
  std::string name() const override { return "ScatterBackward"; }
  variable_list apply(variable_list&& grads) override {
    check_no_double_backward(*this);
    StreamsGuard guard(streams_);
    std::vector<Tensor> parts;
    for (size_t k = 0; k < grads.size(); ++k) {
      parts.push_back(grads[k].defined()
                          ? grads[k]
                          : zeros(IntArrayRef(sizes_[k]),
                                  TensorOptions().dtype(input_metadata_[0].dtype).device(gpu(devices_[k]))));
    }
    return {comm::gather(parts, dim_, source_)};
  }

 private:
  std::vector<cuda::Stream> streams_;
  std::vector<std::vector<int64_t>> sizes_;
  int64_t dim_;
  Device source_;
  std::vector<int> devices_;
};

// Inputs: the replicas' outputs; output: their concatenation on the output device. Backward:
// the gradient cut back into the pieces, each copied to its replica's device.
class GatherBackward final : public Node {
 public:
  GatherBackward(std::vector<cuda::Stream> streams, std::vector<int> devices, std::vector<int64_t> sizes,
                 int64_t dim, bool scalars)
      : streams_(std::move(streams)), devices_(std::move(devices)), sizes_(std::move(sizes)), dim_(dim),
        scalars_(scalars) {}
  std::string name() const override { return "GatherBackward"; }
  variable_list apply(variable_list&& grads) override {
    check_no_double_backward(*this);
    StreamsGuard guard(streams_);
    const bool timeline = step_timeline().enabled();
    if (timeline) step_timeline().mark("gather.backward.begin", devices_[0]);
    auto parts = comm::scatter(grads[0], devices_, sizes_, dim_);
    if (timeline)
      for (int d : devices_) step_timeline().mark("replica.backward.begin", d);
    variable_list out(parts.size());
    for (size_t k = 0; k < parts.size(); ++k)
      if (needs_input_grad(k)) out[k] = scalars_ ? parts[k].view({}) : parts[k];
    return out;
  }

 private:
  std::vector<cuda::Stream> streams_;
  std::vector<int> devices_;
  std::vector<int64_t> sizes_;
  int64_t dim_;
  bool scalars_;
};

// "Caught ValueError in replica 1 on device cuda:1: [linear] ..." as the same error type.
[[noreturn]] void rethrow_from_replica(const std::exception_ptr& error, size_t replica, int device) {
  auto text = [&](const char* type, const char* what) {
    std::ostringstream os;
    os << "[" << kOp << "] Caught " << type << " in replica " << replica << " on device cuda:" << device
       << ": " << what;
    return os.str();
  };
  try {
    std::rethrow_exception(error);
  } catch (const ValueError& e) {
    throw ValueError(text("ValueError", e.what()));
  } catch (const TypeError& e) {
    throw TypeError(text("TypeError", e.what()));
  } catch (const IndexError& e) {
    throw IndexError(text("IndexError", e.what()));
  } catch (const DeviceError& e) {
    throw DeviceError(text("DeviceError", e.what()));
  } catch (const OutOfMemoryError& e) {
    throw OutOfMemoryError(text("OutOfMemoryError", e.what()));
  } catch (const NotImplementedError& e) {
    throw NotImplementedError(text("NotImplementedError", e.what()));
  } catch (const Error& e) {
    throw Error(text("Error", e.what()));
  } catch (const std::exception& e) {
    throw Error(text("std::exception", e.what()));
  } catch (...) {
    throw Error(text("an exception", "(not a std::exception)"));
  }
}

// What identifies the structure replicas were built for.
struct Signature {
  std::vector<const void*> impls;
  std::vector<std::vector<int64_t>> sizes;
  std::vector<Dtype> dtypes;
  bool operator==(const Signature&) const = default;
};

Signature signature_of(const std::vector<Tensor>& params, const std::vector<Tensor>& buffers) {
  Signature s;
  for (const auto* list : {&params, &buffers}) {
    for (const Tensor& t : *list) {
      s.impls.push_back(t.impl());
      s.sizes.emplace_back(t.sizes().begin(), t.sizes().end());
      s.dtypes.push_back(t.dtype());
    }
  }
  return s;
}

}  // namespace

struct DataParallelImpl::State {
  std::shared_ptr<Module> module;
  Forward forward;
  std::vector<int> device_ids;
  int output_device = -1;
  int64_t dim = 0;

  // replicas[k] runs on device_ids[k + 1], with its parameters and buffers in module order
  std::vector<std::shared_ptr<Module>> replicas;
  std::vector<std::vector<Tensor>> replica_params, replica_buffers;
  Signature built_for;
  std::vector<std::unique_ptr<Worker>> workers;  // workers[k] for device_ids[k + 1]
  std::map<int, cuda::Stream> side_streams;      // per device: where gradient reductions run
  cuda::Stream node_side_stream(int device) {
    auto it = side_streams.find(device);
    if (it == side_streams.end()) it = side_streams.emplace(device, cuda::Stream::create(device, -1)).first;
    return it->second;
  }
  std::vector<cuda::Stream> sides(const std::vector<int>& devices) {
    std::vector<cuda::Stream> out;
    for (int d : devices) out.push_back(node_side_stream(d));
    return out;
  }
  std::mutex forward_mu;  // one forward at a time

  void check_placement(const std::vector<Tensor>& params, const std::vector<Tensor>& buffers) const;
  void ensure_replicas(size_t count, const std::vector<Tensor>& params, const std::vector<Tensor>& buffers);
  Tensor run(const Tensor& input);
};

void DataParallelImpl::State::check_placement(const std::vector<Tensor>& params,
                                              const std::vector<Tensor>& buffers) const {
  const Device src = gpu(device_ids[0]);
  for (const auto* list : {&params, &buffers}) {
    for (const Tensor& t : *list) {
      if (t.device() != src) [[unlikely]]
        wick::detail::raise<DeviceError>(kOp, "module must have its parameters and buffers on device ", src,
                                         " (device_ids[0]) but found one of them on device: ", t.device());
    }
  }
}

void DataParallelImpl::State::ensure_replicas(size_t count, const std::vector<Tensor>& params,
                                              const std::vector<Tensor>& buffers) {
  Signature now = signature_of(params, buffers);
  if (!(now == built_for)) {
    replicas.clear();
    replica_params.clear();
    replica_buffers.clear();
    built_for = std::move(now);
  }
  if (replicas.size() >= count && workers.size() >= count) return;
  const auto names = module->named_parameters();
  const auto buffer_names = module->named_buffers();
  while (replicas.size() < count) {
    auto r = module->replicate();
    auto rp = r->named_parameters();
    auto rb = r->named_buffers();
    auto same = [](const NamedList<Tensor>& a, const NamedList<Tensor>& b) {
      if (a.size() != b.size()) return false;
      for (size_t i = 0; i < a.size(); ++i)
        if (a[i].first != b[i].first || !a[i].second.sizes().equals(b[i].second.sizes()) ||
            a[i].second.impl() == b[i].second.impl())
          return false;
      return true;
    };
    WICK_CHECK(
        same(names, rp) && same(buffer_names, rb), ValueError, kOp, "cannot replicate ", module->name(),
        ": a module rebuilt from its constructor's arguments has other parameters or buffers (was it changed "
        "after it was made?)");
    std::vector<Tensor> ps, bs;
    for (auto& [n, t] : rp) ps.push_back(t);
    for (auto& [n, t] : rb) bs.push_back(t);
    replicas.push_back(std::move(r));
    replica_params.push_back(std::move(ps));
    replica_buffers.push_back(std::move(bs));
  }
  while (workers.size() < count) workers.push_back(std::make_unique<Worker>());
}

Tensor DataParallelImpl::State::run(const Tensor& input) {
  WICK_CHECK(input.defined(), ValueError, kOp, "input is undefined");
  const auto params = module->parameters();
  const auto buffers = module->buffers();
  check_placement(params, buffers);
  const bool grad = GradMode::is_enabled();
  // Autocast is per thread: the replicas' threads run under this thread's CUDA state, as
  // PyTorch's parallel_apply does.
  const bool autocast = is_autocast_enabled(kCUDA);
  const Dtype autocast_dtype = get_autocast_dtype(kCUDA);

  // 1. the replicas this batch needs (torch.chunk's pieces: maybe fewer than the devices),
  // made before anything else so that a module that cannot be replicated changes nothing
  const int64_t d = dim < 0 ? dim + input.dim() : dim;
  WICK_CHECK(d >= 0 && d < input.dim(), IndexError, kOp,
             "Dimension out of range (expected to be in range of [", -input.dim(), ", ", input.dim() - 1,
             "], but got ", dim, ")");
  const size_t n =
      std::max<size_t>(1, wick::detail::chunk_sizes(input.size(d), int64_t(device_ids.size())).size());
  ensure_replicas(n - 1, params, buffers);

  // 2. scatter
  const bool timeline = step_timeline().enabled();
  std::vector<cuda::Stream> all_streams;
  for (int dev : device_ids) all_streams.push_back(cuda::current_stream(dev));
  if (timeline && input.is_cuda()) step_timeline().mark("scatter.begin", input.device().index());
  std::vector<Tensor> pieces = comm::scatter(input, device_ids, std::nullopt, d);
  WICK_CHECK(pieces.size() == n, ValueError, kOp, "scatter gave ", pieces.size(), " pieces, expected ", n);
  const std::vector<int> devices(device_ids.begin(), device_ids.begin() + int64_t(n));
  const std::vector<cuda::Stream> streams(all_streams.begin(), all_streams.begin() + int64_t(n));
  auto mark_all = [&](const char* phase) {
    if (timeline)
      for (int dev : devices) step_timeline().mark(phase, dev);
  };
  mark_all("scatter.end");
  if (grad && input.requires_grad()) {
    std::vector<std::vector<int64_t>> sizes;
    for (const Tensor& p : pieces) sizes.emplace_back(p.sizes().begin(), p.sizes().end());
    auto node = std::make_shared<ScatterBackward>(streams, std::move(sizes), d, input.device(), devices);
    autograd::detail::init_node(*node, {input});
    node->num_outputs_ = uint32_t(n);
    for (size_t k = 0; k < n; ++k) autograd::set_history(pieces[k], node, uint32_t(k));
  }

  // 3. replicate: the module runs on devices[0], replicas on the others
  if (n > 1) {
    NoGradGuard no_grad;
    mark_all("broadcast.begin");
    auto p_out = comm::broadcast_coalesced(params, devices);
    auto b_out = comm::broadcast_coalesced(buffers, devices);
    mark_all("broadcast.end");
    for (size_t k = 1; k < n; ++k) {
      for (size_t j = 0; j < params.size(); ++j) bind(replica_params[k - 1][j], p_out[k][j]);
      for (size_t j = 0; j < buffers.size(); ++j) bind(replica_buffers[k - 1][j], b_out[k][j]);
      // each module's mode, parents first (train() also sets the children, which follow)
      const auto mine = module->modules(), theirs = replicas[k - 1]->modules();
      for (size_t m = 0; m < mine.size() && m < theirs.size(); ++m) theirs[m]->train(mine[m]->is_training());
    }
  }
  if (n > 1 && grad) {
    const auto buckets = wick::detail::bucket_indices(params, comm::kDefaultBufferSize);
    for (size_t bi = 0; bi < buckets.size(); ++bi) {
      const auto& bucket = buckets[bi];
      bool wanted = false;
      for (size_t j : bucket) wanted = wanted || params[j].requires_grad();
      if (!wanted) continue;
      std::vector<Tensor> inputs;
      for (size_t j : bucket) inputs.push_back(params[j]);
      auto node = std::make_shared<BroadcastBackward>(devices, streams, sides(devices), bi);
      autograd::detail::init_node(*node, inputs);
      node->stream_ = node_side_stream(devices[0]);
      node->num_outputs_ = uint32_t(bucket.size() * (n - 1));
      node->eager_ = true;
      node->wants_input_events_ = true;
      for (size_t k = 1; k < n; ++k)
        for (size_t b = 0; b < bucket.size(); ++b)
          if (params[bucket[b]].requires_grad())
            autograd::set_history(replica_params[k - 1][bucket[b]], node,
                                  uint32_t((k - 1) * bucket.size() + b));
    }
  }

  // 4. parallel apply: replica k on its worker, the module itself on this thread
  std::vector<Tensor> outputs(n);
  std::vector<std::exception_ptr> errors(n);
  for (size_t k = 1; k < n; ++k) {
    workers[k - 1]->submit([&, k] {
      try {
        AutoGradMode mode(grad);
        std::optional<AutocastGuard> cast;
        if (autocast) cast.emplace(kCUDA, autocast_dtype);
        cuda::StreamGuard guard(streams[k]);
        if (timeline) step_timeline().mark("replica.forward.begin", devices[k]);
        outputs[k] = forward(*replicas[k - 1], pieces[k]);
        if (timeline) step_timeline().mark("replica.forward.end", devices[k]);
      } catch (...) {
        errors[k] = std::current_exception();
      }
    });
  }
  try {
    cuda::StreamGuard guard(streams[0]);
    if (timeline) step_timeline().mark("replica.forward.begin", devices[0]);
    outputs[0] = forward(*module, pieces[0]);
    if (timeline) step_timeline().mark("replica.forward.end", devices[0]);
  } catch (...) {
    errors[0] = std::current_exception();
  }
  for (size_t k = 1; k < n; ++k) workers[k - 1]->wait();
  for (size_t k = 0; k < n; ++k)
    if (errors[k]) rethrow_from_replica(errors[k], k, devices[k]);
  for (size_t k = 0; k < n; ++k) {
    WICK_CHECK(outputs[k].defined(), ValueError, kOp, "replica ", k, " on device cuda:", devices[k],
               " returned an undefined tensor");
    WICK_CHECK(outputs[k].is_cuda() && outputs[k].device().index() == devices[k], DeviceError, kOp,
               "replica ", k, " on device cuda:", devices[k], " returned a tensor on ", outputs[k].device());
  }

  // 5. gather on the output device (scalars become a vector, one element per replica)
  const bool scalars = outputs[0].dim() == 0;
  std::vector<Tensor> parts;
  std::vector<int64_t> sizes;
  for (const Tensor& o : outputs) {
    WICK_CHECK((o.dim() == 0) == scalars, ValueError, kOp,
               "replicas returned tensors of different dimensions");
    parts.push_back(scalars ? o.detach().view({1}) : o.detach());
    sizes.push_back(scalars ? 1 : (o.dim() > d ? o.size(d) : 0));
  }
  WICK_CHECK(scalars || outputs[0].dim() > d, ValueError, kOp, "cannot gather outputs of ", outputs[0].dim(),
             " dimensions along dim ", dim);
  const Device out_device = gpu(output_device);
  Tensor out = comm::gather(parts, scalars ? 0 : d, out_device);
  if (timeline) step_timeline().mark("gather.end", output_device);
  bool record = false;
  for (const Tensor& o : outputs) record = record || o.requires_grad();
  if (record && grad && out.is_floating_point()) {
    auto node = std::make_shared<GatherBackward>(streams, devices, sizes, scalars ? 0 : d, scalars);
    autograd::detail::init_node(*node, outputs);
    node->device_ = out_device;
    node->stream_ = cuda::current_stream(output_device);
    autograd::set_history(out, node, 0);
  }
  return out;
}

DataParallelImpl::DataParallelImpl(std::shared_ptr<Module> module, Forward forward,
                                   std::vector<int> device_ids, int output_device, int64_t dim)
    : state_(std::make_unique<State>()) {
  WICK_CHECK(module != nullptr, ValueError, kOp, "module is empty");
  const int count = cuda::is_available() ? cuda::device_count() : 0;
  if (device_ids.empty())
    for (int i = 0; i < count; ++i) device_ids.push_back(i);
  for (int d : device_ids)
    WICK_CHECK(d >= 0 && d < count, DeviceError, kOp, "invalid device id ", d, " in device_ids (", count,
               " CUDA devices visible)");
  for (size_t i = 0; i < device_ids.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      WICK_CHECK(device_ids[i] != device_ids[j], ValueError, kOp,
                 "device_ids must be distinct, cuda:", device_ids[i], " appears twice");
  if (!device_ids.empty() && output_device < 0) output_device = device_ids[0];
  if (!device_ids.empty())
    WICK_CHECK(output_device < count, DeviceError, kOp, "invalid output_device ", output_device, " (", count,
               " CUDA devices visible)");
  state_->module = module;
  state_->forward = std::move(forward);
  state_->device_ids = std::move(device_ids);
  state_->output_device = output_device;
  state_->dim = dim;
  register_module("module", std::move(module));
  // As PyTorch: with one device the module is moved there at once.
  if (state_->device_ids.size() == 1) state_->module->to(gpu(state_->device_ids[0]));
}

DataParallelImpl::~DataParallelImpl() = default;

Tensor DataParallelImpl::forward(const Tensor& input) {
  State& s = *state_;
  if (s.device_ids.empty()) return s.forward(*s.module, input);
  std::lock_guard<std::mutex> lock(s.forward_mu);
  if (s.device_ids.size() == 1) {
    // As PyTorch: one device runs the module itself on the input moved there, no gather.
    const auto params = s.module->parameters();
    const auto buffers = s.module->buffers();
    s.check_placement(params, buffers);
    const Device d = gpu(s.device_ids[0]);
    return s.forward(*s.module, input.device() == d ? input : input.to(d));
  }
  return s.run(input);
}

const std::shared_ptr<Module>& DataParallelImpl::module() const { return state_->module; }
const std::vector<int>& DataParallelImpl::device_ids() const { return state_->device_ids; }
int DataParallelImpl::output_device() const { return state_->output_device; }
int64_t DataParallelImpl::dim() const { return state_->dim; }

}  // namespace wick::nn
