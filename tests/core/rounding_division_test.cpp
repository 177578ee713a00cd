// fmod, div with a rounding mode and floor_divide, then lgamma, digamma and polygamma: PyTorch's
// values for negative operands (C's fmod against Python's %, rounding toward zero against
// toward -inf), its promotion and its errors (a bad rounding mode, integer division by zero);
// the gamma family against the C library's lgamma, known values, its own recurrences and
// reflections and float64 differences, and at its poles. On every device present (ops_table_test
// and gradcheck_ops_test hold the table rows and the gradients).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../nn/nn_test_util.h"
#include "wick/wick.h"

using namespace wick;
using wick::testing::error_of;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kPi = std::numbers::pi;
constexpr double kEulerGamma = 0.57721566490153286061;

std::vector<double> values(const Tensor& t) { return t.cpu().to(kFloat64).contiguous().to_vector<double>(); }

class DeviceTest : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override {
    if (GetParam().is_cuda() && !cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  }
  Device dev() const { return GetParam(); }
  // values as a 1-D tensor of dtype d on the device.
  Tensor make(const std::vector<double>& v, Dtype d) const { return tensor(v, kFloat64).to(dev(), d); }
};

// Values equal to want (NaN where want is NaN; infinities exactly).
void expect_values(const Tensor& got, const std::vector<double>& want, const std::string& what) {
  const std::vector<double> g = values(got);
  ASSERT_EQ(g.size(), want.size()) << what;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(g[i])) << what << " at " << i << ": got " << g[i];
    } else {
      EXPECT_EQ(g[i], want[i]) << what << " at " << i;
    }
  }
}

// |got - want| <= tol max(1, |want|) elementwise; infinities and NaN exactly.
void expect_close(const Tensor& got, const std::vector<double>& want, double tol, const std::string& what) {
  const std::vector<double> g = values(got);
  ASSERT_EQ(g.size(), want.size()) << what;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(g[i])) << what << " at " << i << ": got " << g[i];
    } else if (std::isinf(want[i])) {
      EXPECT_EQ(g[i], want[i]) << what << " at " << i;
    } else {
      EXPECT_LE(std::fabs(g[i] - want[i]), tol * std::max(1.0, std::fabs(want[i])))
          << what << " at " << i << ": got " << g[i] << ", want " << want[i];
    }
  }
}

// ============================================================================ rounding divisions

using RoundingDivision = DeviceTest;

TEST_P(RoundingDivision, NegativeOperandsOfEverySignedAndFloatDtype) {
  for (Dtype d : {kInt8, kInt16, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64}) {
    const std::string w = std::string(name(d));
    Tensor a = make({-7, 7, -7, 7, -8, 0}, d);
    Tensor b = make({2, -2, -2, 2, 2, -3}, d);
    // C's fmod has the dividend's sign; Python's % (remainder) the divisor's.
    Tensor f = fmod(a, b);
    EXPECT_EQ(f.dtype(), d) << w;
    expect_values(f, {-1, 1, -1, 1, 0, 0}, "fmod " + w);
    expect_values(remainder(a, b), {1, -1, -1, 1, 0, 0}, "remainder " + w);
    expect_values(a.fmod(b), {-1, 1, -1, 1, 0, 0}, "Tensor::fmod " + w);
    expect_values(fmod(a, 3), {-1, 1, -1, 1, -2, 0}, "fmod scalar " + w);
    expect_values(fmod(a, -3), {-1, 1, -1, 1, -2, 0}, "fmod negative scalar " + w);
    // "trunc" rounds toward zero, "floor" and floor_divide toward -inf.
    Tensor t = div(a, b, "trunc");
    EXPECT_EQ(t.dtype(), d) << w;
    expect_values(t, {-3, -3, 3, 3, -4, 0}, "div trunc " + w);
    expect_values(div(a, b, "floor"), {-4, -4, 3, 3, -4, 0}, "div floor " + w);
    expect_values(a.div(b, "floor"), {-4, -4, 3, 3, -4, 0}, "Tensor::div floor " + w);
    expect_values(floor_divide(a, b), {-4, -4, 3, 3, -4, 0}, "floor_divide " + w);
    expect_values(a.floor_divide(b), {-4, -4, 3, 3, -4, 0}, "Tensor::floor_divide " + w);
    expect_values(floor_divide(a, 2), {-4, 3, -4, 3, -4, 0}, "floor_divide scalar " + w);
    expect_values(div(a, 2, "trunc"), {-3, 3, -3, 3, -4, 0}, "div trunc scalar " + w);
    expect_values(a.div(-2, "floor"), {3, -4, 3, -4, 4, 0}, "div floor negative scalar " + w);
    expect_values(a.div(-2, "trunc"), {3, -3, 3, -3, 4, 0}, "div trunc negative scalar " + w);
    // In place: the same values, self returned.
    Tensor c = a.clone();
    EXPECT_TRUE(c.fmod_(b).is_same(c));
    expect_values(c, {-1, 1, -1, 1, 0, 0}, "fmod_ " + w);
    c = a.clone();
    EXPECT_TRUE(c.div_(b, "floor").is_same(c));
    expect_values(c, {-4, -4, 3, 3, -4, 0}, "div_ floor " + w);
    c = a.clone();
    c.div_(2, "trunc");
    expect_values(c, {-3, 3, -3, 3, -4, 0}, "div_ trunc scalar " + w);
    c = a.clone();
    EXPECT_TRUE(c.floor_divide_(b).is_same(c));
    expect_values(c, {-4, -4, 3, 3, -4, 0}, "floor_divide_ " + w);
    c = a.clone();
    c.floor_divide_(-3);
    expect_values(c, {2, -3, 2, -3, 2, 0}, "floor_divide_ scalar " + w);
    c = a.clone();
    c.fmod_(-3);
    expect_values(c, {-1, 1, -1, 1, -2, 0}, "fmod_ scalar " + w);
  }
}

TEST_P(RoundingDivision, FloatQuotients) {
  // Python's floor division: 1.0 // 0.1 is 9 (0.1 is a little above a tenth), though
  // 1.0 / 0.1 rounds to 10, which "trunc" truncates (PyTorch's values).
  Tensor one = make({1.0, -1.0}, kFloat64);
  expect_values(div(one, 0.1, "floor"), {9, -10}, "1 // 0.1");
  expect_values(floor_divide(one, make({0.1, 0.1}, kFloat64)), {9, -10}, "1 // 0.1 tensor");
  expect_values(div(one, 0.1, "trunc"), {10, -10}, "trunc(1 / 0.1)");
  // A zero quotient keeps the sign of the true quotient.
  Tensor z = div(make({-1, 0, 1}, kFloat32), make({3, -3, -3}, kFloat32), "trunc");
  EXPECT_TRUE(std::signbit(values(z)[0]) && std::signbit(values(z)[1]) && std::signbit(values(z)[2]));
  Tensor zf = floor_divide(make({0, 0}, kFloat32), make({-3, 3}, kFloat32));
  EXPECT_TRUE(std::signbit(values(zf)[0]));
  EXPECT_FALSE(std::signbit(values(zf)[1]));
  // Division by zero of floats: IEEE's quotient (no error).
  const std::vector<double> n{1, -1, 0};
  for (Dtype d : {kFloat16, kBFloat16, kFloat32, kFloat64}) {
    const std::string w = std::string(name(d));
    expect_values(floor_divide(make(n, d), 0.0), {kInf, -kInf, NAN}, "floor_divide by 0 " + w);
    expect_values(div(make(n, d), make({0, 0, 0}, d), "trunc"), {kInf, -kInf, NAN}, "div trunc by 0 " + w);
    expect_values(div(make(n, d), 0, "floor"), {kInf, -kInf, NAN}, "div floor by 0 " + w);
    expect_values(fmod(make(n, d), 0.0), {NAN, NAN, NAN}, "fmod by 0 " + w);
    expect_values(fmod(make({5.5, -5.5}, d), 2), {1.5, -1.5}, "fmod " + w);
    expect_values(fmod(make({kInf, 3}, d), make({2, kInf}, d)), {NAN, 3}, "fmod inf " + w);
  }
  // Integer tensors with a float divisor promote to the default float.
  Tensor i = make({-7, 7}, kInt64);
  Tensor q = floor_divide(i, 2.5);
  EXPECT_EQ(q.dtype(), kFloat32);
  expect_values(q, {-3, 2}, "int64 // 2.5");
  Tensor r = fmod(i, 2.5);
  EXPECT_EQ(r.dtype(), kFloat32);
  expect_values(r, {-2, 2}, "fmod(int64, 2.5)");
  expect_values(div(i, make({2.5, -2.5}, kFloat32), "trunc"), {-2, -2}, "int64 trunc float32");
}

TEST_P(RoundingDivision, PromotionKeepsIntegers) {
  Tensor a32 = make({-7, 9}, kInt32);
  Tensor b64 = make({2, -4}, kInt64);
  Tensor q = div(a32, b64, "floor");
  EXPECT_EQ(q.dtype(), kInt64);
  expect_values(q, {-4, -3}, "int32 floor int64");
  EXPECT_EQ(div(a32, b64, std::nullopt).dtype(), kFloat32);  // true division
  expect_values(div(a32, b64, std::nullopt), {-3.5, -2.25}, "int32 / int64");
  EXPECT_EQ(div(a32, 2, "trunc").dtype(), kInt32);  // a Python int keeps the tensor's dtype
  EXPECT_EQ(fmod(a32, b64).dtype(), kInt64);
  // uint8: no signs to round across.
  Tensor u = make({7, 200}, kUInt8);
  Tensor uq = floor_divide(u, make({2, 3}, kUInt8));
  EXPECT_EQ(uq.dtype(), kUInt8);
  expect_values(uq, {3, 66}, "uint8 //");
  expect_values(fmod(u, make({4, 7}, kUInt8)), {3, 4}, "uint8 fmod");
  // bool with an int divisor gives int64.
  Tensor bq = floor_divide(make({1, 0}, kBool), 2);
  EXPECT_EQ(bq.dtype(), kInt64);
  expect_values(bq, {0, 0}, "bool // 2");
  // The quotient of MIN by -1 wraps to MIN (int8 arithmetic, as PyTorch's).
  expect_values(div(make({-128, 127}, kInt8), make({-1, -1}, kInt8), "trunc"), {-128, -127}, "int8 MIN / -1");
  expect_values(floor_divide(make({-128}, kInt8), -1), {-128}, "int8 MIN // -1");
  expect_values(fmod(make({-128}, kInt8), make({-1}, kInt8)), {0}, "int8 MIN fmod -1");
  // In place the result must cast to self's dtype.
  Tensor ai = make({-7, 7}, kInt64);
  EXPECT_THROW(ai.div_(2.5, "floor"), Error);
  EXPECT_THROW(ai.floor_divide_(make({2.5, 2.5}, kFloat32)), Error);
  expect_values(ai, {-7, 7}, "self after a refused in-place op");
  Tensor ai32 = make({-7, 7}, kInt32);
  ai32.floor_divide_(b64);
  EXPECT_EQ(ai32.dtype(), kInt32);
  expect_values(ai32, {-4, -2}, "int32 floor_divide_ int64");
  // Broadcast and non-contiguous operands.
  Tensor m = make({-7, -5, -3, -1, 1, 3, 5, 7, 9}, kInt64).reshape({3, 3}).t();
  // m is [[-7, -1, 5], [-5, 1, 7], [-3, 3, 9]], a transposed view.
  expect_values(floor_divide(m, make({2, -2, 3}, kInt64)), {-4, 0, 1, -3, -1, 2, -2, -2, 3}, "broadcast //");
}

TEST_P(RoundingDivision, IntegerDivisionByZeroRaises) {
  for (Dtype d : {kUInt8, kInt8, kInt16, kInt32, kInt64}) {
    const std::string w = std::string(name(d));
    Tensor a = make({5, 3}, d);
    Tensor z = make({1, 0}, d);
    EXPECT_EQ(error_of([&] { fmod(a, z); }), "[fmod] ZeroDivisionError") << w;
    EXPECT_EQ(error_of([&] { div(a, z, "trunc"); }), "[div] ZeroDivisionError") << w;
    EXPECT_EQ(error_of([&] { a.div(z, "floor"); }), "[div] ZeroDivisionError") << w;
    EXPECT_EQ(error_of([&] { floor_divide(a, z); }), "[floor_divide] ZeroDivisionError") << w;
    EXPECT_EQ(error_of([&] { fmod(a, 0); }), "[fmod] ZeroDivisionError") << w;
    EXPECT_EQ(error_of([&] { div(a, 0, "floor"); }), "[div] ZeroDivisionError") << w;
    EXPECT_EQ(error_of([&] { a.floor_divide(0); }), "[floor_divide] ZeroDivisionError") << w;
    EXPECT_EQ(error_of([&] { a.fmod_(0); }), "[fmod_] ZeroDivisionError") << w;
    EXPECT_EQ(error_of([&] { a.div_(0, "trunc"); }), "[div_] ZeroDivisionError") << w;
    EXPECT_EQ(error_of([&] { a.floor_divide_(0); }), "[floor_divide_] ZeroDivisionError") << w;
    // A tensor divisor is checked by the kernel, which names the op's family.
    EXPECT_EQ(error_of([&] { a.floor_divide_(z); }), "[floor_divide] ZeroDivisionError") << w;
    EXPECT_EQ(error_of([&] { a.fmod_(z); }), "[fmod] ZeroDivisionError") << w;
    EXPECT_THROW(div(a, z, "floor"), ValueError) << w;
    expect_values(a, {5, 3}, "self after a refused division " + w);  // nothing written
    if (d == kInt8 || d == kUInt8) {  // 256 is 0 in (u)int8, where the kernel divides: refused, never a trap
      EXPECT_EQ(error_of([&] { floor_divide(a, 256); }), "[floor_divide] ZeroDivisionError") << w;
      EXPECT_EQ(error_of([&] { fmod(a, 256); }), "[fmod] ZeroDivisionError") << w;
      EXPECT_EQ(error_of([&] { a.div_(512, "trunc"); }), "[div_] ZeroDivisionError") << w;
      EXPECT_EQ(error_of([&] { remainder(a, 256); }), "[remainder] ZeroDivisionError: integer remainder by zero") << w;
      EXPECT_EQ(error_of([&] { a.remainder_(256); }), "[remainder_] ZeroDivisionError: integer remainder by zero")
          << w;
      expect_values(a, {5, 3}, "self after a refused division by 256 " + w);
    }
    // True division by an integer zero is IEEE's.
    expect_values(div(a, z, std::nullopt), {5, kInf}, "true division by 0 " + w);
  }
}

TEST_P(RoundingDivision, BadRoundingModeRaises) {
  Tensor x = make({1.5, -2.5}, kFloat32);
  const std::string expected = "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found ";
  EXPECT_EQ(error_of([&] { div(x, x, "round"); }), "[div] " + expected + "'round'");
  EXPECT_EQ(error_of([&] { div(x, 2, "Floor"); }), "[div] " + expected + "'Floor'");
  EXPECT_EQ(error_of([&] { x.div(x, ""); }), "[div] " + expected + "''");
  EXPECT_EQ(error_of([&] { x.div_(x, "true"); }), "[div_] " + expected + "'true'");
  EXPECT_EQ(error_of([&] { x.div_(3, "ceil"); }), "[div_] " + expected + "'ceil'");
  EXPECT_THROW(div(x, x, "round"), ValueError);
  expect_values(x, {1.5, -2.5}, "self after a refused div_");
  // The modes as strings of any kind; nullopt is true division.
  const std::string mode = "floor";
  expect_values(div(x, 2, mode), {0, -2}, "std::string mode");
  expect_values(div(x, make({2, 2}, kFloat32), std::nullopt), {0.75, -1.25}, "nullopt");
  expect_values(x.div(2, std::nullopt), {0.75, -1.25}, "Tensor::div nullopt");
}

TEST_P(RoundingDivision, BoolOperandsRejected) {
  Tensor b = make({1, 0}, kBool);
  EXPECT_EQ(error_of([&] { div(b, b, "floor"); }), "[div] \"div\" not implemented for 'bool'");
  EXPECT_EQ(error_of([&] { floor_divide(b, b); }), "[floor_divide] \"floor_divide\" not implemented for 'bool'");
  EXPECT_EQ(error_of([&] { fmod(b, b); }), "[fmod] \"fmod\" not implemented for 'bool'");
  EXPECT_THROW(fmod(b, true), TypeError);
}

// ============================================================================ gamma family

using GammaFunctions = DeviceTest;

// Points of (-10, 10) at least 0.05 away from the integers, and a few large ones.
std::vector<double> grid() {
  std::vector<double> v;
  for (double x = -9.93; x < 10; x += 0.137)
    if (std::fabs(x - std::round(x)) >= 0.05) v.push_back(x);
  for (double x : {12.5, 30.25, 171.5, 1e4 + 0.5, 1e10 + 0.5, 1e-6, -1e-6, 0.3, -0.3}) v.push_back(x);
  return v;
}

TEST_P(GammaFunctions, LgammaAgainstTheCLibraryAndAtItsPoles) {
  const std::vector<double> xs = grid();
  std::vector<double> want;
  for (double x : xs) want.push_back(std::lgamma(x));
  // CUDA's lgamma is good to a few ulp except near its zeros on the negative side.
  const double tol64 = dev().is_cpu() ? 1e-13 : 1e-9;
  expect_close(lgamma(make(xs, kFloat64)), want, tol64, "lgamma float64");
  std::vector<float> xf(xs.begin(), xs.end());
  std::vector<double> want32;
  for (float x : xf) want32.push_back(std::lgamma(double(x)));
  Tensor f = lgamma(tensor(xf, kFloat32).to(dev()));
  EXPECT_EQ(f.dtype(), kFloat32);
  expect_close(f, want32, dev().is_cpu() ? 1e-5 : 1e-4, "lgamma float32");
  // inf at 0 and the negative integers (both zeros), and for +-inf; NaN stays NaN.
  for (Dtype d : {kFloat16, kBFloat16, kFloat32, kFloat64})
    expect_close(lgamma(make({0, -0.0, -1, -2, -10, kInf, -kInf, NAN, 1, 2}, d)),
                 {kInf, kInf, kInf, kInf, kInf, kInf, kInf, NAN, 0, 0}, 1e-6, "lgamma poles " + std::string(name(d)));
  Tensor li = lgamma(make({0, -3, 1, 4}, kInt64));  // integers give the default float
  EXPECT_EQ(li.dtype(), kFloat32);
  expect_close(li, {kInf, kInf, 0, std::log(6.0)}, 1e-6, "lgamma int64");
  Tensor x = make({0.5, 3.5}, kFloat64);
  Tensor m = x.lgamma();
  EXPECT_TRUE(x.lgamma_().is_same(x));
  expect_values(x, values(m), "lgamma_");
}

TEST_P(GammaFunctions, DigammaKnownValuesPolesAndIdentities) {
  const double ln2 = std::numbers::ln2;
  expect_close(digamma(make({1, 0.5, -0.5, 2, 10, -1.5}, kFloat64)),
               {-kEulerGamma, -kEulerGamma - 2 * ln2, -kEulerGamma - 2 * ln2 + 2, 1 - kEulerGamma,
                1 + 1. / 2 + 1. / 3 + 1. / 4 + 1. / 5 + 1. / 6 + 1. / 7 + 1. / 8 + 1. / 9 - kEulerGamma,
                -kEulerGamma - 2 * ln2 + 2 + 2. / 3},
               1e-14, "digamma known values");
  // PyTorch's poles: -inf at +0, +inf at -0, NaN at the negative integers and -inf.
  for (Dtype d : {kFloat16, kBFloat16, kFloat32, kFloat64})
    expect_values(digamma(make({0, -0.0, -1, -2, -7, -kInf, kInf, NAN}, d)),
                  {-kInf, kInf, NAN, NAN, NAN, NAN, kInf, NAN}, "digamma poles " + std::string(name(d)));
  Tensor di = digamma(make({0, -3, 1}, kInt64));
  EXPECT_EQ(di.dtype(), kFloat32);
  expect_close(di, {-kInf, NAN, -kEulerGamma}, 1e-6, "digamma int64");
  // Against the derivative of the C library's lgamma (central differences), and the recurrence
  // psi(x + 1) = psi(x) + 1 / x and the reflection psi(1 - x) - psi(x) = pi cot(pi x), all in
  // float64.
  std::vector<double> xs;  // the grid without its tiny points, where psi(x) ~ -1 / x cancels
  for (double x : grid())
    if (std::fabs(x) > 1e-3) xs.push_back(x);
  std::vector<double> slope, xs1, xs_refl;
  for (double x : xs) {
    const double h = 1e-5 * std::max(1.0, std::fabs(x));
    slope.push_back((std::lgamma(x + h) - std::lgamma(x - h)) / (2 * h));
    xs1.push_back(x + 1);
    xs_refl.push_back(1 - x);
  }
  Tensor psi = digamma(make(xs, kFloat64));
  std::vector<double> pv = values(psi);
  expect_close(psi, slope, 1e-6, "digamma against lgamma's slope");
  std::vector<double> next, refl;
  for (size_t i = 0; i < xs.size(); ++i) {
    next.push_back(pv[i] + 1 / xs[i]);
    refl.push_back(pv[i] + kPi / std::tan(kPi * xs[i]));
  }
  expect_close(digamma(make(xs1, kFloat64)), next, 1e-12, "digamma recurrence");
  std::vector<double> xr, rr;  // |x| < 12: pi cot(pi x) loses digits for large |x|
  for (size_t i = 0; i < xs.size(); ++i)
    if (std::fabs(xs[i]) < 12) xr.push_back(xs_refl[i]), rr.push_back(refl[i]);
  expect_close(digamma(make(xr, kFloat64)), rr, 1e-11, "digamma reflection");
  // float32 and 16-bit floats against float64 (relative near the poles, absolute near the roots).
  std::vector<float> xf;
  for (double x : grid()) xf.push_back(float(x));
  Tensor x32 = tensor(xf, kFloat32).to(dev());
  expect_close(digamma(x32), values(digamma(x32.to(kFloat64))), 4e-6, "digamma float32");
  Tensor x16 = x32.to(kFloat16);
  expect_close(digamma(x16), values(digamma(x16.to(kFloat64)).to(kFloat16)), 2e-3, "digamma float16");
  Tensor x = make({0.5, -2.5}, kFloat32);
  Tensor m = x.digamma();
  x.digamma_();
  expect_values(x, values(m), "digamma_");
}

TEST_P(GammaFunctions, PolygammaKnownValuesPolesAndOrders) {
  const double pi2 = kPi * kPi, zeta3 = 1.2020569031595942854, zeta5 = 1.0369277551433699263;
  Tensor one = make({1}, kFloat64), half = make({0.5}, kFloat64);
  expect_close(polygamma(1, one), {pi2 / 6}, 1e-14, "trigamma(1)");
  expect_close(polygamma(1, half), {pi2 / 2}, 1e-14, "trigamma(1/2)");
  expect_close(polygamma(1, make({-0.5}, kFloat64)), {pi2 / 2 + 4}, 1e-14, "trigamma(-1/2)");
  expect_close(polygamma(2, one), {-2 * zeta3}, 1e-14, "polygamma(2, 1)");
  expect_close(one.polygamma(3), {pi2 * pi2 / 15}, 1e-14, "polygamma(3, 1)");
  expect_close(polygamma(3, half), {pi2 * pi2}, 1e-14, "polygamma(3, 1/2)");
  expect_close(polygamma(4, one), {-24 * zeta5}, 1e-14, "polygamma(4, 1)");
  // Large x: (-1)^(n+1) (n-1)! / x^n (1 + n / 2x + ...).
  const double big = values(polygamma(1, make({1e6}, kFloat64)))[0];
  EXPECT_NEAR(big, 1e-6 + 0.5e-12 + 1. / 6 * 1e-18, 1e-14 * 1e-6) << "trigamma(1e6)";
  // n = 0 is digamma.
  std::vector<double> xs;  // the grid without its tiny points (the recurrence cancels there)
  for (double x : grid())
    if (std::fabs(x) > 1e-3) xs.push_back(x);
  Tensor x64 = make(xs, kFloat64);
  expect_values(polygamma(0, x64), values(digamma(x64)), "polygamma(0, x)");
  // Poles: +inf for odd n, -inf for even n (the limit PyTorch's zeta gives).
  for (Dtype d : {kFloat16, kBFloat16, kFloat32, kFloat64}) {
    const std::string w = std::string(name(d));
    Tensor p = make({0, -1, -3, NAN}, d);
    expect_values(polygamma(1, p), {kInf, kInf, kInf, NAN}, "trigamma poles " + w);
    expect_values(polygamma(2, p), {-kInf, -kInf, -kInf, NAN}, "polygamma(2) poles " + w);
    expect_values(polygamma(3, p), {kInf, kInf, kInf, NAN}, "polygamma(3) poles " + w);
  }
  // The recurrence psi_n(x + 1) = psi_n(x) + (-1)^n n! / x^(n+1), and the derivative of each
  // order by central differences of the one below, in float64.
  double fact = 1;
  for (int n = 1; n <= 4; ++n) {
    fact *= n;
    std::vector<double> xs1, next, xh, xl;
    std::vector<double> pv = values(polygamma(n, x64));
    for (size_t i = 0; i < xs.size(); ++i) {
      xs1.push_back(xs[i] + 1);
      next.push_back(pv[i] + (n % 2 ? -fact : fact) / std::pow(xs[i], n + 1));
    }
    std::vector<double> mid, slope;
    for (double x : xs) {
      if (std::fabs(x) < 0.01 || std::fabs(x) > 1e3) continue;
      const double h = 1e-6;
      mid.push_back(x);
      xh.push_back(x + h);
      xl.push_back(x - h);
    }
    const std::vector<double> up = values(polygamma(n - 1, make(xh, kFloat64)));
    const std::vector<double> down = values(polygamma(n - 1, make(xl, kFloat64)));
    for (size_t i = 0; i < mid.size(); ++i) slope.push_back((up[i] - down[i]) / 2e-6);
    const std::string w = "order " + std::to_string(n);
    // Near 0 the two sides cancel: the tolerance follows psi_n(x), the larger term.
    const std::vector<double> shifted = values(polygamma(n, make(xs1, kFloat64)));
    for (size_t i = 0; i < xs.size(); ++i)
      EXPECT_NEAR(shifted[i], next[i], 1e-12 * std::max({1.0, std::fabs(pv[i]), std::fabs(next[i])}))
          << "polygamma recurrence " << w << " at x = " << xs[i];
    // The difference quotient is good to about 1e-6 relative where the values are moderate.
    std::vector<double> got = values(polygamma(n, make(mid, kFloat64)));
    for (size_t i = 0; i < mid.size(); ++i)
      EXPECT_NEAR(got[i], slope[i], 1e-5 * std::max(1.0, std::fabs(got[i]))) << w << " at x = " << mid[i];
    // float32 against float64: the sum runs in float64 whatever the dtype.
    std::vector<float> xf(xs.begin(), xs.end());
    Tensor f = polygamma(n, tensor(xf, kFloat32).to(dev()));
    EXPECT_EQ(f.dtype(), kFloat32);
    expect_close(f, values(polygamma(n, tensor(xf, kFloat32).to(dev(), kFloat64)).to(kFloat32)), 1e-6,
                 "polygamma float32 " + w);
  }
  // Integer inputs give the default float; in place matches; a negative order raises.
  Tensor pi = polygamma(1, make({1, 2}, kInt64));
  EXPECT_EQ(pi.dtype(), kFloat32);
  expect_close(pi, {pi2 / 6, pi2 / 6 - 1}, 1e-6, "trigamma int64");
  Tensor y = make({0.25, 3.5, -1.5}, kFloat64);
  Tensor want = polygamma(2, y);
  EXPECT_TRUE(y.polygamma_(2).is_same(y));
  expect_values(y, values(want), "polygamma_");
  EXPECT_EQ(error_of([&] { polygamma(-1, y); }), "[polygamma] polygamma(n, x) does not support negative n.");
  EXPECT_EQ(error_of([&] { y.polygamma(-2); }), "[polygamma] polygamma(n, x) does not support negative n.");
  EXPECT_EQ(error_of([&] { y.polygamma_(-1); }), "[polygamma_] polygamma(n, x) does not support negative n.");
  EXPECT_THROW(polygamma(-1, y), ValueError);
  Tensor yi = make({1, 2}, kInt64);
  EXPECT_THROW(yi.polygamma_(1), Error);  // a float result can't be written to int64
}

INSTANTIATE_TEST_SUITE_P(Devices, RoundingDivision, ::testing::Values(Device(kCPU), Device(kCUDA, 0)),
                         [](const auto& info) { return info.param.is_cuda() ? "cuda" : "cpu"; });
INSTANTIATE_TEST_SUITE_P(Devices, GammaFunctions, ::testing::Values(Device(kCPU), Device(kCUDA, 0)),
                         [](const auto& info) { return info.param.is_cuda() ? "cuda" : "cpu"; });

}  // namespace
