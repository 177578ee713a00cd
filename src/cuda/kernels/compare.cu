/* Comparisons (== != < <= > >=, to bool) and where on CUDA.
 * Comparisons run on the two-input elementwise kernel (elementwise.cuh) with the op as a
 * runtime switch inside one functor per dtype (uniform across the grid, free next to the
 * memory traffic), so 2 instances per dtype rather than 12. 16-bit floats compare as float.
 * where runs on the same launcher with three inputs.
 */
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
    default: return a >= b;
  }
}

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

void where(const TensorIter& it) {
  const Plan p = make_plan(it, "where");
  auto body = [&]<class T>() { launch_elementwise<T, bool, T, T>("where", p, WhereFn<T>{}); };
  WICK_DISPATCH_ALL(it.dtype(), "where", body);
}

}  // namespace wick::detail::gpu
