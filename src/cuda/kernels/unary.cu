/* Elementwise math on CUDA: the unary family (neg abs relu sign, exp log sqrt rsqrt sin cos tanh
 * sigmoid gelu silu, tan asin acos atan sinh cosh asinh acosh atanh erf erfinv, floor ceil round
 * trunc frac log2 log10 log1p reciprocal lgamma digamma polygamma, and pow/remainder/fmod/the
 * rounding divisions/clamp with scalars) and the pointwise family (pow, remainder, fmod, div's
 * rounding modes, floor_divide, atan2, clamp_min, clamp_max of tensors, clamp(x, lo, hi), and the
 * pieces of the fused losses and of relu's backward: kernel_table.h lists them).
 *
 * Instances, the compile-time budget: neg, abs and relu (cheap, and relu is on the training
 * path) get a kernel each per dtype; the transcendental ops share one functor per floating
 * dtype with the op as a runtime switch (uniform across the grid), as do the integer forms of
 * pow and remainder. One kernel per op x dtype would triple this file's compile time for no
 * measurable gain on memory-bound ops.
 * Arithmetic in opmath_t (float for 16-bit floats, rounded once at the end) with the math
 * of device_math.cuh and the scalar pieces shared with the CPU (core/scalar_math.h: pow,
 * modulo, NaN-propagating max/min; core/special_math.h: fmod, the rounding divisions, digamma
 * and polygamma). Every op runs on launch_elementwise (elementwise.cuh),
 * clamp(x, lo, hi) included.
 */
#include <limits>

#include "core/scalar_math.h"
#include "core/special_math.h"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/elementwise.cuh"
#include "cuda/kernels/gelu_math.cuh"
#include "cuda/kernels/op_kernels.h"

namespace wick::detail::gpu {

namespace {

template <class T>
inline constexpr bool is_float_v = std::is_floating_point_v<opmath_t<T>>;

// ---- unary functors

template <class T, UnaryOp OP>
struct SimpleFn {  // Neg, Abs, Relu, Sign
  __device__ T operator()(T v) const {
    using M = opmath_t<T>;
    const M x = cast<M>(v);
    if constexpr (OP == UnaryOp::Neg) return cast<T>(M(-x));
    else if constexpr (OP == UnaryOp::Sign) return cast<T>(M(int(M(0) < x) - int(x < M(0))));  // NaN: 0
    else if constexpr (OP == UnaryOp::Abs) {
      if constexpr (std::is_unsigned_v<T>) return v;
      else return cast<T>(M(x < M(0) ? -x : x));
    } else if constexpr (std::is_unsigned_v<T>) {
      return v;
    } else {
      return x < M(0) ? cast<T>(M(0)) : v;
    }
  }
};

// The divisions by a scalar a (remainder, fmod, the rounding divisions), for floats and integers.
template <class V>
__device__ __forceinline__ V divide_like(UnaryOp op, V x, V a) {
  switch (op) {
    case UnaryOp::Remainder: return py_mod(x, a);
    case UnaryOp::Fmod: return c_fmod(x, a);
    case UnaryOp::DivTrunc: return div_trunc(x, a);
    default: return div_floor(x, a);  // DivFloor, FloorDivide
  }
}

// Floating ops with their scalars (a: exponent, base, divisor or lower bound; b: upper bound).
// Out of line: one copy per float/double instead of one per dtype x vector lane x layout,
// which halves this file's compile time; the call costs little next to the math.
template <class M>
__device__ __noinline__ M float_op(UnaryOp op, M x, M a, M b) {
  switch (op) {
    case UnaryOp::Exp:
      return m_exp(x);
    case UnaryOp::Expm1:
      return m_expm1(x);
    case UnaryOp::Log:
      return m_log(x);
    case UnaryOp::Sqrt:
      return m_sqrt(x);
    case UnaryOp::Rsqrt:
      return M(1) / m_sqrt(x);
    case UnaryOp::Floor:
      return m_floor(x);
    case UnaryOp::Ceil:
      return m_ceil(x);
    case UnaryOp::Round:
      return m_rint(x);
    case UnaryOp::Trunc:
      return m_trunc(x);
    case UnaryOp::Frac:
      return x - m_trunc(x);
    case UnaryOp::Log2:
      return m_log2(x);
    case UnaryOp::Log10:
      return m_log10(x);
    case UnaryOp::Log1P:
      return m_log1p(x);
    case UnaryOp::Reciprocal:
      return M(1) / x;
    case UnaryOp::Sin:
      return m_sin(x);
    case UnaryOp::Cos:
      return m_cos(x);
    case UnaryOp::Tanh:
      return m_tanh(x);
    case UnaryOp::Tan:
      return m_tan(x);
    case UnaryOp::Asin:
      return m_asin(x);
    case UnaryOp::Acos:
      return m_acos(x);
    case UnaryOp::Atan:
      return m_atan(x);
    case UnaryOp::Sinh:
      return m_sinh(x);
    case UnaryOp::Cosh:
      return m_cosh(x);
    case UnaryOp::Erf:
      return m_erf(x);
    case UnaryOp::Erfinv:
      return m_erfinv(x);
    case UnaryOp::Asinh:
      return m_asinh(x);
    case UnaryOp::Acosh:
      return m_acosh(x);
    case UnaryOp::Atanh:
      return m_atanh(x);
    case UnaryOp::Sigmoid:
      return M(1) / (M(1) + m_exp(-x));
    case UnaryOp::Silu:
      return x / (M(1) + m_exp(-x));
    case UnaryOp::Gelu:
      return M(0.5) * x * (M(1) + m_erf(x * M(0.70710678118654752440)));
    case UnaryOp::GeluTanh: {
      const M k = M(0.79788456080286535588);  // sqrt(2 / pi)
      return M(0.5) * x * (M(1) + m_tanh(k * (x + M(0.044715) * x * x * x)));
    }
    case UnaryOp::Pow:
      return float_pow(x, a);
    case UnaryOp::RPow:
      return m_pow(a, x);
    case UnaryOp::Remainder:
    case UnaryOp::Fmod:
    case UnaryOp::DivTrunc:
    case UnaryOp::DivFloor:
    case UnaryOp::FloorDivide:
      return divide_like(op, x, a);
    case UnaryOp::Lgamma:
      return m_lgamma(x);
    case UnaryOp::Digamma:
      return scalar_digamma(x);
    case UnaryOp::Polygamma:  // a: the order n
      return scalar_polygamma(int64_t(a), x);
    default: {  // Clamp: NaN stays NaN
      const M lo = x < a ? a : x;
      return x != x ? x : b < lo ? b : lo;
    }
  }
}

template <class T>
struct FloatFn {
  UnaryOp op;
  opmath_t<T> a, b;
  __device__ T operator()(T v) const { return cast<T>(float_op(op, cast<opmath_t<T>>(v), a, b)); }
};

// Integer forms of Pow, RPow, Remainder, Fmod, the rounding divisions, Clamp; floor, ceil, round
// and trunc are the identity.
template <class T>
struct IntFn {
  UnaryOp op;
  T a, b;
  __device__ T operator()(T x) const {
    switch (op) {
      case UnaryOp::Floor:
      case UnaryOp::Ceil:
      case UnaryOp::Round:
      case UnaryOp::Trunc:
        return x;
      case UnaryOp::Pow:
        return int_pow(x, a);
      case UnaryOp::RPow:
        return int_pow(a, x);
      case UnaryOp::Remainder:
      case UnaryOp::Fmod:
      case UnaryOp::DivTrunc:
      case UnaryOp::DivFloor:
      case UnaryOp::FloorDivide:
        return divide_like(op, x, a);
      default: {
        const T lo = x < a ? a : x;
        return b < lo ? b : lo;
      }
    }
  }
};

// ---- pointwise functors (tensors for every operand)

// -log(sigmoid(x)) = max(-x, 0) + log1p(exp(-|x|)), finite for any finite x.
template <class M>
__device__ __forceinline__ M neg_log_sigmoid(M x) {
  const M a = x < M(0) ? -x : x;
  return (x < M(0) ? -x : M(0)) + m_log1p(m_exp(-a));
}

// One functor per op, chosen on the host: a switch on the op inside the kernel (pow among its
// cases) made the bfloat16 kernels several times slower than their memory traffic.
template <class T, PointwiseOp Op>
struct PointwiseFn {
  __device__ T operator()(T x, T y) const {
    using M = opmath_t<T>;
    if constexpr (Op == PointwiseOp::Pow) {
      if constexpr (is_float_v<T>) return cast<T>(float_pow(cast<M>(x), cast<M>(y)));
      else return int_pow(x, y);
    } else if constexpr (Op == PointwiseOp::Remainder) {
      return cast<T>(py_mod(cast<M>(x), cast<M>(y)));
    } else if constexpr (Op == PointwiseOp::Fmod) {
      return cast<T>(c_fmod(cast<M>(x), cast<M>(y)));
    } else if constexpr (Op == PointwiseOp::DivTrunc) {
      return cast<T>(div_trunc(cast<M>(x), cast<M>(y)));
    } else if constexpr (Op == PointwiseOp::DivFloor) {  // floor_divide's functor too
      return cast<T>(div_floor(cast<M>(x), cast<M>(y)));
    } else if constexpr (Op == PointwiseOp::Atan2) {  // core admits floating dtypes only
      if constexpr (is_float_v<T>) return cast<T>(m_atan2(cast<M>(x), cast<M>(y)));
      else return T(0);
    } else if constexpr (Op == PointwiseOp::ClampMin) {
      return cast<T>(nan_max(cast<M>(x), cast<M>(y)));
    } else if constexpr (Op == PointwiseOp::ClampMax) {
      return cast<T>(nan_min(cast<M>(x), cast<M>(y)));
    } else if constexpr (Op == PointwiseOp::ThresholdBackward) {
      return cast<M>(y) <= M(0) ? T(0) : x;  // (g, y)
    } else if constexpr (Op == PointwiseOp::MseLoss) {
      const M d = cast<M>(x) - cast<M>(y);
      return cast<T>(d * d);
    } else if constexpr (Op == PointwiseOp::GeluBackward) {  // (g, x); floating dtypes only
      if constexpr (is_float_v<T>) {
        return cast<T>(gelu_grad(cast<M>(x), cast<M>(y)));
      } else {
        return T(0);
      }
    } else if constexpr (Op == PointwiseOp::GeluTanhBackward) {  // (g, x); floating dtypes only
      if constexpr (is_float_v<T>) {
        return cast<T>(gelu_tanh_grad(cast<M>(x), cast<M>(y)));
      } else {
        return T(0);
      }
    } else {  // BceLogits; core admits floating dtypes only
      if constexpr (is_float_v<T>)
        return cast<T>((M(1) - cast<M>(y)) * cast<M>(x) + neg_log_sigmoid(cast<M>(x)));
      else return T(0);
    }
  }
};

// The three-operand pieces of the fused losses (kernel_table.h lists their formulas);
// floating dtypes only.
template <class T, PointwiseOp Op>
struct LossFn3 {
  __device__ T operator()(T x, T t, T z) const {
    using M = opmath_t<T>;
    const M xm = cast<M>(x), tm = cast<M>(t), zm = cast<M>(z);
    if constexpr (Op == PointwiseOp::MseBackward) return cast<T>(M(2) * (xm - tm) * zm);
    else if constexpr (Op == PointwiseOp::BceLogitsPosWeight)
      return cast<T>((M(1) - tm) * xm + (M(1) + (zm - M(1)) * tm) * neg_log_sigmoid(xm));
    else return cast<T>((M(1) / (M(1) + m_exp(-xm)) - tm) * zm);  // BceLogitsBackward
  }
};

template <class T>
struct ZeroDivisor {  // find_any's predicate: operand 2 (the divisor) is 0
  __device__ bool operator()(char* const* ptrs, const int64_t (&off)[3], int64_t&) const {
    return *reinterpret_cast<const T*>(ptrs[2] + off[2]) == T(0);
  }
};

template <class T>
struct ClampFn {
  __device__ T operator()(T x, T lo, T hi) const {
    using M = opmath_t<T>;
    return cast<T>(nan_min(nan_max(cast<M>(x), cast<M>(lo)), cast<M>(hi)));
  }
};

}  // namespace

void unary(UnaryOp op, const TensorIter& it, const Scalar* a, const Scalar* b) {
  const char* name = op_name(op);
  const Plan p = make_plan(it, name);
  auto body = [&]<class T>() {
    using M = opmath_t<T>;
    switch (op) {
      case UnaryOp::Neg:
        return launch_elementwise<T, T>(name, p, SimpleFn<T, UnaryOp::Neg>{});
      case UnaryOp::Abs:
        return launch_elementwise<T, T>(name, p, SimpleFn<T, UnaryOp::Abs>{});
      case UnaryOp::Relu:
        return launch_elementwise<T, T>(name, p, SimpleFn<T, UnaryOp::Relu>{});
      case UnaryOp::Sign:
        return launch_elementwise<T, T>(name, p, SimpleFn<T, UnaryOp::Sign>{});
      default:
        break;
    }
    if constexpr (is_float_v<T>) {
      M lo = a ? a->to<M>() : M(0), hi = M(0);
      if (op == UnaryOp::Clamp) {
        lo = a ? a->to<M>() : -std::numeric_limits<M>::infinity();
        hi = b ? b->to<M>() : std::numeric_limits<M>::infinity();
      }
      launch_elementwise<T, T>(name, p, FloatFn<T>{op, lo, hi});
    } else {
      T lo = a ? a->to<T>() : T(0), hi = T(0);
      if (op == UnaryOp::Clamp) {
        lo = a ? a->to<T>() : std::numeric_limits<T>::lowest();
        hi = b ? b->to<T>() : std::numeric_limits<T>::max();
      } else if (op != UnaryOp::Pow && op != UnaryOp::RPow && op != UnaryOp::Remainder && op != UnaryOp::Fmod &&
                 op != UnaryOp::DivTrunc && op != UnaryOp::DivFloor && op != UnaryOp::FloorDivide &&
                 op != UnaryOp::Floor && op != UnaryOp::Ceil && op != UnaryOp::Round && op != UnaryOp::Trunc) {
        raise<TypeError>(name, "\"", name, "\" not implemented for '", it.dtype(), "'");
      }
      launch_elementwise<T, T>(name, p, IntFn<T>{op, lo, hi});
    }
  };
  WICK_DISPATCH_NUMERIC(it.dtype(), name, body);
}

void pointwise(PointwiseOp op, const TensorIter& it) {
  const char* name = op_name(op);
  const Plan p = make_plan(it, name);
  auto body = [&]<class T>() {
    using P = PointwiseOp;
    if (op == P::Clamp) return launch_elementwise<T, T, T, T>(name, p, ClampFn<T>{});
    if (op == P::MseBackward || op == P::BceLogitsPosWeight || op == P::BceLogitsBackward) {
      if constexpr (is_float_v<T>) {
        if (op == P::MseBackward)
          return launch_elementwise<T, T, T, T>(name, p, LossFn3<T, P::MseBackward>{});
        if (op == P::BceLogitsPosWeight)
          return launch_elementwise<T, T, T, T>(name, p, LossFn3<T, P::BceLogitsPosWeight>{});
        return launch_elementwise<T, T, T, T>(name, p, LossFn3<T, P::BceLogitsBackward>{});
      }
      raise<TypeError>(name, "\"", name, "\" not implemented for '", it.dtype(), "'");
    }
    if constexpr (!is_float_v<T>) {
      if (op == P::Remainder || op == P::Fmod || op == P::DivTrunc || op == P::DivFloor ||
          op == P::FloorDivide) {  // a zero divisor raises before anything is written
        const auto zero = find_any<3>(name, p, ZeroDivisor<T>{});
        WICK_CHECK(!zero, ValueError, name, "ZeroDivisionError");
      }
    }
    switch (op) {
      case P::Pow:
        return launch_elementwise<T, T, T>(name, p, PointwiseFn<T, P::Pow>{});
      case P::Remainder:
        return launch_elementwise<T, T, T>(name, p, PointwiseFn<T, P::Remainder>{});
      case P::Fmod:
        return launch_elementwise<T, T, T>(name, p, PointwiseFn<T, P::Fmod>{});
      case P::DivTrunc:
        return launch_elementwise<T, T, T>(name, p, PointwiseFn<T, P::DivTrunc>{});
      case P::DivFloor:
      case P::FloorDivide:
        return launch_elementwise<T, T, T>(name, p, PointwiseFn<T, P::DivFloor>{});
      case P::ClampMin:
        return launch_elementwise<T, T, T>(name, p, PointwiseFn<T, P::ClampMin>{});
      case P::ClampMax:
        return launch_elementwise<T, T, T>(name, p, PointwiseFn<T, P::ClampMax>{});
      case P::ThresholdBackward:
        return launch_elementwise<T, T, T>(name, p, PointwiseFn<T, P::ThresholdBackward>{});
      default:
        break;
    }
    if constexpr (is_float_v<T>) {  // atan2 and the two-operand loss pieces: floating dtypes only
      if (op == P::Atan2) return launch_elementwise<T, T, T>(name, p, PointwiseFn<T, P::Atan2>{});
      if (op == P::MseLoss) return launch_elementwise<T, T, T>(name, p, PointwiseFn<T, P::MseLoss>{});
      if (op == P::GeluBackward) return launch_elementwise<T, T, T>(name, p, PointwiseFn<T, P::GeluBackward>{});
      if (op == P::GeluTanhBackward)
        return launch_elementwise<T, T, T>(name, p, PointwiseFn<T, P::GeluTanhBackward>{});
      return launch_elementwise<T, T, T>(name, p, PointwiseFn<T, P::BceLogits>{});
    }
    raise<TypeError>(name, "\"", name, "\" not implemented for '", it.dtype(), "'");
  };
  WICK_DISPATCH_NUMERIC(it.dtype(), name, body);
}

}  // namespace wick::detail::gpu
