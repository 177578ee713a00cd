// The table-driven op test: each tensor op that runs a kernel, for each dtype it
// supports, each layout (contiguous, transposed, sliced with a step, broadcast, 0-d, empty), on
// each device that exists, compared with a float64 reference computed here with plain loops
// over std::vector<double> (op_reference.h). Dtypes an op does not support must throw
// TypeError naming it. A backend joins by adding its device to INSTANTIATE_TEST_SUITE_P below;
// devices absent from the machine skip. The matmul family, indexing, joining and views are in
// ops_table_shapes_test.cpp.
#include <algorithm>
#include <limits>
#include <optional>

#include "op_reference.h"

namespace wick::test {
namespace {

using Values = std::vector<double>;
using Run = std::function<Tensor(std::vector<Tensor>&)>;

Dtype same(Dtype t) { return t; }
Dtype to_float(Dtype t) { return is_floating_point(t) ? t : kFloat32; }
Dtype bool_to_long(Dtype t) { return t == kBool ? kInt64 : t; }
Dtype to_bool(Dtype) { return kBool; }

double py_mod(double a, double b) {
  double r = std::fmod(a, b);
  return r != 0 && ((b < 0) != (r < 0)) ? r + b : r;
}
double ipow(double b, double e) {  // integer power as integer dtypes compute it
  if (e < 0) return b == 1 ? 1 : b == -1 ? (int64_t(e) % 2 ? -1 : 1) : 0;
  double r = 1;
  for (int64_t i = 0; i < int64_t(e); ++i) r *= b;
  return r;
}
// erfinv by bisection on std::erf (monotone), to the last bit: a reference that shares nothing
// with the library's Newton iteration.
double erfinv_reference(double y) {
  if (std::isnan(y) || std::fabs(y) > 1) return NAN;
  if (std::fabs(y) == 1) return std::copysign(INFINITY, y);
  double lo = -6, hi = 6;
  for (int i = 0; i < 200 && lo < hi; ++i) {
    const double mid = (lo + hi) / 2;
    if (mid == lo || mid == hi) break;
    (std::erf(mid) < y ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}
// digamma in float64 by a route of its own: the reflection through pi cos / sin of x's distance
// to the nearest integer, the recurrence up to x >= 30 and four terms of the asymptotic series.
// PyTorch's values at the poles: -inf at +0, NaN at the negative integers.
double digamma_reference(double x) {
  if (x == 0) return std::copysign(INFINITY, -x);
  if (x < 0 && x == std::floor(x)) return NAN;
  if (x < 0) {
    const double r = x - std::round(x);  // exact; tan(pi x) = tan(pi r)
    return digamma_reference(1 - x) - M_PI * std::cos(M_PI * r) / std::sin(M_PI * r);
  }
  double acc = 0;
  for (; x < 30; x += 1) acc -= 1 / x;
  const double z = 1 / (x * x);
  return acc + std::log(x) - 0.5 / x - z * (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z / 240)));
}
// polygamma(n, x) in float64: (-1)^(n+1) n! sum_k>=0 (x + k)^-(n+1), the terms to x + k >= 500
// summed smallest first, the rest by the integral, the half term and two Euler-Maclaurin
// corrections; +inf (odd n) or -inf (even n) at the poles, as the library gives.
double polygamma_reference(int n, double x) {
  if (n == 0) return digamma_reference(x);
  if (x <= 0 && x == std::floor(x)) return n % 2 ? INFINITY : -INFINITY;
  const double s = n + 1;
  const int64_t terms = x < 500 ? int64_t(std::ceil(500 - x)) : 0;
  const double w = x + double(terms);
  double sum = std::pow(w, 1 - s) / (s - 1) + 0.5 * std::pow(w, -s) + s / 12 * std::pow(w, -s - 1) -
               s * (s + 1) * (s + 2) / 720 * std::pow(w, -s - 3);
  for (int64_t k = terms - 1; k >= 0; --k) sum += std::pow(x + double(k), -s);
  double fact = 1;
  for (int k = 2; k <= n; ++k) fact *= k;
  return (n % 2 ? fact : -fact) * sum;
}
double nan_max(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b); }
double nan_min(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b); }

// ============================================================================ elementwise

struct Elementwise {
  std::string name;            // the op as its errors name it
  std::vector<Domain> inputs;  // one per tensor input
  std::vector<Dtype> dtypes;   // supported dtypes of the (non-bool-domain) inputs
  Dtype (*result)(Dtype);
  Run run;
  // Reference on the input values; t is the input dtype (integer ops wrap through store()).
  std::function<double(const Values&, Dtype t)> ref;
  bool in_place = false;  // run writes into input 0, which is then never a broadcast view
};

std::vector<Elementwise> elementwise_table() {
  // One row per op reads better than the formatter's layout.
  // clang-format off
  auto all = kAllDtypes, num = kNumericDtypes, flt = kFloatDtypes;
  const auto A = Domain::Any;
  auto u = [](double (*f)(double)) { return [f](const Values& x, Dtype) { return f(x[0]); }; };
  return {
      // arithmetic (the foundation's ops, here so that every backend runs them)
      {"add", {A, A}, all, same, [](auto& x) { return x[0] + x[1]; }, [](auto& v, Dtype) { return v[0] + v[1]; }},
      {"add", {A, A}, all, same, [](auto& x) { return add(x[0], x[1], 2); },
       [](auto& v, Dtype) { return v[0] + 2 * v[1]; }},
      {"sub", {A, A}, num, same, [](auto& x) { return x[0] - x[1]; }, [](auto& v, Dtype) { return v[0] - v[1]; }},
      {"mul", {A, A}, all, same, [](auto& x) { return x[0] * x[1]; }, [](auto& v, Dtype) { return v[0] * v[1]; }},
      {"div", {A, Domain::NonZero}, all, to_float, [](auto& x) { return x[0] / x[1]; },
       [](auto& v, Dtype) { return v[0] / v[1]; }},
      {"add", {A}, all, bool_to_long, [](auto& x) { return x[0] + 3; }, [](auto& v, Dtype) { return v[0] + 3; }},
      {"mul", {A}, all, to_float, [](auto& x) { return x[0] * 2.5; }, [](auto& v, Dtype) { return v[0] * 2.5; }},
      {"add_", {A, A}, all, same, [](auto& x) { return x[0].add_(x[1]); }, [](auto& v, Dtype) { return v[0] + v[1]; },
       true},
      {"sub_", {A, A}, num, same, [](auto& x) { return x[0].sub_(x[1], 2); },
       [](auto& v, Dtype) { return v[0] - 2 * v[1]; }, true},
      {"mul_", {A, A}, all, same, [](auto& x) { return x[0].mul_(x[1]); }, [](auto& v, Dtype) { return v[0] * v[1]; },
       true},
      {"div_", {A, Domain::NonZero}, flt, same, [](auto& x) { return x[0].div_(x[1]); },
       [](auto& v, Dtype) { return v[0] / v[1]; }, true},
      {"copy_", {A, Domain::Bool}, all, same, [](auto& x) { return x[0].copy_(x[1]); },
       [](auto& v, Dtype) { return v[1]; }, true},
      {"zero_", {A}, all, same, [](auto& x) { return x[0].zero_(); }, [](auto&, Dtype) { return 0.0; }, true},
      // unary math
      {"neg", {A}, num, same, [](auto& x) { return neg(x[0]); }, [](auto& v, Dtype) { return -v[0]; }},
      {"abs", {A}, num, same, [](auto& x) { return abs(x[0]); }, u(std::fabs)},
      {"exp", {A}, all, to_float, [](auto& x) { return exp(x[0]); }, u(std::exp)},
      {"expm1", {A}, all, to_float, [](auto& x) { return expm1(x[0]); }, u(std::expm1)},
      {"Tensor::expm1", {A}, all, to_float, [](auto& x) { return x[0].expm1(); }, u(std::expm1)},
      {"log", {A}, all, to_float, [](auto& x) { return log(x[0]); }, u(std::log)},
      {"sqrt", {A}, all, to_float, [](auto& x) { return sqrt(x[0]); }, u(std::sqrt)},
      {"rsqrt", {A}, all, to_float, [](auto& x) { return rsqrt(x[0]); },
       [](auto& v, Dtype) { return 1 / std::sqrt(v[0]); }},
      {"sin", {A}, all, to_float, [](auto& x) { return sin(x[0]); }, u(std::sin)},
      {"cos", {A}, all, to_float, [](auto& x) { return x[0].cos(); }, u(std::cos)},
      {"tanh", {A}, all, to_float, [](auto& x) { return tanh(x[0]); }, u(std::tanh)},
      {"sigmoid", {A}, all, to_float, [](auto& x) { return sigmoid(x[0]); },
       [](auto& v, Dtype) { return 1 / (1 + std::exp(-v[0])); }},
      {"relu", {A}, num, same, [](auto& x) { return relu(x[0]); }, [](auto& v, Dtype) { return std::max(v[0], 0.0); }},
      {"gelu", {A}, flt, same, [](auto& x) { return gelu(x[0]); },
       [](auto& v, Dtype) { return 0.5 * v[0] * (1 + std::erf(v[0] / std::sqrt(2.0))); }},
      {"gelu", {A}, flt, same, [](auto& x) { return gelu(x[0], "tanh"); },
       [](auto& v, Dtype) {
         const double x = v[0], k = std::sqrt(2 / M_PI);
         return 0.5 * x * (1 + std::tanh(k * (x + 0.044715 * x * x * x)));
       }},
      {"silu", {A}, flt, same, [](auto& x) { return silu(x[0]); },
       [](auto& v, Dtype) { return v[0] / (1 + std::exp(-v[0])); }},
      {"tan", {A}, all, to_float, [](auto& x) { return tan(x[0]); }, u(std::tan)},
      {"asin", {A}, all, to_float, [](auto& x) { return asin(x[0]); }, u(std::asin)},
      {"acos", {A}, all, to_float, [](auto& x) { return x[0].acos(); }, u(std::acos)},
      {"atan", {A}, all, to_float, [](auto& x) { return atan(x[0]); }, u(std::atan)},
      {"sinh", {A}, all, to_float, [](auto& x) { return sinh(x[0]); }, u(std::sinh)},
      {"cosh", {A}, all, to_float, [](auto& x) { return x[0].cosh(); }, u(std::cosh)},
      {"erf", {A}, all, to_float, [](auto& x) { return erf(x[0]); }, u(std::erf)},
      {"erfinv", {Domain::Unit}, all, to_float, [](auto& x) { return erfinv(x[0]); }, u(erfinv_reference)},
      {"asinh", {A}, all, to_float, [](auto& x) { return asinh(x[0]); }, u(std::asinh)},
      {"acosh", {Domain::AboveOne}, all, to_float, [](auto& x) { return x[0].acosh(); }, u(std::acosh)},
      {"atanh", {Domain::Unit}, all, to_float, [](auto& x) { return atanh(x[0]); }, u(std::atanh)},
      {"atan2", {A, A}, all, to_float, [](auto& x) { return atan2(x[0], x[1]); },
       [](auto& v, Dtype) { return std::atan2(v[0], v[1]); }},
      {"atan2_", {A, A}, flt, same, [](auto& x) { return x[0].atan2_(x[1]); },
       [](auto& v, Dtype) { return std::atan2(v[0], v[1]); }, true},
      {"sign", {A}, all, same, [](auto& x) { return sign(x[0]); },
       [](auto& v, Dtype) { return double((v[0] > 0) - (v[0] < 0)); }},
      {"floor", {A}, num, same, [](auto& x) { return floor(x[0]); }, u(std::floor)},
      {"ceil", {A}, num, same, [](auto& x) { return x[0].ceil(); }, u(std::ceil)},
      {"round", {A}, num, same, [](auto& x) { return round(x[0]); }, u(std::nearbyint)},
      {"trunc", {A}, num, same, [](auto& x) { return x[0].trunc(); }, u(std::trunc)},
      {"frac", {A}, flt, same, [](auto& x) { return frac(x[0]); }, [](auto& v, Dtype) { return v[0] - std::trunc(v[0]); }},
      {"log2", {A}, all, to_float, [](auto& x) { return log2(x[0]); }, u(std::log2)},
      {"log10", {A}, all, to_float, [](auto& x) { return x[0].log10(); }, u(std::log10)},
      {"log1p", {A}, all, to_float, [](auto& x) { return log1p(x[0]); }, u(std::log1p)},
      {"reciprocal", {A}, all, to_float, [](auto& x) { return reciprocal(x[0]); }, [](auto& v, Dtype) { return 1 / v[0]; }},
      {"square", {A}, all, bool_to_long, [](auto& x) { return square(x[0]); }, [](auto& v, Dtype) { return v[0] * v[0]; }},
      {"maximum", {A, A}, num, same, [](auto& x) { return maximum(x[0], x[1]); },
       [](auto& v, Dtype) { return nan_max(v[0], v[1]); }},
      {"minimum", {A, A}, num, same, [](auto& x) { return x[0].minimum(x[1]); },
       [](auto& v, Dtype) { return nan_min(v[0], v[1]); }},
      // pow: tensor ** scalar, tensor ** tensor, scalar ** tensor
      {"pow", {A}, all, bool_to_long, [](auto& x) { return pow(x[0], 2); },
       [](auto& v, Dtype) { return v[0] * v[0]; }},
      {"pow", {A}, all, bool_to_long, [](auto& x) { return x[0].pow(3); },
       [](auto& v, Dtype) { return v[0] * v[0] * v[0]; }},
      {"pow", {A}, all, to_float, [](auto& x) { return pow(x[0], 0.5); },
       [](auto& v, Dtype) { return std::sqrt(v[0]); }},
      {"pow", {Domain::Positive}, all, to_float, [](auto& x) { return pow(x[0], -1.5); },
       [](auto& v, Dtype) { return std::pow(v[0], -1.5); }},
      {"pow", {A, Domain::Small}, num, same, [](auto& x) { return pow(x[0], x[1]); },
       [](auto& v, Dtype t) { return is_floating_point(t) ? std::pow(v[0], v[1]) : ipow(v[0], v[1]); }},
      {"pow", {Domain::Small}, all, bool_to_long, [](auto& x) { return pow(2, x[0]); },
       [](auto& v, Dtype t) { return is_floating_point(t) ? std::pow(2.0, v[0]) : ipow(2, v[0]); }},
      {"pow", {A}, all, to_float, [](auto& x) { return pow(1.5, x[0]); },
       [](auto& v, Dtype) { return std::pow(1.5, v[0]); }},
      // remainder (Python's %)
      {"remainder", {A, Domain::NonZero}, num, same, [](auto& x) { return remainder(x[0], x[1]); },
       [](auto& v, Dtype) { return py_mod(v[0], v[1]); }},
      {"remainder", {A}, all, bool_to_long, [](auto& x) { return remainder(x[0], 3); },
       [](auto& v, Dtype) { return py_mod(v[0], 3); }},
      {"remainder", {A}, all, to_float, [](auto& x) { return x[0].remainder(-2.5); },
       [](auto& v, Dtype) { return py_mod(v[0], -2.5); }},
      // fmod (C's: the dividend's sign), div with a rounding mode, floor_divide; negative
      // dividends and divisors come from the domains (integers in [-10, 10])
      {"fmod", {A, Domain::NonZero}, num, same, [](auto& x) { return fmod(x[0], x[1]); },
       [](auto& v, Dtype) { return std::fmod(v[0], v[1]); }},
      {"fmod", {A}, all, bool_to_long, [](auto& x) { return fmod(x[0], 3); },
       [](auto& v, Dtype) { return std::fmod(v[0], 3); }},
      {"fmod", {A}, all, to_float, [](auto& x) { return x[0].fmod(-2.5); },
       [](auto& v, Dtype) { return std::fmod(v[0], -2.5); }},
      {"div", {A, Domain::NonZero}, num, same, [](auto& x) { return div(x[0], x[1], "trunc"); },
       [](auto& v, Dtype) { return std::trunc(v[0] / v[1]); }},
      {"div", {A, Domain::NonZero}, num, same, [](auto& x) { return x[0].div(x[1], "floor"); },
       [](auto& v, Dtype) { return std::floor(v[0] / v[1]); }},
      {"div", {A, Domain::NonZero}, all, to_float, [](auto& x) { return div(x[0], x[1], std::nullopt); },
       [](auto& v, Dtype) { return v[0] / v[1]; }},
      {"div", {A}, all, bool_to_long, [](auto& x) { return div(x[0], 3, "floor"); },
       [](auto& v, Dtype) { return std::floor(v[0] / 3); }},
      {"div", {A}, all, bool_to_long, [](auto& x) { return x[0].div(-4, "trunc"); },  // uint8 reads -4 as 252
       [](auto& v, Dtype t) { return std::trunc(v[0] / (t == kUInt8 ? 252 : -4)); }},
      {"div", {A}, all, to_float, [](auto& x) { return x[0].div(-2.5, "floor"); },
       [](auto& v, Dtype) { return std::floor(v[0] / -2.5); }},
      {"floor_divide", {A, Domain::NonZero}, num, same, [](auto& x) { return floor_divide(x[0], x[1]); },
       [](auto& v, Dtype) { return std::floor(v[0] / v[1]); }},
      {"floor_divide", {A}, all, bool_to_long, [](auto& x) { return x[0].floor_divide(2); },
       [](auto& v, Dtype) { return std::floor(v[0] / 2); }},
      {"floor_divide", {A}, all, to_float, [](auto& x) { return floor_divide(x[0], -1.5); },
       [](auto& v, Dtype) { return std::floor(v[0] / -1.5); }},
      // the gamma family: lgamma away from the poles (CUDA's lgammaf is only good to a few ulp
      // outside [-10, -2.26]; the poles are rounding_division_test.cpp's), digamma and polygamma
      // everywhere (0 and the negative integers among the integer inputs)
      {"lgamma", {Domain::Positive}, all, to_float, [](auto& x) { return lgamma(x[0]); }, u(std::lgamma)},
      {"Tensor::lgamma", {Domain::Positive}, all, to_float, [](auto& x) { return x[0].lgamma(); }, u(std::lgamma)},
      {"digamma", {A}, all, to_float, [](auto& x) { return digamma(x[0]); }, u(digamma_reference)},
      {"Tensor::digamma", {Domain::Positive}, all, to_float, [](auto& x) { return x[0].digamma(); },
       u(digamma_reference)},
      {"polygamma", {A}, all, to_float, [](auto& x) { return polygamma(1, x[0]); },
       [](auto& v, Dtype) { return polygamma_reference(1, v[0]); }},
      {"polygamma", {A}, all, to_float, [](auto& x) { return x[0].polygamma(2); },
       [](auto& v, Dtype) { return polygamma_reference(2, v[0]); }},
      {"polygamma", {Domain::Positive}, all, to_float, [](auto& x) { return polygamma(3, x[0]); },
       [](auto& v, Dtype) { return polygamma_reference(3, v[0]); }},
      {"polygamma", {A}, all, to_float, [](auto& x) { return polygamma(0, x[0]); }, u(digamma_reference)},
      // clamp with scalars and tensors
      {"clamp", {A}, all, bool_to_long, [](auto& x) { return clamp(x[0], 1, 3); },
       [](auto& v, Dtype) { return std::min(std::max(v[0], 1.0), 3.0); }},
      {"clamp", {A}, all, to_float, [](auto& x) { return clamp(x[0], -1.5); },
       [](auto& v, Dtype) { return std::max(v[0], -1.5); }},
      {"clamp_max", {A}, all, bool_to_long, [](auto& x) { return clamp_max(x[0], 2); },
       [](auto& v, Dtype) { return std::min(v[0], 2.0); }},
      {"clamp", {A, A, A}, num, same, [](auto& x) { return clamp(x[0], x[1], x[2]); },
       [](auto& v, Dtype) { return nan_min(nan_max(v[0], v[1]), v[2]); }},
      {"clamp_min", {A, A}, num, same, [](auto& x) { return clamp_min(x[0], x[1]); },
       [](auto& v, Dtype) { return nan_max(v[0], v[1]); }},
      {"clamp", {A, A}, num, same, [](auto& x) { return clamp(x[0], std::nullopt, x[1]); },
       [](auto& v, Dtype) { return nan_min(v[0], v[1]); }},
      // where and masked_fill (the condition is a bool tensor whatever the dtype)
      {"where", {Domain::Bool, A, A}, all, same, [](auto& x) { return where(x[0], x[1], x[2]); },
       [](auto& v, Dtype) { return v[0] ? v[1] : v[2]; }},
      {"where", {Domain::Bool, A}, all, to_float, [](auto& x) { return where(x[0], x[1], 1.5); },
       [](auto& v, Dtype) { return v[0] ? v[1] : 1.5; }},
      {"masked_fill", {A, Domain::Bool}, all, same, [](auto& x) { return masked_fill(x[0], x[1], 2.5); },
       [](auto& v, Dtype t) { return v[1] ? store(2.5, t) : v[0]; }},
      // comparisons, to bool
      {"eq", {A, A}, all, to_bool, [](auto& x) { return x[0] == x[1]; }, [](auto& v, Dtype) { return double(v[0] == v[1]); }},
      {"ne", {A, A}, all, to_bool, [](auto& x) { return ne(x[0], x[1]); }, [](auto& v, Dtype) { return double(v[0] != v[1]); }},
      {"lt", {A, A}, all, to_bool, [](auto& x) { return x[0] < x[1]; }, [](auto& v, Dtype) { return double(v[0] < v[1]); }},
      {"le", {A, A}, all, to_bool, [](auto& x) { return x[0].le(x[1]); }, [](auto& v, Dtype) { return double(v[0] <= v[1]); }},
      {"gt", {A, A}, all, to_bool, [](auto& x) { return x[0] > x[1]; }, [](auto& v, Dtype) { return double(v[0] > v[1]); }},
      {"ge", {A, A}, all, to_bool, [](auto& x) { return ge(x[0], x[1]); }, [](auto& v, Dtype) { return double(v[0] >= v[1]); }},
      {"eq", {A}, all, to_bool, [](auto& x) { return x[0] == 1; }, [](auto& v, Dtype) { return double(v[0] == 1); }},
      {"lt", {A}, all, to_bool, [](auto& x) { return x[0] < 0.5; }, [](auto& v, Dtype) { return double(v[0] < 0.5); }},
      {"ge", {A}, all, to_bool, [](auto& x) { return 1 >= x[0]; }, [](auto& v, Dtype) { return double(1 >= v[0]); }},
      // in-place forms (self is never broadcast; the result keeps self's dtype)
      {"neg_", {A}, num, same, [](auto& x) { return x[0].neg_(); }, [](auto& v, Dtype) { return -v[0]; }, true},
      {"abs_", {A}, num, same, [](auto& x) { return x[0].abs_(); }, u(std::fabs), true},
      {"exp_", {A}, flt, same, [](auto& x) { return x[0].exp_(); }, u(std::exp), true},
      {"expm1_", {A}, flt, same, [](auto& x) { return x[0].expm1_(); }, u(std::expm1), true},
      {"log_", {A}, flt, same, [](auto& x) { return x[0].log_(); }, u(std::log), true},
      {"sqrt_", {A}, flt, same, [](auto& x) { return x[0].sqrt_(); }, u(std::sqrt), true},
      {"rsqrt_", {A}, flt, same, [](auto& x) { return x[0].rsqrt_(); },
       [](auto& v, Dtype) { return 1 / std::sqrt(v[0]); }, true},
      {"sin_", {A}, flt, same, [](auto& x) { return x[0].sin_(); }, u(std::sin), true},
      {"cos_", {A}, flt, same, [](auto& x) { return x[0].cos_(); }, u(std::cos), true},
      {"tanh_", {A}, flt, same, [](auto& x) { return x[0].tanh_(); }, u(std::tanh), true},
      {"sigmoid_", {A}, flt, same, [](auto& x) { return x[0].sigmoid_(); },
       [](auto& v, Dtype) { return 1 / (1 + std::exp(-v[0])); }, true},
      {"relu_", {A}, num, same, [](auto& x) { return x[0].relu_(); },
       [](auto& v, Dtype) { return std::max(v[0], 0.0); }, true},
      {"sign_", {A}, all, same, [](auto& x) { return x[0].sign_(); },
       [](auto& v, Dtype) { return double((v[0] > 0) - (v[0] < 0)); }, true},
      {"floor_", {A}, num, same, [](auto& x) { return x[0].floor_(); }, u(std::floor), true},
      {"round_", {A}, num, same, [](auto& x) { return x[0].round_(); }, u(std::nearbyint), true},
      {"frac_", {A}, flt, same, [](auto& x) { return x[0].frac_(); },
       [](auto& v, Dtype) { return v[0] - std::trunc(v[0]); }, true},
      {"atan_", {A}, flt, same, [](auto& x) { return x[0].atan_(); }, u(std::atan), true},
      {"erf_", {A}, flt, same, [](auto& x) { return x[0].erf_(); }, u(std::erf), true},
      {"erfinv_", {Domain::Unit}, flt, same, [](auto& x) { return x[0].erfinv_(); }, u(erfinv_reference), true},
      {"atanh_", {Domain::Unit}, flt, same, [](auto& x) { return x[0].atanh_(); }, u(std::atanh), true},
      {"log1p_", {A}, flt, same, [](auto& x) { return x[0].log1p_(); }, u(std::log1p), true},
      {"reciprocal_", {A}, flt, same, [](auto& x) { return x[0].reciprocal_(); },
       [](auto& v, Dtype) { return 1 / v[0]; }, true},
      {"square_", {A}, num, same, [](auto& x) { return x[0].square_(); }, [](auto& v, Dtype) { return v[0] * v[0]; }, true},
      {"pow_", {A}, num, same, [](auto& x) { return x[0].pow_(2); }, [](auto& v, Dtype) { return v[0] * v[0]; }, true},
      {"pow_", {A, Domain::Small}, num, same, [](auto& x) { return x[0].pow_(x[1]); },
       [](auto& v, Dtype t) { return is_floating_point(t) ? std::pow(v[0], v[1]) : ipow(v[0], v[1]); }, true},
      {"remainder_", {A, Domain::NonZero}, num, same, [](auto& x) { return x[0].remainder_(x[1]); },
       [](auto& v, Dtype) { return py_mod(v[0], v[1]); }, true},
      {"fmod_", {A, Domain::NonZero}, num, same, [](auto& x) { return x[0].fmod_(x[1]); },
       [](auto& v, Dtype) { return std::fmod(v[0], v[1]); }, true},
      {"fmod_", {A}, num, same, [](auto& x) { return x[0].fmod_(3); },
       [](auto& v, Dtype) { return std::fmod(v[0], 3); }, true},
      {"div_", {A, Domain::NonZero}, num, same, [](auto& x) { return x[0].div_(x[1], "floor"); },
       [](auto& v, Dtype) { return std::floor(v[0] / v[1]); }, true},
      {"div_", {A}, num, same, [](auto& x) { return x[0].div_(2, "trunc"); },
       [](auto& v, Dtype) { return std::trunc(v[0] / 2); }, true},
      {"floor_divide_", {A, Domain::NonZero}, num, same, [](auto& x) { return x[0].floor_divide_(x[1]); },
       [](auto& v, Dtype) { return std::floor(v[0] / v[1]); }, true},
      {"floor_divide_", {A}, num, same, [](auto& x) { return x[0].floor_divide_(3); },
       [](auto& v, Dtype) { return std::floor(v[0] / 3); }, true},
      {"lgamma_", {Domain::Positive}, flt, same, [](auto& x) { return x[0].lgamma_(); }, u(std::lgamma), true},
      {"digamma_", {A}, flt, same, [](auto& x) { return x[0].digamma_(); }, u(digamma_reference), true},
      {"polygamma_", {A}, flt, same, [](auto& x) { return x[0].polygamma_(1); },
       [](auto& v, Dtype) { return polygamma_reference(1, v[0]); }, true},
      {"clamp_", {A}, num, same, [](auto& x) { return x[0].clamp_(1, 3); },
       [](auto& v, Dtype) { return std::min(std::max(v[0], 1.0), 3.0); }, true},
      {"clamp_", {A, A, A}, num, same, [](auto& x) { return x[0].clamp_(x[1], x[2]); },
       [](auto& v, Dtype) { return nan_min(nan_max(v[0], v[1]), v[2]); }, true},
      {"masked_fill_", {A, Domain::Bool}, all, same, [](auto& x) { return x[0].masked_fill_(x[1], -1); },
       [](auto& v, Dtype t) { return v[1] ? store(-1, t) : v[0]; }, true},
  };
  // clang-format on
}

// Input shapes of an n-ary elementwise op in each layout (before any expand()).
std::vector<Shape> elementwise_shapes(Layout l, size_t n, bool in_place) {
  static const Shape full_shape{3, 4, 5};
  static const std::vector<Shape> bcast{{3, 1, 5}, {4, 1}, {}};
  std::vector<Shape> s(n, full_shape);
  for (size_t i = 0; i < n; ++i) {
    if (l == Layout::Scalar) s[i] = {};
    if (l == Layout::Empty) s[i] = {3, 0, 5};
    if (l == Layout::Broadcast && !(in_place && i == 0)) s[i] = n == 1 ? Shape{3, 1, 5} : bcast[i % 3];
  }
  return s;
}

// ============================================================================ reductions

struct Reduction {
  std::string name;
  std::vector<Dtype> dtypes;
  Dtype (*result)(Dtype);
  // dims: nullopt for the form without dims.
  std::function<Tensor(const Tensor&, const std::optional<Shape>& dims, bool keepdim)> run;
  // Over the reduced values in row-major order (an index result counts in that order).
  std::function<double(const Values&)> ref;
  bool single_dim = false;    // takes one dim, never a list
  bool has_all_form = true;   // callable without dims
  bool all_keepdim = false;   // the form without dims takes keepdim (argmax)
  bool empty_throws = false;  // reducing zero elements is an error
  bool has_dim_form = true;   // callable with dims
};

double ref_sum(const Values& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}
double ref_var(const Values& v, double correction) {
  const double mean = ref_sum(v) / double(v.size());
  double s = 0;
  for (double x : v) s += (x - mean) * (x - mean);
  return s / std::max(double(v.size()) - correction, 0.0);
}
double ref_arg(const Values& v, bool is_max) {
  size_t best = 0;
  for (size_t i = 1; i < v.size(); ++i)
    if (is_max ? v[i] > v[best] : v[i] < v[best]) best = i;
  return double(best);
}
double ref_norm(const Values& v, double p) {
  double s = 0;
  if (std::isinf(p)) {
    s = p > 0 ? 0 : INFINITY;
    for (double x : v) s = p > 0 ? std::max(s, std::fabs(x)) : std::min(s, std::fabs(x));
    return s;
  }
  for (double x : v) s += p == 0 ? double(x != 0) : std::pow(std::fabs(x), p);
  return p == 0 ? s : std::pow(s, 1 / p);
}

IntArrayRef dims_ref(const std::optional<Shape>& d) { return IntArrayRef(d->data(), d->size()); }

std::vector<Reduction> reduction_table() {
  // One row per op reads better than the formatter's layout.
  // clang-format off
  auto all = kAllDtypes, num = kNumericDtypes, flt = kFloatDtypes;
  auto dim0 = [](const std::optional<Shape>& d) { return (*d)[0]; };
  std::vector<Reduction> t = {
      {"sum", all, [](Dtype d) { return is_integral(d, true) ? kInt64 : d; },
       [](const Tensor& x, auto& d, bool k) { return d ? x.sum(dims_ref(d), k) : x.sum(); }, ref_sum},
      {"mean", flt, same, [](const Tensor& x, auto& d, bool k) { return d ? x.mean(dims_ref(d), k) : mean(x); },
       [](const Values& v) { return ref_sum(v) / double(v.size()); }},
      {"max", all, same, [](const Tensor& x, auto&, bool) { return max(x); },
       [](const Values& v) { return *std::max_element(v.begin(), v.end()); }, false, true, false, true, false},
      {"min", all, same, [](const Tensor& x, auto&, bool) { return x.min(); },
       [](const Values& v) { return *std::min_element(v.begin(), v.end()); }, false, true, false, true, false},
      {"max", all, same, [dim0](const Tensor& x, auto& d, bool k) { return std::get<0>(max(x, dim0(d), k)); },
       [](const Values& v) { return *std::max_element(v.begin(), v.end()); }, true, false, false, true},
      {"max", all, [](Dtype) { return kInt64; },
       [dim0](const Tensor& x, auto& d, bool k) { return std::get<1>(x.max(dim0(d), k)); },
       [](const Values& v) { return ref_arg(v, true); }, true, false, false, true},
      {"min", all, same, [dim0](const Tensor& x, auto& d, bool k) { return std::get<0>(min(x, dim0(d), k)); },
       [](const Values& v) { return *std::min_element(v.begin(), v.end()); }, true, false, false, true},
      {"min", all, [](Dtype) { return kInt64; },
       [dim0](const Tensor& x, auto& d, bool k) { return std::get<1>(min(x, dim0(d), k)); },
       [](const Values& v) { return ref_arg(v, false); }, true, false, false, true},
      {"amax", all, same, [](const Tensor& x, auto& d, bool k) { return d ? x.amax(dims_ref(d), k) : amax(x); },
       [](const Values& v) { return *std::max_element(v.begin(), v.end()); }, false, true, false, true},
      {"amin", all, same, [](const Tensor& x, auto& d, bool k) { return d ? amin(x, dims_ref(d), k) : x.amin(); },
       [](const Values& v) { return *std::min_element(v.begin(), v.end()); }, false, true, false, true},
      {"argmax", num, [](Dtype) { return kInt64; },
       [dim0](const Tensor& x, auto& d, bool k) { return d ? argmax(x, dim0(d), k) : argmax(x, std::nullopt, k); },
       [](const Values& v) { return ref_arg(v, true); }, true, true, true, true},
      {"argmin", num, [](Dtype) { return kInt64; },
       [dim0](const Tensor& x, auto& d, bool k) { return d ? x.argmin(dim0(d), k) : x.argmin(std::nullopt, k); },
       [](const Values& v) { return ref_arg(v, false); }, true, true, true, true},
      {"var", flt, same, [](const Tensor& x, auto& d, bool k) { return d ? var(x, dims_ref(d), true, k) : var(x); },
       [](const Values& v) { return ref_var(v, 1); }},
      {"var", flt, same,
       [](const Tensor& x, auto& d, bool k) { return d ? x.var(dims_ref(d), 0.0, k) : x.var(false); },
       [](const Values& v) { return ref_var(v, 0); }},
      {"var", flt, same, [](const Tensor& x, auto& d, bool k) { return var(x, d ? dims_ref(d) : IntArrayRef{}, 2.0, k); },
       [](const Values& v) { return ref_var(v, 2); }},
      {"std", flt, same, [](const Tensor& x, auto& d, bool k) { return d ? std(x, dims_ref(d), true, k) : x.std(); },
       [](const Values& v) { return std::sqrt(ref_var(v, 1)); }},
  };
  for (double p : {2.0, 1.0, 3.0, 0.0, double(INFINITY), -double(INFINITY)}) {
    t.push_back({"norm", flt, same,
                 [p](const Tensor& x, auto& d, bool k) { return d ? norm(x, p, dims_ref(d), k) : norm(x, p); },
                 [p](const Values& v) { return ref_norm(v, p); }, false, true, false, std::isinf(p)});
  }
  return t;
  // clang-format on
}

// Reduces h over dims (sorted, non-negative; nullopt: all) with the reference f.
Host reduce_host(const Host& h, const std::optional<Shape>& dims, bool keepdim,
                 const std::function<double(const Values&)>& f) {
  const size_t nd = h.sizes.size();
  std::vector<bool> red(nd, !dims.has_value());
  if (dims)
    for (int64_t d : *dims) red[size_t(d)] = true;
  Shape out_sizes, kept, reduced;
  for (size_t d = 0; d < nd; ++d) {
    (red[d] ? reduced : kept).push_back(int64_t(d));
    if (!red[d]) out_sizes.push_back(h.sizes[d]);
    else if (keepdim) out_sizes.push_back(1);
  }
  Host out{out_sizes, {}};
  int64_t nk = 1, nr = 1;
  for (int64_t d : kept) nk *= h.sizes[size_t(d)];
  for (int64_t d : reduced) nr *= h.sizes[size_t(d)];
  Shape idx(nd, 0);
  for (int64_t o = 0; o < nk; ++o) {
    int64_t rem = o;
    for (size_t i = kept.size(); i-- > 0;) {
      idx[size_t(kept[i])] = rem % h.sizes[size_t(kept[i])];
      rem /= h.sizes[size_t(kept[i])];
    }
    Values row;
    for (int64_t r = 0; r < nr; ++r) {
      int64_t rr = r;
      for (size_t i = reduced.size(); i-- > 0;) {
        idx[size_t(reduced[i])] = rr % h.sizes[size_t(reduced[i])];
        rr /= h.sizes[size_t(reduced[i])];
      }
      row.push_back(h.at(idx));
    }
    out.v.push_back(f(row));
  }
  return out;
}

// ============================================================================ softmax

// Applies f to every line of h along dim (a row transform, same shape).
Host along_dim(const Host& h, int64_t dim, const std::function<Values(const Values&)>& f) {
  Host out = h;
  if (h.sizes.empty()) {
    out.v = f(h.v);
    return out;
  }
  const size_t d = size_t(dim < 0 ? dim + int64_t(h.sizes.size()) : dim);
  int64_t inner = 1;
  for (size_t i = d + 1; i < h.sizes.size(); ++i) inner *= h.sizes[i];
  const int64_t n = h.sizes[d], outer = numel_of(h.sizes) / std::max<int64_t>(n * inner, 1);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      Values line;
      for (int64_t r = 0; r < n; ++r) line.push_back(h.v[size_t((o * n + r) * inner + j)]);
      Values res = f(line);
      for (int64_t r = 0; r < n; ++r) out.v[size_t((o * n + r) * inner + j)] = res[size_t(r)];
    }
  return out;
}

Values ref_softmax(const Values& v, bool log) {
  double mx = -INFINITY, s = 0;
  for (double x : v) mx = std::max(mx, x);
  for (double x : v) s += std::exp(x - mx);
  Values out;
  for (double x : v) out.push_back(log ? x - mx - std::log(s) : std::exp(x - mx) / s);
  return out;
}

// ============================================================================ the test

TEST_P(OpsTable, Elementwise) {
  for (const auto& op : elementwise_table()) {
    for (Dtype t : op.dtypes) {
      for (Layout l : kAllLayouts) {
        std::vector<Shape> shapes = elementwise_shapes(l, op.inputs.size(), op.in_place);
        std::vector<Host> hosts;
        std::vector<Tensor> ins;
        for (size_t i = 0; i < shapes.size(); ++i) {
          const Dtype it = op.inputs[i] == Domain::Bool ? kBool : t;
          Host h = random_host(shapes[i], it, op.inputs[i], rng_);
          Tensor x = with_layout(h, it, device_, l);
          if (l == Layout::Broadcast && op.inputs.size() == 1 && !op.in_place) {  // a stride-0 view
            x = x.expand({3, 4, 5});
            h = expand_host(h, {3, 4, 5});
          }
          hosts.push_back(h);
          ins.push_back(x);
        }
        std::vector<Shape> all_shapes;
        for (auto& h : hosts) all_shapes.push_back(h.sizes);
        const Shape out_shape = broadcast_shape(all_shapes);
        for (auto& h : hosts) h = expand_host(h, out_shape);
        Host want{out_shape, {}};
        for (size_t e = 0; e < size_t(numel_of(out_shape)); ++e) {
          Values v;
          for (auto& h : hosts) v.push_back(h.v[e]);
          want.v.push_back(op.ref(v, t));
        }
        const std::string w = what(op.name, t, l);
        Tensor got;
        try {
          got = op.run(ins);
        } catch (const std::exception& e) {
          ADD_FAILURE() << w << ": " << e.what();
          continue;
        }
        if (op.in_place) {
          EXPECT_TRUE(got.is_same(ins[0])) << w << ": in-place op returned another tensor";
        }
        // One rounding of an exact result: a fifth of the table's tolerance still holds.
        expect_matches(got, want, op.result(t), w, 0.2);
      }
    }
  }
}

TEST_P(OpsTable, ElementwiseUnsupportedDtypesThrow) {
  for (const auto& op : elementwise_table()) {
    for (Dtype t : kAllDtypes) {
      if (std::find(op.dtypes.begin(), op.dtypes.end(), t) != op.dtypes.end()) continue;
      std::vector<Tensor> ins;
      for (Domain d : op.inputs)
        ins.push_back(ones({2, 3}, TensorOptions(d == Domain::Bool ? kBool : t).device(device_)));
      const auto before = ins[0].cpu().to_vector<double>();
      expect_error<TypeError>([&] { op.run(ins); }, op.name, what(op.name, t, Layout::Contiguous));
      EXPECT_EQ(ins[0].cpu().to_vector<double>(), before) << op.name << ": a failed op changed its input";
    }
  }
}

TEST_P(OpsTable, Reductions) {
  const Shape base{3, 4, 5};
  for (const auto& op : reduction_table()) {
    for (Dtype t : op.dtypes) {
      for (Layout l : kAllLayouts) {
        Shape shape = l == Layout::Scalar ? Shape{} : l == Layout::Empty ? Shape{3, 0, 5} : base;
        Host h = random_host(l == Layout::Broadcast ? Shape{3, 1, 5} : shape, t, Domain::Any, rng_);
        Tensor x = with_layout(h, t, device_, l);
        if (l == Layout::Broadcast) {
          x = x.expand(base);
          h = expand_host(h, base);
        }
        std::vector<std::optional<Shape>> dim_sets;
        if (op.has_all_form) dim_sets.push_back(std::nullopt);
        if (!op.has_dim_form) {
        } else if (l == Layout::Scalar) {
          dim_sets.push_back(Shape{0});
          dim_sets.push_back(Shape{-1});
        } else {
          for (int64_t d : {0, 1, -1}) dim_sets.push_back(Shape{d});
          if (!op.single_dim) dim_sets.push_back(Shape{0, 2});
        }
        for (const auto& dims : dim_sets) {
          for (bool keepdim : {false, true}) {
            if (!dims && keepdim && !op.all_keepdim) continue;
            std::optional<Shape> norm_dims;  // non-negative, sorted, for the reference
            if (dims && !shape.empty()) {
              norm_dims = Shape{};
              for (int64_t d : *dims) norm_dims->push_back(d < 0 ? d + int64_t(shape.size()) : d);
              std::sort(norm_dims->begin(), norm_dims->end());
            }
            int64_t reduced = 1;
            if (!norm_dims) reduced = numel_of(h.sizes);
            else
              for (int64_t d : *norm_dims) reduced *= h.sizes[size_t(d)];
            std::string dims_str = dims ? " dims " + str(*dims) : " all";
            const std::string w = what(op.name, t, l, dims_str + (keepdim ? " keepdim" : ""));
            if (reduced == 0 && op.empty_throws) {
              EXPECT_THROW(op.run(x, dims, keepdim), Error) << w;
              continue;
            }
            // The form without dims gives a 0-d result, or all ones with keepdim.
            Host want = reduce_host(h, norm_dims, keepdim, op.ref);
            Tensor got;
            try {
              got = op.run(x, dims, keepdim);
            } catch (const std::exception& e) {
              ADD_FAILURE() << w << ": " << e.what();
              continue;
            }
            expect_matches(got, want, op.result(t), w);
          }
        }
      }
    }
  }
}

TEST_P(OpsTable, ReductionUnsupportedDtypesThrow) {
  for (const auto& op : reduction_table()) {
    for (Dtype t : kAllDtypes) {
      if (std::find(op.dtypes.begin(), op.dtypes.end(), t) != op.dtypes.end()) continue;
      Tensor x = ones({2, 3}, TensorOptions(t).device(device_));
      std::optional<Shape> dims = op.has_all_form ? std::nullopt : std::optional<Shape>(Shape{0});
      expect_error<TypeError>([&] { op.run(x, dims, false); }, op.name, what(op.name, t, Layout::Contiguous));
    }
  }
}

TEST_P(OpsTable, Softmax) {
  const Shape base{3, 4, 5};
  for (bool log : {false, true}) {
    const std::string op = log ? "log_softmax" : "softmax";
    for (Dtype t : kAllDtypes) {
      // Without a dtype only floats are supported; with dtype=float32 any input is cast first.
      for (bool with_dtype : {false, true}) {
        if (!with_dtype && !is_floating_point(t)) {
          Tensor x = ones({2, 3}, TensorOptions(t).device(device_));
          expect_error<TypeError>([&] { log ? log_softmax(x, 0) : softmax(x, 0); }, op,
                                  what(op, t, Layout::Contiguous));
          continue;
        }
        const Dtype out_t = with_dtype ? kFloat32 : t;
        for (Layout l : kAllLayouts) {
          Shape shape = l == Layout::Scalar ? Shape{} : l == Layout::Empty ? Shape{3, 0, 5} : base;
          Host h = random_host(l == Layout::Broadcast ? Shape{3, 1, 5} : shape, t, Domain::Any, rng_);
          Tensor x = with_layout(h, t, device_, l);
          if (l == Layout::Broadcast) {
            x = x.expand(base);
            h = expand_host(h, base);
          }
          for (int64_t dim :
               l == Layout::Scalar ? std::vector<int64_t>{0, -1} : std::vector<int64_t>{0, 1, -1}) {
            Host want = along_dim(h, dim, [log](const Values& v) { return ref_softmax(v, log); });
            std::optional<Dtype> dt = with_dtype ? std::optional<Dtype>(kFloat32) : std::nullopt;
            Tensor got = log ? x.log_softmax(dim, dt) : softmax(x, dim, dt);
            expect_matches(got, want, out_t, what(op, t, l, " dim " + std::to_string(dim)));
          }
        }
      }
    }
  }
}

// A device joins the table here; "cuda" skips on machines without a GPU.
INSTANTIATE_TEST_SUITE_P(Devices, OpsTable, ::testing::Values("cpu", "cuda"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace wick::test
