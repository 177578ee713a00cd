// + - * / for tensors and scalars, in new and in-place forms, through one path:
// TensorIter plans (devices, broadcast, promotion, output), the backend's binary kernel runs.
#include "autograd/hooks.h"
#include "core/kernel_table.h"
#include "core/tensor_ops.h"
#include "wick/ops.h"

namespace wick {

using namespace detail;

namespace {

void check_sub_bool(BinaryOp op, Dtype a, Dtype b, const char* name) {
  if (op == BinaryOp::Sub && a == kBool && b == kBool) [[unlikely]]
    raise<TypeError>(name ? name : "sub", "Subtraction, the `-` operator, with two bool tensors is not supported. "
                            "Use the `^` or `logical_xor()` operator instead.");
}

// PyTorch's alpha rule for add/sub: a floating alpha with an integral (or bool) computation.
void check_alpha(Dtype compute, const Scalar& alpha, const char* op) {
  if (alpha.is_floating_point() && is_integral(compute, true)) [[unlikely]]
    raise<ValueError>(op, "For integral input tensors, argument alpha must not be a floating point number.");
  if (alpha.is_bool() && compute != kBool) [[unlikely]]
    raise<ValueError>(op, "Boolean alpha only supported for Boolean results.");
}

// Runs the kernel over a plan built for out (undefined: a new result; out == a: in place).
Tensor run(BinaryOp op, TensorIter& it, const Tensor& out, const Scalar* scalar, const Scalar& alpha,
           const char* name) {
  check_alpha(it.dtype(), alpha, name);
  kernel<&KernelTable::binary>(it.device(), name)(op, it, scalar, alpha);
  it.finish();
  if (out.defined()) bump_version(out);
  return it.take_result();
}

// build_flat's call (can_build_flat holds) of a small op on the CPU, run without a plan by the
// backend's flat kernel: the same checks in the same order, the same output, the same values.
Tensor run_flat(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor* b, const Scalar* scalar,
                const Scalar& alpha, const char* name) {
  if (out.defined() && b) check_no_partial_overlap(out, *b, name);
  const Dtype dtype = a.impl()->dtype();
  Tensor result = out.defined() ? out : new_flat_output(a, dtype, name);
  check_alpha(dtype, alpha, name);
  kernel<&KernelTable::binary_flat>(a.impl()->device(), name)(
      op, dtype, result.impl()->data(), a.impl()->data(), b ? b->impl()->data() : nullptr, scalar, alpha,
      a.impl()->numel());
  if (out.defined()) bump_version(out);
  return result;
}

bool flat_kernel_fits(const Tensor& a) {
  return a.impl()->numel() <= kFlatKernelMax && a.impl()->device().is_cpu();
}

// out undefined: a new result; out == a: in place.
// name: the op as called, when it is not op_name(op) (the in-place forms, "add_").
// Inputs of one dtype, shape and device, contiguous (the common case), take build_flat's plan.
Tensor binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha,
              const char* name = nullptr) {
  check_sub_bool(op, a.dtype(), b.dtype(), name);
  IterConfig cfg;
  cfg.op = name ? name : op_name(op);
  cfg.int_to_float = op == BinaryOp::Div;
  if (TensorIter::can_build_flat(out, a, &b, cfg)) {
    if (flat_kernel_fits(a)) return run_flat(op, out, a, &b, nullptr, alpha, cfg.op);
    auto it = TensorIter::build_flat(out, a, &b, cfg);
    return run(op, it, out, nullptr, alpha, cfg.op);
  }
  auto it = TensorIter::build(out, {a, b}, cfg);
  return run(op, it, out, nullptr, alpha, cfg.op);
}

Tensor binary(BinaryOp op, const Tensor& out, const Tensor& a, const Scalar& b, const Scalar& alpha,
              const char* name = nullptr) {
  check_defined(a, name ? name : op_name(op), "self");
  check_sub_bool(op, a.dtype(), b.is_bool() ? kBool : kInt64, name);
  IterConfig cfg;
  cfg.op = name ? name : op_name(op);
  cfg.int_to_float = op == BinaryOp::Div;
  cfg.scalar = &b;
  if (TensorIter::can_build_flat(out, a, nullptr, cfg)) {
    if (flat_kernel_fits(a)) return run_flat(op, out, a, nullptr, &b, alpha, cfg.op);
    auto it = TensorIter::build_flat(out, a, nullptr, cfg);
    return run(op, it, out, &b, alpha, cfg.op);
  }
  auto it = TensorIter::build(out, {a}, cfg);
  return run(op, it, out, &b, alpha, cfg.op);
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  check_defined(a, "add", "self");
  check_defined(b, "add", "other");
  if (needs_grad(a, b)) [[unlikely]] return autograd::add(a, b, alpha);
  return binary(BinaryOp::Add, {}, a, b, alpha);
}
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  if (needs_grad(a)) [[unlikely]] return autograd::add(a, b, alpha);
  return binary(BinaryOp::Add, {}, a, b, alpha);
}
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  check_defined(a, "sub", "self");
  check_defined(b, "sub", "other");
  if (needs_grad(a, b)) [[unlikely]] return autograd::sub(a, b, alpha);
  return binary(BinaryOp::Sub, {}, a, b, alpha);
}
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  if (needs_grad(a)) [[unlikely]] return autograd::sub(a, b, alpha);
  return binary(BinaryOp::Sub, {}, a, b, alpha);
}
Tensor mul(const Tensor& a, const Tensor& b) {
  check_defined(a, "mul", "self");
  check_defined(b, "mul", "other");
  if (needs_grad(a, b)) [[unlikely]] return autograd::mul(a, b);
  return binary(BinaryOp::Mul, {}, a, b, 1);
}
Tensor mul(const Tensor& a, const Scalar& b) {
  if (needs_grad(a)) [[unlikely]] return autograd::mul(a, b);
  return binary(BinaryOp::Mul, {}, a, b, 1);
}
Tensor div(const Tensor& a, const Tensor& b) {
  check_defined(a, "div", "self");
  check_defined(b, "div", "other");
  if (needs_grad(a, b)) [[unlikely]] return autograd::div(a, b);
  return binary(BinaryOp::Div, {}, a, b, 1);
}
Tensor div(const Tensor& a, const Scalar& b) {
  if (needs_grad(a)) [[unlikely]] return autograd::div(a, b);
  return binary(BinaryOp::Div, {}, a, b, 1);
}

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator+(const Tensor& a, const Scalar& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Scalar& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Scalar& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Scalar& b) { return div(a, b); }
Tensor operator+(const Scalar& a, const Tensor& b) { return add(b, a); }
Tensor operator*(const Scalar& a, const Tensor& b) { return mul(b, a); }
// a - b == -b + a; a / b == a * (1 / b) would round differently, so divide a full tensor.
Tensor operator-(const Scalar& a, const Tensor& b) { return add(mul(b, -1), a); }
Tensor operator/(const Scalar& a, const Tensor& b) {
  return div(full_like(b, a, TensorOptions(result_type({b}, &a))), b);
}
Tensor operator-(const Tensor& a) { return neg(a); }

Tensor Tensor::add(const Tensor& o, const Scalar& alpha) const { return wick::add(*this, o, alpha); }
Tensor Tensor::sub(const Tensor& o, const Scalar& alpha) const { return wick::sub(*this, o, alpha); }
Tensor Tensor::mul(const Tensor& o) const { return wick::mul(*this, o); }
Tensor Tensor::div(const Tensor& o) const { return wick::div(*this, o); }

Tensor& Tensor::add_(const Tensor& o, const Scalar& alpha) {
  check_defined(*this, "add_", "self");
  check_defined(o, "add_", "other");
  if (needs_grad(*this, o)) [[unlikely]]
    return autograd::add_(*this, o, alpha);
  binary(BinaryOp::Add, *this, *this, o, alpha, "add_");
  return *this;
}
Tensor& Tensor::add_(const Scalar& o, const Scalar& alpha) {
  if (needs_grad(*this)) [[unlikely]]
    return autograd::add_(*this, o, alpha);
  binary(BinaryOp::Add, *this, *this, o, alpha, "add_");
  return *this;
}
Tensor& Tensor::sub_(const Tensor& o, const Scalar& alpha) {
  check_defined(*this, "sub_", "self");
  check_defined(o, "sub_", "other");
  if (needs_grad(*this, o)) [[unlikely]]
    return autograd::sub_(*this, o, alpha);
  binary(BinaryOp::Sub, *this, *this, o, alpha, "sub_");
  return *this;
}
Tensor& Tensor::sub_(const Scalar& o, const Scalar& alpha) {
  if (needs_grad(*this)) [[unlikely]]
    return autograd::sub_(*this, o, alpha);
  binary(BinaryOp::Sub, *this, *this, o, alpha, "sub_");
  return *this;
}
Tensor& Tensor::mul_(const Tensor& o) {
  check_defined(*this, "mul_", "self");
  check_defined(o, "mul_", "other");
  if (needs_grad(*this, o)) [[unlikely]]
    return autograd::mul_(*this, o);
  binary(BinaryOp::Mul, *this, *this, o, 1, "mul_");
  return *this;
}
Tensor& Tensor::mul_(const Scalar& o) {
  if (needs_grad(*this)) [[unlikely]]
    return autograd::mul_(*this, o);
  binary(BinaryOp::Mul, *this, *this, o, 1, "mul_");
  return *this;
}
Tensor& Tensor::div_(const Tensor& o) {
  check_defined(*this, "div_", "self");
  check_defined(o, "div_", "other");
  if (needs_grad(*this, o)) [[unlikely]]
    return autograd::div_(*this, o);
  binary(BinaryOp::Div, *this, *this, o, 1, "div_");
  return *this;
}
Tensor& Tensor::div_(const Scalar& o) {
  if (needs_grad(*this)) [[unlikely]]
    return autograd::div_(*this, o);
  binary(BinaryOp::Div, *this, *this, o, 1, "div_");
  return *this;
}

}  // namespace wick
