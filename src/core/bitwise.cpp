// The bitwise ops of bool and integer tensors (and & | ^ ~, the shifts; generated from
// WICK_BITWISE_OPS in wick/detail/op_list.h): TensorIter promotes as for +, the backend's
// bitwise kernel runs. No gradient: PyTorch's results of these ops never require grad, and
// their operands (bool, integers) cannot.
#include "core/kernel_table.h"
#include "core/tensor_ops.h"
#include "wick/ops.h"

namespace wick {

using namespace detail;

namespace {

bool is_shift(BitwiseOp op) { return op == BitwiseOp::LeftShift || op == BitwiseOp::RightShift; }

// a op b (b null: a op *scalar, or ~a for Not) into out (undefined: a new result; self: in
// place). name: the op as called ("bitwise_and_").
Tensor bitwise(BitwiseOp op, const Tensor& out, const Tensor& a, const Tensor* b, const Scalar* scalar,
               const char* name) {
  check_defined(a, name, "self");
  if (b) check_defined(*b, name, "other");
  IterConfig cfg;
  cfg.op = name;
  cfg.scalar = scalar;
  const Dtype t = b ? result_type({a, *b}) : result_type({a}, scalar);
  WICK_CHECK(is_integral(t, true) && !(t == kBool && is_shift(op)), TypeError, name, "\"", op_name(op),
             "\" not implemented for '", t, "'");
  auto it = b ? TensorIter::build(out, {a, *b}, cfg) : TensorIter::build(out, {a}, cfg);
  kernel<&KernelTable::bitwise>(it.device(), name)(op, it, scalar);
  it.finish();
  if (out.defined()) bump_version(out);
  return it.take_result();
}

// scalar op t: the commutative ops swap their operands; a shift shifts a full tensor of the scalar.
Tensor bitwise(BitwiseOp op, const Scalar& a, const Tensor& b) {
  check_defined(b, op_name(op), "other");
  if (!is_shift(op)) return bitwise(op, {}, b, nullptr, &a, op_name(op));
  const Tensor full_a = full_like(b, a, TensorOptions(result_type({b}, &a)));
  return bitwise(op, {}, full_a, &b, nullptr, op_name(op));
}

}  // namespace

// The functions and methods of each line of WICK_BITWISE_OPS.
#define WICK_X(Name, name)                                                                                   \
  Tensor name(const Tensor& a, const Tensor& b) { return bitwise(BitwiseOp::Name, {}, a, &b, nullptr, #name); } \
  Tensor name(const Tensor& a, const Scalar& b) { return bitwise(BitwiseOp::Name, {}, a, nullptr, &b, #name); } \
  Tensor name(const Scalar& a, const Tensor& b) { return bitwise(BitwiseOp::Name, a, b); }                   \
  Tensor Tensor::name(const Tensor& o) const { return wick::name(*this, o); }                                \
  Tensor Tensor::name(const Scalar& o) const { return wick::name(*this, o); }                                \
  Tensor& Tensor::name##_(const Tensor& o) {                                                                 \
    bitwise(BitwiseOp::Name, *this, *this, &o, nullptr, #name "_");                                          \
    return *this;                                                                                            \
  }                                                                                                          \
  Tensor& Tensor::name##_(const Scalar& o) {                                                                 \
    bitwise(BitwiseOp::Name, *this, *this, nullptr, &o, #name "_");                                          \
    return *this;                                                                                            \
  }
WICK_BITWISE_OPS(WICK_X)
#undef WICK_X

Tensor bitwise_not(const Tensor& t) { return bitwise(BitwiseOp::Not, {}, t, nullptr, nullptr, "bitwise_not"); }
Tensor Tensor::bitwise_not() const { return wick::bitwise_not(*this); }
Tensor& Tensor::bitwise_not_() {
  bitwise(BitwiseOp::Not, *this, *this, nullptr, nullptr, "bitwise_not_");
  return *this;
}

// The operators, as LibTorch's: & | ^ of tensors and scalars (either side), ~ bitwise_not.
#define WICK_X(op, name)                                                         \
  Tensor operator op(const Tensor& a, const Tensor& b) { return name(a, b); } \
  Tensor operator op(const Tensor& a, const Scalar& b) { return name(a, b); } \
  Tensor operator op(const Scalar& a, const Tensor& b) { return name(a, b); }
WICK_X(&, bitwise_and)
WICK_X(|, bitwise_or)
WICK_X(^, bitwise_xor)
#undef WICK_X
Tensor operator~(const Tensor& a) { return bitwise_not(a); }

}  // namespace wick
