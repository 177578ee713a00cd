// amp::GradScaler: the fused unscale (KernelTable's unscale_check) against the division done in
// float64, skipped steps, backoff and growth, state round-trips, PyTorch's call-order errors,
// and a float16-autocast model whose gradients overflow without the scaler and train with it.
#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "core/kernel_table.h"
#include "wick/wick.h"

namespace wick {
namespace {

namespace F = nn::functional;

bool cuda_ok() { return cuda::is_available(); }

double max_abs_diff(const Tensor& a, const Tensor& b) {
  return (a.to(kFloat64).cpu() - b.to(kFloat64).cpu()).abs().max().item<double>();
}

// The kernel alone: many tensors (more than one launch table on CUDA, chunks crossed), two
// dtypes, a NaN or inf in one of them.
void check_unscale_kernel(Device dev, Dtype dtype, bool inject) {
  manual_seed(3);
  std::vector<Tensor> grads, refs;
  for (int i = 0; i < 45; ++i) {
    const int64_t n = i == 7 ? 70000 : 1 + 37 * i;
    Tensor v = randn({n}, kFloat64) * 1000;
    grads.push_back(v.to(dev, dtype));
    refs.push_back(v.to(dtype).to(kFloat64));
  }
  if (inject) grads[30].narrow(0, 5, 1).fill_(std::numeric_limits<double>::infinity());
  Tensor found = zeros({}, TensorOptions(kFloat32).device(dev));
  Tensor inv = full({}, 1.0f / 1024.0f, TensorOptions(kFloat32).device(dev));
  detail::kernel<&detail::KernelTable::unscale_check>(dev, "test")(grads, found, inv);
  EXPECT_EQ(found.item<float>(), inject ? 1.0f : 0.0f);
  const double tol = dtype == kFloat32 ? 1e-6 : 1e-2;
  for (size_t i = 0; i < grads.size(); ++i) {
    if (inject && i == 30) continue;
    EXPECT_LE(max_abs_diff(grads[i], refs[i] / 1024.0),
              tol * (1 + refs[i].abs().max().item<double>() / 1024.0));
  }
}

TEST(GradScalerKernel, CpuUnscaleAndCheck) {
  for (Dtype dt : {kFloat32, kBFloat16}) {
    check_unscale_kernel(Device("cpu"), dt, false);
    check_unscale_kernel(Device("cpu"), dt, true);
  }
}

TEST(GradScalerKernel, CudaUnscaleAndCheck) {
  if (!cuda_ok()) GTEST_SKIP() << "no CUDA device";
  for (Dtype dt : {kFloat32, kBFloat16, kFloat16}) {
    check_unscale_kernel(Device("cuda"), dt, false);
    check_unscale_kernel(Device("cuda"), dt, true);
  }
}

// loss = sum(w * x) for a float32 parameter w: its gradient is x.
struct Tiny {
  Tensor w, x;
  optim::SGD opt;
  explicit Tiny(Device dev)
      : w(ones({4}, TensorOptions().device(dev)).requires_grad_()),
        x(tensor({1.0, 2.0, 3.0, 4.0}, TensorOptions(kFloat32).device(dev))),
        opt({w}, optim::SGDOptions(0.1)) {}
  void backward(amp::GradScaler& s) {
    opt.zero_grad();
    s.scale((w * x).sum()).backward();
  }
};

void skip_and_step(Device dev) {
  Tiny t(dev);
  amp::GradScaler s;
  EXPECT_EQ(s.get_scale(), 65536.0);
  t.backward(s);
  EXPECT_EQ(t.w.grad()[2].item<double>(), 3.0 * 65536);
  s.step(t.opt);  // finite: unscaled (grad = x) and stepped
  EXPECT_EQ(max_abs_diff(t.w.grad(), t.x), 0.0);
  EXPECT_LE(max_abs_diff(t.w.detach(), 1 - 0.1 * t.x), 1e-6);
  s.update();
  EXPECT_EQ(s.get_scale(), 65536.0);

  Tensor before = t.w.detach().clone();
  t.backward(s);
  {
    NoGradGuard g;
    t.w.grad()[1].fill_(std::numeric_limits<double>::infinity());
  }
  s.step(t.opt);  // skipped
  EXPECT_EQ(max_abs_diff(t.w.detach(), before), 0.0);
  s.update();
  EXPECT_EQ(s.get_scale(), 32768.0);  // backed off
  t.backward(s);
  {
    NoGradGuard g;
    t.w.grad()[0].fill_(std::nan(""));
  }
  s.step(t.opt);
  s.update();
  EXPECT_EQ(s.get_scale(), 16384.0);
  EXPECT_EQ(max_abs_diff(t.w.detach(), before), 0.0);
}

TEST(GradScaler, SkipsInjectedInfAndBacksOffCpu) { skip_and_step(Device("cpu")); }
TEST(GradScaler, SkipsInjectedInfAndBacksOffCuda) {
  if (!cuda_ok()) GTEST_SKIP() << "no CUDA device";
  skip_and_step(Device("cuda"));
}

TEST(GradScaler, GrowsAfterTheInterval) {
  Tiny t(Device("cpu"));
  amp::GradScaler s(8.0, 2.0, 0.5, /*growth_interval=*/3);
  std::vector<double> scales;
  for (int i = 0; i < 7; ++i) {
    t.backward(s);
    s.step(t.opt);
    s.update();
    scales.push_back(s.get_scale());
  }
  EXPECT_EQ(scales, (std::vector<double>{8, 8, 16, 16, 16, 32, 32}));
  EXPECT_EQ(s.state_dict().at("_growth_tracker"), 1.0);
  // An inf resets the count: three more finite steps are needed after it.
  t.backward(s);
  {
    NoGradGuard g;
    Tensor(t.w.grad()).fill_(std::numeric_limits<double>::infinity());
  }
  s.step(t.opt);
  s.update();
  EXPECT_EQ(s.get_scale(), 16.0);
  EXPECT_EQ(s.state_dict().at("_growth_tracker"), 0.0);
  for (int i = 0; i < 2; ++i) {
    t.backward(s);
    s.step(t.opt);
    s.update();
  }
  EXPECT_EQ(s.get_scale(), 16.0);
  t.backward(s);
  s.step(t.opt);
  s.update();
  EXPECT_EQ(s.get_scale(), 32.0);
  s.update(5.0);  // new_scale
  EXPECT_EQ(s.get_scale(), 5.0);
}

TEST(GradScaler, StateDictRoundTrip) {
  Tiny t(Device("cpu"));
  amp::GradScaler a(1024.0, 3.0, 0.25, 5);
  for (int i = 0; i < 2; ++i) {
    t.backward(a);
    a.step(t.opt);
    a.update();
  }
  auto sd = a.state_dict();
  EXPECT_EQ(sd.at("scale"), 1024.0);
  EXPECT_EQ(sd.at("growth_factor"), 3.0);
  EXPECT_EQ(sd.at("backoff_factor"), 0.25);
  EXPECT_EQ(sd.at("growth_interval"), 5.0);
  EXPECT_EQ(sd.at("_growth_tracker"), 2.0);
  amp::GradScaler b;
  b.load_state_dict(sd);
  EXPECT_EQ(b.state_dict(), sd);
  // Both go on alike: three more finite steps grow each by 3.
  for (amp::GradScaler* s : {&a, &b})
    for (int i = 0; i < 3; ++i) {
      t.backward(*s);
      s->step(t.opt);
      s->update();
    }
  EXPECT_EQ(a.get_scale(), 3072.0);
  EXPECT_EQ(b.get_scale(), 3072.0);
  amp::GradScaler off(65536.0, 2.0, 0.5, 2000, /*enabled=*/false);
  EXPECT_TRUE(off.state_dict().empty());
  EXPECT_THROW(b.load_state_dict({}), Error);
}

TEST(GradScaler, CallOrderErrorsAsPyTorch) {
  Tiny t(Device("cpu"));
  amp::GradScaler s;
  EXPECT_THROW(s.unscale_(t.opt), Error);  // nothing scaled yet
  t.backward(s);
  s.unscale_(t.opt);
  Tensor g = t.w.grad().clone();
  try {
    s.unscale_(t.opt);
    FAIL() << "a second unscale_ must raise";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "unscale_() has already been called on this optimizer since the last update()"),
              std::string::npos);
  }
  EXPECT_EQ(max_abs_diff(t.w.grad(), g), 0.0);  // the failed call changed nothing
  s.step(t.opt);
  EXPECT_THROW(s.step(t.opt), Error);
  EXPECT_THROW(s.unscale_(t.opt), Error);
  s.update();
  // After update, a new iteration may unscale again.
  t.backward(s);
  s.unscale_(t.opt);
  s.step(t.opt);
  s.update();
  // float16 gradients are refused (PyTorch: "Attempting to unscale FP16 gradients.").
  Tensor h = ones({2}, kFloat16).requires_grad_();
  optim::SGD oh({h}, optim::SGDOptions(0.1));
  s.scale((h * 2).sum().to(kFloat32)).backward();
  EXPECT_THROW(s.unscale_(oh), ValueError);
}

TEST(GradScaler, DisabledPassesThrough) {
  Tiny t(Device("cpu"));
  amp::GradScaler s(65536.0, 2.0, 0.5, 2000, false);
  Tensor loss = (t.w * t.x).sum();
  EXPECT_TRUE(s.scale(loss).is_same(loss));
  loss.backward();
  s.step(t.opt);
  s.update();
  EXPECT_EQ(s.get_scale(), 1.0);
  EXPECT_LE(max_abs_diff(t.w.detach(), 1 - 0.1 * t.x), 1e-6);
}

// Unscale, then clip the true gradients' norm, then step: the clip sees unscaled values.
TEST(GradScaler, UnscaleThenClip) {
  manual_seed(5);
  Tensor w1 = randn({3, 4}).requires_grad_(), w2 = randn({3}).requires_grad_();
  Tensor x = randn({6, 4});
  auto loss_fn = [&] { return (F::linear(x, w1, w2).pow(2)).sum(); };
  loss_fn().backward();
  const double true_norm =
      std::sqrt(w1.grad().pow(2).sum().item<double>() + w2.grad().pow(2).sum().item<double>());
  Tensor g1 = w1.grad().clone(), g2 = w2.grad().clone();
  optim::SGD opt({w1, w2}, optim::SGDOptions(0.5));
  opt.zero_grad();
  amp::GradScaler s(4096.0);
  s.scale(loss_fn()).backward();
  s.unscale_(opt);
  const double norm =
      std::sqrt(w1.grad().pow(2).sum().item<double>() + w2.grad().pow(2).sum().item<double>());
  EXPECT_NEAR(norm, true_norm, 1e-4 * true_norm);
  const double max_norm = 0.5;
  const double coef = max_norm / (norm + 1e-6);
  ASSERT_LT(coef, 1.0);
  {
    NoGradGuard g;
    Tensor(w1.grad()).mul_(coef);
    Tensor(w2.grad()).mul_(coef);
  }
  Tensor w1_before = w1.detach().clone();
  s.step(opt);  // does not unscale again
  s.update();
  EXPECT_LE(max_abs_diff(w1.detach(), w1_before - 0.5 * g1 * (max_norm / (true_norm + 1e-6))), 1e-5);
  EXPECT_EQ(s.get_scale(), 4096.0);
  (void)g2;
}

// The seeds' warning: float16 overflows. A linear model under float16 autocast whose gradients
// exceed float16's range: plain SGD turns the weights inf/NaN; with the scaler, steps with
// inf/NaN are skipped while the scale backs off (below 1 here), then the model trains.
void overflow_model(Device dev) {
  auto run = [&](bool use_scaler) {
    manual_seed(11);
    Tensor w = (randn({1, 8}) * 0.01).to(dev).requires_grad_();
    Tensor b = zeros({1}, TensorOptions().device(dev)).requires_grad_();
    Tensor x = (rand({256, 8}) * 100 + 100).to(dev);
    Tensor y = (x.sum({1}, true) * 0.5 + 3).to(dev);  // reachable by w = 0.5, b = 3
    optim::SGD opt({w, b}, optim::SGDOptions(1e-8));
    amp::GradScaler scaler(65536.0, 2.0, 0.5, 2000, use_scaler);
    double first = 0, last = 0;
    for (int it = 0; it < 120; ++it) {
      opt.zero_grad();
      Tensor loss;
      {
        AutocastGuard g(dev.type(), kFloat16);
        loss = F::mse_loss(F::linear(x, w, b), y, "sum");
      }
      if (it == 0) first = loss.item<double>();
      last = loss.item<double>();
      scaler.scale(loss).backward();
      scaler.step(opt);
      scaler.update();
    }
    struct R {
      double first, last;
      bool finite;
      double scale;
    };
    const bool finite = std::isfinite(w.detach().abs().sum().item<double>());
    return R{first, last, finite, scaler.get_scale()};
  };
  auto plain = run(false);
  EXPECT_FALSE(plain.finite && std::isfinite(plain.last)) << "without the scaler training should diverge";
  auto scaled = run(true);
  EXPECT_TRUE(scaled.finite);
  EXPECT_TRUE(std::isfinite(scaled.last));
  EXPECT_LT(scaled.last, 0.01 * scaled.first);
  EXPECT_LT(scaled.scale, 1.0);  // backed off below 1 to keep float16 gradients finite
}

TEST(GradScaler, Float16OverflowTrainsWithScalerCpu) { overflow_model(Device("cpu")); }
TEST(GradScaler, Float16OverflowTrainsWithScalerCuda) {
  if (!cuda_ok()) GTEST_SKIP() << "no CUDA device";
  overflow_model(Device("cuda"));
}

}  // namespace
}  // namespace wick
