// normalize, cosine_similarity, pairwise_distance, kl_div, huber_loss, one_hot, pixel_shuffle,
// pixel_unshuffle, alpha_dropout and unflatten; the modules CosineSimilarity, PairwiseDistance,
// HuberLoss, KLDivLoss, ZeroPad2d, ConstantPad2d, ReflectionPad2d, ReplicationPad2d,
// PixelShuffle, PixelUnshuffle, Unflatten, Softmax2d, AlphaDropout; Embedding::from_pretrained,
// nn::init::orthogonal_ and nn::utils::parameters_to_vector / vector_to_parameters. Values
// against float64 loops written here, gradients against central differences, node names,
// errors (their type and the name of the function called) and printing as PyTorch's.
#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../autograd/gradcheck.h"
#include "nn_test_util.h"
#include "wick/wick.h"

using namespace wick;
using wick::testing::error_of;
using wick::testing::expect_close;
using wick::testing::names;
using wick::testing::repr;
namespace F = wick::nn::functional;

namespace {

const TensorOptions kF64 = TensorOptions(kFloat64);


// Element [i][j] of a 2-D float64 vector laid out row-major with cols columns.
double at(const std::vector<double>& v, int64_t cols, int64_t i, int64_t j) {
  return v[size_t(i * cols + j)];
}

class NnMore : public wick::testing::OnEachDevice<91> {};

TEST_P(NnMore, NormalizeMatchesLoops) {
  // non-contiguous [4, 5]
  Tensor x = randn({5, 4}, kF64).t();
  ASSERT_FALSE(x.is_contiguous());
  const auto xv = x.contiguous().to_vector<double>();
  for (double p : {2.0, 1.0, 3.0}) {
    for (int64_t dim : {1, 0}) {
      SCOPED_TRACE(::testing::Message() << "p " << p << " dim " << dim);
      std::vector<double> want(xv.size());
      for (int64_t i = 0; i < 4; ++i)
        for (int64_t j = 0; j < 5; ++j) {
          double n = 0;
          for (int64_t k = 0; k < (dim == 1 ? 5 : 4); ++k)
            n += std::pow(std::abs(dim == 1 ? at(xv, 5, i, k) : at(xv, 5, k, j)), p);
          n = std::max(std::pow(n, 1.0 / p), 1e-12);
          want[size_t(i * 5 + j)] = at(xv, 5, i, j) / n;
        }
      expect_close(F::normalize(x.to(dev()), p, dim), want, 1e-12);
      expect_close(F::normalize(x.to(dev(), kFloat32), p, dim), want, 1e-5);
    }
  }
  // a zero row stays zero (the norm clamped to eps)
  Tensor z = zeros({2, 3}, kF64).to(dev());
  expect_close(F::normalize(z), std::vector<double>(6, 0.0), 0);
  expect_close(F::normalize(x.to(dev()), F::NormalizeFuncOptions().p(1).dim(0)),
               F::normalize(x.to(dev()), 1, 0), 0);
}

TEST_P(NnMore, CosineSimilarityBroadcastsAndMatchesLoops) {
  Tensor a = randn({3, 1, 5}, kF64), b = randn({4, 5}, kF64);
  const auto av = a.to_vector<double>(), bv = b.to_vector<double>();
  std::vector<double> want;
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j) {
      double dot = 0, na = 0, nb = 0;
      for (int64_t k = 0; k < 5; ++k) {
        dot += av[size_t(i * 5 + k)] * bv[size_t(j * 5 + k)];
        na += av[size_t(i * 5 + k)] * av[size_t(i * 5 + k)];
        nb += bv[size_t(j * 5 + k)] * bv[size_t(j * 5 + k)];
      }
      want.push_back(dot / (std::max(std::sqrt(na), 1e-8) * std::max(std::sqrt(nb), 1e-8)));
    }
  Tensor got = F::cosine_similarity(a.to(dev()), b.to(dev()), -1);
  EXPECT_EQ(got.sizes().vec(), (std::vector<int64_t>{3, 4}));
  expect_close(got, want, 1e-12);
  expect_close(nn::CosineSimilarity(nn::CosineSimilarityOptions().dim(-1))(a.to(dev()), b.to(dev())), want,
               1e-12);
  expect_close(F::cosine_similarity(a.to(dev()), b.to(dev()), F::CosineSimilarityFuncOptions().dim(2)), want,
               1e-12);
  // default dim 1, a non-contiguous operand, a zero vector (its norm clamped: similarity 0)
  Tensor x = randn({6, 2}, kF64).t();  // [2, 6]
  Tensor y = cat({zeros({1, 6}, kF64), randn({1, 6}, kF64)});
  const auto xv = x.contiguous().to_vector<double>(), yv = y.to_vector<double>();
  double dot = 0, nx = 0, ny = 0;
  for (int64_t k = 0; k < 6; ++k) {
    dot += xv[size_t(6 + k)] * yv[size_t(6 + k)];
    nx += xv[size_t(6 + k)] * xv[size_t(6 + k)];
    ny += yv[size_t(6 + k)] * yv[size_t(6 + k)];
  }
  expect_close(F::cosine_similarity(x.to(dev()), y.to(dev())), {0.0, dot / std::sqrt(nx * ny)}, 1e-12);
  // integer inputs are cast when the other is floating; two integer inputs are refused
  Tensor ints = tensor({{1, 2, 2}}).to(dev());
  expect_close(F::cosine_similarity(ints, tensor({{2.0, 4.0, 4.0}}).to(dev())), {1.0}, 1e-6);
  EXPECT_THROW(F::cosine_similarity(ints, ints), TypeError);
  EXPECT_TRUE(names([&] { F::cosine_similarity(ints, ints); }, "cosine_similarity"));
}

TEST_P(NnMore, PairwiseDistanceMatchesLoops) {
  Tensor a = randn({4, 3}, kF64), b = randn({3}, kF64);
  const auto av = a.to_vector<double>(), bv = b.to_vector<double>();
  for (double p : {2.0, 1.0}) {
    std::vector<double> want;
    for (int64_t i = 0; i < 4; ++i) {
      double s = 0;
      for (int64_t k = 0; k < 3; ++k)
        s += std::pow(std::abs(av[size_t(i * 3 + k)] - bv[size_t(k)] + 1e-6), p);
      want.push_back(std::pow(s, 1.0 / p));
    }
    expect_close(F::pairwise_distance(a.to(dev()), b.to(dev()), p), want, 1e-12);
    Tensor kept =
        nn::PairwiseDistance(nn::PairwiseDistanceOptions().p(p).keepdim(true))(a.to(dev()), b.to(dev()));
    EXPECT_EQ(kept.sizes().vec(), (std::vector<int64_t>{4, 1}));
    expect_close(kept.flatten(), want, 1e-12);
  }
}

TEST_P(NnMore, KlDivMatchesLoopsForEachReduction) {
  Tensor input = F::log_softmax(randn({3, 4}, kF64), 1);
  Tensor target = F::softmax(randn({3, 4}, kF64), 1);
  target = where(tensor({{1.0, 0.0, 1.0, 1.0}}, kF64).expand({3, 4}) > 0, target, zeros({}, kF64));  // zeros
  const auto iv = input.to_vector<double>(), tv = target.to_vector<double>();
  std::vector<double> pointwise, pointwise_log;
  for (size_t k = 0; k < iv.size(); ++k) {
    pointwise.push_back(tv[k] > 0 ? tv[k] * (std::log(tv[k]) - iv[k]) : 0.0);
    pointwise_log.push_back(std::exp(tv[k]) * (tv[k] - iv[k]));  // target read as log-probabilities
  }
  auto total = [](const std::vector<double>& v) {
    double s = 0;
    for (double e : v) s += e;
    return s;
  };
  Tensor in = input.to(dev()), tg = target.to(dev());
  expect_close(F::kl_div(in, tg, "none"), pointwise, 1e-12);
  expect_close(F::kl_div(in, tg, "sum"), {total(pointwise)}, 1e-12);
  expect_close(F::kl_div(in, tg), {total(pointwise) / 12}, 1e-12);
  expect_close(F::kl_div(in, tg, "batchmean"), {total(pointwise) / 3}, 1e-12);
  expect_close(F::kl_div(in, tg, F::KLDivFuncOptions(kBatchMean)), {total(pointwise) / 3}, 1e-12);
  expect_close(F::kl_div(in, tg, "none", true), pointwise_log, 1e-12);
  expect_close(F::kl_div(in, tg, F::KLDivFuncOptions().reduction(kSum).log_target(true)),
               {total(pointwise_log)}, 1e-12);
  expect_close(nn::KLDivLoss(nn::KLDivLossOptions(kBatchMean))(in, tg), {total(pointwise) / 3}, 1e-12);
  expect_close(nn::KLDivLoss()(in.to(kFloat32), tg.to(kFloat32)), {total(pointwise) / 12}, 1e-6);
  // the nodes of the composed ops, as PyTorch's
  Tensor leaf = in.detach().requires_grad_();
  EXPECT_EQ(F::kl_div(leaf, tg).grad_fn()->name(), "MeanBackward0");
  EXPECT_EQ(F::kl_div(leaf, tg, "batchmean").grad_fn()->name(), "DivBackward0");
  EXPECT_EQ(F::kl_div(leaf, tg, "sum").grad_fn()->name(), "SumBackward0");
  EXPECT_EQ(F::kl_div(leaf, tg, "none").grad_fn()->name(), "SubBackward0");
}

TEST_P(NnMore, HuberLossMatchesLoopsAndBroadcasts) {
  Tensor input = randn({4, 5}, kF64) * 2, target = randn({5}, kF64);
  const auto iv = input.to_vector<double>(), tv = target.to_vector<double>();
  for (double delta : {1.0, 0.5, 3.0}) {
    SCOPED_TRACE(delta);
    std::vector<double> want;
    double sum = 0;
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < 5; ++j) {
        const double d = std::abs(iv[size_t(i * 5 + j)] - tv[size_t(j)]);
        want.push_back(d < delta ? 0.5 * d * d : delta * (d - 0.5 * delta));
        sum += want.back();
      }
    Tensor in = input.to(dev()), tg = target.to(dev());
    expect_close(F::huber_loss(in, tg, "none", delta), want, 1e-12);
    expect_close(F::huber_loss(in, tg, "sum", delta), {sum}, 1e-12);
    expect_close(F::huber_loss(in, tg, "mean", delta), {sum / 20}, 1e-12);
    expect_close(F::huber_loss(in, tg, F::HuberLossFuncOptions(kSum).delta(delta)), {sum}, 1e-12);
    expect_close(nn::HuberLoss(nn::HuberLossOptions().delta(delta))(in, tg), {sum / 20}, 1e-12);
    // the target broadcast against the input, as PyTorch's
    expect_close(F::huber_loss(tg, in, "none", delta), want, 1e-12);
  }
  // huber_loss is smooth_l1_loss times delta where beta = delta
  Tensor a = randn({7}, kF64).to(dev()), b = randn({7}, kF64).to(dev());
  expect_close(F::huber_loss(a, b, "none", 0.7), F::smooth_l1_loss(a, b, "none", 0.7) * 0.7, 1e-12);
  EXPECT_EQ(F::huber_loss(a.detach().requires_grad_(), b).grad_fn()->name(), "HuberLossBackward0");
}

// PyTorch's autocast lists: huber_loss and kl_div in float32 on every device, cosine_similarity
// in float32 on CUDA; the values are those of float32 copies of the inputs.
TEST_P(NnMore, AutocastRunsTheLossesInFloat32) {
  Tensor a = randn({4, 6}).to(dev(), kBFloat16), b = randn({4, 6}).to(dev(), kBFloat16);
  Tensor logp = F::log_softmax(a.to(kFloat32), 1).to(kBFloat16),
         p = F::softmax(b.to(kFloat32), 1).to(kBFloat16);
  Tensor huber, kl, cos;
  {
    AutocastGuard guard(dev().type(), kBFloat16);
    huber = F::huber_loss(a, b);
    kl = F::kl_div(logp, p, "batchmean");
    cos = F::cosine_similarity(a, b);
  }
  EXPECT_EQ(huber.dtype(), kFloat32);
  EXPECT_EQ(kl.dtype(), kFloat32);
  expect_close(huber, F::huber_loss(a.to(kFloat32), b.to(kFloat32)), 1e-6);
  expect_close(kl, F::kl_div(logp.to(kFloat32), p.to(kFloat32), "batchmean"), 1e-6);
  if (dev().is_cuda()) {
    EXPECT_EQ(cos.dtype(), kFloat32);
    expect_close(cos, F::cosine_similarity(a.to(kFloat32), b.to(kFloat32)), 1e-6);
  }
}

TEST_P(NnMore, OneHotIsWicksOneHot) {
  Tensor t = tensor({0, 2, 1, 2}).to(dev());
  expect_close(F::one_hot(t), one_hot(t), 0);
  expect_close(F::one_hot(t, 5).sum({0}), {1.0, 1.0, 2.0, 0.0, 0.0}, 0);
  EXPECT_EQ(F::one_hot(t, 4).sizes().vec(), (std::vector<int64_t>{4, 4}));
}

TEST_P(NnMore, PixelShuffleMatchesTheIndexFormula) {
  const int64_t r = 2;
  Tensor x = randn({2, 3, 8, 5, 3}, kF64);  // batch dims [2, 3], C r^2 = 8
  const auto xv = x.to_vector<double>();
  Tensor y = F::pixel_shuffle(x.to(dev()), r);
  ASSERT_EQ(y.sizes().vec(), (std::vector<int64_t>{2, 3, 2, 10, 6}));
  const auto yv = y.cpu().to_vector<double>();
  // y[b, c, h r + i, w r + j] = x[b, c r^2 + i r + j, h, w]
  for (int64_t b = 0; b < 6; ++b)
    for (int64_t c = 0; c < 2; ++c)
      for (int64_t h = 0; h < 5; ++h)
        for (int64_t w = 0; w < 3; ++w)
          for (int64_t i = 0; i < r; ++i)
            for (int64_t j = 0; j < r; ++j) {
              const double want = xv[size_t(((b * 8 + c * r * r + i * r + j) * 5 + h) * 3 + w)];
              const double got = yv[size_t(((b * 2 + c) * 10 + h * r + i) * 6 + w * r + j)];
              ASSERT_EQ(got, want);
            }
  // unshuffle inverts it; a non-contiguous 3-D input
  expect_close(F::pixel_unshuffle(y, r), x, 0);
  Tensor nc = randn({6, 4, 9}, kF64).transpose(1, 2);  // [6, 9, 4]... channels 6 -> use r = 1 below
  ASSERT_FALSE(nc.is_contiguous());
  expect_close(F::pixel_unshuffle(F::pixel_shuffle(nc.to(dev()), 1), 1), nc, 0);
  Tensor q = randn({9, 4, 6}, kF64).permute({0, 2, 1});  // [9, 6, 4], non-contiguous
  expect_close(F::pixel_unshuffle(F::pixel_shuffle(q.to(dev()), 3), 3), q, 0);
  expect_close(F::pixel_shuffle(F::pixel_unshuffle(q.to(dev()), 2), 2), q, 0);
  expect_close(nn::PixelShuffle(3)(q.to(dev())), F::pixel_shuffle(q.to(dev()), 3), 0);
  expect_close(nn::PixelUnshuffle(2)(q.to(dev())),
               F::pixel_unshuffle(q.to(dev()), F::PixelUnshuffleFuncOptions(2)), 0);
  Tensor leaf = x.to(dev()).requires_grad_();
  EXPECT_EQ(F::pixel_shuffle(leaf, 2).grad_fn()->name(), "PixelShuffleBackward0");
  EXPECT_EQ(F::pixel_unshuffle(leaf, 1).grad_fn()->name(), "PixelUnshuffleBackward0");
  // a result is never the input (nor a view of it), also for factor 1
  Tensor same = F::pixel_shuffle(leaf, 1);
  EXPECT_FALSE(same.is_view());
  EXPECT_NE(same.data_ptr(), leaf.data_ptr());
}

TEST_P(NnMore, GradientsMatchCentralDifferences) {
  using wick::testing::gradcheck;
  using wick::testing::gradgradcheck;
  using Args = std::vector<Tensor>;
  Tensor a = randn({3, 4}, kF64), b = randn({4}, kF64);
  gradcheck([](const Args& in) { return F::normalize(in[0]); }, {a.clone().requires_grad_()}, dev());
  gradcheck([](const Args& in) { return F::normalize(in[0], 3, 0); }, {a.clone().requires_grad_()}, dev());
  gradcheck([](const Args& in) { return F::cosine_similarity(in[0], in[1], -1); },
            {a.clone().requires_grad_(), b.clone().requires_grad_()}, dev());
  gradcheck([](const Args& in) { return F::pairwise_distance(in[0], in[1]); },
            {a.clone().requires_grad_(), b.clone().requires_grad_()}, dev());
  Tensor logp = F::log_softmax(randn({3, 4}, kF64), 1), p = F::softmax(randn({3, 4}, kF64), 1) + 0.05;
  for (const char* r : {"mean", "batchmean", "sum", "none"})
    for (bool log_target : {false, true}) {
      SCOPED_TRACE(::testing::Message() << r << " log_target " << log_target);
      gradcheck([&](const Args& in) { return F::kl_div(in[0], in[1], r, log_target); },
                {logp.clone().requires_grad_(), (log_target ? p.log() : p).clone().requires_grad_()}, dev());
    }
  // a target of zeros: finite gradients, those of the target -input (its xlogy term adds 0)
  Tensor zt = zeros({3, 4}, kF64).to(dev()).requires_grad_();
  F::kl_div(logp.to(dev()), zt, "sum").backward();
  expect_close(zt.grad(), -logp, 1e-15);
  // huber_loss away from its kinks |d| = delta, with a broadcast target; and second derivatives
  Tensor x = randn({3, 4}, kF64) * 2;
  x = where((x - b).abs().sub(0.8).abs() < 0.05, x + 0.2, x);
  for (const char* r : {"mean", "sum", "none"}) {
    SCOPED_TRACE(r);
    auto f = [&](const Args& in) { return F::huber_loss(in[0], in[1], r, 0.8); };
    gradcheck(f, {x.clone().requires_grad_(), b.clone().requires_grad_()}, dev());
    gradgradcheck(f, {x.clone().requires_grad_(), b.clone().requires_grad_()}, dev());
  }
  Tensor img = randn({2, 8, 3, 2}, kF64);
  auto shuffle = [](const Args& in) { return F::pixel_shuffle(in[0], 2); };
  auto unshuffle = [](const Args& in) { return F::pixel_unshuffle(in[0], 2).sin(); };
  gradcheck(shuffle, {img.clone().requires_grad_()}, dev());
  gradgradcheck(unshuffle, {F::pixel_shuffle(img, 2).requires_grad_()}, dev());
  gradcheck(unshuffle, {F::pixel_shuffle(img, 2).requires_grad_()}, dev());
  // Unflatten and Softmax2d (views and softmax: their own nodes)
  gradcheck(
      [](const Args& in) {
        return wick::unflatten(in[0], 1, {2, -1});
      },
      {a.clone().requires_grad_()}, dev());
  gradcheck([](const Args& in) { return nn::Softmax2d()(in[0]); }, {img.clone().requires_grad_()}, dev());
}

TEST_P(NnMore, AlphaDropoutKeepsMeanAndVariance) {
  constexpr double alpha = 1.7580993408473766;
  // Drawn on the device itself: each device's generator gives the same numbers for a seed, so
  // an input drawn on the CPU and a mask drawn on the GPU after it would share their uniforms,
  // and the kept elements would be the larger ones.
  Tensor x = randn({200, 500}, kF64.device(dev()));
  EXPECT_TRUE(F::alpha_dropout(x, 0.3).is_same(x));  // training defaults to false, as PyTorch's
  EXPECT_TRUE(F::alpha_dropout(x, 0.0, true).is_same(x));
  expect_close(F::alpha_dropout(x.narrow(0, 0, 2), 1.0, true), std::vector<double>(1000, 0.0), 0);
  for (double p : {0.2, 0.5}) {
    SCOPED_TRACE(p);
    const double a = 1.0 / std::sqrt((alpha * alpha * p + 1) * (1 - p));
    Tensor leaf = x.detach().requires_grad_();
    Tensor y = F::alpha_dropout(leaf, p, true);
    EXPECT_EQ(y.grad_fn()->name(), "AddBackward0");
    y.sum().backward();
    // each element is a x + alpha a p (kept, gradient a) or alpha a (p - 1) (dropped, gradient 0)
    const auto xv = x.cpu().to_vector<double>(), yv = y.detach().cpu().to_vector<double>();
    const auto gv = leaf.grad().cpu().to_vector<double>();
    int64_t kept = 0;
    for (size_t i = 0; i < xv.size(); ++i) {
      const bool k = gv[i] != 0;
      kept += k;
      ASSERT_NEAR(gv[i], k ? a : 0.0, 1e-12);
      ASSERT_NEAR(yv[i], k ? a * xv[i] + alpha * a * p : alpha * a * (p - 1), 1e-12);
    }
    EXPECT_NEAR(double(kept) / double(xv.size()), 1 - p, 0.01);
    // zero mean and unit variance kept for standard normal input
    EXPECT_NEAR(y.mean().item<double>(), 0.0, 0.02);
    EXPECT_NEAR(y.var().item<double>(), 1.0, 0.03);
  }
  nn::AlphaDropout drop(0.5);
  drop->to(dev());
  drop->eval();
  EXPECT_TRUE(drop(x).is_same(x));
  drop->train();
  EXPECT_FALSE(equal(drop(x), x));
  EXPECT_TRUE(F::alpha_dropout(x, F::AlphaDropoutFuncOptions().p(0.5)).is_same(x));
}

TEST_P(NnMore, PaddingLayersMatchIndexFormulas) {
  Tensor x = randn({2, 3, 4, 5}, kF64);
  const auto xv = x.to_vector<double>();
  const int64_t l = 1, r = 2, t = 2, bt = 1;  // left, right, top, bottom
  const int64_t oh = 4 + t + bt, ow = 5 + l + r;
  auto reference = [&](const std::string& mode, double value) {
    std::vector<double> out;
    for (int64_t nc = 0; nc < 6; ++nc)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          int64_t si = i - t, sj = j - l;
          if (mode == "constant") {
            out.push_back(si >= 0 && si < 4 && sj >= 0 && sj < 5 ? xv[size_t((nc * 4 + si) * 5 + sj)]
                                                                 : value);
            continue;
          }
          if (mode == "reflect") {
            si = si < 0 ? -si : (si >= 4 ? 6 - si : si);
            sj = sj < 0 ? -sj : (sj >= 5 ? 8 - sj : sj);
          } else {
            si = std::clamp<int64_t>(si, 0, 3);
            sj = std::clamp<int64_t>(sj, 0, 4);
          }
          out.push_back(xv[size_t((nc * 4 + si) * 5 + sj)]);
        }
    return out;
  };
  Tensor in = x.to(dev());
  Tensor zero = nn::ZeroPad2d(nn::ZeroPad2dOptions({l, r, t, bt}))(in);
  EXPECT_EQ(zero.sizes().vec(), (std::vector<int64_t>{2, 3, oh, ow}));
  expect_close(zero, reference("constant", 0), 0);
  expect_close(nn::ConstantPad2d(nn::ConstantPad2dOptions({l, r, t, bt}, 3.5))(in),
               reference("constant", 3.5), 0);
  expect_close(nn::ReflectionPad2d(nn::ReflectionPad2dOptions({l, r, t, bt}))(in), reference("reflect", 0),
               0);
  expect_close(nn::ReplicationPad2d(nn::ReplicationPad2dOptions({l, r, t, bt}))(in),
               reference("replicate", 0), 0);
  // one number pads all four sides; negative padding crops
  EXPECT_EQ(nn::ZeroPad2d(2)(in).sizes().vec(), (std::vector<int64_t>{2, 3, 8, 9}));
  EXPECT_EQ(nn::ConstantPad2d(-1, 0.0)(in).sizes().vec(), (std::vector<int64_t>{2, 3, 2, 3}));
  expect_close(nn::ZeroPad2d(nn::ZeroPad2dOptions({-1, 0, 0, -2}))(in), x.narrow(3, 1, 4).narrow(2, 0, 2), 0);
  // reflection needs pads smaller than the input, and 3-D or 4-D input
  EXPECT_THROW(nn::ReflectionPad2d(4)(in), ValueError);
  EXPECT_TRUE(names([&] { nn::ReflectionPad2d(4)(in); }, "pad"));
  EXPECT_THROW(nn::ReplicationPad2d(1)(in.flatten(0, 1).flatten(0, 1)), NotImplementedError);
}

TEST_P(NnMore, UnflattenAndSoftmax2d) {
  Tensor x = randn({3, 10}, kF64).to(dev());
  Tensor u = nn::Unflatten(1, std::vector<int64_t>{2, 5})(x);
  EXPECT_EQ(u.sizes().vec(), (std::vector<int64_t>{3, 2, 5}));
  expect_close(u.flatten(1), x, 0);
  EXPECT_EQ(u.data_ptr(), x.data_ptr());  // a view
  EXPECT_EQ(wick::unflatten(x, -1, {-1, 2}).sizes().vec(), (std::vector<int64_t>{3, 5, 2}));
  EXPECT_EQ(wick::unflatten(x, 0, {3, 1}).sizes().vec(), (std::vector<int64_t>{3, 1, 10}));
  // a non-contiguous input is split as a view too
  Tensor t = randn({10, 3}, kF64).to(dev()).t();
  Tensor ut = nn::Unflatten(nn::UnflattenOptions(1, {5, 2}))(t);
  expect_close(ut.flatten(1), t, 0);
  Tensor leaf = x.detach().requires_grad_();
  EXPECT_EQ(wick::unflatten(leaf, 1, {5, 2}).grad_fn()->name(), "ViewBackward0");
  // Softmax2d: softmax over the channels of [N, C, H, W] and [C, H, W]
  Tensor img = randn({2, 3, 4, 5}, kF64);
  const auto iv = img.to_vector<double>();
  std::vector<double> want(iv.size());
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t s = 0; s < 20; ++s) {
      double z = 0;
      for (int64_t c = 0; c < 3; ++c) z += std::exp(iv[size_t((n * 3 + c) * 20 + s)]);
      for (int64_t c = 0; c < 3; ++c)
        want[size_t((n * 3 + c) * 20 + s)] = std::exp(iv[size_t((n * 3 + c) * 20 + s)]) / z;
    }
  expect_close(nn::Softmax2d()(img.to(dev())), want, 1e-12);
  expect_close(nn::Softmax2d()(img[1].to(dev())), std::vector<double>(want.begin() + 60, want.end()), 1e-12);
  EXPECT_EQ(nn::Softmax2d()(img.to(dev()).requires_grad_()).grad_fn()->name(), "SoftmaxBackward0");
}

TEST_P(NnMore, ParametersToVectorAndBack) {
  nn::Linear lin(3, 2);
  lin->to(dev(), kFloat64);
  Tensor v = nn::utils::parameters_to_vector(lin->parameters());
  ASSERT_EQ(v.sizes().vec(), (std::vector<int64_t>{8}));
  expect_close(v, cat({lin->weight.flatten(), lin->bias}), 0);
  EXPECT_EQ(v.grad_fn()->name(), "CatBackward0");
  // the vector is differentiable: its gradient reaches the parameters
  (v * arange(8, kF64).to(dev())).sum().backward();
  expect_close(lin->weight.grad(), {0.0, 1.0, 2.0, 3.0, 4.0, 5.0}, 0);
  expect_close(lin->bias.grad(), {6.0, 7.0}, 0);
  // back: consecutive slices copied in (a longer vector's tail is not read)
  Tensor w_handle = lin->weight;
  nn::utils::vector_to_parameters(arange(10, kF64).to(dev()) * 0.5, lin->parameters());
  expect_close(lin->weight, {0.0, 0.5, 1.0, 1.5, 2.0, 2.5}, 0);
  expect_close(lin->bias, {3.0, 3.5}, 0);
  expect_close(w_handle, lin->weight, 0);  // the same parameter, written in place
  EXPECT_TRUE(lin->weight.requires_grad());
  EXPECT_THROW(nn::utils::vector_to_parameters(zeros({7}, kF64).to(dev()), lin->parameters()), ValueError);
  EXPECT_TRUE(names([&] { nn::utils::vector_to_parameters(zeros({7}, kF64).to(dev()), lin->parameters()); },
                    "vector_to_parameters"));
  if (dev().is_cuda()) {
    std::vector<Tensor> mixed{lin->weight, zeros({2}, kF64)};
    EXPECT_THROW(nn::utils::parameters_to_vector(mixed), TypeError);
    EXPECT_TRUE(names([&] { nn::utils::parameters_to_vector(mixed); }, "parameters_to_vector"));
  }
}

TEST_P(NnMore, OrthogonalIsTheQOfThePositiveDiagonalQr) {
  for (std::vector<int64_t> shape : {std::vector<int64_t>{6, 4}, {3, 5}, {2, 3, 4}, {5, 5}}) {
    SCOPED_TRACE(shape.size() == 2 ? shape[0] * 10 + shape[1] : 234);
    Tensor w = empty(shape, TensorOptions(kFloat64).device(dev()));
    manual_seed(7);
    nn::init::orthogonal_(w, 2.0);
    // the normal matrix it drew, drawn again
    const int64_t rows = shape[0], cols = w.numel() / rows;
    manual_seed(7);
    Tensor a = empty({rows, cols}, TensorOptions(kFloat64).device(dev()));
    a.normal_(0, 1);
    Tensor q = w.reshape({rows, cols}).cpu() / 2.0;
    Tensor ac = a.cpu();
    if (rows < cols) {  // the QR of the transpose
      q = q.t();
      ac = ac.t();
    }
    const int64_t m = q.size(0), n = q.size(1);
    // orthonormal columns
    expect_close(matmul(q.t(), q), eye(n, kF64), 1e-12);
    // R = Q^T A is upper triangular with a positive diagonal, and Q R = A
    Tensor rr = matmul(q.t(), ac);
    const auto rv = rr.contiguous().to_vector<double>();
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        if (i > j) {
          EXPECT_NEAR(rv[size_t(i * n + j)], 0.0, 1e-10);
        } else if (i == j) {
          EXPECT_GT(rv[size_t(i * n + j)], 0.0);
        }
      }
    expect_close(matmul(q, rr), ac, 1e-10);
    EXPECT_EQ(m, std::max(rows, cols));
  }
  Tensor f = empty({4, 4}, TensorOptions(kFloat32).device(dev()));
  nn::init::orthogonal_(f);
  expect_close(matmul(f.t(), f), eye(4, TensorOptions(kFloat32).device(dev())), 1e-5);
  EXPECT_THROW(nn::init::orthogonal_(empty({3}).to(dev())), ValueError);
  EXPECT_TRUE(names([&] { nn::init::orthogonal_(empty({3}).to(dev())); }, "orthogonal_"));
}

TEST_P(NnMore, EmbeddingFromPretrained) {
  Tensor table = randn({4, 3}, kF64).to(dev());
  nn::Embedding emb = nn::Embedding::from_pretrained(table);
  EXPECT_FALSE(emb->weight.requires_grad());
  expect_close(emb->weight, table, 0);
  expect_close(emb(tensor({2, 0}).to(dev())), cat({table[2].unsqueeze(0), table[0].unsqueeze(0)}), 0);
  EXPECT_EQ(emb->weight.data_ptr(), table.data_ptr());  // shared, as Python's Parameter(embeddings)
  EXPECT_EQ(repr(*emb), "Embedding(4, 3)");
  nn::Embedding trainable = nn::Embedding::from_pretrained(
      table, nn::EmbeddingFromPretrainedOptions().freeze(false).padding_idx(1));
  EXPECT_TRUE(trainable->weight.requires_grad());
  EXPECT_EQ(repr(*trainable), "Embedding(4, 3, padding_idx=1)");
  expect_close(trainable->weight[1], table[1], 0);  // the padding row is left as it is
  trainable(tensor({1, 3, 3}).to(dev())).sum().backward();
  expect_close(trainable->weight.grad().sum({1}), {0.0, 0.0, 0.0, 6.0}, 0);  // no gradient for padding_idx
  EXPECT_EQ(trainable->state_dict().size(), 1u);
  // a replica (DataParallel's) gets a weight of its own, of the same shape, dtype and trainability
  std::shared_ptr<nn::Module> copy = emb->replicate();
  auto* replica = copy->as<nn::Embedding>();
  ASSERT_NE(replica, nullptr);
  EXPECT_EQ(replica->weight.sizes().vec(), (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(replica->weight.dtype(), kFloat64);
  EXPECT_FALSE(replica->weight.requires_grad());
  EXPECT_NE(replica->weight.data_ptr(), table.data_ptr());
  EXPECT_THROW(nn::Embedding::from_pretrained(table[0]), ValueError);
  EXPECT_TRUE(names([&] { nn::Embedding::from_pretrained(table[0]); }, "Embedding.from_pretrained"));
  EXPECT_THROW(nn::Embedding::from_pretrained(table, nn::EmbeddingFromPretrainedOptions().sparse(true)),
               NotImplementedError);
}

TEST_P(NnMore, BadArgumentsNameTheFunction) {
  Tensor x = randn({2, 3}).to(dev()), y = randn({2, 4}).to(dev());
  // bad dim
  EXPECT_THROW(F::cosine_similarity(x, x, 2), IndexError);
  EXPECT_TRUE(names([&] { F::cosine_similarity(x, x, 2); }, "cosine_similarity"));
  EXPECT_THROW(F::normalize(x, 2, 5), IndexError);
  EXPECT_TRUE(names([&] { F::normalize(x, 2, 5); }, "normalize"));
  EXPECT_THROW(wick::unflatten(x, 3, {3}), IndexError);
  EXPECT_TRUE(names([&] { wick::unflatten(x, 3, {3}); }, "unflatten"));
  // bad reduction
  EXPECT_THROW(F::kl_div(x, x, "average"), ValueError);
  EXPECT_TRUE(names([&] { F::kl_div(x, x, "average"); }, "kl_div"));
  EXPECT_THROW(F::huber_loss(x, x, "batchmean"), ValueError);
  EXPECT_TRUE(names([&] { F::huber_loss(x, x, "batchmean"); }, "huber_loss"));
  EXPECT_TRUE(names([&] { nn::HuberLoss(nn::HuberLossOptions("avg"))(x, x); }, "huber_loss"));
  // shapes that do not broadcast, or do not divide
  EXPECT_THROW(F::huber_loss(x, y), ValueError);
  EXPECT_TRUE(names([&] { F::huber_loss(x, y); }, "huber_loss"));
  EXPECT_THROW(F::cosine_similarity(x, y), ValueError);
  EXPECT_TRUE(names([&] { F::cosine_similarity(x, y); }, "cosine_similarity"));
  EXPECT_TRUE(names([&] { F::kl_div(x, y); }, "kl_div"));
  EXPECT_TRUE(names([&] { F::pairwise_distance(x, y); }, "pairwise_distance"));
  EXPECT_THROW(F::pixel_shuffle(randn({1, 3, 2, 2}).to(dev()), 2), ValueError);
  EXPECT_TRUE(names([&] { F::pixel_shuffle(randn({1, 3, 2, 2}).to(dev()), 2); }, "pixel_shuffle"));
  EXPECT_TRUE(names([&] { F::pixel_shuffle(x, 2); }, "pixel_shuffle"));
  EXPECT_TRUE(names([&] { F::pixel_shuffle(randn({1, 4, 2, 2}).to(dev()), 0); }, "pixel_shuffle"));
  EXPECT_THROW(F::pixel_unshuffle(randn({1, 1, 3, 2}).to(dev()), 2), ValueError);
  // Factors whose square, or the output's sizes, would wrap int64 (empty inputs divide by anything).
  const TensorOptions o = TensorOptions().device(dev());
  EXPECT_THROW(F::pixel_shuffle(zeros({1, 0, 2, 2}, o), int64_t(1) << 32), ValueError);
  EXPECT_THROW(F::pixel_shuffle(zeros({1, 0, int64_t(1) << 40, 2}, o), int64_t(1) << 30), ValueError);
  EXPECT_THROW(F::pixel_unshuffle(zeros({1, 2, 0, 0}, o), int64_t(1) << 40), ValueError);
  EXPECT_TRUE(names([&] { F::pixel_unshuffle(zeros({1, 2, 0, 0}, o), int64_t(1) << 40); }, "pixel_unshuffle"));
  EXPECT_TRUE(names([&] { F::pixel_unshuffle(randn({1, 1, 3, 2}).to(dev()), 2); }, "pixel_unshuffle"));
  EXPECT_THROW(wick::unflatten(x, 1, {2, 2}), ValueError);
  EXPECT_EQ(error_of([&] {
              wick::unflatten(x, 1, {2, 2});
            }),
            "[unflatten] unflatten: Provided sizes [2, 2] don't multiply up to the size of dim 1 (3) in the "
            "input tensor");
  EXPECT_EQ(
      error_of([&] {
        wick::unflatten(x, -1, {2, 2});
      }),
      "[unflatten] unflatten: Provided sizes [2, 2] don't multiply up to the size of dim 1 (3) in the input "
      "tensor");
  EXPECT_THROW(wick::unflatten(x, 1, {-1, -1}), ValueError);
  EXPECT_EQ(error_of([&] {
              wick::unflatten(x, 1, {-1, -1});
            }),
            "[unflatten] unflatten got an unexpected error:\nonly one dimension can be inferred");
  EXPECT_THROW(wick::unflatten(x, 1, {3, -2}), ValueError);
  EXPECT_THROW(wick::unflatten(x, 1, {}), ValueError);
  EXPECT_THROW(nn::Softmax2d()(x), ValueError);
  EXPECT_EQ(error_of([&] { nn::Softmax2d()(x); }),
            "[Softmax2d] Softmax2d: expected input to be 3D or 4D, got 2D instead");
  // bad values
  EXPECT_THROW(F::huber_loss(x, x, "mean", 0.0), ValueError);
  EXPECT_TRUE(names([&] { F::huber_loss(x, x, "mean", -1.0); }, "huber_loss"));
  EXPECT_THROW(F::alpha_dropout(x, 1.5, true), ValueError);
  EXPECT_TRUE(names([&] { F::alpha_dropout(x, -0.1); }, "alpha_dropout"));
  EXPECT_THROW(nn::AlphaDropout(2.0), ValueError);
  EXPECT_TRUE(names([&] { nn::AlphaDropout(2.0); }, "AlphaDropout"));
  EXPECT_THROW(nn::ZeroPad2d(nn::ZeroPad2dOptions(std::vector<int64_t>{1, 2, 3})), ValueError);
  // integer inputs
  Tensor i = arange(6).view({2, 3}).to(dev());
  EXPECT_THROW(F::kl_div(i, i), TypeError);
  EXPECT_TRUE(names([&] { F::kl_div(i, x); }, "kl_div"));
  EXPECT_THROW(F::huber_loss(i, i), TypeError);
  EXPECT_TRUE(names([&] { F::huber_loss(i, i); }, "huber_loss"));
  EXPECT_THROW(F::alpha_dropout(i, 0.5, true), TypeError);
}

WICK_INSTANTIATE_ON_DEVICES(NnMore);

TEST(NnMoreModules, PrintAsPyTorch) {
  EXPECT_EQ(repr(*nn::CosineSimilarity()), "CosineSimilarity()");
  EXPECT_EQ(repr(*nn::PairwiseDistance()), "PairwiseDistance()");
  EXPECT_EQ(repr(*nn::HuberLoss()), "HuberLoss()");
  EXPECT_EQ(repr(*nn::HuberLoss(nn::HuberLossOptions().delta(0.5))), "HuberLoss()");
  EXPECT_EQ(repr(*nn::KLDivLoss()), "KLDivLoss()");
  EXPECT_EQ(repr(*nn::KLDivLoss(nn::KLDivLossOptions(kBatchMean))), "KLDivLoss()");
  EXPECT_EQ(repr(*nn::ZeroPad2d(nn::ZeroPad2dOptions({1, 1, 2, 0}))), "ZeroPad2d((1, 1, 2, 0))");
  EXPECT_EQ(repr(*nn::ZeroPad2d(2)), "ZeroPad2d((2, 2, 2, 2))");
  EXPECT_EQ(repr(*nn::ConstantPad2d(nn::ConstantPad2dOptions({1, 1, 2, 0}, 3.5))),
            "ConstantPad2d(padding=(1, 1, 2, 0), value=3.5)");
  EXPECT_EQ(repr(*nn::ReflectionPad2d(nn::ReflectionPad2dOptions({1, 1, 2, 0}))),
            "ReflectionPad2d((1, 1, 2, 0))");
  EXPECT_EQ(repr(*nn::ReplicationPad2d(1)), "ReplicationPad2d((1, 1, 1, 1))");
  EXPECT_EQ(repr(*nn::PixelShuffle(2)), "PixelShuffle(upscale_factor=2)");
  EXPECT_EQ(repr(*nn::PixelUnshuffle(nn::PixelUnshuffleOptions(3))), "PixelUnshuffle(downscale_factor=3)");
  EXPECT_EQ(repr(*nn::Unflatten(1, std::vector<int64_t>{2, 5})), "Unflatten(dim=1, unflattened_size=(2, 5))");
  EXPECT_EQ(repr(*nn::Unflatten(nn::UnflattenOptions(-1, {4}))), "Unflatten(dim=-1, unflattened_size=(4,))");
  EXPECT_EQ(repr(*nn::Softmax2d()), "Softmax2d()");
  EXPECT_EQ(repr(*nn::AlphaDropout()), "AlphaDropout(p=0.5, inplace=False)");
  EXPECT_EQ(repr(*nn::AlphaDropout(nn::AlphaDropoutOptions(0.2).inplace(true))),
            "AlphaDropout(p=0.2, inplace=True)");
  nn::Sequential seq(nn::ZeroPad2d(1), nn::PixelShuffle(2), nn::Unflatten(1, std::vector<int64_t>{1, 2}));
  EXPECT_EQ(repr(*seq),
            "Sequential(\n"
            "  (0): ZeroPad2d((1, 1, 1, 1))\n"
            "  (1): PixelShuffle(upscale_factor=2)\n"
            "  (2): Unflatten(dim=1, unflattened_size=(1, 2))\n"
            ")");
  // no parameters or buffers: moving and saving them is a no-op
  seq->to(kFloat64);
  EXPECT_EQ(seq->state_dict().size(), 0u);
  EXPECT_EQ(seq(randn({1, 8, 2, 2})).sizes().vec(), (std::vector<int64_t>{1, 1, 2, 8, 8}));
}

TEST(NnMoreModules, FuncOptionsFormsEqualThePositionalCalls) {
  manual_seed(92);
  Tensor x = randn({3, 4}, kF64), y = randn({3, 4}, kF64);
  expect_close(F::pairwise_distance(x, y, F::PairwiseDistanceFuncOptions().p(1).eps(0).keepdim(true)),
               F::pairwise_distance(x, y, 1, 0, true), 0);
  expect_close(F::huber_loss(x, y, F::HuberLossFuncOptions().reduction(kNone).delta(2)),
               F::huber_loss(x, y, "none", 2), 0);
  expect_close(F::kl_div(x, y.abs(), F::KLDivFuncOptions()), F::kl_div(x, y.abs()), 0);
  expect_close(F::pixel_shuffle(randn({1, 4, 1, 1}), F::PixelShuffleFuncOptions(2)).flatten(),
               {0.0, 0.0, 0.0, 0.0}, 10);
  Tensor img = randn({2, 4, 2, 2}, kF64);
  expect_close(F::pixel_shuffle(img, F::PixelShuffleFuncOptions(2)), F::pixel_shuffle(img, 2), 0);
  expect_close(F::alpha_dropout(x, F::AlphaDropoutFuncOptions().p(0.4).training(false)), x, 0);
}

}  // namespace
