// binary_cross_entropy / BCELoss, smooth_l1_loss / SmoothL1Loss, leaky_relu / LeakyReLU and
// dropout2d / Dropout2d: values against float64 formulas written out here, gradients by
// gradcheck and against PyTorch's formulas (BCE's at probabilities 0 and 1), on the CPU and,
// when present, on CUDA.
#include <cmath>

#include <gtest/gtest.h>

#include "../autograd/gradcheck.h"
#include "nn_test_util.h"
#include "wick/wick.h"

using namespace wick;
using wick::testing::error_of;
using wick::testing::expect_close;
using wick::testing::gradcheck;
using wick::testing::test_devices;
using TL = std::vector<Tensor>;
namespace F = wick::nn::functional;

namespace {

std::vector<double> values(const Tensor& t) { return t.detach().cpu().to(kFloat64).to_vector<double>(); }

double reduce(const std::vector<double>& v, const std::string& r) {
  double s = 0;
  for (double x : v) s += x;
  return r == "mean" ? s / double(v.size()) : s;
}

TEST(LossesMore, BinaryCrossEntropyValues) {
  for (Device d : test_devices()) {
    SCOPED_TRACE(d.str());
    Tensor x = tensor({0.1, 0.5, 0.9, 0.0, 1.0, 0.3}, kFloat64).view({2, 3});
    Tensor t = tensor({0.0, 1.0, 1.0, 0.0, 0.0, 0.7}, kFloat64).view({2, 3});
    Tensor w = tensor({1.0, 2.0, 0.5}, kFloat64);
    std::vector<double> want;
    auto xs = values(x), ts = values(t), ws = values(w);
    for (size_t i = 0; i < 6; ++i) {
      const double lx = std::max(std::log(xs[i]), -100.0), l1x = std::max(std::log(1 - xs[i]), -100.0);
      want.push_back(-ws[i % 3] * (ts[i] * lx + (1 - ts[i]) * l1x));
    }
    expect_close(F::binary_cross_entropy(x.to(d), t.to(d), w.to(d), "none"), want, 1e-12);
    EXPECT_NEAR(F::binary_cross_entropy(x.to(d), t.to(d), w.to(d)).item().to<double>(), reduce(want, "mean"), 1e-12);
    EXPECT_NEAR(F::binary_cross_entropy(x.to(d), t.to(d), w.to(d), "sum").item().to<double>(), reduce(want, "sum"),
                1e-12);
    // Probability 1 with target 0 (weight 2): log(0) clamped to -100.
    EXPECT_NEAR(want[4], 2 * 100.0, 1e-12);
    // float32, and the module.
    nn::BCELoss loss(nn::BCELossOptions().weight(w.to(kFloat32)));
    if (d.is_cuda()) loss->to(d);
    Tensor l32 = loss(x.to(kFloat32).to(d), t.to(kFloat32).to(d));
    EXPECT_EQ(l32.dtype(), kFloat32);
    EXPECT_NEAR(l32.item().to<double>(), reduce(want, "mean"), 1e-5);
  }
}

TEST(LossesMore, BinaryCrossEntropyGradients) {
  for (Device d : test_devices()) {
    SCOPED_TRACE(d.str());
    Tensor x = (rand({4, 3}, kFloat64) * 0.8 + 0.1).requires_grad_();
    Tensor t = rand({4, 3}, kFloat64).requires_grad_();
    Tensor w = rand({3}, kFloat64) + 0.5;
    for (std::string red : {"none", "mean", "sum"}) {
      SCOPED_TRACE(red);
      gradcheck([=](const TL& a) { return F::binary_cross_entropy(a[0], a[1], w.to(a[0].device()), red); }, {x, t}, d);
      gradcheck([=](const TL& a) { return F::binary_cross_entropy(a[0], a[1], {}, red); }, {x, t}, d);
    }
    Tensor xd = x.detach().to(d).requires_grad_();
    Tensor out = F::binary_cross_entropy(xd, t.detach().to(d));
    EXPECT_EQ(out.grad_fn()->name(), "BinaryCrossEntropyBackward0");
    // At probabilities 0 and 1, PyTorch's gradient (x - t) / max(x (1 - x), 1e-12) stays finite.
    Tensor edge = tensor({0.0, 1.0, 1.0}, kFloat64).to(d).requires_grad_();
    Tensor et = tensor({0.0, 0.0, 1.0}, kFloat64).to(d);
    F::binary_cross_entropy(edge, et, {}, "sum").backward();
    const auto eg = values(edge.grad());
    EXPECT_EQ(eg[0], 0.0);
    EXPECT_NEAR(eg[1], 1e12, 1e-3);
    EXPECT_EQ(eg[2], 0.0);
  }
}

TEST(LossesMore, BinaryCrossEntropyErrors) {
  Tensor x = tensor({0.5, 0.5}), t = tensor({1.0, 0.0, 1.0});
  EXPECT_EQ(error_of([&] { F::binary_cross_entropy(x, t); }),
            "[binary_cross_entropy] Using a target size ([3]) that is different to the input size ([2]) is "
            "deprecated. Please ensure they have the same size.");
  EXPECT_NE(error_of([&] { F::binary_cross_entropy(x, tensor({1.0f, 0.0f}), {}, "avg"); }).find("[binary_cross_entropy]"),
            std::string::npos);
  EXPECT_NE(error_of([&] { F::binary_cross_entropy(x, tensor({1.0f, 0.0f}), tensor({1.0f, 2.0f, 3.0f})); })
                .find("[binary_cross_entropy]"),
            std::string::npos);
}

TEST(LossesMore, SmoothL1Loss) {
  for (Device d : test_devices()) {
    SCOPED_TRACE(d.str());
    Tensor x = tensor({0.0, 0.3, -2.0, 1.5, 0.9, -0.1}, kFloat64);
    Tensor t = tensor({0.1, -0.5, 0.0, 1.5, 0.2, 0.4}, kFloat64);
    for (double beta : {1.0, 0.5, 0.0}) {
      SCOPED_TRACE(beta);
      std::vector<double> want;
      auto xs = values(x), ts = values(t);
      for (size_t i = 0; i < xs.size(); ++i) {
        const double a = std::abs(xs[i] - ts[i]);
        want.push_back(a < beta ? 0.5 * a * a / beta : a - 0.5 * beta);
      }
      expect_close(F::smooth_l1_loss(x.to(d), t.to(d), "none", beta), want, 1e-12);
      EXPECT_NEAR(F::smooth_l1_loss(x.to(d), t.to(d), "mean", beta).item().to<double>(), reduce(want, "mean"), 1e-12);
      nn::SmoothL1Loss m(nn::SmoothL1LossOptions().reduction("sum").beta(beta));
      EXPECT_NEAR(m(x.to(d), t.to(d)).item().to<double>(), reduce(want, "sum"), 1e-12);
      Tensor a = (randn({3, 4}, kFloat64)).requires_grad_(), b = randn({3, 4}, kFloat64).requires_grad_();
      gradcheck([=](const TL& v) { return F::smooth_l1_loss(v[0], v[1], "mean", beta); }, {a, b}, d);
    }
    // The gradient, d/dx: (x - t) / beta inside, sign(x - t) outside.
    Tensor xg = x.to(d).requires_grad_();
    F::smooth_l1_loss(xg, t.to(d), "sum", 1.0).backward();
    expect_close(xg.grad(), std::vector<double>{-0.1, 0.8, -1.0, 0.0, 0.7, -0.5}, 1e-12);
  }
  EXPECT_EQ(error_of([] { F::smooth_l1_loss(tensor({1.0}), tensor({1.0}), "mean", -1); }),
            "[smooth_l1_loss] smooth_l1_loss does not support negative values for beta.");
}

TEST(LossesMore, LeakyReLU) {
  for (Device d : test_devices()) {
    SCOPED_TRACE(d.str());
    Tensor x = tensor({-2.0, -0.5, 0.0, 0.5, 3.0}, kFloat64).to(d);
    expect_close(F::leaky_relu(x), std::vector<double>{-0.02, -0.005, 0.0, 0.5, 3.0}, 1e-15);
    nn::LeakyReLU m(nn::LeakyReLUOptions().negative_slope(0.2));
    expect_close(m(x), std::vector<double>{-0.4, -0.1, 0.0, 0.5, 3.0}, 1e-15);
    expect_close(m(x.to(kFloat32)), std::vector<double>{-0.4, -0.1, 0.0, 0.5, 3.0}, 1e-7);
    Tensor xg = x.clone().requires_grad_();
    F::leaky_relu(xg, 0.2).sum().backward();
    // PyTorch's gradient at 0 is negative_slope.
    EXPECT_EQ(values(xg.grad()), (std::vector<double>{0.2, 0.2, 0.2, 1.0, 1.0}));
    gradcheck([](const TL& v) { return F::leaky_relu(v[0], 0.1); }, {(randn({3, 4}, kFloat64)).requires_grad_()}, d);
    // A strided view.
    Tensor v = tensor({-1.0, 2.0, -3.0, 4.0}, kFloat64).view({2, 2}).to(d).t();
    expect_close(F::leaky_relu(v, 0.5), std::vector<double>{-0.5, -1.5, 2.0, 4.0}, 1e-15);
  }
  EXPECT_EQ(nn::LeakyReLU(nn::LeakyReLUOptions(0.2))->extra_repr(), "negative_slope=0.2");
}

TEST(LossesMore, Dropout2dDropsWholeChannels) {
  for (Device d : test_devices()) {
    SCOPED_TRACE(d.str());
    manual_seed(7);
    Tensor x = (rand({8, 16, 3, 5}, kFloat64) + 1).to(d);  // no zeros of its own
    Tensor y = F::dropout2d(x, 0.25, true);
    Tensor ratio = (y / x).cpu();
    int64_t dropped = 0;
    for (int64_t n = 0; n < 8; ++n) {
      for (int64_t c = 0; c < 16; ++c) {
        auto r = values(ratio.select(0, n).select(0, c));
        // One value per channel: 0, or 1 / (1 - p).
        for (double v : r) EXPECT_NEAR(v, r[0], 1e-12);
        EXPECT_TRUE(std::abs(r[0]) < 1e-12 || std::abs(r[0] - 1 / 0.75) < 1e-12) << r[0];
        dropped += r[0] == 0;
      }
    }
    EXPECT_GT(dropped, 10);  // about 32 of 128
    EXPECT_LT(dropped, 60);
    // Gradients: the same mask, scaled.
    Tensor xg = x.clone().requires_grad_();
    manual_seed(11);
    Tensor yg = F::dropout2d(xg, 0.5, true);
    yg.sum().backward();
    expect_close(xg.grad(), yg.detach() / x, 1e-12, 0);
    // Eval mode, p = 0 and p = 1.
    nn::Dropout2d m(nn::Dropout2dOptions(0.5));
    m->eval();
    EXPECT_TRUE(m(x).is_same(x));
    EXPECT_TRUE(F::dropout2d(x, 0.0, true).is_same(x));
    EXPECT_EQ(values(F::dropout2d(x, 1.0, true).sum())[0], 0.0);
    // Unbatched-looking 3-D input: a mask per (dim 0, dim 1) pair, as PyTorch's.
    Tensor x3 = ones({4, 6, 10}, kFloat64).to(d);
    Tensor y3 = F::dropout2d(x3, 0.5, true).cpu();
    for (int64_t a = 0; a < 4; ++a)
      for (int64_t b = 0; b < 6; ++b) {
        auto r = values(y3.select(0, a).select(0, b));
        for (double v : r) EXPECT_EQ(v, r[0]);
      }
  }
  EXPECT_EQ(error_of([] { F::dropout2d(ones({3}), 0.5, true); }),
            "[dropout2d] Feature dropout requires at least 2 dimensions in the input");
  EXPECT_EQ(error_of([] { nn::Dropout2d(nn::Dropout2dOptions(1.5)); }),
            "[Dropout2d] dropout probability has to be between 0 and 1, but got 1.5");
}

}  // namespace
