// cross_entropy on CUDA when small logits need grad: one kernel writes log_softmax and the loss
// (core/loss.h's log_softmax_nll_loss), recorded as LogSoftmaxBackward0 under
// NllLossBackward0. Values and input gradients against float64 CPU references computed the
// composite way (log_softmax, then nll_loss), the two-kernel path's results bit for bit, node
// names, errors, and finite differences.
#include <cmath>
#include <string>
#include <utility>
#include <vector>

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

}  // namespace
