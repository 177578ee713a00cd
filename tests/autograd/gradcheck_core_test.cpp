// Gradient checks (central differences, float64) for the foundation's differentiable ops:
// arithmetic with broadcasting, reductions, matmul in every rank combination, views, copies
// and in-place ops on non-leaves; on the CPU and, when present, on cuda:0.
#include <gtest/gtest.h>

#include "gradcheck.h"
#include "wick/wick.h"

using namespace wick;
using wick::testing::gradcheck;
using wick::testing::rnd;
using T = std::vector<Tensor>;

namespace {

class GradcheckCore : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override {
    if (GetParam().is_cuda() && !cuda::is_available()) GTEST_SKIP() << "no CUDA device";
    manual_seed(1234);
  }
  Device dev() const { return GetParam(); }
};

TEST_P(GradcheckCore, Arithmetic) {
  gradcheck([](const T& x) { return x[0] + x[1]; }, {rnd({2, 3}), rnd({2, 3})}, dev());
  gradcheck([](const T& x) { return add(x[0], x[1], 2.5); }, {rnd({2, 3}), rnd({3})}, dev());
  gradcheck([](const T& x) { return sub(x[0], x[1], 0.5); }, {rnd({2, 1}), rnd({1, 3})}, dev());
  gradcheck([](const T& x) { return x[0] * x[1]; }, {rnd({4, 1, 3}), rnd({2, 1})}, dev());
  gradcheck([](const T& x) { return x[0] / (x[1] * x[1] + 1); }, {rnd({2, 3}), rnd({2, 3})}, dev());
  gradcheck([](const T& x) { return x[0] / x[1]; }, {rnd({3}), rnd({3}) + 3}, dev());
  gradcheck([](const T& x) { return (x[0] + 2) * 3 - 1; }, {rnd({3})}, dev());
  gradcheck([](const T& x) { return x[0] / 4 - x[0] * x[0]; }, {rnd({3})}, dev());
  gradcheck([](const T& x) { return 2.0 - x[0]; }, {rnd({3})}, dev());
  gradcheck([](const T& x) { return 2.0 / (x[0] * x[0] + 1); }, {rnd({3})}, dev());
  gradcheck([](const T& x) { return -x[0]; }, {rnd({3})}, dev());
  // One input without grad.
  gradcheck([](const T& x) { return x[0] * x[1]; }, {rnd({3}), rnd({3}, false)}, dev());
}

TEST_P(GradcheckCore, MixedDtypes) {
  // float32 * float64: the float32 input gets a float32 gradient (checked loosely).
  auto a = rnd({3});
  auto b = randn({3}).requires_grad_();
  auto ad = a.to(dev()).detach().requires_grad_();
  auto bd = b.to(dev()).detach().requires_grad_();
  (ad * bd).sum().backward();
  EXPECT_EQ(bd.grad().dtype(), kFloat32);
  auto want = a.to_vector<float>();
  auto got = bd.grad().cpu().to_vector<float>();
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(got[i], want[i], 1e-6);
}

TEST_P(GradcheckCore, Reductions) {
  gradcheck([](const T& x) { return x[0].sum(); }, {rnd({2, 3})}, dev());
  gradcheck([](const T& x) { return x[0].sum({1}); }, {rnd({2, 3, 2})}, dev());
  gradcheck([](const T& x) { return x[0].sum({0, 2}, true); }, {rnd({2, 3, 2})}, dev());
  gradcheck([](const T& x) { return x[0].sum({-1}); }, {rnd({4})}, dev());
  gradcheck([](const T& x) { return x[0].mean(); }, {rnd({2, 3})}, dev());
  gradcheck([](const T& x) { return x[0].mean({0}); }, {rnd({3, 2})}, dev());
  gradcheck([](const T& x) { return x[0].mean({2, 0}, true); }, {rnd({2, 2, 3})}, dev());
  gradcheck([](const T& x) { return x[0].t().sum({1}); }, {rnd({2, 3})}, dev());
}

TEST_P(GradcheckCore, MatrixProducts) {
  gradcheck([](const T& x) { return mm(x[0], x[1]); }, {rnd({2, 3}), rnd({3, 4})}, dev());
  gradcheck([](const T& x) { return mm(x[0].t(), x[1]); }, {rnd({3, 2}), rnd({3, 4})}, dev());
  gradcheck([](const T& x) { return matmul(x[0], x[1]); }, {rnd({3}), rnd({3})}, dev());
  gradcheck([](const T& x) { return matmul(x[0], x[1]); }, {rnd({2, 3}), rnd({3})}, dev());
  gradcheck([](const T& x) { return matmul(x[0], x[1]); }, {rnd({3}), rnd({3, 2})}, dev());
  gradcheck([](const T& x) { return matmul(x[0], x[1]); }, {rnd({2, 2, 3}), rnd({3, 2})}, dev());
  // folded into one GEMM (a batch of matrices times one matrix), with views on both sides
  gradcheck([](const T& x) { return matmul(x[0].transpose(0, 1), x[1].t()); }, {rnd({3, 2, 4}), rnd({2, 4})}, dev());
  gradcheck([](const T& x) { return matmul(x[0], x[1]); }, {rnd({2, 1, 2, 3}), rnd({3, 2})}, dev());
  gradcheck([](const T& x) { return matmul(x[0], x[1]); }, {rnd({2, 3}), rnd({2, 3, 2})}, dev());
  gradcheck([](const T& x) { return matmul(x[0], x[1]); }, {rnd({2, 1, 2, 3}), rnd({3, 3, 2})}, dev());
  gradcheck([](const T& x) { return matmul(x[0], x[1]); }, {rnd({3}), rnd({2, 3, 2})}, dev());
  gradcheck([](const T& x) { return matmul(x[0], x[1]); }, {rnd({2, 2, 3}), rnd({3})}, dev());
  gradcheck([](const T& x) { return x[0].matmul(x[1]); }, {rnd({2, 3}), rnd({3, 2}, false)}, dev());
}

TEST_P(GradcheckCore, Views) {
  gradcheck([](const T& x) { return x[0].view({3, 2}) * 2; }, {rnd({2, 3})}, dev());
  gradcheck([](const T& x) { return x[0].t().reshape({6}); }, {rnd({2, 3})}, dev());  // reshape copies
  gradcheck([](const T& x) { return x[0].reshape({-1}); }, {rnd({2, 3})}, dev());
  gradcheck(
      [](const T& x) {
        return x[0].permute({2, 0, 1}) * x[1];
      },
      {rnd({2, 3, 4}), rnd({4, 2, 3}, false)}, dev());
  gradcheck([](const T& x) { return x[0].transpose(0, 2); }, {rnd({2, 3, 4})}, dev());
  gradcheck([](const T& x) { return x[0].unsqueeze(1).expand({2, 3, 3}); }, {rnd({2, 3})}, dev());
  gradcheck([](const T& x) { return x[0].squeeze(); }, {rnd({2, 1, 3})}, dev());
  gradcheck([](const T& x) { return x[0].squeeze(1); }, {rnd({2, 1, 3})}, dev());
  gradcheck([](const T& x) { return x[0].flatten(); }, {rnd({2, 2, 3})}, dev());
  gradcheck([](const T& x) { return x[0].narrow(1, 1, 2); }, {rnd({2, 4})}, dev());
  gradcheck([](const T& x) { return x[0].narrow(0, -2, 1); }, {rnd({3, 2})}, dev());
  gradcheck([](const T& x) { return x[0].select(1, -1); }, {rnd({2, 3})}, dev());
  gradcheck([](const T& x) { return x[0][1]; }, {rnd({2, 3})}, dev());
  gradcheck([](const T& x) { return x[0].slice(0, 1, std::nullopt, 2); }, {rnd({5, 2})}, dev());
  gradcheck([](const T& x) { return x[0].expand({4, 2, 3}); }, {rnd({2, 1})}, dev());
  gradcheck(
      [](const T& x) {
        auto c = x[0].chunk(2, 1);
        return c[0] * c[1];
      },
      {rnd({2, 4})}, dev());
  gradcheck(
      [](const T& x) {
        auto c = x[0].split(2, 0);
        return c[0] + c[1] * 3;
      },
      {rnd({4, 2})}, dev());
  gradcheck(
      [](const T& x) {
        auto u = x[0].unbind(1);
        return u[0] * u[2];
      },
      {rnd({2, 3})}, dev());
}

TEST_P(GradcheckCore, Copies) {
  gradcheck([](const T& x) { return x[0].clone() * 2; }, {rnd({2, 3})}, dev());
  gradcheck([](const T& x) { return x[0].t().contiguous(); }, {rnd({2, 3})}, dev());
  gradcheck([](const T& x) { return x[0].to(kFloat32).to(kFloat64) * 1; }, {rnd({3})}, dev(), 1e-4, 1e-4,
            1e-2);
  gradcheck([](const T& x) { return x[0].cpu() * 2; }, {rnd({3})}, dev());
}

TEST_P(GradcheckCore, InplaceOnNonLeaves) {
  gradcheck(
      [](const T& x) {
        auto y = x[0] * 1;
        y.mul_(x[1]);
        y.add_(x[1], 2);
        return y;
      },
      {rnd({3}), rnd({3})}, dev());
  gradcheck(
      [](const T& x) {
        auto y = x[0] + 0;
        y.sub_(x[1]);
        y.div_(x[1] * x[1] + 1);
        return y;
      },
      {rnd({3}), rnd({3})}, dev());
  gradcheck(
      [](const T& x) {
        auto y = x[0] * 2;
        y.mul_(3).add_(1).div_(2).sub_(1);
        return y;
      },
      {rnd({3})}, dev());
  gradcheck(
      [](const T& x) {
        auto y = zeros({2, 3}, x[0].options());
        y.copy_(x[0]);
        return y * x[0];
      },
      {rnd({3})}, dev());
}

INSTANTIATE_TEST_SUITE_P(Devices, GradcheckCore, ::testing::Values(Device(kCPU), Device(kCUDA, 0)),
                         [](const auto& info) {
                           return info.param.is_cpu() ? std::string("cpu") : std::string("cuda");
                         });

}  // namespace
