// Elementwise math on the CPU: the unary family (neg ... reciprocal, lgamma, digamma, polygamma,
// and the scalar forms of pow, remainder, fmod, the rounding divisions and clamp) and the
// pointwise family (pow, remainder, fmod, the rounding divisions, clamp of tensors).
// Each op is a small functor run by map_loop; 16-bit floats compute in float and round once.
// Core has already promoted the operands (integer inputs of float ops arrive as float) and
// rejected the dtypes an op does not support, so integer instantiations only exist for ops
// that define them.
//
// -fno-trapping-math (here, before any include, so every function of the file agrees) lets
// GCC turn the value selects of exp_f32 and relu into SIMD blends; it only drops the
// guarantee that masked floating-point exceptions are raised in program order, which nothing
// in wick observes. Results, NaN and inf handling are unchanged.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "core/scalar_math.h"
#include "core/special_math.h"
#include "cpu/kernels.h"
#include "cpu/map_loop.h"
#include "cpu/vec_math.h"

namespace wick::detail::cpu {

namespace {

template <class T>
constexpr bool is_float_v = std::is_floating_point_v<opmath_t<T>>;

// The inverse of erf, in double whatever the dtype: Winitzki's closed-form estimate (relative
// error near 2e-3), then Newton steps, each of which squares the error. Above |y| = 0.5 the
// residual |y| - erf(x) is taken as erfc(x) - (1 - |y|), whose 1 - |y| is exact there, so that the steps
// stay accurate as |y| nears 1 where erf(x) - y would cancel. erfinv(+-1) = +-inf; |y| > 1 and
// NaN give NaN.
double erfinv_double(double y) {
  const double a = std::abs(y);
  if (!(a <= 1)) return std::numeric_limits<double>::quiet_NaN();
  if (a == 1) return std::copysign(std::numeric_limits<double>::infinity(), y);
  if (a == 0) return y;
  constexpr double k = 0.147, two_over_pi_k = 2 / (M_PI * k);
  const double l = std::log((1 - a) * (1 + a));
  const double b = two_over_pi_k + l / 2;
  double x = std::sqrt(std::sqrt(b * b - l / k) - b);
  const double slope = M_2_SQRTPI;  // d erf / dx = (2 / sqrt(pi)) exp(-x^2)
  for (int i = 0; i < 4; ++i) {
    const double r = a > 0.5 ? std::erfc(x) - (1 - a) : a - std::erf(x);  // a - erf(x) either way
    x += r / (slope * std::exp(-x * x));
  }
  return std::copysign(x, y);
}

// log|gamma(x)|: the C library's, in its reentrant form where there is one (lgamma writes the
// sign of gamma to a global, which the threads of a loop would share).
template <class T>
T lgamma_value(T x) {
#if defined(__GLIBC__)
  int sign;
  if constexpr (std::is_same_v<T, float>) return ::lgammaf_r(x, &sign);
  else return ::lgamma_r(x, &sign);
#else
  return std::lgamma(x);
#endif
}

template <class T, class F>
void unary_map(const TensorIter& it, F f) {
  using M = opmath_t<T>;
  map_loop<T, T>(it, [f](T a) { return T(f(M(a))); });
}

template <class T>
void unary_float(UnaryOp op, const TensorIter& it, const Scalar* a) {
  using M = opmath_t<T>;
  switch (op) {
    case UnaryOp::Exp:
      return unary_map<T>(it, [](M x) { return vexp(x); });
    case UnaryOp::Expm1:
      return unary_map<T>(it, [](M x) { return std::expm1(x); });
    case UnaryOp::Log:
      return unary_map<T>(it, [](M x) { return std::log(x); });
    case UnaryOp::Sqrt:
      return unary_map<T>(it, [](M x) { return std::sqrt(x); });
    case UnaryOp::Rsqrt:
      return unary_map<T>(it, [](M x) { return M(1) / std::sqrt(x); });
    case UnaryOp::Frac:
      return unary_map<T>(it, [](M x) { return x - std::trunc(x); });
    case UnaryOp::Log2:
      return unary_map<T>(it, [](M x) { return std::log2(x); });
    case UnaryOp::Log10:
      return unary_map<T>(it, [](M x) { return std::log10(x); });
    case UnaryOp::Log1P:
      return unary_map<T>(it, [](M x) { return std::log1p(x); });
    case UnaryOp::Reciprocal:
      return unary_map<T>(it, [](M x) { return M(1) / x; });
    case UnaryOp::Lgamma:
      return unary_map<T>(it, [](M x) { return lgamma_value(x); });
    case UnaryOp::Digamma:
      return unary_map<T>(it, [](M x) { return scalar_digamma(x); });
    case UnaryOp::Polygamma: {  // a: the order n >= 0
      const int64_t n = a->to<int64_t>();
      return unary_map<T>(it, [n](M x) { return scalar_polygamma(n, x); });
    }
    case UnaryOp::Sin:
      return unary_map<T>(it, [](M x) { return std::sin(x); });
    case UnaryOp::Cos:
      return unary_map<T>(it, [](M x) { return std::cos(x); });
    case UnaryOp::Tanh:
      return unary_map<T>(it, [](M x) { return std::tanh(x); });
    case UnaryOp::Tan:
      return unary_map<T>(it, [](M x) { return std::tan(x); });
    case UnaryOp::Asin:
      return unary_map<T>(it, [](M x) { return std::asin(x); });
    case UnaryOp::Acos:
      return unary_map<T>(it, [](M x) { return std::acos(x); });
    case UnaryOp::Atan:
      return unary_map<T>(it, [](M x) { return std::atan(x); });
    case UnaryOp::Sinh:
      return unary_map<T>(it, [](M x) { return std::sinh(x); });
    case UnaryOp::Cosh:
      return unary_map<T>(it, [](M x) { return std::cosh(x); });
    case UnaryOp::Erf:
      return unary_map<T>(it, [](M x) { return std::erf(x); });
    case UnaryOp::Erfinv:
      return unary_map<T>(it, [](M x) { return M(erfinv_double(double(x))); });
    case UnaryOp::Asinh:
      return unary_map<T>(it, [](M x) { return std::asinh(x); });
    case UnaryOp::Acosh:
      return unary_map<T>(it, [](M x) { return std::acosh(x); });
    case UnaryOp::Atanh:
      return unary_map<T>(it, [](M x) { return std::atanh(x); });
    case UnaryOp::Sigmoid:
      return unary_map<T>(it, [](M x) { return M(1) / (M(1) + vexp(-x)); });
    case UnaryOp::Silu:
      return unary_map<T>(it, [](M x) { return x / (M(1) + vexp(-x)); });
    case UnaryOp::Gelu:
      return unary_map<T>(it, [](M x) { return M(0.5) * x * (M(1) + std::erf(x * M(M_SQRT1_2))); });
    case UnaryOp::GeluTanh:
      return unary_map<T>(it, [](M x) {
        const M k = M(M_2_SQRTPI * M_SQRT1_2);  // sqrt(2 / pi)
        return M(0.5) * x * (M(1) + std::tanh(k * (x + M(0.044715) * x * x * x)));
      });
    default:
      break;
  }
}

template <class T>
void unary_typed(UnaryOp op, const TensorIter& it, const Scalar* a, const Scalar* b) {
  using M = opmath_t<T>;
  switch (op) {
    case UnaryOp::Neg:
      return unary_map<T>(it, [](M x) { return M(-x); });
    case UnaryOp::Abs:
      if constexpr (std::is_unsigned_v<T>) return map_loop<T, T>(it, [](T x) { return x; });
      else return unary_map<T>(it, [](M x) { return M(x < M(0) ? -x : x); });
    case UnaryOp::Relu:
      return unary_map<T>(it, [](M x) { return x < M(0) ? M(0) : x; });
    case UnaryOp::Sign:  // NaN and -0.0 give 0, as PyTorch's
      return unary_map<T>(it, [](M x) { return M(int(M(0) < x) - int(x < M(0))); });
    case UnaryOp::Floor:
    case UnaryOp::Ceil:
    case UnaryOp::Round:
    case UnaryOp::Trunc:
      if constexpr (is_float_v<T>) {
        if (op == UnaryOp::Floor) return unary_map<T>(it, [](M x) { return std::floor(x); });
        if (op == UnaryOp::Ceil) return unary_map<T>(it, [](M x) { return std::ceil(x); });
        if (op == UnaryOp::Round) return unary_map<T>(it, [](M x) { return std::nearbyint(x); });  // half to even
        return unary_map<T>(it, [](M x) { return std::trunc(x); });
      } else {
        return map_loop<T, T>(it, [](T x) { return x; });  // integers are their own floor
      }
    case UnaryOp::Pow: {
      if constexpr (is_float_v<T>) {
        const M e = a->to<M>();
        if (e == M(2)) return unary_map<T>(it, [](M x) { return x * x; });
        return unary_map<T>(it, [e](M x) { return float_pow(x, e); });
      } else {
        const T e = a->to<T>();
        if (e == T(2)) return unary_map<T>(it, [](M x) { return M(x * x); });
        return map_loop<T, T>(it, [e](T x) { return int_pow(x, e); });
      }
    }
    case UnaryOp::RPow: {
      if constexpr (is_float_v<T>) {
        const M base = a->to<M>();
        return unary_map<T>(it, [base](M x) { return std::pow(base, x); });
      } else {
        const T base = a->to<T>();
        return map_loop<T, T>(it, [base](T x) { return int_pow(base, x); });
      }
    }
    case UnaryOp::Remainder: {
      const M d = a->to<M>();
      return unary_map<T>(it, [d](M x) { return py_mod(x, d); });
    }
    case UnaryOp::Fmod: {
      const M d = a->to<M>();
      return unary_map<T>(it, [d](M x) { return c_fmod(x, d); });
    }
    case UnaryOp::DivTrunc: {
      const M d = a->to<M>();
      return unary_map<T>(it, [d](M x) { return div_trunc(x, d); });
    }
    case UnaryOp::DivFloor:
    case UnaryOp::FloorDivide: {
      const M d = a->to<M>();
      return unary_map<T>(it, [d](M x) { return div_floor(x, d); });
    }
    case UnaryOp::Clamp: {
      if constexpr (is_float_v<T>) {
        const M lo = a ? a->to<M>() : -INFINITY, hi = b ? b->to<M>() : INFINITY;
        return unary_map<T>(it, [lo, hi](M x) { return x != x ? x : std::min(std::max(x, lo), hi); });
      } else {
        const M lo = a ? a->to<M>() : std::numeric_limits<M>::lowest();
        const M hi = b ? b->to<M>() : std::numeric_limits<M>::max();
        return unary_map<T>(it, [lo, hi](M x) { return std::min(std::max(x, lo), hi); });
      }
    }
    default:
      if constexpr (is_float_v<T>) return unary_float<T>(op, it, a);
  }
}

// -log(sigmoid(x)) = max(-x, 0) + log1p(exp(-|x|)), finite for any finite x.
template <class M>
M neg_log_sigmoid(M x) {
  return std::max(-x, M(0)) + std::log1p(std::exp(-std::abs(x)));
}

// The floating-only pieces of the fused losses (kernel_table.h lists their formulas).
template <class T>
void loss_pointwise(PointwiseOp op, const TensorIter& it) {
  using M = opmath_t<T>;
  switch (op) {
    case PointwiseOp::MseLoss:
      return map_loop<T, T, T>(it, [](T x, T t) {
        const M d = M(x) - M(t);
        return T(d * d);
      });
    case PointwiseOp::MseBackward:
      return map_loop<T, T, T, T>(it, [](T x, T t, T g) { return T(M(2) * (M(x) - M(t)) * M(g)); });
    case PointwiseOp::BceLogits:
      return map_loop<T, T, T>(it, [](T x, T t) { return T((M(1) - M(t)) * M(x) + neg_log_sigmoid(M(x))); });
    case PointwiseOp::BceLogitsPosWeight:
      return map_loop<T, T, T, T>(it, [](T x, T t, T p) {
        return T((M(1) - M(t)) * M(x) + (M(1) + (M(p) - M(1)) * M(t)) * neg_log_sigmoid(M(x)));
      });
    case PointwiseOp::BceLogitsBackward:
      return map_loop<T, T, T, T>(
          it, [](T x, T t, T g) { return T((M(1) / (M(1) + std::exp(-M(x))) - M(t)) * M(g)); });
    case PointwiseOp::GeluBackward:
      return map_loop<T, T, T>(it, [](T g, T x) {
        const M xm = M(x);
        const M cdf = M(0.5) * (M(1) + std::erf(xm * M(0.70710678118654752440)));
        const M pdf = std::exp(M(-0.5) * xm * xm) * M(0.39894228040143267794);  // 1 / sqrt(2 pi)
        return T(M(g) * (cdf + xm * pdf));
      });
    case PointwiseOp::GeluTanhBackward:
      return map_loop<T, T, T>(it, [](T g, T x) {
        const M xm = M(x), k = M(0.79788456080286535588), a = M(0.044715);  // sqrt(2 / pi)
        const M x2 = xm * xm, th = std::tanh(k * (xm + a * x2 * xm));
        return T(M(g) * (M(0.5) * (M(1) + th) + M(0.5) * xm * (M(1) - th * th) * k * (M(1) + M(3) * a * x2)));
      });
    default:
      raise<NotImplementedError>(op_name(op), "not implemented");
  }
}

// Integer division, modulo and fmod by a tensor raise on a zero divisor (operand 2) before
// anything is written, as PyTorch's "ZeroDivisionError".
template <class T>
void check_nonzero_divisor(const TensorIter& it, PointwiseOp op) {
  bool zero = false;
  auto scan = [&zero](char** p, const int64_t* s, int64_t n) {
    for (int64_t i = 0; i < n; ++i) zero |= load<T>(p[2], s[2], i) == T(0);
  };
  if (it.numel() > 0) loop_range(it, 0, it.numel(), scan);
  WICK_CHECK(!zero, ValueError, op_name(op), "ZeroDivisionError");
}

template <class T>
void pointwise_typed(PointwiseOp op, const TensorIter& it) {
  using M = opmath_t<T>;
  switch (op) {
    case PointwiseOp::Pow:
      if constexpr (is_float_v<T>)
        return map_loop<T, T, T>(it, [](T x, T e) { return T(float_pow(M(x), M(e))); });
      else return map_loop<T, T, T>(it, [](T x, T e) { return int_pow(x, e); });
    case PointwiseOp::Remainder:
      if constexpr (!is_float_v<T>) check_nonzero_divisor<T>(it, op);
      return map_loop<T, T, T>(it, [](T x, T d) { return T(py_mod(M(x), M(d))); });
    case PointwiseOp::Fmod:
      if constexpr (!is_float_v<T>) check_nonzero_divisor<T>(it, op);
      return map_loop<T, T, T>(it, [](T x, T d) { return T(c_fmod(M(x), M(d))); });
    case PointwiseOp::DivTrunc:
      if constexpr (!is_float_v<T>) check_nonzero_divisor<T>(it, op);
      return map_loop<T, T, T>(it, [](T x, T d) { return T(div_trunc(M(x), M(d))); });
    case PointwiseOp::DivFloor:
    case PointwiseOp::FloorDivide:
      if constexpr (!is_float_v<T>) check_nonzero_divisor<T>(it, op);
      return map_loop<T, T, T>(it, [](T x, T d) { return T(div_floor(M(x), M(d))); });
    case PointwiseOp::ClampMin:
      return map_loop<T, T, T>(it, [](T x, T lo) { return T(nan_max(M(x), M(lo))); });
    case PointwiseOp::ClampMax:
      return map_loop<T, T, T>(it, [](T x, T hi) { return T(nan_min(M(x), M(hi))); });
    case PointwiseOp::Clamp:
      return map_loop<T, T, T, T>(it,
                                  [](T x, T lo, T hi) { return T(nan_min(nan_max(M(x), M(lo)), M(hi))); });
    case PointwiseOp::ThresholdBackward:
      return map_loop<T, T, T>(it, [](T g, T y) { return M(y) <= M(0) ? T(0) : g; });
    case PointwiseOp::Atan2:  // core admits floating dtypes only
      if constexpr (is_float_v<T>) return map_loop<T, T, T>(it, [](T y, T x) { return T(std::atan2(M(y), M(x))); });
      [[fallthrough]];
    default:
      if constexpr (is_float_v<T>) return loss_pointwise<T>(op, it);
      raise<TypeError>(op_name(op), "\"", op_name(op), "\" not implemented for '", it.dtype(), "'");
  }
}

}  // namespace

void unary(UnaryOp op, const TensorIter& it, const Scalar* a, const Scalar* b) {
  WICK_DISPATCH_NUMERIC(it.dtype(), op_name(op), [&]<class T>() { unary_typed<T>(op, it, a, b); });
}

void pointwise(PointwiseOp op, const TensorIter& it) {
  WICK_DISPATCH_NUMERIC(it.dtype(), op_name(op), [&]<class T>() { pointwise_typed<T>(op, it); });
}

}  // namespace wick::detail::cpu
