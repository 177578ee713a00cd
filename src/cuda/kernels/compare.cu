/* Comparisons (== != < <= > >=) and the logical ops (to bool), the bitwise ops and where on CUDA.
 * Comparisons run on the two-input elementwise kernel (elementwise.cuh) with the op as a
 * runtime switch inside one functor per dtype (uniform across the grid, free next to the
 * memory traffic), so 2 instances per dtype rather than 12. 16-bit floats compare as float.
 * The bitwise ops (bool and integers) take the same shape: one functor per dtype, the op a
 * runtime switch. where runs on the same launcher with three inputs.
 */
#include <type_traits>

#include "cuda/kernels/elementwise.cuh"
#include "cuda/kernels/op_kernels.h"

namespace wick::detail::gpu {

namespace {

template <class M>
__device__ __forceinline__ bool compare_op(CompareOp op, M a, M b) {
  switch (op) {
    case CompareOp::Eq: return a == b;
    case CompareOp::Ne: return a != b;
    case CompareOp::Lt: return a < b;
    case CompareOp::Le: return a <= b;
    case CompareOp::Gt: return a > b;
    case CompareOp::Ge: return a >= b;
    case CompareOp::LogicalAnd: return a != M(0) && b != M(0);
    case CompareOp::LogicalOr: return a != M(0) || b != M(0);
    default: return (a != M(0)) != (b != M(0));  // LogicalXor
  }
}

// PyTorch's shifts: a count outside [0, width) gives 0 (left) or the sign's fill (right).
template <class T>
__device__ __forceinline__ T bitwise_op(BitwiseOp op, T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    switch (op) {
      case BitwiseOp::And: return a && b;
      case BitwiseOp::Or: return a || b;
      case BitwiseOp::Xor: return a != b;
      default: return !a;  // Not; core refuses bool shifts
    }
  } else {
    switch (op) {
      case BitwiseOp::And: return T(a & b);
      case BitwiseOp::Or: return T(a | b);
      case BitwiseOp::Xor: return T(a ^ b);
      case BitwiseOp::Not: return T(~a);
      case BitwiseOp::LeftShift:
        if (std::make_signed_t<T>(b) < 0 || b >= T(sizeof(T) * 8)) return T(0);
        return T(std::make_unsigned_t<T>(a) << b);
      default: {  // RightShift
        constexpr T width = T(sizeof(T) * 8 - std::is_signed_v<T>);
        if (std::make_signed_t<T>(b) < 0 || b >= width) return T(a >> width);
        return T(a >> b);
      }
    }
  }
}

template <class T>
struct BitwiseFn {
  BitwiseOp op;
  __device__ T operator()(T a, T b) const { return bitwise_op(op, a, b); }
};

template <class T>
struct BitwiseScalarFn {  // a op scalar; Not ignores b
  BitwiseOp op;
  T b;
  __device__ T operator()(T a) const { return bitwise_op(op, a, b); }
};

template <class T>
struct CompareFn {
  CompareOp op;
  __device__ bool operator()(T a, T b) const {
    return compare_op(op, cast<opmath_t<T>>(a), cast<opmath_t<T>>(b));
  }
};

template <class T>
struct CompareScalarFn {
  CompareOp op;
  opmath_t<T> scalar;
  __device__ bool operator()(T a) const { return compare_op(op, cast<opmath_t<T>>(a), scalar); }
};

template <class T>
struct WhereFn {
  __device__ T operator()(bool c, T a, T b) const { return c ? a : b; }
};

}  // namespace

void compare(CompareOp op, const TensorIter& it, const Scalar* scalar) {
  const char* name = op_name(op);
  const Plan p = make_plan(it, name);
  auto body = [&]<class T>() {
    if (scalar) launch_elementwise<bool, T>(name, p, CompareScalarFn<T>{op, scalar->to<opmath_t<T>>()});
    else launch_elementwise<bool, T, T>(name, p, CompareFn<T>{op});
  };
  WICK_DISPATCH_ALL(it.dtype(), name, body);
}

void bitwise(BitwiseOp op, const TensorIter& it, const Scalar* scalar) {
  const char* name = op_name(op);
  const Plan p = make_plan(it, name);
  auto body = [&]<class T>() {
    if (it.ninputs() == 1) launch_elementwise<T, T>(name, p, BitwiseScalarFn<T>{op, scalar ? scalar->to<T>() : T(0)});
    else launch_elementwise<T, T, T>(name, p, BitwiseFn<T>{op});
  };
  WICK_DISPATCH_INTEGRAL(it.dtype(), name, body);
}

void where(const TensorIter& it) {
  const Plan p = make_plan(it, "where");
  auto body = [&]<class T>() { launch_elementwise<T, bool, T, T>("where", p, WhereFn<T>{}); };
  WICK_DISPATCH_ALL(it.dtype(), "where", body);
}

}  // namespace wick::detail::gpu
