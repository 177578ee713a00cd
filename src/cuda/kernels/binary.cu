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

// A float32 result of a float32 and a 16-bit float operand, read as they are (arith.cpp keeps
// the 16-bit one uncast): the values of casting it to float32 first.
template <class A, class B>
struct MixedBinaryFn {
  BinaryOp op;
  float alpha;
  __device__ float operator()(A a, B b) const { return binary_op<float>(op, cast<float>(a), cast<float>(b), alpha); }
};

}  // namespace

void binary(BinaryOp op, const TensorIter& it, const Scalar* scalar, const Scalar& alpha) {
  const char* name = op_name(op);
  const Plan p = make_plan(it, name);
  if (!scalar && (it.input(0).dtype() != it.dtype() || it.input(1).dtype() != it.dtype())) {
    const Dtype da = it.input(0).dtype(), db = it.input(1).dtype();
    WICK_CHECK(it.dtype() == kFloat32, TypeError, name, "mixed operands ", da, " and ", db, " computed in ",
               it.dtype(), " (expected float32)");
    const float al = alpha.to<float>();
    auto mixed = [&]<class A, class B>() { launch_elementwise<float, A, B>(name, p, MixedBinaryFn<A, B>{op, al}); };
    if (da == kFloat32 && db == kBFloat16) mixed.template operator()<float, BFloat16>();
    else if (da == kBFloat16 && db == kFloat32) mixed.template operator()<BFloat16, float>();
    else if (da == kFloat32 && db == kFloat16) mixed.template operator()<float, Half>();
    else if (da == kFloat16 && db == kFloat32) mixed.template operator()<Half, float>();
    else raise<TypeError>(name, "no kernel for the mixed operands ", da, " and ", db);
    return;
  }
  auto body = [&]<class T>() {
    using M = opmath_t<T>;
    const M a = alpha.to<M>();
    if (scalar) launch_elementwise<T, T>(name, p, BinaryScalarFn<T>{op, a, scalar->to<M>()});
    else launch_elementwise<T, T, T>(name, p, BinaryFn<T>{op, a});
  };
  WICK_DISPATCH_ALL(it.dtype(), name, body);
}

}  // namespace wick::detail::gpu
