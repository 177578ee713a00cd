// The conformance suite's harness: the same inputs through wick and through LibTorch, outputs
// and gradients compared, on the CPU (float64 and float32) and on cuda:0 (float32) when both
// libraries see a GPU. Tensors cross between the libraries through host float64 (or int64)
// buffers, so neither library's memory layout matters.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <wick/wick.h>

namespace conformance {

using WFn = std::function<wick::Tensor(const std::vector<wick::Tensor>&)>;
using TFn = std::function<torch::Tensor(const std::vector<torch::Tensor>&)>;

struct Target {
  wick::Device wick_device;
  torch::Device torch_device;
  wick::Dtype dtype;  // floating inputs are cast to it
  double tol;         // |wick - torch| <= tol * (1 + |torch|)
  std::string name;
};

inline std::vector<Target> targets() {
  std::vector<Target> t{
      {wick::Device("cpu"), torch::Device(torch::kCPU), wick::kFloat64, 1e-10, "cpu/float64"},
      {wick::Device("cpu"), torch::Device(torch::kCPU), wick::kFloat32, 2e-5, "cpu/float32"}};
  if (wick::cuda::is_available() && torch::cuda::is_available())
    t.push_back(
        {wick::Device("cuda:0"), torch::Device(torch::kCUDA, 0), wick::kFloat32, 2e-5, "cuda/float32"});
  return t;
}

inline torch::Dtype torch_dtype(wick::Dtype d) {
  switch (d) {
    case wick::kFloat64:
      return torch::kFloat64;
    case wick::kFloat32:
      return torch::kFloat32;
    case wick::kFloat16:
      return torch::kFloat16;
    case wick::kBFloat16:
      return torch::kBFloat16;
    case wick::kInt64:
      return torch::kInt64;
    case wick::kInt32:
      return torch::kInt32;
    case wick::kBool:
      return torch::kBool;
    default:
      return torch::kFloat64;
  }
}

// wick -> LibTorch, same values, dtype and device (on target's torch device).
inline torch::Tensor to_torch(const wick::Tensor& w, const torch::Device& device) {
  if (!w.defined()) return torch::Tensor();
  wick::Tensor c = w.detach().cpu();
  std::vector<int64_t> sizes(c.sizes().begin(), c.sizes().end());
  torch::Tensor t;
  if (c.is_floating_point()) {
    auto v = c.to_vector<double>();
    t = torch::from_blob(v.data(), sizes, torch::TensorOptions().dtype(torch::kFloat64)).clone();
  } else {
    auto v = c.to_vector<int64_t>();
    t = torch::from_blob(v.data(), sizes, torch::TensorOptions().dtype(torch::kInt64)).clone();
  }
  return t.to(torch_dtype(w.dtype())).to(device);
}

inline std::vector<double> host_values(const torch::Tensor& t) {
  torch::Tensor c = t.detach().to(torch::kCPU).to(torch::kFloat64).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

inline void expect_match(const wick::Tensor& w, const torch::Tensor& t, double tol, const std::string& what) {
  ASSERT_EQ(w.defined(), t.defined()) << what;
  if (!w.defined()) return;
  std::vector<int64_t> ws(w.sizes().begin(), w.sizes().end()), ts(t.sizes().begin(), t.sizes().end());
  ASSERT_EQ(ws, ts) << what << ": sizes differ";
  auto wv = w.detach().cpu().to_vector<double>();
  auto tv = host_values(t);
  for (size_t i = 0; i < wv.size(); ++i) {
    if (std::isnan(tv[i])) {
      EXPECT_TRUE(std::isnan(wv[i])) << what << " element " << i;
      continue;
    }
    EXPECT_NEAR(wv[i], tv[i], tol * (1 + std::abs(tv[i]))) << what << " element " << i;
  }
}

// One case: inputs made once (wick, CPU, float64 or integer); diff[i] marks the inputs whose
// gradients are compared.
struct Case {
  std::string name;
  std::vector<wick::Tensor> inputs;
  std::vector<bool> diff;
  WFn wick_fn;
  TFn torch_fn;
  double tol_scale = 1;     // loosens the target's tolerance (long reductions, GEMM in float32)
  bool check_name = false;  // grad_fn names must agree
};

inline void run(const Case& c, const Target& tg) {
  SCOPED_TRACE(c.name + " on " + tg.name);
  std::vector<wick::Tensor> wi;
  std::vector<torch::Tensor> ti;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    wick::Tensor x = c.inputs[i];
    if (x.defined() && x.is_floating_point()) x = x.to(tg.dtype);
    x = x.defined() ? x.to(tg.wick_device) : x;
    torch::Tensor y = to_torch(x, tg.torch_device);
    const bool d = i < c.diff.size() && c.diff[i];
    if (d) {
      x = x.detach().requires_grad_();
      y = y.detach().requires_grad_(true);
    }
    wi.push_back(x);
    ti.push_back(y);
  }
  wick::Tensor yw = c.wick_fn(wi);
  torch::Tensor yt = c.torch_fn(ti);
  const double tol = tg.tol * c.tol_scale;
  expect_match(yw, yt, tol, "output");
  bool any = false;
  for (size_t i = 0; i < c.diff.size(); ++i) any = any || c.diff[i];
  if (!any) return;
  if (c.check_name && yt.grad_fn()) {
    ASSERT_TRUE(yw.grad_fn() != nullptr);
    EXPECT_EQ(yw.grad_fn()->name(), yt.grad_fn()->name());
  }
  wick::Tensor g =
      wick::randn(yw.sizes(), wick::TensorOptions(wick::kFloat64)).to(yw.dtype()).to(tg.wick_device);
  yw.backward(g);
  yt.backward(to_torch(g, tg.torch_device));
  for (size_t i = 0; i < c.diff.size(); ++i)
    if (c.diff[i]) expect_match(wi[i].grad(), ti[i].grad(), tol, "gradient of input " + std::to_string(i));
}

inline void run_all(const std::vector<Case>& cases) {
  for (const Target& tg : targets())
    for (const Case& c : cases) run(c, tg);
}

// Random float64 CPU inputs for a case.
inline wick::Tensor rnd(std::vector<int64_t> sizes) {
  return wick::randn(sizes, wick::TensorOptions(wick::kFloat64));
}
inline wick::Tensor pos(std::vector<int64_t> sizes) { return rnd(sizes).abs() + 0.5; }

// LibTorch's reduction code for "mean", "sum", "none".
inline int64_t reduction(const std::string& r) {
  return r == "mean" ? at::Reduction::Mean : r == "sum" ? at::Reduction::Sum : at::Reduction::None;
}

}  // namespace conformance
