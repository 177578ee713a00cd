// Comparisons and the logical ops (to bool), the bitwise ops and where on the CPU, over
// map_loop. Operands arrive promoted to one compute dtype (where's condition stays bool);
// 16-bit floats compare as float.
#include <type_traits>

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
    case CompareOp::LogicalAnd:
      return compare_map<T>(it, s, [](M a, M b) { return a != M(0) && b != M(0); });
    case CompareOp::LogicalOr:
      return compare_map<T>(it, s, [](M a, M b) { return a != M(0) || b != M(0); });
    case CompareOp::LogicalXor:
      return compare_map<T>(it, s, [](M a, M b) { return (a != M(0)) != (b != M(0)); });
  }
}

// PyTorch's shifts: a count outside [0, width) gives 0 (left) or the sign's fill (right).
template <class T>
T shift_left(T a, T b) {
  constexpr T width = T(sizeof(T) * 8);
  if (std::make_signed_t<T>(b) < 0 || b >= width) return T(0);
  return T(std::make_unsigned_t<T>(a) << b);
}
template <class T>
T shift_right(T a, T b) {
  constexpr T width = T(sizeof(T) * 8 - std::is_signed_v<T>);
  if (std::make_signed_t<T>(b) < 0 || b >= width) return T(a >> width);
  return T(a >> b);
}

template <class T, class F>
void bitwise_map(const TensorIter& it, const Scalar* scalar, F f) {
  if (scalar) {
    const T b = scalar->to<T>();
    return map_loop<T, T>(it, [b, f](T a) { return f(a, b); });
  }
  map_loop<T, T, T>(it, f);
}

template <class T>
void bitwise_typed(BitwiseOp op, const TensorIter& it, const Scalar* s) {
  switch (op) {
    case BitwiseOp::And:
      return bitwise_map<T>(it, s, [](T a, T b) { return T(a & b); });
    case BitwiseOp::Or:
      return bitwise_map<T>(it, s, [](T a, T b) { return T(a | b); });
    case BitwiseOp::Xor:
      return bitwise_map<T>(it, s, [](T a, T b) { return T(a ^ b); });
    case BitwiseOp::Not:
      if constexpr (std::is_same_v<T, bool>) return map_loop<T, T>(it, [](T a) { return !a; });
      else return map_loop<T, T>(it, [](T a) { return T(~a); });
    case BitwiseOp::LeftShift:
      if constexpr (!std::is_same_v<T, bool>) return bitwise_map<T>(it, s, shift_left<T>);
      break;
    case BitwiseOp::RightShift:
      if constexpr (!std::is_same_v<T, bool>) return bitwise_map<T>(it, s, shift_right<T>);
      break;
  }
  raise<TypeError>(op_name(op), "\"", op_name(op), "\" not implemented for '", it.dtype(), "'");
}

}  // namespace

void compare(CompareOp op, const TensorIter& it, const Scalar* scalar) {
  WICK_DISPATCH_ALL(it.dtype(), op_name(op), [&]<class T>() { compare_typed<T>(op, it, scalar); });
}

void bitwise(BitwiseOp op, const TensorIter& it, const Scalar* scalar) {
  WICK_DISPATCH_INTEGRAL(it.dtype(), op_name(op), [&]<class T>() { bitwise_typed<T>(op, it, scalar); });
}

void where(const TensorIter& it) {
  WICK_DISPATCH_ALL(it.dtype(), "where", [&]<class T>() {
    map_loop<T, bool, T, T>(it, [](bool c, T a, T b) { return c ? a : b; });
  });
}

}  // namespace wick::detail::cpu
