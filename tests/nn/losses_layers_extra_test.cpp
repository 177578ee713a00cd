// MarginRankingLoss, TripletMarginLoss, CosineEmbeddingLoss, PoissonNLLLoss, GaussianNLLLoss,
// HingeEmbeddingLoss, SoftMarginLoss, MultiLabelSoftMarginLoss, Hardshrink, Softmin, GLU,
// Dropout1d, Dropout3d, LocalResponseNorm and ChannelShuffle: values against float64 loops of
// PyTorch's documented formulas (broadcast and non-contiguous inputs, every reduction),
// gradients against central differences, the errors and the printing; on the CPU and, when
// present, on CUDA.
#include <cmath>
#include <limits>
#include <numbers>

#include <gtest/gtest.h>

#include "../autograd/gradcheck.h"
#include "nn_test_util.h"
#include "wick/nn/activation_more.h"
#include "wick/nn/loss_more.h"
#include "wick/wick.h"

using namespace wick;
using wick::testing::error_of;
using wick::testing::expect_close;
using wick::testing::gradcheck;
using wick::testing::repr;
using wick::testing::test_devices;
using TL = std::vector<Tensor>;
namespace F = wick::nn::functional;

namespace {

// t's values, expanded to shape first when given (a broadcast operand read per output element).
std::vector<double> values(const Tensor& t, IntArrayRef shape = {}) {
  Tensor c = t.detach().cpu().to(kFloat64);
  if (!shape.empty()) c = c.expand(shape);
  return c.contiguous().to_vector<double>();
}

double total(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}

double scalar(const Tensor& t) { return t.item().to<double>(); }

// The loss with each reduction against want (the unreduced values): "none" elementwise, "mean"
// and "sum" as their sums.
template <class Fn>
void expect_reductions(Fn loss, const std::vector<double>& want, double atol = 1e-10) {
  expect_close(loss("none"), want, atol, "none");
  EXPECT_NEAR(scalar(loss("sum")), total(want), atol * double(want.size()) + 1e-12);
  EXPECT_NEAR(scalar(loss("mean")), total(want) / double(want.size()), atol + 1e-12);
}

// ±1 labels.
Tensor signs(IntArrayRef shape) { return (rand(shape, kFloat64) < 0.5).to(kFloat64) * 2 - 1; }

const std::vector<std::string> kReductions{"none", "mean", "sum"};

// ---- losses

TEST(ExtraLosses, MarginRankingLoss) {
  for (Device d : test_devices()) {
    SCOPED_TRACE(d.str());
    manual_seed(1);
    Tensor x1 = randn({4, 3}, kFloat64);
    Tensor x2 = randn({3, 4}, kFloat64).t();  // non-contiguous
    Tensor y = signs({1, 3});                 // broadcast over the rows
    const double margin = 0.3;
    auto a = values(x1), b = values(x2), t = values(y, {4, 3});
    std::vector<double> want;
    for (size_t i = 0; i < a.size(); ++i) want.push_back(std::max(0.0, -t[i] * (a[i] - b[i]) + margin));
    expect_reductions([&](const std::string& r) { return F::margin_ranking_loss(x1.to(d), x2.to(d), y.to(d), margin, r); },
                      want);
    nn::MarginRankingLoss m(nn::MarginRankingLossOptions().margin(margin).reduction(kSum));
    EXPECT_NEAR(scalar(m(x1.to(d), x2.to(d), y.to(d))), total(want), 1e-10);
    EXPECT_NEAR(scalar(F::margin_ranking_loss(x1.to(d), x2.to(d), y.to(d), F::MarginRankingLossFuncOptions().margin(margin))),
                total(want) / 12, 1e-10);
    // float32
    EXPECT_NEAR(scalar(m(x1.to(kFloat32).to(d), x2.to(kFloat32).to(d), y.to(kFloat32).to(d))), total(want), 1e-4);
    for (const std::string& r : kReductions) {
      SCOPED_TRACE(r);
      gradcheck([=](const TL& v) { return F::margin_ranking_loss(v[0], v[1], v[2], margin, r); },
                {x1.clone().requires_grad_(), x2.clone().requires_grad_(), y}, d);
    }
  }
  Tensor a = randn({3}), b = randn({3}), y = ones({3, 1});
  EXPECT_EQ(error_of([&] { F::margin_ranking_loss(a, b, y); }),
            "[margin_ranking_loss] margin_ranking_loss : All input tensors should have same dimension but got sizes: "
            "input1: [3], input2: [3], target: [3, 1] ");
  EXPECT_EQ(error_of([&] { F::margin_ranking_loss(a, b, ones({3}), 0.0, "avg"); }),
            "[margin_ranking_loss] avg is not a valid value for reduction");
  EXPECT_EQ(repr(*nn::MarginRankingLoss()), "MarginRankingLoss()");
}

TEST(ExtraLosses, TripletMarginLoss) {
  for (Device d : test_devices()) {
    SCOPED_TRACE(d.str());
    manual_seed(2);
    Tensor an = randn({5, 4}, kFloat64), po = randn({4, 5}, kFloat64).t(), ne = randn({5, 4}, kFloat64);
    const double eps = 1e-6;
    auto dist = [&](const std::vector<double>& x, const std::vector<double>& y, size_t row, double p) {
      double s = 0;
      for (size_t j = 0; j < 4; ++j) s += std::pow(std::abs(x[row * 4 + j] - y[row * 4 + j] + eps), p);
      return std::pow(s, 1 / p);
    };
    auto A = values(an), P = values(po), N = values(ne);
    for (double p : {2.0, 1.0, 3.0}) {
      for (bool swap : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "p " << p << " swap " << swap);
        const double margin = 0.7;
        std::vector<double> want;
        for (size_t i = 0; i < 5; ++i) {
          double dn = dist(A, N, i, p);
          if (swap) dn = std::min(dn, dist(P, N, i, p));
          want.push_back(std::max(0.0, margin + dist(A, P, i, p) - dn));
        }
        expect_reductions(
            [&](const std::string& r) { return F::triplet_margin_loss(an.to(d), po.to(d), ne.to(d), margin, p, eps, swap, r); },
            want);
        nn::TripletMarginLoss m(nn::TripletMarginLossOptions().margin(margin).p(p).swap(swap).reduction(kNone));
        expect_close(m(an.to(d), po.to(d), ne.to(d)), want, 1e-10);
        for (const std::string& r : kReductions)
          gradcheck([=](const TL& v) { return F::triplet_margin_loss(v[0], v[1], v[2], margin, p, eps, swap, r); },
                    {an.clone().requires_grad_(), po.clone().requires_grad_(), ne.clone().requires_grad_()}, d);
      }
    }
    // Defaults: margin 1, p 2, eps 1e-6, no swap, mean.
    std::vector<double> want;
    for (size_t i = 0; i < 5; ++i) want.push_back(std::max(0.0, 1.0 + dist(A, P, i, 2) - dist(A, N, i, 2)));
    EXPECT_NEAR(scalar(nn::TripletMarginLoss()(an.to(d), po.to(d), ne.to(d))), total(want) / 5, 1e-10);
  }
  EXPECT_EQ(error_of([] { F::triplet_margin_loss(randn({2, 3}), randn({3}), randn({2, 3})); }),
            "[triplet_margin_loss] The anchor, positive, and negative tensors are expected to have the same number "
            "of dimensions, but got: anchor 2D, positive 1D, and negative 2D inputs");
  EXPECT_EQ(repr(*nn::TripletMarginLoss()), "TripletMarginLoss()");
}

TEST(ExtraLosses, CosineEmbeddingLoss) {
  for (Device d : test_devices()) {
    SCOPED_TRACE(d.str());
    manual_seed(3);
    Tensor x1 = randn({6, 4}, kFloat64), x2 = randn({4, 6}, kFloat64).t();
    Tensor y = tensor({1.0, -1.0, 1.0, -1.0, -1.0, 0.0}, kFloat64);  // 0: neither, contributes 0
    const double margin = -0.2;
    auto a = values(x1), b = values(x2), t = values(y);
    std::vector<double> want;
    for (size_t i = 0; i < 6; ++i) {
      double ab = 0, aa = 0, bb = 0;
      for (size_t j = 0; j < 4; ++j) {
        ab += a[i * 4 + j] * b[i * 4 + j];
        aa += a[i * 4 + j] * a[i * 4 + j];
        bb += b[i * 4 + j] * b[i * 4 + j];
      }
      const double c = ab / std::sqrt((aa + 1e-12) * (bb + 1e-12));
      want.push_back(t[i] == 1 ? 1 - c : t[i] == -1 ? std::max(0.0, c - margin) : 0.0);
    }
    expect_reductions(
        [&](const std::string& r) { return F::cosine_embedding_loss(x1.to(d), x2.to(d), y.to(d), margin, r); }, want);
    nn::CosineEmbeddingLoss m(nn::CosineEmbeddingLossOptions().margin(margin));
    EXPECT_NEAR(scalar(m(x1.to(d), x2.to(d), y.to(d))), total(want) / 6, 1e-10);
    // One pair: 1-d inputs and a 0-d target.
    EXPECT_NEAR(scalar(F::cosine_embedding_loss(x1[0].to(d), x2[0].to(d), tensor(1.0, kFloat64).to(d))), want[0],
                1e-10);
    for (const std::string& r : kReductions)
      gradcheck([=](const TL& v) { return F::cosine_embedding_loss(v[0], v[1], v[2], margin, r); },
                {x1.clone().requires_grad_(), x2.clone().requires_grad_(), y}, d);
  }
  EXPECT_EQ(error_of([] { F::cosine_embedding_loss(randn({2, 3}), randn({2, 3}), ones({2, 1})); }),
            "[cosine_embedding_loss] 0D or 1D target tensor expected, multi-target not supported");
  EXPECT_EQ(error_of([] { F::cosine_embedding_loss(randn({3}), randn({3}), ones({1})); }),
            "[cosine_embedding_loss] 1D target tensor expects 2D input tensors, but found inputs with sizes [3] and "
            "[3].");
  EXPECT_EQ(error_of([] { F::cosine_embedding_loss(randn({2, 3}), randn({2, 3}), tensor(1.0)); }),
            "[cosine_embedding_loss] 0D target tensor expects 1D input tensors, but found inputs with sizes [2, 3] "
            "and [2, 3].");
  EXPECT_EQ(repr(*nn::CosineEmbeddingLoss()), "CosineEmbeddingLoss()");
}

TEST(ExtraLosses, PoissonNLLLoss) {
  for (Device d : test_devices()) {
    SCOPED_TRACE(d.str());
    manual_seed(4);
    Tensor log_rate = randn({4, 3}, kFloat64);
    Tensor rate = rand({3, 4}, kFloat64).t() + 0.1;  // non-contiguous, positive
    Tensor target = tensor({0.0, 1.0, 3.0}, kFloat64).view({1, 3});  // one at 0, one at 1, one above
    Tensor target_full = (rand({4, 3}, kFloat64) * 5).floor();
    for (bool log_input : {true, false}) {
      for (bool full : {false, true}) {
        for (const Tensor& tg : {target, target_full}) {
          SCOPED_TRACE(::testing::Message() << "log_input " << log_input << " full " << full);
          const double eps = 1e-8;
          Tensor in = log_input ? log_rate : rate;
          auto x = values(in), t = values(tg, {4, 3});
          std::vector<double> want;
          for (size_t i = 0; i < x.size(); ++i) {
            double l = log_input ? std::exp(x[i]) - t[i] * x[i] : x[i] - t[i] * std::log(x[i] + eps);
            if (full && t[i] > 1) l += t[i] * std::log(t[i]) - t[i] + 0.5 * std::log(2 * std::numbers::pi * t[i]);
            want.push_back(l);
          }
          expect_reductions(
              [&](const std::string& r) { return F::poisson_nll_loss(in.to(d), tg.to(d), log_input, full, eps, r); },
              want);
          nn::PoissonNLLLoss m(nn::PoissonNLLLossOptions().log_input(log_input).full(full).reduction(kNone));
          expect_close(m(in.to(d), tg.to(d)), want, 1e-10);
          for (const std::string& r : kReductions)
            gradcheck([=](const TL& v) { return F::poisson_nll_loss(v[0], v[1], log_input, full, eps, r); },
                      {in.clone().requires_grad_(), tg}, d);
        }
      }
    }
  }
  EXPECT_EQ(error_of([] { F::poisson_nll_loss(randn({2}), ones({2}), true, false, 1e-8, "avg"); }),
            "[poisson_nll_loss] avg is not a valid value for reduction");
  EXPECT_EQ(repr(*nn::PoissonNLLLoss()), "PoissonNLLLoss()");
}

TEST(ExtraLosses, GaussianNLLLoss) {
  for (Device d : test_devices()) {
    SCOPED_TRACE(d.str());
    manual_seed(5);
    Tensor input = randn({4, 3}, kFloat64), target = randn({3, 4}, kFloat64).t();
    const double eps = 1e-6;
    // var as input; without its last dim; with a last dim of 1; entries below eps clamped.
    Tensor v_full = rand({4, 3}, kFloat64) + 0.2;
    v_full.index_put_({0, 1}, 1e-9);
    Tensor v_short = rand({4}, kFloat64) + 0.2, v_one = rand({4, 1}, kFloat64) + 0.2;
    for (const Tensor& var : {v_full, v_short, v_one}) {
      for (bool full : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "var " << var.sizes() << " full " << full);
        auto x = values(input), t = values(target);
        auto v = values(var.dim() == 1 ? var.unsqueeze(-1) : var, {4, 3});
        std::vector<double> want;
        for (size_t i = 0; i < x.size(); ++i) {
          const double vc = std::max(v[i], eps);
          double l = 0.5 * (std::log(vc) + (x[i] - t[i]) * (x[i] - t[i]) / vc);
          if (full) l += 0.5 * std::log(2 * std::numbers::pi);
          want.push_back(l);
        }
        expect_reductions(
            [&](const std::string& r) { return F::gaussian_nll_loss(input.to(d), target.to(d), var.to(d), full, eps, r); },
            want);
        nn::GaussianNLLLoss m(nn::GaussianNLLLossOptions().full(full).reduction(kSum));
        EXPECT_NEAR(scalar(m(input.to(d), target.to(d), var.to(d))), total(want), 1e-8);
        if (var.numel() != 12)
          for (const std::string& r : kReductions)
            gradcheck([=](const TL& a) { return F::gaussian_nll_loss(a[0], a[1], a[2], full, eps, r); },
                      {input.clone().requires_grad_(), target.clone().requires_grad_(), var.clone().requires_grad_()},
                      d);
      }
    }
    // Below eps the clamp is not differentiated: var's gradient is the formula's at eps.
    Tensor var = tensor({1e-9, 0.5}, kFloat64).to(d).requires_grad_();
    Tensor in = tensor({0.002, 1.0}, kFloat64).to(d), tg = tensor({0.0, 0.0}, kFloat64).to(d);
    F::gaussian_nll_loss(in, tg, var, false, eps, "sum").backward();
    auto g = values(var.grad());
    EXPECT_NEAR(g[0], 0.5 * (1 / eps - 4e-6 / (eps * eps)), 1e-3);
    EXPECT_NEAR(g[1], 0.5 * (1 / 0.5 - 1.0 / 0.25), 1e-12);
  }
  Tensor x = randn({4, 3});
  EXPECT_EQ(error_of([&] { F::gaussian_nll_loss(x, x, ones({3})); }), "[gaussian_nll_loss] var is of incorrect size");
  EXPECT_EQ(error_of([&] { F::gaussian_nll_loss(x, x, ones({4, 2})); }), "[gaussian_nll_loss] var is of incorrect size");
  EXPECT_EQ(error_of([&] { F::gaussian_nll_loss(x, x, -ones({4, 3})); }),
            "[gaussian_nll_loss] var has negative entry/entries");
  EXPECT_EQ(error_of([&] { F::gaussian_nll_loss(x, x, ones({4}), false, 1e-6, "avg"); }),
            "[gaussian_nll_loss] avg is not valid");
  EXPECT_EQ(repr(*nn::GaussianNLLLoss()), "GaussianNLLLoss()");
}

TEST(ExtraLosses, HingeEmbeddingLoss) {
  for (Device d : test_devices()) {
    SCOPED_TRACE(d.str());
    manual_seed(6);
    Tensor x = randn({3, 4}, kFloat64).t();  // [4, 3] non-contiguous
    Tensor y = signs({4, 1});
    for (double margin : {1.0, 0.4}) {
      SCOPED_TRACE(margin);
      auto a = values(x), t = values(y, {4, 3});
      std::vector<double> want;
      for (size_t i = 0; i < a.size(); ++i) want.push_back(t[i] == 1 ? a[i] : std::max(0.0, margin - a[i]));
      expect_reductions([&](const std::string& r) { return F::hinge_embedding_loss(x.to(d), y.to(d), margin, r); }, want);
      nn::HingeEmbeddingLoss m(nn::HingeEmbeddingLossOptions().margin(margin));
      EXPECT_NEAR(scalar(m(x.to(d), y.to(d))), total(want) / 12, 1e-10);
      for (const std::string& r : kReductions)
        gradcheck([=](const TL& v) { return F::hinge_embedding_loss(v[0], v[1], margin, r); },
                  {x.clone().requires_grad_(), y}, d);
    }
  }
  EXPECT_EQ(repr(*nn::HingeEmbeddingLoss()), "HingeEmbeddingLoss()");
}

TEST(ExtraLosses, SoftMarginLoss) {
  for (Device d : test_devices()) {
    SCOPED_TRACE(d.str());
    manual_seed(7);
    Tensor x = randn({3, 4}, kFloat64).t();
    for (const Tensor& y : {signs({4, 3}), signs({3})}) {
      auto a = values(x), t = values(y, {4, 3});
      std::vector<double> want;
      for (size_t i = 0; i < a.size(); ++i) want.push_back(std::log(1 + std::exp(-t[i] * a[i])));
      expect_reductions([&](const std::string& r) { return F::soft_margin_loss(x.to(d), y.to(d), r); }, want);
      EXPECT_NEAR(scalar(nn::SoftMarginLoss(nn::SoftMarginLossOptions(kSum))(x.to(d), y.to(d))), total(want), 1e-10);
      for (const std::string& r : kReductions)
        gradcheck([=](const TL& v) { return F::soft_margin_loss(v[0], v[1], r); }, {x.clone().requires_grad_(), y},
                  d);
    }
  }
  EXPECT_EQ(error_of([] { F::soft_margin_loss(randn({3}), ones({2, 3})); }),
            "[soft_margin_loss] output with shape [3] doesn't match the broadcast shape [2, 3]");
  EXPECT_EQ(repr(*nn::SoftMarginLoss()), "SoftMarginLoss()");
}

TEST(ExtraLosses, MultiLabelSoftMarginLoss) {
  for (Device d : test_devices()) {
    SCOPED_TRACE(d.str());
    manual_seed(8);
    Tensor x = randn({3, 5}, kFloat64).t();  // [5, 3]
    Tensor y = (rand({5, 3}, kFloat64) < 0.5).to(kFloat64);
    Tensor w = rand({3}, kFloat64) + 0.5;
    for (bool weighted : {false, true}) {
      SCOPED_TRACE(weighted);
      auto a = values(x), t = values(y), ws = values(w);
      auto logsig = [](double v) { return -std::log1p(std::exp(-v)); };
      std::vector<double> want;
      for (size_t i = 0; i < 5; ++i) {
        double s = 0;
        for (size_t c = 0; c < 3; ++c) {
          const double v = a[i * 3 + c], tv = t[i * 3 + c];
          s += -(weighted ? ws[c] : 1.0) * (tv * logsig(v) + (1 - tv) * logsig(-v));
        }
        want.push_back(s / 3);
      }
      Tensor wd = weighted ? w.to(d) : Tensor();
      expect_reductions([&](const std::string& r) { return F::multilabel_soft_margin_loss(x.to(d), y.to(d), wd, r); },
                        want);
      nn::MultiLabelSoftMarginLoss m(nn::MultiLabelSoftMarginLossOptions().weight(weighted ? w : Tensor()));
      m->to(d);
      EXPECT_NEAR(scalar(m(x.to(d), y.to(d))), total(want) / 5, 1e-10);
      for (const std::string& r : kReductions)
        gradcheck([=](const TL& v) { return F::multilabel_soft_margin_loss(v[0], v[1], wd, r); },
                  {x.clone().requires_grad_(), y.clone().requires_grad_()}, d);
    }
  }
  nn::MultiLabelSoftMarginLoss m(nn::MultiLabelSoftMarginLossOptions().weight(ones({3})));
  EXPECT_EQ(m->named_buffers().size(), 1u);
  EXPECT_EQ(repr(*m), "MultiLabelSoftMarginLoss()");
  EXPECT_EQ(error_of([] { F::multilabel_soft_margin_loss(randn({2, 3}), ones({2, 3}), {}, "avg"); }),
            "[multilabel_soft_margin_loss] avg is not valid");
}

// ---- layers

TEST(ExtraLayers, Hardshrink) {
  for (Device d : test_devices()) {
    SCOPED_TRACE(d.str());
    const double nan = std::numeric_limits<double>::quiet_NaN();
    Tensor x = tensor({-1.0, -0.5, -0.2, 0.0, 0.3, 0.5, 0.50001, 2.0, nan}, kFloat64).to(d);
    auto want = [&](double l) {
      std::vector<double> w;
      for (double v : values(x)) w.push_back(std::isnan(v) ? v : (v >= -l && v <= l) ? 0.0 : v);
      return w;
    };
    auto got = values(F::hardshrink(x));
    auto w = want(0.5);
    for (size_t i = 0; i < w.size(); ++i)
      if (std::isnan(w[i])) EXPECT_TRUE(std::isnan(got[i]));
      else EXPECT_EQ(got[i], w[i]);
    auto got2 = values(nn::Hardshrink(nn::HardshrinkOptions(0.25))(x.to(kFloat32)));
    auto w2 = want(0.25);
    for (size_t i = 0; i + 1 < w2.size(); ++i) EXPECT_NEAR(got2[i], w2[i], 1e-6);
    Tensor r = randn({3, 4}, kFloat64).t().requires_grad_();
    gradcheck([](const TL& v) { return F::hardshrink(v[0], 0.3); }, {r}, d);
    Tensor g = x.clone().requires_grad_();
    Tensor y = F::hardshrink(g, F::HardshrinkFuncOptions().lambda(0.5));
    EXPECT_EQ(y.grad_fn()->name(), "HardshrinkBackward0");
    // The gradient passes where |x| > lambda and at NaN, as PyTorch's.
    y.sum().backward();
    expect_close(g.grad(), std::vector<double>{1, 0, 0, 0, 0, 0, 1, 1, 1}, 0.0);
  }
  EXPECT_EQ(repr(*nn::Hardshrink()), "Hardshrink(0.5)");
  EXPECT_EQ(repr(*nn::Hardshrink(1.25)), "Hardshrink(1.25)");
  EXPECT_EQ(error_of([] { F::hardshrink(ones({2}, kInt64)); }).rfind("[hardshrink] \"hardshrink_cpu\"", 0), 0u);
}

TEST(ExtraLayers, Softmin) {
  for (Device d : test_devices()) {
    SCOPED_TRACE(d.str());
    Tensor x = randn({4, 3}, kFloat64).t();  // [3, 4]
    auto a = values(x);
    for (int64_t dim : {0, 1, -1}) {
      SCOPED_TRACE(dim);
      const int64_t dd = dim < 0 ? dim + 2 : dim;
      std::vector<double> want(12);
      for (size_t i = 0; i < 3; ++i)
        for (size_t j = 0; j < 4; ++j) {
          double s = 0;
          for (size_t k = 0; k < (dd == 0 ? 3u : 4u); ++k) s += std::exp(-(dd == 0 ? a[k * 4 + j] : a[i * 4 + k]));
          want[i * 4 + j] = std::exp(-a[i * 4 + j]) / s;
        }
      expect_close(F::softmin(x.to(d), dim), want, 1e-12);
      expect_close(nn::Softmin(dim)(x.to(kFloat32).to(d)), want, 1e-6);
      expect_close(F::softmin(x.to(kFloat32).to(d), F::SoftminFuncOptions(dim).dtype(kFloat64)), want, 1e-6);
      gradcheck([=](const TL& v) { return F::softmin(v[0], dim); }, {x.clone().requires_grad_()}, d);
    }
  }
  EXPECT_EQ(repr(*nn::Softmin(1)), "Softmin(dim=1)");
  EXPECT_EQ(error_of([] { F::softmin(randn({2, 3}), 2); }).rfind("[softmin] ", 0), 0u);
}

TEST(ExtraLayers, GLU) {
  for (Device d : test_devices()) {
    SCOPED_TRACE(d.str());
    Tensor x = randn({6, 4}, kFloat64).t();  // [4, 6]
    auto a = values(x);
    auto sig = [](double v) { return 1 / (1 + std::exp(-v)); };
    std::vector<double> last, first;
    for (size_t i = 0; i < 4; ++i)
      for (size_t j = 0; j < 3; ++j) last.push_back(a[i * 6 + j] * sig(a[i * 6 + j + 3]));
    for (size_t i = 0; i < 2; ++i)
      for (size_t j = 0; j < 6; ++j) first.push_back(a[i * 6 + j] * sig(a[(i + 2) * 6 + j]));
    expect_close(F::glu(x.to(d)), last, 1e-12);
    expect_close(nn::GLU(0)(x.to(d)), first, 1e-12);
    expect_close(F::glu(x.to(kFloat32).to(d), F::GLUFuncOptions(-2)), first, 1e-6);
    for (int64_t dim : {0, 1})
      gradcheck([=](const TL& v) { return F::glu(v[0], dim); }, {x.clone().requires_grad_()}, d);
  }
  EXPECT_EQ(error_of([] { F::glu(randn({4, 5})); }),
            "[glu] Halving dimension must be even, but dimension 1 is size 5");
  EXPECT_EQ(error_of([] { F::glu(tensor(1.0)); }), "[glu] glu does not support scalars because halving size must be even");
  EXPECT_EQ(repr(*nn::GLU()), "GLU(dim=-1)");
  EXPECT_EQ(repr(*nn::GLU(1)), "GLU(dim=1)");
}

// Each channel (the last dims past the first two, or one past the first when unbatched) is
// either all zero or all x / (1 - p).
void expect_channel_dropout(const Tensor& y, const Tensor& x, double p, int64_t channels, bool& saw_zero,
                            bool& saw_kept) {
  auto a = values(x), b = values(y);
  const size_t per = a.size() / size_t(channels);
  for (size_t c = 0; c < size_t(channels); ++c) {
    const bool zero = b[c * per] == 0;
    (zero ? saw_zero : saw_kept) = true;
    for (size_t k = 0; k < per; ++k) EXPECT_NEAR(b[c * per + k], zero ? 0.0 : a[c * per + k] / (1 - p), 1e-12);
  }
}

TEST(ExtraLayers, Dropout1dAnd3d) {
  for (Device d : test_devices()) {
    SCOPED_TRACE(d.str());
    manual_seed(9);
    bool zero = false, kept = false;
    Tensor x3 = (rand({8, 16, 5}, kFloat64) + 0.5).to(d), x2 = (rand({16, 5}, kFloat64) + 0.5).to(d);
    expect_channel_dropout(F::dropout1d(x3, 0.4), x3, 0.4, 8 * 16, zero, kept);
    expect_channel_dropout(F::dropout1d(x2, F::Dropout1dFuncOptions().p(0.4)), x2, 0.4, 16, zero, kept);
    Tensor x5 = (rand({4, 8, 2, 2, 3}, kFloat64) + 0.5).to(d), x4 = (rand({8, 2, 2, 3}, kFloat64) + 0.5).to(d);
    expect_channel_dropout(F::dropout3d(x5, 0.5), x5, 0.5, 32, zero, kept);
    expect_channel_dropout(F::dropout3d(x4, F::Dropout3dFuncOptions().p(0.5)), x4, 0.5, 8, zero, kept);
    EXPECT_TRUE(zero && kept);
    EXPECT_EQ(F::dropout3d(x5, 0.5, false).equal(x5), true);
    nn::Dropout3d m(0.5);
    nn::Dropout1d m1(nn::Dropout1dOptions(0.2));
    m->eval();
    m1->eval();
    EXPECT_TRUE(m(x5).equal(x5));
    EXPECT_TRUE(m1(x3).equal(x3));
    m->train();
    expect_channel_dropout(m(x5), x5, 0.5, 32, zero, kept);
    // The gradient: the same mask, scaled.
    Tensor g = x3.clone().requires_grad_();
    Tensor y = F::dropout1d(g, 0.5);
    y.sum().backward();
    expect_close(g.grad(), (y.detach() / g.detach()), 1e-12);
  }
  EXPECT_EQ(error_of([] { F::dropout1d(randn({2, 3, 4, 5})); }),
            "[dropout1d] dropout1d: Expected 2D or 3D input, but received a 4D input. Note that dropout1d exists to "
            "provide channel-wise dropout on inputs with 1 spatial dimension, a channel dimension, and an optional "
            "batch dimension (i.e. 2D or 3D inputs).");
  EXPECT_EQ(error_of([] { F::dropout3d(randn({2, 3, 4, 5}), 1.5); }),
            "[dropout3d] dropout probability has to be between 0 and 1, but got 1.5");
  EXPECT_EQ(error_of([] { nn::Dropout1d(-0.1); }),
            "[Dropout1d] dropout probability has to be between 0 and 1, but got -0.1");
  EXPECT_EQ(repr(*nn::Dropout3d()), "Dropout3d(p=0.5, inplace=False)");
  EXPECT_EQ(repr(*nn::Dropout1d(nn::Dropout1dOptions(0.2).inplace(true))), "Dropout1d(p=0.2, inplace=True)");
}

// PyTorch's formula: x_c / (k + alpha / n sum over c' in [c - n/2, c + (n-1)/2] of x_c'^2)^beta.
std::vector<double> lrn_reference(const Tensor& x, int64_t n, double alpha, double beta, double k) {
  auto a = values(x);
  const int64_t N = x.size(0), C = x.size(1), S = x.numel() / (N * C);
  std::vector<double> out(a.size());
  for (int64_t b = 0; b < N; ++b)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t s = 0; s < S; ++s) {
        double sum = 0;
        for (int64_t q = c - n / 2; q <= c + (n - 1) / 2; ++q)
          if (q >= 0 && q < C) sum += a[size_t((b * C + q) * S + s)] * a[size_t((b * C + q) * S + s)];
        const size_t i = size_t((b * C + c) * S + s);
        out[i] = a[i] / std::pow(k + alpha / double(n) * sum, beta);
      }
  return out;
}

TEST(ExtraLayers, LocalResponseNorm) {
  for (Device d : test_devices()) {
    SCOPED_TRACE(d.str());
    manual_seed(10);
    for (auto shape : {std::vector<int64_t>{2, 5, 3}, std::vector<int64_t>{2, 5, 2, 3}, std::vector<int64_t>{1, 4, 2, 1, 2}}) {
      Tensor x = randn(shape, kFloat64) * 2;
      for (int64_t n : {1, 2, 3, 4, 7}) {
        SCOPED_TRACE(::testing::Message() << x.sizes() << " size " << n);
        expect_close(F::local_response_norm(x.to(d), n), lrn_reference(x, n, 1e-4, 0.75, 1.0), 1e-12);
        const double alpha = 0.5, beta = 0.6, k = 2.0;
        auto want = lrn_reference(x, n, alpha, beta, k);
        nn::LocalResponseNorm m(nn::LocalResponseNormOptions(n).alpha(alpha).beta(beta).k(k));
        expect_close(m(x.to(d)), want, 1e-12);
        expect_close(F::local_response_norm(x.to(kFloat32).to(d), F::LocalResponseNormFuncOptions(n).alpha(alpha).beta(beta).k(k)),
                     want, 1e-5);
        if (n != 1 && n != 4)
          gradcheck([=](const TL& v) { return F::local_response_norm(v[0], n, alpha, beta, k); },
                    {x.clone().requires_grad_()}, d);
      }
    }
    // Non-contiguous input.
    Tensor x = randn({3, 4, 2}, kFloat64).permute({2, 1, 0});  // [2, 4, 3]
    expect_close(F::local_response_norm(x.to(d), 3, 0.3, 0.75, 1.0), lrn_reference(x, 3, 0.3, 0.75, 1.0), 1e-12);
  }
  EXPECT_EQ(error_of([] { F::local_response_norm(randn({2, 3}), 2); }),
            "[local_response_norm] Expected 3D or higher dimensionality input (got 2 dimensions)");
  EXPECT_EQ(repr(*nn::LocalResponseNorm(2)), "LocalResponseNorm(2, alpha=0.0001, beta=0.75, k=1.0)");
  EXPECT_EQ(repr(*nn::LocalResponseNorm(nn::LocalResponseNormOptions(3).alpha(0.5).beta(1).k(2))),
            "LocalResponseNorm(3, alpha=0.5, beta=1.0, k=2.0)");
}

TEST(ExtraLayers, ChannelShuffle) {
  for (Device d : test_devices()) {
    SCOPED_TRACE(d.str());
    for (auto shape : {std::vector<int64_t>{2, 6, 2, 3}, std::vector<int64_t>{3, 6, 4}, std::vector<int64_t>{1, 6, 2, 1, 2}}) {
      Tensor x = randn(shape, kFloat64);
      const int64_t N = x.size(0), C = x.size(1), S = x.numel() / (N * C);
      for (int64_t g : {1, 2, 3, 6}) {
        SCOPED_TRACE(::testing::Message() << x.sizes() << " groups " << g);
        auto a = values(x);
        std::vector<double> want(a.size());
        // Output channel j * g + i is input channel i * (C / g) + j.
        for (int64_t b = 0; b < N; ++b)
          for (int64_t i = 0; i < g; ++i)
            for (int64_t j = 0; j < C / g; ++j)
              for (int64_t s = 0; s < S; ++s)
                want[size_t((b * C + j * g + i) * S + s)] = a[size_t((b * C + i * (C / g) + j) * S + s)];
        expect_close(F::channel_shuffle(x.to(d), g), want, 0.0);
        Tensor y = nn::ChannelShuffle(g)(x.to(kFloat32).to(d));
        EXPECT_EQ(y.sizes().vec(), x.sizes().vec());
        expect_close(y, want, 1e-6);
      }
      gradcheck([](const TL& v) { return F::channel_shuffle(v[0], 3); }, {x.clone().requires_grad_()}, d);
    }
    Tensor nc = randn({4, 6, 2}, kFloat64).transpose(0, 2);  // [2, 6, 4] non-contiguous
    expect_close(F::channel_shuffle(nc.to(d), 2), F::channel_shuffle(nc.contiguous(), 2), 0.0);
  }
  EXPECT_EQ(error_of([] { F::channel_shuffle(randn({2, 6}), 2); }),
            "[channel_shuffle] channel_shuffle expects input to have at least 3 dimensions, but got input with 2 "
            "dimension(s)");
  EXPECT_EQ(error_of([] { F::channel_shuffle(randn({2, 6, 3}), 0); }),
            "[channel_shuffle] Number of groups to divide channels in must be positive. Value of groups:0");
  EXPECT_EQ(error_of([] { F::channel_shuffle(randn({2, 6, 3}), 4); }),
            "[channel_shuffle] Number of channels must be divisible by groups. Got 6 channels and 4 groups.");
  EXPECT_EQ(repr(*nn::ChannelShuffle(3)), "ChannelShuffle(groups=3)");
}

}  // namespace

namespace {

// Every function on float32, float16 and bfloat16 inputs: the input's dtype out, values close
// to float64's of the same (rounded) inputs.
TEST(ExtraLosses, FloatingDtypes) {
  using Fn = std::function<Tensor(const TL&)>;
  const std::vector<std::pair<std::string, Fn>> fns{
      {"margin_ranking_loss", [](const TL& v) { return F::margin_ranking_loss(v[0], v[1], v[2].sign(), 0.1, "none"); }},
      {"triplet_margin_loss", [](const TL& v) { return F::triplet_margin_loss(v[0], v[1], v[2], 1.0, 2.0, 1e-6, true, "none"); }},
      {"cosine_embedding_loss", [](const TL& v) { return F::cosine_embedding_loss(v[0], v[1], v[2].select(1, 0).sign(), 0.0, "none"); }},
      {"poisson_nll_loss", [](const TL& v) { return F::poisson_nll_loss(v[0], v[1].abs() * 3, true, true, 1e-8, "none"); }},
      {"gaussian_nll_loss", [](const TL& v) { return F::gaussian_nll_loss(v[0], v[1], v[2].abs() + 0.5, true, 1e-6, "none"); }},
      {"hinge_embedding_loss", [](const TL& v) { return F::hinge_embedding_loss(v[0], v[1].sign(), 1.0, "none"); }},
      {"soft_margin_loss", [](const TL& v) { return F::soft_margin_loss(v[0], v[1].sign(), "none"); }},
      {"multilabel_soft_margin_loss", [](const TL& v) { return F::multilabel_soft_margin_loss(v[0], (v[1] > 0).to(v[1].dtype()), v[2].abs().select(0, 0), "none"); }},
      {"hardshrink", [](const TL& v) { return F::hardshrink(v[0], 0.5); }},
      {"softmin", [](const TL& v) { return F::softmin(v[0], 1); }},
      {"glu", [](const TL& v) { return F::glu(v[0], 1); }},
      {"local_response_norm", [](const TL& v) { return F::local_response_norm(v[0].unsqueeze(0), 3, 0.5, 0.75, 1.0); }},
      {"channel_shuffle", [](const TL& v) { return F::channel_shuffle(v[0].unsqueeze(0), 2); }},
  };
  for (Device d : test_devices()) {
    for (Dtype dt : {kFloat32, kFloat16, kBFloat16}) {
      manual_seed(11);
      TL low{randn({4, 6}).to(dt), randn({4, 6}).to(dt), randn({4, 6}).to(dt)};
      TL ref;
      for (const Tensor& t : low) ref.push_back(t.to(kFloat64));
      const double tol = dt == kFloat32 ? 1e-5 : dt == kFloat16 ? 1e-2 : 5e-2;
      for (const auto& [name, fn] : fns) {
        SCOPED_TRACE(::testing::Message() << name << " " << dt << " " << d.str());
        TL args;
        for (const Tensor& t : low) args.push_back(t.to(d));
        Tensor got = fn(args);
        EXPECT_EQ(got.dtype(), dt);
        expect_close(got, fn(ref), tol, tol);
      }
    }
  }
}

// ATen's forms in namespace wick, with LibTorch's reduction enum.
TEST(ExtraLosses, AtenForms) {
  manual_seed(12);
  Tensor a = randn({3, 4}, kFloat64), b = randn({3, 4}, kFloat64), c = randn({3, 4}, kFloat64);
  Tensor y = signs({3, 4}), y1 = signs({3});
  auto same = [](const Tensor& x, const Tensor& z) { expect_close(x, z, 0.0, 0.0); };
  same(wick::margin_ranking_loss(a, b, y, 0.2, Reduction::Sum), F::margin_ranking_loss(a, b, y, 0.2, "sum"));
  same(wick::margin_ranking_loss(a, b, y), F::margin_ranking_loss(a, b, y));
  same(wick::triplet_margin_loss(a, b, c, 0.5, 1.0, 1e-6, true, Reduction::None),
       F::triplet_margin_loss(a, b, c, 0.5, 1.0, 1e-6, true, "none"));
  same(wick::cosine_embedding_loss(a, b, y1, 0.1, Reduction::Mean), F::cosine_embedding_loss(a, b, y1, 0.1));
  same(wick::poisson_nll_loss(a, c.abs(), true, true, 1e-8, Reduction::Sum),
       F::poisson_nll_loss(a, c.abs(), true, true, 1e-8, "sum"));
  same(wick::hinge_embedding_loss(a, y, 0.5, Reduction::None), F::hinge_embedding_loss(a, y, 0.5, "none"));
  same(wick::soft_margin_loss(a, y, Reduction::Sum), F::soft_margin_loss(a, y, "sum"));
  same(wick::hardshrink(a, 0.3), F::hardshrink(a, 0.3));
  same(wick::glu(a, 1), F::glu(a, 1));
  same(wick::channel_shuffle(a.view({1, 3, 4}), 3), F::channel_shuffle(a.view({1, 3, 4}), 3));
  EXPECT_EQ(error_of([&] { wick::soft_margin_loss(a, y, Reduction::Reduction(7)); }),
            "[soft_margin_loss] 7 is not a valid value for reduction");
  // LibTorch's option structs of the functional dropouts are DropoutFuncOptions.
  F::DropoutFuncOptions o;
  Tensor x = randn({2, 3, 4});
  EXPECT_TRUE(F::dropout1d(x, o.training(false)).equal(x));
  EXPECT_TRUE(F::dropout3d(x.view({1, 2, 3, 2, 2}), F::Dropout3dFuncOptions().p(0.3).training(false)).equal(x.view({1, 2, 3, 2, 2})));
}

}  // namespace
