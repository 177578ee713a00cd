// nn::utils::clip_grad_norm_ and clip_grad_value_ against float64 references computed here
// from the gradients' values; the non-finite error; CUDA against the CPU.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "wick/wick.h"

namespace {

using namespace wick;

std::vector<double> values(const Tensor& t) { return t.cpu().to(kFloat64).to_vector<double>(); }

// Parameters with gradients set to random values (one without a gradient).
std::vector<Tensor> params_with_grads(Device d, Dtype dt = kFloat32) {
  std::vector<Tensor> ps;
  const std::vector<std::vector<int64_t>> shapes = {{3, 4}, {5}, {2, 2, 2}};
  for (const auto& s : shapes) {
    Tensor p = randn(s, TensorOptions(dt).device(d)).requires_grad_();
    p.set_grad(randn(s, TensorOptions(dt)).to(d) * 3.0);
    ps.push_back(p);
  }
  ps.push_back(randn({2}, TensorOptions(dt).device(d)).requires_grad_());  // no grad: skipped
  return ps;
}

double reference_norm(const std::vector<Tensor>& ps, double p) {
  double acc = 0;
  for (const Tensor& t : ps) {
    if (!t.grad().defined()) continue;
    for (double v : values(t.grad())) {
      if (std::isinf(p)) acc = std::max(acc, std::abs(v));
      else acc += std::pow(std::abs(v), p);
    }
  }
  return std::isinf(p) ? acc : std::pow(acc, 1.0 / p);
}

TEST(ClipGradNorm, ScalesToMaxNormAndReturnsTheTotal) {
  manual_seed(1);
  for (double p : {2.0, 1.0, 3.0, double(INFINITY)}) {
    SCOPED_TRACE(p);
    std::vector<Tensor> ps = params_with_grads(Device(kCPU), kFloat64);
    std::vector<std::vector<double>> before;
    for (const Tensor& t : ps)
      if (t.grad().defined()) before.push_back(values(t.grad()));
    const double want = reference_norm(ps, p);
    Tensor total = nn::utils::clip_grad_norm_(ps, 1.5, p);
    EXPECT_EQ(total.dim(), 0);
    EXPECT_NEAR(total.item<double>(), want, 1e-10 * want);
    const double coef = std::min(1.5 / (want + 1e-6), 1.0);
    size_t k = 0;
    for (const Tensor& t : ps) {
      if (!t.grad().defined()) continue;
      std::vector<double> after = values(t.grad());
      for (size_t i = 0; i < after.size(); ++i) EXPECT_NEAR(after[i], before[k][i] * coef, 1e-12);
      ++k;
    }
    EXPECT_NEAR(reference_norm(ps, p), 1.5, 1e-5);
  }
}

TEST(ClipGradNorm, BelowMaxNormLeavesGradientsAndFloat32) {
  manual_seed(2);
  std::vector<Tensor> ps = params_with_grads(Device(kCPU));
  const double want = reference_norm(ps, 2.0);
  std::vector<double> g0 = values(ps[0].grad());
  Tensor total = nn::utils::clip_grad_norm_(ps, want * 10);
  EXPECT_EQ(total.dtype(), kFloat32);
  EXPECT_NEAR(total.item<double>(), want, 1e-5 * want);
  EXPECT_EQ(values(ps[0].grad()), g0);
  // A single tensor, and no gradients at all.
  Tensor single = nn::utils::clip_grad_norm_(ps[1], 0.1);
  EXPECT_NEAR(reference_norm({ps[1]}, 2.0), 0.1, 1e-6);
  EXPECT_GT(single.item<double>(), 0.1);
  EXPECT_EQ(nn::utils::clip_grad_norm_(std::vector<Tensor>{ps[3]}, 1.0).item<double>(), 0.0);
}

TEST(ClipGradNorm, NonFiniteTotal) {
  std::vector<Tensor> ps = params_with_grads(Device(kCPU));
  ps[1].mutable_grad()[2].fill_(INFINITY);
  std::vector<double> g0 = values(ps[0].grad());
  try {
    nn::utils::clip_grad_norm_(ps, 1.0, 2.0, /*error_if_nonfinite=*/true);
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()),
              "[clip_grad_norm_] The total norm of order 2.0 for gradients from `parameters` is non-finite, so it "
              "cannot be clipped. To disable this error and scale the gradients by the non-finite norm anyway, set "
              "`error_if_nonfinite=False`");
  }
  EXPECT_EQ(values(ps[0].grad()), g0);  // nothing clipped
  Tensor total = nn::utils::clip_grad_norm_(ps, 1.0);  // without the check: scaled by 1 / inf
  EXPECT_TRUE(std::isinf(total.item<double>()));
  for (double v : values(ps[0].grad())) EXPECT_EQ(v, 0.0);
}

TEST(ClipGradValue, Clamps) {
  manual_seed(3);
  std::vector<Tensor> ps = params_with_grads(Device(kCPU));
  std::vector<double> g = values(ps[0].grad());
  nn::utils::clip_grad_value_(ps, 0.5);
  std::vector<double> after = values(ps[0].grad());
  for (size_t i = 0; i < g.size(); ++i) EXPECT_EQ(after[i], std::max(-0.5, std::min(0.5, g[i])));
  for (const Tensor& p : ps) {
    if (p.grad().defined()) {
      EXPECT_LE(p.grad().abs().max().item<double>(), 0.5);
    }
  }
  nn::utils::clip_grad_value_(ps[0], 0.25);
  EXPECT_LE(ps[0].grad().abs().max().item<double>(), 0.25);
}

TEST(ClipGradCuda, MatchesCpu) {
  if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  for (double p : {2.0, double(INFINITY)}) {
    manual_seed(4);
    std::vector<Tensor> cpu_ps = params_with_grads(Device(kCPU));
    std::vector<Tensor> gpu_ps;
    for (const Tensor& t : cpu_ps) {
      Tensor g = t.detach().to(Device("cuda")).requires_grad_();
      if (t.grad().defined()) g.set_grad(t.grad().to(Device("cuda")));
      gpu_ps.push_back(g);
    }
    Tensor a = nn::utils::clip_grad_norm_(cpu_ps, 1.0, p);
    Tensor b = nn::utils::clip_grad_norm_(gpu_ps, 1.0, p);
    EXPECT_TRUE(b.is_cuda());
    EXPECT_NEAR(b.item<double>(), a.item<double>(), 1e-5 * a.item<double>());
    for (size_t i = 0; i < 3; ++i) {
      std::vector<double> x = values(cpu_ps[i].grad()), y = values(gpu_ps[i].grad());
      for (size_t j = 0; j < x.size(); ++j) EXPECT_NEAR(x[j], y[j], 1e-6);
    }
  }
}

// The multi-tensor path on CUDA (foreach unset) against foreach=false and the float64 reference: float32 and bfloat16 gradients in one
// call (two groups), large ones cut into many chunks, a non-contiguous one (its own kernels),
// norm 2 and inf; the scaled gradients; NaN and inf reach the total; error_if_nonfinite.
TEST(ClipGradCuda, ForeachMatchesPerGradientKernels) {
  if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const Device gpu("cuda");
  auto make = [&](std::vector<Tensor>& ps) {
    manual_seed(5);
    const std::vector<std::pair<std::vector<int64_t>, Dtype>> specs = {
        {{3000, 700}, kFloat32}, {{5}, kFloat32}, {{257, 33}, kBFloat16}, {{4097}, kFloat32},
        {{1}, kBFloat16},       {{70000}, kBFloat16}};
    for (const auto& [shape, dt] : specs) {
      Tensor p = zeros(shape, TensorOptions(dt).device(gpu)).requires_grad_();
      p.set_grad((randn(shape) * 2.0).to(dt).to(gpu));
      ps.push_back(p);
    }
    Tensor t = zeros({40, 30}, TensorOptions(kFloat32).device(gpu)).requires_grad_();
    t.set_grad((randn({30, 40}) * 2.0).to(gpu).t());  // non-contiguous
    ps.push_back(t);
  };
  for (double p : {2.0, double(INFINITY)}) {
    SCOPED_TRACE(p);
    std::vector<Tensor> a, b;
    make(a);
    make(b);
    const double want = reference_norm(a, p);
    const Tensor ta = nn::utils::clip_grad_norm_(a, 1.0, p, false, std::nullopt);
    const Tensor tb = nn::utils::clip_grad_norm_(b, 1.0, p, false, false);
    EXPECT_TRUE(ta.is_cuda());
    EXPECT_EQ(ta.dtype(), tb.dtype());
    EXPECT_NEAR(ta.item<double>(), want, 1e-3 * want);
    EXPECT_NEAR(tb.item<double>(), want, 1e-3 * want);
    for (size_t i = 0; i < a.size(); ++i) {
      SCOPED_TRACE(i);
      const std::vector<double> x = values(a[i].grad()), y = values(b[i].grad());
      const double tol = a[i].grad().dtype() == kBFloat16 ? 1e-2 : 1e-5;
      for (size_t j = 0; j < x.size(); j += 97) EXPECT_NEAR(x[j], y[j], tol * (1 + std::abs(y[j])));
    }
  }
  // a NaN or an inf in one gradient of a group: the total is NaN / inf, as the per-gradient path's
  for (double bad : {double(NAN), double(INFINITY)}) {
    for (double p : {2.0, double(INFINITY)}) {
      std::vector<Tensor> a, b;
      make(a);
      make(b);
      a[0].grad().view({-1}).narrow(0, 123456, 1).fill_(bad);
      b[0].grad().view({-1}).narrow(0, 123456, 1).fill_(bad);
      const double ta = nn::utils::clip_grad_norm_(a, 1.0, p).item<double>();
      const double tb = nn::utils::clip_grad_norm_(b, 1.0, p, false, false).item<double>();
      EXPECT_EQ(std::isnan(ta), std::isnan(tb)) << bad << " " << p;
      EXPECT_EQ(std::isinf(ta), std::isinf(tb)) << bad << " " << p;
      std::vector<Tensor> c;
      make(c);
      c[2].grad().view({-1}).narrow(0, 7, 1).fill_(bad);
      const Tensor before = c[0].grad().clone(), before_bad = c[2].grad().clone();
      EXPECT_THROW(nn::utils::clip_grad_norm_(c, 1.0, p, true), ValueError);
      EXPECT_TRUE(equal(c[0].grad(), before));  // nothing scaled
      EXPECT_TRUE(equal(c[2].grad().isnan(), before_bad.isnan()));
      EXPECT_TRUE(equal(where(before_bad.isnan(), 0.0, c[2].grad()), where(before_bad.isnan(), 0.0, before_bad)));
    }
  }
}

}  // namespace
