// batch_norm in training mode on CUDA through cuDNN (core/cudnn_batch_norm.h): values, gradients
// and running statistics against the ops' path in float64 on the CPU, for every rank and dtype the
// path takes, the node it records, double backward, and the problems it leaves to the ops.
#include <gtest/gtest.h>

#include "nn_test_util.h"
#include "wick/wick.h"

namespace wick {
namespace {

namespace F = nn::functional;
using testing::expect_close;

class BatchNormCudnn : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device";
    manual_seed(23);
  }
};

struct Case {
  std::vector<int64_t> sizes;
  Dtype dtype;
  bool affine, running;
};

// Runs batch_norm on CUDA (x of c.dtype, parameters float32) and in float64 on the CPU, then
// compares y, the gradients of x, weight and bias for a random dy, and the running statistics.
void check(const Case& c, double tol) {
  const int64_t ch = c.sizes[1];
  const Tensor x0 = randn(c.sizes) * 3 + 2, dy0 = randn(c.sizes);
  const Tensor w0 = rand({ch}) + 0.5, b0 = randn({ch}), rm0 = randn({ch}), rv0 = rand({ch}) + 1;
  auto run = [&](Device d, Dtype xt, Dtype pt) {
    Tensor x = x0.to(xt).to(d).requires_grad_();
    Tensor w = c.affine ? w0.to(pt).to(d).requires_grad_() : Tensor();
    Tensor b = c.affine ? b0.to(pt).to(d).requires_grad_() : Tensor();
    Tensor rm = c.running ? rm0.to(pt).to(d) : Tensor(), rv = c.running ? rv0.to(pt).to(d) : Tensor();
    Tensor y = F::batch_norm(x, rm, rv, w, b, true, 0.2, 1e-3);
    y.backward(dy0.to(xt).to(d));
    return std::vector<Tensor>{y, x.grad(), w.defined() ? w.grad() : Tensor(), b.defined() ? b.grad() : Tensor(),
                               rm, rv};
  };
  const auto got = run(Device("cuda"), c.dtype, kFloat32);
  const auto want = run(Device("cpu"), kFloat64, kFloat64);
  EXPECT_EQ(got[0].dtype(), c.dtype);
  const char* what[] = {"y", "dx", "dweight", "dbias", "running_mean", "running_var"};
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].defined(), want[i].defined()) << what[i];
    if (!got[i].defined()) continue;
    // the parameters' gradients are sums over N * H * W rows: their size grows with it
    const double scale = (i == 2 || i == 3) ? std::sqrt(double(x0.numel() / ch)) : 1.0;
    expect_close(got[i].to(kFloat64), want[i], tol * scale, tol, what[i]);
  }
}

TEST_F(BatchNormCudnn, MatchesTheOpsInFloat64ForEveryRank) {
  for (auto sizes : std::vector<std::vector<int64_t>>{{16, 5}, {4, 3, 7}, {2, 3, 6, 5}, {3, 2, 2, 3, 4}, {64, 8, 9, 9}})
    check({sizes, kFloat32, true, true}, 1e-4);
}

TEST_F(BatchNormCudnn, WithoutAffineOrRunningStatistics) {
  check({{4, 3, 5, 5}, kFloat32, false, true}, 1e-4);
  check({{4, 3, 5, 5}, kFloat32, true, false}, 1e-4);
  check({{4, 3, 5, 5}, kFloat32, false, false}, 1e-4);
}

TEST_F(BatchNormCudnn, SixteenBitInputsWithFloat32Parameters) {
  check({{8, 4, 6, 6}, kFloat16, true, true}, 1e-2);
  check({{8, 4, 6, 6}, kBFloat16, true, true}, 5e-2);
  check({{32, 6}, kBFloat16, true, true}, 5e-2);
}

TEST_F(BatchNormCudnn, RecordsCudnnBatchNormBackward0) {
  nn::BatchNorm2d bn(3);
  bn->to(Device("cuda"));
  Tensor y = bn(randn({2, 3, 4, 4}, Device("cuda")));
  ASSERT_TRUE(y.grad_fn());
  EXPECT_EQ(y.grad_fn()->name(), "CudnnBatchNormBackward0");
  // the problems cuDNN's path leaves to the ops record the ops' nodes
  Tensor t = randn({4, 3, 3, 3}, Device("cuda")).transpose(2, 3);
  ASSERT_FALSE(t.is_contiguous());
  EXPECT_NE(bn(t).grad_fn()->name(), "CudnnBatchNormBackward0");
  nn::BatchNorm2d half(3);
  half->to(Device("cuda"), kFloat16);
  Tensor yh = half(randn({2, 3, 4, 4}, Device("cuda")).to(kFloat16));
  EXPECT_NE(yh.grad_fn()->name(), "CudnnBatchNormBackward0");
}

// Inputs the path does not take give the same answers by the ops: a non-contiguous x, float16
// parameters, float64.
TEST_F(BatchNormCudnn, ProblemsLeftToTheOpsGiveTheSameValues) {
  const Tensor base = randn({6, 3, 5, 4}) + 1;
  const Tensor w = rand({3}) + 0.5, b = randn({3});
  auto y_of = [&](const Tensor& x, Dtype pt) {
    return F::batch_norm(x, Tensor(), Tensor(), w.to(pt).cuda(), b.to(pt).cuda(), true);
  };
  const Tensor want = F::batch_norm(base.to(kFloat64), Tensor(), Tensor(), w.to(kFloat64), b.to(kFloat64), true);
  const Tensor strided = base.cuda().transpose(2, 3).contiguous().transpose(2, 3);
  ASSERT_FALSE(strided.is_contiguous());
  expect_close(y_of(strided, kFloat32).to(kFloat64), want, 1e-4, 1e-4, "non-contiguous");
  expect_close(y_of(base.cuda(), kFloat32).to(kFloat64), want, 1e-4, 1e-4, "contiguous");
  expect_close(y_of(base.cuda().to(kFloat64), kFloat64), want, 1e-9, 1e-9, "float64");
  expect_close(y_of(base.cuda().to(kFloat16), kFloat16).to(kFloat64), want, 2e-2, 2e-2, "float16 parameters");
}

// Double backward (a gradient penalty): the gradient of sum(dx^2) with respect to x, weight and
// bias, recorded through the formula in ops, against the CPU's in float64.
TEST_F(BatchNormCudnn, DoubleBackwardMatchesTheCpu) {
  const Tensor x0 = randn({4, 3, 3, 3}), w0 = rand({3}) + 0.5, b0 = randn({3}), dy0 = randn({4, 3, 3, 3});
  auto run = [&](Device d, Dtype t) {
    Tensor x = x0.to(t).to(d).requires_grad_(), w = w0.to(t).to(d).requires_grad_(),
           b = b0.to(t).to(d).requires_grad_();
    Tensor y = F::batch_norm(x, Tensor(), Tensor(), w, b, true);
    auto g = autograd::grad({y}, {x, w}, {dy0.to(t).to(d)}, std::nullopt, true);
    Tensor penalty = (g[0] * g[0]).sum() + (g[1] * g[1]).sum();
    auto gg = autograd::grad({penalty}, {x, w}, {}, std::nullopt, false, true);
    return std::vector<Tensor>{g[0], g[1], gg[0], gg[1]};
  };
  const auto got = run(Device("cuda"), kFloat32), want = run(Device("cpu"), kFloat64);
  const char* what[] = {"dx", "dweight", "d(penalty)/dx", "d(penalty)/dweight"};
  for (size_t i = 0; i < got.size(); ++i) expect_close(got[i].to(kFloat64), want[i], 2e-4, 2e-4, what[i]);
}

// Under autocast a convolution's bfloat16 output meets float32 parameters: the mixed case.
TEST_F(BatchNormCudnn, TrainsUnderAutocast) {
  nn::Conv2d conv(nn::Conv2dOptions(2, 4, 3).padding(1));
  nn::BatchNorm2d bn(4);
  conv->to(Device("cuda"));
  bn->to(Device("cuda"));
  const Tensor x = randn({8, 2, 6, 6}, Device("cuda"));
  Tensor y;
  {
    AutocastGuard guard(kCUDA, kBFloat16);
    y = bn(conv(x));
  }
  EXPECT_EQ(y.dtype(), kBFloat16);
  EXPECT_EQ(y.grad_fn()->name(), "CudnnBatchNormBackward0");
  y.to(kFloat32).square().mean().backward();
  ASSERT_TRUE(bn->weight.grad().defined());
  EXPECT_EQ(bn->weight.grad().dtype(), kFloat32);
  EXPECT_TRUE(conv->weight.grad().isfinite().all().item<bool>());
  // each channel of y has mean bias (0) and standard deviation weight (1), up to bfloat16
  const Tensor yf = y.detach().to(kFloat32);
  expect_close(yf.mean({0, 2, 3}), zeros({4}), 2e-2, 0, "channel means");
}

}  // namespace
}  // namespace wick
