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
    Tensor base = inputs[i].detach().cpu().contiguous().clone();  // perturbed on the host
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

// Checks second derivatives. With w a random gradient of f's output and v_i random tensors of
// the inputs' sizes, H(x, w) = sum_i <d<f(x), w>/dx_i, v_i> is computed with autograd::grad
// under create_graph and differentiated by backward; its derivatives wrt every input that
// requires grad and wrt w are checked against central differences of H computed from plain
// first-order gradients. An input whose derivative is nowhere connected counts as zero.
inline void gradgradcheck(const Fn& f, const std::vector<Tensor>& inputs, Device device = Device(kCPU),
                          double atol = 1e-5, double rtol = 1e-4, double eps = 1e-6,
                          std::source_location where = std::source_location::current()) {
  SCOPED_TRACE(::testing::Message() << "gradgradcheck called at " << where.file_name() << ":" << where.line());
  std::vector<size_t> diff;
  std::vector<Tensor> leaves, v;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Tensor l = inputs[i].detach().to(device, false, true);
    if (inputs[i].requires_grad()) {
      l.requires_grad_();
      diff.push_back(i);
      v.push_back(randn(inputs[i].sizes(), TensorOptions(kFloat64)).to(device));
    }
    leaves.push_back(l);
  }
  ASSERT_FALSE(diff.empty());
  Tensor w0;
  {
    NoGradGuard g;
    w0 = randn(f(leaves).sizes(), TensorOptions(kFloat64));
  }
  // H at xs and w, with the first derivatives recording (create) or not.
  auto H = [&](const std::vector<Tensor>& xs, const Tensor& w, bool create) {
    Tensor y = f(xs);
    autograd::variable_list wrt;
    for (size_t i : diff) wrt.push_back(xs[i]);
    autograd::variable_list g = autograd::grad({y}, wrt, {w.to(y.device())}, std::nullopt, create, /*allow_unused=*/true);
    Tensor h = zeros({}, TensorOptions(kFloat64).device(device));
    for (size_t k = 0; k < g.size(); ++k)
      if (g[k].defined()) h = h + (g[k].to(kFloat64) * v[k]).sum();
    return h;
  };
  Tensor w = w0.to(device, false, true).requires_grad_();
  Tensor h = H(leaves, w, true);
  ASSERT_TRUE(h.requires_grad()) << "the first derivative did not record";
  h.backward();

  auto numeric_check = [&](const Tensor& analytic_t, const Tensor& value, auto make_args, const char* what) {
    std::vector<double> analytic = analytic_t.defined() ? analytic_t.cpu().to_vector<double>()
                                                        : std::vector<double>(size_t(value.numel()), 0.0);
    Tensor base = value.detach().cpu().contiguous().clone();
    double* p = base.data_ptr<double>();
    for (int64_t j = 0; j < base.numel(); ++j) {
      auto eval = [&](double delta) {
        const double keep = p[j];
        p[j] = keep + delta;
        Tensor moved = base.to(device, false, true);
        p[j] = keep;
        return make_args(moved);
      };
      const double numeric = (eval(eps) - eval(-eps)) / (2 * eps);
      EXPECT_NEAR(analytic[size_t(j)], numeric, atol + rtol * std::abs(numeric))
          << what << " element " << j << " on " << device;
    }
  };
  // fresh leaves for a plain first-order evaluation
  auto fresh = [&](size_t replace, const Tensor& with) {
    std::vector<Tensor> xs;
    for (size_t k = 0; k < leaves.size(); ++k) {
      Tensor t = (k == replace ? with : leaves[k]).detach();
      if (inputs[k].requires_grad()) t.requires_grad_();
      xs.push_back(t);
    }
    return xs;
  };
  for (size_t i : diff) {
    ASSERT_TRUE(!leaves[i].grad().defined() || leaves[i].grad().sizes().equals(leaves[i].sizes()));
    numeric_check(leaves[i].grad(), leaves[i], [&](const Tensor& moved) {
      return H(fresh(i, moved), w.detach(), false).item<double>();
    }, ("input " + std::to_string(i)).c_str());
  }
  numeric_check(w.grad(), w, [&](const Tensor& moved) {
    return H(fresh(size_t(-1), Tensor()), moved, false).item<double>();
  }, "grad_output");
}

// A float64 CPU tensor of N(0, 1) values that requires grad (or not).
inline Tensor rnd(IntArrayRef sizes, bool requires_grad = true) {
  Tensor t = randn(sizes, TensorOptions(kFloat64));
  if (requires_grad) t.requires_grad_();
  return t;
}

}  // namespace wick::testing
