// DataParallel under autocast: the replicas run on threads of their own, which take the calling
// thread's CUDA autocast state (as PyTorch's parallel_apply), so every piece of the batch is
// computed in the autocast dtype and gradients reach the float32 parameters.
#include <gtest/gtest.h>

#include "../cuda/cuda_test_util.h"
#include "wick/wick.h"

namespace wick {
namespace {

TEST(DataParallelGpu, AutocastReachesTheReplicas) {
  WICK_REQUIRE_GPUS(2);
  manual_seed(0);
  nn::Linear lin(16, 8);
  lin->to(Device("cuda:0"));
  nn::DataParallel dp(lin, std::vector<int>{0, 1});
  Tensor x = randn({6, 16}, Device("cuda:0"));
  Tensor y;
  {
    AutocastGuard g(kCUDA, kBFloat16);
    y = dp(x);
  }
  EXPECT_EQ(y.dtype(), kBFloat16);
  // Each half as one GPU computes it under autocast.
  Tensor ref;
  {
    AutocastGuard g(kCUDA, kBFloat16);
    ref = lin->forward(x);
  }
  EXPECT_LE((y.to(kFloat64) - ref.to(kFloat64)).abs().max().item<double>(), 1e-2);
  y.to(kFloat32).sum().backward();
  EXPECT_EQ(lin->weight.grad().dtype(), kFloat32);
  // x's rows are summed into each weight row's gradient: compare in float64.
  Tensor gw = ones({6, 8}, kFloat64).t().matmul(x.to(kBFloat16).to(kFloat64).cpu());
  EXPECT_LE((lin->weight.grad().to(kFloat64).cpu() - gw).abs().max().item<double>(),
            1e-2 * (1 + gw.abs().max().item<double>()));
}

}  // namespace
}  // namespace wick
