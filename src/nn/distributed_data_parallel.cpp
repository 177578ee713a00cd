// nn::parallel::DistributedDataParallel: the reducer (buckets, per-parameter hooks, the
// end-of-backward callback) after PyTorch's, over any ProcessGroup.
//
// One iteration. forward() broadcasts the buffers (broadcast_buffers) and, with grad mode on
// and outside no_sync, arms the reducer: every parameter not ready, every bucket waiting for
// all its parameters, none launched. In the backward pass each parameter's post-accumulate-grad
// hook (run by the engine right after its AccumulateGrad) moves the gradient into the
// parameter's view of its bucket, makes that view the parameter's grad(), and marks the
// parameter ready; the first hook of the pass queues finalize() to run once the pass is over.
// A bucket whose last parameter became ready, and every complete bucket after it, is launched
// (all_reduce AVG, asynchronously) as long as every earlier bucket has been: every rank then
// issues the same collectives in the same order whatever order its gradients came in.
// finalize() deals with the parameters that got no gradient (see the header), launches what is
// left and synchronizes every bucket's Work. The hooks and finalize() run on the engine's
// thread, which is the thread that called backward(); on a GPU with the parameter's stream (the
// hooks) or the caller's stream (finalize) current, which the backend orders its collectives
// after.
#include <algorithm>
#include <optional>
#include <sstream>

#include "autograd/meta.h"
#include "core/comm_plan.h"
#include "core/timeline.h"
#include "wick/autograd.h"
#include "wick/nn/distributed.h"
#include "wick/ops.h"

namespace wick::nn::parallel {

namespace {

constexpr const char* kOp = "DistributedDataParallel";
constexpr int64_t kMiB = 1024 * 1024;
// The first bucket is small, so that the first collective starts early in the backward pass.
constexpr int64_t kFirstBucketBytes = kMiB;
// Parameters and buffers broadcast at construction go in flat buffers of at most this size.
constexpr int64_t kBroadcastBucketBytes = 250 * kMiB;

bool is_view_of(const Tensor& g, const Tensor& view) {
  return g.defined() && g.impl()->storage().get() == view.impl()->storage().get() &&
         g.storage_offset() == view.storage_offset() && g.sizes().equals(view.sizes()) &&
         g.strides().equals(view.strides()) && g.dtype() == view.dtype();
}

// Rank 0's values of tensors on every rank: one broadcast per flat buffer of one dtype.
void broadcast_coalesced(distributed::ProcessGroup& group, const std::vector<Tensor>& tensors) {
  NoGradGuard no_grad;
  const auto chunks = wick::detail::bucket_indices(tensors, kBroadcastBucketBytes);
  std::vector<Tensor> flats;
  std::vector<distributed::Work> works;
  for (const auto& chunk : chunks) {
    std::vector<Tensor> pieces;
    for (size_t i : chunk) pieces.push_back(tensors[i].detach().reshape({-1}));
    Tensor flat = pieces.size() == 1 ? pieces[0].clone(MemoryFormat::Contiguous) : cat(pieces);
    works.push_back(group.broadcast(flat, 0));
    flats.push_back(flat);
  }
  for (size_t c = 0; c < chunks.size(); ++c) {
    works[c].wait();
    int64_t offset = 0;
    for (size_t i : chunks[c]) {
      const Tensor& t = tensors[i];
      Tensor dst = t.detach();
      dst.copy_(flats[c].narrow(0, offset, t.numel()).view(t.sizes()));
      offset += t.numel();
    }
  }
}

}  // namespace

// ---- the reducer

struct DistributedDataParallelImpl::Reducer : std::enable_shared_from_this<Reducer> {
  struct Bucket {
    Tensor flat;                 // the bucket's gradients, on the parameters' device
    std::vector<size_t> params;  // indices into Reducer::params
    std::vector<Tensor> views;   // views[k]: params[k]'s gradient in flat, shaped as the parameter
    size_t pending = 0;          // parameters not ready yet in this backward pass
    bool launched = false;
    distributed::Work work;
  };

  std::shared_ptr<distributed::ProcessGroup> group;
  bool find_unused = false;
  std::vector<Tensor> params;  // those requiring grad, each tensor once, in registration order
  std::vector<std::string> names;
  std::vector<Bucket> buckets;
  std::vector<std::pair<size_t, size_t>> location;  // per parameter: (bucket, slot)
  std::vector<autograd::HookHandle> hooks;
  Device device;

  // ---- one iteration
  bool require_sync = true;  // false within no_sync
  bool expect_hooks = false;
  bool finalize_queued = false;
  size_t next_bucket = 0;
  std::vector<char> ready;  // per parameter: marked ready in this backward pass

  // ---- the host's marks of the last iteration (core/timeline.h: on with WICK_TIMELINE=1 when
  // the DistributedDataParallel is made)
  wick::detail::Timeline timeline;

  void mark(std::string phase) {
    if (timeline.enabled()) timeline.mark(std::move(phase));
  }

  Tensor& grad_of(size_t i) { return params[i].mutable_grad(); }
  Tensor& view_of(size_t i) {
    auto [b, k] = location[i];
    return buckets[b].views[k];
  }

  void build_buckets(int64_t cap_bytes) {
    std::vector<Tensor> reversed(params.rbegin(), params.rend());
    const auto assignment =
        wick::detail::compute_bucket_assignment_by_size(reversed, {std::min(kFirstBucketBytes, cap_bytes), cap_bytes});
    location.assign(params.size(), {0, 0});
    NoGradGuard no_grad;
    for (const auto& indices : assignment) {
      Bucket b;
      int64_t numel = 0;
      for (size_t r : indices) {
        b.params.push_back(params.size() - 1 - r);
        numel += reversed[r].numel();
      }
      const Tensor& first = params[b.params.front()];
      b.flat = zeros({numel}, TensorOptions().dtype(first.dtype()).device(first.device()));
      int64_t offset = 0;
      for (size_t k = 0; k < b.params.size(); ++k) {
        const Tensor& p = params[b.params[k]];
        b.views.push_back(b.flat.narrow(0, offset, p.numel()).view(p.sizes()));
        offset += p.numel();
        location[b.params[k]] = {buckets.size(), k};
        // The weight-gradient GEMM writes straight into the view when grad() is undefined.
        autograd::set_grad_destination(p, b.views.back());
        // A gradient already there moves into the bucket.
        Tensor& g = p.mutable_grad();
        if (g.defined()) {
          b.views.back().copy_(g);
          g = b.views.back();
        }
      }
      buckets.push_back(std::move(b));
    }
  }

  // Waits for (orders after) every collective launched and not yet waited for.
  void synchronize_launched() {
    for (Bucket& b : buckets) {
      if (!b.launched) continue;
      b.launched = false;
      distributed::Work w = std::move(b.work);
      b.work = {};
      w.synchronize();
    }
  }

  void prepare_for_backward() {
    synchronize_launched();  // an iteration whose backward did not finish
    ready.assign(params.size(), 0);
    for (Bucket& b : buckets) b.pending = b.params.size();
    next_bucket = 0;
    finalize_queued = false;
    expect_hooks = !params.empty();
  }

  void launch_complete_buckets() {
    while (next_bucket < buckets.size() && buckets[next_bucket].pending == 0) {
      Bucket& b = buckets[next_bucket];
      mark("bucket[" + std::to_string(next_bucket) + "].launch");
      // Every bucket but the last runs while the backward still computes: on few thread blocks
      // (docs/design.md, "DistributedDataParallel").
      if (next_bucket + 1 < buckets.size())
        b.work = group->all_reduce_beside_compute(b.flat, distributed::ReduceOp::AVG);
      else
        b.work = group->all_reduce(b.flat, distributed::ReduceOp::AVG);
      b.launched = true;
      ++next_bucket;
    }
  }

  void set_ready(size_t i) {
    ready[i] = 1;
    Bucket& b = buckets[location[i].first];
    if (--b.pending == 0) launch_complete_buckets();
  }

  // The post-accumulate-grad hook of parameter i.
  void on_gradient(size_t i) {
    if (!expect_hooks || ready[i]) return;
    if (!finalize_queued) {
      finalize_queued = true;
      autograd::queue_callback([self = shared_from_this()] { self->finalize(); });
    }
    Tensor& g = grad_of(i);
    Tensor& view = view_of(i);
    if (!is_view_of(g, view)) {
      view.copy_(g);
      g = view;
    }
    set_ready(i);
  }

  void finalize() {
    expect_hooks = false;
    std::vector<size_t> unused;
    for (size_t i = 0; i < params.size(); ++i)
      if (!ready[i]) unused.push_back(i);
    if (!unused.empty() && !find_unused) {
      synchronize_launched();
      std::ostringstream os;
      for (size_t k = 0; k < unused.size(); ++k) os << (k ? ", " : "") << names[unused[k]];
      wick::detail::raise<ValueError>(
          kOp, "parameters that require grad got no gradient in this backward pass: ", os.str(),
          ". Every parameter of the module must take part in producing the loss; if some are unused on "
          "purpose, pass find_unused_parameters = true in DistributedDataParallelOptions (and make sure "
          "every "
          "output of forward takes part in the loss).");
    }
    if (find_unused) {
      NoGradGuard no_grad;
      // What a parameter without a gradient adds: its grad() as it was, else zeros. Its grad()
      // leaves the bucket, so that it stays untouched if no rank used the parameter.
      for (size_t i : unused) {
        Tensor& g = grad_of(i);
        Tensor& view = view_of(i);
        if (!g.defined()) view.zero_();
        else if (is_view_of(g, view)) g = view.clone();
        else view.copy_(g);
      }
      for (size_t i : unused) set_ready(i);
      // Which parameters some rank used: every rank issues this after all its buckets.
      std::vector<int32_t> local(params.size(), 1);
      for (size_t i : unused) local[i] = 0;
      Tensor used =
          from_blob(local.data(), {int64_t(local.size())}, TensorOptions().dtype(kInt32)).clone().to(device);
      group->all_reduce(used, distributed::ReduceOp::MAX).wait();
      const auto global = used.cpu().to_vector<int32_t>();
      synchronize_launched();
      for (size_t i : unused)
        if (global[i] != 0) grad_of(i) = view_of(i);
    } else {
      synchronize_launched();
    }
    mark("backward.end");
  }
};

// ---- the checks across ranks

namespace {
// FNV-1a over the parameters' count, dtypes and shapes.
uint64_t fingerprint(const std::vector<Tensor>& params) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](int64_t v) {
    for (int k = 0; k < 8; ++k) {
      h ^= uint64_t(v >> (8 * k)) & 0xff;
      h *= 1099511628211ull;
    }
  };
  mix(int64_t(params.size()));
  for (const Tensor& p : params) {
    mix(int64_t(p.dtype()));
    mix(p.dim());
    for (int64_t s : p.sizes()) mix(s);
  }
  return h;
}

// ValueError on every rank unless all ranks hold parameters of the same count, dtypes and
// shapes: one all_reduce (MAX) of [count, fingerprint, -count, -fingerprint] (as two 32-bit
// halves, so that no negation overflows), equal maxima and minima meaning all agree.
void check_same_parameters_everywhere(distributed::ProcessGroup& group, const std::vector<Tensor>& params,
                                      const std::vector<std::string>& names, const Device& device) {
  const uint64_t h = fingerprint(params);
  const int64_t n = int64_t(params.size()), hi = int64_t(h >> 32), lo = int64_t(h & 0xffffffffu);
  std::vector<int64_t> mine = {n, hi, lo, -n, -hi, -lo};
  Tensor t = from_blob(mine.data(), {6}, TensorOptions().dtype(kInt64)).clone().to(device);
  group.all_reduce(t, distributed::ReduceOp::MAX).wait();
  const auto all = t.cpu().to_vector<int64_t>();
  if (all[0] == -all[3] && all[1] == -all[4] && all[2] == -all[5]) return;
  std::ostringstream os;
  for (size_t i = 0; i < params.size() && i < 8; ++i) os << (i ? ", " : "") << names[i] << " " << params[i].sizes();
  if (params.size() > 8) os << ", ...";
  wick::detail::raise<ValueError>(kOp, "DDP expects the same model on every rank, but the ranks' parameters differ (",
                                  all[0] == -all[3] ? "in shape or dtype" : "in number: from " +
                                      std::to_string(-all[3]) + " to " + std::to_string(all[0]),
                                  "); rank ", group.rank(), " has ", n, " parameters that require grad: ", os.str());
}
}  // namespace

// ---- the module

DistributedDataParallelImpl::DistributedDataParallelImpl(std::shared_ptr<Module> module, Forward forward,
                                                         DistributedDataParallelOptions options)
    : module_(std::move(module)), forward_(std::move(forward)), options_(std::move(options)) {
  WICK_CHECK(module_ != nullptr, ValueError, kOp, "module is empty");
  WICK_CHECK(options_.bucket_cap_mb() > 0, ValueError, kOp, "bucket_cap_mb must be positive, got ",
             options_.bucket_cap_mb());
  auto group = options_.process_group() ? options_.process_group() : distributed::default_group();

  // One device for everything, the one the backend takes.
  const auto named_params = module_->named_parameters();
  const auto named_buffers = module_->named_buffers();
  std::optional<Device> device;
  std::string first_name;
  for (const auto* list : {&named_params, &named_buffers}) {
    for (const auto& [name, t] : *list) {
      if (!t.defined()) continue;
      if (!device) {
        device = t.device();
        first_name = name;
      }
      WICK_CHECK(t.device() == *device, ValueError, kOp,
                 "the module's parameters and buffers must all be on one device, but ", first_name, " is on ",
                 *device, " and ", name, " on ", t.device());
    }
  }
  const Device dev = device.value_or(Device(kCPU));
  const std::string backend = group->backend();
  WICK_CHECK(!((backend == "mpi" || backend == "gloo") && dev.is_cuda()), ValueError, kOp, "the module is on ",
             dev, " but the ", backend, " backend takes CPU tensors: keep the module on the CPU or use the nccl backend");
  WICK_CHECK(!(backend == "nccl" && !dev.is_cuda()), ValueError, kOp, "the module is on ", dev,
             " but the nccl backend takes CUDA tensors: move the module to this process's GPU first");
  if (!options_.device_ids().empty()) {
    WICK_CHECK(options_.device_ids().size() == 1, ValueError, kOp,
               "device_ids must name the one GPU of the module, got ", options_.device_ids().size(),
               " devices");
    WICK_CHECK(dev.is_cuda() && dev.index() == options_.device_ids()[0], ValueError, kOp,
               "device_ids names cuda:", options_.device_ids()[0], " but the module is on ", dev);
  }

  auto r = std::make_shared<Reducer>();
  r->group = group;
  r->find_unused = options_.find_unused_parameters();
  r->device = dev;
  for (const auto& [name, p] : named_params) {
    if (!p.defined() || !p.requires_grad()) continue;
    bool seen = false;
    for (const Tensor& q : r->params) seen = seen || q.is_same(p);
    if (seen) continue;
    r->params.push_back(p);
    r->names.push_back(name);
  }

  WICK_CHECK(!r->params.empty(), ValueError, kOp,
             "DistributedDataParallel is not needed when a module doesn't have any parameter that requires a "
             "gradient");
  // Every rank's module must be the same: a broadcast or a bucket of other sizes would read or
  // write past a tensor. Checked always (PyTorch's verify_params_across_processes), before the
  // first collective that depends on it.
  if (group->size() > 1) check_same_parameters_everywhere(*group, r->params, r->names, dev);

  // Rank 0's parameters and buffers everywhere.
  if (group->size() > 1) {
    std::vector<Tensor> states;
    for (const auto* list : {&named_params, &named_buffers})
      for (const auto& [name, t] : *list)
        if (t.defined()) states.push_back(t);
    broadcast_coalesced(*group, states);
  }

  r->build_buckets(int64_t(options_.bucket_cap_mb() * double(kMiB)));
  // The communicator of the buckets that overlap the backward, made now, while every rank is here.
  if (r->buckets.size() > 1 && group->size() > 1) group->prepare_beside_compute();
  Reducer* raw = r.get();
  for (size_t i = 0; i < r->params.size(); ++i)
    r->hooks.push_back(autograd::register_post_accumulate_grad_hook(
        r->params[i], [raw, i](const Tensor&) { raw->on_gradient(i); }));
  reducer_ = std::move(r);
  register_module("module", module_);
}

DistributedDataParallelImpl::~DistributedDataParallelImpl() {
  if (!reducer_) return;
  for (auto& h : reducer_->hooks) h.remove();
  for (const Tensor& p : reducer_->params) autograd::set_grad_destination(p, Tensor());
  // Collectives still writing into the buckets finish first.
  try {
    reducer_->synchronize_launched();
  } catch (const Error&) {}
}

Tensor DistributedDataParallelImpl::forward(const Tensor& input) {
  Reducer& r = *reducer_;
  // A parameter moved or cast since wrapping no longer fits its bucket.
  for (size_t i = 0; i < r.params.size(); ++i) {
    const Tensor& flat = r.buckets[r.location[i].first].flat;
    const Tensor& p = r.params[i];
    WICK_CHECK(p.dtype() == flat.dtype() && p.device() == flat.device(), ValueError, kOp,
               "the parameter ", r.names[i], " is now ", p.dtype(), " on ", p.device(), " but was ", flat.dtype(),
               " on ", flat.device(), " when DistributedDataParallel wrapped the module; move or cast the module "
               "before wrapping it");
  }
  if (r.timeline.enabled()) r.timeline.begin();
  r.mark("forward.begin");
  if (options_.broadcast_buffers() && r.group->size() > 1) {
    std::vector<Tensor> buffers;
    for (const Tensor& b : module_->buffers())
      if (b.defined()) buffers.push_back(b);
    if (!buffers.empty()) broadcast_coalesced(*r.group, buffers);
  }
  if (GradMode::is_enabled() && r.require_sync) r.prepare_for_backward();
  else r.expect_hooks = false;
  return forward_(*module_, input);
}

DistributedDataParallelImpl::NoSyncGuard::NoSyncGuard(DistributedDataParallelImpl& ddp)
    : ddp_(ddp), previous_(ddp.reducer_->require_sync) {
  ddp.reducer_->require_sync = false;
}

DistributedDataParallelImpl::NoSyncGuard::~NoSyncGuard() { ddp_.reducer_->require_sync = previous_; }

const std::shared_ptr<Module>& DistributedDataParallelImpl::module() const { return module_; }

const DistributedDataParallelOptions& DistributedDataParallelImpl::options() const { return options_; }

const std::shared_ptr<distributed::ProcessGroup>& DistributedDataParallelImpl::process_group() const {
  return reducer_->group;
}

std::vector<std::vector<std::string>> DistributedDataParallelImpl::bucket_parameter_names() const {
  std::vector<std::vector<std::string>> out;
  for (const auto& b : reducer_->buckets) {
    out.emplace_back();
    for (size_t i : b.params) out.back().push_back(reducer_->names[i]);
  }
  return out;
}

std::vector<DistributedDataParallelImpl::TimelineMark> DistributedDataParallelImpl::timeline() const {
  std::vector<TimelineMark> out;
  for (const auto& m : reducer_->timeline.marks()) out.push_back({m.phase, m.host_ms});
  return out;
}

}  // namespace wick::nn::parallel
