// Backward formulas of the elementwise math ops: the unary family (one switch arm per op) and
// the tensor forms of pow, remainder, fmod, the rounding divisions and clamp. Formulas that are cheaper in terms of the
// result (exp, tanh, sigmoid, sqrt, relu) save the output instead of the input.
#include <cmath>
#include <numbers>
#include <optional>
#include <string_view>

#include "autograd/function.h"
#include "autograd/hooks.h"
#include "core/kernel_table.h"
#include "core/loss.h"
#include "wick/ops.h"

namespace wick::autograd {

using wick::detail::PointwiseOp;
using wick::detail::UnaryOp;

namespace {

Tensor zeros_where(const Tensor& mask, const Tensor& g) { return wick::where(mask, wick::zeros_like(g), g); }

// The node of a simple op (form Methods or Function in the op list): NameBackward0.
constexpr const char* node_name(UnaryOp op) {
  switch (op) {
#define WICK_X(Name, ...) \
  case UnaryOp::Name: return #Name "Backward0";
    WICK_UNARY_OPS(WICK_X)
#undef WICK_X
  }
  return "";
}

// A node of one input whose formula reads one saved tensor s (the input or the result).
template <class F>
void record_one(UnaryOp op, const Tensor& self, const Tensor& out, const Tensor& s, F&& f) {
  record(node_name(op), {self}, out, {s},
         [f](BackwardContext& c) -> variable_list { return {f(c.grad(), c.saved(0))}; });
}


void record_clamp(const Tensor& t, const Tensor& out, const Scalar* min, const Scalar* max, const char* name) {
  const std::string_view called = name ? name : "clamp";
  std::optional<Scalar> lo, hi;
  if (min) lo = *min;
  if (max) hi = *max;
  const char* node = called == "clamp_min" ? "ClampMinBackward0"
                     : called == "clamp_max" ? "ClampMaxBackward0"
                                             : "ClampBackward1";
  record(node, {t}, out, {t}, [lo, hi](BackwardContext& c) -> variable_list {
    Tensor x = c.saved(0), g = c.grad();
    if (lo) g = zeros_where(x < *lo, g);
    if (hi) g = zeros_where(x > *hi, g);
    return {g};
  });
}

// floor_divide: PyTorch has no derivative for it, so its node raises when backward reaches it.
variable_list floor_divide_backward(BackwardContext&) {
  wick::detail::raise<NotImplementedError>("floor_divide", "derivative for floor_divide is not implemented");
}

}  // namespace

Tensor gelu_backward(const Tensor& g, const Tensor& x, bool tanh_form) {
  // One kernel (g and x read once); the composite below only where the backward is itself
  // recorded (double backward). Composed of a dozen elementwise ops, GELU's backward was the
  // largest cost of GPT-2's step after the GEMMs (docs/performance.md).
  if (!creating_graph())
    return wick::detail::loss_pointwise(
        tanh_form ? wick::detail::PointwiseOp::GeluTanhBackward : wick::detail::PointwiseOp::GeluBackward, {g, x},
        "gelu_backward");
  if (tanh_form) {
    // y = x/2 (1 + tanh(u)), u = k (x + 0.044715 x^3): y' = (1 + th)/2 + x/2 (1 - th^2) u'.
    const double k = std::sqrt(2.0 / std::numbers::pi), a = 0.044715;
    Tensor x2 = x * x;
    Tensor th = wick::tanh((x + x2 * x * a) * k);
    Tensor du = (x2 * (3 * a) + 1.0) * k;
    return g * ((th + 1.0) * 0.5 + x * 0.5 * (1.0 - th * th) * du);
  }
  // y = x Phi(x): y' = Phi(x) + x phi(x), Phi(x) = (1 + erf(x / sqrt 2)) / 2.
  Tensor cdf = (wick::erf(x * (1.0 / std::numbers::sqrt2)) + 1.0) * 0.5;
  Tensor pdf = wick::exp(x * x * -0.5) * (1.0 / std::sqrt(2.0 * std::numbers::pi));
  return g * (cdf + x * pdf);
}

void record_unary(UnaryOp op, const Tensor& self, const Tensor& out, const Scalar* a, const Scalar* b,
                  const char* name) {
  using T = const Tensor&;
  switch (op) {
    case UnaryOp::Neg:
      record("NegBackward0", {self}, out, {}, [](BackwardContext& c) -> variable_list { return {-c.grad()}; });
      return;
    case UnaryOp::Abs: return record_one(op, self, out, self, [](T g, T x) { return g * wick::sign(x); });
    case UnaryOp::Sign:
    case UnaryOp::Floor:
    case UnaryOp::Ceil:
    case UnaryOp::Round:
    case UnaryOp::Trunc:  // piecewise constant: zero almost everywhere, as PyTorch's
      record(node_name(op), {self}, out, {}, [](BackwardContext& c) -> variable_list {
        return {wick::zeros_like(c.grad())};
      });
      return;
    case UnaryOp::Frac:
      record(node_name(op), {self}, out, {}, [](BackwardContext& c) -> variable_list { return {c.grad()}; });
      return;
    case UnaryOp::Log2:
      return record_one(op, self, out, self, [](T g, T x) { return g / (x * std::numbers::ln2); });
    case UnaryOp::Log10:
      return record_one(op, self, out, self, [](T g, T x) { return g / (x * std::numbers::ln10); });
    case UnaryOp::Log1P: return record_one(op, self, out, self, [](T g, T x) { return g / (x + 1.0); });
    case UnaryOp::Reciprocal: return record_one(op, self, out, out, [](T g, T y) { return -g * y * y; });
    case UnaryOp::Exp: return record_one(op, self, out, out, [](T g, T y) { return g * y; });
    case UnaryOp::Expm1: return record_one(op, self, out, out, [](T g, T y) { return g * (y + 1.0); });
    case UnaryOp::Log: return record_one(op, self, out, self, [](T g, T x) { return g / x; });
    case UnaryOp::Sqrt: return record_one(op, self, out, out, [](T g, T y) { return g / (y * 2); });
    case UnaryOp::Rsqrt: return record_one(op, self, out, out, [](T g, T y) { return g * y * y * y * -0.5; });
    case UnaryOp::Sin: return record_one(op, self, out, self, [](T g, T x) { return g * wick::cos(x); });
    case UnaryOp::Cos: return record_one(op, self, out, self, [](T g, T x) { return -g * wick::sin(x); });
    case UnaryOp::Tanh: return record_one(op, self, out, out, [](T g, T y) { return g * (1.0 - y * y); });
    case UnaryOp::Tan: return record_one(op, self, out, out, [](T g, T y) { return g * (y * y + 1.0); });
    case UnaryOp::Asin: return record_one(op, self, out, self, [](T g, T x) { return g / wick::sqrt(1.0 - x * x); });
    case UnaryOp::Acos: return record_one(op, self, out, self, [](T g, T x) { return -g / wick::sqrt(1.0 - x * x); });
    case UnaryOp::Atan: return record_one(op, self, out, self, [](T g, T x) { return g / (x * x + 1.0); });
    case UnaryOp::Sinh: return record_one(op, self, out, self, [](T g, T x) { return g * wick::cosh(x); });
    case UnaryOp::Cosh: return record_one(op, self, out, self, [](T g, T x) { return g * wick::sinh(x); });
    case UnaryOp::Asinh: return record_one(op, self, out, self, [](T g, T x) { return g * wick::rsqrt(x * x + 1.0); });
    case UnaryOp::Acosh: return record_one(op, self, out, self, [](T g, T x) { return g * wick::rsqrt(x * x - 1.0); });
    case UnaryOp::Atanh: return record_one(op, self, out, self, [](T g, T x) { return g / (1.0 - x * x); });
    case UnaryOp::Erfinv:  // d erfinv(x) / dx = (sqrt(pi) / 2) exp(erfinv(x)^2)
      return record_one(op, self, out, out, [](T g, T y) {
        return g * wick::exp(y * y) * (std::sqrt(std::numbers::pi) / 2.0);
      });
    case UnaryOp::Erf:
      return record_one(op, self, out, self, [](T g, T x) {
        return g * wick::exp(-(x * x)) * (2.0 / std::sqrt(std::numbers::pi));
      });
    case UnaryOp::Sigmoid: return record_one(op, self, out, out, [](T g, T y) { return g * y * (1.0 - y); });
    case UnaryOp::Relu:
      return record_one(op, self, out, out, [](T g, T y) {
        // the fused kernel, or (recording) g times the 0/1 mask, whose own derivative is itself
        return creating_graph() ? g * (y > 0).to(g.dtype()) : wick::detail::threshold_backward(g, y);
      });
    case UnaryOp::Silu:
      return record_one(op, self, out, self, [](T g, T x) {
        Tensor s = wick::sigmoid(x);
        return g * s * (x * (1.0 - s) + 1.0);
      });
    case UnaryOp::Gelu:
    case UnaryOp::GeluTanh:
      record("GeluBackward0", {self}, out, {self},
             [tanh_form = op == UnaryOp::GeluTanh](BackwardContext& c) -> variable_list {
               return {gelu_backward(c.grad(), c.saved(0), tanh_form)};
             });
      return;
    case UnaryOp::Pow:
      record("PowBackward0", {self}, out, {self}, [e = *a](BackwardContext& c) -> variable_list {
        const double p = e.to<double>();
        if (p == 0) return {wick::zeros_like(c.grad())};
        return {c.grad() * wick::pow(c.saved(0), p - 1) * p};
      });
      return;
    case UnaryOp::RPow:
      record("PowBackward2", {self}, out, {out}, [base = *a](BackwardContext& c) -> variable_list {
        const double b = base.to<double>();
        if (b == 0) return {wick::zeros_like(c.grad())};
        return {c.grad() * c.saved(0) * std::log(b)};
      });
      return;
    case UnaryOp::Remainder:
      record("RemainderBackward0", {self}, out, {}, [](BackwardContext& c) -> variable_list { return {c.grad()}; });
      return;
    case UnaryOp::Fmod:  // d/dself = 1; the scalar divisor has no gradient
      record("FmodBackward0", {self}, out, {}, [](BackwardContext& c) -> variable_list { return {c.grad()}; });
      return;
    case UnaryOp::DivTrunc:
    case UnaryOp::DivFloor:
      return record_zero_gradients("DivBackward3", {self}, out);  // piecewise constant
    case UnaryOp::FloorDivide: record("NotImplemented", {self}, out, {}, floor_divide_backward); return;
    case UnaryOp::Lgamma: return record_one(op, self, out, self, [](T g, T x) { return g * wick::digamma(x); });
    case UnaryOp::Digamma:
      return record_one(op, self, out, self, [](T g, T x) { return g * wick::polygamma(1, x); });
    case UnaryOp::Polygamma:
      record("PolygammaBackward0", {self}, out, {self}, [n = a->to<int64_t>()](BackwardContext& c) -> variable_list {
        return {c.grad() * wick::polygamma(n + 1, c.saved(0))};
      });
      return;
    case UnaryOp::Clamp: return record_clamp(self, out, a, b, name);
  }
}

void record_maximum(const Tensor& a, const Tensor& b, const Tensor& out, bool is_max) {
  record(is_max ? "MaximumBackward0" : "MinimumBackward0", {a, b}, out, {a, b},
         [is_max](BackwardContext& c) -> variable_list {
           // Each operand's gradient where it was taken, half of it where a == b (PyTorch's).
           Tensor a = c.saved(0), b = c.saved(1), g = c.grad();
           Tensor split = wick::where(a == b, g / 2, g), zero = wick::zeros_like(split);
           variable_list r(2);
           if (c.needs(0)) r[0] = wick::where(is_max ? a < b : a > b, zero, split);
           if (c.needs(1)) r[1] = wick::where(is_max ? a > b : a < b, zero, split);
           return r;
         });
}

void record_pointwise(PointwiseOp op, const Tensor& x, const Tensor& y, const Tensor& z, const Tensor& out) {
  switch (op) {
    case PointwiseOp::Pow:  // x ** y
      record("PowBackward1", {x, y}, out, {x, y, y.requires_grad() ? out : Tensor()},
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
      return;
    case PointwiseOp::Remainder:  // x mod y
      record("RemainderBackward1", {x, y}, out, {x, y, out}, [](BackwardContext& c) -> variable_list {
        variable_list r(2);
        if (c.needs(0)) r[0] = c.grad();
        // remainder = a - floor(a / b) b, so d/db = -floor(a / b) = -(a - remainder) / b.
        if (c.needs(1)) r[1] = -c.grad() * (c.saved(0) - c.saved(2)) / c.saved(1);
        return r;
      });
      return;
    case PointwiseOp::Fmod:  // fmod = x - trunc(x / y) y: d/dx = 1, d/dy = -trunc(x / y)
      record("FmodBackward1", {x, y}, out, {x, y}, [](BackwardContext& c) -> variable_list {
        variable_list r(2);
        if (c.needs(0)) r[0] = c.grad();
        if (c.needs(1)) r[1] = -c.grad() * wick::div(c.saved(0), c.saved(1), "trunc");
        return r;
      });
      return;
    case PointwiseOp::DivTrunc:
    case PointwiseOp::DivFloor:
      return record_zero_gradients("DivBackward2", {x, y}, out);  // piecewise constant
    case PointwiseOp::FloorDivide: record("NotImplemented", {x, y}, out, {}, floor_divide_backward); return;
    case PointwiseOp::Atan2:  // atan2(y, x): d/dy = x / (x^2 + y^2), d/dx = -y / (x^2 + y^2)
      record("Atan2Backward0", {x, y}, out, {x, y}, [](BackwardContext& c) -> variable_list {
        variable_list r(2);
        Tensor yv = c.saved(0), xv = c.saved(1);
        Tensor scaled = c.grad() / (xv * xv + yv * yv);
        if (c.needs(0)) r[0] = scaled * xv;
        if (c.needs(1)) r[1] = -scaled * yv;
        return r;
      });
      return;
    case PointwiseOp::ClampMin:
    case PointwiseOp::ClampMax:
    case PointwiseOp::Clamp: {
      const Tensor& lo = op == PointwiseOp::ClampMax ? Tensor() : y;
      const Tensor& hi = op == PointwiseOp::ClampMin ? Tensor() : op == PointwiseOp::ClampMax ? y : z;
      record("ClampBackward0", {x, lo, hi}, out, {x, lo, hi}, [](BackwardContext& c) -> variable_list {
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
      return;
    }
    default: return;  // the loss pieces record through their losses' nodes
  }
}

}  // namespace wick::autograd
