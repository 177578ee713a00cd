// + - * / for tensors and scalars, in new and in-place forms, through one path:
// TensorIter plans (devices, broadcast, promotion, output), the backend's binary kernel runs.
// The public forms are generated from the op list (WICK_BINARY_OPS in wick/detail/op_list.h).
#include <type_traits>

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

// Where the backend reads them as they are (KernelTable::binary_mixed_float: CUDA), a float32
// tensor with a float16 or bfloat16 one (autocast's residual stream, x + attn(x)) is computed
// without a cast of the 16-bit operand first: the kernel computes in float32, the values the cast
// would give. Both operands have dims (a 0-d one would leave the 16-bit dtype the result's); an
// output, if given, is float32.
uint8_t mixed_float_operands(const Tensor& out, const Tensor& a, const Tensor& b) {
  const Dtype da = a.dtype(), db = b.dtype();
  if (da == db || a.device() != b.device() || a.dim() == 0 || b.dim() == 0) return 0;
  if (!backend(a.device()).binary_mixed_float) return 0;
  if (out.defined() && out.dtype() != kFloat32) return 0;
  auto half = [](Dtype d) { return d == kBFloat16 || d == kFloat16; };
  if (!((da == kFloat32 && half(db)) || (db == kFloat32 && half(da)))) return 0;
  return da == kFloat32 ? 2 : 1;  // the 16-bit input keeps its dtype
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
  cfg.keep_dtype = mixed_float_operands(out, a, b);
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

// a op b: the result computed once, recorded when an operand requires grad.
Tensor binary_op(BinaryOp op, const char* name, const Tensor& a, const Tensor& b, const Scalar& alpha) {
  check_defined(a, name, "self");
  check_defined(b, name, "other");
  const bool grad = needs_grad(a, b);
  Tensor out = forward_once(grad, [&] { return binary(op, {}, a, b, alpha); });
  if (grad) [[unlikely]] autograd::record_binary(op, a, &b, nullptr, alpha, out);
  return out;
}
Tensor binary_op(BinaryOp op, const Tensor& a, const Scalar& b, const Scalar& alpha) {
  const bool grad = needs_grad(a);
  Tensor out = forward_once(grad, [&] { return binary(op, {}, a, b, alpha); });
  if (grad) [[unlikely]] autograd::record_binary(op, a, nullptr, &b, alpha, out);
  return out;
}

// self.op_(other): in place, or with grad the recorded op adopted by self (autograd::inplace).
template <class Other>
Tensor& binary_inplace(BinaryOp op, const char* name, Tensor& self, const Other& o, const Scalar& alpha) {
  constexpr bool tensor = std::is_same_v<Other, Tensor>;
  bool grad;
  if constexpr (tensor) grad = needs_grad(self, o);
  else grad = needs_grad(self);
  if (grad) [[unlikely]]
    return autograd::inplace(self, name, [&](const Tensor& t) {
      if constexpr (tensor) return binary_op(op, op_name(op), t, o, alpha);
      else return binary_op(op, t, o, alpha);
    });
  binary(op, self, self, o, alpha, name);
  return self;
}

}  // namespace

// The functions, methods and in-place methods of each line of WICK_BINARY_OPS.
#define WICK_X(Name, name, op, alpha)                                                                        \
  Tensor name(const Tensor& a, const Tensor& b WICK_OP_ALPHA_PARAM_##alpha) {                             \
    return binary_op(BinaryOp::Name, #name, a, b, WICK_OP_ALPHA_ARG_##alpha);                             \
  }                                                                                                          \
  Tensor name(const Tensor& a, const Scalar& b WICK_OP_ALPHA_PARAM_##alpha) {                             \
    return binary_op(BinaryOp::Name, a, b, WICK_OP_ALPHA_ARG_##alpha);                                    \
  }                                                                                                          \
  Tensor Tensor::name(const Tensor& o WICK_OP_ALPHA_PARAM_##alpha) const {                                \
    return wick::name(*this, o WICK_OP_ALPHA_PASS_##alpha);                                                 \
  }                                                                                                          \
  Tensor& Tensor::name##_(const Tensor& o WICK_OP_ALPHA_PARAM_##alpha) {                                  \
    check_defined(*this, #name "_", "self");                                                                 \
    check_defined(o, #name "_", "other");                                                                    \
    return binary_inplace(BinaryOp::Name, #name "_", *this, o, WICK_OP_ALPHA_ARG_##alpha);                 \
  }                                                                                                          \
  Tensor& Tensor::name##_(const Scalar& o WICK_OP_ALPHA_PARAM_##alpha) {                                  \
    return binary_inplace(BinaryOp::Name, #name "_", *this, o, WICK_OP_ALPHA_ARG_##alpha);                 \
  }                                                                                                          \
  Tensor operator op(const Tensor& a, const Tensor& b) { return name(a, b); }                               \
  Tensor operator op(const Tensor& a, const Scalar& b) { return name(a, b); }
WICK_BINARY_OPS(WICK_X)
#undef WICK_X

Tensor operator+(const Scalar& a, const Tensor& b) { return add(b, a); }
Tensor operator*(const Scalar& a, const Tensor& b) { return mul(b, a); }
// a - b == -b + a; a / b == a * (1 / b) would round differently, so divide a full tensor.
Tensor operator-(const Scalar& a, const Tensor& b) { return add(mul(b, -1), a); }
Tensor operator/(const Scalar& a, const Tensor& b) {
  return div(full_like(b, a, TensorOptions(result_type({b}, &a))), b);
}
Tensor operator-(const Tensor& a) { return neg(a); }

}  // namespace wick
