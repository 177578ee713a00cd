// Backward formulas of the elementwise math ops. Formulas that are cheaper in terms of the
// result (exp, tanh, sigmoid, sqrt, relu) save the output instead of the input.
#include <cmath>
#include <numbers>

#include "autograd/function.h"
#include "autograd/hooks.h"
#include "core/loss.h"
#include "wick/ops.h"

namespace wick::autograd {

namespace {

// 1 where t > 0, -1 where t < 0, 0 elsewhere, in t's dtype.
Tensor sign(const Tensor& t) { return (t > 0).to(t.dtype()) - (t < 0).to(t.dtype()); }
Tensor zeros_where(const Tensor& mask, const Tensor& g) { return wick::where(mask, wick::zeros_like(g), g); }

}  // namespace

Tensor neg(const Tensor& t) {
  Tensor out = forward([&] { return wick::neg(t); });
  return record("NegBackward0", {t}, out, {},
                [](BackwardContext& c) -> variable_list { return {-c.grad()}; });
}

Tensor abs(const Tensor& t) {
  Tensor out = forward([&] { return wick::abs(t); });
  return record("AbsBackward0", {t}, out, {t},
                [](BackwardContext& c) -> variable_list { return {c.grad() * sign(c.saved(0))}; });
}

Tensor exp(const Tensor& t) {
  Tensor out = forward([&] { return wick::exp(t); });
  return record("ExpBackward0", {t}, out, {out},
                [](BackwardContext& c) -> variable_list { return {c.grad() * c.saved(0)}; });
}

Tensor log(const Tensor& t) {
  Tensor out = forward([&] { return wick::log(t); });
  return record("LogBackward0", {t}, out, {t},
                [](BackwardContext& c) -> variable_list { return {c.grad() / c.saved(0)}; });
}

Tensor sqrt(const Tensor& t) {
  Tensor out = forward([&] { return wick::sqrt(t); });
  return record("SqrtBackward0", {t}, out, {out},
                [](BackwardContext& c) -> variable_list { return {c.grad() / (c.saved(0) * 2)}; });
}

Tensor rsqrt(const Tensor& t) {
  Tensor out = forward([&] { return wick::rsqrt(t); });
  return record("RsqrtBackward0", {t}, out, {out}, [](BackwardContext& c) -> variable_list {
    Tensor y = c.saved(0);
    return {c.grad() * y * y * y * -0.5};
  });
}

Tensor expm1(const Tensor& t) {
  Tensor out = forward([&] { return wick::expm1(t); });
  return record("Expm1Backward0", {t}, out, {out},
                [](BackwardContext& c) -> variable_list { return {c.grad() * (c.saved(0) + 1.0)}; });
}

Tensor sin(const Tensor& t) {
  Tensor out = forward([&] { return wick::sin(t); });
  return record("SinBackward0", {t}, out, {t},
                [](BackwardContext& c) -> variable_list { return {c.grad() * wick::cos(c.saved(0))}; });
}

Tensor cos(const Tensor& t) {
  Tensor out = forward([&] { return wick::cos(t); });
  return record("CosBackward0", {t}, out, {t},
                [](BackwardContext& c) -> variable_list { return {-c.grad() * wick::sin(c.saved(0))}; });
}

Tensor tanh(const Tensor& t) {
  Tensor out = forward([&] { return wick::tanh(t); });
  return record("TanhBackward0", {t}, out, {out}, [](BackwardContext& c) -> variable_list {
    Tensor y = c.saved(0);
    return {c.grad() * (1.0 - y * y)};
  });
}

Tensor sigmoid(const Tensor& t) {
  Tensor out = forward([&] { return wick::sigmoid(t); });
  return record("SigmoidBackward0", {t}, out, {out}, [](BackwardContext& c) -> variable_list {
    Tensor y = c.saved(0);
    return {c.grad() * y * (1.0 - y)};
  });
}

Tensor relu(const Tensor& t) {
  Tensor out = forward([&] { return wick::relu(t); });
  return record("ReluBackward0", {t}, out, {out}, [](BackwardContext& c) -> variable_list {
    return {wick::detail::threshold_backward(c.grad(), c.saved(0))};
  });
}

Tensor gelu(const Tensor& t, std::string_view approximate) {
  Tensor out = forward([&] { return wick::gelu(t, approximate); });
  const bool tanh_form = approximate == "tanh";
  return record("GeluBackward0", {t}, out, {t}, [tanh_form](BackwardContext& c) -> variable_list {
    Tensor x = c.saved(0);
    if (tanh_form) {
      // y = x/2 (1 + tanh(u)), u = k (x + 0.044715 x^3): y' = (1 + th)/2 + x/2 (1 - th^2) u'.
      const double k = std::sqrt(2.0 / std::numbers::pi), a = 0.044715;
      Tensor x2 = x * x;
      Tensor th = wick::tanh((x + x2 * x * a) * k);
      Tensor du = (x2 * (3 * a) + 1.0) * k;
      return {c.grad() * ((th + 1.0) * 0.5 + x * 0.5 * (1.0 - th * th) * du)};
    }
    // y = x Phi(x): y' = Phi(x) + x phi(x). Phi comes from the erf form evaluated by gelu
    // itself (there is no erf op): Phi(x) = gelu(x) / x, and 1/2 at 0.
    Tensor y = wick::gelu(x);
    Tensor cdf = wick::where(x == 0, wick::full_like(x, 0.5), y / x);
    Tensor pdf = wick::exp(x * x * -0.5) * (1.0 / std::sqrt(2.0 * std::numbers::pi));
    return {c.grad() * (cdf + x * pdf)};
  });
}

Tensor silu(const Tensor& t) {
  Tensor out = forward([&] { return wick::silu(t); });
  return record("SiluBackward0", {t}, out, {t}, [](BackwardContext& c) -> variable_list {
    Tensor x = c.saved(0);
    Tensor s = wick::sigmoid(x);
    return {c.grad() * s * (x * (1.0 - s) + 1.0)};
  });
}

Tensor pow(const Tensor& t, const Scalar& e) {
  Tensor out = forward([&] { return wick::pow(t, e); });
  return record("PowBackward0", {t}, out, {t}, [e](BackwardContext& c) -> variable_list {
    const double p = e.to<double>();
    if (p == 0) return {wick::zeros_like(c.grad())};
    return {c.grad() * wick::pow(c.saved(0), p - 1) * p};
  });
}

Tensor pow(const Tensor& t, const Tensor& e) {
  Tensor out = forward([&] { return wick::pow(t, e); });
  return record("PowBackward1", {t, e}, out, {t, e, e.requires_grad() ? out : Tensor()},
                [](BackwardContext& c) -> variable_list {
                  variable_list r(2);
                  Tensor x = c.saved(0), p = c.saved(1);
                  if (c.needs(0)) r[0] = zeros_where(p == 0, c.grad() * p * wick::pow(x, p - 1.0));
                  // d x^p / dp = x^p log x, taken as 0 where x == 0 and p >= 0 (PyTorch's choice).
                  if (c.needs(1)) {
                    Tensor v = c.grad() * c.saved(2) * wick::log(x);
                    r[1] = wick::where(x == 0, zeros_where(p >= 0, v), v);
                  }
                  return r;
                });
}

Tensor pow(const Scalar& base, const Tensor& e) {
  Tensor out = forward([&] { return wick::pow(base, e); });
  return record("PowBackward2", {e}, out, {out}, [base](BackwardContext& c) -> variable_list {
    const double b = base.to<double>();
    if (b == 0) return {wick::zeros_like(c.grad())};
    return {c.grad() * c.saved(0) * std::log(b)};
  });
}

Tensor remainder(const Tensor& t, const Scalar& other) {
  Tensor out = forward([&] { return wick::remainder(t, other); });
  return record("RemainderBackward0", {t}, out, {},
                [](BackwardContext& c) -> variable_list { return {c.grad()}; });
}

Tensor remainder(const Tensor& t, const Tensor& other) {
  Tensor out = forward([&] { return wick::remainder(t, other); });
  return record("RemainderBackward1", {t, other}, out, {t, other, out},
                [](BackwardContext& c) -> variable_list {
                  variable_list r(2);
                  if (c.needs(0)) r[0] = c.grad();
                  // remainder = a - floor(a / b) b, so d/db = -floor(a / b) = -(a - remainder) / b.
                  if (c.needs(1)) r[1] = -c.grad() * (c.saved(0) - c.saved(2)) / c.saved(1);
                  return r;
                });
}

Tensor clamp(const Tensor& t, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  Tensor out = forward([&] { return wick::clamp(t, min, max); });
  return record("ClampBackward1", {t}, out, {t}, [min, max](BackwardContext& c) -> variable_list {
    Tensor x = c.saved(0), g = c.grad();
    if (min) g = zeros_where(x < *min, g);
    if (max) g = zeros_where(x > *max, g);
    return {g};
  });
}

Tensor clamp(const Tensor& t, const std::optional<Tensor>& min, const std::optional<Tensor>& max) {
  Tensor out = forward([&] { return wick::clamp(t, min, max); });
  Tensor lo = min ? *min : Tensor(), hi = max ? *max : Tensor();
  return record("ClampBackward0", {t, lo, hi}, out, {t, lo, hi}, [](BackwardContext& c) -> variable_list {
    // clamp = min(max(x, lo), hi): the result is hi where x > hi or lo > hi, else lo where
    // x < lo, else x; each gradient goes where its value was taken.
    Tensor x = c.saved(0), lo = c.saved(1), hi = c.saved(2), g = c.grad();
    Tensor no = wick::zeros_like(x, kBool), zero = wick::zeros_like(g);
    Tensor to_hi = hi.defined() ? x > hi : no;
    if (hi.defined() && lo.defined()) to_hi = wick::where(lo > hi, wick::ones_like(x, kBool), to_hi);
    Tensor to_lo = lo.defined() ? wick::where(to_hi, no, x < lo) : no;
    variable_list r(3);
    r[0] = wick::where(to_hi, zero, wick::where(to_lo, zero, g));
    if (c.needs(1)) r[1] = wick::where(to_lo, g, zero);
    if (c.needs(2)) r[2] = wick::where(to_hi, g, zero);
    return r;
  });
}

Tensor clamp_min(const Tensor& t, const Scalar& min) {
  Tensor out = forward([&] { return wick::clamp_min(t, min); });
  return record("ClampMinBackward0", {t}, out, {t}, [min](BackwardContext& c) -> variable_list {
    return {zeros_where(c.saved(0) < min, c.grad())};
  });
}

Tensor clamp_max(const Tensor& t, const Scalar& max) {
  Tensor out = forward([&] { return wick::clamp_max(t, max); });
  return record("ClampMaxBackward0", {t}, out, {t}, [max](BackwardContext& c) -> variable_list {
    return {zeros_where(c.saved(0) > max, c.grad())};
  });
}

Tensor clamp_min(const Tensor& t, const Tensor& min) { return autograd::clamp(t, min, std::nullopt); }
Tensor clamp_max(const Tensor& t, const Tensor& max) { return autograd::clamp(t, std::nullopt, max); }

}  // namespace wick::autograd
