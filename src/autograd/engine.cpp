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
#include <functional>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "autograd/function.h"
#include "autograd/meta.h"
#include "core/autocast.h"
#include "wick/ops.h"

namespace wick::autograd {

namespace {

struct NodeTask {
  Node* node;
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

struct GraphTask {
  bool keep_graph = false;
  // autograd::grad: where each wanted gradient is captured; AccumulateGrad nodes do not run.
  std::unordered_map<Node*, std::vector<std::pair<uint32_t, Tensor*>>> captures;
  bool capturing = false;
  // queue_callback's callbacks, run once every node has run.
  std::vector<std::function<void()>> final_callbacks;
};

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
  NoGradGuard no_grad;  // formulas run without recording (no double backward)
  // Formulas run in the types their forward ops ran in, whatever autocast region backward()
  // is called from.
  wick::detail::autocast::Exclude no_autocast;
  CurrentTaskGuard current(task);

  // 1. Dependencies of every node reachable from the roots.
  std::unordered_map<Node*, int> deps;
  std::unordered_set<Node*> seen;
  std::vector<Node*> stack;
  for (const Edge& e : roots) {
    if (e.function && seen.insert(e.function.get()).second) stack.push_back(e.function.get());
  }
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next_edges()) {
      if (!e.function) continue;
      ++deps[e.function.get()];
      if (seen.insert(e.function.get()).second) stack.push_back(e.function.get());
    }
  }

  // 2. The roots' gradients, from the caller's streams.
  std::unordered_map<Node*, variable_list> buffers;
  auto buffer_of = [&](Node* n) -> variable_list& {
    auto& b = buffers[n];
    if (b.empty()) b.resize(n->num_outputs());
    return b;
  };
  std::unordered_map<Node*, std::vector<Pending>> pending;
  std::priority_queue<NodeTask> ready;
  std::unordered_set<Node*> queued;
  std::unordered_set<const void*> used_streams;
  std::vector<cuda::Stream> streams;
  for (size_t i = 0; i < roots.size(); ++i) {
    Node* n = roots[i].function.get();
    if (!n) continue;
    order_streams(current_stream_of(root_grads[i].device()), n->stream_);
    accumulate(buffer_of(n)[roots[i].input_nr], root_grads[i]);
  }
  for (const Edge& e : roots) {
    Node* n = e.function.get();
    if (n && deps[n] == 0 && queued.insert(n).second) ready.push({n});
  }

  // 3. Run nodes as they become ready.
  while (!ready.empty()) {
    Node* node = ready.top().node;
    ready.pop();
    if (auto it = pending.find(node); it != pending.end()) {
      // the node's stream waits for each producer, then the gradients are summed there
      cuda::StreamGuard guard(*node->stream_);
      variable_list& slots = buffer_of(node);
      if (node->wants_input_events_) {
        node->input_ready_.clear();
        node->input_ready_.resize(node->num_outputs());
      }
      for (Pending& p : it->second) {
        p.ready.wait(*node->stream_);
        accumulate(slots[p.input_nr], std::move(p.grad));
        if (node->wants_input_events_) node->input_ready_[p.input_nr].push_back(std::move(p.ready));
      }
      pending.erase(it);
    }
    variable_list grads = std::move(buffer_of(node));
    buffers.erase(node);

    if (task.capturing) {
      if (auto it = task.captures.find(node); it != task.captures.end())
        for (auto& [nr, out] : it->second) accumulate(*out, grads[nr]);
    } else {
      for (auto& [nr, slot] : node->retained_) {
        if (!grads[nr].defined()) continue;
        if (slot->defined()) *slot = *slot + grads[nr];
        else *slot = grads[nr].clone();
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
      if (node->stream_ && used_streams.insert(node->stream_->native()).second)
        streams.push_back(*node->stream_);
    }
    if (!task.keep_graph) node->release_variables();

    for (size_t i = 0; i < node->num_inputs(); ++i) {
      const Edge& e = node->next_edge(i);
      if (!e.function) continue;
      Node* next = e.function.get();
      if (i < outs.size() && outs[i].defined()) {
        Tensor g = validate(std::move(outs[i]), node->input_metadata_[i], *node, i);
        if (crosses_streams(node->stream_, next->stream_)) {
          Pending p{e.input_nr, std::move(g), cuda::Event()};
          p.ready.record(*node->stream_);
          pending[next].push_back(std::move(p));
        } else {
          accumulate(buffer_of(next)[e.input_nr], std::move(g));
        }
      }
      if (--deps[next] == 0 && queued.insert(next).second) ready.push({next});
    }
  }

  // 4. The caller's streams wait for the backward's, so grad() is ready to use on them.
  for (const auto& s : streams) order_streams(s, cuda::current_stream(s.device_index()));

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

Tensor root_grad(const Tensor& t, const variable_list& grads, size_t i, const char* op) {
  if (i < grads.size() && grads[i].defined()) {
    const Tensor& g = grads[i];
    WICK_CHECK(g.sizes().equals(t.sizes()), ValueError, op, "Mismatch in shape: grad_output[", i,
               "] has a shape of ", g.sizes(), " and output[", i, "] has a shape of ", t.sizes(), ".");
    WICK_CHECK(g.device() == t.device(), DeviceError, op, "grad_output[", i, "] is on ", g.device(),
               " but output[", i, "] is on ", t.device());
    return g.dtype() == t.dtype() ? g.detach() : g.detach().to(t.dtype());
  }
  WICK_CHECK(t.numel() == 1, ValueError, op, "grad can be implicitly created only for scalar outputs");
  return ones_like(t);
}

}  // namespace

void queue_callback(std::function<void()> callback) {
  WICK_CHECK(current_task != nullptr, ValueError, "queue_callback",
             "Final callbacks can only be installed during backward pass.");
  WICK_CHECK(callback != nullptr, ValueError, "queue_callback", "the callback is empty");
  current_task->final_callbacks.push_back(std::move(callback));
}

void backward(const variable_list& tensors, const variable_list& grad_tensors,
              std::optional<bool> retain_graph) {
  WICK_CHECK(grad_tensors.empty() || grad_tensors.size() == tensors.size(), ValueError, "backward", "got ",
             tensors.size(), " tensors and ", grad_tensors.size(), " gradients");
  std::vector<Edge> roots;
  variable_list grads;
  for (size_t i = 0; i < tensors.size(); ++i) {
    roots.push_back(root_edge(tensors[i], i, "backward"));
    grads.push_back(root_grad(tensors[i], grad_tensors, i, "backward"));
  }
  GraphTask task;
  task.keep_graph = retain_graph.value_or(false);
  execute(roots, grads, task);
}

variable_list grad(const variable_list& outputs, const variable_list& inputs,
                   const variable_list& grad_outputs, std::optional<bool> retain_graph, bool allow_unused) {
  WICK_CHECK(grad_outputs.empty() || grad_outputs.size() == outputs.size(), ValueError, "grad", "got ",
             outputs.size(), " tensors and ", grad_outputs.size(), " gradients");
  WICK_CHECK(!inputs.empty(), ValueError, "grad", "grad requires non-empty inputs.");
  std::vector<Edge> roots;
  variable_list grads;
  for (size_t i = 0; i < outputs.size(); ++i) {
    roots.push_back(root_edge(outputs[i], i, "grad"));
    grads.push_back(root_grad(outputs[i], grad_outputs, i, "grad"));
  }
  GraphTask task;
  task.keep_graph = retain_graph.value_or(false);
  task.capturing = true;
  variable_list result(inputs.size());
  std::vector<Edge> input_edges;  // keeps accumulators made here alive while they are keys
  for (size_t i = 0; i < inputs.size(); ++i) {
    WICK_CHECK(inputs[i].defined() && inputs[i].requires_grad(), ValueError, "grad",
               "One of the differentiated Tensors does not require grad");
    input_edges.push_back(gradient_edge(inputs[i]));
    task.captures[input_edges.back().function.get()].emplace_back(input_edges.back().input_nr, &result[i]);
  }
  try {
    execute(roots, grads, task);
  } catch (const ValueError& e) {
    // The graph's own errors (freed saved tensors, a saved tensor modified in place) name the
    // op called: grad here.
    const std::string m = e.what();
    if (m.rfind("[backward] ", 0) == 0) throw ValueError("[grad] " + m.substr(11));
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
