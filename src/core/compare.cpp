// Comparisons (== != < <= > >=, to bool), where and masked_fill. Comparisons promote their
// operands to a common dtype first, as PyTorch does; where's condition and masked_fill's mask
// must be bool and are read as bool by the kernel (no cast).
#include "autograd/hooks.h"
#include "core/as_op.h"
#include "core/kernel_table.h"
#include "core/tensor_ops.h"
#include "wick/ops.h"

namespace wick {

using namespace detail;

namespace {

// a op b mirrored for b op a: 2 < t is t > 2.
constexpr CompareOp mirror(CompareOp op) {
  switch (op) {
    case CompareOp::Lt: return CompareOp::Gt;
    case CompareOp::Le: return CompareOp::Ge;
    case CompareOp::Gt: return CompareOp::Lt;
    case CompareOp::Ge: return CompareOp::Le;
    default: return op;
  }
}

Tensor compare(CompareOp op, const Tensor& a, const Tensor& b) {
  IterConfig cfg;
  cfg.op = op_name(op);
  cfg.out_dtype = kBool;
  if (TensorIter::can_build_flat({}, a, &b, cfg)) {  // contiguous, one dtype and shape
    auto it = TensorIter::build_flat({}, a, &b, cfg);
    kernel<&KernelTable::compare>(it.device(), cfg.op)(op, it, nullptr);
    return it.take_result();
  }
  auto it = TensorIter::build({}, {a, b}, cfg);
  kernel<&KernelTable::compare>(it.device(), cfg.op)(op, it, nullptr);
  return it.take_result();
}

Tensor compare(CompareOp op, const Tensor& a, const Scalar& b) {
  IterConfig cfg;
  cfg.op = op_name(op);
  cfg.out_dtype = kBool;
  cfg.scalar = &b;
  if (TensorIter::can_build_flat({}, a, nullptr, cfg)) {
    auto it = TensorIter::build_flat({}, a, nullptr, cfg);
    kernel<&KernelTable::compare>(it.device(), cfg.op)(op, it, &b);
    return it.take_result();
  }
  auto it = TensorIter::build({}, {a}, cfg);
  kernel<&KernelTable::compare>(it.device(), cfg.op)(op, it, &b);
  return it.take_result();
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

Tensor eq(const Tensor& a, const Tensor& b) { return compare(CompareOp::Eq, a, b); }
Tensor ne(const Tensor& a, const Tensor& b) { return compare(CompareOp::Ne, a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return compare(CompareOp::Lt, a, b); }
Tensor le(const Tensor& a, const Tensor& b) { return compare(CompareOp::Le, a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return compare(CompareOp::Gt, a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return compare(CompareOp::Ge, a, b); }
Tensor eq(const Tensor& a, const Scalar& b) { return compare(CompareOp::Eq, a, b); }
Tensor ne(const Tensor& a, const Scalar& b) { return compare(CompareOp::Ne, a, b); }
Tensor lt(const Tensor& a, const Scalar& b) { return compare(CompareOp::Lt, a, b); }
Tensor le(const Tensor& a, const Scalar& b) { return compare(CompareOp::Le, a, b); }
Tensor gt(const Tensor& a, const Scalar& b) { return compare(CompareOp::Gt, a, b); }
Tensor ge(const Tensor& a, const Scalar& b) { return compare(CompareOp::Ge, a, b); }

Tensor operator==(const Tensor& a, const Tensor& b) { return eq(a, b); }
Tensor operator!=(const Tensor& a, const Tensor& b) { return ne(a, b); }
Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b); }
Tensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b); }
Tensor operator==(const Tensor& a, const Scalar& b) { return eq(a, b); }
Tensor operator!=(const Tensor& a, const Scalar& b) { return ne(a, b); }
Tensor operator<(const Tensor& a, const Scalar& b) { return lt(a, b); }
Tensor operator<=(const Tensor& a, const Scalar& b) { return le(a, b); }
Tensor operator>(const Tensor& a, const Scalar& b) { return gt(a, b); }
Tensor operator>=(const Tensor& a, const Scalar& b) { return ge(a, b); }
Tensor operator==(const Scalar& a, const Tensor& b) { return compare(mirror(CompareOp::Eq), b, a); }
Tensor operator!=(const Scalar& a, const Tensor& b) { return compare(mirror(CompareOp::Ne), b, a); }
Tensor operator<(const Scalar& a, const Tensor& b) { return compare(mirror(CompareOp::Lt), b, a); }
Tensor operator<=(const Scalar& a, const Tensor& b) { return compare(mirror(CompareOp::Le), b, a); }
Tensor operator>(const Scalar& a, const Tensor& b) { return compare(mirror(CompareOp::Gt), b, a); }
Tensor operator>=(const Scalar& a, const Tensor& b) { return compare(mirror(CompareOp::Ge), b, a); }

Tensor Tensor::eq(const Tensor& o) const { return wick::eq(*this, o); }
Tensor Tensor::ne(const Tensor& o) const { return wick::ne(*this, o); }
Tensor Tensor::lt(const Tensor& o) const { return wick::lt(*this, o); }
Tensor Tensor::le(const Tensor& o) const { return wick::le(*this, o); }
Tensor Tensor::gt(const Tensor& o) const { return wick::gt(*this, o); }
Tensor Tensor::ge(const Tensor& o) const { return wick::ge(*this, o); }
Tensor Tensor::eq(const Scalar& o) const { return wick::eq(*this, o); }
Tensor Tensor::ne(const Scalar& o) const { return wick::ne(*this, o); }
Tensor Tensor::lt(const Scalar& o) const { return wick::lt(*this, o); }
Tensor Tensor::le(const Scalar& o) const { return wick::le(*this, o); }
Tensor Tensor::gt(const Scalar& o) const { return wick::gt(*this, o); }
Tensor Tensor::ge(const Scalar& o) const { return wick::ge(*this, o); }

// ---- where

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  check_defined(cond, "where", "condition");
  check_defined(a, "where", "self");
  check_defined(b, "where", "other");
  if (needs_grad(a, b)) [[unlikely]] return autograd::where(cond, a, b);
  return where_impl({}, cond, a, b, result_type({a, b}), "where", false);
}
Tensor where(const Tensor& cond, const Tensor& a, const Scalar& b) {
  check_defined(cond, "where", "condition");
  check_defined(a, "where", "self");
  if (needs_grad(a)) [[unlikely]] return autograd::where(cond, a, b);
  const Dtype t = result_type({a}, &b);
  return where(cond, a, scalar_tensor(b, t, a.device()));
}
Tensor where(const Tensor& cond, const Scalar& a, const Tensor& b) {
  check_defined(cond, "where", "condition");
  check_defined(b, "where", "other");
  if (needs_grad(b)) [[unlikely]] return autograd::where(cond, a, b);
  const Dtype t = result_type({b}, &a);
  return where(cond, scalar_tensor(a, t, b.device()), b);
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
    if (needs_grad(t)) [[unlikely]]
      return autograd::masked_fill(t, mask, value);
    return where_impl({}, mask, scalar_tensor(value, t.dtype(), t.device()), t, t.dtype(), "masked_fill",
                      true);
  });
}
Tensor masked_fill(const Tensor& t, const Tensor& mask, const Tensor& value) {
  return wick::detail::as_op("masked_fill", [&]() -> Tensor {
    check_defined(t, "masked_fill", "self");
    check_defined(mask, "masked_fill", "mask");
    check_defined(value, "masked_fill", "value");
    if (needs_grad(t, value)) [[unlikely]]
      return autograd::masked_fill(t, mask, value);
    return where_impl({}, mask, masked_value(value, t, "masked_fill"), t, t.dtype(), "masked_fill", true);
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
