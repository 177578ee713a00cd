// AutogradMeta: what autograd keeps per tensor, in TensorImpl's slot. Tensors that never
// take part in autograd have none, so plain tensors pay one null pointer.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "wick/autograd.h"

namespace wick::autograd {

// A leaf's post-accumulate-grad hooks, by id (registration order), shared with their handles.
struct PostAccumulateGradHooks {
  std::vector<std::pair<uint64_t, std::function<void(const Tensor&)>>> hooks;
  uint64_t next_id = 0;
};

struct AutogradMeta : detail::AutogradMetaBase {
  Tensor grad;                           // leaves: accumulated by backward()
  std::shared_ptr<Node> grad_fn;         // non-leaves: the node that made this tensor
  std::weak_ptr<Node> grad_accumulator;  // leaves: their AccumulateGrad, while a graph holds it
  uint32_t output_nr = 0;                // which output of grad_fn this tensor is
  std::shared_ptr<Tensor> retained;      // non-leaves after retain_grad(): the slot grad() reads
  std::shared_ptr<PostAccumulateGradHooks> post_accumulate_hooks;  // leaves: run by AccumulateGrad
  // Leaves: register_hook's hooks, attached to each AccumulateGrad made for the leaf (a
  // non-leaf's live on its grad_fn: Node::tensor_pre_hooks_).
  std::shared_ptr<TensorGradHooks> leaf_hooks;
  // Leaves: where a backward formula may write this leaf's gradient when grad() is undefined
  // (take_grad_destination); taken by one formula per pass, given back by AccumulateGrad.
  Tensor grad_destination;
  bool grad_destination_taken = false;
};

// The tensor's meta, or null.
// Null for an undefined tensor too (it has no history).
inline AutogradMeta* meta(const Tensor& t) {
  return t.defined() ? static_cast<AutogradMeta*>(t.impl()->autograd_meta()) : nullptr;
}
// The tensor's meta, created on first use.
AutogradMeta& meta_or_create(const Tensor& t);

// The AccumulateGrad node of a leaf that requires grad (one per leaf while a graph uses it).
std::shared_ptr<Node> grad_accumulator(const Tensor& leaf);

// t's register_hook hooks (t requires grad): a leaf's, or those of its output of grad_fn; made
// on first use when create, else null when there are none.
TensorGradHooks* grad_hooks(const Tensor& t, bool create);

// Makes t output output_nr of fn: sets grad_fn and requires_grad.
void set_history(const Tensor& t, const std::shared_ptr<Node>& fn, uint32_t output_nr = 0);

// Whether n is the backward node of a view op (ViewBackward0, SliceBackward0, ...).
bool is_view_node(const Node& n);

// Gradient destinations. set_grad_destination(leaf, dst): while leaf's grad() is undefined, the
// backward formula that makes its whole gradient may write it into dst (same sizes and dtype,
// contiguous) instead of new memory, and the leaf's grad() then becomes dst itself: DDP's bucket
// views (docs/design.md 12.1), which then need no copy. An undefined dst removes it.
void set_grad_destination(const Tensor& leaf, const Tensor& dst);
// For the formula of node: where its input i's gradient may be written, shaped as that input, or
// undefined. Input i must lead straight to a leaf's AccumulateGrad, or through one TBackward0
// (then the result is the destination transposed); the leaf's grad() must be undefined and its
// destination not taken yet in this pass (a second path to the same leaf computes its own).
// Marks it taken. Only in a backward pass that accumulates into the leaves (not autograd::grad,
// whose results must not alias anything).
Tensor take_grad_destination(const Node& node, size_t i);
// Whether this thread runs a backward pass whose AccumulateGrad nodes run (backward(), not
// autograd::grad).
bool running_backward_into_leaves();
// Whether this thread runs a backward pass of the engine (backward() or autograd::grad), as
// opposed to a node's apply called by hand: a formula that hands work on to the node after it
// (cross_entropy's one-kernel backward) does so only inside one.
bool running_backward_pass();
// Whether this thread runs a backward pass that frees the graph as it goes (retain_graph and
// create_graph false): a node's saved tensors are then read by this pass only, and a formula may
// hand one out as its gradient (cross_entropy's gradient written by its forward).
bool freeing_graph();

// Gradients handed over. A formula that makes one flat gradient and returns views of it, disjoint
// and one an input (CudnnRnnBackward0: cuDNN's flat weight gradient, docs/design.md §18), calls
// hand_over_grad_views(flat, views) in a backward pass into the leaves: AccumulateGrad may then
// take such a view as a leaf's grad(), where another gradient sharing its storage is copied, as
// long as no more tensors refer to flat's storage than the views taken so far and those yet to
// come. Nothing happens outside such a pass (autograd::grad hands its results to the caller).
void hand_over_grad_views(const Tensor& flat, size_t views);
// For AccumulateGrad, on each gradient g it gets: whether g is a view handed over in this pass
// that may be taken (counted as arrived either way); grad_view_taken(g) once it is taken.
bool grad_view_handed_over(const Tensor& g);
void grad_view_taken(const Tensor& g);

// A new TensorImpl over t's storage and geometry, without autograd meta: what saved tensors
// and detach() hold (sharing the storage keeps the version counter).
Tensor alias_without_grad(const Tensor& t);

}  // namespace wick::autograd
