// The activations beyond relu, sigmoid, tanh, gelu and silu: each computes its values from
// other ops once (no grad recorded inside) and records one node named as PyTorch's, whose
// formula is the derivative at the input (autograd/elementwise_node.h).
#include <cmath>
#include <optional>

#include "autograd/elementwise_node.h"
#include "autograd/hooks.h"
#include "core/as_op.h"
#include "core/checks.h"
#include "core/tensor_ops.h"
#include "nn/repr.h"
#include "wick/autograd.h"
#include "wick/nn/activation.h"
#include "wick/nn/functional.h"
#include "wick/nn/init.h"
#include "wick/ops.h"

namespace wick::nn {

namespace functional {

namespace {

using Derivative = std::function<Tensor(const Tensor&)>;

void check_floating(const Tensor& x, const char* op) {
  wick::detail::check_defined(x, op, "self");
  WICK_CHECK(x.is_floating_point(), TypeError, op, "\"", op, "\" not implemented for '", x.dtype(), "'");
}

// y = values(x), computed once; with grad, one node name with formula grad * derivative(x).
template <class Values>
Tensor elementwise(const char* op, const char* node, const Tensor& x, Values values, Derivative derivative) {
  check_floating(x, op);
  const bool grad = wick::detail::needs_grad(x);
  Tensor y;
  {
    std::optional<NoGradGuard> off;
    if (grad) off.emplace();
    y = wick::detail::as_op(op, [&] { return values(x); });
  }
  if (grad) [[unlikely]] autograd::record_elementwise(node, x, y, std::move(derivative));
  return y;
}

// log(1 + t) for t >= 0, accurate for small t where 1 + t rounds.
Tensor log1p_nonneg(const Tensor& t) { return wick::where(t < 1e-5, t * (1 - t * 0.5), (t + 1).log()); }

// The elu family: scale x where x > 0, else scale alpha (exp(x input_scale) - 1).
Tensor elu_family(const char* op, const char* node, const Tensor& x, double alpha, double scale,
                  double input_scale) {
  return elementwise(
      op, node, x,
      [=](const Tensor& v) { return wick::where(v > 0, v * scale, ((v * input_scale).expm1()) * (alpha * scale)); },
      [=](const Tensor& v) {
        return wick::where(v > 0, wick::full_like(v, scale), (v * input_scale).exp() * (alpha * scale * input_scale));
      });
}

constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
constexpr double kSeluScale = 1.0507009873554804934193349852946;

}  // namespace

Tensor elu(const Tensor& x, double alpha) { return elu_family("elu", "EluBackward0", x, alpha, 1.0, 1.0); }
Tensor selu(const Tensor& x) { return elu_family("selu", "EluBackward0", x, kSeluAlpha, kSeluScale, 1.0); }
Tensor celu(const Tensor& x, double alpha) {
  WICK_CHECK(alpha != 0, ValueError, "celu", "ZeroDivisionError");
  return elu_family("celu", "CeluBackward0", x, alpha, 1.0, 1.0 / alpha);
}

Tensor softplus(const Tensor& x, double beta, double threshold) {
  return elementwise(
      "softplus", "SoftplusBackward0", x,
      [=](const Tensor& v) {
        Tensor z = v * beta;
        // max(z, 0) + log(1 + exp(-|z|)): no overflow for large z
        Tensor soft = (z.clamp_min(0) + log1p_nonneg((-z.abs()).exp())) / beta;
        return wick::where(z > threshold, v, soft);
      },
      [=](const Tensor& v) {
        Tensor z = v * beta;
        return wick::where(z > threshold, wick::ones_like(v), z.sigmoid());
      });
}

Tensor hardtanh(const Tensor& x, double min_val, double max_val) {
  WICK_CHECK(min_val <= max_val, ValueError, "hardtanh", "min_val cannot be greater than max_val");
  return elementwise(
      "hardtanh", "HardtanhBackward0", x, [=](const Tensor& v) { return v.clamp(min_val, max_val); },
      [=](const Tensor& v) { return (v > min_val).to(v.dtype()) * (v < max_val).to(v.dtype()); });
}

Tensor relu6(const Tensor& x) {
  return elementwise(
      "relu6", "HardtanhBackward0", x, [](const Tensor& v) { return v.clamp(0.0, 6.0); },
      [](const Tensor& v) { return (v > 0).to(v.dtype()) * (v < 6).to(v.dtype()); });
}

Tensor mish(const Tensor& x) {
  auto sp = [](const Tensor& v) { return v.clamp_min(0) + log1p_nonneg((-v.abs()).exp()); };
  return elementwise(
      "mish", "MishBackward0", x, [=](const Tensor& v) { return v * sp(v).tanh(); },
      [=](const Tensor& v) {
        Tensor t = sp(v).tanh();
        return t + v * v.sigmoid() * (1 - t * t);
      });
}

Tensor hardswish(const Tensor& x) {
  return elementwise(
      "hardswish", "HardswishBackward0", x, [](const Tensor& v) { return v * (v + 3).clamp(0.0, 6.0) / 6; },
      [](const Tensor& v) {
        return wick::where(v < -3, wick::zeros_like(v), wick::where(v <= 3, v / 3 + 0.5, wick::ones_like(v)));
      });
}

Tensor hardsigmoid(const Tensor& x) {
  return elementwise(
      "hardsigmoid", "HardsigmoidBackward0", x, [](const Tensor& v) { return (v + 3).clamp(0.0, 6.0) / 6; },
      [](const Tensor& v) { return (v > -3).to(v.dtype()) * (v < 3).to(v.dtype()) / 6; });
}

Tensor logsigmoid(const Tensor& x) {
  return elementwise(
      "logsigmoid", "LogSigmoidBackward0", x,
      [](const Tensor& v) { return v.clamp_max(0) - log1p_nonneg((-v.abs()).exp()); },
      [](const Tensor& v) { return (-v).sigmoid(); });
}

Tensor softsign(const Tensor& x) {
  check_floating(x, "softsign");
  return x / (x.abs() + 1);  // PyTorch's is composite too
}

Tensor tanhshrink(const Tensor& x) {
  check_floating(x, "tanhshrink");
  return x - x.tanh();  // PyTorch's is composite too
}

Tensor threshold(const Tensor& x, double threshold, double value) {
  return elementwise(
      "threshold", "ThresholdBackward0", x,
      [=](const Tensor& v) { return wick::where(v > threshold, v, wick::full_like(v, value)); },
      [=](const Tensor& v) { return (v > threshold).to(v.dtype()); });
}

Tensor prelu(const Tensor& x, const Tensor& weight) {
  check_floating(x, "prelu");
  wick::detail::check_defined(weight, "prelu", "weight");
  WICK_CHECK(weight.dim() <= 1, ValueError, "prelu", "prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = ",
             weight.dim());
  const int64_t n = weight.numel();
  WICK_CHECK(n == 1 || (x.dim() >= 2 && x.size(1) == n), ValueError, "prelu",
             "Mismatch of parameter numbers and input channel size. Found parameter numbers = ", n,
             " and channel size = ", x.dim() >= 2 ? x.size(1) : 1, ".");
  // weight along dim 1 (or one value for all)
  Tensor w = weight.reshape({-1});
  if (n > 1) {
    DimVector shape(size_t(x.dim()), 1);
    shape[1] = n;
    w = w.reshape(shape);
  } else {
    w = w.reshape({});
  }
  const bool grad = wick::detail::needs_grad(x, w);
  Tensor y;
  {
    std::optional<NoGradGuard> off;
    if (grad) off.emplace();
    y = wick::detail::as_op("prelu", [&] { return wick::where(x > 0, x, x * w); });
  }
  if (grad) [[unlikely]] autograd::record_prelu(x, w, y);
  return y;
}

}  // namespace functional

namespace F = functional;
using detail::py_float;

Tensor ELUImpl::forward(const Tensor& x) { return F::elu(x, options.alpha()); }
std::string ELUImpl::extra_repr() const {
  return "alpha=" + py_float(options.alpha()) + (options.inplace() ? ", inplace=True" : "");
}
Tensor SELUImpl::forward(const Tensor& x) { return F::selu(x); }
std::string SELUImpl::extra_repr() const { return options.inplace() ? "inplace=True" : ""; }
Tensor CELUImpl::forward(const Tensor& x) { return F::celu(x, options.alpha()); }
std::string CELUImpl::extra_repr() const {
  return "alpha=" + py_float(options.alpha()) + (options.inplace() ? ", inplace=True" : "");
}
Tensor SoftplusImpl::forward(const Tensor& x) { return F::softplus(x, options.beta(), options.threshold()); }
std::string SoftplusImpl::extra_repr() const {
  return "beta=" + py_float(options.beta()) + ", threshold=" + py_float(options.threshold());
}
HardtanhImpl::HardtanhImpl(const HardtanhOptions& options) : options(options) {
  WICK_CHECK(options.max_val() > options.min_val(), ValueError, "Hardtanh",
             "max_val must be greater than min_val");
}
Tensor HardtanhImpl::forward(const Tensor& x) { return F::hardtanh(x, options.min_val(), options.max_val()); }
std::string HardtanhImpl::extra_repr() const {
  return "min_val=" + py_float(options.min_val()) + ", max_val=" + py_float(options.max_val()) +
         (options.inplace() ? ", inplace=True" : "");
}
Tensor ReLU6Impl::forward(const Tensor& x) { return F::relu6(x); }
std::string ReLU6Impl::extra_repr() const { return options.inplace() ? "inplace=True" : ""; }
PReLUImpl::PReLUImpl(const PReLUOptions& options) : options(options) {
  WICK_CHECK(options.num_parameters() > 0, ValueError, "PReLU", "num_parameters must be positive, got ",
             options.num_parameters());
  weight = register_parameter("weight", wick::empty({options.num_parameters()}));
  reset_parameters();
}
void PReLUImpl::reset_parameters() {
  NoGradGuard no_grad;
  weight.fill_(options.init());
}
Tensor PReLUImpl::forward(const Tensor& x) { return F::prelu(x, weight); }
std::string PReLUImpl::extra_repr() const { return "num_parameters=" + std::to_string(options.num_parameters()); }
Tensor ThresholdImpl::forward(const Tensor& x) { return F::threshold(x, options.threshold(), options.value()); }
std::string ThresholdImpl::extra_repr() const {
  return "threshold=" + py_float(options.threshold()) + ", value=" + py_float(options.value()) +
         (options.inplace() ? ", inplace=True" : "");
}
Tensor MishImpl::forward(const Tensor& x) { return F::mish(x); }
Tensor HardswishImpl::forward(const Tensor& x) { return F::hardswish(x); }
Tensor HardsigmoidImpl::forward(const Tensor& x) { return F::hardsigmoid(x); }
Tensor LogSigmoidImpl::forward(const Tensor& x) { return F::logsigmoid(x); }
Tensor SoftsignImpl::forward(const Tensor& x) { return F::softsign(x); }
Tensor TanhshrinkImpl::forward(const Tensor& x) { return F::tanhshrink(x); }

}  // namespace wick::nn
