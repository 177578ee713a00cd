// where, clamp (tensor bounds), clamp_min/clamp_max and the pointwise ops (pow, remainder of
// tensors) on every device, with broadcast operands and non-contiguous views (transposed,
// sliced with a step, expanded, off 16-byte alignment) besides the contiguous layout, against
// references computed here element by element from the base values. And bool arithmetic,
// which every backend must run in bool as PyTorch does (True + True is True).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "core/op_math.h"
#include "wick/wick.h"

namespace wick {
namespace {

using Values = std::vector<double>;

class ElementwiseLayouts : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (std::string(GetParam()) == "cuda" && !cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  }
  Device device() const { return Device(GetParam()); }
  // v as a tensor of shape sizes and dtype t on the device under test.
  Tensor make(const Values& v, IntArrayRef sizes, Dtype t) const {
    return from_blob(const_cast<double*>(v.data()), sizes, kFloat64).clone().to(t).to(device());
  }
  // The same values starting one element into a larger buffer: contiguous, off alignment.
  Tensor make_shifted(const Values& v, Dtype t) const {
    auto flat = zeros({int64_t(v.size()) + 1}, TensorOptions(t).device(device()));
    auto view = flat.narrow(0, 1, int64_t(v.size()));
    view.copy_(from_blob(const_cast<double*>(v.data()), {int64_t(v.size())}, kFloat64).to(t));
    return view;
  }
};

Values values(const Tensor& t) { return t.cpu().to(kFloat64).contiguous().to_vector<double>(); }

// Small integers (exact in every dtype); lo >= 0 for uint8.
Values random_ints(size_t n, int lo, int hi, std::mt19937& rng) {
  Values v(n);
  for (auto& x : v) x = double(lo + int(rng() % unsigned(hi - lo + 1)));
  return v;
}

void expect_values(const Tensor& got, const Values& want, Dtype dtype, double tol, const std::string& what) {
  ASSERT_EQ(got.dtype(), dtype) << what;
  const Values g = values(got);
  ASSERT_EQ(g.size(), want.size()) << what;
  int failures = 0;
  for (size_t i = 0; i < g.size() && failures < 5; ++i) {
    const bool ok = std::isnan(want[i]) ? std::isnan(g[i])
                                        : std::abs(g[i] - want[i]) <= tol * std::max(1.0, std::abs(want[i]));
    if (!ok) {
      ++failures;
      ADD_FAILURE() << what << " at " << i << ": got " << g[i] << ", want " << want[i];
    }
  }
}

std::string name_of(Dtype t) { return std::string(name(t)); }

constexpr int64_t R = 6, C = 7;  // odd sizes: no dimension is a multiple of a vector width

TEST_P(ElementwiseLayouts, WhereBroadcastAndViews) {
  std::mt19937 rng(11);
  for (Dtype t : {kFloat32, kFloat16, kBFloat16, kFloat64, kInt32, kInt64, kUInt8, kInt8, kBool}) {
    const int lo = t == kUInt8 || t == kBool ? 0 : -9, hi = t == kBool ? 1 : 9;
    const std::string what = "where " + name_of(t);
    // cond [R, 1] broadcast over columns; a = A^T with A [C, R]; b = B[:, ::2] with B [R, 2C].
    const Values cnd = random_ints(R, 0, 1, rng), A = random_ints(C * R, lo, hi, rng),
                 B = random_ints(R * 2 * C, lo, hi, rng);
    auto cond = make(cnd, {R, 1}, kBool);
    auto a = make(A, {C, R}, t).t();
    auto b = make(B, {R, 2 * C}, t).slice(1, 0, 2 * C, 2);
    Values want(R * C);
    for (int64_t i = 0; i < R; ++i)
      for (int64_t j = 0; j < C; ++j) want[i * C + j] = cnd[i] ? A[j * R + i] : B[i * 2 * C + 2 * j];
    expect_values(where(cond, a, b), want, t, 0, what + " cond [R,1], a transposed, b sliced");
    // cond transposed, b 0-d, a expanded from one row.
    const Values cnd_t = random_ints(C * R, 0, 1, rng), row = random_ints(C, lo, hi, rng);
    auto cond_t = make(cnd_t, {C, R}, kBool).t();
    auto a_row = make(row, {1, C}, t).expand({R, C});
    auto b0 = make({double(hi)}, {}, t);
    for (int64_t i = 0; i < R; ++i)
      for (int64_t j = 0; j < C; ++j) want[i * C + j] = cnd_t[j * R + i] ? row[j] : hi;
    expect_values(where(cond_t, a_row, b0), want, t, 0, what + " cond transposed, a expanded, b 0-d");
    // Contiguous (the vector path and its tail) and contiguous off alignment.
    const size_t n = 4099;
    const Values cc = random_ints(n, 0, 1, rng), x = random_ints(n, lo, hi, rng),
                 y = random_ints(n, lo, hi, rng);
    Values w(n);
    for (size_t i = 0; i < n; ++i) w[i] = cc[i] ? x[i] : y[i];
    const int64_t sn = int64_t(n);
    expect_values(where(make(cc, {sn}, kBool), make(x, {sn}, t), make(y, {sn}, t)), w, t, 0,
                  what + " contiguous");
    expect_values(where(make_shifted(cc, kBool), make_shifted(x, t), make_shifted(y, t)), w, t, 0,
                  what + " contiguous off alignment");
    // In place (masked_fill_ runs where into self) on a transposed view.
    auto self = make(A, {C, R}, t).t();
    self.masked_fill_(cond, hi);
    for (int64_t i = 0; i < R; ++i)
      for (int64_t j = 0; j < C; ++j) want[i * C + j] = cnd[i] ? hi : A[j * R + i];
    expect_values(self, want, t, 0, what + " masked_fill_ on a transposed view");
  }
}

TEST_P(ElementwiseLayouts, ClampTensorBoundsBroadcastAndViews) {
  std::mt19937 rng(12);
  for (Dtype t : {kFloat32, kFloat16, kBFloat16, kFloat64, kInt32, kInt64, kUInt8, kInt16}) {
    const int lo = t == kUInt8 ? 0 : -9, hi = t == kUInt8 ? 18 : 9;
    const std::string what = "clamp " + name_of(t);
    // x = X^T with X [C, R]; lo [C] broadcast over rows; hi = H[:, ::2] with H [R, 2C].
    const Values X = random_ints(C * R, lo, hi, rng), L = random_ints(C, lo, hi, rng),
                 H = random_ints(R * 2 * C, lo, hi, rng);
    auto x = make(X, {C, R}, t).t();
    auto lo_t = make(L, {C}, t);
    auto hi_t = make(H, {R, 2 * C}, t).slice(1, 0, 2 * C, 2);
    Values want(R * C), want_min(R * C), want_max(R * C);
    for (int64_t i = 0; i < R; ++i)
      for (int64_t j = 0; j < C; ++j) {
        const double v = X[j * R + i], l = L[j], h = H[i * 2 * C + 2 * j];
        want[i * C + j] = std::min(std::max(v, l), h);  // lo > hi gives hi, as torch.clamp
        want_min[i * C + j] = std::max(v, l);
        want_max[i * C + j] = std::min(v, h);
      }
    expect_values(clamp(x, lo_t, hi_t), want, t, 0, what + " x transposed, lo broadcast, hi sliced");
    expect_values(clamp_min(x, lo_t), want_min, t, 0, what + "_min x transposed, lo broadcast");
    expect_values(clamp_max(x, hi_t), want_max, t, 0, what + "_max x transposed, hi sliced");
    // In place on a sliced view: the rest of the buffer is untouched.
    auto buf = make(H, {R, 2 * C}, t);
    auto view = buf.slice(1, 1, 2 * C, 2);  // odd columns
    view.clamp_(std::optional<Tensor>(lo_t), std::optional<Tensor>(hi_t));
    Values want_buf = H;
    for (int64_t i = 0; i < R; ++i)
      for (int64_t j = 0; j < C; ++j) {
        double& v = want_buf[i * 2 * C + 2 * j + 1];
        v = std::min(std::max(v, L[j]), H[i * 2 * C + 2 * j]);
      }
    expect_values(buf, want_buf, t, 0, what + "_ in place on odd columns");
    // Contiguous and off alignment.
    const size_t n = 4099;
    const Values a = random_ints(n, lo, hi, rng), b = random_ints(n, lo, hi, rng),
                 c = random_ints(n, lo, hi, rng);
    Values w(n);
    for (size_t i = 0; i < n; ++i) w[i] = std::min(std::max(a[i], b[i]), c[i]);
    const int64_t sn = int64_t(n);
    expect_values(clamp(make(a, {sn}, t), make(b, {sn}, t), make(c, {sn}, t)), w, t, 0, what + " contiguous");
    expect_values(clamp(make_shifted(a, t), make_shifted(b, t), make_shifted(c, t)), w, t, 0,
                  what + " contiguous off alignment");
  }
  // NaN anywhere propagates, on every layout.
  for (Dtype t : {kFloat32, kFloat16, kFloat64}) {
    const Values X = {NAN, 1, 2, 3, 4, 5}, L = {0, NAN, 0}, H = {4, 0, 4, 0, NAN, 0, 4, 0, 4, 0, 4, 0};
    auto x = make(X, {3, 2}, t).t();                  // [2, 3]
    auto lo_t = make(L, {3}, t);                      // broadcast over rows
    auto hi2 = make(H, {2, 6}, t).slice(1, 0, 6, 2);  // [2, 3]: H[:, ::2]
    Values want(6);
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j) {
        const double v = X[j * 2 + i], l = L[j], h = H[i * 6 + 2 * j];
        want[i * 3 + j] = std::isnan(v) || std::isnan(l) || std::isnan(h) ? NAN : std::min(std::max(v, l), h);
      }
    expect_values(clamp(x, lo_t, hi2), want, t, 0, "clamp NaN " + name_of(t));
  }
}

TEST_P(ElementwiseLayouts, PowAndRemainderBroadcastAndViews) {
  std::mt19937 rng(13);
  for (Dtype t : {kFloat32, kFloat64, kInt32, kInt64, kInt16}) {
    const std::string what = name_of(t);
    // x = X^T with X [C, R]; the second operand [R, 1] broadcast over columns.
    const Values X = random_ints(C * R, -5, 5, rng), E = random_ints(R, 0, 3, rng);
    Values D = random_ints(R, -4, 4, rng);
    for (auto& d : D)
      if (d == 0) d = 3;
    auto x = make(X, {C, R}, t).t();
    auto e = make(E, {R, 1}, t);
    auto d = make(D, {R, 1}, t).expand({R, C});
    Values want_pow(R * C), want_rem(R * C);
    for (int64_t i = 0; i < R; ++i)
      for (int64_t j = 0; j < C; ++j) {
        const double v = X[j * R + i];
        want_pow[i * C + j] = std::pow(v, E[i]);
        double r = std::fmod(v, D[i]);
        if (r != 0 && ((D[i] < 0) != (r < 0))) r += D[i];  // the divisor's sign, as Python
        want_rem[i * C + j] = r;
      }
    const double tol = is_floating_point(t) ? 1e-6 : 0;
    expect_values(pow(x, e), want_pow, t, tol, "pow x transposed, e broadcast " + what);
    expect_values(remainder(x, d), want_rem, t, tol, "remainder x transposed, d expanded " + what);
    // A sliced base against a 0-d exponent tensor.
    auto xs = make(X, {R, C}, t).slice(1, 0, C, 3);  // columns 0, 3, 6
    auto e0 = make({2}, {}, t);
    Values want_s;
    for (int64_t i = 0; i < R; ++i)
      for (int64_t j = 0; j < C; j += 3) want_s.push_back(X[i * C + j] * X[i * C + j]);
    expect_values(pow(xs, e0), want_s, t, tol, "pow sliced, 0-d exponent " + what);
  }
}

// bool arithmetic runs in bool (core/op_math.h) on every backend: True + True is True, and
// alpha is cast to bool first, so add(True, True, alpha=-1) is True as in PyTorch.
static_assert(std::is_same_v<detail::opmath_t<bool>, bool>);
static_assert(std::is_same_v<detail::opmath_t<Half>, float>);
static_assert(std::is_same_v<detail::opmath_t<BFloat16>, float>);
static_assert(std::is_same_v<detail::opmath_t<int8_t>, int8_t>);

TEST_P(ElementwiseLayouts, BoolArithmeticStaysBool) {
  const Values A = {1, 1, 0, 0}, B = {1, 0, 1, 0};
  auto a = make(A, {4}, kBool), b = make(B, {4}, kBool);
  expect_values(a + b, {1, 1, 1, 0}, kBool, 0, "True + True");
  expect_values(a * b, {1, 0, 0, 0}, kBool, 0, "bool mul");
  expect_values(add(a, b, -1), {1, 1, 1, 0}, kBool, 0, "add alpha -1");
  expect_values(add(a, b, 2), {1, 1, 1, 0}, kBool, 0, "add alpha 2");
  expect_values(add(a, Scalar(true), -1), {1, 1, 1, 1}, kBool, 0, "add bool scalar alpha -1");
  expect_values(a * Scalar(true), {1, 1, 0, 0}, kBool, 0, "mul bool scalar");
  // Broadcast and transposed: [2, 1] + [2, 2]^T.
  auto col = make({1, 0}, {2, 1}, kBool), sq = make({1, 1, 0, 1}, {2, 2}, kBool).t();
  expect_values(add(col, sq, -1), {1, 1, 1, 1}, kBool, 0, "add alpha -1 broadcast, transposed");
  expect_values(col * sq, {1, 0, 0, 0}, kBool, 0, "mul broadcast, transposed");
  auto c = a.clone();
  c.add_(b, -1);
  expect_values(c, {1, 1, 1, 0}, kBool, 0, "add_ alpha -1");
}

// The same bool ops give the same values on the CPU and on CUDA.
TEST(ElementwiseLayoutsCrossDevice, BoolArithmeticMatchesCpu) {
  if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  std::mt19937 rng(14);
  const Values A = random_ints(4099, 0, 1, rng), B = random_ints(4099, 0, 1, rng);
  auto a = from_blob(const_cast<double*>(A.data()), {4099}, kFloat64).to(kBool);
  auto b = from_blob(const_cast<double*>(B.data()), {4099}, kFloat64).to(kBool);
  auto ga = a.to("cuda"), gb = b.to("cuda");
  // Integral alphas: a floating alpha is an error for bool and integer tensors, as in PyTorch.
  for (int64_t alpha : {1, -1, 2}) {
    EXPECT_EQ(values(add(ga, gb, alpha)), values(add(a, b, alpha))) << "alpha " << alpha;
  }
  EXPECT_EQ(values(ga * gb), values(a * b));
}

INSTANTIATE_TEST_SUITE_P(Devices, ElementwiseLayouts, ::testing::Values("cpu", "cuda"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace wick
