// leaky_relu, dropout2d, smooth_l1_loss (composites of differentiable ops: their pieces record)
// and binary_cross_entropy (its forward composed under forward_once, recorded as PyTorch's one
// BinaryCrossEntropyBackward0, whose formula stays finite where input is 0 or 1).
#include "autograd/hooks.h"
#include "core/as_op.h"
#include "core/checks.h"
#include "core/loss.h"
#include "wick/nn/functional.h"
#include "wick/ops.h"
#include "wick/random.h"

namespace wick::nn::functional {

using wick::detail::as_op;
using wick::detail::LossReduction;

Tensor leaky_relu(const Tensor& x, double negative_slope) {
  wick::detail::check_defined(x, "leaky_relu", "self");
  // PyTorch's leaky_relu is for floating inputs; its gradient at 0 is negative_slope.
  WICK_CHECK(x.is_floating_point(), TypeError, "leaky_relu", "\"leaky_relu_cpu\" not implemented for '", x.dtype(),
             "'");
  return wick::where(x > 0, x, x * negative_slope);
}

Tensor dropout2d(const Tensor& x, double p, bool training) {
  wick::detail::check_defined(x, "dropout2d", "self");
  WICK_CHECK(p >= 0 && p <= 1, ValueError, "dropout2d", "dropout probability has to be between 0 and 1, but got ",
             p);
  WICK_CHECK(x.dim() >= 2, ValueError, "dropout2d", "Feature dropout requires at least 2 dimensions in the input");
  if (!training || p == 0) return x;
  WICK_CHECK(x.is_floating_point(), TypeError, "dropout2d", "result type ", get_default_dtype(),
             " can't be cast to the desired output type ", x.dtype());
  if (p == 1) return x * 0;
  // One draw per (sample, channel), broadcast over the remaining dims.
  DimVector shape(size_t(x.dim()), 1);
  shape[0] = x.size(0);
  shape[1] = x.size(1);
  Tensor keep = (wick::rand(shape, TensorOptions(x.dtype()).device(x.device())) >= p).to(x.dtype());
  return x * (keep * (1.0 / (1.0 - p)));
}

namespace {
Tensor reduced(const Tensor& loss, LossReduction r) {
  if (r == LossReduction::Mean) return loss.mean();
  if (r == LossReduction::Sum) return loss.sum();
  return loss;
}
}  // namespace

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight,
                            const std::string& reduction) {
  constexpr const char* op = "binary_cross_entropy";
  wick::detail::check_defined(input, op, "self");
  wick::detail::check_defined(target, op, "target");
  WICK_CHECK(input.sizes().equals(target.sizes()), ValueError, op, "Using a target size (", target.sizes(),
             ") that is different to the input size (", input.sizes(), ") is deprecated. Please ensure they have the same size.");
  WICK_CHECK(input.is_floating_point(), TypeError, op, "\"binary_cross_entropy\" not implemented for '",
             input.dtype(), "'");
  WICK_CHECK(target.dtype() == input.dtype(), TypeError, op, "expected target of the input's dtype ",
             input.dtype(), ", got ", target.dtype());
  if (weight.defined()) {
    WICK_CHECK(weight.dtype() == input.dtype(), TypeError, op, "expected weight of the input's dtype ",
               input.dtype(), ", got ", weight.dtype());
    const DimVector shape = wick::detail::broadcast_shapes(input.sizes(), weight.sizes(), op);
    WICK_CHECK(IntArrayRef(shape).equals(input.sizes()), ValueError, op, "the weight of shape ", weight.sizes(),
               " does not broadcast to the input's shape ", input.sizes());
  }
  const LossReduction r = wick::detail::loss_reduction(reduction, op);
  const bool grad = wick::detail::needs_grad(input, target, weight);
  Tensor out = wick::detail::forward_once(grad, [&] {
    return as_op(op, [&] {
      Tensor loss = -(target * input.log().clamp_min(-100.0) + (1.0 - target) * (1.0 - input).log().clamp_min(-100.0));
      if (weight.defined()) loss = loss * weight;
      return reduced(loss, r);
    });
  });
  if (grad) [[unlikely]] wick::autograd::record_binary_cross_entropy(input, target, weight, out, r);
  return out;
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction, double beta) {
  constexpr const char* op = "smooth_l1_loss";
  wick::detail::check_defined(input, op, "self");
  wick::detail::check_defined(target, op, "target");
  WICK_CHECK(beta >= 0, ValueError, op, "smooth_l1_loss does not support negative values for beta.");
  const LossReduction r = wick::detail::loss_reduction(reduction, op);
  // beta = 0 is l1_loss, as PyTorch (the quadratic branch would divide by zero).
  if (beta == 0) return as_op(op, [&] { return l1_loss(input, target, reduction); });
  return as_op(op, [&] {
    Tensor d = (input - target).abs();
    return reduced(wick::where(d < beta, d * d * (0.5 / beta), d - 0.5 * beta), r);
  });
}

}  // namespace wick::nn::functional
