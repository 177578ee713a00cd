// Optimizers and schedulers against their update rules written out in plain float64 loops,
// on the loss sum(c * p^2) (gradient 2 c p) for a few steps.
#include <cmath>
#include <numbers>

#include <gtest/gtest.h>

#include "../nn/nn_test_util.h"
#include "quadratic_loss.h"
#include "wick/wick.h"

using namespace wick;
using wick::testing::error_of;
using wick::testing::expect_vec;
using wick::testing::grad_of;
using wick::testing::kC;
using wick::testing::kP0;
using wick::testing::expect_close;

namespace {


class Optimizers : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override {
    if (GetParam().is_cuda() && !cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  }
  Device dev() const { return GetParam(); }
  Tensor param() const { return tensor({0.5, -1.5, 2.0, 0.25}, kFloat64).to(dev()).requires_grad_(); }
  Tensor c() const { return tensor({1.0, 0.5, 2.0, 3.0}, kFloat64).to(dev()); }
  // Runs steps of opt on p and returns p's values.
  template <class Opt>
  std::vector<double> run(Opt& opt, Tensor& p, int steps) {
    for (int s = 0; s < steps; ++s) {
      opt.zero_grad();
      (c() * p * p).sum().backward();
      opt.step();
    }
    return p.detach().cpu().template to_vector<double>();
  }
};

TEST_P(Optimizers, SGDVariants) {
  struct Case {
    double lr, momentum, dampening, wd;
    bool nesterov;
  };
  for (const Case& cs : {Case{0.1, 0, 0, 0, false}, Case{0.05, 0.9, 0, 0, false},
                         Case{0.05, 0.9, 0.1, 0.01, false}, Case{0.05, 0.8, 0, 0.02, true}}) {
    auto p = param();
    optim::SGD opt({p}, optim::SGDOptions(cs.lr)
                            .momentum(cs.momentum)
                            .dampening(cs.dampening)
                            .weight_decay(cs.wd)
                            .nesterov(cs.nesterov));
    auto got = run(opt, p, 4);
    std::vector<double> x = kP0, buf(4, 0);
    for (int s = 0; s < 4; ++s) {
      auto g = grad_of(x);
      for (size_t i = 0; i < 4; ++i) {
        double d = g[i] + cs.wd * x[i];
        if (cs.momentum != 0) {
          buf[i] = s == 0 ? d : cs.momentum * buf[i] + (1 - cs.dampening) * d;
          d = cs.nesterov ? d + cs.momentum * buf[i] : buf[i];
        }
        x[i] -= cs.lr * d;
      }
    }
    expect_vec(got, x);
  }
}

TEST_P(Optimizers, AdamAndAdamW) {
  for (int variant = 0; variant < 4; ++variant) {
    const bool decoupled = variant >= 2, amsgrad = variant % 2 == 1;
    const double lr = 0.1, b1 = 0.8, b2 = 0.95, eps = 1e-6, wd = 0.05;
    auto p = param();
    std::vector<double> got;
    if (decoupled) {
      optim::AdamW opt({p},
                       optim::AdamWOptions(lr).betas({b1, b2}).eps(eps).weight_decay(wd).amsgrad(amsgrad));
      got = run(opt, p, 5);
    } else {
      optim::Adam opt({p}, optim::AdamOptions(lr).betas({b1, b2}).eps(eps).weight_decay(wd).amsgrad(amsgrad));
      got = run(opt, p, 5);
    }
    std::vector<double> x = kP0, m(4, 0), v(4, 0), vmax(4, 0);
    for (int t = 1; t <= 5; ++t) {
      auto g = grad_of(x);
      for (size_t i = 0; i < 4; ++i) {
        double gi = g[i];
        if (decoupled) x[i] *= 1 - lr * wd;
        else gi += wd * x[i];
        m[i] = b1 * m[i] + (1 - b1) * gi;
        v[i] = b2 * v[i] + (1 - b2) * gi * gi;
        vmax[i] = std::max(vmax[i], v[i]);
        const double vh = (amsgrad ? vmax[i] : v[i]) / (1 - std::pow(b2, t));
        x[i] -= lr * (m[i] / (1 - std::pow(b1, t))) / (std::sqrt(vh) + eps);
      }
    }
    expect_vec(got, x, 1e-12);
  }
}

TEST_P(Optimizers, StateLivesOnTheParameterDevice) {
  auto p = param();
  optim::Adam opt({p}, optim::AdamOptions(0.1));
  run(opt, p, 1);
  for (auto& [name, t] : opt.state(p).tensors) EXPECT_EQ(t.device(), p.device()) << name;
  optim::SGD sgd({p}, optim::SGDOptions(0.1).momentum(0.9));
  run(sgd, p, 1);
  EXPECT_EQ(sgd.state(p).tensors.at("momentum_buffer").device(), p.device());
}

TEST_P(Optimizers, ZeroGradAndSkippedParams) {
  auto p = param(), q = param();
  optim::SGD opt({p, q}, optim::SGDOptions(0.1));
  (c() * p).sum().backward();  // q gets no gradient and stays
  opt.step();
  expect_close(q, kP0, 0);
  expect_close(p, std::vector<double>{0.4, -1.55, 1.8, -0.05}, 1e-12);
  opt.zero_grad(false);
  expect_close(p.grad(), std::vector<double>(4, 0.0), 0);
  opt.zero_grad();
  EXPECT_FALSE(p.grad().defined());
}

INSTANTIATE_TEST_SUITE_P(Devices, Optimizers, ::testing::Values(Device(kCPU), Device(kCUDA, 0)),
                         [](const auto& info) {
                           return info.param.is_cpu() ? std::string("cpu") : std::string("cuda");
                         });

TEST(Optimizer, GradientOnAnotherDeviceOrDtypeThrows) {
  auto p = tensor({1.0, 2.0}).requires_grad_();
  optim::SGD opt({p}, optim::SGDOptions(0.1));
  p.mutable_grad() = tensor({1.0, 1.0}, kFloat64);
  EXPECT_NE(error_of([&] { opt.step(); }).find("differ in dtype"), std::string::npos);
  if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device for the device check";
  p.mutable_grad() = ones({2}, Device("cuda:0"));
  EXPECT_NE(error_of([&] { opt.step(); }).find("gradients must live on their parameter's device"),
            std::string::npos);
}

TEST(Optimizer, ParamGroupsAndErrors) {
  auto a = tensor({1.0}).requires_grad_(), b = tensor({1.0}).requires_grad_();
  std::vector<optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<Tensor>{a});
  groups.emplace_back(std::vector<Tensor>{b}, std::make_unique<optim::SGDOptions>(0.5));
  optim::SGD opt(groups, optim::SGDOptions(0.1));
  EXPECT_EQ(opt.param_groups()[0].options().get_lr(), 0.1);
  EXPECT_EQ(opt.param_groups()[1].options().get_lr(), 0.5);
  (a * 2 + b * 2).sum().backward();
  opt.step();
  expect_close(a, std::vector<double>{0.8}, 1e-7);
  expect_close(b, std::vector<double>{0.0}, 1e-7);
  EXPECT_NE(error_of([&] {
              optim::SGD bad({a, a * 2}, optim::SGDOptions(0.1));
            }).find("non-leaf"),
            std::string::npos);
  EXPECT_NE(error_of([&] { optim::SGD bad({a}, optim::SGDOptions(-1)); }).find("Invalid learning rate"),
            std::string::npos);
}

TEST(Schedulers, StepLRAndCosineAnnealing) {
  auto p = tensor({1.0}).requires_grad_();
  optim::SGD opt({p}, optim::SGDOptions(1.0));
  optim::StepLR step(opt, 3, 0.5);
  for (int e = 1; e <= 10; ++e) {
    step.step();
    EXPECT_NEAR(opt.param_groups()[0].options().get_lr(), std::pow(0.5, e / 3), 1e-15) << "epoch " << e;
  }
  optim::SGD opt2({p}, optim::SGDOptions(0.2));
  optim::CosineAnnealingLR cos(opt2, 10, 0.01);
  for (int e = 1; e <= 25; ++e) {
    cos.step();
    // The closed form (equal to PyTorch's recursive one, including past T_max).
    const double want = 0.01 + (0.2 - 0.01) * (1 + std::cos(std::numbers::pi * e / 10)) / 2;
    EXPECT_NEAR(opt2.param_groups()[0].options().get_lr(), want, 1e-12) << "epoch " << e;
    EXPECT_NEAR(cos.get_last_lr()[0], want, 1e-12);
  }
}

}  // namespace
