// Comparisons (== != < <= > >=, to bool; generated from WICK_COMPARE_OPS in
// wick/detail/op_list.h), the logical ops (WICK_LOGICAL_OPS, comparisons of x != 0), where and
// masked_fill. Comparisons promote their operands to a
// common dtype first, as PyTorch does; where's condition and masked_fill's mask
// must be bool and are read as bool by the kernel (no cast).
#include "autograd/hooks.h"
#include "core/as_op.h"
#include "core/kernel_table.h"
#include "core/tensor_ops.h"
#include "wick/ops.h"

namespace wick {

using namespace detail;

namespace {

// a op b mirrored for b op a: 2 < t is t > 2 (the op list's Mirror column).
constexpr CompareOp mirror(CompareOp op) {
  switch (op) {
#define WICK_X(Name, name, op, Mirror) \
  case CompareOp::Name: return CompareOp::Mirror;
    WICK_COMPARE_OPS(WICK_X)
#undef WICK_X
#define WICK_X(Name, name) \
  case CompareOp::Name: return op;  // symmetric
    WICK_LOGICAL_OPS(WICK_X)
#undef WICK_X
  }
  return op;
}

// out undefined: a new bool result; out given (the logical ops' in-place forms): written there,
// cast to its dtype. name: the op as called, when it is not op_name(op).
Tensor compare(CompareOp op, const Tensor& a, const Tensor& b, const Tensor& out = {}, const char* name = nullptr) {
  IterConfig cfg;
  cfg.op = name ? name : op_name(op);
  cfg.out_dtype = kBool;
  if (!out.defined() && TensorIter::can_build_flat({}, a, &b, cfg)) {  // contiguous, one dtype and shape
    auto it = TensorIter::build_flat({}, a, &b, cfg);
    kernel<&KernelTable::compare>(it.device(), cfg.op)(op, it, nullptr);
    return it.take_result();
  }
  auto it = TensorIter::build(out, {a, b}, cfg);
  kernel<&KernelTable::compare>(it.device(), cfg.op)(op, it, nullptr);
  it.finish();
  if (out.defined()) bump_version(out);
  return it.take_result();
}

Tensor compare(CompareOp op, const Tensor& a, const Scalar& b, const Tensor& out = {}, const char* name = nullptr) {
  IterConfig cfg;
  cfg.op = name ? name : op_name(op);
  cfg.out_dtype = kBool;
  cfg.scalar = &b;
  if (!out.defined() && TensorIter::can_build_flat({}, a, nullptr, cfg)) {
    auto it = TensorIter::build_flat({}, a, nullptr, cfg);
    kernel<&KernelTable::compare>(it.device(), cfg.op)(op, it, &b);
    return it.take_result();
  }
  auto it = TensorIter::build(out, {a}, cfg);
  kernel<&KernelTable::compare>(it.device(), cfg.op)(op, it, &b);
  it.finish();
  if (out.defined()) bump_version(out);
  return it.take_result();
}

// self.op_(other) of a logical op: the bool result written into self as 0 or 1; with grad,
// the value adopted by self as other in-place ops do (the result has no gradient).
template <class F>
Tensor& logical_inplace(Tensor& self, const char* name, F&& value) {
  check_defined(self, name, "self");
  if (needs_grad(self)) [[unlikely]]
    return autograd::inplace(self, name, [&](const Tensor& t) { return value(t, Tensor()).to(t.dtype()); });
  value(self, self);
  return self;
}

// cond ? a : b in dtype, into out (undefined: a new tensor).
// masked: names the operands (mask, value, self) rather than (condition, self, other).
Tensor where_impl(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b, Dtype dtype,
                  const char* op, bool masked) {
  IterConfig cfg;
  cfg.op = op;
  cfg.names[0] = masked ? "mask" : "condition";
  cfg.names[1] = masked ? "value" : "self";
  cfg.names[2] = masked ? "self" : "other";
  WICK_CHECK(cond.dtype() == kBool, TypeError, op, "expected ", cfg.names[0],
             " to be a boolean tensor, but got a tensor with dtype ", cond.dtype());
  cfg.compute_dtype = dtype;
  cfg.keep_dtype = 1;  // the condition stays bool
  // PyTorch's masked_fill fills a row-major clone of self; where follows its operands' layout.
  cfg.contiguous_output = masked;
  auto it = TensorIter::build(out, {cond, a, b}, cfg);
  kernel<&KernelTable::where>(it.device(), op)(it);
  it.finish();
  if (out.defined()) bump_version(out);
  return it.result();
}

// value as a 0-d tensor of dtype on device (masked_fill and the scalar forms of where).
Tensor scalar_tensor(const Scalar& value, Dtype dtype, Device device) {
  return full({}, value, TensorOptions(dtype).device(device));
}

Tensor masked_value(const Tensor& value, const Tensor& self, const char* op) {
  WICK_CHECK(value.dim() == 0, ValueError, op, "only supports a 0-dimensional value tensor, but got tensor with ",
             value.dim(), " dimension(s).");
  return value.to(self.device(), self.dtype());
}

}  // namespace

// The functions, operators and methods of each line of WICK_COMPARE_OPS.
#define WICK_X(Name, name, op, Mirror)                                                                         \
  Tensor name(const Tensor& a, const Tensor& b) { return compare(CompareOp::Name, a, b); }                      \
  Tensor name(const Tensor& a, const Scalar& b) { return compare(CompareOp::Name, a, b); }                      \
  Tensor operator op(const Tensor& a, const Tensor& b) { return compare(CompareOp::Name, a, b); }               \
  Tensor operator op(const Tensor& a, const Scalar& b) { return compare(CompareOp::Name, a, b); }               \
  Tensor operator op(const Scalar& a, const Tensor& b) { return compare(mirror(CompareOp::Name), b, a); }        \
  Tensor Tensor::name(const Tensor& o) const { return compare(CompareOp::Name, *this, o); }                     \
  Tensor Tensor::name(const Scalar& o) const { return compare(CompareOp::Name, *this, o); }
WICK_COMPARE_OPS(WICK_X)
#undef WICK_X

// The functions and methods of each line of WICK_LOGICAL_OPS, and logical_not (x == 0).
#define WICK_X(Name, name)                                                                          \
  Tensor name(const Tensor& a, const Tensor& b) {                                                   \
    check_defined(a, #name, "self");                                                                \
    check_defined(b, #name, "other");                                                               \
    return compare(CompareOp::Name, a, b);                                                          \
  }                                                                                                 \
  Tensor Tensor::name(const Tensor& o) const { return wick::name(*this, o); }                      \
  Tensor& Tensor::name##_(const Tensor& o) {                                                        \
    check_defined(o, #name "_", "other");                                                           \
    return logical_inplace(*this, #name "_", [&](const Tensor& t, const Tensor& out) {           \
      return compare(CompareOp::Name, t, o, out, #name "_");                                        \
    });                                                                                             \
  }
WICK_LOGICAL_OPS(WICK_X)
#undef WICK_X

Tensor logical_not(const Tensor& t) {
  check_defined(t, "logical_not", "self");
  return compare(CompareOp::Eq, t, Scalar(false), {}, "logical_not");
}
Tensor Tensor::logical_not() const { return wick::logical_not(*this); }
Tensor& Tensor::logical_not_() {
  return logical_inplace(*this, "logical_not_", [](const Tensor& t, const Tensor& out) {
    return compare(CompareOp::Eq, t, Scalar(false), out, "logical_not_");
  });
}

// ---- where

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  check_defined(cond, "where", "condition");
  check_defined(a, "where", "self");
  check_defined(b, "where", "other");
  const bool grad = needs_grad(a, b);
  Tensor out = forward_once(grad, [&] { return where_impl({}, cond, a, b, result_type({a, b}), "where", false); });
  if (grad) [[unlikely]] autograd::record_where(cond, &a, &b, out);
  return out;
}
Tensor where(const Tensor& cond, const Tensor& a, const Scalar& b) {
  check_defined(cond, "where", "condition");
  check_defined(a, "where", "self");
  const bool grad = needs_grad(a);
  Tensor out = forward_once(grad, [&] {
    const Dtype t = result_type({a}, &b);
    return where(cond, a, scalar_tensor(b, t, a.device()));
  });
  if (grad) [[unlikely]] autograd::record_where(cond, &a, nullptr, out);
  return out;
}
Tensor where(const Tensor& cond, const Scalar& a, const Tensor& b) {
  check_defined(cond, "where", "condition");
  check_defined(b, "where", "other");
  const bool grad = needs_grad(b);
  Tensor out = forward_once(grad, [&] {
    const Dtype t = result_type({b}, &a);
    return where(cond, scalar_tensor(a, t, b.device()), b);
  });
  if (grad) [[unlikely]] autograd::record_where(cond, nullptr, &b, out);
  return out;
}
Tensor where(const Tensor& cond, const Scalar& a, const Scalar& b) {
  check_defined(cond, "where", "condition");
  const Dtype t = promote_types(a.dtype(), b.dtype());
  return where(cond, scalar_tensor(a, t, cond.device()), scalar_tensor(b, t, cond.device()));
}
Tensor Tensor::where(const Tensor& cond, const Tensor& other) const {
  return wick::where(cond, *this, other);
}

// ---- masked_fill: self where the mask is false, value where it is true; value is cast to
// self's dtype (no promotion), as in PyTorch.

Tensor masked_fill(const Tensor& t, const Tensor& mask, const Scalar& value) {
  return wick::detail::as_op("masked_fill", [&]() -> Tensor {
    check_defined(t, "masked_fill", "self");
    check_defined(mask, "masked_fill", "mask");
    const bool grad = needs_grad(t);
    Tensor out = forward_once(grad, [&] {
      return where_impl({}, mask, scalar_tensor(value, t.dtype(), t.device()), t, t.dtype(), "masked_fill", true);
    });
    if (grad) [[unlikely]] autograd::record_masked_fill(t, mask, nullptr, out);
    return out;
  });
}
Tensor masked_fill(const Tensor& t, const Tensor& mask, const Tensor& value) {
  return wick::detail::as_op("masked_fill", [&]() -> Tensor {
    check_defined(t, "masked_fill", "self");
    check_defined(mask, "masked_fill", "mask");
    check_defined(value, "masked_fill", "value");
    const bool grad = needs_grad(t, value);
    Tensor out = forward_once(grad, [&] {
      return where_impl({}, mask, masked_value(value, t, "masked_fill"), t, t.dtype(), "masked_fill", true);
    });
    if (grad) [[unlikely]] autograd::record_masked_fill(t, mask, &value, out);
    return out;
  });
}
Tensor Tensor::masked_fill(const Tensor& mask, const Scalar& value) const {
  return wick::masked_fill(*this, mask, value);
}
Tensor Tensor::masked_fill(const Tensor& mask, const Tensor& value) const {
  return wick::masked_fill(*this, mask, value);
}
Tensor& Tensor::masked_fill_(const Tensor& mask, const Scalar& value) {
  return wick::detail::as_op("masked_fill_", [&]() -> Tensor& {
    check_defined(*this, "masked_fill_", "self");
    check_defined(mask, "masked_fill_", "mask");
    if (needs_grad(*this)) [[unlikely]]
      return autograd::inplace(*this, "masked_fill_",
                               [&](const Tensor& t) { return wick::masked_fill(t, mask, value); });
    where_impl(*this, mask, scalar_tensor(value, dtype(), device()), *this, dtype(), "masked_fill_", true);
    return *this;
  });
}
Tensor& Tensor::masked_fill_(const Tensor& mask, const Tensor& value) {
  return wick::detail::as_op("masked_fill_", [&]() -> Tensor& {
    check_defined(*this, "masked_fill_", "self");
    check_defined(mask, "masked_fill_", "mask");
    check_defined(value, "masked_fill_", "value");
    if (needs_grad(*this, value)) [[unlikely]]
      return autograd::inplace(*this, "masked_fill_",
                               [&](const Tensor& t) { return wick::masked_fill(t, mask, value); });
    where_impl(*this, mask, masked_value(value, *this, "masked_fill_"), *this, dtype(), "masked_fill_", true);
    return *this;
  });
}

}  // namespace wick
