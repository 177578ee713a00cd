// The loss functions of nn::functional. nll_loss, mse_loss and binary_cross_entropy_with_logits
// are core's fused ops (core/loss.h: one kernel forward, one backward node named as PyTorch's);
// cross_entropy is log_softmax + nll_loss (LogSoftmaxBackward0 under NllLossBackward0, as
// PyTorch), or a single kernel from the logits when nothing needs a gradient or (small CUDA
// inputs) one kernel writing both log_softmax and the loss, recorded as the two; label smoothing
// and class-probability targets are composed as in PyTorch, with its node names.
#include <cmath>

#include "autograd/hooks.h"
#include "core/as_op.h"
#include "core/autocast.h"
#include "core/checks.h"
#include "core/loss.h"
#include "core/tensor_ops.h"
#include "wick/nn/functional.h"
#include "wick/ops.h"

namespace wick::nn::functional {

namespace autocast = wick::detail::autocast;

namespace {

using wick::detail::LossReduction;

Tensor reduce(const Tensor& loss, const std::string& reduction, const char* op) {
  if (reduction == "mean") return loss.mean();
  if (reduction == "sum") return loss.sum();
  WICK_CHECK(reduction == "none", ValueError, op, reduction, " is not a valid value for reduction");
  return loss;
}

void check_same_sizes(const Tensor& input, const Tensor& target, const char* op) {
  WICK_CHECK(input.sizes().equals(target.sizes()), ValueError, op, "Using a target size (", target.sizes(),
             ") that is different to the input size (", input.sizes(), ") is not supported.");
}

// mse_loss and l1_loss of an input and a target of different sizes: PyTorch warns and
// broadcasts them as torch.broadcast_tensors does, each expanded (its ExpandBackward0 sums the
// gradient back to its own shape); sizes that do not broadcast raise, naming op.
std::pair<Tensor, Tensor> broadcast_pair(const Tensor& input, const Tensor& target, const char* op) {
  if (input.sizes().equals(target.sizes())) return {input, target};
  const DimVector shape = wick::detail::broadcast_shapes(input.sizes(), target.sizes(), op);
  return {input.expand(shape), target.expand(shape)};
}

// The class weights shaped to broadcast against [N, C, d...] (class dim 1) or [C].
Tensor class_view(const Tensor& w, int64_t input_dim) {
  if (input_dim == 1) return w;
  DimVector shape(size_t(input_dim), 1);
  shape[1] = w.size(0);
  return w.view(shape);
}

// cross_entropy with class-probability targets, as PyTorch writes it: mean divides the sum by
// the number of samples (DivBackward0), sum and none negate (NegBackward0).
Tensor cross_entropy_probabilities(const Tensor& input, const Tensor& target, const Tensor& weight,
                                   const std::string& reduction, double label_smoothing) {
  check_same_sizes(input, target, "cross_entropy");
  const LossReduction r = wick::detail::loss_reduction(reduction, "cross_entropy");
  const int64_t class_dim = input.dim() == 1 ? 0 : 1;
  const int64_t c = input.size(class_dim);
  Tensor logp = wick::log_softmax(input, class_dim);
  Tensor t = label_smoothing > 0 ? target * (1 - label_smoothing) + label_smoothing / double(c) : target;
  Tensor prod = logp * t;
  if (weight.defined()) prod = prod * class_view(weight.to(logp.dtype()), input.dim());
  if (r == LossReduction::Mean) return -prod.sum() / double(input.numel() / c);
  if (r == LossReduction::Sum) return -prod.sum();
  return -prod.sum({class_dim});
}

}  // namespace

Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                const std::string& reduction) {
  wick::detail::check_defined(input, "nll_loss", "self");
  wick::detail::check_defined(target, "nll_loss", "target");
  if (autocast::active()) [[unlikely]]
    return autocast::run(
        autocast::Policy::Fp32, autocast::Policy::Fp32, "nll_loss",
        [&](const Tensor& i, const Tensor& t, const Tensor& w) {
          return nll_loss(i, t, w, ignore_index, reduction);
        },
        input, target, weight);
  const LossReduction r = wick::detail::loss_reduction(reduction, "nll_loss");
  return wick::detail::nll_loss(input, target, weight, ignore_index, r).loss;
}

namespace {

// cross_entropy through cross_entropy_rows, recorded as one NllLossBackward0.
Tensor cross_entropy_by_rows(const Tensor& input, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                             LossReduction r, Dtype out_dtype) {
  const bool grad = wick::detail::needs_grad(input);
  const wick::detail::CrossEntropyRowsResult f = wick::detail::forward_once(grad, [&] {
    return wick::detail::cross_entropy_rows(input, target, weight, ignore_index, r, out_dtype, /*write_grad=*/grad);
  });
  if (!grad) return f.loss;
  return wick::autograd::record_cross_entropy_rows(input, f, ignore_index, r);
}

Tensor cross_entropy_impl(const Tensor& input, const Tensor& target, const Tensor& weight,
                          int64_t ignore_index, const std::string& reduction, double label_smoothing) {
  wick::detail::check_defined(input, "cross_entropy", "self");
  wick::detail::check_defined(target, "cross_entropy", "target");
  WICK_CHECK(label_smoothing >= 0 && label_smoothing <= 1, ValueError, "cross_entropy",
             "label_smoothing must be between 0.0 and 1.0. Got: ", label_smoothing);
  if (target.defined() && target.is_floating_point())
    return cross_entropy_probabilities(input, target, weight, reduction, label_smoothing);
  const LossReduction r = wick::detail::loss_reduction(reduction, "cross_entropy");
  WICK_CHECK(input.defined() && input.dim() >= 1, ValueError, "cross_entropy",
             "Expected 1 or more dimensions (got 0)");
  // Nothing to differentiate: one kernel reads the logits (log_softmax is never written).
  if (label_smoothing == 0 && input.is_floating_point() && !wick::detail::needs_grad(input, weight))
    return wick::detail::nll_loss(input, target, weight, ignore_index, r, /*logits=*/true).loss;
  // 16-bit logits that need grad: no log_softmax tensor, no float32 copy (a language model's
  // [tokens, vocabulary] logits are the largest tensors of its step).
  if (wick::detail::needs_grad(input) &&
      wick::detail::cross_entropy_rows_applies(input, target, weight, label_smoothing, false))
    return cross_entropy_by_rows(input, target, weight, ignore_index, r, input.dtype());
  // Small CUDA logits that need grad: log_softmax and nll_loss in one kernel (a training step
  // of a small model is bound by launches; docs/design.md), recorded as the two ops it does,
  // whose backward is one kernel too where nothing can tell (autograd/hooks.h).
  if (label_smoothing == 0 && wick::detail::needs_grad(input) && wick::detail::log_softmax_nll_loss_applies(input)) {
    // Nothing of the forward (a contiguous copy, casts) is recorded but the two nodes.
    const wick::detail::LogSoftmaxNllResult f = wick::detail::forward_once(
        true, [&] { return wick::detail::log_softmax_nll_loss(input, target, weight, ignore_index, r); });
    return wick::autograd::record_log_softmax_nll_loss(input, f.logp, target, weight, ignore_index, r, f.loss,
                                                       f.total_weight);
  }

  const int64_t class_dim = input.dim() == 1 ? 0 : 1;
  const int64_t c = input.size(class_dim);
  Tensor logp = wick::log_softmax(input, class_dim);
  auto nll = wick::detail::nll_loss(logp, target, weight, ignore_index, r);
  if (label_smoothing == 0) return nll.loss;
  // PyTorch's smoothing term: -sum_c w_c log p_c per element, zero where ignored; "mean"
  // divides by the sum of the weights of the targets not ignored (nll_loss's total weight,
  // so no index check runs twice).
  Tensor smooth = weight.defined()
                      ? -(logp * class_view(weight.to(logp.dtype()), input.dim())).sum({class_dim})
                      : -logp.sum({class_dim});
  smooth = wick::masked_fill(smooth, target == ignore_index, 0.0);
  Tensor ret;
  if (r == LossReduction::Mean) ret = smooth.sum() / nll.total_weight;
  else if (r == LossReduction::Sum) ret = smooth.sum();
  else ret = smooth;
  return nll.loss * (1 - label_smoothing) + ret * (label_smoothing / double(c));
}
}  // namespace

Tensor cross_entropy(const Tensor& input, const Tensor& target, const CrossEntropyFuncOptions& options) {
  return cross_entropy(input, target, options.weight(), options.ignore_index(), options.reduction(),
                       options.label_smoothing());
}

Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                     const std::string& reduction, double label_smoothing) {
  if (autocast::active()) [[unlikely]] {
    // 16-bit logits under autocast: computed in float32 as the policy asks, but read as they
    // are instead of cast to a float32 copy first.
    if (autocast::enabled(autocast::device_type_of(input, target, weight)) &&
        wick::detail::cross_entropy_rows_applies(input, target, weight, label_smoothing, true)) {
      autocast::Exclude no_autocast;
      return wick::detail::as_op("cross_entropy", [&] {
        return cross_entropy_by_rows(input, target, weight, ignore_index,
                                     wick::detail::loss_reduction(reduction, "cross_entropy"), kFloat32);
      });
    }
    return autocast::run(
        autocast::Policy::Fp32, autocast::Policy::Fp32, "cross_entropy",
        [&](const Tensor& i, const Tensor& t, const Tensor& w) {
          return cross_entropy(i, t, w, ignore_index, reduction, label_smoothing);
        },
        input, target, weight);
  }
  return wick::detail::as_op("cross_entropy", [&] {
    return cross_entropy_impl(input, target, weight, ignore_index, reduction, label_smoothing);
  });
}

Tensor mse_loss(const Tensor& input, const Tensor& target, const std::string& reduction) {
  wick::detail::check_defined(input, "mse_loss", "self");
  wick::detail::check_defined(target, "mse_loss", "target");
  if (autocast::active()) [[unlikely]]
    return autocast::run(
        autocast::Policy::Fp32, autocast::Policy::Fp32, "mse_loss",
        [&](const Tensor& i, const Tensor& t) { return mse_loss(i, t, reduction); }, input, target);
  const auto [in, tg] = broadcast_pair(input, target, "mse_loss");
  return wick::detail::mse_loss(in, tg, wick::detail::loss_reduction(reduction, "mse_loss"));
}

Tensor l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction) {
  wick::detail::check_defined(input, "l1_loss", "self");
  wick::detail::check_defined(target, "l1_loss", "target");
  if (autocast::active()) [[unlikely]]
    return autocast::run(
        autocast::Policy::Fp32, autocast::Policy::Fp32, "l1_loss",
        [&](const Tensor& i, const Tensor& t) { return l1_loss(i, t, reduction); }, input, target);
  // Composed of sub, abs and a reduction, as PyTorch's: their errors (bool inputs, the mean of
  // an integer difference) name l1_loss.
  return wick::detail::as_op("l1_loss", [&] {
    const auto [in, tg] = broadcast_pair(input, target, "l1_loss");
    return reduce((in - tg).abs(), reduction, "l1_loss");
  });
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const Tensor& weight,
                                        const std::string& reduction, const Tensor& pos_weight) {
  if (autocast::active()) [[unlikely]]
    return autocast::run(
        autocast::Policy::Fp32, autocast::Policy::Fp32, "binary_cross_entropy_with_logits",
        [&](const Tensor& i, const Tensor& t, const Tensor& w, const Tensor& pw) {
          return binary_cross_entropy_with_logits(i, t, w, reduction, pw);
        },
        input, target, weight, pos_weight);
  return wick::detail::as_op("binary_cross_entropy_with_logits", [&]() -> Tensor {
    wick::detail::check_defined(input, "binary_cross_entropy_with_logits", "self");
    wick::detail::check_defined(target, "binary_cross_entropy_with_logits", "target");
    check_same_sizes(input, target, "binary_cross_entropy_with_logits");
    // PyTorch takes log_sigmoid of the input and multiplies it into (1 - target) in place: an
    // integer or bool input or target raises.
    WICK_CHECK(is_floating_point(input.dtype()), TypeError, "binary_cross_entropy_with_logits",
               "\"log_sigmoid_forward\" not implemented for '", input.dtype(), "'");
    WICK_CHECK(is_floating_point(target.dtype()), TypeError, "binary_cross_entropy_with_logits",
               "result type ", input.dtype(), " can't be cast to the desired output type ", target.dtype());
    return wick::detail::binary_cross_entropy_with_logits(
        input, target, weight, pos_weight,
        wick::detail::loss_reduction(reduction, "binary_cross_entropy_with_logits"));
  });
}

}  // namespace wick::nn::functional
