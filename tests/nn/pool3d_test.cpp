// The 3-D poolings and ConvTranspose3d (wick/nn/pooling3d.h) against float64 loops over the
// input (every parameter of each: ceil mode, padding, dilation, count_include_pad,
// divisor_override, uneven adaptive bins, non-cubic and non-contiguous inputs, unbatched
// inputs), the maxima's indices, gradients by central differences, PyTorch's printing and the
// errors' op names, on every device present.
#include <algorithm>
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "../autograd/gradcheck.h"
#include "nn_test_util.h"
#include "wick/nn/pooling3d.h"
#include "wick/wick.h"

using namespace wick;
namespace F = wick::nn::functional;
using wick::testing::names;
using wick::testing::repr;

namespace {

struct Dims {
  int64_t n, c, d, h, w;
};

Dims dims_of(const Tensor& x) { return {x.size(0), x.size(1), x.size(2), x.size(3), x.size(4)}; }

std::vector<double> host(const Tensor& t) { return t.detach().cpu().to(kFloat64).contiguous().to_vector<double>(); }

// PyTorch's documented output size: floor or ceil of (in + 2p - d (k - 1) - 1) / s + 1, and in
// ceil mode one less when the last window would start past the input and its left padding.
int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  const double q = double(in + 2 * p - d * (k - 1) - 1) / double(s);
  int64_t o = int64_t(ceil_mode ? std::ceil(q) : std::floor(q)) + 1;
  if (ceil_mode && (o - 1) * s >= in + p) --o;
  return o;
}

struct PoolArgs {
  F::Triple k, s, p, d;
  bool ceil_mode;
};

// Max pooling by loops: values and the first maximum's flat index into the D * H * W plane.
void max_reference(const Tensor& xt, const PoolArgs& a, std::vector<double>& vals, std::vector<int64_t>& idx,
                   std::vector<int64_t>& shape) {
  const auto xv = host(xt);
  const Dims x = dims_of(xt);
  const int64_t od = out_size(x.d, a.k.d, a.s.d, a.p.d, a.d.d, a.ceil_mode),
                oh = out_size(x.h, a.k.h, a.s.h, a.p.h, a.d.h, a.ceil_mode),
                ow = out_size(x.w, a.k.w, a.s.w, a.p.w, a.d.w, a.ceil_mode);
  shape = {x.n, x.c, od, oh, ow};
  vals.clear();
  idx.clear();
  for (int64_t n = 0; n < x.n; ++n)
    for (int64_t c = 0; c < x.c; ++c)
      for (int64_t i = 0; i < od; ++i)
        for (int64_t j = 0; j < oh; ++j)
          for (int64_t l = 0; l < ow; ++l) {
            double best = -std::numeric_limits<double>::infinity();
            int64_t at = -1;
            for (int64_t u = 0; u < a.k.d; ++u)
              for (int64_t v = 0; v < a.k.h; ++v)
                for (int64_t e = 0; e < a.k.w; ++e) {
                  const int64_t z = i * a.s.d - a.p.d + u * a.d.d, y = j * a.s.h - a.p.h + v * a.d.h,
                                q = l * a.s.w - a.p.w + e * a.d.w;
                  if (z < 0 || z >= x.d || y < 0 || y >= x.h || q < 0 || q >= x.w) continue;
                  const int64_t f = (z * x.h + y) * x.w + q;
                  const double val = xv[size_t(((n * x.c + c) * x.d) * x.h * x.w + f)];
                  if (at < 0 || val > best) best = val, at = f;
                }
            vals.push_back(best);
            idx.push_back(at);
          }
}

// Average pooling by loops, with PyTorch's divisor rules.
std::vector<double> avg_reference(const Tensor& xt, const PoolArgs& a, bool count_include_pad,
                                  std::optional<int64_t> divisor, std::vector<int64_t>& shape) {
  const auto xv = host(xt);
  const Dims x = dims_of(xt);
  const int64_t od = out_size(x.d, a.k.d, a.s.d, a.p.d, 1, a.ceil_mode),
                oh = out_size(x.h, a.k.h, a.s.h, a.p.h, 1, a.ceil_mode),
                ow = out_size(x.w, a.k.w, a.s.w, a.p.w, 1, a.ceil_mode);
  shape = {x.n, x.c, od, oh, ow};
  std::vector<double> out;
  for (int64_t n = 0; n < x.n; ++n)
    for (int64_t c = 0; c < x.c; ++c)
      for (int64_t i = 0; i < od; ++i)
        for (int64_t j = 0; j < oh; ++j)
          for (int64_t l = 0; l < ow; ++l) {
            const int64_t z0 = i * a.s.d - a.p.d, y0 = j * a.s.h - a.p.h, q0 = l * a.s.w - a.p.w;
            const int64_t z1 = std::min(z0 + a.k.d, x.d + a.p.d), y1 = std::min(y0 + a.k.h, x.h + a.p.h),
                          q1 = std::min(q0 + a.k.w, x.w + a.p.w);
            const int64_t padded = (z1 - z0) * (y1 - y0) * (q1 - q0);
            double sum = 0;
            int64_t inside = 0;
            for (int64_t z = std::max<int64_t>(z0, 0); z < std::min(z1, x.d); ++z)
              for (int64_t y = std::max<int64_t>(y0, 0); y < std::min(y1, x.h); ++y)
                for (int64_t q = std::max<int64_t>(q0, 0); q < std::min(q1, x.w); ++q) {
                  sum += xv[size_t((((n * x.c + c) * x.d + z) * x.h + y) * x.w + q)];
                  ++inside;
                }
            const double div = divisor ? double(*divisor) : double(count_include_pad ? padded : inside);
            out.push_back(sum / div);
          }
  return out;
}

// Adaptive pooling by loops over each bin [floor(i n / o), ceil((i + 1) n / o)).
void adaptive_reference(const Tensor& xt, F::Triple o, bool max, std::vector<double>& vals,
                        std::vector<int64_t>& idx) {
  const auto xv = host(xt);
  const Dims x = dims_of(xt);
  auto lo = [](int64_t i, int64_t n, int64_t out) { return int64_t(std::floor(double(i * n) / double(out))); };
  auto hi = [](int64_t i, int64_t n, int64_t out) { return int64_t(std::ceil(double((i + 1) * n) / double(out))); };
  vals.clear();
  idx.clear();
  for (int64_t n = 0; n < x.n; ++n)
    for (int64_t c = 0; c < x.c; ++c)
      for (int64_t i = 0; i < o.d; ++i)
        for (int64_t j = 0; j < o.h; ++j)
          for (int64_t l = 0; l < o.w; ++l) {
            double sum = 0, best = 0;
            int64_t cnt = 0, at = -1;
            for (int64_t z = lo(i, x.d, o.d); z < hi(i, x.d, o.d); ++z)
              for (int64_t y = lo(j, x.h, o.h); y < hi(j, x.h, o.h); ++y)
                for (int64_t q = lo(l, x.w, o.w); q < hi(l, x.w, o.w); ++q) {
                  const int64_t f = (z * x.h + y) * x.w + q;
                  const double v = xv[size_t((n * x.c + c) * x.d * x.h * x.w + f)];
                  sum += v;
                  ++cnt;
                  if (at < 0 || v > best) best = v, at = f;
                }
            vals.push_back(max ? best : sum / double(cnt));
            idx.push_back(at);
          }
}

// The transposed convolution by scattering each input element through the kernel.
std::vector<double> conv_transpose_reference(const Tensor& xt, const Tensor& wt, const Tensor& bt, F::Triple s,
                                             F::Triple p, F::Triple op, int64_t groups, F::Triple d,
                                             std::vector<int64_t>& shape) {
  const auto xv = host(xt), wv = host(wt);
  const std::vector<double> bv = bt.defined() ? host(bt) : std::vector<double>();
  const Dims x = dims_of(xt);
  const int64_t og = wt.size(1), kd = wt.size(2), kh = wt.size(3), kw = wt.size(4), oc = og * groups,
                cg = x.c / groups;
  const int64_t od = (x.d - 1) * s.d - 2 * p.d + d.d * (kd - 1) + op.d + 1,
                oh = (x.h - 1) * s.h - 2 * p.h + d.h * (kh - 1) + op.h + 1,
                ow = (x.w - 1) * s.w - 2 * p.w + d.w * (kw - 1) + op.w + 1;
  shape = {x.n, oc, od, oh, ow};
  std::vector<double> out(size_t(x.n * oc * od * oh * ow), 0.0);
  for (int64_t n = 0; n < x.n; ++n)
    for (int64_t o = 0; o < oc; ++o)
      for (int64_t f = 0; f < od * oh * ow; ++f) out[size_t((n * oc + o) * od * oh * ow + f)] = bv.empty() ? 0 : bv[o];
  for (int64_t n = 0; n < x.n; ++n)
    for (int64_t ci = 0; ci < x.c; ++ci)
      for (int64_t z = 0; z < x.d; ++z)
        for (int64_t y = 0; y < x.h; ++y)
          for (int64_t q = 0; q < x.w; ++q) {
            const double xin = xv[size_t((((n * x.c + ci) * x.d + z) * x.h + y) * x.w + q)];
            const int64_t g = ci / cg;
            for (int64_t o = 0; o < og; ++o)
              for (int64_t a = 0; a < kd; ++a)
                for (int64_t b = 0; b < kh; ++b)
                  for (int64_t e = 0; e < kw; ++e) {
                    const int64_t Z = z * s.d - p.d + a * d.d, Y = y * s.h - p.h + b * d.h, Q = q * s.w - p.w + e * d.w;
                    if (Z < 0 || Z >= od || Y < 0 || Y >= oh || Q < 0 || Q >= ow) continue;
                    out[size_t((((n * oc + g * og + o) * od + Z) * oh + Y) * ow + Q)] +=
                        xin * wv[size_t((((ci * og + o) * kd + a) * kh + b) * kw + e)];
                  }
          }
  return out;
}

void expect_values(const Tensor& got, const std::vector<int64_t>& shape, const std::vector<double>& want, double tol,
                   const std::string& what) {
  ASSERT_EQ(got.sizes().vec(), shape) << what;
  const auto g = host(got);
  ASSERT_EQ(g.size(), want.size()) << what;
  for (size_t i = 0; i < g.size(); ++i) ASSERT_NEAR(g[i], want[i], tol) << what << " element " << i;
}

void expect_indices(const Tensor& got, const std::vector<int64_t>& want, const std::string& what) {
  ASSERT_EQ(got.dtype(), kInt64) << what;
  const auto g = got.cpu().contiguous().to_vector<int64_t>();
  ASSERT_EQ(g, want) << what;
}

const std::vector<PoolArgs> kMaxCases = {
    {2, 2, 0, 1, false},
    {3, 2, 1, 1, false},
    {3, 2, 1, 1, true},
    {{2, 3, 2}, {1, 2, 3}, {1, 1, 0}, 1, true},
    {{3, 2, 2}, {2, 1, 2}, {1, 0, 1}, {2, 1, 2}, false},
    {{3, 2, 2}, {2, 3, 2}, {1, 1, 1}, {1, 2, 2}, true},
    {{1, 2, 3}, {3, 2, 1}, 0, {1, 3, 1}, true},
};

using MaxPool3d = wick::testing::OnEachDevice<31>;
using AvgPool3d = wick::testing::OnEachDevice<32>;
using AdaptivePool3d = wick::testing::OnEachDevice<33>;
using ConvTranspose3d = wick::testing::OnEachDevice<34>;

TEST_P(MaxPool3d, MatchesTheLoops) {
  const std::vector<std::vector<int64_t>> shapes = {{2, 3, 5, 6, 7}, {1, 2, 7, 5, 4}};
  for (Dtype dt : {kFloat64, kFloat32})
    for (const auto& sh : shapes)
      for (size_t ci = 0; ci < kMaxCases.size(); ++ci) {
        const PoolArgs& a = kMaxCases[ci];
        Tensor x = randn(sh, TensorOptions(dt).device(dev()));
        std::vector<double> vals;
        std::vector<int64_t> idx, shape;
        max_reference(x, a, vals, idx, shape);
        const std::string what = "case " + std::to_string(ci);
        expect_values(F::max_pool3d(x, a.k, a.s, a.p, a.d, a.ceil_mode), shape, vals, 1e-6, what);
        auto [v, i] = F::max_pool3d_with_indices(x, a.k, a.s, a.p, a.d, a.ceil_mode);
        expect_values(v, shape, vals, 1e-6, what);
        expect_indices(i, idx, what);
      }
  // Unbatched and non-contiguous inputs; the stride defaults to the kernel size.
  Tensor xu = randn({3, 4, 5, 6}, TensorOptions(kFloat64).device(dev()));
  std::vector<double> vals;
  std::vector<int64_t> idx, shape;
  max_reference(xu.unsqueeze(0), {2, 2, 0, 1, false}, vals, idx, shape);
  shape.erase(shape.begin());
  expect_values(F::max_pool3d(xu, 2), shape, vals, 1e-12, "unbatched");
  auto [vu, iu] = F::max_pool3d_with_indices(xu, 2);
  EXPECT_EQ(iu.sizes().vec(), shape);
  expect_indices(iu, idx, "unbatched");
  Tensor xt = randn({2, 2, 6, 5, 7}, TensorOptions(kFloat64).device(dev())).transpose(2, 4);
  ASSERT_FALSE(xt.is_contiguous());
  const PoolArgs a{{3, 2, 2}, {2, 1, 2}, 1, 1, true};
  max_reference(xt, a, vals, idx, shape);
  expect_values(F::max_pool3d(xt, a.k, a.s, a.p, a.d, a.ceil_mode), shape, vals, 1e-12, "non-contiguous");
  expect_values(F::max_pool3d(xt, F::MaxPool3dFuncOptions({3, 2, 2}).stride({2, 1, 2}).padding(1).ceil_mode(true)),
                shape, vals, 1e-12, "func options");
}

TEST_P(MaxPool3d, Gradients) {
  auto x = wick::testing::rnd({1, 2, 4, 5, 4});
  wick::testing::gradcheck(
      [](const std::vector<Tensor>& t) { return F::max_pool3d(t[0], {2, 3, 2}, F::Triple(2, 1, 2), {1, 1, 0}, 1, true); }, {x},
      dev());
  wick::testing::gradcheck([](const std::vector<Tensor>& t) { return F::max_pool3d(t[0], 2, 1, 0, {1, 2, 2}); }, {x},
                           dev());
}

TEST_P(MaxPool3d, ModuleAndPrinting) {
  nn::MaxPool3d pool(nn::MaxPool3dOptions(3).stride(2).padding(1));
  EXPECT_EQ(repr(*pool), "MaxPool3d(kernel_size=3, stride=2, padding=1, dilation=1, ceil_mode=False)");
  Tensor x = randn({2, 3, 7, 8, 9}, dev());
  EXPECT_EQ(pool(x).sizes().vec(), (std::vector<int64_t>{2, 3, 4, 4, 5}));
  auto [v, i] = pool->forward_with_indices(x);
  EXPECT_EQ(i.sizes().vec(), (std::vector<int64_t>{2, 3, 4, 4, 5}));
  nn::MaxPool3d two(2);
  EXPECT_EQ(repr(*two), "MaxPool3d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)");
  nn::MaxPool3d mixed(nn::MaxPool3dOptions({3, 2, 1}).stride({2, 1, 1}).dilation({1, 2, 1}).ceil_mode(true));
  EXPECT_EQ(repr(*mixed),
            "MaxPool3d(kernel_size=(3, 2, 1), stride=(2, 1, 1), padding=0, dilation=(1, 2, 1), ceil_mode=True)");
}

TEST_P(MaxPool3d, Errors) {
  Tensor x = randn({1, 2, 4, 4, 4}, dev());
  EXPECT_TRUE(names([&] { F::max_pool3d(x, 0); }, "max_pool3d"));
  EXPECT_TRUE(names([&] { F::max_pool3d(x, 2, 0); }, "max_pool3d"));
  EXPECT_TRUE(names([&] { F::max_pool3d(x, 2, 2, 2); }, "max_pool3d"));  // padding over half the kernel
  EXPECT_TRUE(names([&] { F::max_pool3d(x, 2, 2, -1); }, "max_pool3d"));
  EXPECT_TRUE(names([&] { F::max_pool3d(x, 2, 2, 0, 0); }, "max_pool3d"));
  EXPECT_TRUE(names([&] { F::max_pool3d(x, 5); }, "max_pool3d"));  // output too small
  EXPECT_TRUE(names([&] { F::max_pool3d(x.flatten(2), 2); }, "max_pool3d"));
  EXPECT_TRUE(names([&] { F::max_pool3d(x.to(kInt64), 2); }, "max_pool3d"));
  EXPECT_TRUE(names([&] { F::max_pool3d_with_indices(x, 0); }, "max_pool3d_with_indices"));
}

TEST_P(AvgPool3d, MatchesTheLoops) {
  const std::vector<PoolArgs> cases = {
      {2, 2, 0, 1, false},
      {3, 2, 1, 1, false},
      {3, 2, 1, 1, true},
      {{2, 3, 2}, {1, 2, 3}, {1, 1, 0}, 1, true},
      {{3, 2, 4}, {2, 3, 2}, {1, 1, 2}, 1, true},
      {{1, 2, 3}, {3, 2, 1}, {0, 1, 1}, 1, false},
  };
  for (Dtype dt : {kFloat64, kFloat32})
    for (size_t ci = 0; ci < cases.size(); ++ci)
      for (bool include : {true, false})
        for (std::optional<int64_t> div : {std::optional<int64_t>(), std::optional<int64_t>(5)}) {
          const PoolArgs& a = cases[ci];
          Tensor x = randn({2, 2, 5, 6, 7}, TensorOptions(dt).device(dev()));
          std::vector<int64_t> shape;
          const auto want = avg_reference(x, a, include, div, shape);
          const std::string what = "case " + std::to_string(ci) + (include ? " include" : " exclude") +
                                   (div ? " divisor" : "");
          expect_values(F::avg_pool3d(x, a.k, a.s, a.p, a.ceil_mode, include, div), shape, want, 1e-5, what);
        }
  Tensor xt = randn({2, 2, 6, 5, 7}, TensorOptions(kFloat64).device(dev())).permute({0, 1, 4, 2, 3});
  std::vector<int64_t> shape;
  const PoolArgs a{3, 2, 1, 1, true};
  auto want = avg_reference(xt, a, false, std::nullopt, shape);
  expect_values(F::avg_pool3d(xt, F::AvgPool3dFuncOptions(3).stride(2).padding(1).ceil_mode(true).count_include_pad(
                                      false)),
                shape, want, 1e-12, "non-contiguous");
  Tensor xu = randn({3, 4, 4, 6}, TensorOptions(kFloat64).device(dev()));
  want = avg_reference(xu.unsqueeze(0), {2, 2, 0, 1, false}, true, std::nullopt, shape);
  shape.erase(shape.begin());
  expect_values(F::avg_pool3d(xu, 2), shape, want, 1e-12, "unbatched");
}

TEST_P(AvgPool3d, Gradients) {
  auto x = wick::testing::rnd({1, 2, 4, 5, 4});
  wick::testing::gradcheck(
      [](const std::vector<Tensor>& t) { return F::avg_pool3d(t[0], {2, 3, 2}, F::Triple(2, 1, 2), {1, 1, 0}, true, false); },
      {x}, dev());
  wick::testing::gradcheck(
      [](const std::vector<Tensor>& t) { return F::avg_pool3d(t[0], 2, 1, 1, false, true, 3); }, {x}, dev());
}

TEST_P(AvgPool3d, ModuleAndErrors) {
  nn::AvgPool3d pool(nn::AvgPool3dOptions(3).stride(2).padding(1).count_include_pad(false));
  EXPECT_EQ(repr(*pool), "AvgPool3d(kernel_size=3, stride=2, padding=1)");
  nn::AvgPool3d mixed(nn::AvgPool3dOptions({2, 1, 3}).divisor_override(2));
  EXPECT_EQ(repr(*mixed), "AvgPool3d(kernel_size=(2, 1, 3), stride=(2, 1, 3), padding=0)");
  Tensor x = randn({2, 3, 7, 8, 9}, dev());
  EXPECT_EQ(pool(x).sizes().vec(), (std::vector<int64_t>{2, 3, 4, 4, 5}));
  EXPECT_TRUE(names([&] { F::avg_pool3d(x, 0); }, "avg_pool3d"));
  EXPECT_TRUE(names([&] { F::avg_pool3d(x, 2, 2, 2); }, "avg_pool3d"));
  EXPECT_TRUE(names([&] { F::avg_pool3d(x, 2, 2, 0, false, true, 0); }, "avg_pool3d"));
  EXPECT_TRUE(names([&] { F::avg_pool3d(x.flatten(0, 1).flatten(0, 1), 2); }, "avg_pool3d"));
  EXPECT_TRUE(names([&] { F::avg_pool3d(x, 10); }, "avg_pool3d"));
}

TEST_P(AdaptivePool3d, MatchesTheLoops) {
  const std::vector<std::pair<std::vector<int64_t>, F::Triple>> cases = {
      {{2, 3, 5, 6, 7}, {2, 3, 4}}, {{1, 2, 4, 6, 8}, {2, 3, 4}}, {{2, 2, 3, 5, 4}, 1},
      {{1, 2, 7, 3, 5}, {3, 5, 2}}, {{1, 1, 2, 3, 2}, {4, 4, 3}},
  };
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    Tensor x = randn(cases[ci].first, TensorOptions(kFloat64).device(dev()));
    const F::Triple o = cases[ci].second;
    const std::vector<int64_t> shape = {x.size(0), x.size(1), o.d, o.h, o.w};
    std::vector<double> vals;
    std::vector<int64_t> idx;
    const std::string what = "case " + std::to_string(ci);
    adaptive_reference(x, o, false, vals, idx);
    expect_values(F::adaptive_avg_pool3d(x, o), shape, vals, 1e-12, what + " avg");
    adaptive_reference(x, o, true, vals, idx);
    expect_values(F::adaptive_max_pool3d(x, o), shape, vals, 1e-12, what + " max");
    auto [v, i] = F::adaptive_max_pool3d_with_indices(x, o);
    expect_values(v, shape, vals, 1e-12, what + " max");
    expect_indices(i, idx, what + " indices");
  }
  Tensor xt = randn({2, 2, 6, 5, 7}, TensorOptions(kFloat64).device(dev())).transpose(2, 4);
  std::vector<double> vals;
  std::vector<int64_t> idx;
  adaptive_reference(xt, {3, 2, 4}, true, vals, idx);
  expect_values(F::adaptive_max_pool3d(xt, F::AdaptiveMaxPool3dFuncOptions({3, 2, 4})), {2, 2, 3, 2, 4}, vals, 1e-12,
                "non-contiguous");
  adaptive_reference(xt, {3, 2, 4}, false, vals, idx);
  expect_values(F::adaptive_avg_pool3d(xt.select(0, 1), {3, 2, 4}), {2, 3, 2, 4},
                std::vector<double>(vals.begin() + 48, vals.end()), 1e-12, "unbatched");
}

TEST_P(AdaptivePool3d, GradientsModulesAndErrors) {
  auto x = wick::testing::rnd({1, 2, 3, 5, 4});
  wick::testing::gradcheck([](const std::vector<Tensor>& t) { return F::adaptive_avg_pool3d(t[0], {2, 3, 3}); }, {x},
                           dev());
  wick::testing::gradcheck([](const std::vector<Tensor>& t) { return F::adaptive_max_pool3d(t[0], {2, 3, 3}); }, {x},
                           dev());
  nn::AdaptiveAvgPool3d gap(1);
  EXPECT_EQ(repr(*gap), "AdaptiveAvgPool3d(output_size=1)");
  nn::AdaptiveMaxPool3d amp(nn::AdaptiveMaxPool3dOptions({2, 3, 4}));
  EXPECT_EQ(repr(*amp), "AdaptiveMaxPool3d(output_size=(2, 3, 4))");
  Tensor y = randn({2, 3, 5, 6, 7}, dev());
  EXPECT_EQ(gap(y).sizes().vec(), (std::vector<int64_t>{2, 3, 1, 1, 1}));
  auto [v, i] = amp->forward_with_indices(y);
  EXPECT_EQ(i.sizes().vec(), (std::vector<int64_t>{2, 3, 2, 3, 4}));
  EXPECT_TRUE(names([&] { F::adaptive_avg_pool3d(y, {0, 1, 1}); }, "adaptive_avg_pool3d"));
  EXPECT_TRUE(names([&] { F::adaptive_max_pool3d(y.flatten(2), 2); }, "adaptive_max_pool3d"));
  EXPECT_TRUE(names([&] { F::adaptive_max_pool3d_with_indices(y, {1, -1, 1}); }, "adaptive_max_pool3d_with_indices"));
}

TEST_P(ConvTranspose3d, MatchesTheLoops) {
  struct Case {
    std::vector<int64_t> x, w;
    F::Triple s, p, op;
    int64_t groups;
    F::Triple d;
  };
  const std::vector<Case> cases = {
      {{2, 3, 3, 4, 3}, {3, 2, 3, 3, 3}, 1, 0, 0, 1, 1},
      {{1, 4, 3, 3, 4}, {4, 3, 2, 3, 2}, {2, 1, 2}, {1, 0, 1}, {1, 0, 1}, 2, 1},
      {{2, 2, 4, 3, 3}, {2, 2, 2, 2, 3}, {3, 2, 1}, {0, 1, 1}, {2, 1, 0}, 1, {2, 1, 1}},
      {{1, 2, 2, 3, 2}, {2, 1, 3, 2, 2}, 2, 1, 0, 2, {1, 2, 2}},
      {{1, 2, 3, 2, 2}, {2, 2, 1, 1, 1}, {3, 1, 2}, 0, {1, 0, 1}, 1, 1},
  };
  for (Dtype dt : {kFloat64, kFloat32})
    for (size_t ci = 0; ci < cases.size(); ++ci) {
      const Case& c = cases[ci];
      Tensor x = randn(c.x, TensorOptions(dt).device(dev()));
      Tensor w = randn(c.w, TensorOptions(dt).device(dev()));
      Tensor b = randn({c.w[1] * c.groups}, TensorOptions(dt).device(dev()));
      const double tol = dt == kFloat64 ? 1e-10 : 1e-4;
      std::vector<int64_t> shape;
      const std::string what = "case " + std::to_string(ci);
      auto want = conv_transpose_reference(x, w, b, c.s, c.p, c.op, c.groups, c.d, shape);
      expect_values(F::conv_transpose3d(x, w, b, c.s, c.p, c.op, c.groups, c.d), shape, want, tol, what);
      want = conv_transpose_reference(x, w, {}, c.s, c.p, c.op, c.groups, c.d, shape);
      expect_values(F::conv_transpose3d(x, w, {}, c.s, c.p, c.op, c.groups, c.d), shape, want, tol, what + " no bias");
    }
  // Unbatched and non-contiguous inputs; the keyword form.
  Tensor w = randn({3, 2, 2, 2, 2}, TensorOptions(kFloat64).device(dev()));
  Tensor xu = randn({3, 2, 3, 4}, TensorOptions(kFloat64).device(dev()));
  std::vector<int64_t> shape;
  auto want = conv_transpose_reference(xu.unsqueeze(0), w, {}, 2, 0, 0, 1, 1, shape);
  shape.erase(shape.begin());
  expect_values(F::conv_transpose3d(xu, w, {}, 2), shape, want, 1e-10, "unbatched");
  Tensor xt = randn({1, 3, 4, 3, 2}, TensorOptions(kFloat64).device(dev())).transpose(2, 4);
  want = conv_transpose_reference(xt, w, {}, {1, 2, 2}, 1, {0, 1, 1}, 1, 1, shape);
  expect_values(F::conv_transpose3d(xt, w, F::ConvTranspose3dFuncOptions().stride({1, 2, 2}).padding(1).output_padding(
                                              {0, 1, 1})),
                shape, want, 1e-10, "non-contiguous");
}

TEST_P(ConvTranspose3d, Gradients) {
  auto x = wick::testing::rnd({1, 2, 2, 3, 2}), w = wick::testing::rnd({2, 2, 2, 2, 2}), b = wick::testing::rnd({4});
  wick::testing::gradcheck(
      [](const std::vector<Tensor>& a) {
        return F::conv_transpose3d(a[0], a[1], a[2], {2, 1, 2}, {1, 0, 0}, {1, 0, 1}, 2, {1, 2, 1});
      },
      {x, w, b}, dev());
}

TEST_P(ConvTranspose3d, ModulePrintingInitAndErrors) {
  nn::ConvTranspose3d up(nn::ConvTranspose3dOptions(4, 6, 3).stride({2, 2, 1}).padding(1).groups(2).bias(false));
  up->to(dev());
  EXPECT_EQ(up->weight.sizes().vec(), (std::vector<int64_t>{4, 3, 3, 3, 3}));
  EXPECT_EQ(repr(*up),
            "ConvTranspose3d(4, 6, kernel_size=(3, 3, 3), stride=(2, 2, 1), padding=(1, 1, 1), groups=2, bias=False)");
  Tensor x = randn({2, 4, 3, 4, 5}, dev());
  EXPECT_EQ(up(x).sizes().vec(), (std::vector<int64_t>{2, 6, 5, 7, 5}));
  // output_size picks the output padding.
  EXPECT_EQ(up(x, std::vector<int64_t>{6, 8, 5}).sizes().vec(), (std::vector<int64_t>{2, 6, 6, 8, 5}));
  EXPECT_EQ(up(x, std::vector<int64_t>{2, 6, 6, 7, 5}).sizes().vec(), (std::vector<int64_t>{2, 6, 6, 7, 5}));
  EXPECT_TRUE(names([&] { up(x, std::vector<int64_t>{7, 8, 5}); }, "ConvTranspose3d"));
  nn::ConvTranspose3d plain(3, 8, 2);
  EXPECT_EQ(repr(*plain), "ConvTranspose3d(3, 8, kernel_size=(2, 2, 2), stride=(1, 1, 1))");
  // kaiming_uniform_(a = sqrt(5)): bound 1 / sqrt(fan_in), fan_in = 8 output channels * 2 * 2 * 2.
  const double bound = 1 / std::sqrt(64.0);
  EXPECT_LE(plain->weight.abs().max().item<double>(), bound);
  EXPECT_LE(plain->bias.abs().max().item<double>(), bound);
  nn::ConvTranspose3d op(nn::ConvTranspose3dOptions(2, 2, 3).stride(2).output_padding({1, 0, 1}).dilation({1, 2, 1}));
  EXPECT_EQ(repr(*op), "ConvTranspose3d(2, 2, kernel_size=(3, 3, 3), stride=(2, 2, 2), dilation=(1, 2, 1), "
                       "output_padding=(1, 0, 1))");
  EXPECT_THROW(nn::ConvTranspose3d(nn::ConvTranspose3dOptions(3, 4, 3).groups(2)), ValueError);

  Tensor w = randn({4, 2, 2, 2, 2}, dev());
  const std::string op_name = "conv_transpose3d";
  EXPECT_TRUE(names([&] { F::conv_transpose3d(x, w.flatten(0, 1)); }, op_name));
  EXPECT_TRUE(names([&] { F::conv_transpose3d(x.flatten(2), w); }, op_name));
  EXPECT_TRUE(names([&] { F::conv_transpose3d(randn({1, 3, 2, 2, 2}, dev()), w); }, op_name));
  EXPECT_TRUE(names([&] { F::conv_transpose3d(x, w, {}, 1, 0, 1); }, op_name));  // output_padding >= stride
  EXPECT_TRUE(names([&] { F::conv_transpose3d(x, w, {}, 0); }, op_name));
  EXPECT_TRUE(names([&] { F::conv_transpose3d(x, w, {}, 1, -1); }, op_name));
  EXPECT_TRUE(names([&] { F::conv_transpose3d(x, w, randn({3}, dev())); }, op_name));
}

WICK_INSTANTIATE_ON_DEVICES(MaxPool3d);
WICK_INSTANTIATE_ON_DEVICES(AvgPool3d);
WICK_INSTANTIATE_ON_DEVICES(AdaptivePool3d);
WICK_INSTANTIATE_ON_DEVICES(ConvTranspose3d);

}  // namespace
