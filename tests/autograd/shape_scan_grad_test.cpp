// Gradient checks (central differences, float64) of tril/triu, cumsum/cumprod (zeros in the
// input included), logsumexp, var_mean/std_mean, repeat, repeat_interleave, outer, lerp,
// baddbmm, einsum and pad, on the CPU and, when present, cuda:0; and their nodes' names.
#include <cmath>

#include <gtest/gtest.h>

#include "gradcheck.h"
#include "wick/nn/functional.h"
#include "wick/wick.h"

using namespace wick;
using wick::testing::gradcheck;
using wick::testing::rnd;
using T = std::vector<Tensor>;
namespace F = wick::nn::functional;

namespace {

class GradcheckShapeScan : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override {
    if (GetParam().is_cuda() && !cuda::is_available()) GTEST_SKIP() << "no CUDA device";
    manual_seed(7);
  }
  Device dev() const { return GetParam(); }
};

Tensor with_zeros(std::vector<double> v, IntArrayRef sizes) {
  return from_blob(v.data(), sizes, kFloat64).clone().requires_grad_();
}

TEST_P(GradcheckShapeScan, TrilTriu) {
  gradcheck([](const T& x) { return tril(x[0]); }, {rnd({2, 3, 4})}, dev());
  gradcheck([](const T& x) { return triu(x[0], -1); }, {rnd({4, 3})}, dev());
  gradcheck([](const T& x) { return x[0].transpose(0, 1).tril(1); }, {rnd({3, 4})}, dev());
  gradcheck(
      [](const T& x) {
        Tensor y = x[0] * 2;
        y.triu_(1);
        return y;
      },
      {rnd({3, 3})}, dev());
}

TEST_P(GradcheckShapeScan, Cumsum) {
  for (int64_t d : {0, 1, 2, -1})
    gradcheck([d](const T& x) { return cumsum(x[0], d); }, {rnd({2, 3, 4})}, dev());
  gradcheck([](const T& x) { return x[0].t().cumsum(1); }, {rnd({3, 4})}, dev());
  gradcheck([](const T& x) { return cumsum(x[0].to(kFloat32), 0, kFloat64); }, {rnd({5})}, dev(), 1e-3, 1e-3, 1e-3);
  gradcheck(
      [](const T& x) {
        Tensor y = x[0] * 1;
        y.cumsum_(1);
        return y;
      },
      {rnd({2, 3})}, dev());
}

TEST_P(GradcheckShapeScan, CumprodWithAndWithoutZeros) {
  for (int64_t d : {0, 1, -1})
    gradcheck([d](const T& x) { return cumprod(x[0], d); }, {rnd({3, 4})}, dev());
  auto f = [](const T& x) { return cumprod(x[0], -1); };
  // One zero, two zeros, a zero first and last, an all-zero row.
  gradcheck(f, {with_zeros({0.5, 0, 1.5, -2, 0.7, 1.1, 0, 0.9, 0, 2, -1.3, 0.8}, {3, 4})}, dev());
  gradcheck(f, {with_zeros({0, 1.5, -0.5, 2, 1.2, -0.4, 0.6, 0, 0, 0, 0, 0}, {3, 4})}, dev());
  gradcheck([](const T& x) { return cumprod(x[0], 0); },
            {with_zeros({1.5, 0, 0.3, 2, 0, 0.7, -1, 0.4, 1.1}, {3, 3})}, dev());
  gradcheck(
      [](const T& x) {
        Tensor y = x[0] * 1;
        y.cumprod_(0);
        return y;
      },
      {with_zeros({1.5, 0, 0.3, -2}, {4})}, dev());
}

TEST_P(GradcheckShapeScan, LogsumexpAndMoments) {
  gradcheck([](const T& x) { return logsumexp(x[0], {1}); }, {rnd({3, 4})}, dev());
  gradcheck([](const T& x) { return logsumexp(x[0], {0, 2}, true); }, {rnd({2, 3, 4})}, dev());
  gradcheck([](const T& x) { return logsumexp(x[0], {}); }, {rnd({2, 3})}, dev());
  gradcheck([](const T& x) { return x[0].t().logsumexp({-1}); }, {rnd({3, 4})}, dev());
  gradcheck(
      [](const T& x) {
        auto [v, m] = var_mean(x[0], {1});
        return v + m * 3;
      },
      {rnd({3, 4})}, dev());
  // Each result alone (the other's gradient missing), both, keepdim and all dims.
  gradcheck([](const T& x) { return std::get<0>(var_mean(x[0], {0})); }, {rnd({3, 4})}, dev());
  gradcheck([](const T& x) { return std::get<1>(var_mean(x[0].t(), {1}, 0.0, true)); }, {rnd({3, 4})}, dev());
  gradcheck(
      [](const T& x) {
        auto [v, m] = var_mean(x[0]);
        return v * m;
      },
      {rnd({2, 3})}, dev());
  gradcheck(
      [](const T& x) {
        auto [s, m] = std_mean(x[0], {0}, 0.0, true);
        return s * m;
      },
      {rnd({3, 4})}, dev());
  gradcheck([](const T& x) { return norm(x[0], "fro", {1}); }, {rnd({3, 4})}, dev());
}

TEST_P(GradcheckShapeScan, RepeatsOuterLerpBaddbmm) {
  gradcheck([](const T& x) { return x[0].repeat({2, 1, 3}); }, {rnd({2, 3})}, dev());
  gradcheck([](const T& x) { return x[0].t().repeat({2, 2}); }, {rnd({2, 3})}, dev());
  gradcheck([](const T& x) { return repeat_interleave(x[0], 2, 1); }, {rnd({2, 3})}, dev());
  gradcheck([](const T& x) { return repeat_interleave(x[0], 3); }, {rnd({2, 2})}, dev());
  gradcheck([](const T& x) { return repeat_interleave(x[0], tensor({2, 0, 1}).to(x[0].device()), 0); },
            {rnd({3, 2})}, dev());
  gradcheck([](const T& x) { return outer(x[0], x[1]); }, {rnd({3}), rnd({4})}, dev());
  gradcheck([](const T& x) { return lerp(x[0], x[1], 0.3); }, {rnd({3, 4}), rnd({4})}, dev());
  gradcheck([](const T& x) { return lerp(x[0], x[1], 0.8); }, {rnd({3, 4}), rnd({3, 4})}, dev());
  gradcheck([](const T& x) { return lerp(x[0], x[1], x[2]); }, {rnd({3, 4}), rnd({4}), rnd({3, 1})}, dev());
  gradcheck(
      [](const T& x) {
        Tensor y = x[0] * 1;
        y.lerp_(x[1], x[2]);
        return y;
      },
      {rnd({3, 4}), rnd({3, 4}), rnd({4})}, dev());
  gradcheck([](const T& x) { return baddbmm(x[0], x[1], x[2], 0.5, -1.5); },
            {rnd({3, 5}), rnd({2, 3, 4}), rnd({2, 4, 5})}, dev());
  gradcheck([](const T& x) { return baddbmm(x[0], x[1], x[2]); }, {rnd({2, 3, 5}), rnd({2, 3, 4}), rnd({2, 4, 5})},
            dev());
}

TEST_P(GradcheckShapeScan, Einsum) {
  gradcheck([](const T& x) { return einsum("ij,jk->ik", x); }, {rnd({3, 4}), rnd({4, 2})}, dev());
  gradcheck([](const T& x) { return einsum("bhqd,bhkd->bhqk", x); }, {rnd({2, 2, 3, 4}), rnd({2, 2, 5, 4})}, dev());
  gradcheck([](const T& x) { return einsum("ii->i", x); }, {rnd({3, 3})}, dev());
  gradcheck([](const T& x) { return einsum("...ij->...ji", x); }, {rnd({2, 3, 4})}, dev());
  gradcheck([](const T& x) { return einsum("i,j,ij->", x); }, {rnd({3}), rnd({4}), rnd({3, 4})}, dev());
}

TEST_P(GradcheckShapeScan, Pad) {
  gradcheck([](const T& x) { return F::pad(x[0], {2, 1, 1, 0}, "constant", 0.5); }, {rnd({2, 3, 4})}, dev());
  gradcheck([](const T& x) { return F::pad(x[0], {-1, 2}); }, {rnd({2, 4})}, dev());
  for (const char* mode : {"reflect", "replicate", "circular"})
    gradcheck([mode](const T& x) { return F::pad(x[0], {2, 1, 1, 2}, mode); }, {rnd({1, 3, 4})}, dev());
}

INSTANTIATE_TEST_SUITE_P(Devices, GradcheckShapeScan, ::testing::Values(Device(kCPU), Device(kCUDA, 0)),
                         [](const auto& info) { return info.param.is_cuda() ? std::string("cuda") : std::string("cpu"); });

TEST(AutogradNames, ShapeScanOpsNameTheirNodesAsPyTorch) {
  auto x = rnd({3, 4});
  EXPECT_EQ(tril(x).grad_fn()->name(), "TrilBackward0");
  EXPECT_EQ(triu(x).grad_fn()->name(), "TriuBackward0");
  EXPECT_EQ(cumsum(x, 0).grad_fn()->name(), "CumsumBackward0");
  EXPECT_EQ(cumprod(x, 1).grad_fn()->name(), "CumprodBackward0");
  EXPECT_EQ(logsumexp(x, {1}).grad_fn()->name(), "LogsumexpBackward0");
  {
    auto [v, m] = var_mean(x, {1});
    EXPECT_EQ(v.grad_fn()->name(), "VarMeanBackward0");
    EXPECT_EQ(v.grad_fn(), m.grad_fn());  // one node, two outputs
    EXPECT_EQ(v.output_nr(), 0);
    EXPECT_EQ(m.output_nr(), 1);
  }
  EXPECT_EQ(x.repeat({2, 1}).grad_fn()->name(), "RepeatBackward0");
  EXPECT_EQ(lerp(x, x * 2, 0.5).grad_fn()->name(), "LerpBackward0");
  EXPECT_EQ(lerp(x, x * 2, x).grad_fn()->name(), "LerpBackward1");
  auto b = rnd({2, 3, 4});
  EXPECT_EQ(baddbmm(rnd({3, 3}), b, b.transpose(1, 2)).grad_fn()->name(), "BaddbmmBackward0");
  auto y = x * 1;
  y.tril_();
  EXPECT_EQ(y.grad_fn()->name(), "TrilBackward0");
  y.cumsum_(1);
  EXPECT_EQ(y.grad_fn()->name(), "CumsumBackward0");
  // Integer results record nothing.
  EXPECT_FALSE(cumsum(tensor({1, 2}), 0).requires_grad());
}

}  // namespace
