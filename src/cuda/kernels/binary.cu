/* add, sub, mul, div (tensor op tensor, tensor op scalar) on the elementwise kernel
 * (elementwise.cuh). The op is a runtime switch inside one functor per dtype: the branch is
 * uniform across the grid and costs nothing next to the memory traffic, and it keeps the
 * instances at 2 per dtype instead of 8. Arithmetic in opmath_t (core/op_math.h), as on the
 * CPU: float for 16-bit floats, bool in bool (True + True is True).
 */
#include "cuda/kernels/elementwise.cuh"
#include "cuda/kernels/kernels.h"

namespace wick::detail::gpu {

namespace {

template <class M>
__device__ __forceinline__ M binary_op(BinaryOp op, M a, M b, M alpha) {
  switch (op) {
    case BinaryOp::Add: return a + alpha * b;
    case BinaryOp::Sub: return a - alpha * b;
    case BinaryOp::Mul: return a * b;
    default: return a / b;
  }
}

template <class T>
struct BinaryFn {
  BinaryOp op;
  opmath_t<T> alpha;
  __device__ T operator()(T a, T b) const {
    return cast<T>(binary_op<opmath_t<T>>(op, cast<opmath_t<T>>(a), cast<opmath_t<T>>(b), alpha));
  }
};

template <class T>
struct BinaryScalarFn {
  BinaryOp op;
  opmath_t<T> alpha, scalar;
  __device__ T operator()(T a) const {
    return cast<T>(binary_op<opmath_t<T>>(op, cast<opmath_t<T>>(a), scalar, alpha));
  }
};

}  // namespace

void binary(BinaryOp op, const TensorIter& it, const Scalar* scalar, const Scalar& alpha) {
  const char* name = op_name(op);
  const Plan p = make_plan(it, name);
  auto body = [&]<class T>() {
    using M = opmath_t<T>;
    const M a = alpha.to<M>();
    if (scalar) launch_elementwise<T, T>(name, p, BinaryScalarFn<T>{op, a, scalar->to<M>()});
    else launch_elementwise<T, T, T>(name, p, BinaryFn<T>{op, a});
  };
  WICK_DISPATCH_ALL(it.dtype(), name, body);
}

}  // namespace wick::detail::gpu
