// median, round(decimals), index_fill, masked_scatter, Tensor::type, atan2, erfinv, asinh, acosh
// and atanh beyond the op table (ops_table_test.cpp has their elementwise values on every
// layout): values against references computed here with plain loops over float64 or by hand,
// the results PyTorch gives at NaN, ties and empty inputs, gradients by central differences,
// autograd's node names, and the errors PyTorch raises, on every device present.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include <gtest/gtest.h>

#include "../autograd/gradcheck.h"
#include "op_reference.h"
#include "wick/wick.h"

using namespace wick;
using namespace wick::test;
using wick::testing::gradcheck;
using T = std::vector<Tensor>;

namespace {

const double kNan = std::numeric_limits<double>::quiet_NaN();

std::vector<double> values(const Tensor& t) { return t.cpu().to(kFloat64).contiguous().to_vector<double>(); }

class SelectFillOps : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override {
    if (GetParam().is_cuda() && !cuda::is_available()) GTEST_SKIP() << "no CUDA device";
    manual_seed(11);
  }
  Device dev() const { return GetParam(); }
  Tensor on(std::vector<double> v, Dtype dt = kFloat32) const {
    return tensor(v, TensorOptions(kFloat64)).to(dev(), dt);
  }
};

// The lower median of v by sorting a copy; NaN if v holds one.
double median_ref(std::vector<double> v) {
  if (std::any_of(v.begin(), v.end(), [](double x) { return std::isnan(x); })) return kNan;
  std::sort(v.begin(), v.end());
  return v[(v.size() - 1) / 2];
}

TEST_P(SelectFillOps, MedianAllAndAlongADim) {
  std::mt19937 rng(4);
  for (Dtype dt : {kFloat32, kFloat64, kInt64, kInt32, kBFloat16}) {
    for (int64_t n : {1, 2, 5, 8}) {
      Host h = random_host({3, n}, dt, Domain::Any, rng);
      Tensor x = tensor(h.v, TensorOptions(kFloat64)).reshape({3, n}).to(dev(), dt);
      Tensor m = median(x);
      EXPECT_EQ(m.dim(), 0);
      EXPECT_EQ(m.dtype(), dt);
      EXPECT_EQ(values(m)[0], median_ref(h.v));
      // Along dim 1 of the transposed view (non-contiguous): per column of x.t().
      auto [v, i] = x.t().median(1);
      auto [vk, ik] = median(x, 1, true);
      ASSERT_EQ(v.sizes(), (std::vector<int64_t>{n}));
      ASSERT_EQ(vk.sizes(), (std::vector<int64_t>{3, 1}));
      for (int64_t r = 0; r < 3; ++r) {
        std::vector<double> row(h.v.begin() + r * n, h.v.begin() + (r + 1) * n);
        EXPECT_EQ(values(vk)[size_t(r)], median_ref(row));
        // The index points at an element equal to the median.
        EXPECT_EQ(row[size_t(values(ik)[size_t(r)])], median_ref(row));
      }
      for (int64_t c = 0; c < n; ++c) {
        std::vector<double> col;
        for (int64_t r = 0; r < 3; ++r) col.push_back(h.v[size_t(r * n + c)]);
        EXPECT_EQ(values(v)[size_t(c)], median_ref(col));
        EXPECT_EQ(col[size_t(values(i)[size_t(c)])], median_ref(col));
      }
    }
  }
}

TEST_P(SelectFillOps, MedianNanEmptyAndErrors) {
  // PyTorch: NaN propagates, and the index is the first NaN's.
  auto [v, i] = on({1, kNan, 0, kNan}).reshape({1, 4}).median(1);
  EXPECT_TRUE(std::isnan(values(v)[0]));
  EXPECT_EQ(values(i)[0], 1);
  EXPECT_TRUE(std::isnan(values(median(on({1, kNan, 0})))[0]));
  EXPECT_TRUE(std::isnan(values(median(on({})))[0]));
  // A 0-d tensor is its own median, at index 0.
  auto [v0, i0] = on({2.5}).reshape({}).median(0);
  EXPECT_EQ(values(v0)[0], 2.5);
  EXPECT_EQ(values(i0)[0], 0);
  // An empty slice raises; empty slices elsewhere give an empty result.
  expect_error<IndexError>([&] { median(zeros({2, 0}, TensorOptions().device(dev())), 1); }, "median", "dim 0");
  auto [ve, ie] = median(zeros({0, 2}, TensorOptions().device(dev())), 1);
  EXPECT_EQ(ve.sizes(), (std::vector<int64_t>{0}));
  expect_error<TypeError>([&] { median(ones({3}, TensorOptions(kBool).device(dev()))); }, "median", "bool");
  expect_error<IndexError>([&] { median(on({1, 2}), 1); }, "median", "dim out of range");
  expect_error<IndexError>([&] { median(zeros({0}, TensorOptions(kInt64).device(dev()))); }, "median",
                           "empty integer");
}

TEST_P(SelectFillOps, MedianGradientsAndNodes) {
  // The all-elements form shares the gradient among the elements equal to the median.
  Tensor x = on({1, 2, 2, 3}, kFloat64).requires_grad_();
  Tensor m = median(x);
  EXPECT_EQ(m.grad_fn()->name(), "MedianBackward0");
  m.backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{0, 0.5, 0.5, 0}));
  Tensor y = on({4, 1, 3, 0, 9, 7}, kFloat64).reshape({2, 3}).requires_grad_();
  auto [v, i] = y.median(1);
  EXPECT_EQ(v.grad_fn()->name(), "MedianBackward1");
  (v * on({1, 10}, kFloat64)).sum().backward();
  EXPECT_EQ(values(y.grad()), (std::vector<double>{0, 0, 1, 0, 0, 10}));
  gradcheck([](const T& a) { return std::get<0>(a[0].median(0, true)); },
            {wick::testing::rnd({5, 3})}, dev());
  gradcheck([](const T& a) { return median(a[0]); }, {wick::testing::rnd({7})}, dev());
}

TEST_P(SelectFillOps, RoundToDecimals) {
  std::mt19937 rng(8);
  std::uniform_real_distribution<double> u(-300, 300);
  std::vector<double> v(64);
  for (auto& x : v) x = u(rng);
  for (int64_t d : {0, 1, 2, 3, -1, -2}) {
    // float64: PyTorch's formula in double; the result is checked against it exactly.
    Tensor r = round(on(v, kFloat64), d);
    const double p = std::pow(10.0, double(std::abs(d)));
    for (size_t k = 0; k < v.size(); ++k) {
      const double want = d >= 0 ? std::nearbyint(v[k] * p) / p : std::nearbyint(v[k] / p) * p;
      EXPECT_EQ(values(r)[k], want) << v[k] << " to " << d;
    }
    // float32 and bfloat16 (computed in float, rounded once), on a strided view.
    Tensor f = on(v, kFloat32).reshape({8, 8}).t();
    Tensor rf = f.round(d);
    std::vector<double> fv = values(f);
    for (size_t k = 0; k < fv.size(); ++k) {
      const float x = float(fv[k]), pf = float(p);
      const float want = d >= 0 ? std::nearbyint(x * pf) / pf : std::nearbyint(x / pf) * pf;
      EXPECT_EQ(float(values(rf)[k]), want);
    }
    Tensor b = on(v, kBFloat16);
    std::vector<double> bv = values(b), rb = values(b.round(d));
    for (size_t k = 0; k < bv.size(); ++k) {
      const float x = float(bv[k]), pf = float(p);
      const float want = d >= 0 ? std::nearbyint(x * pf) / pf : std::nearbyint(x / pf) * pf;
      EXPECT_EQ(rb[k], values(tensor({double(want)}).to(kBFloat16))[0]);
    }
  }
  EXPECT_EQ(values(round(on({1.2345, 125, 0.125}), 2)), (std::vector<double>{1.23f, 125, 0.12f}));
  EXPECT_EQ(values(round(on({1.2345, 125, 175}), -1)), (std::vector<double>{0, 120, 180}));
  // A power of ten past the type's range is infinite, and the result NaN, as PyTorch's
  // (float64 holds 10^40, float32 does not).
  for (int64_t d : {1000, -1000, 40}) {
    for (double v : values(round(on({1.5, 0, -2.25}), d))) EXPECT_TRUE(std::isnan(v)) << d;
  }
  const std::vector<double> r40 = values(round(on({1.5, 0, -2.25}, kFloat64), 40));
  EXPECT_NEAR(r40[0], 1.5, 1e-15);
  EXPECT_EQ(r40[1], 0);
  EXPECT_NEAR(r40[2], -2.25, 1e-15);
  // In place, and the zero gradient under PyTorch's node name.
  Tensor w = on({2.345, -1.55});
  w.round_(1);
  EXPECT_EQ(values(w), (std::vector<double>{2.3f, -1.6f}));
  Tensor g = on({1.26}).requires_grad_();
  Tensor rg = g.round(1);
  EXPECT_EQ(rg.grad_fn()->name(), "RoundBackward1");
  rg.sum().backward();
  EXPECT_EQ(values(g.grad()), (std::vector<double>{0}));
  Tensor n = tensor(std::vector<int64_t>{1, 2}).to(dev());
  expect_error<TypeError>([&] { round(n, 1); }, "round", "integer input");
  expect_error<TypeError>([&] { n.round_(1); }, "round_", "integer input in place");
  EXPECT_EQ(values(n), (std::vector<double>{1, 2}));
}

TEST_P(SelectFillOps, IndexFill) {
  Tensor x = arange(12, TensorOptions(kFloat32).device(dev())).reshape({3, 4});
  Tensor idx = tensor(std::vector<int64_t>{0, -1}).to(dev());
  EXPECT_EQ(values(x.index_fill(1, idx, -5)),
            (std::vector<double>{-5, 1, 2, -5, -5, 5, 6, -5, -5, 9, 10, -5}));
  EXPECT_EQ(values(index_fill(x, 0, tensor(std::vector<int64_t>{1}).to(dev()), on({7}).reshape({}))),
            (std::vector<double>{0, 1, 2, 3, 7, 7, 7, 7, 8, 9, 10, 11}));
  // A 0-d index, a non-contiguous self, an integer self taking a float value (truncated).
  Tensor xt = x.t();
  EXPECT_EQ(values(xt.index_fill(0, tensor(int64_t(2)).to(dev()), 0)),
            (std::vector<double>{0, 4, 8, 1, 5, 9, 0, 0, 0, 3, 7, 11}));
  Tensor li = zeros({2, 3}, TensorOptions(kInt64).device(dev()));
  EXPECT_EQ(values(li.index_fill(1, tensor(std::vector<int64_t>{1}).to(dev()), 2.5)),
            (std::vector<double>{0, 2, 0, 0, 2, 0}));
  EXPECT_EQ(values(on({1.5}).reshape({}).index_fill(0, tensor(std::vector<int64_t>{0}).to(dev()), 2.5)),
            (std::vector<double>{2.5}));
  // In place.
  Tensor y = x.clone();
  y.index_fill_(0, tensor(std::vector<int64_t>{2}).to(dev()), 1);
  EXPECT_EQ(values(y), (std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7, 1, 1, 1, 1}));
  // Errors, with self unchanged.
  Tensor before = y.clone();
  expect_error<IndexError>([&] { y.index_fill_(1, tensor(std::vector<int64_t>{4}).to(dev()), 0); }, "index_fill_",
                           "index past the end");
  expect_error<IndexError>([&] { y.index_fill_(1, tensor(std::vector<int64_t>{-5}).to(dev()), 0); }, "index_fill_",
                           "index before the start");
  expect_error<IndexError>([&] { y.index_fill_(1, on({0}), 0); }, "index_fill_", "float index");
  expect_error<ValueError>([&] { y.index_fill_(1, tensor(std::vector<int64_t>{0}).to(dev()).reshape({1, 1}), 0); },
                           "index_fill_", "2-D index");
  expect_error<ValueError>([&] { y.index_fill_(1, tensor(std::vector<int64_t>{0}).to(dev()), on({1, 2})); },
                           "index_fill_", "1-D value");
  expect_error<IndexError>([&] { y.index_fill_(2, tensor(std::vector<int64_t>{0}).to(dev()), 0); }, "index_fill_",
                           "dim out of range");
  EXPECT_EQ(values(y), values(before));
  expect_error<IndexError>([&] { x.index_fill(1, tensor(std::vector<int64_t>{9}).to(dev()), 0); }, "index_fill",
                           "out of place");
}

TEST_P(SelectFillOps, IndexFillGradients) {
  Tensor x = zeros({2, 3}, TensorOptions(kFloat64).device(dev())).requires_grad_();
  Tensor v = on({3}, kFloat64).reshape({}).requires_grad_();
  Tensor idx = tensor(std::vector<int64_t>{1}).to(dev());
  Tensor y = x.index_fill(1, idx, v);
  EXPECT_EQ(y.grad_fn()->name(), "IndexFillBackward1");
  EXPECT_EQ(x.index_fill(1, idx, 2).grad_fn()->name(), "IndexFillBackward0");
  y.sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{1, 0, 1, 1, 0, 1}));
  EXPECT_EQ(values(v.grad()), (std::vector<double>{2}));
  gradcheck([idx](const T& a) { return a[0].index_fill(1, idx, a[1]); },
            {wick::testing::rnd({3, 4}), wick::testing::rnd({})}, dev());
  // In place on a non-leaf records the same node.
  Tensor z = wick::testing::rnd({2, 3}, false).to(dev()).requires_grad_();
  Tensor w = z * 2;
  w.index_fill_(0, tensor(std::vector<int64_t>{0}).to(dev()), 0);
  w.sum().backward();
  EXPECT_EQ(values(z.grad()), (std::vector<double>{0, 0, 0, 2, 2, 2}));
}

TEST_P(SelectFillOps, MaskedScatter) {
  Tensor self = zeros({2, 3}, TensorOptions().device(dev()));
  Tensor mask = tensor(std::vector<double>{1, 0, 1}).to(dev(), kBool);
  Tensor src = arange(6, TensorOptions(kFloat32).device(dev()));
  EXPECT_EQ(values(self.masked_scatter(mask, src)), (std::vector<double>{0, 0, 1, 2, 0, 3}));
  // self broadcast to the mask's shape; source read row-major from a non-contiguous view.
  Tensor wide = ones({2, 3}, TensorOptions(kBool).device(dev()));
  Tensor srct = src.reshape({3, 2}).t();  // 0 2 4 / 1 3 5
  EXPECT_EQ(values(masked_scatter(zeros({3}, TensorOptions().device(dev())), wide, srct)),
            (std::vector<double>{0, 2, 4, 1, 3, 5}));
  // Random masks against a loop.
  std::mt19937 rng(2);
  for (Dtype dt : {kFloat32, kFloat64, kInt64, kBFloat16}) {
    Host hs = random_host({4, 5}, dt, Domain::Any, rng), hsrc = random_host({25}, dt, Domain::Any, rng);
    Host hm = random_host({4, 5}, kBool, Domain::Bool, rng);
    Tensor s = tensor(hs.v, TensorOptions(kFloat64)).reshape({4, 5}).to(dev(), dt);
    Tensor m = tensor(hm.v, TensorOptions(kFloat64)).reshape({4, 5}).to(dev(), kBool);
    Tensor so = tensor(hsrc.v, TensorOptions(kFloat64)).to(dev(), dt);
    std::vector<double> want = hs.v;
    size_t k = 0;
    for (size_t p = 0; p < want.size(); ++p)
      if (hm.v[p] != 0) want[p] = hsrc.v[k++];
    EXPECT_EQ(values(s.masked_scatter(m, so)), want);
    Tensor inplace = s.clone();
    inplace.masked_scatter_(m, so);
    EXPECT_EQ(values(inplace), want);
  }
  // Errors, self unchanged.
  Tensor keep = self.clone();
  expect_error<ValueError>([&] { self.masked_scatter_(mask, arange(3, TensorOptions(kFloat32).device(dev()))); },
                           "masked_scatter_", "short source");
  expect_error<TypeError>([&] { self.masked_scatter_(mask.to(kUInt8), src); }, "masked_scatter_", "uint8 mask");
  expect_error<TypeError>([&] { self.masked_scatter_(mask, src.to(kInt64)); }, "masked_scatter_", "dtype");
  expect_error<ValueError>([&] { zeros({3}, TensorOptions().device(dev())).masked_scatter_(wide, src); },
                           "masked_scatter_", "mask wider than self");
  expect_error<ValueError>([&] { self.masked_scatter(ones({2}, TensorOptions(kBool).device(dev())), src); },
                           "masked_scatter", "shapes");
  EXPECT_EQ(values(self), values(keep));
  // An all-false mask reads nothing, even from an empty source.
  EXPECT_EQ(values(self.masked_scatter(zeros({3}, TensorOptions(kBool).device(dev())),
                                       zeros({0}, TensorOptions().device(dev())))),
            values(keep));
}

TEST_P(SelectFillOps, MaskedScatterGradients) {
  Tensor x = zeros({2, 3}, TensorOptions(kFloat64).device(dev())).requires_grad_();
  Tensor s = arange(6, TensorOptions(kFloat64).device(dev())).requires_grad_();
  Tensor mask = tensor(std::vector<double>{1, 0, 1}).to(dev(), kBool);
  Tensor y = x.masked_scatter(mask, s);
  EXPECT_EQ(y.grad_fn()->name(), "MaskedScatterBackward0");
  (y * arange(6, TensorOptions(kFloat64).device(dev())).reshape({2, 3})).sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{0, 1, 0, 0, 4, 0}));
  EXPECT_EQ(values(s.grad()), (std::vector<double>{0, 2, 3, 5, 0, 0}));
  gradcheck([mask](const T& a) { return a[0].masked_scatter(mask, a[1]); },
            {wick::testing::rnd({2, 3}), wick::testing::rnd({2, 4})}, dev());
}

TEST_P(SelectFillOps, ElementwiseGradientsNodesAndEdges) {
  gradcheck([](const T& a) { return atan2(a[0], a[1]); },
            {wick::testing::rnd({2, 3}), wick::testing::rnd({3})}, dev());
  gradcheck([](const T& a) { return asinh(a[0]); }, {wick::testing::rnd({2, 3})}, dev());
  gradcheck([](const T& a) { return acosh(a[0].abs() + 1.5); }, {wick::testing::rnd({2, 3})}, dev());
  gradcheck([](const T& a) { return atanh(a[0] * 0.3); }, {wick::testing::rnd({2, 3})}, dev());
  gradcheck([](const T& a) { return erfinv(a[0] * 0.3); }, {wick::testing::rnd({2, 3})}, dev());
  wick::testing::gradgradcheck([](const T& a) { return erfinv(a[0] * 0.3); }, {wick::testing::rnd({3})}, dev());
  Tensor x = on({0.5}).requires_grad_();
  EXPECT_EQ(atan2(x, x).grad_fn()->name(), "Atan2Backward0");
  EXPECT_EQ(erfinv(x).grad_fn()->name(), "ErfinvBackward0");
  EXPECT_EQ(x.asinh().grad_fn()->name(), "AsinhBackward0");
  EXPECT_EQ(acosh(x + 1).grad_fn()->name(), "AcoshBackward0");
  EXPECT_EQ(atanh(x).grad_fn()->name(), "AtanhBackward0");
  // PyTorch's values at the edges (float64; float32 and CUDA's erfinvf agree to a few ulp).
  for (Dtype dt : {kFloat64, kFloat32}) {
    std::vector<double> e = values(erfinv(on({-1, 1, 0.5, 1.5, -0.999999, 1e-30, 0, kNan}, dt)));
    EXPECT_EQ(e[0], -INFINITY);
    EXPECT_EQ(e[1], INFINITY);
    EXPECT_NEAR(e[2], 0.4769362762044699, 1e-6);
    EXPECT_TRUE(std::isnan(e[3]));
    EXPECT_NEAR(e[4], -3.458910737283175, dt == kFloat64 ? 1e-9 : 0.02);
    EXPECT_NEAR(e[5], 8.862269254527580e-31, 1e-36);
    EXPECT_EQ(e[6], 0);
    EXPECT_TRUE(std::isnan(e[7]));
  }
  std::vector<double> a = values(atan2(on({1, -1, 0, 0, -0.0}), on({0, -2, 1, -1, -1})));
  EXPECT_NEAR(a[0], M_PI / 2, 1e-6);
  EXPECT_NEAR(a[1], std::atan2(-1.0, -2.0), 1e-6);
  EXPECT_EQ(a[2], 0);
  EXPECT_NEAR(a[3], M_PI, 1e-6);
  EXPECT_NEAR(a[4], -M_PI, 1e-6);
  // Integer atan2 gives the default float; in place on an integer tensor cannot hold it.
  Tensor i = tensor(std::vector<int64_t>{1, -1}).to(dev());
  EXPECT_EQ(atan2(i, i).dtype(), kFloat32);
  EXPECT_THROW(i.atan2_(on({1, 2})), TypeError);
  EXPECT_EQ(values(i), (std::vector<double>{1, -1}));
  EXPECT_TRUE(std::isnan(values(acosh(on({0.5})))[0]));
  EXPECT_EQ(values(atanh(on({1, -1}))), (std::vector<double>{INFINITY, -INFINITY}));
}

TEST_P(SelectFillOps, TypeIsACast) {
  Tensor x = on({1.5, -2.5});
  Tensor y = x.type(kInt32);
  EXPECT_EQ(y.dtype(), kInt32);
  EXPECT_EQ(values(y), (std::vector<double>{1, -2}));
  EXPECT_EQ(y.device(), dev());
}

INSTANTIATE_TEST_SUITE_P(Devices, SelectFillOps, ::testing::Values(Device(kCPU), Device(kCUDA, 0)),
                         [](const auto& info) { return info.param.is_cuda() ? "cuda" : "cpu"; });

}  // namespace
