// Gradient checks: gradients from backward() against central differences in float64.
#pragma once

#include <functional>
#include <source_location>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "wick/wick.h"

namespace wick::testing {

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

// Devices to run a test on: the CPU, and cuda:0 when a GPU is present.
inline std::vector<Device> test_devices() {
  std::vector<Device> d{Device(kCPU)};
  if (cuda::is_available()) d.push_back(Device(kCUDA, 0));
  return d;
}

// Checks d<f(inputs), w>/d input for every input that requires grad, w random, against
// (f(x + eps) - f(x - eps)) / 2 eps per element. inputs are float64 CPU tensors; the
// function runs on device (inputs moved there as leaves).
inline void gradcheck(const Fn& f, const std::vector<Tensor>& inputs, Device device = Device(kCPU),
                      double atol = 1e-6, double rtol = 1e-5, double eps = 1e-6,
                      std::source_location where = std::source_location::current()) {
  SCOPED_TRACE(::testing::Message() << "gradcheck called at " << where.file_name() << ":" << where.line());
  std::vector<Tensor> leaves;
  for (const Tensor& t : inputs) {
    Tensor l = t.detach().to(device, false, true);
    if (t.requires_grad()) l.requires_grad_();
    leaves.push_back(l);
  }
  Tensor out = f(leaves);
  ASSERT_TRUE(out.requires_grad()) << "output does not require grad";
  ASSERT_TRUE(out.grad_fn() != nullptr);
  Tensor w = randn(out.sizes(), TensorOptions(kFloat64)).to(out.device());  // f may move its result
  (out * w).sum().backward();
  const std::vector<double> wv = w.cpu().to_vector<double>();

  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].requires_grad()) continue;
    ASSERT_TRUE(leaves[i].grad().defined()) << "input " << i << " got no gradient";
    ASSERT_EQ(leaves[i].grad().sizes(), leaves[i].sizes());
    ASSERT_EQ(leaves[i].grad().dtype(), leaves[i].dtype());
    ASSERT_EQ(leaves[i].grad().device(), leaves[i].device());
    std::vector<double> analytic = leaves[i].grad().cpu().to_vector<double>();
    Tensor base = inputs[i].detach().contiguous().clone();
    double* p = base.data_ptr<double>();
    for (int64_t j = 0; j < base.numel(); ++j) {
      auto eval = [&](double delta) {
        NoGradGuard g;
        const double keep = p[j];
        p[j] = keep + delta;
        std::vector<Tensor> args;
        for (size_t k = 0; k < inputs.size(); ++k)
          args.push_back(k == i ? base.to(device, false, true) : leaves[k].detach());
        p[j] = keep;
        std::vector<double> y = f(args).cpu().to_vector<double>();
        double s = 0;
        for (size_t m = 0; m < y.size(); ++m) s += y[m] * wv[m];
        return s;
      };
      const double numeric = (eval(eps) - eval(-eps)) / (2 * eps);
      EXPECT_NEAR(analytic[size_t(j)], numeric, atol + rtol * std::abs(numeric))
          << "input " << i << " element " << j << " on " << device;
    }
  }
}

// A float64 CPU tensor of N(0, 1) values that requires grad (or not).
inline Tensor rnd(IntArrayRef sizes, bool requires_grad = true) {
  Tensor t = randn(sizes, TensorOptions(kFloat64));
  if (requires_grad) t.requires_grad_();
  return t;
}

}  // namespace wick::testing
