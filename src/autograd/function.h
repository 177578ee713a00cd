// How ops record themselves: a FunctionNode runs a backward formula (a lambda) over the
// incoming gradients and its saved tensors. A core op computes its result once, then calls its
// family's record hook (hooks.h), whose switch holds one arm per op:
//
//   case BinaryOp::Mul:
//     record("MulBackward0", {a, b}, out, {a, b}, [](BackwardContext& c) -> variable_list {
//       return {c.needs(0) ? c.grad() * c.saved(1) : Tensor(), ...};
//     });
//
// Formulas keep tensors only through the saved list (version-checked, released after use);
// scalars and sizes they need are captured by the lambda. A lambda per node was chosen over
// one class per op (PyTorch generates ~600 of them): the formula sits in its family's switch
// and the node is still one allocation.
#pragma once

#include <initializer_list>
#include <utility>
#include <vector>

#include "autograd/hooks.h"
#include "autograd/meta.h"
#include "autograd/saved.h"
#include "wick/autograd.h"

namespace wick::autograd {

class BackwardContext {
 public:
  BackwardContext(const Node& node, const variable_list& grads, const std::vector<SavedVariable>& saved)
      : node_(node), grads_(grads), saved_(saved) {}
  // Gradient of output i (defined: the engine fills missing ones with zeros).
  const Tensor& grad(size_t i = 0) const { return grads_[i]; }
  // Saved tensor i, version-checked.
  Tensor saved(size_t i) const { return saved_[i].unpack(node_); }
  // Whether input i's gradient is wanted.
  bool needs(size_t i) const { return node_.needs_input_grad(i); }
  const Node& node() const { return node_; }

 private:
  const Node& node_;
  const variable_list& grads_;
  const std::vector<SavedVariable>& saved_;
};

// A node with saved tensors (what an in-place op's adoption rebinds, see adopt_result).
class SavingNode : public Node {
 public:
  void release_variables() override {
    for (auto& s : saved_) s.release();
  }
  std::vector<SavedVariable> saved_;
};

template <class F>
class FunctionNode final : public SavingNode {
 public:
  FunctionNode(const char* name, F fn) : name_(name), fn_(std::move(fn)) {}
  std::string name() const override { return name_; }
  variable_list apply(variable_list&& grads) override {
    BackwardContext ctx(*this, grads, saved_);
    return fn_(ctx);
  }

 private:
  const char* name_;
  F fn_;
};

namespace detail {
// Edges, input metadata, device and stream of a new node; outputs get their history.
void init_node(Node& node, std::initializer_list<Tensor> inputs);
void init_node(Node& node, const std::vector<Tensor>& inputs);
bool any_recordable(std::initializer_list<Tensor> outputs, std::initializer_list<Tensor> inputs);
// What a node saves of s: s itself, or a clone of it when s shares storage with the tensor an
// in-place op is being recorded for (that op is about to overwrite it; see autograd::inplace).
Tensor to_save(const Tensor& s);
}  // namespace detail

// Records out = op(inputs) and returns out. saved: tensors the formula reads (inputs or out).
// An output that is one of the inputs (a no-op such as to() of the same dtype) or is not
// floating is returned unrecorded.
template <class F>
Tensor record(const char* name, std::initializer_list<Tensor> inputs, const Tensor& out,
              std::initializer_list<Tensor> saved, F&& backward) {
  if (!detail::any_recordable({out}, inputs)) return out;
  auto node = std::make_shared<FunctionNode<std::decay_t<F>>>(name, std::forward<F>(backward));
  node->saved_.reserve(saved.size());
  for (const Tensor& s : saved) node->saved_.emplace_back(detail::to_save(s), s.defined() && s.is_same(out));
  detail::init_node(*node, inputs);
  set_history(out, node, 0);
  return out;
}

// The same for a list of inputs (cat, stack).
template <class F>
Tensor record(const char* name, const std::vector<Tensor>& inputs, const Tensor& out,
              std::initializer_list<Tensor> saved, F&& backward) {
  if (!detail::any_recordable({out}, {})) return out;
  for (const Tensor& t : inputs)
    if (t.is_same(out)) return out;
  auto node = std::make_shared<FunctionNode<std::decay_t<F>>>(name, std::forward<F>(backward));
  for (const Tensor& s : saved) node->saved_.emplace_back(detail::to_save(s), s.defined() && s.is_same(out));
  detail::init_node(*node, inputs);
  set_history(out, node, 0);
  return out;
}

// Whether a formula runs to record its own graph (create_graph): grad mode is on only then in
// a backward pass. Formulas that call a fused kernel use it only when this is false.
inline bool creating_graph() { return GradMode::is_enabled(); }

// For a formula without a differentiable form: throws NotImplementedError under create_graph
// instead of returning a gradient whose graph would be wrong.
void check_no_double_backward(const BackwardContext& c);

// log_softmax's input gradient from g and its result y along dim, in ops that record (for
// create_graph): g - exp(y) sum(g).
Tensor log_softmax_grad(const Tensor& g, const Tensor& y, int64_t dim);

// The gradient of gather(input, dim, index) for input of in_sizes: g added at the indices.
Tensor gather_backward(const Tensor& g, int64_t dim, const Tensor& index, IntArrayRef in_sizes);

// The sum of g over the dims where it was broadcast from sizes (the inverse of expand).
Tensor sum_to(const Tensor& g, IntArrayRef sizes);

}  // namespace wick::autograd
