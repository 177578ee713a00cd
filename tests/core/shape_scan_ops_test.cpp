// tril/triu, cumsum/cumprod, logsumexp, var_mean/std_mean, norm("fro"), repeat,
// repeat_interleave, outer, lerp, baddbmm, matmul's batch broadcasting, einsum and
// nn::functional::pad: values against float64 references computed with plain loops (or hand
// values), every dtype the op takes, non-contiguous inputs, the errors PyTorch raises, and the
// CUDA results against the CPU's (skipped without a GPU).
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "op_reference.h"
#include "wick/nn/functional.h"
#include "wick/wick.h"

using namespace wick;
using namespace wick::test;
namespace F = wick::nn::functional;

namespace {

std::vector<double> values(const Tensor& t) { return t.cpu().to_vector<double>(); }

Tensor f64(std::vector<double> v, const Shape& s) { return from_blob(v.data(), s, kFloat64).clone(); }

// The index (row-major) of each element of a tensor of sizes s.
Shape unravel(int64_t i, const Shape& s) {
  Shape idx(s.size());
  for (size_t d = s.size(); d-- > 0;) {
    idx[d] = i % s[d];
    i /= s[d];
  }
  return idx;
}

int64_t ravel(const Shape& idx, const Shape& s) {
  int64_t off = 0;
  for (size_t d = 0; d < s.size(); ++d) off = off * s[d] + idx[d];
  return off;
}

// ---- tril / triu

Host triangle_ref(const Host& h, int64_t diagonal, bool lower) {
  Host out = h;
  const size_t nd = h.sizes.size();
  for (size_t i = 0; i < h.v.size(); ++i) {
    Shape idx = unravel(int64_t(i), h.sizes);
    const int64_t off = idx[nd - 1] - idx[nd - 2];
    if (lower ? off > diagonal : off < diagonal) out.v[i] = 0;
  }
  return out;
}

TEST(ShapeScanOps, TrilTriuEveryDtypeAndLayout) {
  std::mt19937 rng(1);
  for (Dtype dt : kAllDtypes)
    for (Layout l : {Layout::Contiguous, Layout::Transposed, Layout::Sliced})
      for (int64_t diag : {-2, -1, 0, 1, 3}) {
        Host h = random_host({2, 3, 4, 5}, dt, Domain::NonZero, rng);
        Tensor t = with_layout(h, dt, Device(kCPU), l);
        const std::string what = std::string(layout_name(l)) + " diag " + std::to_string(diag);
        expect_matches(tril(t, diag), triangle_ref(h, diag, true), dt, "tril " + what);
        expect_matches(triu(t, diag), triangle_ref(h, diag, false), dt, "triu " + what);
        expect_matches(t.tril(diag), triangle_ref(h, diag, true), dt, "t.tril " + what);
        expect_matches(t.triu(diag), triangle_ref(h, diag, false), dt, "t.triu " + what);
        Tensor a = t.clone(), b = t.clone();
        a.tril_(diag);
        b.triu_(diag);
        expect_matches(a, triangle_ref(h, diag, true), dt, "tril_ " + what);
        expect_matches(b, triangle_ref(h, diag, false), dt, "triu_ " + what);
      }
}

TEST(ShapeScanOps, TrilKeepsNanAboveNothingAndRejectsVectors) {
  // The zeroed part is zero even where the input is nan (a mask, not a product).
  Tensor t = full({3, 3}, std::nan(""), kFloat32);
  std::vector<double> v = values(tril(t));
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 3; ++j) {
      if (j > i) EXPECT_EQ(v[size_t(i * 3 + j)], 0);
      else EXPECT_TRUE(std::isnan(v[size_t(i * 3 + j)]));
    }
  // Non-square and empty matrices.
  EXPECT_EQ(values(triu(ones({2, 4}, kInt64), 1)), (std::vector<double>{0, 1, 1, 1, 0, 0, 1, 1}));
  EXPECT_EQ(tril(ones({0, 3})).sizes().vec(), (std::vector<int64_t>{0, 3}));
  expect_error<ValueError>([] { tril(ones({3})); }, "tril", "1-D tril");
  expect_error<ValueError>([] { ones({3}).triu_(); }, "triu_", "1-D triu_");
}

// ---- cumsum / cumprod

Host scan_ref(const Host& h, int64_t dim, bool prod) {
  Host out = h;
  const Shape& s = h.sizes;
  for (size_t i = 0; i < h.v.size(); ++i) {
    Shape idx = unravel(int64_t(i), s);
    double acc = prod ? 1 : 0;
    for (int64_t k = 0; k <= idx[size_t(dim)]; ++k) {
      Shape j = idx;
      j[size_t(dim)] = k;
      acc = prod ? acc * h.at(j) : acc + h.at(j);
    }
    out.v[i] = acc;
  }
  return out;
}

TEST(ShapeScanOps, CumsumCumprodEveryDtypeDimAndLayout) {
  std::mt19937 rng(2);
  for (Dtype dt : kAllDtypes)
    for (Layout l : {Layout::Contiguous, Layout::Transposed, Layout::Sliced})
      for (int64_t dim : {0, 1, 2, -1}) {
        const Shape s{3, 4, 5};
        const int64_t d = dim < 0 ? dim + 3 : dim;
        Host h = random_host(s, dt, Domain::Small, rng);
        Tensor t = with_layout(h, dt, Device(kCPU), l);
        const Dtype out = is_integral(dt, true) ? kInt64 : dt;
        const std::string what = std::string(layout_name(l)) + " dim " + std::to_string(dim);
        // 16-bit floats round each partial result: a looser bound for the running values.
        expect_matches(cumsum(t, dim), scan_ref(h, d, false), out, "cumsum " + what, 4);
        expect_matches(t.cumsum(dim), scan_ref(h, d, false), out, "t.cumsum " + what, 4);
        expect_matches(cumprod(t, dim), scan_ref(h, d, true), out, "cumprod " + what, 4);
        expect_matches(t.cumprod(dim), scan_ref(h, d, true), out, "t.cumprod " + what, 4);
      }
}

TEST(ShapeScanOps, CumsumDtypeArgumentAndInPlace) {
  Tensor i = tensor({1, 2, 3, 4}).to(kInt32);
  Tensor f = cumsum(i, 0, kFloat64);
  EXPECT_EQ(f.dtype(), kFloat64);
  EXPECT_EQ(values(f), (std::vector<double>{1, 3, 6, 10}));
  EXPECT_EQ(cumsum(tensor({true, false, true}), 0).dtype(), kInt64);
  EXPECT_EQ(values(cumsum(tensor({true, false, true}), 0)), (std::vector<double>{1, 1, 2}));
  EXPECT_EQ(values(cumprod(tensor({2, 3, 4}), 0)), (std::vector<double>{2, 6, 24}));
  EXPECT_EQ(cumprod(tensor({2.f, 3.f}), 0, kFloat64).dtype(), kFloat64);
  // In place keeps the dtype (the int64 result is cast back).
  Tensor j = i.clone();
  j.cumsum_(0);
  EXPECT_EQ(j.dtype(), kInt32);
  EXPECT_EQ(values(j), (std::vector<double>{1, 3, 6, 10}));
  Tensor k = tensor({1.5, 2.0, -1.0});
  k.cumprod_(0);
  EXPECT_EQ(values(k), (std::vector<double>{1.5, 3.0, -3.0}));
  // 0-d and empty.
  EXPECT_EQ(values(cumsum(full({}, 3.0), 0)), (std::vector<double>{3}));
  EXPECT_EQ(cumsum(ones({2, 0}), 1).sizes().vec(), (std::vector<int64_t>{2, 0}));
  // int8 accumulates in int64 by default: no wrap at 127.
  EXPECT_EQ(values(cumsum(full({3}, 100, kInt8), 0)), (std::vector<double>{100, 200, 300}));
  expect_error<IndexError>([&] { cumsum(i, 1); }, "cumsum", "cumsum dim");
  expect_error<IndexError>([&] { cumprod(i, -2); }, "cumprod", "cumprod dim");
}

TEST(ShapeScanOps, CumsumLongRowsInFloat64Reference) {
  // Rows long enough to cross several blocks of the CUDA row scan; checked on the CPU here.
  std::mt19937 rng(3);
  Host h = random_host({3, 3000}, kFloat32, Domain::Any, rng);
  Tensor t = to_tensor(h, kFloat32, Device(kCPU));
  expect_matches(cumsum(t, 1), scan_ref(h, 1, false), kFloat32, "long cumsum", 100);
}

// ---- logsumexp, var_mean, std_mean, norm("fro")

TEST(ShapeScanOps, LogsumexpAgainstFloat64) {
  std::mt19937 rng(4);
  for (Dtype dt : kFloatDtypes)
    for (bool keepdim : {false, true}) {
      const Shape s{3, 4, 5};
      Host h = random_host(s, dt, Domain::Any, rng);
      Tensor t = with_layout(h, dt, Device(kCPU), Layout::Transposed);
      for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{{1}, {0, 2}, {-1}, {}}) {
        Shape os;
        std::vector<bool> red(3, dims.empty());
        for (int64_t d : dims) red[size_t(d < 0 ? d + 3 : d)] = true;
        for (size_t d = 0; d < 3; ++d)
          if (!red[d]) os.push_back(s[d]);
          else if (keepdim) os.push_back(1);
        Host want{os, std::vector<double>(size_t(numel_of(os)), 0)};
        // Sum exp straight in float64 (inputs in [-4, 4]: no overflow), then log.
        for (size_t i = 0; i < h.v.size(); ++i) {
          Shape idx = unravel(int64_t(i), s), o;
          for (size_t d = 0; d < 3; ++d)
            if (!red[d]) o.push_back(idx[d]);
            else if (keepdim) o.push_back(0);
          want.v[size_t(ravel(o, os))] += std::exp(h.v[i]);
        }
        for (double& w : want.v) w = std::log(w);
        expect_matches(logsumexp(t, dims, keepdim), want, dt, "logsumexp", 2);
        expect_matches(t.logsumexp(dims, keepdim), want, dt, "t.logsumexp", 2);
      }
    }
}

TEST(ShapeScanOps, LogsumexpIsStableAndHandlesInfinities) {
  const double inf = std::numeric_limits<double>::infinity();
  Tensor big = f64({1000, 1000, -inf, 2, inf, 0, -inf, -inf}, {4, 2});
  std::vector<double> v = values(logsumexp(big, {1}));
  EXPECT_NEAR(v[0], 1000 + std::log(2.0), 1e-12);
  EXPECT_NEAR(v[1], 2, 1e-12);
  EXPECT_EQ(v[2], inf);
  EXPECT_EQ(v[3], -inf);
  // Integers give the default float; an empty reduction gives -inf.
  Tensor li = logsumexp(tensor({0, 0}), {0});
  EXPECT_EQ(li.dtype(), kFloat32);
  EXPECT_NEAR(li.item<double>(), std::log(2.0), 1e-6);
  EXPECT_EQ(values(logsumexp(ones({2, 0}), {1})), (std::vector<double>{-inf, -inf}));
  expect_error<IndexError>([] { logsumexp(ones({2}), {1}); }, "logsumexp", "logsumexp dim");
}

TEST(ShapeScanOps, VarMeanStdMeanMatchTheSeparateOps) {
  std::mt19937 rng(5);
  Tensor t = to_tensor(random_host({4, 5, 6}, kFloat64, Domain::Any, rng), kFloat64, Device(kCPU)).transpose(0, 2);
  for (bool keepdim : {false, true}) {
    auto [v, m] = var_mean(t, {1, 2}, true, keepdim);
    EXPECT_EQ(values(v), values(var(t, {1, 2}, true, keepdim)));
    EXPECT_EQ(values(m), values(mean(t, {1, 2}, keepdim)));
    auto [s, m2] = std_mean(t, {0}, 0.0, keepdim);
    EXPECT_EQ(values(s), values(wick::std(t, {0}, 0.0, keepdim)));
    EXPECT_EQ(values(m2), values(mean(t, {0}, keepdim)));
  }
  auto [va, ma] = var_mean(t);
  EXPECT_EQ(va.dim(), 0);
  EXPECT_NEAR(va.item<double>(), var(t).item<double>(), 1e-15);
  EXPECT_NEAR(ma.item<double>(), mean(t).item<double>(), 1e-15);
  auto [vb, mb] = std_mean(t, {}, 2.0);
  EXPECT_NEAR(vb.item<double>(), wick::std(t, {}, 2.0).item<double>(), 1e-15);
  expect_error<TypeError>([] { var_mean(ones({3}, kInt64)); }, "var_mean", "var_mean int");
  expect_error<IndexError>([] { std_mean(ones({3}), {1}); }, "std_mean", "std_mean dim");
  expect_error<ValueError>([] { var_mean(ones({3, 3}), {0, 0}); }, "var_mean", "var_mean repeated dim");
}

TEST(ShapeScanOps, NormForms) {
  std::mt19937 rng(6);
  Host h = random_host({3, 4}, kFloat64, Domain::Any, rng);
  Tensor t = to_tensor(h, kFloat64, Device(kCPU));
  double ss = 0, l1 = 0, mx = 0, mn = 1e300;
  std::vector<double> rows(3, 0);
  for (size_t i = 0; i < h.v.size(); ++i) {
    ss += h.v[i] * h.v[i];
    l1 += std::fabs(h.v[i]);
    mx = std::max(mx, std::fabs(h.v[i]));
    mn = std::min(mn, std::fabs(h.v[i]));
    rows[i / 4] += h.v[i] * h.v[i];
  }
  EXPECT_NEAR(norm(t, "fro").item<double>(), std::sqrt(ss), 1e-12);
  EXPECT_NEAR(t.norm("fro", {0, 1}).item<double>(), std::sqrt(ss), 1e-12);
  EXPECT_NEAR(norm(t).item<double>(), std::sqrt(ss), 1e-12);
  EXPECT_NEAR(norm(t, 1).item<double>(), l1, 1e-12);
  EXPECT_NEAR(norm(t, INFINITY).item<double>(), mx, 1e-12);
  EXPECT_NEAR(norm(t, -INFINITY).item<double>(), mn, 1e-12);
  Tensor r = norm(t, "fro", {1}, true);
  EXPECT_EQ(r.sizes().vec(), (std::vector<int64_t>{3, 1}));
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(values(r)[i], std::sqrt(rows[i]), 1e-12);
  EXPECT_EQ(norm(t, INFINITY, {0}, true).sizes().vec(), (std::vector<int64_t>{1, 4}));
  // A literal 0 is p = 0 (the count of non-zeros), whatever overload it meets.
  Tensor z = f64({0, 2, 0, -1, 3, 0}, {2, 3});
  EXPECT_EQ(norm(z, 0).item<double>(), 3);
  EXPECT_EQ(z.norm(0).item<double>(), 3);
  EXPECT_EQ(values(norm(z, 0, {1})), (std::vector<double>{1, 2}));
  expect_error<NotImplementedError>([&] { norm(t, "nuc"); }, "norm", "nuclear norm");
  expect_error<ValueError>([&] { norm(t, "max"); }, "norm", "unknown p");
}

// ---- repeat, repeat_interleave, outer, lerp, baddbmm, matmul

TEST(ShapeScanOps, RepeatTilesAndPrependsDims) {
  Tensor t = tensor({{1, 2, 3}, {4, 5, 6}});
  Tensor r = t.repeat({2, 1, 2});
  EXPECT_EQ(r.sizes().vec(), (std::vector<int64_t>{2, 2, 6}));
  std::vector<double> want;
  for (int c = 0; c < 2; ++c)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 6; ++j) want.push_back(double(i * 3 + j % 3 + 1));
  EXPECT_EQ(values(r), want);
  EXPECT_EQ(r.dtype(), kInt64);
  // Non-contiguous input, zero repeats, bool.
  EXPECT_EQ(values(t.t().repeat({1, 2})), (std::vector<double>{1, 4, 1, 4, 2, 5, 2, 5, 3, 6, 3, 6}));
  EXPECT_EQ(t.repeat({0, 1}).sizes().vec(), (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(values(tensor({true, false}).repeat({2})), (std::vector<double>{1, 0, 1, 0}));
  expect_error<ValueError>([&] { t.repeat({2}); }, "repeat", "fewer repeats than dims");
  expect_error<ValueError>([&] { t.repeat({1, -1}); }, "repeat", "negative repeat");
}

TEST(ShapeScanOps, RepeatInterleaveForms) {
  Tensor t = tensor({{1, 2}, {3, 4}});
  EXPECT_EQ(values(repeat_interleave(t, 2)), (std::vector<double>{1, 1, 2, 2, 3, 3, 4, 4}));
  Tensor r0 = t.repeat_interleave(2, 0);
  EXPECT_EQ(r0.sizes().vec(), (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(values(r0), (std::vector<double>{1, 2, 1, 2, 3, 4, 3, 4}));
  EXPECT_EQ(values(repeat_interleave(t, 2, -1)), (std::vector<double>{1, 1, 2, 2, 3, 3, 4, 4}));
  Tensor r1 = repeat_interleave(t, tensor({1, 2}), 0);
  EXPECT_EQ(values(r1), (std::vector<double>{1, 2, 3, 4, 3, 4}));
  EXPECT_EQ(values(t.repeat_interleave(tensor({0, 3}), 1)), (std::vector<double>{2, 2, 2, 4, 4, 4}));
  EXPECT_EQ(values(repeat_interleave(t, tensor({2}))), (std::vector<double>{1, 1, 2, 2, 3, 3, 4, 4}));
  Tensor idx = repeat_interleave(tensor({2, 0, 1}));
  EXPECT_EQ(idx.dtype(), kInt64);
  EXPECT_EQ(values(idx), (std::vector<double>{0, 0, 2}));
  expect_error<ValueError>([&] { repeat_interleave(t, -1); }, "repeat_interleave", "negative repeats");
  expect_error<ValueError>([&] { repeat_interleave(t, tensor({1, 2, 3}), 0); }, "repeat_interleave",
                           "repeats size");
  expect_error<ValueError>([&] { repeat_interleave(t, tensor({1, -2}), 0); }, "repeat_interleave",
                           "negative tensor repeats");
  expect_error<IndexError>([&] { repeat_interleave(t, 2, 2); }, "repeat_interleave", "dim");
}

TEST(ShapeScanOps, OuterAndGer) {
  Tensor a = tensor({1.0, 2.0, 3.0}), b = tensor({4.0, 5.0});
  EXPECT_EQ(values(outer(a, b)), (std::vector<double>{4, 5, 8, 10, 12, 15}));
  EXPECT_EQ(values(a.ger(b)), values(outer(a, b)));
  EXPECT_EQ(outer(tensor({1, 2}), b).dtype(), kFloat32);
  EXPECT_EQ(outer(tensor({1, 2}), tensor({3})).dtype(), kInt64);
  expect_error<ValueError>([&] { outer(ones({2, 2}), b); }, "outer", "2-D outer");
  expect_error<ValueError>([&] { ger(a, ones({2, 2})); }, "ger", "2-D ger");
}

TEST(ShapeScanOps, LerpScalarAndTensorWeights) {
  std::mt19937 rng(7);
  for (Dtype dt : kFloatDtypes) {
    Host hs = random_host({3, 4}, dt, Domain::Any, rng), he = random_host({4}, dt, Domain::Any, rng);
    Host hw = random_host({3, 1}, dt, Domain::Small, rng);
    Tensor s = with_layout(hs, dt, Device(kCPU), Layout::Transposed), e = to_tensor(he, dt, Device(kCPU));
    Tensor w = to_tensor(hw, dt, Device(kCPU));
    for (double ws : {0.0, 0.25, 0.75, 1.0}) {
      Host want{{3, 4}, {}};
      for (int64_t i = 0; i < 12; ++i) want.v.push_back(hs.v[size_t(i)] + ws * (he.v[size_t(i % 4)] - hs.v[size_t(i)]));
      expect_matches(lerp(s, e, ws), want, dt, "lerp scalar", 2);
      expect_matches(s.lerp(e, ws), want, dt, "t.lerp scalar", 2);
    }
    Host want{{3, 4}, {}};
    for (int64_t i = 0; i < 12; ++i) {
      const double wv = hw.v[size_t(i / 4)];
      want.v.push_back(hs.v[size_t(i)] + wv * (he.v[size_t(i % 4)] - hs.v[size_t(i)]));
    }
    expect_matches(lerp(s, e, w), want, dt, "lerp tensor", 4);
    Tensor c = s.clone();
    c.lerp_(e, w);
    expect_matches(c, want, dt, "lerp_ tensor", 4);
  }
  // Exact at both ends.
  Tensor a = tensor({0.1f, -3.7f}), b = tensor({1e7f, 0.3f});
  EXPECT_EQ(values(lerp(a, b, 1.0)), values(b));
  EXPECT_EQ(values(lerp(a, b, 0.0)), values(a));
  EXPECT_EQ(values(lerp(a, b, ones({2}))), values(b));
  expect_error<TypeError>([] { lerp(ones({2}), ones({2}, kFloat64), 0.5); }, "lerp", "lerp dtypes");
  expect_error<TypeError>([] { lerp(ones({2}, kInt64), ones({2}, kInt64), 0.5); }, "lerp", "lerp ints");
  expect_error<ValueError>([] { ones({2}).lerp_(ones({3, 2}), 0.5); }, "lerp_", "lerp_ broadcast");
}

TEST(ShapeScanOps, BaddbmmAgainstFloat64) {
  std::mt19937 rng(8);
  Host hi = random_host({3, 5}, kFloat64, Domain::Any, rng);
  Host h1 = random_host({2, 3, 4}, kFloat64, Domain::Any, rng), h2 = random_host({2, 4, 5}, kFloat64, Domain::Any, rng);
  Tensor in = to_tensor(hi, kFloat64, Device(kCPU)), b1 = to_tensor(h1, kFloat64, Device(kCPU));
  Tensor b2 = to_tensor(h2, kFloat64, Device(kCPU)).transpose(1, 2).contiguous().transpose(1, 2);
  Host want{{2, 3, 5}, {}};
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 5; ++j) {
        double acc = 0;
        for (int k = 0; k < 4; ++k) acc += h1.v[size_t(b * 12 + i * 4 + k)] * h2.v[size_t(b * 20 + k * 5 + j)];
        want.v.push_back(0.5 * hi.v[size_t(i * 5 + j)] + 2 * acc);
      }
  expect_matches(baddbmm(in, b1, b2, 0.5, 2), want, kFloat64, "baddbmm");
  expect_matches(in.expand({2, 3, 5}).baddbmm(b1, b2, 0.5, 2), want, kFloat64, "t.baddbmm");
  // beta 0: the input is not read (nan does not propagate).
  Tensor nan_in = full({2, 3, 5}, std::nan(""), kFloat64);
  EXPECT_EQ(values(baddbmm(nan_in, b1, b2, 0)), values(bmm(b1, b2)));
  expect_error<ValueError>([&] { baddbmm(in, b1.select(0, 0), b2); }, "baddbmm", "2-D batch1");
  expect_error<ValueError>([&] { baddbmm(ones({4, 5}, kFloat64), b1, b2); }, "baddbmm", "input shape");
  expect_error<ValueError>([&] { baddbmm(in, b1, b1); }, "baddbmm", "inner sizes");
}

TEST(ShapeScanOps, MatmulBroadcastsBatchDimsAndBmmDoesNot) {
  std::mt19937 rng(9);
  Host ha = random_host({2, 1, 3, 4}, kFloat64, Domain::Any, rng), hb = random_host({5, 4, 6}, kFloat64, Domain::Any, rng);
  Tensor a = to_tensor(ha, kFloat64, Device(kCPU)), b = to_tensor(hb, kFloat64, Device(kCPU));
  Tensor c = matmul(a, b);
  ASSERT_EQ(c.sizes().vec(), (std::vector<int64_t>{2, 5, 3, 6}));
  std::vector<double> got = values(c);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 5; ++j)
      for (int r = 0; r < 3; ++r)
        for (int s = 0; s < 6; ++s) {
          double acc = 0;
          for (int k = 0; k < 4; ++k) acc += ha.v[size_t(i * 12 + r * 4 + k)] * hb.v[size_t(j * 24 + k * 6 + s)];
          EXPECT_NEAR(got[size_t(((i * 5 + j) * 3 + r) * 6 + s)], acc, 1e-12);
        }
  expect_error<ValueError>([&] { bmm(a, b); }, "bmm", "4-D bmm");
  expect_error<ValueError>([&] { bmm(ones({1, 3, 4}), ones({5, 4, 6})); }, "bmm", "broadcast bmm");
  expect_error<ValueError>([&] { matmul(ones({2, 3, 4}), ones({3, 4, 5})); }, "matmul", "batch mismatch");
}

// ---- einsum

TEST(ShapeScanOps, EinsumCommonEquations) {
  std::mt19937 rng(10);
  auto r = [&](const Shape& s) { return to_tensor(random_host(s, kFloat64, Domain::Any, rng), kFloat64, Device(kCPU)); };
  auto near = [](const Tensor& got, const Tensor& want, const char* what) {
    ASSERT_EQ(got.sizes().vec(), want.sizes().vec()) << what;
    std::vector<double> g = values(got), w = values(want);
    for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], w[i], 1e-12) << what << " at " << i;
  };
  Tensor a = r({3, 4}), b = r({4, 5}), sq = r({4, 4});
  near(einsum("ij,jk->ik", {a, b}), matmul(a, b), "ij,jk->ik");
  near(einsum("ij,jk", {a, b}), matmul(a, b), "implicit ij,jk");
  near(einsum("ij, jk -> ki", {a, b}), matmul(a, b).t(), "ij,jk->ki with spaces");
  Tensor x = r({2, 3, 4}), y = r({2, 4, 5});
  near(einsum("bij,bjk->bik", {x, y}), bmm(x, y), "bij,bjk->bik");
  Tensor q = r({2, 3, 5, 4}), k = r({2, 3, 6, 4});
  near(einsum("bhqd,bhkd->bhqk", {q, k}), matmul(q, k.transpose(-1, -2)), "bhqd,bhkd->bhqk");
  Tensor u = r({3}), v = r({4});
  near(einsum("i,j->ij", {u, v}), outer(u, v), "i,j->ij");
  near(einsum("i,i->", {v, v}), (v * v).sum(), "i,i->");
  near(einsum("i,i", {v, v}), (v * v).sum(), "implicit dot");
  // Diagonal and trace.
  std::vector<double> sv = values(sq), diag;
  for (int i = 0; i < 4; ++i) diag.push_back(sv[size_t(i * 5)]);
  near(einsum("ii->i", {sq}), f64(diag, {4}), "ii->i");
  near(einsum("ii", {sq}), f64({diag[0] + diag[1] + diag[2] + diag[3]}, {}), "trace");
  // Ellipses, transposes, sums over absent letters.
  Tensor e = r({2, 3, 4, 5});
  near(einsum("...ij->...ji", {e}), e.transpose(-1, -2), "...ij->...ji");
  near(einsum("ij->ji", {a}), a.t(), "ij->ji");
  near(einsum("ij->", {a}), a.sum(), "ij->");
  near(einsum("ij->j", {a}), a.sum({0}), "ij->j");
  near(einsum("ba", {a}), a.t(), "implicit ba");
  Tensor w = r({3, 5, 2});
  near(einsum("...ij,...jk->...ik", {e, w}), matmul(e, w), "...ij,...jk->...ik");
  near(einsum("bij,jk->bik", {x, b}), matmul(x, b), "bij,jk->bik");
  Tensor c3 = r({5, 2});
  near(einsum("ij,jk,kl->il", {a, b, c3}), matmul(matmul(a, b), c3), "ij,jk,kl->il");
  near(einsum("bij->j", {x}), x.sum({0, 1}), "bij->j");
  // Integer operands stay integers.
  Tensor ia = tensor({{1, 2}, {3, 4}});
  EXPECT_EQ(values(einsum("ij,jk->ik", {ia, ia})), (std::vector<double>{7, 10, 15, 22}));
}

TEST(ShapeScanOps, EinsumErrors) {
  Tensor a = ones({3, 4}), b = ones({4, 5});
  expect_error<ValueError>([&] { einsum("ij,jk->ik", {a}); }, "einsum", "fewer operands");
  expect_error<ValueError>([&] { einsum("ij->ij", {a, b}); }, "einsum", "more operands");
  expect_error<ValueError>([&] { einsum("ijk->ijk", {a}); }, "einsum", "too many subscripts");
  expect_error<ValueError>([&] { einsum("ij,jk->iz", {a, b}); }, "einsum", "unknown output letter");
  expect_error<ValueError>([&] { einsum("ij,jk->ii", {a, b}); }, "einsum", "repeated output letter");
  expect_error<ValueError>([&] { einsum("ij,kj->ik", {a, b}); }, "einsum", "sizes do not broadcast");
  expect_error<ValueError>([&] { einsum("i1->i", {ones({3})}); }, "einsum", "bad subscript");
  expect_error<ValueError>([&] { einsum("ii->i", {a}); }, "einsum", "diagonal of unequal sizes");
}

// ---- pad

TEST(ShapeScanOps, PadModes) {
  Tensor t = tensor({0.0, 1.0, 2.0, 3.0}).view({1, 1, 4});
  EXPECT_EQ(values(F::pad(t, {2, 1}, "reflect")), (std::vector<double>{2, 1, 0, 1, 2, 3, 2}));
  EXPECT_EQ(values(F::pad(t, {2, 1}, "replicate")), (std::vector<double>{0, 0, 0, 1, 2, 3, 3}));
  EXPECT_EQ(values(F::pad(t, {2, 1}, "circular")), (std::vector<double>{2, 3, 0, 1, 2, 3, 0}));
  EXPECT_EQ(values(F::pad(t, {2, 1})), (std::vector<double>{0, 0, 0, 1, 2, 3, 0}));
  EXPECT_EQ(values(F::pad(t, {1, 0}, "constant", 7)), (std::vector<double>{7, 0, 1, 2, 3}));
  // Negative constant pads crop.
  EXPECT_EQ(values(F::pad(t, {-1, 1}, "constant", 9)), (std::vector<double>{1, 2, 3, 9}));
  EXPECT_EQ(values(F::pad(t, {-2, -2})).size(), 0u);
  // Two dims: the last dim's pair first.
  Tensor m = tensor({{1, 2}, {3, 4}});
  Tensor p = F::pad(m, {1, 0, 0, 1});
  EXPECT_EQ(p.sizes().vec(), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(p.dtype(), kInt64);
  EXPECT_EQ(values(p), (std::vector<double>{0, 1, 2, 0, 3, 4, 0, 0, 0}));
  Tensor img = tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}).view({1, 2, 3});
  EXPECT_EQ(values(F::pad(img, {1, 1, 1, 0}, "reflect")),
            (std::vector<double>{5, 4, 5, 6, 5, 2, 1, 2, 3, 2, 5, 4, 5, 6, 5}));
  EXPECT_EQ(values(F::pad(img.transpose(1, 2), {0, 1}, "replicate")), (std::vector<double>{1, 4, 4, 2, 5, 5, 3, 6, 6}));
  expect_error<ValueError>([&] { F::pad(t, {4, 0}, "reflect"); }, "pad", "reflect pad >= size");
  expect_error<ValueError>([&] { F::pad(t, {5, 0}, "circular"); }, "pad", "circular wraps twice");
  expect_error<ValueError>([&] { F::pad(t, {1}); }, "pad", "odd pad length");
  expect_error<ValueError>([&] { F::pad(t, {1, 1, 1, 1, 1, 1, 1, 1}); }, "pad", "too many pads");
  expect_error<ValueError>([&] { F::pad(t, {1, 1}, "wrap"); }, "pad", "unknown mode");
  expect_error<ValueError>([&] { F::pad(t, {-3, -2}); }, "pad", "negative size");
  expect_error<NotImplementedError>([&] { F::pad(tensor({1.0, 2.0}), {1, 1}, "reflect"); }, "pad", "1-D reflect");
}

// ---- CUDA against the CPU

class ShapeScanOpsCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  }
  static void same(const Tensor& cpu, const Tensor& gpu, const std::string& what, double tol = 0) {
    ASSERT_TRUE(gpu.is_cuda()) << what;
    ASSERT_EQ(cpu.dtype(), gpu.dtype()) << what;
    ASSERT_EQ(cpu.sizes().vec(), gpu.sizes().vec()) << what;
    std::vector<double> c = values(cpu), g = values(gpu);
    for (size_t i = 0; i < c.size(); ++i) {
      if (std::isnan(c[i])) EXPECT_TRUE(std::isnan(g[i])) << what << " at " << i;
      else EXPECT_NEAR(g[i], c[i], tol * std::max(1.0, std::fabs(c[i]))) << what << " at " << i;
    }
  }
};

TEST_F(ShapeScanOpsCuda, TrilTriu) {
  std::mt19937 rng(11);
  for (Dtype dt : kAllDtypes) {
    Tensor c = with_layout(random_host({2, 5, 7}, dt, Domain::Any, rng), dt, Device(kCPU), Layout::Transposed);
    Tensor g = c.cuda();
    same(tril(c, -1), tril(g, -1), "tril");
    same(triu(c, 2), triu(g, 2), "triu");
    Tensor gi = g.clone();
    gi.tril_();
    same(tril(c), gi, "tril_");
  }
}

TEST_F(ShapeScanOpsCuda, CumsumCumprod) {
  std::mt19937 rng(12);
  for (Dtype dt : kAllDtypes)
    for (const Shape& s : {Shape{3, 4, 5}, Shape{2, 3000}, Shape{700, 3}}) {
      Tensor c = to_tensor(random_host(s, dt, Domain::Small, rng), dt, Device(kCPU));
      Tensor g = c.cuda();
      for (int64_t dim = 0; dim < int64_t(s.size()); ++dim) {
        const double tol = is_floating_point(dt) ? tolerance(dt) * 50 : 0;
        same(cumsum(c, dim), cumsum(g, dim), "cumsum", tol);
        if (s[size_t(dim)] <= 5) same(cumprod(c, dim), cumprod(g, dim), "cumprod", tol);
      }
    }
  // A row crossing several blocks in float64: exact enough to compare closely.
  Tensor c = to_tensor(random_host({3, 5000}, kFloat64, Domain::Any, rng), kFloat64, Device(kCPU));
  same(cumsum(c, 1), cumsum(c.cuda(), 1), "long cumsum", 1e-9);
  same(cumsum(c.t(), 0), cumsum(c.cuda().t(), 0), "long cumsum of a transpose", 1e-9);
}

TEST_F(ShapeScanOpsCuda, ReductionsAndComposites) {
  std::mt19937 rng(13);
  auto r = [&](const Shape& s) { return to_tensor(random_host(s, kFloat32, Domain::Any, rng), kFloat32, Device(kCPU)); };
  Tensor x = r({3, 4, 5});
  same(logsumexp(x, {1}), logsumexp(x.cuda(), {1}), "logsumexp", 1e-5);
  same(logsumexp(x, {0, 2}, true), logsumexp(x.cuda(), {0, 2}, true), "logsumexp keepdim", 1e-5);
  auto [v, m] = var_mean(x, {2});
  auto [vg, mg] = var_mean(x.cuda(), {2});
  same(v, vg, "var_mean var", 1e-5);
  same(m, mg, "var_mean mean", 1e-5);
  same(norm(x, "fro"), norm(x.cuda(), "fro"), "fro", 1e-5);
  same(x.repeat({2, 1, 1, 2}), x.cuda().repeat({2, 1, 1, 2}), "repeat");
  same(repeat_interleave(x, tensor({1, 0, 2, 1}), 1), repeat_interleave(x.cuda(), tensor({1, 0, 2, 1}).cuda(), 1),
       "repeat_interleave");
  Tensor a = r({4}), b = r({5});
  same(outer(a, b), outer(a.cuda(), b.cuda()), "outer", 1e-6);
  Tensor e = r({3, 4, 5}), w = r({4, 1});
  same(lerp(x, e, w), lerp(x.cuda(), e.cuda(), w.cuda()), "lerp", 1e-5);
  Tensor b1 = r({2, 3, 4}), b2 = r({2, 4, 5}), in = r({3, 5});
  same(baddbmm(in, b1, b2, 0.5, 2), baddbmm(in.cuda(), b1.cuda(), b2.cuda(), 0.5, 2), "baddbmm", 1e-4);
  Tensor q = r({2, 3, 5, 4}), k = r({2, 3, 6, 4});
  same(einsum("bhqd,bhkd->bhqk", {q, k}), einsum("bhqd,bhkd->bhqk", {q.cuda(), k.cuda()}), "einsum", 1e-4);
  Tensor ma = r({2, 1, 3, 4}), mb = r({5, 4, 6});
  same(matmul(ma, mb), matmul(ma.cuda(), mb.cuda()), "matmul batch broadcast", 1e-4);
  for (const char* mode : {"constant", "reflect", "replicate", "circular"})
    same(F::pad(x, {2, 1, 1, 2}, mode), F::pad(x.cuda(), {2, 1, 1, 2}, mode), mode);
}

}  // namespace
