// Reverse-mode automatic differentiation, PyTorch's model: each result of a differentiable op
// records a Node (named as PyTorch names it) with edges to its inputs' nodes; backward() runs
// the graph in reverse topological order and accumulates into the leaves' grad().
//
//   auto w = wick::randn({3, 2}).requires_grad_();
//   auto loss = wick::matmul(x, w).sum();
//   std::cout << loss.grad_fn()->name();     // SumBackward0
//   loss.backward();                         // w.grad() now holds d loss / d w
//   { wick::NoGradGuard g; w.sub_(w.grad() * 0.1); }
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "wick/cuda.h"
#include "wick/tensor.h"

namespace wick {

// Whether ops record the graph on this thread (on by default).
class GradMode {
 public:
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

// Turns recording off for a scope (`with torch.no_grad():`).
class NoGradGuard {
 public:
  NoGradGuard() : previous_(GradMode::is_enabled()) { GradMode::set_enabled(false); }
  ~NoGradGuard() { GradMode::set_enabled(previous_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// Sets recording on or off for a scope (`with torch.set_grad_enabled(b):`).
class AutoGradMode {
 public:
  explicit AutoGradMode(bool enabled) : previous_(GradMode::is_enabled()) { GradMode::set_enabled(enabled); }
  ~AutoGradMode() { GradMode::set_enabled(previous_); }
  AutoGradMode(const AutoGradMode&) = delete;
  AutoGradMode& operator=(const AutoGradMode&) = delete;

 private:
  bool previous_;
};

// Inference mode for a scope (`with torch.inference_mode(mode):`, LibTorch's c10::InferenceMode):
// mode true turns recording off, as NoGradGuard, and sets is_inference_mode_enabled(); mode false
// turns recording on. Tensors made inside are ordinary tensors (wick has no inference tensors).
class InferenceMode {
 public:
  explicit InferenceMode(bool enabled = true);
  ~InferenceMode();
  InferenceMode(const InferenceMode&) = delete;
  InferenceMode& operator=(const InferenceMode&) = delete;
  // Whether an InferenceMode(true) scope is open on this thread.
  static bool is_enabled();

 private:
  bool previous_grad_;
  bool previous_inference_;
};
// torch.is_inference_mode_enabled(): InferenceMode::is_enabled().
bool is_inference_mode_enabled();

namespace autograd {
// LibTorch's torch::autograd::GradMode: the same class.
using GradMode = wick::GradMode;

using variable_list = std::vector<Tensor>;
using tensor_list = variable_list;  // LibTorch's other name of it
class Node;
struct TensorGradHooks;

// Where a gradient goes: input input_nr of function (none when the input needs no grad).
struct Edge {
  std::shared_ptr<Node> function;
  uint32_t input_nr = 0;
  bool is_valid() const { return function != nullptr; }
};

// What a gradient flowing into an input must look like; the engine sums broadcast dims
// away and casts to the dtype before handing it on.
struct InputMetadata {
  DimVector sizes;
  Dtype dtype = kFloat32;
  Device device;
};

// A function of the backward graph. Subclasses implement apply: the gradients of the
// forward's outputs in, the gradients of its inputs (one per next edge) out.
class Node : public std::enable_shared_from_this<Node> {
 public:
  Node();
  // Releases the nodes this one leads to without recursing into them: a chain of a million
  // recorded ops is freed in a loop, not a million nested destructors.
  virtual ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // PyTorch's name, such as "AddmmBackward0".
  virtual std::string name() const = 0;
  // Gradients of the inputs from those of the outputs; undefined where not needed.
  virtual variable_list apply(variable_list&& grads) = 0;
  // Frees saved tensors once a backward pass without retain_graph has used them.
  virtual void release_variables() {}

  const std::vector<Edge>& next_edges() const { return next_edges_; }
  const Edge& next_edge(size_t i) const { return next_edges_[i]; }
  size_t num_inputs() const { return next_edges_.size(); }
  uint32_t num_outputs() const { return num_outputs_; }
  // Creation order: later nodes run first when both are ready.
  uint64_t sequence_nr() const { return sequence_nr_; }
  // Whether input i's gradient is wanted (its edge leads somewhere).
  bool needs_input_grad(size_t i) const { return i < next_edges_.size() && next_edges_[i].is_valid(); }

  // ---- set up by the recording helpers and read by the engine
  std::vector<Edge> next_edges_;
  std::vector<InputMetadata> input_metadata_;
  uint32_t num_outputs_ = 1;
  Device device_;                       // where the forward ran; backward runs there
  std::optional<cuda::Stream> stream_;  // the forward's CUDA stream (none on the CPU)
  // Runs before every other ready node as soon as it is ready, instead of in creation order
  // (DataParallel's gradient reductions, so that they overlap the rest of the backward).
  bool eager_ = false;
  // Set by nodes that order their own work after each input's producer (DataParallel's
  // reductions, docs/design.md section 11): for every gradient delivered from another stream,
  // the engine hands the event recorded on the producer's stream as it made it, in
  // input_ready_[output_nr], before apply. The stream's tail at apply time can be far later.
  bool wants_input_events_ = false;
  std::vector<std::vector<cuda::Event>> input_ready_;
  // Tensor::register_hook's hooks on the gradients of outputs (a leaf's on its AccumulateGrad):
  // (output_nr, that tensor's hooks), run by the engine on the summed gradient before apply.
  std::vector<std::pair<uint32_t, std::shared_ptr<TensorGradHooks>>> tensor_pre_hooks_;
  // Gradients of outputs captured for retain_grad(): (output_nr, where to accumulate).
  std::vector<std::pair<uint32_t, std::shared_ptr<Tensor>>> retained_;

 private:
  uint64_t sequence_nr_;
};

// One tensor's register_hook hooks, by position (a removed one is empty).
struct TensorGradHooks {
  std::vector<std::function<Tensor(const Tensor&)>> hooks;
};

// The gradient edge of a tensor: its grad_fn, its leaf accumulator, or none.
Edge gradient_edge(const Tensor& t);

// A registered hook: remove() unregisters it (again: nothing). Copies refer to the same hook;
// dropping every handle keeps the hook registered.
class HookHandle {
 public:
  HookHandle() = default;
  explicit HookHandle(std::function<void()> remover) : remover_(std::move(remover)) {}
  void remove();

 private:
  std::function<void()> remover_;
};

// Tensor.register_post_accumulate_grad_hook: hook(leaf) runs each time backward() has
// accumulated a gradient into leaf.grad(), after the accumulation, with grad mode off; hooks of
// one leaf run in registration order (on the engine's thread, on a GPU with the stream of the
// leaf's AccumulateGrad current). autograd::grad() accumulates nothing and runs none. leaf must
// be a leaf that requires grad (else ValueError).
HookHandle register_post_accumulate_grad_hook(const Tensor& leaf,
                                              std::function<void(const Tensor& leaf)> hook);

// Variable._execution_engine.queue_callback: callback runs once the backward pass running on
// this thread has run all its nodes (after the caller's streams were ordered after the
// backward's), on this thread, with grad mode off; callbacks run in the order they were queued
// and may queue more. Only during a backward pass (from a node, a hook or a callback), else
// ValueError. An exception from a callback leaves backward() (the later callbacks do not run).
void queue_callback(std::function<void()> callback);

// Accumulates d(sum of tensors * grad_tensors) into the leaves' grad(). create_graph: the
// backward formulas record (the gradients have a graph of their own, for double backward);
// retain_graph defaults to create_graph.
void backward(const variable_list& tensors, const variable_list& grad_tensors = {},
              std::optional<bool> retain_graph = std::nullopt, bool create_graph = false);

// d(sum of outputs * grad_outputs) / d inputs, returned instead of accumulated into grad().
// create_graph and retain_graph as backward's. An input the outputs do not depend on throws
// unless allow_unused (then it is undefined).
variable_list grad(const variable_list& outputs, const variable_list& inputs,
                   const variable_list& grad_outputs = {}, std::optional<bool> retain_graph = std::nullopt,
                   bool create_graph = false, bool allow_unused = false);

}  // namespace autograd
}  // namespace wick
