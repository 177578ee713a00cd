// Elementwise math: neg abs exp log sqrt rsqrt sin cos tanh sigmoid relu gelu silu, sign floor
// ceil round trunc frac log2 log10 log1p reciprocal lgamma digamma (and the rest of the op list),
// pow, remainder, fmod, div with a rounding mode, floor_divide, polygamma, atan2 and clamp, in
// new and in-place forms. Each op plans a TensorIter (promotion by
// PyTorch's rules: float functions of integer tensors give the default float) and calls the
// backend's unary or pointwise family. The ops of one tensor are generated from their lines in
// the op list (WICK_UNARY_OPS, wick/detail/op_list.h); the others are written here.
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

// Each op's dtype rule: the kind column of its line in the op list.
constexpr Kind kKinds[] = {
#define WICK_X(Name, name, kind, ...) Kind::kind,
    WICK_UNARY_OPS(WICK_X)
#undef WICK_X
};

// out undefined: a new tensor; out == t: in place.
Tensor unary(UnaryOp op, const Tensor& out, const Tensor& t, const char* name, const Scalar* a = nullptr,
             const Scalar* b = nullptr, std::optional<Dtype> compute = std::nullopt) {
  const Kind kind = kKinds[size_t(op)];
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
  if (op == PointwiseOp::Atan2 && !is_floating_point(compute)) compute = get_default_dtype();
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

// An integer scalar divisor is refused when it is 0 in the compute dtype, where the kernels
// divide by it: 256 is 0 in int8 and uint8, and an integer division by 0 traps.
void check_divisor(Dtype compute, const Scalar& d, const char* op,
                   const char* message = "ZeroDivisionError: integer remainder by zero") {
  if (!is_integral(compute)) return;
  const bool zero = WICK_DISPATCH_NUMERIC(compute, op, [&]<class T>() { return d.to<T>() == T(0); });
  WICK_CHECK(!zero, ValueError, op, message);
}

// div's rounding_mode: nullopt is true division; "trunc" and "floor" name the op code of the
// unary (scalar divisor) or pointwise (tensor divisor) family. Anything else raises PyTorch's
// message.
enum class Rounding : uint8_t { True, Trunc, Floor };

Rounding rounding_of(std::optional<std::string_view> mode, const char* op) {
  if (!mode) return Rounding::True;
  if (*mode == "trunc") return Rounding::Trunc;
  if (*mode == "floor") return Rounding::Floor;
  raise<ValueError>(op, "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '", *mode,
                    "'");
}

// The ops of a tensor and a scalar divisor (fmod, div's rounding modes, floor_divide): promoted as
// remainder, an integer divisor of 0 refused before the kernel runs.
Tensor scalar_division(const Tensor& out, UnaryOp op, const Tensor& t, const Scalar& d, const char* name) {
  const Dtype c = result_type({t}, &d);
  check_divisor(c, d, name, "ZeroDivisionError");
  return unary(op, out, t, name, &d, nullptr, c);
}

void check_polygamma_order(int64_t n, const char* op) {
  WICK_CHECK(n >= 0, ValueError, op, "polygamma(n, x) does not support negative n.");
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

// out = compute(), recorded as op(t) with the op's scalars when t requires grad.
template <class F>
Tensor recorded(UnaryOp op, const Tensor& t, F&& compute, const Scalar* a = nullptr, const Scalar* b = nullptr,
                const char* name = nullptr) {
  const bool grad = needs_grad(t);
  Tensor out = forward_once(grad, compute);
  if (grad) [[unlikely]] autograd::record_unary(op, t, out, a, b, name);
  return out;
}

// out = compute(), recorded as op(x, y, z) when one of them requires grad.
template <class F>
Tensor recorded(PointwiseOp op, const Tensor& x, const Tensor& y, const Tensor& z, F&& compute) {
  const bool grad = needs_grad(x, y, z);
  Tensor out = forward_once(grad, compute);
  if (grad) [[unlikely]] autograd::record_pointwise(op, x, y, z, out);
  return out;
}

// neg and relu refuse bool with PyTorch's messages of their own.
template <UnaryOp Op>
void check_not_bool(const Tensor& t, const char* name, bool in_place) {
  if constexpr (Op == UnaryOp::Neg) {
    if (t.dtype() == kBool) [[unlikely]]
      raise<TypeError>(name, "Negation, the `-` operator, on a bool tensor is not supported.",
                       in_place ? "" : " If you are trying to invert a mask, use the `~` or `logical_not()` "
                                       "operator instead.");
  } else if constexpr (Op == UnaryOp::Relu) {
    WICK_CHECK(t.dtype() != kBool, TypeError, name, "Boolean inputs not supported for relu");
  }
}

// A simple op (one tensor, form Methods or Function in the op list): computed once, recorded
// when t requires grad; under autocast its line's policy applies (again: the op itself).
template <UnaryOp Op, autocast::Policy Autocast>
Tensor simple_unary(const Tensor& t, const char* name, Tensor (*again)(const Tensor&)) {
  check_defined(t, name, "self");
  if constexpr (Autocast != autocast::Policy::None)
    if (autocast::active()) [[unlikely]]
      return autocast::run(Autocast, autocast::Policy::None, name, again, t);
  check_not_bool<Op>(t, name, false);
  if constexpr (Op == UnaryOp::Sign)
    if (t.dtype() == kBool) return t.clone();  // true is positive, false zero: bool's own values
  return recorded(Op, t, [&] { return unary(Op, {}, t, name); });
}

// Its in-place form: with grad, the recorded op (again) adopted by self.
template <UnaryOp Op>
Tensor& simple_unary_(Tensor& self, const char* name, Tensor (*again)(const Tensor&)) {
  check_defined(self, name, "self");
  if (needs_grad(self)) [[unlikely]]
    return autograd::inplace(self, name, again);
  check_not_bool<Op>(self, name, true);
  if constexpr (Op == UnaryOp::Sign)
    if (self.dtype() == kBool) return self;
  unary(Op, self, self, name);
  return self;
}

}  // namespace

// The function (and for form Methods the method and in-place method) of each simple op.
#define WICK_UNARY_DEFINE_Function(Name, name, policy)                              \
  Tensor name(const Tensor& t) {                                                     \
    return simple_unary<UnaryOp::Name, autocast::Policy::policy>(t, #name, &wick::name); \
  }
#define WICK_UNARY_DEFINE_Methods(Name, name, policy)                                  \
  WICK_UNARY_DEFINE_Function(Name, name, policy)                                       \
  Tensor Tensor::name() const { return wick::name(*this); }                            \
  Tensor& Tensor::name##_() { return simple_unary_<UnaryOp::Name>(*this, #name "_", &wick::name); }
#define WICK_UNARY_DEFINE_Manual(Name, name, policy)
#define WICK_X(Name, name, kind, policy, form) WICK_UNARY_DEFINE_##form(Name, name, policy)
WICK_UNARY_OPS(WICK_X)
#undef WICK_X
#undef WICK_UNARY_DEFINE_Function
#undef WICK_UNARY_DEFINE_Methods
#undef WICK_UNARY_DEFINE_Manual

// ---- the ops with more arguments than a tensor

Tensor gelu(const Tensor& t, std::string_view approximate) {
  check_defined(t, "gelu", "self");
  const UnaryOp op = gelu_op(approximate);
  return recorded(op, t, [&] { return unary(op, {}, t, "gelu"); });
}

Tensor pow(const Tensor& t, const Scalar& exponent) {
  check_defined(t, "pow", "self");
  if (autocast::active()) [[unlikely]]
    return autocast::run(
        autocast::Policy::Fp32, autocast::Policy::None, "pow",
        [&](const Tensor& x) { return wick::pow(x, exponent); }, t);
  return recorded(
      UnaryOp::Pow, t,
      [&] {
        const Dtype c = result_type({t}, &exponent);
        check_int_exponent(c, exponent, "pow");
        return unary(UnaryOp::Pow, {}, t, "pow", &exponent, nullptr, c);
      },
      &exponent);
}
Tensor pow(const Tensor& t, const Tensor& exponent) {
  check_defined(t, "pow", "self");
  check_defined(exponent, "pow", "exponent");
  if (autocast::active()) [[unlikely]]
    return autocast::run(
        autocast::Policy::Fp32, autocast::Policy::None, "pow",
        [&](const Tensor& x, const Tensor& e) { return wick::pow(x, e); }, t, exponent);
  return recorded(PointwiseOp::Pow, t, exponent, {},
                  [&] { return pointwise(PointwiseOp::Pow, {}, {t, exponent}, "pow"); });
}
Tensor pow(const Scalar& base, const Tensor& exponent) {
  check_defined(exponent, "pow", "exponent");
  if (autocast::active()) [[unlikely]]
    return autocast::run(
        autocast::Policy::Fp32, autocast::Policy::None, "pow",
        [&](const Tensor& x) { return wick::pow(base, x); }, exponent);
  return recorded(
      UnaryOp::RPow, exponent,
      [&] { return unary(UnaryOp::RPow, {}, exponent, "pow", &base, nullptr, result_type({exponent}, &base)); },
      &base);
}

Tensor remainder(const Tensor& t, const Scalar& other) {
  check_defined(t, "remainder", "self");
  return recorded(
      UnaryOp::Remainder, t,
      [&] {
        const Dtype c = result_type({t}, &other);
        check_divisor(c, other, "remainder");
        return unary(UnaryOp::Remainder, {}, t, "remainder", &other, nullptr, c);
      },
      &other);
}
Tensor remainder(const Tensor& t, const Tensor& other) {
  check_defined(t, "remainder", "self");
  check_defined(other, "remainder", "other");
  return recorded(PointwiseOp::Remainder, t, other, {},
                  [&] { return pointwise(PointwiseOp::Remainder, {}, {t, other}, "remainder"); });
}

Tensor fmod(const Tensor& t, const Scalar& other) {
  check_defined(t, "fmod", "self");
  return recorded(
      UnaryOp::Fmod, t, [&] { return scalar_division({}, UnaryOp::Fmod, t, other, "fmod"); }, &other);
}
Tensor fmod(const Tensor& t, const Tensor& other) {
  check_defined(t, "fmod", "self");
  check_defined(other, "fmod", "other");
  return recorded(PointwiseOp::Fmod, t, other, {},
                  [&] { return pointwise(PointwiseOp::Fmod, {}, {t, other}, "fmod"); });
}

// With a rounding mode: DivBackward2 (tensor divisor) or DivBackward3 (scalar), zero gradients,
// as PyTorch's. nullopt is the two-argument div and records its nodes (DivBackward0/1).
Tensor div(const Tensor& a, const Tensor& b, std::optional<std::string_view> rounding_mode) {
  check_defined(a, "div", "self");
  check_defined(b, "div", "other");
  const Rounding r = rounding_of(rounding_mode, "div");
  if (r == Rounding::True) return wick::div(a, b);
  const PointwiseOp op = r == Rounding::Trunc ? PointwiseOp::DivTrunc : PointwiseOp::DivFloor;
  return recorded(op, a, b, {}, [&] { return pointwise(op, {}, {a, b}, "div"); });
}
Tensor div(const Tensor& t, const Scalar& other, std::optional<std::string_view> rounding_mode) {
  check_defined(t, "div", "self");
  const Rounding r = rounding_of(rounding_mode, "div");
  if (r == Rounding::True) return wick::div(t, other);
  const UnaryOp op = r == Rounding::Trunc ? UnaryOp::DivTrunc : UnaryOp::DivFloor;
  return recorded(op, t, [&] { return scalar_division({}, op, t, other, "div"); }, &other);
}

// floor_divide is div(a, b, "floor") under its own name. PyTorch has no derivative for it: a
// result of inputs that require grad does require grad, and its node (NotImplemented) raises
// "derivative for floor_divide is not implemented" when backward reaches it; wick records the
// same node rather than a result without history.
Tensor floor_divide(const Tensor& a, const Tensor& b) {
  check_defined(a, "floor_divide", "self");
  check_defined(b, "floor_divide", "other");
  return recorded(PointwiseOp::FloorDivide, a, b, {},
                  [&] { return pointwise(PointwiseOp::FloorDivide, {}, {a, b}, "floor_divide"); });
}
Tensor floor_divide(const Tensor& t, const Scalar& other) {
  check_defined(t, "floor_divide", "self");
  return recorded(
      UnaryOp::FloorDivide, t,
      [&] { return scalar_division({}, UnaryOp::FloorDivide, t, other, "floor_divide"); }, &other);
}

Tensor polygamma(int64_t n, const Tensor& t) {
  check_defined(t, "polygamma", "self");
  check_polygamma_order(n, "polygamma");
  const Scalar order(n);
  return recorded(
      UnaryOp::Polygamma, t, [&] { return unary(UnaryOp::Polygamma, {}, t, "polygamma", &order); }, &order);
}

Tensor atan2(const Tensor& t, const Tensor& other) {
  check_defined(t, "atan2", "self");
  check_defined(other, "atan2", "other");
  return recorded(PointwiseOp::Atan2, t, other, {},
                  [&] { return pointwise(PointwiseOp::Atan2, {}, {t, other}, "atan2"); });
}

// clamp with scalar bounds: name is the op as called (clamp, clamp_min, clamp_max).
static Tensor clamp_scalars(const Tensor& t, const Scalar* lo, const Scalar* hi, const char* name) {
  check_defined(t, name, "self");
  return recorded(
      UnaryOp::Clamp, t, [&] { return unary(UnaryOp::Clamp, {}, t, name, lo, hi, clamp_dtype(t, lo, hi)); }, lo, hi,
      name);
}

Tensor clamp(const Tensor& t, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  return clamp_scalars(t, min ? &*min : nullptr, max ? &*max : nullptr, "clamp");
}
Tensor clamp(const Tensor& t, const std::optional<Tensor>& min, const std::optional<Tensor>& max) {
  check_defined(t, "clamp", "self");
  const Tensor& lo = min ? *min : Tensor();
  const Tensor& hi = max ? *max : Tensor();
  return recorded(PointwiseOp::Clamp, t, lo, hi, [&] { return clamp_tensors({}, t, min, max, "clamp"); });
}
Tensor clamp_min(const Tensor& t, const Scalar& min) { return clamp_scalars(t, &min, nullptr, "clamp_min"); }
Tensor clamp_min(const Tensor& t, const Tensor& min) {
  check_defined(t, "clamp_min", "self");
  check_defined(min, "clamp_min", "min");
  return recorded(PointwiseOp::ClampMin, t, min, {},
                  [&] { return clamp_tensors({}, t, min, std::nullopt, "clamp_min"); });
}
Tensor clamp_max(const Tensor& t, const Scalar& max) { return clamp_scalars(t, nullptr, &max, "clamp_max"); }
Tensor clamp_max(const Tensor& t, const Tensor& max) {
  check_defined(t, "clamp_max", "self");
  check_defined(max, "clamp_max", "max");
  return recorded(PointwiseOp::ClampMax, t, max, {},
                  [&] { return clamp_tensors({}, t, std::nullopt, max, "clamp_max"); });
}

// ---- methods

Tensor Tensor::pow(const Scalar& e) const { return wick::pow(*this, e); }
Tensor Tensor::pow(const Tensor& e) const { return wick::pow(*this, e); }
Tensor Tensor::remainder(const Scalar& o) const { return wick::remainder(*this, o); }
Tensor Tensor::remainder(const Tensor& o) const { return wick::remainder(*this, o); }
Tensor Tensor::fmod(const Scalar& o) const { return wick::fmod(*this, o); }
Tensor Tensor::fmod(const Tensor& o) const { return wick::fmod(*this, o); }
Tensor Tensor::div(const Tensor& o, std::optional<std::string_view> mode) const { return wick::div(*this, o, mode); }
Tensor Tensor::div(const Scalar& o, std::optional<std::string_view> mode) const { return wick::div(*this, o, mode); }
Tensor Tensor::floor_divide(const Tensor& o) const { return wick::floor_divide(*this, o); }
Tensor Tensor::floor_divide(const Scalar& o) const { return wick::floor_divide(*this, o); }
Tensor Tensor::polygamma(int64_t n) const { return wick::polygamma(n, *this); }
Tensor Tensor::atan2(const Tensor& o) const { return wick::atan2(*this, o); }
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

Tensor& Tensor::pow_(const Scalar& e) {
  check_defined(*this, "pow_", "self");
  if (needs_grad(*this)) [[unlikely]]
    return autograd::inplace(*this, "pow_", [&](const Tensor& t) { return wick::pow(t, e); });
  const Dtype c = result_type({*this}, &e);
  check_int_exponent(c, e, "pow_");
  unary(UnaryOp::Pow, *this, *this, "pow_", &e, nullptr, c);
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
  unary(UnaryOp::Remainder, *this, *this, "remainder_", &o, nullptr, c);
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
Tensor& Tensor::fmod_(const Scalar& o) {
  check_defined(*this, "fmod_", "self");
  if (needs_grad(*this)) [[unlikely]]
    return autograd::inplace(*this, "fmod_", [&](const Tensor& t) { return wick::fmod(t, o); });
  scalar_division(*this, UnaryOp::Fmod, *this, o, "fmod_");
  return *this;
}
Tensor& Tensor::fmod_(const Tensor& o) {
  check_defined(*this, "fmod_", "self");
  check_defined(o, "fmod_", "other");
  if (needs_grad(*this, o)) [[unlikely]]
    return autograd::inplace(*this, "fmod_", [&](const Tensor& t) { return wick::fmod(t, o); });
  pointwise(PointwiseOp::Fmod, *this, {*this, o}, "fmod_");
  return *this;
}
Tensor& Tensor::div_(const Tensor& o, std::optional<std::string_view> mode) {
  check_defined(*this, "div_", "self");
  check_defined(o, "div_", "other");
  const Rounding r = rounding_of(mode, "div_");
  if (r == Rounding::True) return div_(o);
  if (needs_grad(*this, o)) [[unlikely]]
    return autograd::inplace(*this, "div_", [&](const Tensor& t) { return wick::div(t, o, mode); });
  pointwise(r == Rounding::Trunc ? PointwiseOp::DivTrunc : PointwiseOp::DivFloor, *this, {*this, o}, "div_");
  return *this;
}
Tensor& Tensor::div_(const Scalar& o, std::optional<std::string_view> mode) {
  check_defined(*this, "div_", "self");
  const Rounding r = rounding_of(mode, "div_");
  if (r == Rounding::True) return div_(o);
  if (needs_grad(*this)) [[unlikely]]
    return autograd::inplace(*this, "div_", [&](const Tensor& t) { return wick::div(t, o, mode); });
  scalar_division(*this, r == Rounding::Trunc ? UnaryOp::DivTrunc : UnaryOp::DivFloor, *this, o, "div_");
  return *this;
}
Tensor& Tensor::floor_divide_(const Tensor& o) {
  check_defined(*this, "floor_divide_", "self");
  check_defined(o, "floor_divide_", "other");
  if (needs_grad(*this, o)) [[unlikely]]
    return autograd::inplace(*this, "floor_divide_", [&](const Tensor& t) { return wick::floor_divide(t, o); });
  pointwise(PointwiseOp::FloorDivide, *this, {*this, o}, "floor_divide_");
  return *this;
}
Tensor& Tensor::floor_divide_(const Scalar& o) {
  check_defined(*this, "floor_divide_", "self");
  if (needs_grad(*this)) [[unlikely]]
    return autograd::inplace(*this, "floor_divide_", [&](const Tensor& t) { return wick::floor_divide(t, o); });
  scalar_division(*this, UnaryOp::FloorDivide, *this, o, "floor_divide_");
  return *this;
}
Tensor& Tensor::polygamma_(int64_t n) {
  check_defined(*this, "polygamma_", "self");
  check_polygamma_order(n, "polygamma_");
  if (needs_grad(*this)) [[unlikely]]
    return autograd::inplace(*this, "polygamma_", [n](const Tensor& t) { return wick::polygamma(n, t); });
  const Scalar order(n);
  unary(UnaryOp::Polygamma, *this, *this, "polygamma_", &order);
  return *this;
}
Tensor& Tensor::atan2_(const Tensor& o) {
  check_defined(*this, "atan2_", "self");
  check_defined(o, "atan2_", "other");
  if (needs_grad(*this, o)) [[unlikely]]
    return autograd::inplace(*this, "atan2_", [&](const Tensor& t) { return wick::atan2(t, o); });
  pointwise(PointwiseOp::Atan2, *this, {*this, o}, "atan2_");
  return *this;
}
Tensor& Tensor::clamp_(const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  check_defined(*this, "clamp_", "self");
  if (needs_grad(*this)) [[unlikely]]
    return autograd::inplace(*this, "clamp_", [&](const Tensor& t) { return wick::clamp(t, min, max); });
  const Scalar* lo = min ? &*min : nullptr;
  const Scalar* hi = max ? &*max : nullptr;
  unary(UnaryOp::Clamp, *this, *this, "clamp_", lo, hi, clamp_dtype(*this, lo, hi));
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
  unary(UnaryOp::Clamp, *this, *this, "clamp_min_", lo, nullptr,
        clamp_dtype(*this, lo, nullptr));
  return *this;
}
Tensor& Tensor::clamp_max_(const Scalar& max) {
  check_defined(*this, "clamp_max_", "self");
  if (needs_grad(*this)) [[unlikely]]
    return autograd::inplace(*this, "clamp_max_", [&](const Tensor& t) { return wick::clamp_max(t, max); });
  const Scalar* hi = &max;
  unary(UnaryOp::Clamp, *this, *this, "clamp_max_", nullptr, hi,
        clamp_dtype(*this, nullptr, hi));
  return *this;
}

}  // namespace wick
