// Elementwise math: neg abs exp log sqrt rsqrt sin cos tanh sigmoid relu gelu silu, pow,
// remainder and clamp, in new and in-place forms. Each op plans a TensorIter (promotion by
// PyTorch's rules: float functions of integer tensors give the default float) and calls the
// backend's unary or pointwise family.
#include <cmath>
#include <string_view>

#include "autograd/hooks.h"
#include "core/autocast.h"
#include "core/kernel_table.h"
#include "core/tensor_ops.h"
#include "wick/ops.h"

namespace wick {

using namespace detail;

namespace {

// How an op treats dtypes: Float ops promote integer and bool inputs to the default float;
// Numeric ops keep the dtype and reject bool; FloatOnly ops reject every non-float dtype.
enum class Kind : uint8_t { Float, Numeric, FloatOnly };

void check_dtype(Kind kind, Dtype t, const char* op) {
  if (kind == Kind::Numeric && t == kBool) [[unlikely]]
    raise<TypeError>(op, "\"", op, "\" not implemented for 'bool'");
  if (kind == Kind::FloatOnly && !is_floating_point(t)) [[unlikely]]
    raise<TypeError>(op, "\"", op, "\" not implemented for '", t, "'");
}

// out undefined: a new tensor; out == t: in place.
Tensor unary(UnaryOp op, const Tensor& out, const Tensor& t, const char* name, Kind kind,
             const Scalar* a = nullptr, const Scalar* b = nullptr, std::optional<Dtype> compute = std::nullopt) {
  IterConfig cfg;
  cfg.op = name;
  cfg.int_to_float = kind == Kind::Float;
  cfg.compute_dtype = compute;  // set by the ops with scalars, which take part in promotion
  if (kind != Kind::Float) check_dtype(kind, compute ? *compute : t.dtype(), name);
  auto run = [&](TensorIter& it) {
    kernel<&KernelTable::unary>(it.device(), name)(op, it, a, b);
    it.finish();
    if (out.defined()) bump_version(out);
    return it.take_result();
  };
  if (TensorIter::can_build_flat(out, t, nullptr, cfg)) {  // contiguous, no cast: the common case
    auto it = TensorIter::build_flat(out, t, nullptr, cfg);
    return run(it);
  }
  auto it = TensorIter::build(out, {t}, cfg);
  return run(it);
}

Tensor pointwise(PointwiseOp op, const Tensor& out, std::initializer_list<Tensor> inputs, const char* name) {
  Dtype compute = result_type(inputs);
  check_dtype(Kind::Numeric, compute, name);
  IterConfig cfg;
  cfg.op = name;
  cfg.compute_dtype = compute;
  auto it = TensorIter::build(out, inputs, cfg);
  kernel<&KernelTable::pointwise>(it.device(), name)(op, it);
  it.finish();
  if (out.defined()) bump_version(out);
  return it.result();
}

void check_int_exponent(Dtype compute, const Scalar& e, const char* op) {
  WICK_CHECK(!is_integral(compute, true) || e.to<double>() >= 0, ValueError, op,
             "Integers to negative integer powers are not allowed.");
}

void check_divisor(Dtype compute, const Scalar& d, const char* op) {
  WICK_CHECK(is_floating_point(compute) || d.to<double>() != 0, ValueError, op,
             "ZeroDivisionError: integer remainder by zero");
}

// The dtype of clamp(t, lo, hi) with scalar bounds: each bound promotes like a wrapped number.
Dtype clamp_dtype(const Tensor& t, const Scalar* lo, const Scalar* hi) {
  WICK_CHECK(lo || hi, ValueError, "clamp", "At least one of 'min' or 'max' must not be None");
  Dtype r = t.dtype();
  if (lo) r = promote_types(r, result_type({t}, lo));
  if (hi) r = promote_types(r, result_type({t}, hi));
  return r;
}

Tensor clamp_tensors(const Tensor& out, const Tensor& t, const std::optional<Tensor>& lo,
                     const std::optional<Tensor>& hi, const char* name) {
  const bool has_lo = lo && lo->defined(), has_hi = hi && hi->defined();
  WICK_CHECK(has_lo || has_hi, ValueError, name, "At least one of 'min' or 'max' must not be None");
  if (has_lo && has_hi) return pointwise(PointwiseOp::Clamp, out, {t, *lo, *hi}, name);
  if (has_lo) return pointwise(PointwiseOp::ClampMin, out, {t, *lo}, name);
  return pointwise(PointwiseOp::ClampMax, out, {t, *hi}, name);
}

UnaryOp gelu_op(std::string_view approximate) {
  WICK_CHECK(approximate == "none" || approximate == "tanh", ValueError, "gelu",
             "approximate argument must be either none or tanh.");
  return approximate == "tanh" ? UnaryOp::GeluTanh : UnaryOp::Gelu;
}

}  // namespace

Tensor neg(const Tensor& t) {
  check_defined(t, "neg", "self");
  if (needs_grad(t)) [[unlikely]]
    return autograd::neg(t);
  WICK_CHECK(
      t.dtype() != kBool, TypeError, "neg",
      "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, "
      "use the `~` or `logical_not()` operator instead.");
  return unary(UnaryOp::Neg, {}, t, "neg", Kind::Numeric);
}
Tensor abs(const Tensor& t) {
  check_defined(t, "abs", "self");
  if (needs_grad(t)) [[unlikely]]
    return autograd::abs(t);
  return unary(UnaryOp::Abs, {}, t, "abs", Kind::Numeric);
}
Tensor exp(const Tensor& t) {
  check_defined(t, "exp", "self");
  if (autocast::active()) [[unlikely]]
    return autocast::run(
        autocast::Policy::Fp32, autocast::Policy::None, "exp", [&](const Tensor& x) { return wick::exp(x); },
        t);
  if (needs_grad(t)) [[unlikely]] return autograd::exp(t);
  return unary(UnaryOp::Exp, {}, t, "exp", Kind::Float);
}

Tensor expm1(const Tensor& t) {
  check_defined(t, "expm1", "self");
  if (needs_grad(t)) [[unlikely]]
    return autograd::expm1(t);
  return unary(UnaryOp::Expm1, {}, t, "expm1", Kind::Float);
}
Tensor log(const Tensor& t) {
  check_defined(t, "log", "self");
  if (autocast::active()) [[unlikely]]
    return autocast::run(
        autocast::Policy::Fp32, autocast::Policy::None, "log", [&](const Tensor& x) { return wick::log(x); },
        t);
  if (needs_grad(t)) [[unlikely]] return autograd::log(t);
  return unary(UnaryOp::Log, {}, t, "log", Kind::Float);
}
Tensor sqrt(const Tensor& t) {
  check_defined(t, "sqrt", "self");
  if (needs_grad(t)) [[unlikely]]
    return autograd::sqrt(t);
  return unary(UnaryOp::Sqrt, {}, t, "sqrt", Kind::Float);
}
Tensor rsqrt(const Tensor& t) {
  check_defined(t, "rsqrt", "self");
  if (autocast::active()) [[unlikely]]
    return autocast::run(
        autocast::Policy::Fp32, autocast::Policy::None, "rsqrt",
        [&](const Tensor& x) { return wick::rsqrt(x); }, t);
  if (needs_grad(t)) [[unlikely]] return autograd::rsqrt(t);
  return unary(UnaryOp::Rsqrt, {}, t, "rsqrt", Kind::Float);
}
Tensor sin(const Tensor& t) {
  check_defined(t, "sin", "self");
  if (needs_grad(t)) [[unlikely]]
    return autograd::sin(t);
  return unary(UnaryOp::Sin, {}, t, "sin", Kind::Float);
}
Tensor cos(const Tensor& t) {
  check_defined(t, "cos", "self");
  if (needs_grad(t)) [[unlikely]]
    return autograd::cos(t);
  return unary(UnaryOp::Cos, {}, t, "cos", Kind::Float);
}
Tensor tanh(const Tensor& t) {
  check_defined(t, "tanh", "self");
  if (needs_grad(t)) [[unlikely]]
    return autograd::tanh(t);
  return unary(UnaryOp::Tanh, {}, t, "tanh", Kind::Float);
}
Tensor sigmoid(const Tensor& t) {
  check_defined(t, "sigmoid", "self");
  if (needs_grad(t)) [[unlikely]]
    return autograd::sigmoid(t);
  return unary(UnaryOp::Sigmoid, {}, t, "sigmoid", Kind::Float);
}
Tensor relu(const Tensor& t) {
  check_defined(t, "relu", "self");
  if (needs_grad(t)) [[unlikely]]
    return autograd::relu(t);
  WICK_CHECK(t.dtype() != kBool, TypeError, "relu", "Boolean inputs not supported for relu");
  return unary(UnaryOp::Relu, {}, t, "relu", Kind::Numeric);
}
Tensor gelu(const Tensor& t, std::string_view approximate) {
  check_defined(t, "gelu", "self");
  if (needs_grad(t)) [[unlikely]]
    return autograd::gelu(t, approximate);
  return unary(gelu_op(approximate), {}, t, "gelu", Kind::FloatOnly);
}
Tensor silu(const Tensor& t) {
  check_defined(t, "silu", "self");
  if (needs_grad(t)) [[unlikely]]
    return autograd::silu(t);
  return unary(UnaryOp::Silu, {}, t, "silu", Kind::FloatOnly);
}

Tensor pow(const Tensor& t, const Scalar& exponent) {
  check_defined(t, "pow", "self");
  if (autocast::active()) [[unlikely]]
    return autocast::run(
        autocast::Policy::Fp32, autocast::Policy::None, "pow",
        [&](const Tensor& x) { return wick::pow(x, exponent); }, t);
  if (needs_grad(t)) [[unlikely]] return autograd::pow(t, exponent);
  const Dtype c = result_type({t}, &exponent);
  check_int_exponent(c, exponent, "pow");
  return unary(UnaryOp::Pow, {}, t, "pow", Kind::Numeric, &exponent, nullptr, c);
}
Tensor pow(const Tensor& t, const Tensor& exponent) {
  check_defined(t, "pow", "self");
  check_defined(exponent, "pow", "exponent");
  if (autocast::active()) [[unlikely]]
    return autocast::run(
        autocast::Policy::Fp32, autocast::Policy::None, "pow",
        [&](const Tensor& x, const Tensor& e) { return wick::pow(x, e); }, t, exponent);
  if (needs_grad(t, exponent)) [[unlikely]] return autograd::pow(t, exponent);
  return pointwise(PointwiseOp::Pow, {}, {t, exponent}, "pow");
}
Tensor pow(const Scalar& base, const Tensor& exponent) {
  check_defined(exponent, "pow", "exponent");
  if (autocast::active()) [[unlikely]]
    return autocast::run(
        autocast::Policy::Fp32, autocast::Policy::None, "pow",
        [&](const Tensor& x) { return wick::pow(base, x); }, exponent);
  if (needs_grad(exponent)) [[unlikely]] return autograd::pow(base, exponent);
  return unary(UnaryOp::RPow, {}, exponent, "pow", Kind::Numeric, &base, nullptr, result_type({exponent}, &base));
}

Tensor remainder(const Tensor& t, const Scalar& other) {
  check_defined(t, "remainder", "self");
  if (needs_grad(t)) [[unlikely]]
    return autograd::remainder(t, other);
  const Dtype c = result_type({t}, &other);
  check_divisor(c, other, "remainder");
  return unary(UnaryOp::Remainder, {}, t, "remainder", Kind::Numeric, &other, nullptr, c);
}
Tensor remainder(const Tensor& t, const Tensor& other) {
  check_defined(t, "remainder", "self");
  check_defined(other, "remainder", "other");
  if (needs_grad(t, other)) [[unlikely]]
    return autograd::remainder(t, other);
  return pointwise(PointwiseOp::Remainder, {}, {t, other}, "remainder");
}

Tensor clamp(const Tensor& t, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  check_defined(t, "clamp", "self");
  if (needs_grad(t)) [[unlikely]]
    return autograd::clamp(t, min, max);
  const Scalar* lo = min ? &*min : nullptr;
  const Scalar* hi = max ? &*max : nullptr;
  return unary(UnaryOp::Clamp, {}, t, "clamp", Kind::Numeric, lo, hi, clamp_dtype(t, lo, hi));
}
Tensor clamp(const Tensor& t, const std::optional<Tensor>& min, const std::optional<Tensor>& max) {
  check_defined(t, "clamp", "self");
  if (needs_grad(t, min.value_or(Tensor()), max.value_or(Tensor()))) [[unlikely]]
    return autograd::clamp(t, min, max);
  return clamp_tensors({}, t, min, max, "clamp");
}
Tensor clamp_min(const Tensor& t, const Scalar& min) {
  check_defined(t, "clamp_min", "self");
  if (needs_grad(t)) [[unlikely]]
    return autograd::clamp_min(t, min);
  return unary(UnaryOp::Clamp, {}, t, "clamp_min", Kind::Numeric, &min, nullptr,
               clamp_dtype(t, &min, nullptr));
}
Tensor clamp_min(const Tensor& t, const Tensor& min) {
  check_defined(t, "clamp_min", "self");
  check_defined(min, "clamp_min", "min");
  if (needs_grad(t, min)) [[unlikely]]
    return autograd::clamp_min(t, min);
  return clamp_tensors({}, t, min, std::nullopt, "clamp_min");
}
Tensor clamp_max(const Tensor& t, const Scalar& max) {
  check_defined(t, "clamp_max", "self");
  if (needs_grad(t)) [[unlikely]]
    return autograd::clamp_max(t, max);
  return unary(UnaryOp::Clamp, {}, t, "clamp_max", Kind::Numeric, nullptr, &max,
               clamp_dtype(t, nullptr, &max));
}
Tensor clamp_max(const Tensor& t, const Tensor& max) {
  check_defined(t, "clamp_max", "self");
  check_defined(max, "clamp_max", "max");
  if (needs_grad(t, max)) [[unlikely]]
    return autograd::clamp_max(t, max);
  return clamp_tensors({}, t, std::nullopt, max, "clamp_max");
}

// ---- methods

Tensor Tensor::neg() const { return wick::neg(*this); }
Tensor Tensor::abs() const { return wick::abs(*this); }
Tensor Tensor::exp() const { return wick::exp(*this); }
Tensor Tensor::expm1() const { return wick::expm1(*this); }
Tensor Tensor::log() const { return wick::log(*this); }
Tensor Tensor::sqrt() const { return wick::sqrt(*this); }
Tensor Tensor::rsqrt() const { return wick::rsqrt(*this); }
Tensor Tensor::sin() const { return wick::sin(*this); }
Tensor Tensor::cos() const { return wick::cos(*this); }
Tensor Tensor::tanh() const { return wick::tanh(*this); }
Tensor Tensor::sigmoid() const { return wick::sigmoid(*this); }
Tensor Tensor::relu() const { return wick::relu(*this); }
Tensor Tensor::pow(const Scalar& e) const { return wick::pow(*this, e); }
Tensor Tensor::pow(const Tensor& e) const { return wick::pow(*this, e); }
Tensor Tensor::remainder(const Scalar& o) const { return wick::remainder(*this, o); }
Tensor Tensor::remainder(const Tensor& o) const { return wick::remainder(*this, o); }
Tensor Tensor::clamp(const std::optional<Scalar>& min, const std::optional<Scalar>& max) const {
  check_defined(*this, "clamp", "self");
  return wick::clamp(*this, min, max);
}
Tensor Tensor::clamp(const std::optional<Tensor>& min, const std::optional<Tensor>& max) const {
  check_defined(*this, "clamp", "self");
  return wick::clamp(*this, min, max);
}
Tensor Tensor::clamp_min(const Scalar& min) const { return wick::clamp_min(*this, min); }
Tensor Tensor::clamp_max(const Scalar& max) const { return wick::clamp_max(*this, max); }

// ---- in place: the result dtype must cast to this tensor's (an integer tensor can't take exp)

Tensor& Tensor::neg_() {
  check_defined(*this, "neg_", "self");
  if (needs_grad(*this)) [[unlikely]]
    return autograd::inplace(*this, "neg_", [&](const Tensor& t) { return wick::neg(t); });
  WICK_CHECK(dtype() != kBool, TypeError, "neg_",
             "Negation, the `-` operator, on a bool tensor is not supported.");
  unary(UnaryOp::Neg, *this, *this, "neg_", Kind::Numeric);
  return *this;
}
Tensor& Tensor::abs_() {
  check_defined(*this, "abs_", "self");
  if (needs_grad(*this)) [[unlikely]]
    return autograd::inplace(*this, "abs_", [&](const Tensor& t) { return wick::abs(t); });
  unary(UnaryOp::Abs, *this, *this, "abs_", Kind::Numeric);
  return *this;
}
Tensor& Tensor::exp_() {
  check_defined(*this, "exp_", "self");
  if (needs_grad(*this)) [[unlikely]]
    return autograd::inplace(*this, "exp_", [&](const Tensor& t) { return wick::exp(t); });
  unary(UnaryOp::Exp, *this, *this, "exp_", Kind::Float);
  return *this;
}
Tensor& Tensor::expm1_() {
  check_defined(*this, "expm1_", "self");
  if (needs_grad(*this)) [[unlikely]]
    return autograd::inplace(*this, "expm1_", [&](const Tensor& t) { return wick::expm1(t); });
  unary(UnaryOp::Expm1, *this, *this, "expm1_", Kind::Float);
  return *this;
}
Tensor& Tensor::log_() {
  check_defined(*this, "log_", "self");
  if (needs_grad(*this)) [[unlikely]]
    return autograd::inplace(*this, "log_", [&](const Tensor& t) { return wick::log(t); });
  unary(UnaryOp::Log, *this, *this, "log_", Kind::Float);
  return *this;
}
Tensor& Tensor::sqrt_() {
  check_defined(*this, "sqrt_", "self");
  if (needs_grad(*this)) [[unlikely]]
    return autograd::inplace(*this, "sqrt_", [&](const Tensor& t) { return wick::sqrt(t); });
  unary(UnaryOp::Sqrt, *this, *this, "sqrt_", Kind::Float);
  return *this;
}
Tensor& Tensor::rsqrt_() {
  check_defined(*this, "rsqrt_", "self");
  if (needs_grad(*this)) [[unlikely]]
    return autograd::inplace(*this, "rsqrt_", [&](const Tensor& t) { return wick::rsqrt(t); });
  unary(UnaryOp::Rsqrt, *this, *this, "rsqrt_", Kind::Float);
  return *this;
}
Tensor& Tensor::sin_() {
  check_defined(*this, "sin_", "self");
  if (needs_grad(*this)) [[unlikely]]
    return autograd::inplace(*this, "sin_", [&](const Tensor& t) { return wick::sin(t); });
  unary(UnaryOp::Sin, *this, *this, "sin_", Kind::Float);
  return *this;
}
Tensor& Tensor::cos_() {
  check_defined(*this, "cos_", "self");
  if (needs_grad(*this)) [[unlikely]]
    return autograd::inplace(*this, "cos_", [&](const Tensor& t) { return wick::cos(t); });
  unary(UnaryOp::Cos, *this, *this, "cos_", Kind::Float);
  return *this;
}
Tensor& Tensor::tanh_() {
  check_defined(*this, "tanh_", "self");
  if (needs_grad(*this)) [[unlikely]]
    return autograd::inplace(*this, "tanh_", [&](const Tensor& t) { return wick::tanh(t); });
  unary(UnaryOp::Tanh, *this, *this, "tanh_", Kind::Float);
  return *this;
}
Tensor& Tensor::sigmoid_() {
  check_defined(*this, "sigmoid_", "self");
  if (needs_grad(*this)) [[unlikely]]
    return autograd::inplace(*this, "sigmoid_", [&](const Tensor& t) { return wick::sigmoid(t); });
  unary(UnaryOp::Sigmoid, *this, *this, "sigmoid_", Kind::Float);
  return *this;
}
Tensor& Tensor::relu_() {
  check_defined(*this, "relu_", "self");
  if (needs_grad(*this)) [[unlikely]]
    return autograd::inplace(*this, "relu_", [&](const Tensor& t) { return wick::relu(t); });
  WICK_CHECK(dtype() != kBool, TypeError, "relu_", "Boolean inputs not supported for relu");
  unary(UnaryOp::Relu, *this, *this, "relu_", Kind::Numeric);
  return *this;
}
Tensor& Tensor::pow_(const Scalar& e) {
  check_defined(*this, "pow_", "self");
  if (needs_grad(*this)) [[unlikely]]
    return autograd::inplace(*this, "pow_", [&](const Tensor& t) { return wick::pow(t, e); });
  const Dtype c = result_type({*this}, &e);
  check_int_exponent(c, e, "pow_");
  unary(UnaryOp::Pow, *this, *this, "pow_", Kind::Numeric, &e, nullptr, c);
  return *this;
}
Tensor& Tensor::pow_(const Tensor& e) {
  check_defined(*this, "pow_", "self");
  check_defined(e, "pow_", "exponent");
  if (needs_grad(*this, e)) [[unlikely]]
    return autograd::inplace(*this, "pow_", [&](const Tensor& t) { return wick::pow(t, e); });
  pointwise(PointwiseOp::Pow, *this, {*this, e}, "pow_");
  return *this;
}
Tensor& Tensor::remainder_(const Scalar& o) {
  check_defined(*this, "remainder_", "self");
  if (needs_grad(*this)) [[unlikely]]
    return autograd::inplace(*this, "remainder_", [&](const Tensor& t) { return wick::remainder(t, o); });
  const Dtype c = result_type({*this}, &o);
  check_divisor(c, o, "remainder_");
  unary(UnaryOp::Remainder, *this, *this, "remainder_", Kind::Numeric, &o, nullptr, c);
  return *this;
}
Tensor& Tensor::remainder_(const Tensor& o) {
  check_defined(*this, "remainder_", "self");
  check_defined(o, "remainder_", "other");
  if (needs_grad(*this, o)) [[unlikely]]
    return autograd::inplace(*this, "remainder_", [&](const Tensor& t) { return wick::remainder(t, o); });
  pointwise(PointwiseOp::Remainder, *this, {*this, o}, "remainder_");
  return *this;
}
Tensor& Tensor::clamp_(const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  check_defined(*this, "clamp_", "self");
  if (needs_grad(*this)) [[unlikely]]
    return autograd::inplace(*this, "clamp_", [&](const Tensor& t) { return wick::clamp(t, min, max); });
  const Scalar* lo = min ? &*min : nullptr;
  const Scalar* hi = max ? &*max : nullptr;
  unary(UnaryOp::Clamp, *this, *this, "clamp_", Kind::Numeric, lo, hi, clamp_dtype(*this, lo, hi));
  return *this;
}
Tensor& Tensor::clamp_(const std::optional<Tensor>& min, const std::optional<Tensor>& max) {
  check_defined(*this, "clamp_", "self");
  if (needs_grad(*this, min.value_or(Tensor()), max.value_or(Tensor()))) [[unlikely]]
    return autograd::inplace(*this, "clamp_", [&](const Tensor& t) { return wick::clamp(t, min, max); });
  clamp_tensors(*this, *this, min, max, "clamp_");
  return *this;
}
Tensor& Tensor::clamp_min_(const Scalar& min) {
  check_defined(*this, "clamp_min_", "self");
  if (needs_grad(*this)) [[unlikely]]
    return autograd::inplace(*this, "clamp_min_", [&](const Tensor& t) { return wick::clamp_min(t, min); });
  const Scalar* lo = &min;
  unary(UnaryOp::Clamp, *this, *this, "clamp_min_", Kind::Numeric, lo, nullptr,
        clamp_dtype(*this, lo, nullptr));
  return *this;
}
Tensor& Tensor::clamp_max_(const Scalar& max) {
  check_defined(*this, "clamp_max_", "self");
  if (needs_grad(*this)) [[unlikely]]
    return autograd::inplace(*this, "clamp_max_", [&](const Tensor& t) { return wick::clamp_max(t, max); });
  const Scalar* hi = &max;
  unary(UnaryOp::Clamp, *this, *this, "clamp_max_", Kind::Numeric, nullptr, hi,
        clamp_dtype(*this, nullptr, hi));
  return *this;
}

}  // namespace wick
