// cross_entropy of 16-bit logits [N, C] that need grad (or run under autocast): core's
// cross_entropy_rows reads the logits once per row, in float, and its backward writes their
// gradient in one kernel, with no log_softmax tensor and no float32 copy of the logits.
// Values and gradients against a float64 reference computed from the same 16-bit values, for
// each reduction, with and without class weights and ignored rows, a non-contiguous input, on
// every device; the loss's dtype with and without autocast; the node's name; bad targets; a
// gradient of a gradient.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../autograd/gradcheck.h"
#include "nn_test_util.h"
#include "wick/amp.h"
#include "wick/autograd.h"
#include "wick/wick.h"

namespace wick {
namespace {

namespace F = nn::functional;
using testing::error_of;
using testing::expect_close;

struct Reference {
  Tensor loss;  // float64
  Tensor grad;  // float64 [N, C]: d<loss, g>/dx
};

// In float64 from x's values: per row lse - x[t], weighted by w[t] (0 where ignored), reduced;
// the gradient coef_n * (softmax - onehot) with coef_n = w[t] * g (mean: / sum of weights).
Reference reference(const Tensor& x, const Tensor& t, const Tensor& w, int64_t ignore, const std::string& red,
                    const Tensor& g) {
  const int64_t N = x.size(0), C = x.size(1);
  auto xv = x.detach().cpu().to(kFloat64).contiguous().to_vector<double>();
  auto tv = t.cpu().to_vector<int64_t>();
  std::vector<double> wv(static_cast<size_t>(C), 1.0);
  if (w.defined()) wv = w.detach().cpu().to(kFloat64).to_vector<double>();
  auto gv = g.cpu().to(kFloat64).contiguous().to_vector<double>();
  std::vector<double> per(static_cast<size_t>(N)), wt(static_cast<size_t>(N)), grad(static_cast<size_t>(N * C), 0.0);
  std::vector<std::vector<double>> p(static_cast<size_t>(N), std::vector<double>(static_cast<size_t>(C)));
  double total = 0, sum = 0;
  for (int64_t n = 0; n < N; ++n) {
    double mx = -INFINITY;
    for (int64_t c = 0; c < C; ++c) mx = std::max(mx, xv[size_t(n * C + c)]);
    double se = 0;
    for (int64_t c = 0; c < C; ++c) se += std::exp(xv[size_t(n * C + c)] - mx);
    const double lse = mx + std::log(se);
    for (int64_t c = 0; c < C; ++c) p[size_t(n)][size_t(c)] = std::exp(xv[size_t(n * C + c)] - lse);
    const int64_t k = tv[size_t(n)];
    wt[size_t(n)] = k == ignore ? 0.0 : wv[size_t(k)];
    per[size_t(n)] = k == ignore ? 0.0 : wt[size_t(n)] * (lse - xv[size_t(n * C + k)]);
    total += wt[size_t(n)];
    sum += per[size_t(n)];
  }
  Reference r;
  if (red == "none") r.loss = from_blob(per.data(), {N}, TensorOptions(kFloat64)).clone();
  else r.loss = tensor(red == "sum" ? sum : sum / total, TensorOptions(kFloat64));
  for (int64_t n = 0; n < N; ++n) {
    const int64_t k = tv[size_t(n)];
    if (k == ignore) continue;
    const double gn = red == "none" ? gv[size_t(n)] : gv[0];
    const double coef = wt[size_t(n)] * (red == "mean" ? gn / total : gn);
    for (int64_t c = 0; c < C; ++c)
      grad[size_t(n * C + c)] = coef * (p[size_t(n)][size_t(c)] - (c == k ? 1.0 : 0.0));
  }
  r.grad = from_blob(grad.data(), {N, C}, TensorOptions(kFloat64)).clone();
  return r;
}

class CrossEntropyRows : public ::testing::Test {
 protected:
  void SetUp() override { manual_seed(5); }
};

TEST_F(CrossEntropyRows, MatchesFloat64Reference) {
  for (Device d : testing::test_devices())
    for (Dtype dt : {kBFloat16, kFloat16})
      for (int64_t C : {3, 1500})
        for (const std::string red : {"mean", "sum", "none"})
          for (bool weighted : {false, true})
            for (int64_t ignore : {int64_t(-100), int64_t(1)}) {
              const int64_t N = 9;
              const std::string what = std::string(name(dt)) + " C=" + std::to_string(C) + " " + red +
                                       (weighted ? " weighted" : "") + " ignore=" + std::to_string(ignore) +
                                       " on " + d.str();
              // non-contiguous logits: the transpose of a [C, N] tensor
              Tensor x = (randn({C, N}) * 3).to(d, dt).t().requires_grad_();
              ASSERT_FALSE(x.is_contiguous());
              Tensor t = randint(0, C, {N}, TensorOptions(kInt64)).to(d);
              t[2] = ignore;  // an ignored row
              t[4] = 1;       // a row of class 1 (ignored too when ignore_index is 1)
              Tensor w = weighted ? (rand({C}) + 0.5).to(d, dt) : Tensor();
              Tensor loss = F::cross_entropy(x, t, w, ignore, red);
              EXPECT_EQ(loss.dtype(), dt) << what;
              EXPECT_EQ(loss.grad_fn()->name(), "NllLossBackward0") << what;
              Tensor g = red == "none" ? randn({N}) : tensor(1.7);
              (loss * g.to(d, dt)).sum().backward();
              Reference r = reference(x, t, w, ignore, red, g.to(dt));
              const double tol = dt == kBFloat16 ? 2e-2 : 4e-3;
              expect_close(loss.to(kFloat64), r.loss, tol, tol, what + " loss");
              expect_close(x.grad().to(kFloat64), r.grad, tol * 0.1, tol, what + " grad");
              EXPECT_EQ(x.grad().dtype(), dt);
            }
}

// Under autocast the loss is float32 (PyTorch casts the logits to float32 first); the values
// are the float32 ones, and the gradient reaches the 16-bit logits in their dtype.
TEST_F(CrossEntropyRows, AutocastGivesFloat32LossWithoutCastingTheLogits) {
  for (Device d : testing::test_devices()) {
    const int64_t N = 6, C = 2000;
    Tensor x = randn({N, C}).to(d, kBFloat16).requires_grad_();
    Tensor t = randint(0, C, {N}, TensorOptions(kInt64)).to(d);
    Tensor loss;
    {
      AutocastGuard guard(d.type(), kBFloat16);
      loss = F::cross_entropy(x, t);
    }
    EXPECT_EQ(loss.dtype(), kFloat32);
    loss.backward();
    Reference r = reference(x, t, {}, -100, "mean", tensor(1.0));
    expect_close(loss.to(kFloat64), r.loss, 1e-5, 1e-5, "loss on " + d.str());
    expect_close(x.grad().to(kFloat64), r.grad, 1e-4, 2e-2, "grad on " + d.str());
    EXPECT_EQ(x.grad().dtype(), kBFloat16);
    // the same as the float32 path on a float32 copy of the logits
    Tensor x32 = x.detach().to(kFloat32).requires_grad_();
    Tensor l32 = F::cross_entropy(x32, t);
    expect_close(loss, l32, 1e-5, 1e-5, "float32 path on " + d.str());
  }
}

// A loss that needs grad gets its gradient written by the forward's pass over the logits (for a
// loss gradient of 1); the backward hands it out when the pass frees the graph and g is 1,
// scales it when g is not 1, and computes a fresh one when the graph is kept. Every path gives
// the reference's gradient, and a kept graph's second pass is not disturbed by the first.
TEST_F(CrossEntropyRows, GradientWrittenByTheForward) {
  for (Device d : testing::test_devices())
    for (const std::string red : {"mean", "sum"})
      for (bool weighted : {false, true}) {
        const int64_t N = 7, C = 264;
        const std::string what = red + (weighted ? " weighted" : "") + " on " + d.str();
        Tensor values = randn({N, C}) * 2;
        Tensor t = randint(0, C, {N}, TensorOptions(kInt64)).to(d);
        t[3] = -100;
        Tensor w = weighted ? (rand({C}) + 0.5).to(d, kBFloat16) : Tensor();
        auto fresh = [&] { return values.to(d, kBFloat16).requires_grad_(); };
        auto want = [&](const Tensor& x, double g) {
          return reference(x, t, w, -100, red, tensor(g)).grad;
        };
        const double tol = 2e-2;
        {  // g == 1: the forward's gradient as it is
          Tensor x = fresh();
          F::cross_entropy(x, t, w, -100, red).backward();
          expect_close(x.grad().to(kFloat64), want(x, 1.0), tol * 0.1, tol, what + " g=1");
        }
        {  // g != 1: rewritten from the logits
          Tensor x = fresh();
          (F::cross_entropy(x, t, w, -100, red) * 0.25).backward();
          expect_close(x.grad().to(kFloat64), want(x, 0.25), tol * 0.1, tol, what + " g=0.25");
        }
        {  // a kept graph: two passes, 1 then 3, sum to the gradient for 4
          Tensor x = fresh();
          Tensor loss = F::cross_entropy(x, t, w, -100, red);
          loss.backward({}, /*retain_graph=*/true);
          expect_close(x.grad().to(kFloat64), want(x, 1.0), tol * 0.1, tol, what + " first of two");
          (loss * 3.0).backward();
          expect_close(x.grad().to(kFloat64), want(x, 4.0), tol * 0.4, tol, what + " second of two");
        }
        {  // autograd::grad, the graph kept and then freed: the same gradient twice
          Tensor x = fresh();
          Tensor loss = F::cross_entropy(x, t, w, -100, red);
          Tensor g1 = autograd::grad({loss}, {x}, {}, /*retain_graph=*/true)[0];
          Tensor g2 = autograd::grad({loss}, {x})[0];
          expect_close(g1.to(kFloat64), want(x, 1.0), tol * 0.1, tol, what + " grad kept");
          expect_close(g2.to(kFloat64), want(x, 1.0), tol * 0.1, tol, what + " grad freed");
          EXPECT_FALSE(g1.is_same(g2)) << what;
        }
        {  // two losses over the same logits: each node's own gradient, summed
          Tensor x = fresh();
          (F::cross_entropy(x, t, w, -100, red) + F::cross_entropy(x, t, w, -100, red)).backward();
          expect_close(x.grad().to(kFloat64), want(x, 2.0), tol * 0.2, tol, what + " two losses");
        }
      }
}

TEST_F(CrossEntropyRows, BadTargetRaisesAndChangesNothing) {
  Tensor x = randn({4, 50}).to(kBFloat16).requires_grad_();
  Tensor t = tensor({1, 2, 50, 3});
  Tensor before = x.detach().clone();
  EXPECT_EQ(error_of([&] { F::cross_entropy(x, t); }), "[cross_entropy] Target 50 is out of bounds.");
  EXPECT_TRUE((x.detach() == before).all().item<bool>());
  EXPECT_FALSE(x.grad().defined());
}

// With create_graph the gradient is built from recording ops, so it has a gradient itself: the
// same second derivative as the float32 path's, within bfloat16's rounding.
TEST_F(CrossEntropyRows, GradientOfGradient) {
  for (Device d : testing::test_devices()) {
    const int64_t N = 5, C = 40;
    Tensor values = randn({N, C});
    Tensor t = randint(0, C, {N}, TensorOptions(kInt64)).to(d);
    Tensor h = randn({N, C}).to(d);
    auto second = [&](Dtype dt) {
      Tensor x = values.to(d, dt).detach().requires_grad_();
      Tensor loss = F::cross_entropy(x, t, {}, -100, "sum");
      Tensor g = autograd::grad({loss}, {x}, {}, true, true)[0];
      EXPECT_TRUE(g.requires_grad()) << name(dt);
      (g.to(kFloat32) * h).sum().backward();
      EXPECT_TRUE(x.grad().defined()) << name(dt);
      return x.grad().defined() ? x.grad().to(kFloat64) : zeros({N, C}, kFloat64);
    };
    Tensor want = second(kFloat32);
    expect_close(second(kBFloat16), want, 2e-2, 5e-2, "on " + d.str());
    EXPECT_GT(want.abs().max().item<double>(), 1e-3);  // a non-trivial second derivative
  }
}

}  // namespace
}  // namespace wick
