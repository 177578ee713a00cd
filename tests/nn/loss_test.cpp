// Losses against float64 references written out per element, and their gradient checks.
#include <cmath>

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

class Losses : public wick::testing::OnEachDevice<3> {};

// Cross entropy of logits [N, C] and class targets, per PyTorch's definition, in float64:
// per element (1 - ls) w_t (-log p_t) + ls / C sum_c w_c (-log p_c), ignored ones dropped;
// "mean" divides each part by the sum of w_t over the kept elements.
double ce_ref(const std::vector<double>& x, const std::vector<int64_t>& t, int64_t C,
              const std::vector<double>& w, int64_t ignore, double ls, const std::string& reduction,
              std::vector<double>* per = nullptr) {
  const int64_t N = int64_t(t.size());
  double nll_sum = 0, smooth_sum = 0, wsum = 0;
  for (int64_t n = 0; n < N; ++n) {
    double mx = -INFINITY;
    for (int64_t c = 0; c < C; ++c) mx = std::max(mx, x[size_t(n * C + c)]);
    double se = 0;
    for (int64_t c = 0; c < C; ++c) se += std::exp(x[size_t(n * C + c)] - mx);
    auto logp = [&](int64_t c) { return x[size_t(n * C + c)] - mx - std::log(se); };
    if (t[size_t(n)] == ignore) {
      if (per) per->push_back(0);
      continue;
    }
    const double wt = w.empty() ? 1 : w[size_t(t[size_t(n)])];
    double smooth = 0;
    for (int64_t c = 0; c < C; ++c) smooth += -(w.empty() ? 1 : w[size_t(c)]) * logp(c);
    const double nll = -wt * logp(t[size_t(n)]);
    if (per) per->push_back((1 - ls) * nll + ls / double(C) * smooth);
    nll_sum += nll;
    smooth_sum += smooth;
    wsum += wt;
  }
  if (reduction == "sum") return (1 - ls) * nll_sum + ls / double(C) * smooth_sum;
  return (1 - ls) * nll_sum / wsum + ls / double(C) * smooth_sum / wsum;
}

TEST_P(Losses, CrossEntropyMatchesDefinition) {
  const int64_t N = 6, C = 4;
  auto x = randn({N, C}, kFloat64) * 2;
  std::vector<int64_t> t{0, 3, 1, 3, 2, 1};
  std::vector<double> w{1.0, 3.0, 0.5, 2.0};
  auto target = tensor({0, 3, 1, 3, 2, 1}).to(dev());
  auto weight = tensor({1.0, 3.0, 0.5, 2.0}, kFloat64).to(dev());
  auto xv = x.to_vector<double>();
  auto xd = x.to(dev());
  for (double ls : {0.0, 0.2}) {
    for (std::string red : {"mean", "sum"}) {
      for (bool use_w : {false, true}) {
        for (int64_t ignore : {int64_t(-100), int64_t(3)}) {
          double want = ce_ref(xv, t, C, use_w ? w : std::vector<double>{}, ignore, ls, red);
          auto got = F::cross_entropy(xd, target, use_w ? weight : Tensor(), ignore, red, ls);
          expect_close(got, {want}, 1e-10, red + (use_w ? " weighted" : "") + " ls=" + std::to_string(ls));
        }
      }
    }
    std::vector<double> per;
    ce_ref(xv, t, C, w, 3, ls, "none", &per);
    expect_close(F::cross_entropy(xd, target, weight, 3, "none", ls), per, 1e-10);
  }
  // The module keeps its weight as a buffer and gives the same value.
  nn::CrossEntropyLoss crit(
      nn::CrossEntropyLossOptions().weight(tensor({1.0, 3.0, 0.5, 2.0}, kFloat64)).label_smoothing(0.2));
  crit->to(dev());
  expect_close(crit(xd, target), {ce_ref(xv, t, C, w, -100, 0.2, "mean")}, 1e-10);
  ASSERT_EQ(crit->named_buffers().size(), 1u);
  EXPECT_EQ(crit->named_buffers()[0].first, "weight");
}

TEST_P(Losses, CrossEntropyWithProbabilitiesAndSpatialTargets) {
  // Probabilities: -sum_c q_c log p_c, mean over the batch.
  auto x = randn({3, 4}, kFloat64);
  auto q = softmax(randn({3, 4}, kFloat64), 1);
  auto want = -(q * log_softmax(x, 1)).sum({1}).mean();
  expect_close(F::cross_entropy(x.to(dev()), q.to(dev())), want, 1e-12);
  // [N, C, d]: the class dim is 1; same as moving it last and flattening.
  auto x3 = randn({2, 3, 5}, kFloat64);
  auto t3 = randint(3, {2, 5});
  auto flat = F::cross_entropy(x3.permute({0, 2, 1}).reshape({10, 3}), t3.reshape({10}));
  expect_close(F::cross_entropy(x3.to(dev()), t3.to(dev())), flat, 1e-12);
}

TEST_P(Losses, RegressionAndBinaryLosses) {
  auto a = randn({3, 4}, kFloat64), b = randn({3, 4}, kFloat64);
  auto av = a.to_vector<double>(), bv = b.to_vector<double>();
  double mse = 0, l1 = 0, bce = 0, bce_pw = 0;
  auto y = (rand({3, 4}, kFloat64) > 0.5).to(kFloat64);
  auto yv = y.to_vector<double>();
  const double pw = 2.5;
  for (size_t i = 0; i < av.size(); ++i) {
    mse += (av[i] - bv[i]) * (av[i] - bv[i]) / 12;
    l1 += std::abs(av[i] - bv[i]) / 12;
    const double s = 1 / (1 + std::exp(-av[i]));
    bce += -(yv[i] * std::log(s) + (1 - yv[i]) * std::log(1 - s)) / 12;
    bce_pw += -(pw * yv[i] * std::log(s) + (1 - yv[i]) * std::log(1 - s)) / 12;
  }
  auto ad = a.to(dev()), bd = b.to(dev()), yd = y.to(dev());
  expect_close(nn::MSELoss()(ad, bd), {mse}, 1e-12);
  expect_close(nn::L1Loss()(ad, bd), {l1}, 1e-12);
  expect_close(F::mse_loss(ad, bd, "sum"), {mse * 12}, 1e-10);
  expect_close(nn::BCEWithLogitsLoss()(ad, yd), {bce}, 1e-12);
  nn::BCEWithLogitsLoss bcep(nn::BCEWithLogitsLossOptions().pos_weight(full({4}, pw, kFloat64)));
  bcep->to(dev());
  expect_close(bcep(ad, yd), {bce_pw}, 1e-12);
  // Large logits stay finite.
  auto big = tensor({100.0, -100.0}, kFloat64).to(dev());
  expect_close(F::binary_cross_entropy_with_logits(big, tensor({0.0, 1.0}, kFloat64).to(dev()), {}, "none"),
               std::vector<double>{100, 100}, 1e-9);
}

TEST_P(Losses, NLLLossMatchesPickedLogProbabilities) {
  auto lp = log_softmax(randn({4, 3}, kFloat64), 1);
  auto t = tensor({2, 0, 1, 2});
  auto lv = lp.to_vector<double>();
  double want = -(lv[2] + lv[3] + lv[7] + lv[11]) / 4;
  expect_close(nn::NLLLoss()(lp.to(dev()), t.to(dev())), {want}, 1e-12);
}

TEST_P(Losses, Gradcheck) {
  auto t = tensor({0, 3, 1, 3, 2});
  auto w = tensor({1.0, 3.0, 0.5, 2.0}, kFloat64);
  gradcheck([t](const TL& x) { return F::cross_entropy(x[0], t.to(x[0].device())); }, {rnd({5, 4})}, dev());
  gradcheck(
      [t, w](const TL& x) {
        auto d = x[0].device();
        return F::cross_entropy(x[0], t.to(d), w.to(d), 1, "mean", 0.1);
      },
      {rnd({5, 4})}, dev());
  gradcheck([t](const TL& x) { return F::cross_entropy(x[0], t.to(x[0].device()), {}, -100, "none", 0.3); },
            {rnd({5, 4})}, dev());
  gradcheck([](const TL& x) { return F::cross_entropy(x[0], softmax(x[1], 1)); }, {rnd({3, 4}), rnd({3, 4})},
            dev());
  gradcheck([](const TL& x) { return F::mse_loss(x[0], x[1]); }, {rnd({3, 2}), rnd({3, 2})}, dev());
  gradcheck([](const TL& x) { return F::l1_loss(x[0], x[1]); }, {rnd({3, 2}), rnd({3, 2}) + 5}, dev());
  gradcheck([](const TL& x) { return F::binary_cross_entropy_with_logits(x[0], x[1], {}, "mean", x[2]); },
            {rnd({3, 2}), rnd({3, 2}, false).sigmoid(), rnd({2}, false).abs()}, dev());
}

WICK_INSTANTIATE_ON_DEVICES(Losses);

}  // namespace
