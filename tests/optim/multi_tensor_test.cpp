// The multi-tensor optimizer steps (foreach, the default) against the per-parameter ops
// (foreach(false)), which optimizer_test.cpp checks against float64 references: the same
// parameters and gradients go through both for several steps, and parameters and state must
// agree (bit for bit on the CPU, to a few ulps on CUDA, whose kernels contract differently).
// Sizes 1, 3 and 65537 cross the kernels' chunk boundaries.
#include <cmath>
#include <functional>

#include <gtest/gtest.h>

#include "wick/wick.h"

using namespace wick;

namespace {

const std::vector<std::vector<int64_t>> kShapes{{1}, {3}, {65537}, {7, 5}, {2, 3, 4}, {40000}};

struct Case {
  Device device;
  Dtype dtype;
};

class MultiTensor : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    if (GetParam().device.is_cuda() && !cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  }
  Device dev() const { return GetParam().device; }
  Dtype dtype() const { return GetParam().dtype; }
  // Two identical sets of fresh parameters.
  std::pair<std::vector<Tensor>, std::vector<Tensor>> params(uint64_t seed) const {
    manual_seed(seed);
    std::vector<Tensor> a, b;
    for (const auto& s : kShapes) {
      Tensor v = randn(s, TensorOptions().dtype(kFloat64));
      a.push_back(v.to(dev(), dtype()).clone().requires_grad_());
      b.push_back(v.to(dev(), dtype()).clone().requires_grad_());
    }
    return {a, b};
  }
};

// Elements equal (CPU) or within a few ulps of the dtype (CUDA).
void expect_same(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.sizes().vec(), want.sizes().vec()) << what;
  const auto g = got.detach().cpu().to(kFloat64).contiguous().to_vector<double>();
  const auto w = want.detach().cpu().to(kFloat64).contiguous().to_vector<double>();
  const bool exact = got.device().is_cpu();
  const double ulp = got.dtype() == kFloat64 ? 0x1p-52 : 0x1p-23;
  int bad = 0;
  for (size_t i = 0; i < g.size() && bad < 5; ++i) {
    const double tol = exact ? 0 : 8 * ulp * std::max(1.0, std::abs(w[i]));
    if (!(std::abs(g[i] - w[i]) <= tol)) {
      ++bad;
      ADD_FAILURE() << what << " element " << i << ": " << g[i] << " vs " << w[i];
    }
  }
}

// Runs steps on both optimizers with the same random gradients; param i gets no gradient on
// the steps where skip(i, step) (so Adam's step counts differ between parameters).
void run_both(optim::Optimizer& fused, std::vector<Tensor>& a, optim::Optimizer& ref, std::vector<Tensor>& b,
              int steps, const std::function<bool(size_t, int)>& skip = nullptr) {
  for (int s = 0; s < steps; ++s) {
    fused.zero_grad();
    ref.zero_grad();
    for (size_t i = 0; i < a.size(); ++i) {
      if (skip && skip(i, s)) continue;
      Tensor g = randn(a[i].sizes(), TensorOptions().dtype(kFloat64)).to(a[i].device(), a[i].dtype());
      a[i].mutable_grad() = g.clone();
      b[i].mutable_grad() = g.clone();
    }
    fused.step();
    ref.step();
  }
  for (size_t i = 0; i < a.size(); ++i) {
    expect_same(a[i], b[i], "param " + std::to_string(i));
    const optim::ParamState& sa = fused.state(a[i]);
    const optim::ParamState& sb = ref.state(b[i]);
    EXPECT_EQ(sa.step, sb.step);
    ASSERT_EQ(sa.tensors.size(), sb.tensors.size()) << "param " << i;
    for (const auto& [name, t] : sa.tensors) {
      ASSERT_TRUE(sb.tensors.count(name)) << name;
      expect_same(t, sb.tensors.at(name), name + " of param " + std::to_string(i));
    }
  }
}

TEST_P(MultiTensor, SGDEveryOptionCombination) {
  for (double momentum : {0.0, 0.9})
    for (double dampening : {0.0, 0.3})
      for (bool nesterov : {false, true})
        for (double wd : {0.0, 0.01})
          for (bool maximize : {false, true}) {
            if (nesterov && (momentum == 0 || dampening != 0)) continue;
            SCOPED_TRACE(::testing::Message()
                         << "momentum " << momentum << " dampening " << dampening << " nesterov " << nesterov
                         << " wd " << wd << " maximize " << maximize);
            auto [a, b] = params(11);
            auto o = optim::SGDOptions(0.05).momentum(momentum).dampening(dampening).nesterov(nesterov);
            o.weight_decay(wd).maximize(maximize);
            optim::SGD fused(a, o);
            optim::SGD ref(b, optim::SGDOptions(o).foreach (false));
            // Parameter 1 misses its first gradient: its buffer starts a step later.
            run_both(fused, a, ref, b, 4, [](size_t i, int s) { return i == 1 && s == 0; });
          }
}

TEST_P(MultiTensor, AdamAndAdamW) {
  for (bool decoupled : {false, true})
    for (bool amsgrad : {false, true})
      for (double wd : {0.0, 0.1})
        for (bool maximize : {false, true}) {
          SCOPED_TRACE(::testing::Message() << (decoupled ? "AdamW" : "Adam") << " amsgrad " << amsgrad
                                            << " wd " << wd << " maximize " << maximize);
          auto [a, b] = params(12);
          auto o = optim::AdamOptions(0.01).betas({0.8, 0.95}).eps(1e-6).weight_decay(wd);
          o.amsgrad(amsgrad).maximize(maximize);
          auto skip = [](size_t i, int s) { return (i + size_t(s)) % 4 == 0; };
          if (decoupled) {
            optim::AdamW fused(a, o);
            optim::AdamW ref(b, optim::AdamOptions(o).foreach (false));
            run_both(fused, a, ref, b, 5, skip);
          } else {
            optim::Adam fused(a, o);
            optim::Adam ref(b, optim::AdamOptions(o).foreach (false));
            run_both(fused, a, ref, b, 5, skip);
          }
        }
}

// Non-contiguous parameters and, in one group, parameters of two dtypes: the first take the
// per-parameter ops, the others are bucketed by dtype; all agree with the reference.
TEST_P(MultiTensor, NonContiguousAndMixedDtypeGroupsFallBack) {
  auto [a, b] = params(13);
  Tensor base = randn({6, 5}, TensorOptions().dtype(kFloat64)).to(dev(), dtype());
  a.push_back(base.clone().t().detach().requires_grad_());
  b.push_back(base.clone().t().detach().requires_grad_());
  ASSERT_FALSE(a.back().is_contiguous());
  const Dtype other = dtype() == kFloat64 ? kFloat32 : kFloat64;
  Tensor extra = randn({65537}, TensorOptions().dtype(kFloat64)).to(dev(), other);
  a.push_back(extra.clone().requires_grad_());
  b.push_back(extra.clone().requires_grad_());
  {
    auto a2 = a, b2 = b;
    for (size_t i = 0; i < a.size(); ++i) {
      // Clones keep the transposed parameter transposed.
      const bool t = !a[i].is_contiguous();
      a2[i] = (t ? a[i].detach().t().clone().t() : a[i].detach().clone()).requires_grad_();
      b2[i] = (t ? b[i].detach().t().clone().t() : b[i].detach().clone()).requires_grad_();
    }
    ASSERT_FALSE(a2[kShapes.size()].is_contiguous());
    auto o = optim::SGDOptions(0.1).momentum(0.9).weight_decay(0.01).nesterov(true);
    optim::SGD fused(a2, o);
    optim::SGD ref(b2, optim::SGDOptions(o).foreach (false));
    run_both(fused, a2, ref, b2, 3);
  }
  auto o = optim::AdamOptions(0.01).weight_decay(0.01).amsgrad(true);
  optim::AdamW fused(a, o);
  optim::AdamW ref(b, optim::AdamOptions(o).foreach (false));
  run_both(fused, a, ref, b, 3);
}

// More tensors than one CUDA launch's table holds (36): the kernel is launched again.
TEST_P(MultiTensor, ManyTensors) {
  manual_seed(14);
  std::vector<Tensor> a, b;
  for (int i = 0; i < 80; ++i) {
    Tensor v = randn({i == 37 ? 65537 : (i * 7) % 13 + 1}, TensorOptions().dtype(kFloat64));
    a.push_back(v.to(dev(), dtype()).clone().requires_grad_());
    b.push_back(v.to(dev(), dtype()).clone().requires_grad_());
  }
  {
    auto o = optim::SGDOptions(0.1).momentum(0.9).dampening(0.1).weight_decay(0.01);
    optim::SGD fused(a, o);
    optim::SGD ref(b, optim::SGDOptions(o).foreach (false));
    run_both(fused, a, ref, b, 3);
  }
  auto o = optim::AdamOptions(0.01).amsgrad(true);
  optim::Adam fused(a, o);
  optim::Adam ref(b, optim::AdamOptions(o).foreach (false));
  run_both(fused, a, ref, b, 3);
}

// The first momentum step clones d into the buffer; a state_dict-style buffer loaded later is used.
TEST_P(MultiTensor, SGDFirstStepAndMaximizeByHand) {
  Tensor p = tensor({1.0, -2.0, 3.0}, kFloat64).to(dev(), dtype()).requires_grad_();
  optim::SGD opt({p}, optim::SGDOptions(0.5).momentum(0.9).maximize(true));
  p.mutable_grad() = tensor({0.25, 0.5, -1.0}, kFloat64).to(dev(), dtype());
  opt.step();
  // d = -g; buf = d; p = p - lr * buf = p + 0.5 g.
  expect_same(p, tensor({1.125, -1.75, 2.5}, kFloat64).to(dtype()), "p");
  expect_same(opt.state(p).tensors.at("momentum_buffer"), tensor({-0.25, -0.5, 1.0}, kFloat64).to(dtype()),
              "buf");
  const auto v0 = p._version();
  opt.step();
  EXPECT_GT(p._version(), v0);
  // buf = 0.9 buf + d = 1.9 d; p = p - 0.5 buf.
  expect_same(p, tensor({1.125 + 0.2375, -1.75 + 0.475, 2.5 - 0.95}, kFloat64).to(dtype()), "p2");
}

INSTANTIATE_TEST_SUITE_P(Devices, MultiTensor,
                         ::testing::Values(Case{Device(kCPU), kFloat32}, Case{Device(kCPU), kFloat64},
                                           Case{Device(kCUDA, 0), kFloat32},
                                           Case{Device(kCUDA, 0), kFloat64}),
                         [](const auto& info) {
                           return std::string(info.param.device.is_cpu() ? "cpu" : "cuda") +
                                  (info.param.dtype == kFloat64 ? "_f64" : "_f32");
                         });

// Half-precision and bfloat16 parameters on CUDA compute in float and round once per element:
// close to a float32 run of the same numbers.
TEST(MultiTensorCuda, HalfParamsFollowFloat32) {
  if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  for (Dtype dt : {kFloat16, kBFloat16}) {
    manual_seed(5);
    std::vector<Tensor> h, f;
    for (const auto& s : kShapes) {
      Tensor v = randn(s, TensorOptions().dtype(kFloat32)).to(dt).to(kFloat32);
      h.push_back(v.to(Device(kCUDA, 0), dt).clone().requires_grad_());
      f.push_back(v.to(Device(kCUDA, 0), kFloat32).clone().requires_grad_());
    }
    // eps well above float16's smallest numbers, where exp_avg_sq's values underflow.
    optim::Adam oh(h, optim::AdamOptions(0.01).eps(1e-2));
    optim::Adam of(f, optim::AdamOptions(0.01).eps(1e-2));
    optim::SGD sh(h, optim::SGDOptions(0.01).momentum(0.9));
    optim::SGD sf(f, optim::SGDOptions(0.01).momentum(0.9));
    for (int s = 0; s < 3; ++s) {
      for (size_t i = 0; i < h.size(); ++i) {
        Tensor g = randn(h[i].sizes(), TensorOptions().dtype(kFloat32)).to(dt).to(kFloat32).cuda();
        h[i].mutable_grad() = g.to(dt);
        f[i].mutable_grad() = g;
      }
      oh.step();
      of.step();
      sh.step();
      sf.step();
    }
    const double tol = dt == kFloat16 ? 1e-2 : 5e-2;
    for (size_t i = 0; i < h.size(); ++i) {
      const auto a = h[i].detach().cpu().to(kFloat64).to_vector<double>();
      const auto b = f[i].detach().cpu().to(kFloat64).to_vector<double>();
      for (size_t j = 0; j < a.size(); ++j) ASSERT_NEAR(a[j], b[j], tol * std::max(1.0, std::abs(b[j])));
    }
  }
}

// A group spread over the CPU and a GPU: one bucket per device, same results as the reference.
TEST(MultiTensorCuda, MixedDeviceGroup) {
  if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  manual_seed(6);
  std::vector<Tensor> a, b;
  for (int i = 0; i < 4; ++i) {
    Device d = i % 2 ? Device(kCUDA, 0) : Device(kCPU);
    Tensor v = randn({65537 + i}, TensorOptions().dtype(kFloat64));
    a.push_back(v.to(d).clone().requires_grad_());
    b.push_back(v.to(d).clone().requires_grad_());
  }
  auto o = optim::AdamOptions(0.01).weight_decay(0.01);
  optim::Adam fused(a, o);
  optim::Adam ref(b, optim::AdamOptions(o).foreach (false));
  for (int s = 0; s < 3; ++s) {
    for (size_t i = 0; i < a.size(); ++i) {
      Tensor g = randn(a[i].sizes(), TensorOptions().dtype(kFloat64)).to(a[i].device());
      a[i].mutable_grad() = g.clone();
      b[i].mutable_grad() = g.clone();
    }
    fused.step();
    ref.step();
  }
  for (size_t i = 0; i < a.size(); ++i) expect_same(a[i], b[i], "param " + std::to_string(i));
}

}  // namespace
