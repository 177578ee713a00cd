// Comparisons (to bool) and where on the CPU, over map_loop. Operands arrive promoted to one
// compute dtype (where's condition stays bool); 16-bit floats compare as float.
#include "cpu/kernels.h"
#include "cpu/map_loop.h"

namespace wick::detail::cpu {

namespace {

template <class T, class F>
void compare_map(const TensorIter& it, const Scalar* scalar, F f) {
  using M = opmath_t<T>;
  if (scalar) {
    const M b = scalar->to<M>();
    return map_loop<bool, T>(it, [b, f](T a) { return f(M(a), b); });
  }
  map_loop<bool, T, T>(it, [f](T a, T b) { return f(M(a), M(b)); });
}

template <class T>
void compare_typed(CompareOp op, const TensorIter& it, const Scalar* s) {
  using M = opmath_t<T>;
  switch (op) {
    case CompareOp::Eq:
      return compare_map<T>(it, s, [](M a, M b) { return a == b; });
    case CompareOp::Ne:
      return compare_map<T>(it, s, [](M a, M b) { return a != b; });
    case CompareOp::Lt:
      return compare_map<T>(it, s, [](M a, M b) { return a < b; });
    case CompareOp::Le:
      return compare_map<T>(it, s, [](M a, M b) { return a <= b; });
    case CompareOp::Gt:
      return compare_map<T>(it, s, [](M a, M b) { return a > b; });
    case CompareOp::Ge:
      return compare_map<T>(it, s, [](M a, M b) { return a >= b; });
  }
}

}  // namespace

void compare(CompareOp op, const TensorIter& it, const Scalar* scalar) {
  WICK_DISPATCH_ALL(it.dtype(), op_name(op), [&]<class T>() { compare_typed<T>(op, it, scalar); });
}

void where(const TensorIter& it) {
  WICK_DISPATCH_ALL(it.dtype(), "where", [&]<class T>() {
    map_loop<T, bool, T, T>(it, [](bool c, T a, T b) { return c ? a : b; });
  });
}

}  // namespace wick::detail::cpu
