// Backward nodes of the fused losses (core/loss.h), recorded by the loss ops after their forward
// and named as PyTorch names them: one node per loss, whose formula is one kernel where the loss
// allows (nll_loss's backward entry, the pointwise family's mse and bce pieces).
#include "autograd/function.h"
#include "autograd/hooks.h"
#include "core/loss.h"
#include "core/softmax.h"
#include "wick/ops.h"

namespace wick::autograd {

using wick::detail::LossReduction;

namespace {

// nll_loss's input gradient, linear in g: the fused kernel, or (recording, create_graph) its
// coefficients (the kernel's result for a gradient of ones, which depends on nothing that
// requires grad) times g, broadcast over the class dim.
Tensor nll_grad(const Tensor& g, IntArrayRef sizes, const Tensor& target, const Tensor& weight,
                const Tensor& total_weight, int64_t ignore_index, LossReduction reduction) {
  if (!creating_graph())
    return wick::detail::nll_loss_backward(g, sizes, target, weight, total_weight, ignore_index, reduction);
  Tensor coef;
  {
    NoGradGuard no_grad;
    coef = wick::detail::nll_loss_backward(wick::ones_like(g), sizes, target, weight, total_weight, ignore_index,
                                           reduction);
  }
  if (reduction != LossReduction::None || sizes.size() == 1) return coef * g;
  DimVector per_element(sizes.begin(), sizes.end());
  per_element[1] = 1;
  return coef * g.reshape(per_element);
}

}  // namespace

std::tuple<Tensor, Tensor> record_nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight,
                                           int64_t ignore_index, LossReduction reduction, const Tensor& result,
                                           const Tensor& total_weight) {
  DimVector sizes(input.sizes().begin(), input.sizes().end());
  // PyTorch's names: nll_loss for [C] and [N, C], nll_loss2d beyond, whose per-element result
  // PyTorch computes as [N, 1, S] and views back unless the input is 4-D.
  const bool spatial = input.dim() >= 3;
  const bool viewed = spatial && input.dim() != 4 && reduction == LossReduction::None;
  Tensor out = viewed ? result.view({input.size(0), 1, -1}) : result;
  Tensor loss = record(spatial ? "NllLoss2DBackward0" : "NllLossBackward0", {input}, out,
                       {target, weight, total_weight},
                       [sizes, ignore_index, reduction, viewed](BackwardContext& c) -> variable_list {
                         Tensor g = viewed ? c.grad().reshape({-1}) : c.grad();
                         return {nll_grad(g, sizes, c.saved(0), c.saved(1), c.saved(2), ignore_index, reduction)};
                       });
  return {viewed ? loss.view(result.sizes()) : loss, total_weight};
}

namespace {

// LogSoftmaxBackward0 of cross_entropy's one-kernel forward: log_softmax's formula over dim 1,
// except for the one gradient its NllLossBackward0 handed it (handed_), which that node's
// one-kernel backward computed wrt the logits already and which passes through unchanged.
class CrossEntropyLogSoftmaxNode final : public SavingNode {
 public:
  std::string name() const override { return "LogSoftmaxBackward0"; }
  variable_list apply(variable_list&& grads) override {
    if (handed_.defined() && grads[0].is_same(handed_)) {
      handed_ = Tensor();
      return {std::move(grads[0])};
    }
    if (creating_graph()) return {log_softmax_grad(grads[0], saved_[0].unpack(*this), 1)};
    return {wick::detail::softmax_backward(true, grads[0], saved_[0].unpack(*this), 1)};
  }
  // Held (not a bare address) so that no other tensor can come to share its identity.
  Tensor handed_;
};

// NllLossBackward0's one-kernel backward to the logits, or undefined where the two kernels
// must run. It runs only where nothing can tell the gradient wrt logp was never made: inside
// an engine pass (not a hand call of apply), grad mode off (no graph of the backward is being
// built), logp's node reached by this node's edge alone (its only holder: no other edge into
// it, no tensor with it as grad_fn, no one holding it) with no retain_grad slot, and no
// gradient of an earlier pass still handed to it (a pass that failed midway, or one nested in
// it). Their gradient then reaches that node as this one returns it (no sum with another, the
// dtype it validates to), and the node hands it on to the logits.
Tensor fused_cross_entropy_backward(BackwardContext& c, CrossEntropyLogSoftmaxNode* lsm, int64_t ignore_index,
                                    LossReduction reduction) {
  const Edge& e = c.node().next_edge(0);
  if (e.function.get() != lsm || e.function.use_count() != 1 || lsm->handed_.defined() ||
      !lsm->retained_.empty() || GradMode::is_enabled() || !running_backward_pass())
    return {};
  const Tensor& g = c.grad();
  // this node's saved tensors first, as its own formula unpacks them (the same error first)
  Tensor target = c.saved(0), weight = c.saved(1), total_weight = c.saved(2);
  Tensor logp = lsm->saved_[0].unpack(*lsm);
  if (!g.defined() || g.dtype() != logp.dtype() || g.device() != logp.device()) return {};
  Tensor gi = wick::detail::log_softmax_nll_loss_backward(g, logp, target, weight, total_weight, ignore_index,
                                                          reduction);
  lsm->handed_ = gi;
  return gi;
}

// The incoming gradient of a reduced loss scaled for "mean" (1 / numel of the input).
Tensor scaled_grad(const Tensor& g, LossReduction reduction, int64_t numel) {
  return reduction == LossReduction::Mean ? g / double(numel) : g;
}

Tensor as_grad_of(const Tensor& g, const Tensor& like) {
  return g.dtype() == like.dtype() ? g : g.to(like.dtype());
}

}  // namespace

Tensor record_log_softmax_nll_loss(const Tensor& input, const Tensor& logp, const Tensor& target,
                                  const Tensor& weight, int64_t ignore_index, LossReduction reduction,
                                  const Tensor& loss, const Tensor& total_weight) {
  if (!detail::any_recordable({logp}, {input})) [[unlikely]] {
    Tensor lp = record_log_softmax(input, logp, 1);
    return std::get<0>(record_nll_loss(lp, target, weight, ignore_index, reduction, loss, total_weight));
  }
  auto node = std::make_shared<CrossEntropyLogSoftmaxNode>();
  node->saved_.emplace_back(detail::to_save(logp), true);
  detail::init_node(*node, {input});
  set_history(logp, node, 0);
  CrossEntropyLogSoftmaxNode* lsm = node.get();
  node.reset();  // the edge of the NllLossBackward0 below is to be its one holder
  DimVector sizes(logp.sizes().begin(), logp.sizes().end());
  return record("NllLossBackward0", {logp}, loss, {target, weight, total_weight},
                [sizes, lsm, ignore_index, reduction](BackwardContext& c) -> variable_list {
                  if (Tensor gi = fused_cross_entropy_backward(c, lsm, ignore_index, reduction); gi.defined())
                    return {gi};
                  return {nll_grad(c.grad(), sizes, c.saved(0), c.saved(1), c.saved(2), ignore_index, reduction)};
                });
}

Tensor record_cross_entropy_rows(const Tensor& input, const wick::detail::CrossEntropyRowsResult& f,
                                 int64_t ignore_index, LossReduction reduction) {
  return record("NllLossBackward0", {input}, f.loss, {input, f.target, f.lse, f.weights, f.total_weight, f.grad, f.coef},
                [ignore_index, reduction](BackwardContext& c) -> variable_list {
                  Tensor x = c.saved(0), t = c.saved(1), lse = c.saved(2), w = c.saved(3), total = c.saved(4);
                  if (!creating_graph()) {
                    // The forward's gradient is handed out (and scaled in place) only by a pass
                    // that frees the graph: no later pass reads it again.
                    if (Tensor pre = c.saved(5); pre.defined() && freeing_graph())
                      return {wick::detail::cross_entropy_rows_backward_into(pre, c.saved(6), c.grad(), x, lse, t,
                                                                             ignore_index)};
                    return {wick::detail::cross_entropy_rows_backward(c.grad(), x, lse, t, w, total, ignore_index,
                                                                      reduction)};
                  }
                  // In ops that record: weights * g (/ total) * (softmax(x) - onehot(t)), in float.
                  Tensor g = c.grad().to(kFloat32);
                  Tensor coef = w * (reduction == LossReduction::Mean ? g / total : g);
                  const int64_t classes = x.size(1);
                  Tensor onehot = (wick::arange(classes, TensorOptions(kInt64).device(x.device())).unsqueeze(0) ==
                                   t.unsqueeze(1))
                                      .to(kFloat32);
                  return {(coef.unsqueeze(1) * (wick::softmax(x.to(kFloat32), 1) - onehot)).to(x.dtype())};
                });
}

void record_mse_loss(const Tensor& input, const Tensor& target, const Tensor& out, LossReduction reduction) {
  const int64_t numel = input.numel();
  record(
      "MseLossBackward0", {input, target}, out, {input, target},
      [reduction, numel](BackwardContext& c) -> variable_list {
        Tensor x = c.saved(0), t = c.saved(1);
        Tensor g = scaled_grad(c.grad(), reduction, numel);
        Tensor gi = creating_graph() ? (x - t) * g * 2.0  // in ops that record
                                     : wick::detail::loss_pointwise(wick::detail::PointwiseOp::MseBackward,
                                                                    {x, t, g}, "mse_loss_backward");
        return {c.needs(0) ? as_grad_of(gi, x) : Tensor(), c.needs(1) ? as_grad_of(-gi, t) : Tensor()};
      });
}

void record_binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const Tensor& weight,
                                             const Tensor& pos_weight, const Tensor& out,
                                             LossReduction reduction) {
  const int64_t numel = input.numel();
  record("BinaryCrossEntropyWithLogitsBackward0", {input, target}, out, {input, target, weight, pos_weight},
         [reduction, numel](BackwardContext& c) -> variable_list {
           Tensor x = c.saved(0), t = c.saved(1), w = c.saved(2), pw = c.saved(3);
           Tensor g = scaled_grad(c.grad(), reduction, numel);
           if (w.defined()) g = g * w;
           Tensor gi, gt;
           if (c.needs(0)) {
             if (pw.defined()) {  // ((1 + (pw - 1) t) sigmoid(x) - pw t) g
               Tensor pwt = pw * t;
               gi = ((pwt + 1.0 - t) * wick::sigmoid(x) - pwt) * g;
             } else if (creating_graph()) {
               gi = (wick::sigmoid(x) - t) * g;
             } else {
               gi = wick::detail::loss_pointwise(wick::detail::PointwiseOp::BceLogitsBackward, {x, t, g},
                                                 "binary_cross_entropy_with_logits_backward");
             }
             gi = as_grad_of(gi, x);
           }
           if (c.needs(1)) {
             // d/dt = (pw - 1) (-log sigmoid(x)) - x; without pos_weight, -x.
             if (pw.defined()) {
               // -log sigmoid(x) = max(-x, 0) + log(1 + exp(-|x|))
               Tensor nls =
                   creating_graph()
                       ? wick::relu(-x) + wick::log(wick::exp(-wick::abs(x)) + 1.0)
                       : wick::detail::loss_pointwise(wick::detail::PointwiseOp::BceLogits,
                                                      {x, wick::ones_like(x)}, "binary_cross_entropy_with_logits");
               gt = ((pw - 1.0) * nls - x) * g;
             } else {
               gt = -x * g;
             }
             gt = as_grad_of(gt, t);
           }
           return {gi, gt};
         });
}

void record_binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight, const Tensor& out,
                                 LossReduction reduction) {
  const int64_t numel = input.numel();
  record("BinaryCrossEntropyBackward0", {input, target}, out, {input, target, weight},
         [reduction, numel](BackwardContext& c) -> variable_list {
           Tensor x = c.saved(0), t = c.saved(1), w = c.saved(2);
           Tensor g = scaled_grad(c.grad(), reduction, numel);
           if (w.defined()) g = g * w;
           Tensor gi, gt;
           if (c.needs(0)) gi = as_grad_of((x - t) / (x * (1.0 - x)).clamp_min(1e-12) * g, x).expand(x.sizes());
           if (c.needs(1))
             gt = as_grad_of(((1.0 - x).log().clamp_min(-100.0) - x.log().clamp_min(-100.0)) * g, t)
                      .expand(t.sizes());
           return {gi, gt};
         });
}

}  // namespace wick::autograd
