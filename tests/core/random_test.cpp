// Random numbers: Philox-4x32-10 against the published known answers, the counter layout
// against values rebuilt here from the raw generator, libm-based references for the
// log/sin/cos polynomials and Box-Muller, statistics with loose bounds, and the semantics
// (seeding, offsets, sizes, views, dtypes, options, errors).
#include "wick/random.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/generator.h"
#include "core/kernel_table.h"
#include "core/philox.h"
#include "wick/autograd.h"
#include "wick/cuda.h"
#include "wick/ops.h"

namespace {

using namespace wick;
namespace px = wick::detail::philox;

px::Block block(uint32_t a, uint32_t b, uint32_t c, uint32_t d) { return px::Block{{a, b, c, d}}; }

void expect_block(const px::Block& got, const px::Block& want) {
  for (int i = 0; i < 4; ++i) EXPECT_EQ(got.v[i], want.v[i]) << "word " << i;
}

// Random123's kat_vectors, "philox4x32 R" lines: counter (4 words), key (2 words) -> output.
TEST(Philox, KnownAnswers10Rounds) {
  expect_block(px::philox4x32<10>(block(0, 0, 0, 0), 0, 0),
               block(0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8));
  expect_block(px::philox4x32<10>(block(~0u, ~0u, ~0u, ~0u), ~0u, ~0u),
               block(0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd));
  // The digits of pi.
  expect_block(
      px::philox4x32<10>(block(0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), 0xa4093822, 0x299f31d0),
      block(0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1));
}

TEST(Philox, KnownAnswers7Rounds) {
  expect_block(px::philox4x32<7>(block(0, 0, 0, 0), 0, 0),
               block(0x5f6fb709, 0x0d893f64, 0x4f121f81, 0x4f730a48));
  expect_block(px::philox4x32<7>(block(~0u, ~0u, ~0u, ~0u), ~0u, ~0u),
               block(0x5207ddc2, 0x45165e59, 0x4d8ee751, 0x8c52f662));
  expect_block(
      px::philox4x32<7>(block(0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), 0xa4093822, 0x299f31d0),
      block(0x4dfccaba, 0x190a87f0, 0xc47362ba, 0xb6b5242a));
}

// The counter of block b is offset + b over two words (carrying), the key the seed.
TEST(Philox, DrawBlockLayout) {
  const uint64_t seed = 0x0123456789abcdefull, offset = 0xfffffffeull;
  expect_block(px::draw_block(seed, offset, 3),
               px::philox4x32<10>(block(1, 1, 0, 0), 0x89abcdef, 0x01234567));
}

TEST(Philox, LogMatchesLibm) {
  double worst = 0;
  for (int i = 1; i <= 200000; ++i) {
    double u = double(i) / 200001.0;
    if (i % 2) u = std::ldexp(u, -(i % 60));
    const double want = std::log(u);
    worst = std::max(worst, std::fabs(px::log_unit(u) - want) / std::fabs(want));
  }
  EXPECT_LT(worst, 4e-16);  // a few ulp
  EXPECT_EQ(px::log_unit(1.0), 0.0);
  EXPECT_DOUBLE_EQ(px::log_unit(0x1p-53), -53 * std::log(2.0));
}

TEST(Philox, CosSinMatchLibm) {
  const long double two_pi = 6.283185307179586476925286766559005768L;
  double worst = 0;
  for (int i = 0; i < 200000; ++i) {
    const double t = double(i) / 200000.0 + 0x1p-40;
    double c, s;
    px::cos_sin_2pi(t, c, s);
    worst = std::max(
        {worst, std::fabs(c - double(std::cos(two_pi * t))), std::fabs(s - double(std::sin(two_pi * t)))});
  }
  EXPECT_LT(worst, 5e-16);
}

// ---- the values of each op, rebuilt from the raw generator

TEST(Random, UniformFloat32Layout) {
  manual_seed(1234);
  const auto st = detail::get_state(Device(kCPU));
  auto v = rand({4099}).to_vector<float>();  // not a multiple of 4
  for (size_t i = 0; i < v.size(); ++i) {
    const px::Block r = px::draw_block(st.seed, st.offset, i / 4);
    ASSERT_EQ(v[i], float(double(r.v[i % 4] >> 8) * 0x1p-24)) << i;
  }
}

TEST(Random, UniformFloat64Layout) {
  manual_seed(99);
  auto v = rand({1001}, kFloat64).to_vector<double>();
  for (size_t i = 0; i < v.size(); ++i) {
    const px::Block r = px::draw_block(99, 0, i / 2);
    const uint64_t x = uint64_t(r.v[2 * (i % 2) + 1]) << 32 | r.v[2 * (i % 2)];
    ASSERT_EQ(v[i], double(x >> 11) * 0x1p-53) << i;
  }
}

// Box-Muller from the same words with libm: agrees to rounding.
TEST(Random, NormalMatchesLibmBoxMuller) {
  manual_seed(7);
  auto v = randn({2001}, kFloat64).to_vector<double>();
  for (size_t i = 0; i < v.size(); ++i) {
    const px::Block r = px::draw_block(7, 0, i / 2);
    const double u1 = double((uint64_t(r.v[1]) << 32 | r.v[0]) >> 11) * 0x1p-53 + 0x1p-53;
    const double u2 = double((uint64_t(r.v[3]) << 32 | r.v[2]) >> 11) * 0x1p-53;
    const double rad = std::sqrt(-2 * std::log(u1)), ang = 6.283185307179586 * u2;
    const double want = i % 2 ? rad * std::sin(ang) : rad * std::cos(ang);
    ASSERT_NEAR(v[i], want, 1e-14 * std::max(1.0, rad)) << i;
  }
}

// Normals are computed in double and rounded once: every float dtype is the float64 draw rounded.
TEST(Random, NormalDtypesAreTheDoubleDrawRounded) {
  manual_seed(11);
  auto d = randn({999}, kFloat64).to_vector<double>();
  for (Dtype t : {kFloat32, kFloat16, kBFloat16}) {
    manual_seed(11);
    auto v = randn({999}, t).to_vector<float>();
    for (size_t i = 0; i < v.size(); ++i) {
      const float want = t == kFloat32   ? float(d[i])
                         : t == kFloat16 ? float(Half(float(d[i])))
                                         : float(BFloat16(float(d[i])));
      ASSERT_EQ(v[i], want) << t << " " << i;
    }
  }
}

TEST(Random, RandIntLayout) {
  manual_seed(5);
  const int64_t low = -1000, high = 123456789;
  auto v = randint(low, high, {777}).to_vector<int64_t>();
  for (size_t i = 0; i < v.size(); ++i) {
    const px::Block r = px::draw_block(5, 0, i / 2);
    const uint64_t x = uint64_t(r.v[2 * (i % 2) + 1]) << 32 | r.v[2 * (i % 2)];
    __extension__ using U128 = unsigned __int128;
    const int64_t want = low + int64_t((U128(x) * uint64_t(high - low)) >> 64);
    ASSERT_EQ(v[i], want) << i;
  }
}

// A draw large enough to run on several threads equals the block-by-block reference.
TEST(Random, ParallelDrawEqualsSerialReference) {
  manual_seed(2024);
  const int64_t n = 1 << 20;
  Tensor t = empty({n}).uniform_(-3.0, 5.0);
  const float* p = t.data_ptr<float>();
  float ref[4];
  for (int64_t b = 0; b < n / 4; ++b) {
    px::uniform_block(px::draw_block(2024, 0, uint64_t(b)), ref, 4, -3.0, 5.0);
    for (int j = 0; j < 4; ++j) ASSERT_EQ(p[4 * b + j], ref[j]) << 4 * b + j;
  }
}

// ---- seeding and offsets

TEST(Random, SameSeedSameNumbersDifferentSeedsDiffer) {
  manual_seed(42);
  auto a = randn({64}).to_vector<float>();
  manual_seed(42);
  auto b = randn({64}).to_vector<float>();
  EXPECT_EQ(a, b);
  manual_seed(43);
  auto c = randn({64}).to_vector<float>();
  int equal = 0;
  for (size_t i = 0; i < a.size(); ++i) equal += a[i] == c[i];
  EXPECT_LT(equal, 2);
  // Consecutive draws continue the stream instead of repeating it.
  manual_seed(42);
  (void)randn({64});
  auto d = randn({64}).to_vector<float>();
  EXPECT_NE(a, d);
}

TEST(Random, ElementDependsOnlyOnIndex) {
  for (Dtype t : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    manual_seed(3);
    auto small = rand({10}, t).to_vector<double>();
    manual_seed(3);
    auto big = rand({1000}, t).to_vector<double>();
    for (size_t i = 0; i < small.size(); ++i) EXPECT_EQ(small[i], big[i]) << t << " " << i;
    manual_seed(3);
    auto ns = randn({7}, t).to_vector<double>();
    manual_seed(3);
    auto nb = randn({2, 500}, t).to_vector<double>();
    for (size_t i = 0; i < ns.size(); ++i) EXPECT_EQ(ns[i], nb[i]) << t << " " << i;
  }
  manual_seed(3);
  auto is = randint(0, 1000, {3}).to_vector<int64_t>();
  manual_seed(3);
  auto ib = randint(0, 1000, {300}).to_vector<int64_t>();
  for (size_t i = 0; i < is.size(); ++i) EXPECT_EQ(is[i], ib[i]);
}

TEST(Random, OffsetAdvancesByTheCountersUsed) {
  manual_seed(8);
  const Device cpu(kCPU);
  (void)rand({10});  // 3 blocks of 4
  EXPECT_EQ(detail::get_state(cpu).offset, 3u);
  (void)rand({10}, kFloat64);  // 5 blocks of 2
  EXPECT_EQ(detail::get_state(cpu).offset, 8u);
  (void)randn({3});  // 2 pairs
  EXPECT_EQ(detail::get_state(cpu).offset, 10u);
  (void)randint(5, {0});  // nothing
  EXPECT_EQ(detail::get_state(cpu).offset, 10u);
  EXPECT_EQ(detail::get_state(cpu).seed, 8u);
  // The second draw is the continuation of the stream: the same as one draw of both.
  manual_seed(8);
  auto ab = rand({8}).to_vector<float>();
  manual_seed(8);
  auto a = rand({4}).to_vector<float>();
  auto b = rand({4}).to_vector<float>();
  a.insert(a.end(), b.begin(), b.end());
  EXPECT_EQ(a, ab);
}

TEST(Random, ManualSeedSeedsEveryDevice) {
  detail::set_state(Device(kCUDA, 2), {1, 77});
  manual_seed(31);
  for (Device d : {Device(kCPU), Device(kCUDA, 0), Device(kCUDA, 2), Device(kCUDA, 7)}) {
    EXPECT_EQ(detail::get_state(d).seed, 31u) << d;
    EXPECT_EQ(detail::get_state(d).offset, 0u) << d;
  }
  detail::seed_all_cuda(5);  // leaves the CPU alone
  EXPECT_EQ(detail::get_state(Device(kCPU)).seed, 31u);
  EXPECT_EQ(detail::get_state(Device(kCUDA, 3)).seed, 5u);
  detail::seed_device(Device(kCUDA, 1), 9);
  EXPECT_EQ(detail::get_state(Device(kCUDA, 1)).seed, 9u);
  EXPECT_EQ(detail::get_state(Device(kCUDA, 0)).seed, 5u);
}

TEST(Random, ConcurrentDrawsNeverShareCounters) {
  manual_seed(17);
  const int threads = 8, draws = 50;
  std::vector<std::vector<uint64_t>> starts(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int i = 0; i < draws; ++i)
        starts[size_t(t)].push_back(detail::next_offset(Device(kCPU), 250).offset);
      (void)rand({1000});
    });
  for (auto& th : pool) th.join();
  std::set<uint64_t> all;
  for (auto& s : starts) all.insert(s.begin(), s.end());
  EXPECT_EQ(all.size(), size_t(threads * draws));
  EXPECT_EQ(detail::get_state(Device(kCPU)).offset, uint64_t(threads * draws * 250 + threads * 250));
}

// ---- statistics (loose bounds: each fails with probability far below 1e-6)

double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / double(v.size());
}
double var_of(const std::vector<double>& v, double m) {
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return s / double(v.size() - 1);
}
// Kolmogorov-Smirnov distance between the sample and a CDF.
template <class F>
double ks(std::vector<double> v, F cdf) {
  std::sort(v.begin(), v.end());
  const double n = double(v.size());
  double d = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    const double f = cdf(v[i]);
    d = std::max({d, double(i + 1) / n - f, f - double(i) / n});
  }
  return d;
}

TEST(RandomStats, UniformMomentsHistogramKs) {
  manual_seed(1);
  auto v = rand({1000000}).to_vector<double>();
  EXPECT_GE(*std::min_element(v.begin(), v.end()), 0.0);
  EXPECT_LT(*std::max_element(v.begin(), v.end()), 1.0);
  const double m = mean_of(v);
  EXPECT_NEAR(m, 0.5, 0.002);  // sd of the mean 2.9e-4
  EXPECT_NEAR(var_of(v, m), 1.0 / 12, 0.001);
  std::vector<double> hist(100, 0);
  for (double x : v) hist[size_t(x * 100)] += 1;
  double chi2 = 0;
  for (double h : hist) chi2 += (h - 10000) * (h - 10000) / 10000;
  EXPECT_LT(chi2, 200);                                 // 99 degrees of freedom: mean 99, sd 14
  EXPECT_LT(ks(v, [](double x) { return x; }), 0.003);  // 1% critical value 0.0016
}

TEST(RandomStats, NormalMomentsTailsKs) {
  manual_seed(2);
  auto v = randn({1000000}).to_vector<double>();
  const double m = mean_of(v), var = var_of(v, m);
  EXPECT_NEAR(m, 0.0, 0.006);
  EXPECT_NEAR(var, 1.0, 0.008);
  double third = 0, fourth = 0;
  int64_t beyond3 = 0;
  for (double x : v) {
    third += x * x * x;
    fourth += x * x * x * x;
    beyond3 += std::fabs(x) > 3;
  }
  EXPECT_NEAR(third / 1e6, 0.0, 0.03);
  EXPECT_NEAR(fourth / 1e6, 3.0, 0.06);
  EXPECT_NEAR(double(beyond3), 2699.8, 350);  // P(|z| > 3) = 0.0026998
  EXPECT_LT(ks(v, [](double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }), 0.003);
}

TEST(RandomStats, NormalAndUniformWithParameters) {
  manual_seed(3);
  auto n = empty({200000}, kFloat64).normal_(5.0, 0.5).to_vector<double>();
  const double m = mean_of(n);
  EXPECT_NEAR(m, 5.0, 0.006);
  EXPECT_NEAR(std::sqrt(var_of(n, m)), 0.5, 0.006);
  auto u = empty({200000}, kFloat64).uniform_(-2.0, 6.0).to_vector<double>();
  EXPECT_GE(*std::min_element(u.begin(), u.end()), -2.0);
  EXPECT_LT(*std::max_element(u.begin(), u.end()), 6.0);
  EXPECT_NEAR(mean_of(u), 2.0, 0.03);
  EXPECT_LT(ks(u, [](double x) { return (x + 2) / 8; }), 0.007);
  // std = 0 gives the mean exactly.
  auto c = empty({5}).normal_(1.25, 0.0).to_vector<float>();
  for (float x : c) EXPECT_EQ(x, 1.25f);
}

TEST(RandomStats, RandIntRangeCoverageUniformity) {
  manual_seed(4);
  auto v = randint(-3, 7, {100000}).to_vector<int64_t>();
  std::vector<double> count(10, 0);
  for (int64_t x : v) {
    ASSERT_GE(x, -3);
    ASSERT_LT(x, 7);
    count[size_t(x + 3)] += 1;
  }
  double chi2 = 0;
  for (double c : count) chi2 += (c - 10000) * (c - 10000) / 10000;
  EXPECT_LT(chi2, 50);  // 9 degrees of freedom
  // Wide ranges use all 64 bits: values reach the top half of [0, 2^40).
  auto w = randint(int64_t(1) << 40, {1000}).to_vector<int64_t>();
  EXPECT_GT(*std::max_element(w.begin(), w.end()), int64_t(1) << 39);
  EXPECT_LT(*std::max_element(w.begin(), w.end()), int64_t(1) << 40);
  EXPECT_GE(*std::min_element(w.begin(), w.end()), 0);
  // randint(high) is [0, high).
  auto h = randint(3, {3000}).to_vector<int64_t>();
  EXPECT_EQ(std::set<int64_t>(h.begin(), h.end()), (std::set<int64_t>{0, 1, 2}));
}

// ---- dtypes

TEST(Random, ReducedPrecisionUniformUsesTheDtypesDigits) {
  for (auto [t, digits] : {std::pair{kFloat16, 11}, std::pair{kBFloat16, 8}}) {
    manual_seed(6);
    auto v = rand({20000}, t).to_vector<double>();
    std::set<double> distinct;
    for (double x : v) {
      ASSERT_GE(x, 0.0);
      ASSERT_LT(x, 1.0);
      const double k = std::ldexp(x, digits);
      ASSERT_EQ(k, std::floor(k)) << t << " " << x;  // a multiple of 2^-digits
      distinct.insert(x);
    }
    EXPECT_GT(distinct.size(), size_t(1) << (digits - 1)) << t;
    EXPECT_NEAR(mean_of(v), 0.5, 0.02) << t;
  }
}

// Where from + u * (to - from) rounds up to `to`, the value is kept below it.
TEST(Random, UniformNeverReachesTo) {
  manual_seed(10);
  auto d = empty({100000}, kFloat64).uniform_(1.0, 2.0).to_vector<double>();
  EXPECT_LT(*std::max_element(d.begin(), d.end()), 2.0);
  EXPECT_GE(*std::min_element(d.begin(), d.end()), 1.0);
  // [1e16, 1e16 + 2) holds one double; about half the draws round up to 1e16 + 2.
  for (double x : empty({1000}, kFloat64).uniform_(1e16, 1e16 + 2).to_vector<double>()) ASSERT_EQ(x, 1e16);
  for (Dtype t : {kFloat16, kBFloat16, kFloat32}) {
    auto v = empty({100000}, t).uniform_(100.0, 100.5).to_vector<double>();
    EXPECT_LT(*std::max_element(v.begin(), v.end()), 100.5) << t;
    EXPECT_GE(*std::min_element(v.begin(), v.end()), 100.0) << t;
  }
  // from == to fills from.
  for (float x : empty({9}).uniform_(3.0, 3.0).to_vector<float>()) EXPECT_EQ(x, 3.0f);
}

TEST(Random, RandIntDtypes) {
  manual_seed(12);
  auto b = randint(0, 2, {1000}, kBool).to_vector<uint8_t>();
  EXPECT_EQ(std::set<uint8_t>(b.begin(), b.end()), (std::set<uint8_t>{0, 1}));
  auto u8 = randint(250, 256, {1000}, kUInt8).to_vector<int64_t>();
  EXPECT_EQ(std::set<int64_t>(u8.begin(), u8.end()), (std::set<int64_t>{250, 251, 252, 253, 254, 255}));
  auto i8 = randint(-128, -126, {1000}, kInt8).to_vector<int64_t>();
  EXPECT_EQ(std::set<int64_t>(i8.begin(), i8.end()), (std::set<int64_t>{-128, -127}));
  // Integer dtypes see the same integers as int64.
  manual_seed(12);
  auto ref = randint(-50, 50, {500}).to_vector<int64_t>();
  for (Dtype t : {kInt32, kInt16, kInt8, kFloat32, kFloat64, kFloat16}) {
    manual_seed(12);
    Tensor x = randint(-50, 50, {500}, t);
    EXPECT_EQ(x.dtype(), t);
    EXPECT_EQ(x.to_vector<int64_t>(), ref) << t;
  }
}

// ---- layouts, options, errors

TEST(Random, InPlaceOnNonContiguousViews) {
  manual_seed(21);
  auto want = empty({6, 4}).normal_(2.0, 3.0).to_vector<float>();
  manual_seed(21);
  Tensor base = empty({4, 6});
  Tensor view = base.t();  // 6 x 4, not contiguous
  ASSERT_FALSE(view.is_contiguous());
  view.normal_(2.0, 3.0);
  EXPECT_EQ(view.contiguous().to_vector<float>(), want);  // element i in row-major order of the view

  // A strided slice: only its elements change.
  Tensor z = zeros({4, 8}, kFloat64);
  const auto v0 = z._version();
  z.slice(1, 0, 8, 2).uniform_(5.0, 6.0);
  EXPECT_GT(z._version(), v0);
  auto a = z.accessor<double, 2>();
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 8; ++j) {
      if (j % 2) EXPECT_EQ(a[i][j], 0.0);
      else EXPECT_TRUE(a[i][j] >= 5.0 && a[i][j] < 6.0) << a[i][j];
    }
}

TEST(Random, FactoriesHonourOptions) {
  Tensor a = rand({2, 3});
  EXPECT_EQ(a.dtype(), kFloat32);
  EXPECT_EQ(a.sizes().vec(), (std::vector<int64_t>{2, 3}));
  EXPECT_TRUE(a.is_cpu());
  EXPECT_FALSE(a.impl()->requires_grad());
  Tensor b = randn({4}, TensorOptions(kFloat64).requires_grad(true));
  EXPECT_EQ(b.dtype(), kFloat64);
  EXPECT_TRUE(b.impl()->requires_grad());
  EXPECT_EQ(randint(5, {3}).dtype(), kInt64);
  EXPECT_EQ(randint(0, 5, {3}, kInt32).dtype(), kInt32);
  Tensor h = empty({3, 1}, kFloat16);
  EXPECT_EQ(rand_like(h).dtype(), kFloat16);
  EXPECT_EQ(randn_like(h).sizes().vec(), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(rand_like(h, kFloat64).dtype(), kFloat64);
  Tensor i = empty({5}, kInt16);
  Tensor ri = randint_like(i, 4);
  EXPECT_EQ(ri.dtype(), kInt16);
  for (int64_t x : ri.to_vector<int64_t>()) EXPECT_TRUE(x >= 0 && x < 4);
  for (int64_t x : randint_like(i, -4, -1).to_vector<int64_t>()) EXPECT_TRUE(x >= -4 && x < -1);
  set_default_dtype(kFloat64);
  EXPECT_EQ(rand({1}).dtype(), kFloat64);
  set_default_dtype(kFloat32);
  EXPECT_EQ(rand({0}).numel(), 0);
}

template <class E, class F>
void expect_error(F f, const std::string& prefix) {
  try {
    f();
    ADD_FAILURE() << "no exception, expected " << prefix;
  } catch (const E& e) {
    EXPECT_EQ(std::string(e.what()).rfind(prefix, 0), 0u) << e.what();
  }
}

TEST(Random, Errors) {
  manual_seed(77);
  const auto before = detail::get_state(Device(kCPU));
  expect_error<TypeError>([] { (void)rand({2}, kInt64); }, "[rand] ");
  expect_error<TypeError>([] { (void)randn({2}, kInt32); }, "[randn] ");
  expect_error<TypeError>([] { (void)rand({2}, kBool); }, "[rand] ");
  expect_error<TypeError>([] { empty({2}, kInt64).normal_(); }, "[normal_] ");
  expect_error<TypeError>([] { empty({2}, kUInt8).uniform_(); }, "[uniform_] ");
  expect_error<ValueError>([] { empty({2}).normal_(0.0, -1.0); }, "[normal_] normal expects std >= 0.0");
  expect_error<ValueError>([] { empty({2}).normal_(0.0, NAN); }, "[normal_] ");
  expect_error<ValueError>([] { empty({2}).uniform_(2.0, 1.0); }, "[uniform_] ");
  expect_error<ValueError>([] { empty({2}).uniform_(0.0, INFINITY); }, "[uniform_] ");
  expect_error<ValueError>([] { empty({2}, kFloat16).uniform_(0.0, 1e6); }, "[uniform_] ");
  expect_error<ValueError>([] { (void)randint(5, 3, {2}); },
                           "[randint] random_ expects 'from' to be less than 'to'");
  expect_error<ValueError>([] { (void)randint(5, 5, {2}); }, "[randint] ");
  expect_error<ValueError>([] { (void)randint(0, 300, {2}, kUInt8); },
                           "[randint] to - 1 is out of bounds for uint8");
  expect_error<ValueError>([] { (void)randint(-1, 3, {2}, kUInt8); },
                           "[randint] from is out of bounds for uint8");
  expect_error<ValueError>([] { (void)randint(0, 3, {2}, kBool); }, "[randint] ");
  expect_error<TypeError>([] { (void)randint(0, 3, {2}, TensorOptions(kInt64).requires_grad(true)); },
                          "[randint] ");
  // A failed op draws nothing.
  EXPECT_EQ(detail::get_state(Device(kCPU)).offset, before.offset);
  Tensor x = zeros({3});
  try {
    x.uniform_(1.0, 0.0);
  } catch (const ValueError&) {}
  EXPECT_EQ(x.to_vector<float>(), std::vector<float>(3, 0.0f));
}

// ---- CUDA: the same seed gives the same numbers as on the CPU

TEST(RandomCuda, SameNumbersAsCpu) {
  if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  if (!detail::cuda_kernels().random) GTEST_SKIP() << "no CUDA random kernel in this build";
  for (Dtype t : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    manual_seed(7);
    auto cpu_u = rand({1000}, t).to_vector<double>();
    auto cpu_n = randn({1001}, t).to_vector<double>();
    auto cpu_p = empty({333}, t).uniform_(-1.5, 2.5).to_vector<double>();
    manual_seed(7);
    auto gpu_u = rand({1000}, TensorOptions(t).device(Device("cuda"))).cpu().to_vector<double>();
    auto gpu_n = randn({1001}, TensorOptions(t).device(Device("cuda"))).cpu().to_vector<double>();
    auto gpu_p =
        empty({333}, TensorOptions(t).device(Device("cuda"))).uniform_(-1.5, 2.5).cpu().to_vector<double>();
    EXPECT_EQ(cpu_u, gpu_u) << t;
    EXPECT_EQ(cpu_n, gpu_n) << t;
    EXPECT_EQ(cpu_p, gpu_p) << t;
  }
  manual_seed(7);
  auto ci = randint(-9, 1 << 30, {501}).to_vector<int64_t>();
  manual_seed(7);
  auto gi = randint(-9, 1 << 30, {501}, Device("cuda")).cpu().to_vector<int64_t>();
  EXPECT_EQ(ci, gi);
}


// ---- normal's tensor forms: mean + std * randn of the broadcast shape, on every device

std::vector<Device> random_devices() {
  std::vector<Device> d{Device(kCPU)};
  if (cuda::is_available() && detail::cuda_kernels().random) d.push_back(Device("cuda"));
  return d;
}

TEST(RandomNormalTensors, TheDrawOfRandnScaledAndShifted) {
  for (Device d : random_devices()) {
    Tensor mean = tensor({3.0, -2.0}).view({2, 1}).to(d, kFloat32);
    Tensor std = tensor({0.5, 2.0, 1.0}).to(d, kFloat32);
    manual_seed(11);
    Tensor x = normal(mean, std);
    EXPECT_EQ(x.sizes().vec(), (std::vector<int64_t>{2, 3})) << d.str();
    EXPECT_EQ(x.dtype(), kFloat32);
    EXPECT_EQ(x.device(), d);
    manual_seed(11);
    Tensor want = randn({2, 3}, TensorOptions(kFloat32).device(d)) * std + mean;
    EXPECT_TRUE(x.equal(want)) << d.str();
    // the scalar forms: mean's (std's) shape
    manual_seed(11);
    Tensor y = normal(mean, 2.0);
    manual_seed(11);
    EXPECT_TRUE(y.equal(randn({2, 1}, TensorOptions(kFloat32).device(d)) * 2.0 + mean)) << d.str();
    manual_seed(11);
    Tensor z = normal(1.5, std.to(kFloat64));
    EXPECT_EQ(z.dtype(), kFloat64);
    manual_seed(11);
    EXPECT_TRUE(z.equal(randn({3}, TensorOptions(kFloat64).device(d)) * std.to(kFloat64) + 1.5)) << d.str();
  }
}

TEST(RandomNormalTensors, Statistics) {
  for (Device d : random_devices()) {
    manual_seed(3);
    Tensor mean = tensor({3.0, -2.0}).view({2, 1}).to(d, kFloat64);
    Tensor std = tensor({0.5, 2.0}).view({2, 1}).to(d, kFloat64);
    Tensor x = normal(mean.expand({2, 200000}), std);
    std::vector<double> m = x.mean({1}).cpu().to_vector<double>(), s = x.std({1}).cpu().to_vector<double>();
    EXPECT_NEAR(m[0], 3.0, 0.01) << d.str();
    EXPECT_NEAR(m[1], -2.0, 0.03) << d.str();
    EXPECT_NEAR(s[0], 0.5, 0.005) << d.str();
    EXPECT_NEAR(s[1], 2.0, 0.02) << d.str();
  }
}

TEST(RandomNormalTensors, ZeroGradientsAsPyTorchDefinesThem) {
  for (Device d : random_devices()) {
    Tensor mean = zeros({4}, TensorOptions(kFloat32).device(d)).requires_grad_();
    Tensor std = ones({2, 1}, TensorOptions(kFloat32).device(d)).requires_grad_();
    Tensor x = normal(mean, std);
    ASSERT_TRUE(x.grad_fn());
    EXPECT_EQ(x.grad_fn()->name(), "NormalBackward3");
    x.sum().backward();
    EXPECT_EQ(mean.grad().sizes().vec(), (std::vector<int64_t>{4}));
    EXPECT_EQ(std.grad().sizes().vec(), (std::vector<int64_t>{2, 1}));
    EXPECT_EQ(mean.grad().abs().sum().item<double>(), 0.0);
    EXPECT_EQ(std.grad().abs().sum().item<double>(), 0.0);
    EXPECT_EQ(normal(mean, 1.0).grad_fn()->name(), "NormalBackward1");
    EXPECT_EQ(normal(0.0, std).grad_fn()->name(), "NormalBackward2");
    EXPECT_FALSE(normal(mean.detach(), std.detach()).requires_grad());
  }
}

TEST(RandomNormalTensors, BadInputRaises) {
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  Tensor mean = zeros({3});
  EXPECT_EQ(message([&] { normal(mean, tensor({1.0f, -1.0f, 1.0f})); }),
            "[normal] normal expects all elements of std >= 0.0");
  EXPECT_EQ(message([&] { normal(mean, -1.0); }), "[normal] normal expects std >= 0.0, but found std -1");
  EXPECT_EQ(message([&] { normal(mean, ones({2})); }).rfind("[normal] ", 0), 0u);
  EXPECT_EQ(message([&] { normal(zeros({3}, kInt64), 1.0); }).rfind("[normal] expected a floating point mean", 0),
            0u);
  EXPECT_THROW(normal(Tensor(), ones({2})), Error);
}

}  // namespace
