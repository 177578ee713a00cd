// Gradient checks (central differences, float64) of layer_norm and rms_norm through their fused
// nodes (NativeLayerNormBackward0, FusedRmsNormBackward0), with and without parameters, over one
// and two normalized dims and a non-contiguous x; second derivatives (the backward recorded
// under create_graph), on the CPU and, when present, cuda:0.
#include <cmath>
#include <utility>

#include <gtest/gtest.h>

#include "gradcheck.h"
#include "wick/nn/functional.h"
#include "wick/wick.h"

using namespace wick;
using wick::testing::gradcheck;
using wick::testing::gradgradcheck;
using wick::testing::rnd;
using T = std::vector<Tensor>;
namespace F = wick::nn::functional;

namespace {

class GradcheckNorm : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override {
    if (GetParam().is_cuda() && !cuda::is_available()) GTEST_SKIP() << "no CUDA device";
    manual_seed(11);
  }
  Device dev() const { return GetParam(); }
};

TEST_P(GradcheckNorm, LayerNorm) {
  gradcheck([](const T& a) { return F::layer_norm(a[0], {5}, a[1], a[2]); }, {rnd({3, 5}), rnd({5}), rnd({5})},
            dev());
  gradcheck([](const T& a) { return F::layer_norm(a[0], {5}); }, {rnd({4, 5})}, dev());
  gradcheck([](const T& a) { return F::layer_norm(a[0], {5}, a[1]); }, {rnd({2, 5}), rnd({5})}, dev());
  gradcheck([](const T& a) { return F::layer_norm(a[0], {3, 4}, a[1], a[2], 1e-3); },
            {rnd({2, 3, 4}), rnd({3, 4}), rnd({3, 4})}, dev());
  gradcheck([](const T& a) { return F::layer_norm(a[0].transpose(0, 1), {3}, a[1], a[2]); },
            {rnd({3, 4}), rnd({3}), rnd({3})}, dev());
  // A parameter that does not require grad gets none; the others still do.
  gradcheck([](const T& a) { return F::layer_norm(a[0], {6}, a[1], a[2]); },
            {rnd({2, 6}), rnd({6}, false), rnd({6})}, dev());
}

TEST_P(GradcheckNorm, RmsNorm) {
  gradcheck([](const T& a) { return F::rms_norm(a[0], {5}, a[1]); }, {rnd({3, 5}), rnd({5})}, dev());
  gradcheck([](const T& a) { return F::rms_norm(a[0], {5}, {}, 1e-4); }, {rnd({4, 5})}, dev());
  gradcheck([](const T& a) { return F::rms_norm(a[0], {2, 3}, a[1]); }, {rnd({4, 2, 3}), rnd({2, 3})}, dev());
  gradcheck([](const T& a) { return F::rms_norm(a[0].t(), {2}, a[1]); }, {rnd({2, 3}), rnd({2})}, dev());
}

TEST_P(GradcheckNorm, SecondDerivatives) {
  gradgradcheck([](const T& a) { return F::layer_norm(a[0], {4}, a[1], a[2]); },
                {rnd({3, 4}), rnd({4}), rnd({4})}, dev());
  gradgradcheck([](const T& a) { return F::layer_norm(a[0], {2, 3}); }, {rnd({2, 2, 3})}, dev());
  gradgradcheck([](const T& a) { return F::rms_norm(a[0], {4}, a[1], 1e-3); }, {rnd({3, 4}), rnd({4})}, dev());
}

// A gradient penalty: the gradient of ||d sum(y * c) / dx||^2 wrt x and weight, against the
// same quantity through the composed formula.
TEST_P(GradcheckNorm, GradientPenaltyMatchesComposed) {
  for (bool rms : {false, true}) {
    Tensor x0 = randn({4, 6}, TensorOptions(kFloat64)), w0 = randn({6}, TensorOptions(kFloat64));
    Tensor c = randn({4, 6}, TensorOptions(kFloat64)).to(dev());
    auto penalty = [&](bool fused, Tensor& gx, Tensor& gw) {
      Tensor x = x0.to(dev()).requires_grad_(), w = w0.to(dev()).requires_grad_();
      Tensor y;
      if (fused) {
        y = rms ? F::rms_norm(x, {6}, w, 1e-5) : F::layer_norm(x, {6}, w, {}, 1e-5);
      } else {
        Tensor xc = rms ? x : x - x.mean({1}, true);
        y = xc * rsqrt((xc * xc).mean({1}, true) + 1e-5) * w;
      }
      Tensor g = autograd::grad({(y * c).sum()}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];
      (g * g).sum().backward();
      gx = x.grad();
      gw = w.grad();
    };
    Tensor fx, fw, rx, rw;
    penalty(true, fx, fw);
    penalty(false, rx, rw);
    ASSERT_TRUE(fx.defined() && fw.defined());
    for (auto [got, want] : {std::pair{fx, rx}, std::pair{fw, rw}}) {
      auto g = got.cpu().to_vector<double>(), r = want.cpu().to_vector<double>();
      ASSERT_EQ(g.size(), r.size());
      for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], r[i], 1e-9 + 1e-9 * std::abs(r[i])) << rms;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, GradcheckNorm, ::testing::Values(Device(kCPU), Device(kCUDA, 0)),
                         [](const auto& info) { return info.param.is_cpu() ? "cpu" : "cuda"; });

TEST(NormNodes, Names) {
  Tensor x = randn({2, 3}).requires_grad_();
  EXPECT_EQ(F::layer_norm(x, {3}).grad_fn()->name(), "NativeLayerNormBackward0");
  EXPECT_EQ(F::rms_norm(x, {3}).grad_fn()->name(), "FusedRmsNormBackward0");
  // rms_norm with a weight of another dtype is composed, as PyTorch's (no fused node).
  Tensor w = ones({3}, TensorOptions(kFloat64));
  EXPECT_NE(F::rms_norm(x, {3}, w).grad_fn()->name(), "FusedRmsNormBackward0");
}

}  // namespace
