// The backward pass. From the roots' nodes it counts, for every reachable node, how many edges
// lead into it; a node runs once all of them have delivered (their gradients summed in its
// input buffer), later-created nodes first among those ready. Each node runs on the device
// and CUDA stream of its forward; a stream consuming a gradient waits for the stream that
// made it, at the point the producer had reached, just before the consumer runs. A node
// marked eager_ runs as soon as it is ready, ahead of the others. Once every node has run,
// the callbacks queued during the pass (queue_callback) run, in order.
//
// One thread runs the whole graph. PyTorch runs one worker thread per device so that CPU and
// GPU parts overlap; with kernels queued asynchronously on CUDA streams the host loop rarely
// waits, and a single thread keeps ordering and errors simple.
#include <algorithm>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "autograd/function.h"
#include "autograd/meta.h"
#include "core/as_op.h"
#include "core/autocast.h"
#include "core/tensor_ops.h"
#include "wick/ops.h"

namespace wick::autograd {

namespace {

struct NodeTask {
  Node* node;
  uint32_t state;  // its number in the task's Scratch
  // The top of the queue: eager nodes first, then the latest created.
  bool operator<(const NodeTask& o) const {
    if (node->eager_ != o.node->eager_) return o.node->eager_;
    return node->sequence_nr() < o.node->sequence_nr();
  }
};

// A gradient made on one stream and used on another: the consumer waits for the producer.
bool crosses_streams(const std::optional<cuda::Stream>& producer,
                     const std::optional<cuda::Stream>& consumer) {
  return producer && consumer && *producer != *consumer;
}

void order_streams(const std::optional<cuda::Stream>& producer, const std::optional<cuda::Stream>& consumer) {
  if (producer && consumer && *producer != *consumer) consumer->wait_stream(*producer);
}

std::optional<cuda::Stream> current_stream_of(Device d) {
  if (!d.is_cuda()) return std::nullopt;
  return cuda::current_stream(d.index());
}

// Gives grad the shape, dtype and device the input had (broadcast dims summed away).
Tensor validate(Tensor grad, const InputMetadata& meta, const Node& node, size_t i) {
  if (!grad.sizes().equals(meta.sizes)) {
    bool expandable = grad.dim() >= int64_t(meta.sizes.size());
    for (size_t k = 0; expandable && k < meta.sizes.size(); ++k) {
      int64_t have = meta.sizes[k], got = grad.size(grad.dim() - int64_t(meta.sizes.size()) + int64_t(k));
      expandable = have == got || have == 1;
    }
    WICK_CHECK(expandable, ValueError, "backward", "Function ", node.name(),
               " returned an invalid gradient at index ", i, " - got ", grad.sizes(),
               " but expected shape compatible with ", IntArrayRef(meta.sizes));
    grad = sum_to(grad, meta.sizes);
  }
  WICK_CHECK(grad.device() == meta.device, DeviceError, "backward", "Function ", node.name(),
             " returned an invalid gradient at index ", i, " - expected device ", meta.device, " but got ",
             grad.device());
  if (grad.dtype() != meta.dtype) grad = grad.to(meta.dtype);
  return grad;
}

void accumulate(Tensor& slot, Tensor g) {
  if (!g.defined()) return;
  slot = slot.defined() ? slot + g : std::move(g);
}

// Tensor::register_hook's hooks of node's outputs, in registration order on each summed
// gradient (on the node's stream): a hook's defined result replaces the gradient.
void run_tensor_hooks(const Node& node, variable_list& grads) {
  std::optional<cuda::StreamGuard> guard;
  if (node.stream_) guard.emplace(*node.stream_);
  for (const auto& [nr, hooks] : node.tensor_pre_hooks_) {
    if (nr >= grads.size()) continue;
    for (size_t i = 0; i < hooks->hooks.size(); ++i) {  // a hook may register another
      const auto hook = hooks->hooks[i];
      if (!hook || !grads[nr].defined()) continue;
      Tensor r = hook(grads[nr]);
      if (!r.defined()) continue;
      WICK_CHECK(r.sizes() == grads[nr].sizes(), ValueError, "register_hook", "hook ", i,
                 " returned a gradient of shape ", r.sizes(), " for a gradient of shape ", grads[nr].sizes());
      grads[nr] = std::move(r);
    }
  }
}

// A gradient delivered from another stream: the point its producer had reached, waited for
// on the consumer's stream only when the consumer runs. Waiting at delivery would put the wait
// into the consumer's stream at the engine's host order, which can be far ahead of where the
// consumer's device is: with replicas on two GPUs, the gradient reduced from one replica would
// hold up the other replica's whole remaining backward on its own device.
struct Pending {
  uint32_t input_nr;
  Tensor grad;
  cuda::Event ready;
};

// autograd::grad: a wanted gradient, that of input input_nr of node, summed into *out.
struct Capture {
  Node* node;
  uint32_t input_nr;
  Tensor* out;
};

struct GraphTask {
  bool keep_graph = false;
  // The formulas run with grad mode on, so that the gradients record (double backward).
  bool create_graph = false;
  // autograd::grad: where each wanted gradient is captured; AccumulateGrad nodes do not run.
  std::vector<Capture> captures;
  bool capturing = false;
  // queue_callback's callbacks, run once every node has run.
  std::vector<std::function<void()>> final_callbacks;
  // hand_over_grad_views's flat gradients: each storage (kept until the pass ends, so that its
  // address is never another storage's), how many views of it the formula returned, how many
  // reached AccumulateGrad and how many of those it took.
  struct HandedOver {
    wick::detail::Storage storage;
    size_t views = 0, arrived = 0, taken = 0;
  };
  std::vector<HandedOver> handed_over;
};

// What a graph task knows of one reachable node while it runs.
struct NodeState {
  Node* node = nullptr;
  uint32_t slot = 0;  // where Scratch::index_ refers to it
  int deps = 0;       // edges into it that have yet to deliver
  bool queued = false;
  // autograd::grad: its captures, GraphTask::captures[captures_begin, captures_end)
  uint32_t captures_begin = 0, captures_end = 0;
  variable_list buffer;          // the gradients of its outputs, summed (empty until one comes)
  std::vector<Pending> pending;  // gradients delivered from other streams (rare)
};

// The working state of one graph task: a flat table of the reachable nodes' states, found by
// node through an open-addressing index, the ready queue and the streams the nodes ran on.
// A thread keeps the ones its finished tasks used (see ScratchLease), so that a backward pass
// over a graph no larger than an earlier one allocates nothing here. Nothing in it is shared
// between threads, and a task that nests in another (a node, hook or callback running a
// backward pass of its own) takes one of its own: nodes themselves are never written.
class Scratch {
 public:
  std::vector<NodeState> states;
  std::vector<Node*> stack;           // discovery's work list
  std::vector<NodeTask> ready;        // a max-heap (std::push_heap) of NodeTask
  std::vector<cuda::Stream> streams;  // the CUDA streams nodes ran on, each once

  // n's state number, and whether it was added just now.
  std::pair<uint32_t, bool> add(Node* n) {
    if ((states.size() + 1) * 2 > index_.size()) rehash(std::max<size_t>(64, index_.size() * 2));
    const size_t mask = index_.size() - 1;
    for (size_t slot = hash(n) & mask;; slot = (slot + 1) & mask) {
      uint32_t k = index_[slot];
      if (k == kEmpty) {
        k = uint32_t(states.size());
        states.emplace_back().node = n;
        states.back().slot = uint32_t(slot);
        index_[slot] = k;
        return {k, true};
      }
      if (states[k].node == n) return {k, false};
    }
  }

  // n's state number, or kEmpty if n is not reachable.
  uint32_t find(Node* n) const {
    if (index_.empty()) return kEmpty;
    const size_t mask = index_.size() - 1;
    for (size_t slot = hash(n) & mask;; slot = (slot + 1) & mask) {
      uint32_t k = index_[slot];
      if (k == kEmpty || states[k].node == n) return k;
    }
  }

  // State i's input buffer, one slot per output of its node.
  variable_list& buffer_of(uint32_t i) {
    variable_list& b = states[i].buffer;
    if (b.empty()) {
      if (!spare_buffers_.empty()) {
        b = std::move(spare_buffers_.back());
        spare_buffers_.pop_back();
      }
      b.resize(states[i].node->num_outputs());
    }
    return b;
  }

  // A buffer done with: its gradients dropped, its memory kept for another node.
  void recycle(variable_list&& b) {
    b.clear();
    if (b.capacity() > 0 && spare_buffers_.size() < kMaxSpareBuffers) spare_buffers_.push_back(std::move(b));
  }

  // Empties it for the next task, dropping every tensor it holds; memory a very large graph
  // needed is given back.
  void clear() noexcept {
    if (index_.size() > kMaxKeptIndex) {
      *this = Scratch();
      return;
    }
    for (const NodeState& st : states) index_[st.slot] = kEmpty;
    states.clear();
    stack.clear();
    ready.clear();
    streams.clear();
  }

  static constexpr uint32_t kEmpty = ~uint32_t(0);

 private:
  static constexpr size_t kMaxSpareBuffers = 64;
  static constexpr size_t kMaxKeptIndex = size_t(1) << 14;

  static size_t hash(const Node* n) {
    uint64_t x = uint64_t(reinterpret_cast<uintptr_t>(n));
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return size_t(x);
  }

  void rehash(size_t size) {
    index_.assign(size, kEmpty);
    const size_t mask = size - 1;
    for (uint32_t k = 0; k < states.size(); ++k) {
      size_t slot = hash(states[k].node) & mask;
      while (index_[slot] != kEmpty) slot = (slot + 1) & mask;
      index_[slot] = k;
      states[k].slot = uint32_t(slot);
    }
  }

  std::vector<uint32_t> index_;  // a power of two of slots, at most half full: kEmpty or a state
  std::vector<variable_list> spare_buffers_;
};

// A Scratch for one graph task, taken from those this thread keeps and given back cleared.
class ScratchLease {
 public:
  ScratchLease() {
    if (spare_.empty()) {
      scratch_ = std::make_unique<Scratch>();
    } else {
      scratch_ = std::move(spare_.back());
      spare_.pop_back();
    }
  }
  ~ScratchLease() {
    scratch_->clear();
    try {
      spare_.push_back(std::move(scratch_));
    } catch (...) {  // out of memory: dropped instead of kept
    }
  }
  ScratchLease(const ScratchLease&) = delete;
  ScratchLease& operator=(const ScratchLease&) = delete;
  Scratch& operator*() const { return *scratch_; }

 private:
  std::unique_ptr<Scratch> scratch_;
  static thread_local std::vector<std::unique_ptr<Scratch>> spare_;
};

thread_local std::vector<std::unique_ptr<Scratch>> ScratchLease::spare_;

// The graph task this thread is running (what queue_callback adds to); tasks nest when a node,
// hook or callback runs a backward pass of its own.
thread_local GraphTask* current_task = nullptr;

class CurrentTaskGuard {
 public:
  explicit CurrentTaskGuard(GraphTask& task) : prev_(current_task) { current_task = &task; }
  ~CurrentTaskGuard() { current_task = prev_; }
  CurrentTaskGuard(const CurrentTaskGuard&) = delete;
  CurrentTaskGuard& operator=(const CurrentTaskGuard&) = delete;

 private:
  GraphTask* prev_;
};

void execute(const std::vector<Edge>& roots, const variable_list& root_grads, GraphTask& task) {
  // Formulas record only under create_graph (their results then have a graph of their own).
  AutoGradMode grad_mode(task.create_graph);
  // Formulas run in the types their forward ops ran in, whatever autocast region backward()
  // is called from.
  wick::detail::autocast::Exclude no_autocast;
  CurrentTaskGuard current(task);
  ScratchLease lease;
  Scratch& sc = *lease;

  // 1. Dependencies of every node reachable from the roots.
  for (const Edge& e : roots) {
    if (e.function && sc.add(e.function.get()).second) sc.stack.push_back(e.function.get());
  }
  while (!sc.stack.empty()) {
    Node* n = sc.stack.back();
    sc.stack.pop_back();
    for (const Edge& e : n->next_edges()) {
      if (!e.function) continue;
      auto [k, added] = sc.add(e.function.get());
      ++sc.states[k].deps;
      if (added) sc.stack.push_back(e.function.get());
    }
  }
  if (task.capturing) {
    // each reachable node's captures, a range of them sorted by node
    auto& caps = task.captures;
    std::sort(caps.begin(), caps.end(),
              [](const Capture& a, const Capture& b) { return std::less<Node*>()(a.node, b.node); });
    for (size_t b = 0, e = 0; b < caps.size(); b = e) {
      for (e = b + 1; e < caps.size() && caps[e].node == caps[b].node;) ++e;
      if (uint32_t k = sc.find(caps[b].node); k != Scratch::kEmpty) {
        sc.states[k].captures_begin = uint32_t(b);
        sc.states[k].captures_end = uint32_t(e);
      }
    }
  }
  auto make_ready = [&sc](uint32_t k) {
    NodeState& st = sc.states[k];
    if (st.deps != 0 || st.queued) return;
    st.queued = true;
    sc.ready.push_back({st.node, k});
    std::push_heap(sc.ready.begin(), sc.ready.end());
  };

  // 2. The roots' gradients, from the caller's streams.
  for (size_t i = 0; i < roots.size(); ++i) {
    Node* n = roots[i].function.get();
    if (!n) continue;
    order_streams(current_stream_of(root_grads[i].device()), n->stream_);
    accumulate(sc.buffer_of(sc.find(n))[roots[i].input_nr], root_grads[i]);
  }
  for (const Edge& e : roots) {
    if (e.function) make_ready(sc.find(e.function.get()));
  }

  // 3. Run nodes as they become ready.
  while (!sc.ready.empty()) {
    std::pop_heap(sc.ready.begin(), sc.ready.end());
    const auto [node, k] = sc.ready.back();
    sc.ready.pop_back();
    if (!sc.states[k].pending.empty()) {
      // the node's stream waits for each producer, then the gradients are summed there
      cuda::StreamGuard guard(*node->stream_);
      variable_list& slots = sc.buffer_of(k);
      if (node->wants_input_events_) {
        node->input_ready_.clear();
        node->input_ready_.resize(node->num_outputs());
      }
      std::vector<Pending>& pending = sc.states[k].pending;
      for (Pending& p : pending) {
        p.ready.wait(*node->stream_);
        accumulate(slots[p.input_nr], std::move(p.grad));
        if (node->wants_input_events_) node->input_ready_[p.input_nr].push_back(std::move(p.ready));
      }
      pending.clear();
    }
    variable_list grads = std::move(sc.buffer_of(k));
    if (!node->tensor_pre_hooks_.empty()) run_tensor_hooks(*node, grads);

    if (task.capturing) {
      for (uint32_t c = sc.states[k].captures_begin; c < sc.states[k].captures_end; ++c)
        accumulate(*task.captures[c].out, grads[task.captures[c].input_nr]);
    } else {
      for (auto& [nr, slot] : node->retained_) {
        if (!grads[nr].defined()) continue;
        if (slot->defined()) *slot = *slot + grads[nr];
        else *slot = grads[nr].clone(MemoryFormat::Contiguous);  // as PyTorch's retain_grad
      }
    }

    // Every recorded node has one output, so a node either has its gradient or has nothing
    // to do (all paths into it carried none).
    bool any = false;
    for (auto& g : grads) any = any || g.defined();
    variable_list outs;
    if (any && !(task.capturing && node->name() == "AccumulateGrad")) {
      if (node->stream_) {
        cuda::StreamGuard guard(*node->stream_);
        outs = node->apply(std::move(grads));
      } else {
        outs = node->apply(std::move(grads));
      }
      const auto native = node->stream_ ? node->stream_->native() : nullptr;
      if (node->stream_ && std::none_of(sc.streams.begin(), sc.streams.end(),
                                        [native](const cuda::Stream& s) { return s.native() == native; }))
        sc.streams.push_back(*node->stream_);
    }
    if (!task.keep_graph) node->release_variables();

    for (size_t i = 0; i < node->num_inputs(); ++i) {
      const Edge& e = node->next_edge(i);
      if (!e.function) continue;
      Node* next = e.function.get();
      const uint32_t nk = sc.add(next).first;  // found: every reachable node has a state
      if (i < outs.size() && outs[i].defined()) {
        Tensor g = validate(std::move(outs[i]), node->input_metadata_[i], *node, i);
        if (crosses_streams(node->stream_, next->stream_)) {
          Pending p{e.input_nr, std::move(g), cuda::Event()};
          p.ready.record(*node->stream_);
          sc.states[nk].pending.push_back(std::move(p));
        } else {
          accumulate(sc.buffer_of(nk)[e.input_nr], std::move(g));
        }
      }
      --sc.states[nk].deps;
      make_ready(nk);
    }
    sc.recycle(std::move(grads));
  }

  // 4. The caller's streams wait for the backward's, so grad() is ready to use on them.
  for (const auto& s : sc.streams) order_streams(s, cuda::current_stream(s.device_index()));

  // 5. The callbacks queued while it ran (and those they queue).
  for (size_t i = 0; i < task.final_callbacks.size(); ++i) {
    auto callback = std::move(task.final_callbacks[i]);
    callback();
  }
}

// The edge a gradient for t enters the graph by, or an error naming what is wrong.
Edge root_edge(const Tensor& t, size_t i, const char* op) {
  WICK_CHECK(t.defined(), ValueError, op, "tensor ", i, " is undefined");
  Edge e = gradient_edge(t);
  WICK_CHECK(e.is_valid(), ValueError, op, "element ", i,
             " of tensors does not require grad and does not have a grad_fn");
  return e;
}

Tensor root_grad(const Tensor& t, const variable_list& grads, size_t i, const char* op, bool create_graph) {
  if (i < grads.size() && grads[i].defined()) {
    const Tensor& g = grads[i];
    WICK_CHECK(g.sizes().equals(t.sizes()), ValueError, op, "Mismatch in shape: grad_output[", i,
               "] has a shape of ", g.sizes(), " and output[", i, "] has a shape of ", t.sizes(), ".");
    WICK_CHECK(g.device() == t.device(), DeviceError, op, "grad_output[", i, "] is on ", g.device(),
               " but output[", i, "] is on ", t.device());
    if (create_graph) return g.dtype() == t.dtype() ? g : g.to(t.dtype());  // its graph kept
    return g.dtype() == t.dtype() ? g.detach() : g.detach().to(t.dtype());
  }
  WICK_CHECK(t.numel() == 1, ValueError, op, "grad can be implicitly created only for scalar outputs");
  // As PyTorch's C++ backward: the implicit gradient is row-major (one element: any layout).
  return ones_like(t, {}, MemoryFormat::Contiguous);
}

}  // namespace

bool running_backward_into_leaves() { return current_task != nullptr && !current_task->capturing; }

bool running_backward_pass() { return current_task != nullptr; }

bool freeing_graph() { return current_task != nullptr && !current_task->keep_graph; }

void hand_over_grad_views(const Tensor& flat, size_t views) {
  if (!running_backward_into_leaves() || !flat.defined() || views == 0) return;
  current_task->handed_over.push_back({flat.impl()->storage(), views, 0, 0});
}

namespace {
GraphTask::HandedOver* handed_over_of(const Tensor& g) {
  if (current_task == nullptr || current_task->handed_over.empty() || !g.defined()) return nullptr;
  const auto* s = g.impl()->storage().get();
  for (auto& h : current_task->handed_over)
    if (h.storage.get() == s) return &h;
  return nullptr;
}
}  // namespace

bool grad_view_handed_over(const Tensor& g) {
  GraphTask::HandedOver* h = handed_over_of(g);
  if (h == nullptr) return false;
  // What may refer to the storage: the pass, the views taken (now grad()s), and the views yet to
  // arrive, g among them. One more is something else's, which a taken view would alias.
  const size_t allowed = 1 + h->taken + (h->views > h->arrived ? h->views - h->arrived : 0);
  ++h->arrived;
  return size_t(h->storage.use_count()) <= allowed;
}

void grad_view_taken(const Tensor& g) {
  if (GraphTask::HandedOver* h = handed_over_of(g)) ++h->taken;
}

void queue_callback(std::function<void()> callback) {
  WICK_CHECK(current_task != nullptr, ValueError, "queue_callback",
             "Final callbacks can only be installed during backward pass.");
  WICK_CHECK(callback != nullptr, ValueError, "queue_callback", "the callback is empty");
  current_task->final_callbacks.push_back(std::move(callback));
}

void backward(const variable_list& tensors, const variable_list& grad_tensors,
              std::optional<bool> retain_graph, bool create_graph) {
  WICK_CHECK(grad_tensors.empty() || grad_tensors.size() == tensors.size(), ValueError, "backward", "got ",
             tensors.size(), " tensors and ", grad_tensors.size(), " gradients");
  std::vector<Edge> roots;
  variable_list grads;
  for (size_t i = 0; i < tensors.size(); ++i) {
    roots.push_back(root_edge(tensors[i], i, "backward"));
    grads.push_back(root_grad(tensors[i], grad_tensors, i, "backward", create_graph));
  }
  GraphTask task;
  task.keep_graph = retain_graph.value_or(create_graph);
  task.create_graph = create_graph;
  execute(roots, grads, task);
}

variable_list grad(const variable_list& outputs, const variable_list& inputs,
                   const variable_list& grad_outputs, std::optional<bool> retain_graph, bool create_graph,
                   bool allow_unused) {
  WICK_CHECK(grad_outputs.empty() || grad_outputs.size() == outputs.size(), ValueError, "grad", "got ",
             outputs.size(), " tensors and ", grad_outputs.size(), " gradients");
  WICK_CHECK(!inputs.empty(), ValueError, "grad", "grad requires non-empty inputs.");
  std::vector<Edge> roots;
  variable_list grads;
  for (size_t i = 0; i < outputs.size(); ++i) {
    roots.push_back(root_edge(outputs[i], i, "grad"));
    grads.push_back(root_grad(outputs[i], grad_outputs, i, "grad", create_graph));
  }
  GraphTask task;
  task.keep_graph = retain_graph.value_or(create_graph);
  task.create_graph = create_graph;
  task.capturing = true;
  variable_list result(inputs.size());
  std::vector<Edge> input_edges;  // keeps accumulators made here alive while they are keys
  for (size_t i = 0; i < inputs.size(); ++i) {
    WICK_CHECK(inputs[i].defined() && inputs[i].requires_grad(), ValueError, "grad",
               "One of the differentiated Tensors does not require grad");
    input_edges.push_back(gradient_edge(inputs[i]));
    task.captures.push_back({input_edges.back().function.get(), input_edges.back().input_nr, &result[i]});
  }
  try {
    execute(roots, grads, task);
  } catch (const ValueError& e) {
    // The graph's own errors (freed saved tensors, a saved tensor modified in place) name the
    // op called: grad here.
    if (std::string_view(e.what()).starts_with("[backward] "))
      throw ValueError(wick::detail::renamed_message(e, "grad"));
    throw;
  } catch (const NotImplementedError& e) {  // a formula without double backward
    if (std::string_view(e.what()).starts_with("[backward] "))
      throw NotImplementedError(wick::detail::renamed_message(e, "grad"));
    throw;
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    WICK_CHECK(result[i].defined() || allow_unused, ValueError, "grad",
               "One of the differentiated Tensors appears to not have been used in the graph. Set "
               "allow_unused=true if this is the desired behavior.");
  }
  return result;
}

}  // namespace wick::autograd
