// margin_ranking_loss, triplet_margin_loss, cosine_embedding_loss, poisson_nll_loss,
// gaussian_nll_loss, hinge_embedding_loss, soft_margin_loss and multilabel_soft_margin_loss, and
// their modules. Each is composed of differentiable ops as PyTorch writes it (so autograd, the
// devices and the floating dtypes are those of the ops); the reduction and the shapes are
// checked before anything runs, with PyTorch's messages, naming the function called.
#include <cmath>
#include <numbers>

#include "core/as_op.h"
#include "core/checks.h"
#include "nn/reduction_string.h"
#include "core/loss.h"
#include "wick/nn/functional.h"
#include "wick/nn/loss_more.h"
#include "wick/ops.h"

namespace wick::nn {

namespace functional {

namespace {

using wick::detail::as_op;
using wick::detail::LossReduction;

Tensor reduced(const Tensor& loss, LossReduction r) {
  if (r == LossReduction::Mean) return loss.mean();
  if (r == LossReduction::Sum) return loss.sum();
  return loss;
}

}  // namespace

Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target, double margin,
                           const std::string& reduction) {
  constexpr const char* op = "margin_ranking_loss";
  wick::detail::check_defined(input1, op, "input1");
  wick::detail::check_defined(input2, op, "input2");
  wick::detail::check_defined(target, op, "target");
  const LossReduction r = wick::detail::loss_reduction(reduction, op);
  WICK_CHECK(input1.dim() == input2.dim() && input1.dim() == target.dim(), ValueError, op,
             "margin_ranking_loss : All input tensors should have same dimension but got sizes: input1: ",
             input1.sizes(), ", input2: ", input2.sizes(), ", target: ", target.sizes(), " ");
  return as_op(op, [&] { return reduced((-target * (input1 - input2) + margin).clamp_min(0), r); });
}

Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative, double margin,
                           double p, double eps, bool swap, const std::string& reduction) {
  constexpr const char* op = "triplet_margin_loss";
  wick::detail::check_defined(anchor, op, "anchor");
  wick::detail::check_defined(positive, op, "positive");
  wick::detail::check_defined(negative, op, "negative");
  const LossReduction r = wick::detail::loss_reduction(reduction, op);
  WICK_CHECK(anchor.dim() == positive.dim() && positive.dim() == negative.dim(), ValueError, op,
             "The anchor, positive, and negative tensors are expected to have the same number of dimensions, but "
             "got: anchor ",
             anchor.dim(), "D, positive ", positive.dim(), "D, and negative ", negative.dim(), "D inputs");
  return as_op(op, [&] {
    Tensor d_pos = pairwise_distance(anchor, positive, p, eps);
    Tensor d_neg = pairwise_distance(anchor, negative, p, eps);
    if (swap) d_neg = wick::minimum(d_neg, pairwise_distance(positive, negative, p, eps));
    return reduced((d_pos - d_neg + margin).clamp_min(0), r);
  });
}

Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target, double margin,
                             const std::string& reduction) {
  constexpr const char* op = "cosine_embedding_loss";
  wick::detail::check_defined(input1, op, "input1");
  wick::detail::check_defined(input2, op, "input2");
  wick::detail::check_defined(target, op, "target");
  const LossReduction r = wick::detail::loss_reduction(reduction, op);
  const int64_t tdim = target.dim();
  WICK_CHECK(tdim == 0 || tdim == 1, ValueError, op, "0D or 1D target tensor expected, multi-target not supported");
  if (tdim == 1)
    WICK_CHECK(input1.dim() == 2 && input2.dim() == 2, ValueError, op,
               "1D target tensor expects 2D input tensors, but found inputs with sizes ", input1.sizes(), " and ",
               input2.sizes(), ".");
  else
    WICK_CHECK(input1.dim() == 1 && input2.dim() == 1, ValueError, op,
               "0D target tensor expects 1D input tensors, but found inputs with sizes ", input1.sizes(), " and ",
               input2.sizes(), ".");
  return as_op(op, [&] {
    constexpr double kEps = 1e-12;
    Tensor prod = (input1 * input2).sum({tdim});
    Tensor mag1 = (input1 * input1).sum({tdim}) + kEps;
    Tensor mag2 = (input2 * input2).sum({tdim}) + kEps;
    Tensor cos = prod / (mag1 * mag2).sqrt();
    Tensor pos = wick::where(target == 1, 1 - cos, 0);
    Tensor neg = wick::where(target == -1, (cos - margin).clamp_min(0), 0);
    return reduced(pos + neg, r);
  });
}

Tensor poisson_nll_loss(const Tensor& input, const Tensor& target, bool log_input, bool full, double eps,
                        const std::string& reduction) {
  constexpr const char* op = "poisson_nll_loss";
  wick::detail::check_defined(input, op, "input");
  wick::detail::check_defined(target, op, "target");
  const LossReduction r = wick::detail::loss_reduction(reduction, op);
  return as_op(op, [&] {
    Tensor loss = log_input ? input.exp() - target * input : input - target * (input + eps).log();
    if (full) {
      // Stirling's approximation of log(target!), where target > 1 only.
      Tensor stirling = target * target.log() - target + (target * (2 * std::numbers::pi)).log() * 0.5;
      loss = loss + stirling.masked_fill(target <= 1, 0);
    }
    return reduced(loss, r);
  });
}

Tensor gaussian_nll_loss(const Tensor& input, const Tensor& target, const Tensor& var, bool full, double eps,
                         const std::string& reduction) {
  constexpr const char* op = "gaussian_nll_loss";
  wick::detail::check_defined(input, op, "input");
  wick::detail::check_defined(target, op, "target");
  wick::detail::check_defined(var, op, "var");
  // var shaped as input; or as input but its last dim (one variance for each sample: a dim of 1
  // is added to broadcast); or as input with a last dim of 1.
  Tensor v = var;
  if (!var.sizes().equals(input.sizes())) {
    const IntArrayRef in = input.sizes(), vs = var.sizes();
    const IntArrayRef in_lead = in.empty() ? in : in.slice(0, in.size() - 1);
    const IntArrayRef v_lead = vs.empty() ? vs : vs.slice(0, vs.size() - 1);
    if (in_lead.equals(vs)) v = var.unsqueeze(-1);
    else
      WICK_CHECK(in_lead.equals(v_lead) && !vs.empty() && vs.back() == 1, ValueError, op,
                 "var is of incorrect size");
  }
  WICK_CHECK(reduction == "none" || reduction == "mean" || reduction == "sum", ValueError, op, reduction,
             " is not valid");
  const bool negative = as_op(op, [&] { return (var < 0).any().item().to<bool>(); });
  WICK_CHECK(!negative, ValueError, op, "var has negative entry/entries");
  return as_op(op, [&] {
    // var clamped to eps from below without the clamp being differentiated (PyTorch clamps a
    // copy in place under no_grad): eps + (v - v) has the value eps and v's gradient.
    Tensor vc = wick::where(v < eps, (v - v.detach()) + eps, v);
    Tensor d = input - target;
    Tensor loss = (vc.log() + d * d / vc) * 0.5;
    if (full) loss = loss + 0.5 * std::log(2 * std::numbers::pi);
    return reduced(loss, wick::detail::loss_reduction(reduction, op));
  });
}

Tensor hinge_embedding_loss(const Tensor& input, const Tensor& target, double margin,
                            const std::string& reduction) {
  constexpr const char* op = "hinge_embedding_loss";
  wick::detail::check_defined(input, op, "input");
  wick::detail::check_defined(target, op, "target");
  const LossReduction r = wick::detail::loss_reduction(reduction, op);
  return as_op(op, [&] {
    Tensor margin_part = wick::where(target != 1, (margin - input).clamp_min(0), 0);
    Tensor self_part = wick::where(target != -1, input, 0);
    return reduced(margin_part + self_part, r);
  });
}

Tensor soft_margin_loss(const Tensor& input, const Tensor& target, const std::string& reduction) {
  constexpr const char* op = "soft_margin_loss";
  wick::detail::check_defined(input, op, "input");
  wick::detail::check_defined(target, op, "target");
  const LossReduction r = wick::detail::loss_reduction(reduction, op);
  // PyTorch writes the loss into a tensor of input's shape: target must broadcast to it.
  const DimVector shape = wick::detail::broadcast_shapes(input.sizes(), target.sizes(), op);
  WICK_CHECK(IntArrayRef(shape).equals(input.sizes()), ValueError, op, "output with shape ", input.sizes(),
             " doesn't match the broadcast shape ", IntArrayRef(shape));
  return as_op(op, [&] { return reduced((-input * target).exp().log1p(), r); });
}

Tensor multilabel_soft_margin_loss(const Tensor& input, const Tensor& target, const Tensor& weight,
                                   const std::string& reduction) {
  constexpr const char* op = "multilabel_soft_margin_loss";
  wick::detail::check_defined(input, op, "input");
  wick::detail::check_defined(target, op, "target");
  WICK_CHECK(reduction == "none" || reduction == "mean" || reduction == "sum", ValueError, op, reduction,
             " is not valid");
  WICK_CHECK(input.dim() > 0, IndexError, op, "Dimension specified as -1 but tensor has no dimensions");
  return as_op(op, [&] {
    Tensor loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input));
    if (weight.defined()) loss = loss * weight;
    const int64_t class_dim = input.dim() - 1;
    loss = loss.sum({class_dim}) / double(input.size(class_dim));
    return reduced(loss, wick::detail::loss_reduction(reduction, op));
  });
}

}  // namespace functional

namespace F = functional;

Tensor MarginRankingLossImpl::forward(const Tensor& input1, const Tensor& input2, const Tensor& target) {
  return F::margin_ranking_loss(input1, input2, target, options);
}

Tensor TripletMarginLossImpl::forward(const Tensor& anchor, const Tensor& positive, const Tensor& negative) {
  return F::triplet_margin_loss(anchor, positive, negative, options);
}

Tensor CosineEmbeddingLossImpl::forward(const Tensor& input1, const Tensor& input2, const Tensor& target) {
  return F::cosine_embedding_loss(input1, input2, target, options);
}

Tensor PoissonNLLLossImpl::forward(const Tensor& log_input, const Tensor& target) {
  return F::poisson_nll_loss(log_input, target, options);
}

Tensor GaussianNLLLossImpl::forward(const Tensor& input, const Tensor& target, const Tensor& var) {
  return F::gaussian_nll_loss(input, target, var, options);
}

Tensor HingeEmbeddingLossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::hinge_embedding_loss(input, target, options);
}

Tensor SoftMarginLossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::soft_margin_loss(input, target, options);
}

MultiLabelSoftMarginLossImpl::MultiLabelSoftMarginLossImpl(const MultiLabelSoftMarginLossOptions& options)
    : options(options) {
  if (options.weight().defined()) weight = register_buffer("weight", options.weight());
}

Tensor MultiLabelSoftMarginLossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::multilabel_soft_margin_loss(input, target, weight, options.reduction());
}

}  // namespace wick::nn

namespace wick {

Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target, double margin,
                           Reduction::Reduction reduction) {
  return nn::functional::margin_ranking_loss(input1, input2, target, margin,
                                             detail::reduction_string(reduction, "margin_ranking_loss"));
}

Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative, double margin,
                           double p, double eps, bool swap, Reduction::Reduction reduction) {
  return nn::functional::triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                             detail::reduction_string(reduction, "triplet_margin_loss"));
}

Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target, double margin,
                             Reduction::Reduction reduction) {
  return nn::functional::cosine_embedding_loss(input1, input2, target, margin,
                                               detail::reduction_string(reduction, "cosine_embedding_loss"));
}

Tensor poisson_nll_loss(const Tensor& input, const Tensor& target, bool log_input, bool full, double eps,
                        Reduction::Reduction reduction) {
  return nn::functional::poisson_nll_loss(input, target, log_input, full, eps,
                                          detail::reduction_string(reduction, "poisson_nll_loss"));
}

Tensor hinge_embedding_loss(const Tensor& input, const Tensor& target, double margin, Reduction::Reduction reduction) {
  return nn::functional::hinge_embedding_loss(input, target, margin, detail::reduction_string(reduction, "hinge_embedding_loss"));
}

Tensor soft_margin_loss(const Tensor& input, const Tensor& target, Reduction::Reduction reduction) {
  return nn::functional::soft_margin_loss(input, target, detail::reduction_string(reduction, "soft_margin_loss"));
}

}  // namespace wick
