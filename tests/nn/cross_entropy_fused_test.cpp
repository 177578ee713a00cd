// cross_entropy on CUDA when small logits need grad: one kernel writes log_softmax and the loss
// (core/loss.h's log_softmax_nll_loss), recorded as LogSoftmaxBackward0 under
// NllLossBackward0. Values and input gradients against float64 CPU references computed the
// composite way (log_softmax, then nll_loss), the two-kernel path's results bit for bit, node
// names, errors, and finite differences. Its backward, one kernel to the logits where nothing
// can observe the gradient wrt log_softmax: the same gradients, and the two kernels elsewhere.
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "../autograd/gradcheck.h"
#include "nn_test_util.h"
#include "wick/autograd.h"
#include "wick/cuda.h"
#include "wick/wick.h"

using namespace wick;
namespace F = wick::nn::functional;
using wick::testing::expect_close;
using wick::testing::gradcheck;
using wick::testing::rnd;
using TL = std::vector<Tensor>;

namespace {

class CrossEntropyFusedCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device";
    manual_seed(11);
  }
  static Device gpu() { return Device(kCUDA, 0); }
};

// Loss and input gradient of cross_entropy(x, ...) backpropagated from upstream gradient g
// (the loss's shape); x is a leaf copy of values on x's device.
struct LossAndGrad {
  Tensor loss, grad;
};

LossAndGrad fused(const Tensor& values, const Tensor& t, const Tensor& w, int64_t ignore, const std::string& red,
                  const Tensor& g) {
  Tensor x = values.detach().requires_grad_();  // keeps the layout of values
  Tensor loss = F::cross_entropy(x, t, w, ignore, red);
  (loss * g).sum().backward();
  return {loss.detach(), x.grad()};
}

// The composite: log_softmax, then nll_loss (cross_entropy's two-kernel path on CUDA).
LossAndGrad composite(const Tensor& values, const Tensor& t, const Tensor& w, int64_t ignore,
                      const std::string& red, const Tensor& g) {
  Tensor x = values.detach().requires_grad_();  // keeps the layout of values
  Tensor loss = F::nll_loss(log_softmax(x, 1), t, w, ignore, red);
  (loss * g).sum().backward();
  return {loss.detach(), x.grad()};
}

std::vector<double> values_of(const Tensor& t) { return t.detach().cpu().to(kFloat64).to_vector<double>(); }

TEST_F(CrossEntropyFusedCuda, LossAndGradientMatchFloat64Composite) {
  for (Dtype dt : {kFloat32, kFloat64}) {
    const double atol = dt == kFloat64 ? 1e-12 : 2e-5, rtol = dt == kFloat64 ? 1e-12 : 2e-5;
    for (int64_t n : {1, 3, 64, 200}) {
      for (int64_t c : {1, 10, 33, 1000}) {
        // N * C beyond the one-block bound (200 x 1000) takes the two kernels: the same values.
        Tensor xd = (randn({n, c}, kFloat64) * 3).to(gpu(), dt);
        Tensor x64 = xd.cpu().to(kFloat64);  // the logits as dt holds them
        Tensor t = randint(c, {n});
        for (int64_t i = 1; i < n; i += 3) t.select(0, i).fill_(-100);  // ignored rows (none when n == 1)
        Tensor w = rand({c}, kFloat64) + 0.5;
        for (bool use_w : {false, true}) {
          for (std::string red : {"none", "mean", "sum"}) {
            const std::string what = std::string(name(dt)) + " n=" + std::to_string(n) + " c=" +
                                     std::to_string(c) + (use_w ? " weighted " : " ") + red;
            SCOPED_TRACE(what);
            Tensor g = red == "none" ? randn({n}, kFloat64) : full({}, 0.75, kFloat64);
            const LossAndGrad want = composite(x64, t, use_w ? w : Tensor(), -100, red, g);
            Tensor xg = xd.detach().clone().requires_grad_();
            Tensor loss = F::cross_entropy(xg, t.to(gpu()), use_w ? w.to(gpu(), dt) : Tensor(), -100, red);
            ASSERT_TRUE(loss.grad_fn());
            EXPECT_EQ(loss.grad_fn()->name(), "NllLossBackward0");
            ASSERT_EQ(loss.grad_fn()->next_edges().size(), 1u);
            EXPECT_EQ(loss.grad_fn()->next_edges()[0].function->name(), "LogSoftmaxBackward0");
            EXPECT_EQ(loss.dtype(), dt);
            EXPECT_TRUE(loss.is_cuda());
            (loss * g.to(gpu(), dt)).sum().backward();
            expect_close(loss, want.loss, atol, rtol, what + " loss");
            ASSERT_TRUE(xg.grad().defined());
            expect_close(xg.grad(), want.grad, atol, rtol, what + " grad");
          }
        }
      }
    }
  }
}

// Logits that are not contiguous (a transpose) and a weight of another dtype: the kernel gets
// a contiguous copy, the gradient goes to the original tensor.
TEST_F(CrossEntropyFusedCuda, NonContiguousLogits) {
  Tensor x64 = randn({7, 12}, kFloat64).t();  // [12, 7], not contiguous
  ASSERT_FALSE(x64.is_contiguous());
  Tensor t = tensor({3, 0, 6, -100, 2, 5, 1, 4, 0, 6, 3, 2});
  Tensor w = rand({7}, kFloat64) + 0.5;
  Tensor xd = x64.t().to(gpu()).t();  // the same values, transposed on the GPU
  ASSERT_FALSE(xd.is_contiguous());
  for (std::string red : {"none", "mean", "sum"}) {
    SCOPED_TRACE(red);
    Tensor g = red == "none" ? randn({12}, kFloat64) : full({}, 1.0, kFloat64);
    const LossAndGrad want = composite(x64, t, w, -100, red, g);
    const LossAndGrad got = fused(xd, t.to(gpu()), w.to(gpu(), kFloat32), -100, red, g.to(gpu()));
    expect_close(got.loss, want.loss, 1e-6, 1e-6, red);
    expect_close(got.grad, want.grad, 1e-6, 1e-6, red);
  }
}

// The one-kernel forward is the two-kernel forward bit for bit where the kernels share their
// arithmetic (rows of up to 1024 classes): the same log_softmax values (saved for backward, so
// the same gradients) and the same loss and total weight.
TEST_F(CrossEntropyFusedCuda, SameBitsAsTwoKernelPath) {
  for (Dtype dt : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    const std::vector<std::pair<int64_t, int64_t>> shapes{{1, 1}, {3, 10}, {64, 10}, {200, 33}, {64, 1000}};
    for (auto [n, c] : shapes) {
      Tensor xd = (randn({n, c}, kFloat64) * 2).to(gpu(), dt);
      Tensor t = randint(c, {n});
      if (n > 1) t.select(0, 1).fill_(-100);
      Tensor w = (rand({c}, kFloat64) + 0.5).to(gpu(), dt);
      for (bool use_w : {false, true}) {
        for (std::string red : {"none", "mean", "sum"}) {
          const std::string what = std::string(name(dt)) + " n=" + std::to_string(n) + " c=" + std::to_string(c) +
                                   (use_w ? " weighted " : " ") + red;
          SCOPED_TRACE(what);
          Tensor g = (red == "none" ? randn({n}, kFloat64) : full({}, 0.5, kFloat64)).to(gpu(), dt);
          const Tensor tg = t.to(gpu()), wd = use_w ? w : Tensor();
          const LossAndGrad a = fused(xd, tg, wd, -100, red, g), b = composite(xd, tg, wd, -100, red, g);
          EXPECT_EQ(values_of(a.loss), values_of(b.loss));
          EXPECT_EQ(values_of(a.grad), values_of(b.grad));
        }
      }
    }
  }
}

TEST_F(CrossEntropyFusedCuda, Gradchecks) {
  Tensor t = tensor({0, 3, 1, 3, 2, 6});
  Tensor w = tensor({1.0, 3.0, 0.5, 2.0, 1.5, 0.25, 4.0}, kFloat64);
  for (std::string red : {"none", "mean", "sum"}) {
    SCOPED_TRACE(red);
    gradcheck([=](const TL& x) { return F::cross_entropy(x[0], t.to(x[0].device()), {}, -100, red); },
              {rnd({6, 7})}, gpu());
    gradcheck(
        [=](const TL& x) {
          auto d = x[0].device();
          return F::cross_entropy(x[0], t.to(d), w.to(d), 3, red);  // rows of class 3 ignored
        },
        {rnd({6, 7})}, gpu());
  }
}

// Bad arguments raise what the composite raises (the CPU's messages), naming cross_entropy.
TEST_F(CrossEntropyFusedCuda, ArgumentErrorsAsComposite) {
  auto message = [](auto f) -> std::string {
    try {
      f();
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  Tensor x = randn({3, 5}, kFloat32);
  auto both = [&](const Tensor& t, const Tensor& w) {
    const std::string cpu = message([&] {
      F::cross_entropy(x.clone().requires_grad_(), t, w);
    });
    const std::string cuda = message([&] {
      F::cross_entropy(x.to(gpu()).requires_grad_(), t.to(gpu()), w.defined() ? w.to(gpu()) : w);
    });
    EXPECT_EQ(cuda, cpu);
    EXPECT_EQ(cuda.rfind("[cross_entropy] ", 0), 0u) << cuda;
  };
  both(tensor({1, 0}), {});                   // batch sizes differ
  both(zeros({3, 2}, kInt64), {});            // multi-target
  both(tensor({1, 0, 4}), ones({4}));         // weight of the wrong size
  both(tensor({1, 0, 4}).to(kInt32), {});     // int32 targets
  both(tensor({1, 0, 4}), ones({5}, kInt64));  // an integer weight
  EXPECT_THROW(F::cross_entropy(x.to(gpu()).requires_grad_(), tensor({1, 0}).to(gpu())), ValueError);
}

// A target out of range: as on the two-kernel path, the element's loss is NaN and the
// IndexError comes at the next synchronize (or nll_loss call), once; backward still runs.
TEST_F(CrossEntropyFusedCuda, BadTargetIsReportedLater) {
  Tensor x = randn({3, 5}, TensorOptions(kFloat32).device(gpu())).requires_grad_();
  Tensor loss = F::cross_entropy(x, tensor({1, 12, 0}).cuda());
  try {
    cuda::synchronize();
    FAIL() << "no error";
  } catch (const IndexError& e) {
    EXPECT_STREQ(e.what(), "[nll_loss] Target 12 is out of bounds.");
  }
  EXPECT_TRUE(std::isnan(loss.item<float>()));
  cuda::synchronize();  // reported once
  Tensor none = F::cross_entropy(x, tensor({1, -7, 0}).cuda(), {}, -100, "none");
  const auto l = values_of(none);
  ASSERT_EQ(l.size(), 3u);
  EXPECT_FALSE(std::isnan(l[0]));
  EXPECT_TRUE(std::isnan(l[1]));
  EXPECT_FALSE(std::isnan(l[2]));
  try {
    F::cross_entropy(x, tensor({1, 1, 0}).cuda());
    FAIL() << "no error";
  } catch (const IndexError& e) {
    EXPECT_STREQ(e.what(), "[cross_entropy] Target -7 is out of bounds.");
  }
  Tensor ok = F::cross_entropy(x, tensor({1, 1, 0}).cuda());
  ok.backward();
  cuda::synchronize();
  EXPECT_TRUE(x.grad().defined());
}

// ---- the backward in one kernel: NllLossBackward0 of the one-kernel forward writes the
// gradient wrt the logits and LogSoftmaxBackward0 hands it on, wherever nothing can observe
// the gradient wrt logp; else the two nodes' own kernels.

// d(sum_i s_i loss_i)/dx by hand in float64, x [N, C] (any device and dtype, read as it holds
// its values): a row of target v not ignored gets s * w[v] * (softmax(x_i) - onehot(v)), with
// s = g[i] (none), g (sum) or g / (the weights of the targets not ignored, summed) (mean).
std::vector<double> grad_by_hand(const Tensor& x, const Tensor& target, const Tensor& weight, int64_t ignore,
                                 const std::string& red, const Tensor& g) {
  const int64_t n = x.size(0), c = x.size(1);
  const std::vector<double> xv = values_of(x), gv = values_of(g);
  const std::vector<int64_t> t = target.cpu().to_vector<int64_t>();
  const std::vector<double> w = weight.defined() ? values_of(weight) : std::vector<double>(size_t(c), 1.0);
  double total = 0;
  for (int64_t i = 0; i < n; ++i)
    if (t[size_t(i)] != ignore) total += w[size_t(t[size_t(i)])];
  std::vector<double> out(size_t(n * c), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = t[size_t(i)];
    if (v == ignore) continue;
    const double s = red == "none" ? gv[size_t(i)] : red == "sum" ? gv[0] : gv[0] / total;
    double m = -INFINITY, z = 0;
    for (int64_t k = 0; k < c; ++k) m = std::max(m, xv[size_t(i * c + k)]);
    for (int64_t k = 0; k < c; ++k) z += std::exp(xv[size_t(i * c + k)] - m);
    for (int64_t k = 0; k < c; ++k) {
      const double p = std::exp(xv[size_t(i * c + k)] - m) / z;
      out[size_t(i * c + k)] = s * w[size_t(v)] * (p - (k == v ? 1.0 : 0.0));
    }
  }
  return out;
}

// Allocations the current device's allocator has made so far (counted with caching off too).
int64_t allocations() { return cuda::memory_stats()["allocation.all.allocated"]; }

// Every reduction, class weights or none, ignore_index outside and inside [0, C), sizes down
// to N = 1 and C = 1 and up to rows of 1024 classes, the upstream gradient of "none" neither
// uniform nor contiguous (a strided view): the logits' gradient against the float64 reference
// by hand and against log_softmax then nll_loss called apart (their own two kernels).
TEST_F(CrossEntropyFusedCuda, BackwardOneKernelMatchesReferences) {
  const std::vector<std::pair<int64_t, int64_t>> shapes{{1, 1}, {1, 9}, {7, 1}, {6, 10}, {64, 33}, {40, 1024}};
  for (Dtype dt : {kFloat32, kFloat64}) {
    const double tol = dt == kFloat64 ? 1e-12 : 2e-6;
    for (auto [n, c] : shapes) {
      Tensor xd = (randn({n, c}, kFloat64) * 3).to(gpu(), dt);
      Tensor t = randint(c, {n});
      for (int64_t ignore : {int64_t(-100), int64_t(2)}) {
        Tensor tt = t.clone();
        for (int64_t i = 1; i < n; i += 3) tt.select(0, i).fill_(ignore);  // ignored rows
        Tensor w = rand({c}, kFloat64) + 0.5;
        for (bool use_w : {false, true}) {
          for (std::string red : {"none", "mean", "sum"}) {
            const std::string what = std::string(name(dt)) + " n=" + std::to_string(n) + " c=" +
                                     std::to_string(c) + " ignore=" + std::to_string(ignore) +
                                     (use_w ? " weighted " : " ") + red;
            SCOPED_TRACE(what);
            const Tensor wd = use_w ? w.to(gpu(), dt) : Tensor(), tg = tt.to(gpu());
            // "none": every other element of a longer tensor; otherwise a 0-d gradient.
            Tensor g = red == "none" ? randn({2 * n}, kFloat64).to(gpu(), dt).slice(0, 0, 2 * n, 2)
                                     : full({}, 0.75, kFloat64).to(gpu(), dt);
            if (red == "none" && n > 1) {
              EXPECT_FALSE(g.is_contiguous());
            }
            Tensor x = xd.detach().clone().requires_grad_();
            Tensor loss = F::cross_entropy(x, tg, wd, ignore, red);
            ASSERT_EQ(loss.grad_fn()->name(), "NllLossBackward0");
            loss.backward(g);
            ASSERT_TRUE(x.grad().defined());
            EXPECT_EQ(x.grad().dtype(), dt);
            EXPECT_TRUE(x.grad().is_cuda());
            expect_close(x.grad(), grad_by_hand(xd, tt, wd, ignore, red, g), dt == kFloat64 ? 1e-12 : 2e-5,
                         what + " by hand");
            Tensor xc = xd.detach().clone().requires_grad_();
            F::nll_loss(log_softmax(xc, 1), tg, wd, ignore, red).backward(g);
            expect_close(x.grad(), xc.grad(), tol, tol, what + " two kernels");
          }
        }
      }
    }
  }
}

// Logits transposed on the GPU, and a gradient of "none" expanded from one value (stride 0,
// as sum's backward makes it): the gradient reaches the transposed leaf with its values.
TEST_F(CrossEntropyFusedCuda, BackwardOneKernelNonContiguousLogitsAndExpandedGrad) {
  Tensor base = randn({9, 13}, TensorOptions(kFloat32).device(gpu()));
  Tensor t = tensor({3, 0, 8, -100, 2, 5, 1, 4, 0, 6, 3, 2, 7});
  Tensor w = (rand({9}, kFloat64) + 0.5).to(gpu(), kFloat32);
  for (std::string red : {"none", "mean", "sum"}) {
    SCOPED_TRACE(red);
    Tensor leaf = base.detach().clone().requires_grad_();
    Tensor x = leaf.t();  // [13, 9], not contiguous
    ASSERT_FALSE(x.is_contiguous());
    Tensor loss = F::cross_entropy(x, t.to(gpu()), w, -100, red);
    loss.sum().backward();  // "none": the gradient is ones expanded from a 0-d tensor
    Tensor g = red == "none" ? ones({13}, kFloat64) : full({}, 1.0, kFloat64);
    const std::vector<double> want = grad_by_hand(base.t(), t, w, -100, red, g);
    expect_close(leaf.grad().t(), want, 2e-6, red);
  }
}

// The logits feed more than the loss, come from another op, and the loss is used twice: the
// gradients meet where they should. autograd::grad gives what backward accumulates.
TEST_F(CrossEntropyFusedCuda, BackwardOneKernelInALargerGraph) {
  Tensor a = randn({5, 7}, TensorOptions(kFloat64).device(gpu())).requires_grad_();
  Tensor t = tensor({6, 0, 3, 3, 1}).to(gpu());
  Tensor w = (rand({7}, kFloat64) + 0.5).to(gpu());
  Tensor g = randn({5}, TensorOptions(kFloat64).device(gpu()));
  auto build = [&] {
    Tensor x = a * 2.0;
    Tensor y = F::cross_entropy(x, t, w, -100, "none");
    return (y * g).sum() + y.sum() * 0.5 + (x * x).sum();
  };
  build().backward();
  // d/da = 2 * (CE gradient with upstream g + 0.5, plus 2x)
  const std::vector<double> ce = grad_by_hand(a.detach() * 2.0, t, w, -100, "none", g + 0.5);
  const std::vector<double> av = values_of(a);
  std::vector<double> want(ce.size());
  for (size_t i = 0; i < ce.size(); ++i) want[i] = 2.0 * (ce[i] + 4.0 * av[i]);
  expect_close(a.grad(), want, 1e-12);
  const std::vector<Tensor> got = autograd::grad({build()}, {a});
  expect_close(got[0], want, 1e-12);
}

// PyTorch's graph: NllLossBackward0, whose one next function is LogSoftmaxBackward0, whose
// one next function accumulates into the logits; the names stay whichever kernels run.
TEST_F(CrossEntropyFusedCuda, BackwardOneKernelKeepsNodeNames) {
  Tensor x = randn({4, 6}, TensorOptions(kFloat32).device(gpu())).requires_grad_();
  Tensor loss = F::cross_entropy(x, tensor({1, 5, 0, 2}).to(gpu()));
  ASSERT_TRUE(loss.grad_fn());
  EXPECT_EQ(loss.grad_fn()->name(), "NllLossBackward0");
  ASSERT_EQ(loss.grad_fn()->next_edges().size(), 1u);
  const autograd::Node* lsm = loss.grad_fn()->next_edges()[0].function.get();
  ASSERT_TRUE(lsm);
  EXPECT_EQ(lsm->name(), "LogSoftmaxBackward0");
  ASSERT_EQ(lsm->next_edges().size(), 1u);
  ASSERT_TRUE(lsm->next_edges()[0].function);
  EXPECT_EQ(lsm->next_edges()[0].function->name(), "AccumulateGrad");
  loss.backward();
  expect_close(x.grad(), grad_by_hand(x.detach(), tensor({1, 5, 0, 2}), {}, -100, "mean", full({}, 1.0, kFloat64)),
               2e-6);
}

// retain_graph: a second and third backward give the same gradient again (accumulated), and
// one after the graph was freed raises what the two-node composite raises.
TEST_F(CrossEntropyFusedCuda, BackwardOneKernelRetainGraph) {
  Tensor xd = randn({6, 11}, TensorOptions(kFloat32).device(gpu()));
  Tensor t = tensor({10, 0, -100, 3, 3, 7}).to(gpu());
  Tensor w = (rand({11}, kFloat64) + 0.5).to(gpu(), kFloat32);
  for (std::string red : {"none", "mean", "sum"}) {
    SCOPED_TRACE(red);
    Tensor g = red == "none" ? randn({6}, TensorOptions(kFloat32).device(gpu())) : full({}, 1.5).to(gpu());
    Tensor x = xd.detach().clone().requires_grad_();
    Tensor loss = F::cross_entropy(x, t, w, -100, red);
    loss.backward(g, true);
    const Tensor first = x.grad().clone();
    expect_close(first, grad_by_hand(xd, t, w, -100, red, g), 2e-6, red);
    loss.backward(g, true);
    expect_close(x.grad(), first * 2.0, 1e-6, 1e-6, red + " second");
    loss.backward(g);
    expect_close(x.grad(), first * 3.0, 1e-6, 1e-6, red + " third");
    auto message = [&](const Tensor& l) -> std::string {
      try {
        l.backward(g);
      } catch (const Error& e) {
        return e.what();
      }
      return "no error";
    };
    Tensor xc = xd.detach().clone().requires_grad_();
    Tensor composite = F::nll_loss(log_softmax(xc, 1), t, w, -100, red);
    composite.backward(g);
    const std::string want = message(composite);
    EXPECT_NE(want, "no error");
    EXPECT_EQ(message(loss), want);
  }
}

// Whoever can see the gradient wrt logp sees it: a node's apply called by hand (outside a
// backward pass) runs its own formula, NllLossBackward0 giving the gradient wrt logp and
// LogSoftmaxBackward0 log_softmax's backward of what it is given; with LogSoftmaxBackward0
// held by the caller, backward takes the two kernels (one allocation more: the gradient wrt
// logp) and gives the same gradient.
TEST_F(CrossEntropyFusedCuda, BackwardOneKernelFallsBackWhereObservable) {
  const int64_t n = 5, c = 8;
  Tensor xd = randn({n, c}, TensorOptions(kFloat64).device(gpu()));
  Tensor t = tensor({7, 0, -100, 3, 5});
  Tensor w = (rand({c}, kFloat64) + 0.5).to(gpu());
  const std::vector<double> wv = values_of(w);
  Tensor x = xd.detach().clone().requires_grad_();
  Tensor loss = F::cross_entropy(x, t.to(gpu()), w, -100, "sum");
  const std::shared_ptr<autograd::Node> nll = loss.grad_fn();
  autograd::Node* lsm = nll->next_edges()[0].function.get();  // not held
  {
    NoGradGuard no_grad;
    const autograd::variable_list d_logp = nll->apply({full({}, 2.0, TensorOptions(kFloat64).device(gpu()))});
    ASSERT_EQ(d_logp.size(), 1u);
    std::vector<double> want(size_t(n * c), 0.0);
    const std::vector<int64_t> tv = t.to_vector<int64_t>();
    for (int64_t i = 0; i < n; ++i)
      if (tv[size_t(i)] != -100) want[size_t(i * c + tv[size_t(i)])] = -2.0 * wv[size_t(tv[size_t(i)])];
    expect_close(d_logp[0], want, 0.0, "NllLossBackward0 by hand");
    // log_softmax's backward of it: g - softmax * sum(g), the gradient wrt the logits
    const autograd::variable_list d_x = lsm->apply({d_logp[0]});
    ASSERT_EQ(d_x.size(), 1u);
    expect_close(d_x[0], grad_by_hand(xd, t, w, -100, "sum", full({}, 2.0, kFloat64)), 1e-12,
                 "LogSoftmaxBackward0 by hand");
    // an arbitrary gradient wrt logp: the formula, not a pass-through
    Tensor r = randn({n, c}, TensorOptions(kFloat64).device(gpu()));
    const autograd::variable_list d_r = lsm->apply({r});
    Tensor sm = softmax(xd, 1);
    expect_close(d_r[0], r - sm * r.sum({1}, true), 1e-12, 1e-12, "LogSoftmaxBackward0 of r");
  }
  // the graph is still whole: backward gives the reference
  loss.backward();
  const std::vector<double> want = grad_by_hand(xd, t, w, -100, "sum", full({}, 1.0, kFloat64));
  expect_close(x.grad(), want, 1e-12);

  // the same loss with LogSoftmaxBackward0 held by the caller: the same gradient, through one
  // more allocation (the gradient wrt logp)
  int64_t fused_allocs = 0, held_allocs = 0;
  for (bool hold : {false, true}) {
    SCOPED_TRACE(hold ? "held" : "not held");
    Tensor y = xd.detach().clone().requires_grad_();
    Tensor l = F::cross_entropy(y, t.to(gpu()), w, -100, "sum");
    std::shared_ptr<autograd::Node> held;
    if (hold) held = l.grad_fn()->next_edges()[0].function;
    const int64_t before = allocations();
    l.backward();
    (hold ? held_allocs : fused_allocs) = allocations() - before;
    expect_close(y.grad(), want, 1e-12);
  }
  EXPECT_EQ(held_allocs, fused_allocs + 1);
}

}  // namespace
