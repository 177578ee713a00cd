// Layers against references computed with plain loops in float64, their initialization, and
// gradient checks (central differences) of their functional forms; CPU and, when present, CUDA.
#include <cmath>
#include <string>
#include <tuple>

#include <gtest/gtest.h>

#include "../autograd/gradcheck.h"
#include "nn_test_util.h"
#include "wick/wick.h"

using namespace wick;
namespace F = wick::nn::functional;
using wick::testing::expect_close;
using wick::testing::gradcheck;
using wick::testing::rnd;
using TL = std::vector<Tensor>;

namespace {

class Layers : public wick::testing::OnEachDevice<7> {};

// Naive convolution: y[n][o][i][j] = b[o] + sum_{c,u,v} x[n][g c][i s - p + u d][j s - p + v d]
// w[o][c][u][v].
std::vector<double> conv_ref(const Tensor& x, const Tensor& w, const Tensor& b, int64_t s, int64_t p,
                             int64_t d, int64_t groups, int64_t oh, int64_t ow) {
  auto xv = x.cpu().to_vector<double>(), wv = w.cpu().to_vector<double>();
  std::vector<double> bv = b.defined() ? b.cpu().to_vector<double>() : std::vector<double>();
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3), O = w.size(0), CG = w.size(1),
                KH = w.size(2), KW = w.size(3), OG = O / groups;
  std::vector<double> y(size_t(N * O * oh * ow));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double acc = bv.empty() ? 0 : bv[size_t(o)];
          const int64_t g = o / OG;
          for (int64_t c = 0; c < CG; ++c)
            for (int64_t u = 0; u < KH; ++u)
              for (int64_t v = 0; v < KW; ++v) {
                const int64_t r = i * s - p + u * d, q = j * s - p + v * d;
                if (r < 0 || r >= H || q < 0 || q >= W) continue;
                acc += xv[size_t(((n * C + g * CG + c) * H + r) * W + q)] *
                       wv[size_t(((o * CG + c) * KH + u) * KW + v)];
              }
          y[size_t(((n * O + o) * oh + i) * ow + j)] = acc;
        }
  return y;
}

TEST_P(Layers, LinearMatchesLoopsAndInit) {
  nn::Linear fc(5, 3);
  // Init: weight and bias within +-1/sqrt(fan_in) (kaiming_uniform_ with a = sqrt(5)).
  const double bound = 1 / std::sqrt(5.0);
  for (double v : fc->weight.to_vector<double>()) EXPECT_LE(std::abs(v), bound + 1e-7);
  for (double v : fc->bias.to_vector<double>()) EXPECT_LE(std::abs(v), bound + 1e-7);
  auto x = randn({4, 5});
  auto xv = x.to_vector<double>(), wv = fc->weight.to_vector<double>(), bv = fc->bias.to_vector<double>();
  std::vector<double> want;
  for (int n = 0; n < 4; ++n)
    for (int o = 0; o < 3; ++o) {
      double acc = bv[size_t(o)];
      for (int i = 0; i < 5; ++i) acc += xv[size_t(n * 5 + i)] * wv[size_t(o * 5 + i)];
      want.push_back(acc);
    }
  fc->to(dev());
  auto y = fc(x.to(dev()));
  EXPECT_EQ(y.device(), dev());
  expect_close(y, want, 1e-5);
  EXPECT_EQ(y.grad_fn()->name(), "AddmmBackward0");
  // Higher-rank input: the last dim is the feature dim.
  auto y3 = fc(x.to(dev()).view({2, 2, 5}));
  expect_close(y3.reshape({4, 3}), want, 1e-5);
}

// Linear's and addmm's bias and weight gradients (on CUDA the bias gradient comes out of the
// weight gradient's GEMM): against float64 sums and products on the CPU, for float32, float16 and
// bfloat16, odd sizes, a weight stored as is (linear: w.t() is column-major) and a row-major
// mat2 (addmm), and a [1, n] bias.
TEST_P(Layers, LinearBiasAndWeightGradients) {
  for (Dtype dt : {kFloat32, kFloat16, kBFloat16}) {
    const double tol = dt == kFloat32 ? 1e-4 : dt == kFloat16 ? 2e-2 : 1.5e-1;
    for (auto [batch, in, out] : {std::tuple<int64_t, int64_t, int64_t>{64, 784, 128}, {37, 53, 29}, {300, 16, 8}}) {
      Tensor x = randn({batch, in}, kFloat64), w = randn({out, in}, kFloat64) * 0.1, b = randn({out}, kFloat64);
      Tensor gy = randn({batch, out}, kFloat64);
      // The references, in float64 from the values as dt holds them.
      Tensor xr = x.to(dt).to(kFloat64), wr = w.to(dt).to(kFloat64), gr = gy.to(dt).to(kFloat64);
      const Tensor want_b = gr.sum(0), want_w = matmul(gr.t(), xr), want_x = matmul(gr, wr);
      // linear (weight [out, in]: mat2 is w.t())
      Tensor xd = x.to(dev(), dt).requires_grad_(), wd = w.to(dev(), dt).requires_grad_();
      Tensor bd = b.to(dev(), dt).requires_grad_();
      Tensor y = nn::functional::linear(xd, wd, bd);
      EXPECT_EQ(y.grad_fn()->name(), "AddmmBackward0");
      y.backward(gy.to(dev(), dt));
      const std::string what = std::string(name(dt)) + " " + std::to_string(batch) + "x" + std::to_string(in);
      expect_close(bd.grad().to(kFloat64), want_b, tol * std::sqrt(double(batch)), tol, what + " bias");
      expect_close(wd.grad().to(kFloat64), want_w, tol * std::sqrt(double(batch)), tol, what + " weight");
      expect_close(xd.grad().to(kFloat64), want_x, tol * std::sqrt(double(out)), tol, what + " input");
      // addmm with a row-major mat2 [in, out] and a [1, out] bias
      Tensor m2 = w.t().contiguous().to(dev(), dt).requires_grad_();
      Tensor b2 = b.view({1, out}).to(dev(), dt).requires_grad_();
      Tensor y2 = addmm(b2, x.to(dev(), dt), m2);
      y2.backward(gy.to(dev(), dt));
      expect_close(b2.grad().to(kFloat64).view({out}), want_b, tol * std::sqrt(double(batch)), tol, what + " [1, n] bias");
      expect_close(m2.grad().to(kFloat64), want_w.t(), tol * std::sqrt(double(batch)), tol, what + " mat2");
      // Only the bias needs a gradient: no GEMM for it.
      Tensor b3 = b.to(dev(), dt).requires_grad_();
      nn::functional::linear(x.to(dev(), dt), w.to(dev(), dt), b3).backward(gy.to(dev(), dt));
      expect_close(b3.grad().to(kFloat64), want_b, tol * std::sqrt(double(batch)), tol, what + " bias alone");
    }
  }
}

TEST_P(Layers, Conv2dMatchesLoops) {
  struct Case {
    int64_t n, c, h, w, o, k, s, p, d, g;
    bool bias;
  };
  for (const Case& cs :
       {Case{2, 3, 7, 6, 4, 3, 1, 1, 1, 1, true}, Case{1, 2, 8, 8, 3, 3, 2, 0, 1, 1, false},
        Case{2, 4, 9, 7, 6, 3, 2, 2, 2, 2, true}, Case{1, 1, 5, 5, 2, 1, 1, 0, 1, 1, true}}) {
    nn::Conv2d conv(nn::Conv2dOptions(cs.c, cs.o, cs.k)
                        .stride(cs.s)
                        .padding(cs.p)
                        .dilation(cs.d)
                        .groups(cs.g)
                        .bias(cs.bias));
    auto x = randn({cs.n, cs.c, cs.h, cs.w});
    const int64_t oh = (cs.h + 2 * cs.p - cs.d * (cs.k - 1) - 1) / cs.s + 1;
    const int64_t ow = (cs.w + 2 * cs.p - cs.d * (cs.k - 1) - 1) / cs.s + 1;
    auto want = conv_ref(x, conv->weight, conv->bias, cs.s, cs.p, cs.d, cs.g, oh, ow);
    conv->to(dev());
    auto y = conv(x.to(dev()));
    EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{cs.n, cs.o, oh, ow}));
    expect_close(y, want, 1e-4);
    EXPECT_EQ(y.grad_fn()->name(), "ConvolutionBackward0");
  }
}

TEST_P(Layers, Conv2dGradcheck) {
  gradcheck([](const TL& t) { return F::conv2d(t[0], t[1], t[2], 1, 1); },
            {rnd({2, 2, 4, 5}), rnd({3, 2, 3, 3}), rnd({3})}, dev());
  gradcheck(
      [](const TL& t) {
        return F::conv2d(t[0], t[1], {}, {2, 1}, {0, 1}, {1, 2});
      },
      {rnd({1, 2, 6, 6}), rnd({2, 2, 2, 2})}, dev());
  gradcheck([](const TL& t) { return F::conv2d(t[0], t[1], t[2], 1, 0, 1, 2); },
            {rnd({1, 4, 4, 4}), rnd({4, 2, 2, 2}), rnd({4})}, dev());
  gradcheck([](const TL& t) { return F::conv2d(t[0], t[1]); }, {rnd({2, 3, 3}), rnd({2, 2, 2, 2})},
            dev());  // unbatched
}

// Naive pooling over one plane; kind 0 max, 1 avg (count_include_pad), 2 avg (exclude pad).
std::vector<double> pool_ref(const Tensor& x, int64_t k, int64_t s, int64_t p, int kind, bool ceil_mode) {
  auto xv = x.cpu().to_vector<double>();
  const int64_t NC = x.size(0) * x.size(1), H = x.size(2), W = x.size(3);
  auto out = [&](int64_t in) {
    int64_t o = (in + 2 * p - k + (ceil_mode ? s - 1 : 0)) / s + 1;
    if (ceil_mode && (o - 1) * s >= in + p) --o;
    return o;
  };
  const int64_t OH = out(H), OW = out(W);
  std::vector<double> y;
  for (int64_t m = 0; m < NC; ++m)
    for (int64_t i = 0; i < OH; ++i)
      for (int64_t j = 0; j < OW; ++j) {
        double best = -INFINITY, sum = 0;
        int64_t cnt = 0;
        const int64_t h0 = i * s - p, w0 = j * s - p;
        const int64_t h1 = std::min(h0 + k, H + p), w1 = std::min(w0 + k, W + p);
        const int64_t pool_size = (h1 - h0) * (w1 - w0);
        for (int64_t r = h0; r < h0 + k; ++r)
          for (int64_t q = w0; q < w0 + k; ++q) {
            if (r < 0 || r >= H || q < 0 || q >= W) continue;
            const double v = xv[size_t((m * H + r) * W + q)];
            best = std::max(best, v);
            sum += v;
            ++cnt;
          }
        y.push_back(kind == 0 ? best : sum / double(kind == 1 ? pool_size : cnt));
      }
  return y;
}

TEST_P(Layers, PoolingMatchesLoops) {
  auto x = randn({2, 3, 7, 6});
  for (bool ceil_mode : {false, true}) {
    expect_close(F::max_pool2d(x.to(dev()), 2, std::nullopt, 0, 1, ceil_mode),
                 pool_ref(x, 2, 2, 0, 0, ceil_mode), 1e-6);
    expect_close(F::max_pool2d(x.to(dev()), 3, 2, 1, 1, ceil_mode), pool_ref(x, 3, 2, 1, 0, ceil_mode), 1e-6);
    expect_close(F::avg_pool2d(x.to(dev()), 3, 2, 1, ceil_mode, true), pool_ref(x, 3, 2, 1, 1, ceil_mode),
                 1e-6);
    expect_close(F::avg_pool2d(x.to(dev()), 3, 2, 1, ceil_mode, false), pool_ref(x, 3, 2, 1, 2, ceil_mode),
                 1e-6);
  }
  nn::MaxPool2d mp(2);
  expect_close(mp(x.to(dev())), pool_ref(x, 2, 2, 0, 0, false), 1e-6);
  // Adaptive: even bins are average pooling; global is the mean of each plane.
  expect_close(F::adaptive_avg_pool2d(x.to(dev()), {1, 1}), x.mean({2, 3}, true), 1e-6);
  auto x8 = randn({1, 2, 8, 6});
  expect_close(F::adaptive_avg_pool2d(x8.to(dev()), {4, 3}), pool_ref(x8, 2, 2, 0, 1, false), 1e-6);
  // Uneven bins: bin i spans [floor(i H / O), ceil((i + 1) H / O)).
  auto y = F::adaptive_avg_pool2d(x.to(dev()), {3, 4});
  auto xv = x.to_vector<double>();
  std::vector<double> want;
  for (int64_t m = 0; m < 6; ++m)
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 4; ++j) {
        const int64_t h0 = i * 7 / 3, h1 = ((i + 1) * 7 + 2) / 3, w0 = j * 6 / 4, w1 = ((j + 1) * 6 + 3) / 4;
        double s = 0;
        for (int64_t r = h0; r < h1; ++r)
          for (int64_t q = w0; q < w1; ++q) s += xv[size_t((m * 7 + r) * 6 + q)];
        want.push_back(s / double((h1 - h0) * (w1 - w0)));
      }
  expect_close(y, want, 1e-6);
}

TEST_P(Layers, PoolingGradcheck) {
  // Well separated values, so that no max is tied within the differencing step.
  auto x = (arange(0, 2 * 2 * 5 * 5, 1, kFloat64).view({2, 2, 5, 5}) * 0.37).remainder(3.1) +
           rnd({2, 2, 5, 5}, false) * 1e-3;
  x.requires_grad_();
  gradcheck([](const TL& t) { return F::max_pool2d(t[0], 2); }, {x}, dev());
  gradcheck([](const TL& t) { return F::max_pool2d(t[0], 3, 2, 1, 1, true); }, {x}, dev());
  gradcheck([](const TL& t) { return F::avg_pool2d(t[0], 3, 2, 1, true, false); }, {rnd({1, 2, 5, 4})},
            dev());
  gradcheck([](const TL& t) { return F::avg_pool2d(t[0], 2); }, {rnd({2, 4, 4})}, dev());
  gradcheck([](const TL& t) { return F::adaptive_avg_pool2d(t[0], {2, 3}); }, {rnd({1, 2, 5, 4})}, dev());
}

TEST_P(Layers, BatchNormTrainingAndEval) {
  for (int rank : {2, 3, 4}) {
    std::vector<int64_t> sizes = rank == 2   ? std::vector<int64_t>{6, 3}
                                 : rank == 3 ? std::vector<int64_t>{4, 3, 5}
                                             : std::vector<int64_t>{2, 3, 4, 5};
    auto x = randn(sizes) * 2 + 1;
    std::shared_ptr<nn::BatchNormImplBase> bn;
    if (rank == 4) bn = nn::BatchNorm2d(3).ptr();
    else bn = nn::BatchNorm1d(3).ptr();
    {
      NoGradGuard g;
      bn->weight.copy_(tensor({0.5, 2.0, -1.0}));
      bn->bias.copy_(tensor({0.1, 0.2, 0.3}));
    }
    bn->to(dev());
    // Reference: per channel mean and biased variance over every other dim.
    const int64_t C = 3, outer = sizes[0];
    int64_t inner = 1;
    for (size_t d = 2; d < sizes.size(); ++d) inner *= sizes[d];
    auto xv = x.to_vector<double>();
    std::vector<double> mean(C, 0), var(C, 0);
    const int64_t per = outer * inner;
    auto at = [&](int64_t n, int64_t c, int64_t i) { return xv[size_t((n * C + c) * inner + i)]; };
    for (int64_t c = 0; c < C; ++c) {
      for (int64_t n = 0; n < outer; ++n)
        for (int64_t i = 0; i < inner; ++i) mean[size_t(c)] += at(n, c, i) / double(per);
      for (int64_t n = 0; n < outer; ++n)
        for (int64_t i = 0; i < inner; ++i)
          var[size_t(c)] += std::pow(at(n, c, i) - mean[size_t(c)], 2) / double(per);
    }
    const double w[] = {0.5, 2.0, -1.0}, b[] = {0.1, 0.2, 0.3};
    std::vector<double> want;
    for (int64_t n = 0; n < outer; ++n)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t i = 0; i < inner; ++i)
          want.push_back((at(n, c, i) - mean[size_t(c)]) / std::sqrt(var[size_t(c)] + 1e-5) * w[c] + b[c]);
    auto y = bn->forward(x.to(dev()));
    expect_close(y, want, 1e-4);
    // Running stats: (1 - 0.1) * init + 0.1 * batch stats (unbiased variance).
    std::vector<double> rm, rv;
    for (int64_t c = 0; c < C; ++c) {
      rm.push_back(0.1 * mean[size_t(c)]);
      rv.push_back(0.9 + 0.1 * var[size_t(c)] * double(per) / double(per - 1));
    }
    expect_close(bn->running_mean, rm, 1e-5);
    expect_close(bn->running_var, rv, 1e-5);
    EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);
    // Eval uses the running statistics.
    bn->eval();
    auto ye = bn->forward(x.to(dev()));
    std::vector<double> want_eval;
    for (int64_t n = 0; n < outer; ++n)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t i = 0; i < inner; ++i)
          want_eval.push_back((at(n, c, i) - rm[size_t(c)]) / std::sqrt(rv[size_t(c)] + 1e-5) * w[c] + b[c]);
    expect_close(ye, want_eval, 1e-4);
  }
}

TEST_P(Layers, NormalizationGradcheck) {
  gradcheck([](const TL& t) { return F::batch_norm(t[0], {}, {}, t[1], t[2], true); },
            {rnd({4, 3}), rnd({3}), rnd({3})}, dev());
  gradcheck([](const TL& t) { return F::batch_norm(t[0], {}, {}, t[1], t[2], true); },
            {rnd({2, 2, 3, 2}), rnd({2}), rnd({2})}, dev());
  gradcheck(
      [](const TL& t) {
        return F::batch_norm(t[0], t[1].detach() * 0, t[1].detach() * 0 + 2, t[1], {}, false);
      },
      {rnd({3, 2, 2}), rnd({2})}, dev());
  gradcheck(
      [](const TL& t) {
        return F::layer_norm(t[0], {3, 2}, t[1], t[2]);
      },
      {rnd({2, 3, 2}), rnd({3, 2}), rnd({3, 2})}, dev());
}

TEST_P(Layers, LayerNormMatchesLoops) {
  nn::LayerNorm ln(nn::LayerNormOptions({4}).eps(1e-3));
  {
    NoGradGuard g;
    ln->weight.copy_(tensor({1., 2., 3., 4.}));
    ln->bias.copy_(tensor({0., 1., 0., -1.}));
  }
  auto x = randn({3, 4});
  auto xv = x.to_vector<double>();
  std::vector<double> want;
  for (int r = 0; r < 3; ++r) {
    double m = 0, v = 0;
    for (int i = 0; i < 4; ++i) m += xv[size_t(r * 4 + i)] / 4;
    for (int i = 0; i < 4; ++i) v += std::pow(xv[size_t(r * 4 + i)] - m, 2) / 4;
    const double w[] = {1, 2, 3, 4}, b[] = {0, 1, 0, -1};
    for (int i = 0; i < 4; ++i)
      want.push_back((xv[size_t(r * 4 + i)] - m) / std::sqrt(v + 1e-3) * w[i] + b[i]);
  }
  ln->to(dev());
  expect_close(ln(x.to(dev())), want, 1e-5);
}

TEST_P(Layers, EmbeddingLooksUpRows) {
  nn::Embedding emb(nn::EmbeddingOptions(6, 3).padding_idx(2));
  expect_close(emb->weight[2], std::vector<double>{0, 0, 0}, 0);
  emb->to(dev());
  auto idx = tensor({{1, 2}, {5, 1}}).to(dev());
  auto y = emb(idx);
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{2, 2, 3}));
  EXPECT_EQ(y.grad_fn()->name(), "EmbeddingBackward0");
  auto w = emb->weight.detach().cpu();
  expect_close(y[0][0], w[1], 0, 0);
  expect_close(y[1][0], w[5], 0, 0);
  // Gradient: row 1 used twice gets twice; the padding row gets none.
  (y * 1).sum().backward();
  auto g = emb->weight.grad().cpu();
  expect_close(g[1], std::vector<double>{2, 2, 2}, 0);
  expect_close(g[5], std::vector<double>{1, 1, 1}, 0);
  expect_close(g[2], std::vector<double>{0, 0, 0}, 0);
  expect_close(g[0], std::vector<double>{0, 0, 0}, 0);
  gradcheck(
      [](const TL& t) {
        return F::embedding(tensor({0, 2, 2, 1}, TensorOptions(t[0].device())), t[0]);
      },
      {rnd({3, 2})}, dev());
  // A negative padding_idx counts from the end; int32 indices work as int64 ones.
  auto w2 = rnd({4, 2}).to(dev()).detach().requires_grad_();
  auto y2 = F::embedding(tensor({{3, 0}, {3, 1}}, TensorOptions(kInt32).device(dev())), w2, -1);
  y2.sum().backward();
  expect_close(y2[0][1], w2.detach()[0].cpu(), 0, 0);
  expect_close(w2.grad(), std::vector<double>{1, 1, 1, 1, 0, 0, 0, 0}, 0);
}

TEST_P(Layers, DropoutScalesKeptElements) {
  nn::Dropout drop(0.25);
  auto x = ones({20000}).to(dev());
  auto y = drop(x).cpu().to_vector<float>();
  int64_t kept = 0;
  for (float v : y) {
    EXPECT_TRUE(v == 0.0f || std::abs(v - 1 / 0.75f) < 1e-6) << v;
    kept += v != 0;
  }
  // 15000 expected; the binomial standard deviation is about 61.
  EXPECT_NEAR(double(kept), 15000, 400);
  drop->eval();
  expect_close(drop(x), x, 0, 0);
}

TEST_P(Layers, ActivationModules) {
  auto x = randn({3, 4}).to(dev());
  expect_close(nn::ReLU()(x), relu(x), 0, 0);
  expect_close(nn::GELU()(x), gelu(x), 0, 0);
  expect_close(nn::GELU("tanh")(x), gelu(x, "tanh"), 0, 0);
  expect_close(nn::SiLU()(x), silu(x), 0, 0);
  expect_close(nn::Sigmoid()(x), sigmoid(x), 0, 0);
  expect_close(nn::Tanh()(x), tanh(x), 0, 0);
  expect_close(nn::Softmax(1)(x), softmax(x, 1), 0, 0);
  EXPECT_EQ(nn::Flatten()(randn({2, 3, 4})).sizes().vec(), (std::vector<int64_t>{2, 12}));
}

WICK_INSTANTIATE_ON_DEVICES(Layers);

}  // namespace
