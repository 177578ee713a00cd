// Adamax, NAdam, RAdam, Rprop and ASGD against their update rules written out in plain float64
// loops (the loss sum(c * p^2), gradient 2 c p), with weight decay, maximize and parameter
// groups; state_dict round trips mid-training that resume bit for bit; refused
// hyperparameters. MultiplicativeLR, ConstantLR, PolynomialLR, CyclicLR,
// CosineAnnealingWarmRestarts and ChainedScheduler against closed forms written out here, and
// their state_dict round trips. The same cases against PyTorch's own values:
// tests/fixtures/optim_more_reference.txt, printed by tests/gen/optim_more_reference.py
// (PyTorch 2.11), read at run time and checked line by line (OptimMorePyTorch).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <numbers>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../nn/nn_test_util.h"
#include "quadratic_loss.h"
#include "wick/wick.h"

using namespace wick;
using wick::testing::error_of;
using wick::testing::expect_vec;
using wick::testing::grad_of;
using wick::testing::kC;
using wick::testing::kP0;

namespace {

using Vec = std::vector<double>;

// PyTorch keeps NAdam's mu_product and ASGD's eta and mu as float32 tensors (the default
// dtype's scalar state): the references round them the same way.
double f32(double x) { return double(float(x)); }

// ---- The update rules, element by element in float64 (p: the parameter, g: its gradient).

Vec adamax_reference(double lr, double b1, double b2, double eps, double wd, bool maximize, int steps) {
  Vec x = kP0, m(4, 0), u(4, 0);
  for (int t = 1; t <= steps; ++t) {
    const Vec g = grad_of(x);
    for (size_t i = 0; i < 4; ++i) {
      const double d = (maximize ? -g[i] : g[i]) + wd * x[i];
      m[i] += (1 - b1) * (d - m[i]);
      u[i] = std::max(b2 * u[i], std::abs(d) + eps);
      x[i] -= lr / (1 - std::pow(b1, t)) * m[i] / u[i];
    }
  }
  return x;
}

Vec nadam_reference(double lr, double b1, double b2, double eps, double wd, double psi, bool decoupled,
                    bool maximize, int steps) {
  Vec x = kP0, m(4, 0), v(4, 0);
  double prod = 1;
  for (int t = 1; t <= steps; ++t) {
    const Vec g = grad_of(x);
    const double mu = b1 * (1 - 0.5 * std::pow(0.96, t * psi));
    const double mu_next = b1 * (1 - 0.5 * std::pow(0.96, (t + 1) * psi));
    prod = f32(float(prod) * float(mu));
    for (size_t i = 0; i < 4; ++i) {
      double d = maximize ? -g[i] : g[i];
      if (decoupled) x[i] *= 1 - lr * wd;
      else d += wd * x[i];
      m[i] += (1 - b1) * (d - m[i]);
      v[i] = b2 * v[i] + (1 - b2) * d * d;
      const double denom = std::sqrt(v[i] / (1 - std::pow(b2, t))) + eps;
      x[i] -= lr * (1 - mu) / (1 - prod) * d / denom + lr * mu_next / (1 - prod * mu_next) * m[i] / denom;
    }
  }
  return x;
}

Vec radam_reference(double lr, double b1, double b2, double eps, double wd, bool decoupled, bool maximize,
                    int steps) {
  Vec x = kP0, m(4, 0), v(4, 0);
  const double rho_inf = 2 / (1 - b2) - 1;
  for (int t = 1; t <= steps; ++t) {
    const Vec g = grad_of(x);
    const double bc1 = 1 - std::pow(b1, t), bc2 = 1 - std::pow(b2, t);
    const double rho = rho_inf - 2 * t * std::pow(b2, t) / bc2;
    for (size_t i = 0; i < 4; ++i) {
      double d = maximize ? -g[i] : g[i];
      if (decoupled) x[i] *= 1 - lr * wd;
      else d += wd * x[i];
      m[i] += (1 - b1) * (d - m[i]);
      v[i] = b2 * v[i] + (1 - b2) * d * d;
      const double mhat = m[i] / bc1;
      if (rho > 5) {
        const double r = std::sqrt((rho - 4) * (rho - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho));
        x[i] -= lr * mhat * r * std::sqrt(bc2) / (std::sqrt(v[i]) + eps);
      } else {
        x[i] -= lr * mhat;
      }
    }
  }
  return x;
}

Vec rprop_reference(double lr, double eta_minus, double eta_plus, double smin, double smax, bool maximize,
                    int steps) {
  Vec x = kP0, prev(4, 0), size(4, lr);
  for (int t = 1; t <= steps; ++t) {
    const Vec g = grad_of(x);
    for (size_t i = 0; i < 4; ++i) {
      double d = maximize ? -g[i] : g[i];
      const double s = d * prev[i];
      size[i] = std::clamp(size[i] * (s > 0 ? eta_plus : s < 0 ? eta_minus : 1.0), smin, smax);
      if (s < 0) d = 0;
      x[i] -= (d > 0 ? 1 : d < 0 ? -1 : 0) * size[i];
      prev[i] = d;
    }
  }
  return x;
}

// The parameter, then the average ax.
std::pair<Vec, Vec> asgd_reference(double lr, double lambd, double alpha, double t0, double wd, bool maximize,
                                   int steps) {
  Vec x = kP0, ax(4, 0);
  double eta = f32(lr), mu = 1;
  for (int t = 1; t <= steps; ++t) {
    const Vec g = grad_of(x);
    for (size_t i = 0; i < 4; ++i) {
      const double d = (maximize ? -g[i] : g[i]) + wd * x[i];
      x[i] *= 1 - lambd * eta;
      x[i] -= eta * d;
      ax[i] = mu == 1 ? x[i] : ax[i] + mu * (x[i] - ax[i]);
    }
    eta = f32(lr / std::pow(1 + lambd * lr * t, alpha));
    mu = f32(1 / std::max(1.0, t - t0));
  }
  return {x, ax};
}

Tensor from(const Vec& v, Dtype dt) { return tensor({v[0], v[1], v[2], v[3]}, dt); }

bool same_bits(const Tensor& a, const Tensor& b) {
  Tensor x = a.detach().cpu().contiguous(), y = b.detach().cpu().contiguous();
  return x.dtype() == y.dtype() && x.sizes().equals(y.sizes()) &&
         std::memcmp(x.data_ptr(), y.data_ptr(), size_t(x.nbytes())) == 0;
}

class OptimMore : public ::testing::TestWithParam<Device> {
 public:
  void SetUp() override {
    if (GetParam().is_cuda() && !cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  }
  Device dev() const { return GetParam(); }
  Tensor param(Dtype dt = kFloat64) const { return from(kP0, dt).to(dev()).requires_grad_(); }
  void backward(Tensor& p) const { (from(kC, p.dtype()).to(dev()) * p * p).sum().backward(); }
  Vec run(optim::Optimizer& opt, Tensor& p, int steps) const {
    for (int s = 0; s < steps; ++s) {
      opt.zero_grad();
      backward(p);
      opt.step();
    }
    return p.detach().cpu().to(kFloat64).to_vector<double>();
  }

  // Trains 3 steps, saves, loads into a fresh optimizer over a copy of the parameter, and
  // checks that the next 4 steps of both are bitwise equal (float32: the scalar state keeps
  // its dtype through the round trip).
  template <class Opt, class Options>
  void round_trip(const Options& options, const std::vector<std::string>& names) const {
    auto p = param(kFloat32);
    Opt opt({p}, options);
    for (int s = 0; s < 3; ++s) {
      opt.zero_grad();
      backward(p);
      opt.step();
    }
    Checkpoint sd = opt.state_dict();
    for (const std::string& n : names) EXPECT_EQ(sd.tensors.count("state.0." + n), 1u) << n;
    EXPECT_EQ(sd.tensors.size(), names.size());
    auto q = p.detach().clone().requires_grad_();
    Opt fresh({q}, Options(123.0));  // the hyperparameters come from the state
    fresh.load_state_dict(sd);
    EXPECT_EQ(fresh.state(q).step, 3);
    EXPECT_EQ(fresh.param_groups()[0].options().get_lr(), options.lr());
    for (int s = 0; s < 4; ++s) {
      for (auto [o, x] : {std::pair<optim::Optimizer*, Tensor*>{&opt, &p}, {&fresh, &q}}) {
        o->zero_grad();
        backward(*x);
        o->step();
      }
      EXPECT_TRUE(same_bits(p, q)) << "step " << s;
    }
    for (const std::string& n : names)
      EXPECT_TRUE(same_bits(opt.state(p).tensors.at(n), fresh.state(q).tensors.at(n))) << n;
  }
};

TEST_P(OptimMore, AdamaxMatchesTheUpdateRule) {
  struct Case {
    double lr, b1, b2, eps, wd;
    bool maximize;
  };
  for (const Case& c : {Case{2e-3, 0.9, 0.999, 1e-8, 0, false}, Case{0.05, 0.8, 0.99, 1e-3, 0, false},
                        Case{0.05, 0.9, 0.999, 1e-8, 0.1, false}, Case{0.02, 0.9, 0.999, 1e-8, 0.05, true}}) {
    SCOPED_TRACE(::testing::Message() << "lr " << c.lr << " betas " << c.b1 << "," << c.b2 << " wd " << c.wd
                                      << " maximize " << c.maximize);
    auto p = param();
    optim::Adamax opt({p}, optim::AdamaxOptions(c.lr).betas({c.b1, c.b2}).eps(c.eps).weight_decay(c.wd).maximize(
                               c.maximize));
    expect_vec(run(opt, p, 6), adamax_reference(c.lr, c.b1, c.b2, c.eps, c.wd, c.maximize, 6));
    EXPECT_EQ(opt.state(p).step, 6);
    for (const auto& [name, t] : opt.state(p).tensors) EXPECT_EQ(t.device(), dev()) << name;
  }
}

TEST_P(OptimMore, NAdamMatchesTheUpdateRule) {
  struct Case {
    double lr, b1, b2, eps, wd, psi;
    bool decoupled, maximize;
  };
  for (const Case& c : {Case{2e-3, 0.9, 0.999, 1e-8, 0, 4e-3, false, false},
                        Case{0.05, 0.8, 0.99, 1e-3, 0, 0.1, false, false},
                        Case{0.05, 0.9, 0.999, 1e-8, 0.1, 4e-3, false, false},
                        Case{0.05, 0.9, 0.999, 1e-8, 0.1, 4e-3, true, false},
                        Case{0.02, 0.9, 0.999, 1e-8, 0.01, 4e-3, true, true}}) {
    SCOPED_TRACE(::testing::Message() << "lr " << c.lr << " wd " << c.wd << " psi " << c.psi << " decoupled "
                                      << c.decoupled << " maximize " << c.maximize);
    auto p = param();
    optim::NAdam opt({p}, optim::NAdamOptions(c.lr)
                              .betas({c.b1, c.b2})
                              .eps(c.eps)
                              .weight_decay(c.wd)
                              .momentum_decay(c.psi)
                              .decoupled_weight_decay(c.decoupled)
                              .maximize(c.maximize));
    expect_vec(run(opt, p, 6), nadam_reference(c.lr, c.b1, c.b2, c.eps, c.wd, c.psi, c.decoupled, c.maximize, 6));
    const Tensor& mp = opt.state(p).tensors.at("mu_product");
    EXPECT_EQ(mp.dim(), 0);
    EXPECT_EQ(mp.dtype(), kFloat32);  // PyTorch's scalar state under the default dtype
    EXPECT_EQ(opt.state(p).tensors.at("exp_avg").device(), dev());
  }
}

TEST_P(OptimMore, RAdamMatchesTheUpdateRule) {
  struct Case {
    double lr, b1, b2, eps, wd;
    bool decoupled, maximize;
  };
  // 8 steps: rho_t passes 5 at step 6 with the default betas, so both branches run.
  for (const Case& c : {Case{1e-3, 0.9, 0.999, 1e-8, 0, false, false}, Case{0.05, 0.9, 0.9, 1e-3, 0, false, false},
                        Case{0.05, 0.9, 0.999, 1e-8, 0.1, false, false}, Case{0.05, 0.9, 0.99, 1e-8, 0.1, true, false},
                        Case{0.02, 0.8, 0.95, 1e-8, 0.01, true, true}}) {
    SCOPED_TRACE(::testing::Message() << "lr " << c.lr << " betas " << c.b1 << "," << c.b2 << " wd " << c.wd
                                      << " decoupled " << c.decoupled << " maximize " << c.maximize);
    auto p = param();
    optim::RAdam opt({p}, optim::RAdamOptions(c.lr)
                              .betas({c.b1, c.b2})
                              .eps(c.eps)
                              .weight_decay(c.wd)
                              .decoupled_weight_decay(c.decoupled)
                              .maximize(c.maximize));
    expect_vec(run(opt, p, 8), radam_reference(c.lr, c.b1, c.b2, c.eps, c.wd, c.decoupled, c.maximize, 8));
  }
}

TEST_P(OptimMore, RpropMatchesTheUpdateRule) {
  struct Case {
    double lr, eta_minus, eta_plus, smin, smax;
    bool maximize;
  };
  // Large steps overshoot the minimum, so gradients flip sign and the step sizes shrink.
  for (const Case& c : {Case{0.01, 0.5, 1.2, 1e-6, 50, false}, Case{0.4, 0.3, 1.5, 1e-6, 50, false},
                        Case{0.3, 0.5, 2.0, 0.05, 0.5, false}, Case{0.1, 0.5, 1.2, 1e-6, 50, true}}) {
    SCOPED_TRACE(::testing::Message() << "lr " << c.lr << " etas " << c.eta_minus << "," << c.eta_plus
                                      << " step_sizes " << c.smin << "," << c.smax << " maximize " << c.maximize);
    auto p = param();
    optim::Rprop opt({p}, optim::RpropOptions(c.lr)
                              .etas({c.eta_minus, c.eta_plus})
                              .step_sizes({c.smin, c.smax})
                              .maximize(c.maximize));
    expect_vec(run(opt, p, 10), rprop_reference(c.lr, c.eta_minus, c.eta_plus, c.smin, c.smax, c.maximize, 10));
    EXPECT_EQ(opt.state(p).step, 10);
  }
}

TEST_P(OptimMore, ASGDMatchesTheUpdateRule) {
  struct Case {
    double lr, lambd, alpha, t0, wd;
    bool maximize;
  };
  for (const Case& c : {Case{0.01, 1e-4, 0.75, 1e6, 0, false}, Case{0.05, 0.1, 0.5, 2, 0, false},
                        Case{0.05, 0.01, 0.75, 3, 0.1, false}, Case{0.02, 1e-3, 0.75, 1, 0.05, true}}) {
    SCOPED_TRACE(::testing::Message() << "lr " << c.lr << " lambd " << c.lambd << " alpha " << c.alpha << " t0 "
                                      << c.t0 << " wd " << c.wd << " maximize " << c.maximize);
    auto p = param();
    optim::ASGD opt(
        {p}, optim::ASGDOptions(c.lr).lambd(c.lambd).alpha(c.alpha).t0(c.t0).weight_decay(c.wd).maximize(c.maximize));
    const auto [x, ax] = asgd_reference(c.lr, c.lambd, c.alpha, c.t0, c.wd, c.maximize, 7);
    expect_vec(run(opt, p, 7), x);
    expect_vec(opt.state(p).tensors.at("ax").cpu().to_vector<double>(), ax);
    EXPECT_EQ(opt.state(p).tensors.at("ax").device(), dev());
    EXPECT_EQ(opt.state(p).tensors.at("eta").item<double>(),
              f32(c.lr / std::pow(1 + c.lambd * c.lr * 7, c.alpha)));
  }
}

TEST_P(OptimMore, Float32FollowsTheFloat64Rule) {
  auto a = param(kFloat32);
  optim::Adamax adamax({a}, optim::AdamaxOptions(0.05).weight_decay(0.01));
  expect_vec(run(adamax, a, 5), adamax_reference(0.05, 0.9, 0.999, 1e-8, 0.01, false, 5), 1e-5);
  auto b = param(kFloat32);
  optim::NAdam nadam({b}, optim::NAdamOptions(0.05));
  expect_vec(run(nadam, b, 5), nadam_reference(0.05, 0.9, 0.999, 1e-8, 0, 4e-3, false, false, 5), 1e-5);
  auto c = param(kFloat32);
  optim::RAdam radam({c}, optim::RAdamOptions(0.05).betas({0.9, 0.9}));
  expect_vec(run(radam, c, 8), radam_reference(0.05, 0.9, 0.9, 1e-8, 0, false, false, 8), 1e-5);
  auto d = param(kFloat32);
  optim::Rprop rprop({d}, optim::RpropOptions(0.25));
  expect_vec(run(rprop, d, 8), rprop_reference(0.25, 0.5, 1.2, 1e-6, 50, false, 8), 1e-5);
  auto e = param(kFloat32);
  optim::ASGD asgd({e}, optim::ASGDOptions(0.05).t0(2));
  expect_vec(run(asgd, e, 6), asgd_reference(0.05, 1e-4, 0.75, 2, 0, false, 6).first, 1e-5);
}

TEST_P(OptimMore, PerGroupOptionsAndSkippedParameters) {
  auto a = param(), b = param(), unused = param();
  std::vector<optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<Tensor>{a});
  groups.emplace_back(std::vector<Tensor>{b, unused},
                      std::make_unique<optim::NAdamOptions>(optim::NAdamOptions(0.03).weight_decay(0.1)));
  optim::NAdam opt(std::move(groups), optim::NAdamOptions(0.01));
  for (int s = 0; s < 4; ++s) {
    opt.zero_grad();
    backward(a);
    backward(b);
    opt.step();
  }
  expect_vec(a.detach().cpu().to_vector<double>(), nadam_reference(0.01, 0.9, 0.999, 1e-8, 0, 4e-3, false, false, 4));
  expect_vec(b.detach().cpu().to_vector<double>(), nadam_reference(0.03, 0.9, 0.999, 1e-8, 0.1, 4e-3, false, false, 4));
  expect_vec(unused.detach().cpu().to_vector<double>(), kP0, 0);  // no gradient: untouched
  EXPECT_EQ(opt.state(unused).step, 0);

  // One group per optimizer kind's own options.
  auto run_groups = [&](optim::Optimizer& o, Tensor& x, Tensor& y) {
    for (int s = 0; s < 4; ++s) {
      o.zero_grad();
      backward(x);
      backward(y);
      o.step();
    }
  };
  {
    auto x = param(), y = param();
    std::vector<optim::OptimizerParamGroup> g;
    g.emplace_back(std::vector<Tensor>{x});
    g.emplace_back(std::vector<Tensor>{y}, std::make_unique<optim::AdamaxOptions>(optim::AdamaxOptions(0.1).maximize(true)));
    optim::Adamax o(std::move(g), optim::AdamaxOptions(0.02));
    run_groups(o, x, y);
    expect_vec(x.detach().cpu().to_vector<double>(), adamax_reference(0.02, 0.9, 0.999, 1e-8, 0, false, 4));
    expect_vec(y.detach().cpu().to_vector<double>(), adamax_reference(0.1, 0.9, 0.999, 1e-8, 0, true, 4));
  }
  {
    auto x = param(), y = param();
    std::vector<optim::OptimizerParamGroup> g;
    g.emplace_back(std::vector<Tensor>{x});
    g.emplace_back(std::vector<Tensor>{y}, std::make_unique<optim::RAdamOptions>(
                                               optim::RAdamOptions(0.05).weight_decay(0.1).decoupled_weight_decay(true)));
    optim::RAdam o(std::move(g), optim::RAdamOptions(0.01));
    run_groups(o, x, y);
    expect_vec(x.detach().cpu().to_vector<double>(), radam_reference(0.01, 0.9, 0.999, 1e-8, 0, false, false, 4));
    expect_vec(y.detach().cpu().to_vector<double>(), radam_reference(0.05, 0.9, 0.999, 1e-8, 0.1, true, false, 4));
  }
  {
    auto x = param(), y = param();
    std::vector<optim::OptimizerParamGroup> g;
    g.emplace_back(std::vector<Tensor>{x});
    g.emplace_back(std::vector<Tensor>{y}, std::make_unique<optim::RpropOptions>(optim::RpropOptions(0.3).etas({0.4, 1.6})));
    optim::Rprop o(std::move(g), optim::RpropOptions(0.05));
    run_groups(o, x, y);
    expect_vec(x.detach().cpu().to_vector<double>(), rprop_reference(0.05, 0.5, 1.2, 1e-6, 50, false, 4));
    expect_vec(y.detach().cpu().to_vector<double>(), rprop_reference(0.3, 0.4, 1.6, 1e-6, 50, false, 4));
  }
  {
    auto x = param(), y = param();
    std::vector<optim::OptimizerParamGroup> g;
    g.emplace_back(std::vector<Tensor>{x});
    g.emplace_back(std::vector<Tensor>{y}, std::make_unique<optim::ASGDOptions>(optim::ASGDOptions(0.04).t0(1).lambd(0.01)));
    optim::ASGD o(std::move(g), optim::ASGDOptions(0.02));
    run_groups(o, x, y);
    expect_vec(x.detach().cpu().to_vector<double>(), asgd_reference(0.02, 1e-4, 0.75, 1e6, 0, false, 4).first);
    expect_vec(y.detach().cpu().to_vector<double>(), asgd_reference(0.04, 0.01, 0.75, 1, 0, false, 4).first);
  }
}

TEST_P(OptimMore, StateDictRoundTripMidTraining) {
  round_trip<optim::Adamax>(optim::AdamaxOptions(0.05).weight_decay(0.01), {"exp_avg", "exp_inf"});
  round_trip<optim::NAdam>(optim::NAdamOptions(0.05).weight_decay(0.01).decoupled_weight_decay(true),
                           {"exp_avg", "exp_avg_sq", "mu_product"});
  round_trip<optim::RAdam>(optim::RAdamOptions(0.05).betas({0.9, 0.9}), {"exp_avg", "exp_avg_sq"});
  round_trip<optim::Rprop>(optim::RpropOptions(0.2).etas({0.4, 1.3}).step_sizes({1e-3, 1}), {"prev", "step_size"});
  round_trip<optim::ASGD>(optim::ASGDOptions(0.05).t0(2).lambd(0.01), {"eta", "mu", "ax"});
}

INSTANTIATE_TEST_SUITE_P(Devices, OptimMore, ::testing::Values(Device(kCPU), Device(kCUDA, 0)),
                         [](const auto& info) { return info.param.is_cuda() ? std::string("CUDA") : std::string("CPU"); });

TEST(OptimMoreState, FormatAndRefusals) {
  auto p = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  optim::NAdam opt({p}, optim::NAdamOptions(0.01).momentum_decay(0.01));
  (p * p).sum().backward();
  opt.step();
  Checkpoint sd = opt.state_dict();
  EXPECT_EQ(sd.metadata.at("optimizer"), "NAdam");
  auto groups = nlohmann::json::parse(sd.metadata.at("param_groups"));
  EXPECT_EQ(groups[0]["momentum_decay"], 0.01);
  EXPECT_EQ(groups[0]["decoupled_weight_decay"], false);
  EXPECT_EQ(groups[0]["betas"], nlohmann::json::array({0.9, 0.999}));
  EXPECT_EQ(nlohmann::json::parse(sd.metadata.at("state"))["0"]["step"], 1);
  EXPECT_EQ(sd.tensors.at("state.0.mu_product").dim(), 0);
  EXPECT_EQ(sd.tensors.at("state.0.mu_product").item<double>(), f32(0.9 * (1 - 0.5 * std::pow(0.96, 0.01))));

  // PyTorch's load_state_dict casts the floating state but the step to the parameter's dtype.
  auto q = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  optim::NAdam other({q});
  other.load_state_dict(sd);
  EXPECT_EQ(other.state(q).tensors.at("mu_product").dtype(), kFloat64);
  EXPECT_EQ(other.param_groups()[0].options().get_lr(), 0.01);

  // A scalar state of a shape, a missing buffer, bad etas: refused, nothing changes.
  optim::NAdam fresh({q}, optim::NAdamOptions(0.5));
  Checkpoint bad = sd;
  bad.tensors["state.0.mu_product"] = tensor({1.0, 2.0});
  EXPECT_NE(error_of([&] { fresh.load_state_dict(bad); }).find("must be a 0-dim floating-point tensor"),
            std::string::npos);
  bad = sd;
  bad.tensors.erase("state.0.mu_product");
  EXPECT_NE(error_of([&] { fresh.load_state_dict(bad); }).find("[load_state_dict] missing tensor 'state.0.mu_product'"),
            std::string::npos);
  EXPECT_EQ(fresh.param_groups()[0].options().get_lr(), 0.5);
  EXPECT_TRUE(fresh.state().empty());

  optim::Rprop rprop({p});
  (p * p).sum().backward();
  rprop.step();
  Checkpoint rsd = rprop.state_dict();
  auto rg = nlohmann::json::parse(rsd.metadata.at("param_groups"));
  EXPECT_EQ(rg[0]["etas"], nlohmann::json::array({0.5, 1.2}));
  EXPECT_EQ(rg[0]["step_sizes"], nlohmann::json::array({1e-6, 50.0}));
  rg[0]["etas"] = nlohmann::json::array({1.5, 1.2});
  rsd.metadata["param_groups"] = rg.dump();
  optim::Rprop rfresh({q});
  EXPECT_EQ(error_of([&] { rfresh.load_state_dict(rsd); }), "[load_state_dict] Invalid eta values: 1.5, 1.2");
  // Another kind's state is refused.
  optim::Adamax adamax({q});
  EXPECT_NE(error_of([&] { adamax.load_state_dict(sd); }).find("is an NAdam optimizer's"), std::string::npos);

  optim::ASGD asgd({p}, optim::ASGDOptions(0.1));
  asgd.step();  // p still has its gradient
  Checkpoint asd = asgd.state_dict();
  EXPECT_EQ(asd.metadata.at("optimizer"), "ASGD");
  EXPECT_EQ(asd.tensors.at("state.0.eta").dtype(), kFloat32);
  EXPECT_EQ(asd.tensors.at("state.0.mu").item<double>(), 1.0);
  auto ag = nlohmann::json::parse(asd.metadata.at("param_groups"));
  EXPECT_EQ(ag[0]["t0"], 1e6);
  EXPECT_EQ(ag[0]["lambd"], 1e-4);
}

TEST(OptimMoreState, InvalidOptionsThrow) {
  auto p = tensor({1.0}).requires_grad_();
  EXPECT_EQ(error_of([&] { optim::Adamax({p}, optim::AdamaxOptions(-1)); }), "[Adamax] Invalid learning rate: -1");
  EXPECT_EQ(error_of([&] { optim::Adamax({p}, optim::AdamaxOptions().eps(-1)); }), "[Adamax] Invalid epsilon value: -1");
  EXPECT_EQ(error_of([&] { optim::Adamax({p}, optim::AdamaxOptions().betas({1.0, 0.9})); }),
            "[Adamax] Invalid beta parameter at index 0: 1");
  EXPECT_EQ(error_of([&] { optim::Adamax({p}, optim::AdamaxOptions().weight_decay(-0.5)); }),
            "[Adamax] Invalid weight_decay value: -0.5");
  EXPECT_EQ(error_of([&] { optim::NAdam({p}, optim::NAdamOptions().betas({0.9, -0.1})); }),
            "[NAdam] Invalid beta parameter at index 1: -0.1");
  EXPECT_EQ(error_of([&] { optim::NAdam({p}, optim::NAdamOptions().momentum_decay(-1)); }),
            "[NAdam] Invalid momentum_decay value: -1");
  EXPECT_EQ(error_of([&] { optim::RAdam({p}, optim::RAdamOptions(-0.1)); }), "[RAdam] Invalid learning rate: -0.1");
  EXPECT_EQ(error_of([&] { optim::RAdam({p}, optim::RAdamOptions().weight_decay(-1)); }),
            "[RAdam] Invalid weight_decay value: -1");
  EXPECT_EQ(error_of([&] { optim::Rprop({p}, optim::RpropOptions(-1)); }), "[Rprop] Invalid learning rate: -1");
  EXPECT_EQ(error_of([&] { optim::Rprop({p}, optim::RpropOptions().etas({0.5, 0.9})); }),
            "[Rprop] Invalid eta values: 0.5, 0.9");
  EXPECT_EQ(error_of([&] { optim::Rprop({p}, optim::RpropOptions().etas({0, 1.2})); }),
            "[Rprop] Invalid eta values: 0, 1.2");
  EXPECT_EQ(error_of([&] { optim::ASGD({p}, optim::ASGDOptions(-1)); }), "[ASGD] Invalid learning rate: -1");
  EXPECT_EQ(error_of([&] { optim::ASGD({p}, optim::ASGDOptions().weight_decay(-1)); }),
            "[ASGD] Invalid weight_decay value: -1");
  EXPECT_EQ(error_of([&] { optim::ASGD(std::vector<Tensor>{}); }), "[ASGD] optimizer got an empty parameter list");
  // A group of another optimizer's options is refused.
  std::vector<optim::OptimizerParamGroup> g;
  g.emplace_back(std::vector<Tensor>{p}, std::make_unique<optim::AdamOptions>());
  EXPECT_NE(error_of([&] { optim::RAdam(std::move(g)); }).find("[RAdam] the group's options are of another"),
            std::string::npos);
}

// ---- Schedulers

Tensor leaf() { return tensor({1.0}).requires_grad_(); }
double lr_of(const optim::Optimizer& o, size_t g = 0) { return o.param_groups()[g].options().get_lr(); }
double momentum_of(const optim::Optimizer& o, size_t g = 0) {
  const auto& opts = o.param_groups()[g].options();
  if (const auto* s = dynamic_cast<const optim::SGDOptions*>(&opts)) return s->momentum();
  if (const auto* a = dynamic_cast<const optim::AdamOptions*>(&opts)) return std::get<0>(a->betas());
  if (const auto* n = dynamic_cast<const optim::NAdamOptions*>(&opts)) return std::get<0>(n->betas());
  return -1;
}

// Checks a scheduler's state_dict mid-run: saves optimizer and scheduler after k steps, loads
// both into fresh ones (made by make over a fresh optimizer), and steps both on, comparing
// every learning rate (and momentum) bit for bit.
template <class Opt, class Make>
void scheduler_round_trip(std::function<std::unique_ptr<Opt>(Tensor&)> make_opt, Make make, int k, int more) {
  auto p = leaf(), q = leaf();
  auto opt = make_opt(p), opt2 = make_opt(q);
  auto sched = make(*opt);
  for (int s = 0; s < k; ++s) sched->step();
  Checkpoint osd = opt->state_dict(), ssd = sched->state_dict();
  auto fresh = make(*opt2);
  fresh->step();  // somewhere else, to be overwritten
  opt2->load_state_dict(osd);
  fresh->load_state_dict(ssd);
  EXPECT_EQ(fresh->last_epoch(), sched->last_epoch());
  EXPECT_EQ(fresh->get_last_lr(), sched->get_last_lr());
  for (int s = 0; s < more; ++s) {
    sched->step();
    fresh->step();
    for (size_t g = 0; g < opt->param_groups().size(); ++g) {
      EXPECT_EQ(lr_of(*opt2, g), lr_of(*opt, g)) << "step " << k + s + 1 << " group " << g;
      EXPECT_EQ(momentum_of(*opt2, g), momentum_of(*opt, g)) << "step " << k + s + 1 << " group " << g;
    }
  }
}

std::unique_ptr<optim::SGD> sgd(Tensor& p, double lr = 1.0, double momentum = 0.9) {
  return std::make_unique<optim::SGD>(std::vector<Tensor>{p}, optim::SGDOptions(lr).momentum(momentum));
}

TEST(OptimMoreSchedulers, MultiplicativeLR) {
  auto a = leaf(), b = leaf();
  std::vector<optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<Tensor>{a});
  groups.emplace_back(std::vector<Tensor>{b}, std::make_unique<optim::SGDOptions>(0.5));
  optim::SGD opt(std::move(groups), optim::SGDOptions(0.1));
  optim::MultiplicativeLR sched(opt, std::vector<optim::MultiplicativeLR::Lambda>{
                                         [](int64_t) { return 0.95; }, [](int64_t e) { return 1.0 / double(e + 1); }});
  EXPECT_EQ(lr_of(opt, 0), 0.1);  // epoch 0 keeps the lr
  EXPECT_EQ(lr_of(opt, 1), 0.5);
  double f = 1;
  for (int e = 1; e <= 8; ++e) {
    sched.step();
    f /= double(e + 1);
    EXPECT_NEAR(lr_of(opt, 0), 0.1 * std::pow(0.95, e), 1e-15) << e;
    EXPECT_NEAR(lr_of(opt, 1), 0.5 * f, 1e-15) << e;  // 0.5 / (e + 1)!
  }
  EXPECT_EQ(error_of([&] { optim::MultiplicativeLR bad(opt, std::vector<optim::MultiplicativeLR::Lambda>{
                                                                [](int64_t) { return 1.0; }}); }),
            "[MultiplicativeLR] Expected 2 lr_lambdas, but got 1");
  scheduler_round_trip<optim::SGD>(
      [](Tensor& p) { return sgd(p, 0.2); },
      [](optim::Optimizer& o) { return std::make_unique<optim::MultiplicativeLR>(o, [](int64_t) { return 0.9; }); }, 3,
      4);
}

TEST(OptimMoreSchedulers, ConstantLR) {
  auto p = leaf();
  optim::SGD opt({p}, optim::SGDOptions(0.3));
  optim::ConstantLR sched(opt, 0.25, 4);
  EXPECT_EQ(lr_of(opt), 0.3 * 0.25);  // set at construction
  for (int e = 1; e <= 8; ++e) {
    sched.step();
    EXPECT_NEAR(lr_of(opt), e < 4 ? 0.3 * 0.25 : 0.3, 1e-15) << e;
  }
  optim::SGD opt2({p}, optim::SGDOptions(0.3));
  optim::ConstantLR defaults(opt2);  // factor 1/3, total_iters 5
  for (int e = 1; e <= 7; ++e) {
    defaults.step();
    EXPECT_NEAR(lr_of(opt2), e < 5 ? 0.3 / 3 : 0.3, 1e-15) << e;
  }
  EXPECT_EQ(error_of([&] { optim::ConstantLR bad(opt, 1.5); }),
            "[ConstantLR] Constant multiplicative factor expected to be between 0 and 1.");
  scheduler_round_trip<optim::SGD>([](Tensor& p) { return sgd(p, 0.2); },
                                   [](optim::Optimizer& o) { return std::make_unique<optim::ConstantLR>(o, 0.5, 3); }, 2,
                                   4);
}

TEST(OptimMoreSchedulers, PolynomialLR) {
  auto p = leaf();
  optim::SGD opt({p}, optim::SGDOptions(0.4));
  optim::PolynomialLR sched(opt, 6, 2.0);
  EXPECT_EQ(lr_of(opt), 0.4);
  for (int e = 1; e <= 9; ++e) {
    sched.step();
    EXPECT_NEAR(lr_of(opt), 0.4 * std::pow(1 - std::min(e, 6) / 6.0, 2), 1e-15) << e;
  }
  optim::SGD opt2({p}, optim::SGDOptions(0.4));
  optim::PolynomialLR linear(opt2);  // total_iters 5, power 1
  for (int e = 1; e <= 6; ++e) {
    linear.step();
    EXPECT_NEAR(lr_of(opt2), 0.4 * (1 - std::min(e, 5) / 5.0), 1e-15) << e;
  }
  scheduler_round_trip<optim::SGD>([](Tensor& p) { return sgd(p, 0.2); },
                                   [](optim::Optimizer& o) { return std::make_unique<optim::PolynomialLR>(o, 5, 0.5); },
                                   2, 5);
}

// CyclicLR's triangle written out: where iteration e lies in its cycle, as the fraction of the
// way from base to max.
double triangle(int e, double up, double down) {
  const double total = up + down, pos = std::fmod(double(e), total);
  return pos <= up ? pos / up : (total - pos) / down;
}

TEST(OptimMoreSchedulers, CyclicLRModes) {
  struct Case {
    std::string mode;
    double up, down, gamma;
  };
  for (const Case& c : {Case{"triangular", 4, 4, 1}, Case{"triangular", 3, 5, 1}, Case{"triangular2", 4, 2, 1},
                        Case{"exp_range", 4, 4, 0.9}}) {
    SCOPED_TRACE(c.mode + " up " + std::to_string(c.up) + " down " + std::to_string(c.down));
    auto p = leaf();
    optim::SGD opt({p}, optim::SGDOptions(5.0).momentum(0.5));
    optim::CyclicLR sched(opt, 0.1, 1.0,
                          optim::CyclicLROptions().step_size_up(c.up).step_size_down(c.down).mode(c.mode).gamma(c.gamma));
    EXPECT_EQ(lr_of(opt), 0.1);  // the groups start at base_lr
    EXPECT_EQ(opt.param_groups()[0].initial_lr(), 0.1);
    EXPECT_NEAR(momentum_of(opt), 0.9, 1e-15);  // and at max_momentum
    for (int e = 1; e <= 25; ++e) {
      sched.step();
      const int cycle = e / int(c.up + c.down) + 1;
      const double s = c.mode == "triangular" ? 1 : c.mode == "triangular2" ? std::pow(0.5, cycle - 1) : std::pow(c.gamma, e);
      const double f = triangle(e, c.up, c.down) * s;
      EXPECT_NEAR(lr_of(opt), 0.1 + 0.9 * f, 1e-12) << e;
      EXPECT_NEAR(momentum_of(opt), 0.9 - 0.1 * f, 1e-12) << e;
    }
  }
}

TEST(OptimMoreSchedulers, CyclicLRMomentumBeta1AndErrors) {
  // Optimizers with betas cycle beta1 (beta2 stays); per-group bounds.
  auto a = leaf(), b = leaf();
  std::vector<optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<Tensor>{a});
  groups.emplace_back(std::vector<Tensor>{b}, std::make_unique<optim::NAdamOptions>(optim::NAdamOptions(1.0).betas({0.5, 0.99})));
  optim::NAdam nadam(std::move(groups), optim::NAdamOptions(1.0));
  optim::CyclicLR sched(nadam, {0.01, 0.02}, {0.1, 0.2},
                        optim::CyclicLROptions().step_size_up(2).base_momentum({0.8, 0.7}).max_momentum({0.95, 0.9}));
  EXPECT_EQ(momentum_of(nadam, 0), 0.95);
  EXPECT_EQ(momentum_of(nadam, 1), 0.9);
  for (int e = 1; e <= 6; ++e) {
    sched.step();
    const double f = triangle(e, 2, 2);
    EXPECT_NEAR(lr_of(nadam, 0), 0.01 + 0.09 * f, 1e-15) << e;
    EXPECT_NEAR(lr_of(nadam, 1), 0.02 + 0.18 * f, 1e-15) << e;
    EXPECT_NEAR(momentum_of(nadam, 0), 0.95 - 0.15 * f, 1e-15) << e;
    EXPECT_NEAR(momentum_of(nadam, 1), 0.9 - 0.2 * f, 1e-15) << e;
    EXPECT_EQ(std::get<1>(static_cast<const optim::NAdamOptions&>(nadam.param_groups()[1].options()).betas()), 0.99);
  }
  // No momentum and no betas: refused with cycle_momentum, and the optimizer is as it was.
  auto p = leaf();
  optim::Adagrad adagrad({p}, optim::AdagradOptions(0.5));
  EXPECT_EQ(error_of([&] { optim::CyclicLR bad(adagrad, 0.1, 1.0); }),
            "[CyclicLR] optimizer must support momentum or beta1 with `cycle_momentum` option enabled");
  EXPECT_EQ(lr_of(adagrad), 0.5);
  EXPECT_FALSE(adagrad.param_groups()[0].initial_lr().has_value());
  optim::CyclicLR plain(adagrad, 0.1, 1.0, optim::CyclicLROptions().cycle_momentum(false).step_size_up(2));
  plain.step();
  EXPECT_NEAR(lr_of(adagrad), 0.55, 1e-15);
  EXPECT_EQ(error_of([&] { optim::CyclicLR bad(adagrad, 0.1, 1.0, optim::CyclicLROptions().cycle_momentum(false).mode("x")); }),
            "[CyclicLR] mode is invalid and scale_fn is None");
  EXPECT_EQ(error_of([&] { optim::CyclicLR bad(nadam, {0.1, 0.2, 0.3}, {1.0}); }),
            "[CyclicLR] base_lr must have the same length as optimizer.param_groups. base_lr has 3 values, "
            "param_groups has 2.");
  // A scale function of one's own, by iteration.
  optim::SGD sgd_opt({p}, optim::SGDOptions(1.0));
  optim::CyclicLR custom(sgd_opt, 0.0, 1.0,
                         optim::CyclicLROptions().step_size_up(2).cycle_momentum(false).scale_fn([](double x) {
                           return 1 / (1 + x);
                         }).scale_mode("iterations"));
  for (int e = 1; e <= 5; ++e) {
    custom.step();
    EXPECT_NEAR(lr_of(sgd_opt), triangle(e, 2, 2) / (1 + e), 1e-15) << e;
  }
  scheduler_round_trip<optim::SGD>(
      [](Tensor& q) { return sgd(q, 1.0, 0.9); },
      [](optim::Optimizer& o) {
        return std::make_unique<optim::CyclicLR>(o, 0.1, 1.0,
                                                 optim::CyclicLROptions().step_size_up(3).mode("triangular2"));
      },
      5, 9);
}

// SGDR written out: the learning rate at T_cur epochs into a cycle of length T_i.
double sgdr(double base, double eta_min, double t_cur, double t_i) {
  return eta_min + (base - eta_min) * (1 + std::cos(std::numbers::pi * t_cur / t_i)) / 2;
}

TEST(OptimMoreSchedulers, CosineAnnealingWarmRestarts) {
  auto p = leaf();
  optim::SGD opt({p}, optim::SGDOptions(0.5));
  optim::CosineAnnealingWarmRestarts sched(opt, 3, 2, 0.01);
  EXPECT_EQ(lr_of(opt), 0.5);
  // Cycles of 3, 6, 12 epochs: T_cur runs 0..2, 0..5, 0..11.
  int t_cur = 0, t_i = 3;
  for (int e = 1; e <= 22; ++e) {
    sched.step();
    if (++t_cur == t_i) {
      t_cur = 0;
      t_i *= 2;
    }
    EXPECT_NEAR(lr_of(opt), sgdr(0.5, 0.01, t_cur, t_i), 1e-15) << e;
    EXPECT_EQ(sched.T_i(), t_i) << e;
  }
  // step(epoch), fractional: epoch 4.5 lies 1.5 into the second cycle (of 6).
  sched.step(4.5);
  EXPECT_NEAR(lr_of(opt), sgdr(0.5, 0.01, 1.5, 6), 1e-15);
  EXPECT_EQ(sched.last_epoch(), 4);
  sched.step(0.25);
  EXPECT_NEAR(lr_of(opt), sgdr(0.5, 0.01, 0.25, 3), 1e-15);
  sched.step(21.0 + 0.75);  // 3 + 6 + 12 = 21: the fourth cycle (of 24) starts there
  EXPECT_NEAR(lr_of(opt), sgdr(0.5, 0.01, 0.75, 24), 1e-12);
  EXPECT_EQ(sched.T_i(), 24);
  sched.step();  // on from the fractional position, one epoch
  EXPECT_NEAR(lr_of(opt), sgdr(0.5, 0.01, 1.75, 24), 1e-12);
  EXPECT_EQ(error_of([&] { sched.step(-1.0); }), "[CosineAnnealingWarmRestarts.step] Expected non-negative epoch, but got -1");

  // T_mult 1: every cycle T_0 long.
  optim::SGD opt2({p}, optim::SGDOptions(0.5));
  optim::CosineAnnealingWarmRestarts same(opt2, 4);
  for (int e = 1; e <= 10; ++e) {
    same.step();
    EXPECT_NEAR(lr_of(opt2), sgdr(0.5, 0, e % 4, 4), 1e-15) << e;
  }
  same.step(7.25);
  EXPECT_NEAR(lr_of(opt2), sgdr(0.5, 0, 3.25, 4), 1e-15);
  EXPECT_EQ(error_of([&] { optim::CosineAnnealingWarmRestarts bad(opt2, 0); }),
            "[CosineAnnealingWarmRestarts] Expected positive integer T_0, but got 0");
  EXPECT_EQ(error_of([&] { optim::CosineAnnealingWarmRestarts bad(opt2, 2, 0); }),
            "[CosineAnnealingWarmRestarts] Expected integer T_mult >= 1, but got 0");
  scheduler_round_trip<optim::SGD>(
      [](Tensor& q) { return sgd(q, 0.3); },
      [](optim::Optimizer& o) { return std::make_unique<optim::CosineAnnealingWarmRestarts>(o, 2, 3, 0.001); }, 4, 12);
}

TEST(OptimMoreSchedulers, ChainedScheduler) {
  auto p = leaf();
  optim::SGD opt({p}, optim::SGDOptions(1.0));
  auto constant = std::make_shared<optim::ConstantLR>(opt, 0.1, 2);
  auto expo = std::make_shared<optim::ExponentialLR>(opt, 0.9);
  optim::ChainedScheduler chain({constant, expo});
  EXPECT_NEAR(lr_of(opt), 0.1, 1e-15);
  EXPECT_EQ(chain.get_last_lr(), std::vector<double>{lr_of(opt)});
  for (int e = 1; e <= 8; ++e) {
    chain.step();
    EXPECT_NEAR(lr_of(opt), std::pow(0.9, e) * (e < 2 ? 0.1 : 1.0), 1e-15) << e;
    EXPECT_EQ(chain.get_last_lr(), std::vector<double>{lr_of(opt)});
  }
  EXPECT_EQ(constant->last_epoch(), 8);
  EXPECT_EQ(expo->last_epoch(), 8);

  EXPECT_EQ(error_of([&] { optim::ChainedScheduler bad({}); }),
            "[ChainedScheduler] ChainedScheduler expects at least one scheduler to be chained, but got no scheduler.");
  auto q = leaf();
  optim::SGD other({q}, optim::SGDOptions(1.0));
  auto foreign = std::make_shared<optim::ExponentialLR>(other, 0.5);
  EXPECT_NE(error_of([&] { optim::ChainedScheduler bad({constant, foreign}); })
                .find("[ChainedScheduler] ChainedScheduler expects all schedulers to belong to the same optimizer"),
            std::string::npos);
  EXPECT_NE(error_of([&] { optim::ChainedScheduler bad({constant}, other); }).find("same optimizer"), std::string::npos);

  // The round trip saves each chained scheduler's state.
  auto a = leaf(), b = leaf();
  optim::SGD o1({a}, optim::SGDOptions(1.0).momentum(0.9)), o2({b}, optim::SGDOptions(1.0).momentum(0.9));
  auto make = [](optim::Optimizer& o) {
    std::vector<std::shared_ptr<optim::LRScheduler>> s{
        std::make_shared<optim::PolynomialLR>(o, 6, 1.5),
        std::make_shared<optim::CyclicLR>(o, 0.5, 1.0, optim::CyclicLROptions().step_size_up(2))};
    return std::make_unique<optim::ChainedScheduler>(s);
  };
  auto c1 = make(o1);
  for (int s = 0; s < 3; ++s) c1->step();
  Checkpoint osd = o1.state_dict(), csd = c1->state_dict();
  EXPECT_EQ(nlohmann::json::parse(csd.metadata.at("scheduler"))["_schedulers"].size(), 2u);
  auto c2 = make(o2);
  o2.load_state_dict(osd);
  c2->load_state_dict(csd);
  for (int s = 0; s < 6; ++s) {
    c1->step();
    c2->step();
    EXPECT_EQ(lr_of(o2), lr_of(o1)) << s;
    EXPECT_EQ(momentum_of(o2), momentum_of(o1)) << s;
  }
  // A state of another scheduler type is refused.
  optim::SGD o3({b}, optim::SGDOptions(1.0));
  optim::ConstantLR lone(o3);
  EXPECT_NE(error_of([&] { lone.load_state_dict(csd); }).find("this scheduler is a ConstantLR"), std::string::npos);
}

// Every new scheduler's state_dict names its type and hyperparameters.
TEST(OptimMoreSchedulers, StateDictFormat) {
  auto p = leaf();
  optim::SGD opt({p}, optim::SGDOptions(1.0).momentum(0.9));
  auto state_of = [](const optim::LRScheduler& s) { return nlohmann::json::parse(s.state_dict().metadata.at("scheduler")); };
  optim::CosineAnnealingWarmRestarts warm(opt, 3, 2, 0.1);
  warm.step(4.5);
  auto w = state_of(warm);
  EXPECT_EQ(w["type"], "CosineAnnealingWarmRestarts");
  EXPECT_EQ(w["T_cur"], 1.5);
  EXPECT_EQ(w["T_i"], 6);
  EXPECT_EQ(w["last_epoch"], 4);
  optim::PolynomialLR poly(opt, 4, 2.0);
  EXPECT_EQ(state_of(poly)["power"], 2.0);
  optim::CyclicLR cyc(opt, 0.1, 1.0, optim::CyclicLROptions().step_size_up(3).step_size_down(1).mode("exp_range").gamma(0.5));
  auto c = state_of(cyc);
  EXPECT_EQ(c["total_size"], 4.0);
  EXPECT_EQ(c["step_ratio"], 0.75);
  EXPECT_EQ(c["mode"], "exp_range");
  EXPECT_EQ(c["scale_mode"], "iterations");
  EXPECT_EQ(c["max_momentums"], nlohmann::json::array({0.9}));
}

// ---- PyTorch's values: every line of tests/fixtures/optim_more_reference.txt is run here.
// An optimizer line carries its hyperparameters ("adamax lr=0.002 betas=(0.9,0.999) ...
// steps=6: [p] extra"), so those cases follow the file; a scheduler line names its case, built
// below as the script builds it.

std::vector<std::string> fixture_lines() {
  std::ifstream in(std::string(WICK_TEST_FIXTURES_DIR) + "/optim_more_reference.txt");
  EXPECT_TRUE(in.good()) << "tests/fixtures/optim_more_reference.txt not found";
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  return lines;
}

std::string g17(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

// Within rel of PyTorch's value. kRel: the float64 optimizers' orders of operations differ from
// PyTorch's by a rounding or two (seen: at most 2 ulps, 4e-16 relative); the schedulers' values
// come out identical.
constexpr double kRel = 1e-14;
void expect_close(double got, double want, double rel, const std::string& what) {
  EXPECT_LE(std::abs(got - want), rel * std::abs(want))
      << what << ": wick " << g17(got) << ", PyTorch " << g17(want);
}
void expect_close(const Vec& got, const Vec& want, double rel, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    expect_close(got[i], want[i], rel, what + "[" + std::to_string(i) + "]");
}

// "[a, b, ...]"
Vec parse_vec(const std::string& s) {
  EXPECT_TRUE(s.size() >= 2 && s.front() == '[' && s.back() == ']') << s;
  Vec v;
  std::stringstream ss(s.substr(1, s.size() - 2));
  for (std::string x; std::getline(ss, x, ',');) v.push_back(std::stod(x));
  return v;
}

// "key=value key=[a, b] ..." (values in brackets may hold spaces).
std::map<std::string, std::string> parse_keys(const std::string& s) {
  std::map<std::string, std::string> out;
  for (size_t i = 0; i < s.size();) {
    if (s[i] == ' ') {
      ++i;
      continue;
    }
    const size_t eq = s.find('=', i);
    EXPECT_NE(eq, std::string::npos) << s.substr(i);
    if (eq == std::string::npos) break;
    const size_t close = s[eq + 1] == '[' ? s.find(']', eq) : s.find(' ', eq) - 1;
    EXPECT_NE(close, std::string::npos) << s.substr(i);
    if (close == std::string::npos) break;
    const size_t end = std::min(close + 1, s.size());
    out[s.substr(i, eq - i)] = s.substr(eq + 1, end - eq - 1);
    i = end;
  }
  return out;
}

// An optimizer line's hyperparameters; each one read is marked, so that one the case does not
// apply fails the test.
struct Args {
  std::map<std::string, std::string> values;
  std::set<std::string> used;
  const std::string& get(const std::string& k) {
    used.insert(k);
    static const std::string none = "nan";
    auto it = values.find(k);
    EXPECT_NE(it, values.end()) << "no " << k;
    return it == values.end() ? none : it->second;
  }
  double num(const std::string& k) { return std::stod(get(k)); }
  bool flag(const std::string& k) {
    const std::string& v = get(k);
    EXPECT_TRUE(v == "True" || v == "False") << k << "=" << v;
    return v == "True";
  }
  std::tuple<double, double> pair(const std::string& k) {  // "(a,b)"
    const std::string& v = get(k);
    const size_t comma = v.find(',');
    return {std::stod(v.substr(1, comma - 1)), std::stod(v.substr(comma + 1))};
  }
};

const std::set<std::string> kOptimizerKinds{"adamax", "nadam", "radam", "rprop", "asgd"};

bool is_optimizer_line(const std::string& line) {
  return kOptimizerKinds.count(line.substr(0, line.find(' '))) > 0;
}

// Runs one optimizer line on the float64 parameter and checks p (and the state printed) to
// kRel; the float32 scalar state (mu_product, eta) is rounded as PyTorch rounds it, so it is
// compared exactly.
void check_optimizer_line(const std::string& line) {
  const size_t colon = line.find(": ");
  ASSERT_NE(colon, std::string::npos);
  const std::string head = line.substr(0, colon), kind = head.substr(0, head.find(' '));
  Args a{parse_keys(head.substr(kind.size())), {}};
  const std::string tail = line.substr(colon + 2);
  const size_t close = tail.find(']');
  ASSERT_NE(close, std::string::npos);
  const Vec want = parse_vec(tail.substr(0, close + 1));
  const auto extra = parse_keys(tail.substr(close + 1));

  Tensor p = from(kP0, kFloat64).requires_grad_();
  std::unique_ptr<optim::Optimizer> opt;
  const std::vector<Tensor> ps{p};
  if (kind == "adamax") {
    opt = std::make_unique<optim::Adamax>(ps, optim::AdamaxOptions(a.num("lr"))
                                                  .betas(a.pair("betas"))
                                                  .eps(a.num("eps"))
                                                  .weight_decay(a.num("wd"))
                                                  .maximize(a.flag("maximize")));
  } else if (kind == "nadam") {
    opt = std::make_unique<optim::NAdam>(ps, optim::NAdamOptions(a.num("lr"))
                                                 .betas(a.pair("betas"))
                                                 .eps(a.num("eps"))
                                                 .weight_decay(a.num("wd"))
                                                 .momentum_decay(a.num("momentum_decay"))
                                                 .decoupled_weight_decay(a.flag("decoupled"))
                                                 .maximize(a.flag("maximize")));
  } else if (kind == "radam") {
    opt = std::make_unique<optim::RAdam>(ps, optim::RAdamOptions(a.num("lr"))
                                                 .betas(a.pair("betas"))
                                                 .eps(a.num("eps"))
                                                 .weight_decay(a.num("wd"))
                                                 .decoupled_weight_decay(a.flag("decoupled"))
                                                 .maximize(a.flag("maximize")));
  } else if (kind == "rprop") {
    opt = std::make_unique<optim::Rprop>(ps, optim::RpropOptions(a.num("lr"))
                                                 .etas(a.pair("etas"))
                                                 .step_sizes(a.pair("step_sizes"))
                                                 .maximize(a.flag("maximize")));
  } else if (kind == "asgd") {
    opt = std::make_unique<optim::ASGD>(ps, optim::ASGDOptions(a.num("lr"))
                                                .lambd(a.num("lambd"))
                                                .alpha(a.num("alpha"))
                                                .t0(a.num("t0"))
                                                .weight_decay(a.num("wd"))
                                                .maximize(a.flag("maximize")));
  }
  ASSERT_TRUE(opt) << kind;
  const int steps = int(a.num("steps"));
  for (int s = 0; s < steps; ++s) {
    opt->zero_grad();
    (from(kC, kFloat64) * p * p).sum().backward();
    opt->step();
  }
  EXPECT_EQ(a.used.size(), a.values.size()) << "a hyperparameter of the line is not applied";
  expect_close(p.detach().to_vector<double>(), want, kRel, "p");
  const auto& state = opt->state(p).tensors;
  for (const auto& [k, v] : extra) {
    ASSERT_EQ(state.count(k), 1u) << k;
    if (v.front() == '[') expect_close(state.at(k).to(kFloat64).to_vector<double>(), parse_vec(v), kRel, k);
    else EXPECT_EQ(state.at(k).item<double>(), std::stod(v)) << k;
  }
  // The state the script prints: NAdam's mu_product, ASGD's ax and eta.
  EXPECT_EQ(extra.size(), kind == "nadam" ? 1u : kind == "asgd" ? 2u : 0u);
}

TEST(OptimMorePyTorch, OptimizersMatchTheFixture) {
  int checked = 0;
  std::set<std::string> kinds;
  for (const std::string& line : fixture_lines()) {
    if (!is_optimizer_line(line)) continue;
    SCOPED_TRACE(line);
    check_optimizer_line(line);
    kinds.insert(line.substr(0, line.find(' ')));
    ++checked;
  }
  EXPECT_EQ(kinds, kOptimizerKinds);
  EXPECT_GE(checked, 22);  // the file's 22 cases at least: a truncated file fails
}

// A scheduler case as the script builds it: the optimizer outlives its scheduler.
struct SchedCase {
  std::unique_ptr<optim::Optimizer> opt;
  std::shared_ptr<optim::LRScheduler> sched;
};

std::unique_ptr<optim::SGD> sgd1(double lr, double momentum = 0.9) {
  return std::make_unique<optim::SGD>(std::vector<Tensor>{leaf()}, optim::SGDOptions(lr).momentum(momentum));
}

std::map<std::string, std::function<SchedCase()>> sched_cases() {
  using namespace optim;
  std::map<std::string, std::function<SchedCase()>> m;
  m["MultiplicativeLR"] = [] {
    std::vector<OptimizerParamGroup> g;
    g.emplace_back(std::vector<Tensor>{leaf()});
    g.emplace_back(std::vector<Tensor>{leaf()}, std::make_unique<SGDOptions>(SGDOptions(0.5).momentum(0.9)));
    SchedCase c{std::make_unique<SGD>(std::move(g), SGDOptions(0.1).momentum(0.9)), nullptr};
    c.sched = std::make_shared<MultiplicativeLR>(
        *c.opt, std::vector<MultiplicativeLR::Lambda>{[](int64_t) { return 0.95; },
                                                      [](int64_t e) { return 1.0 / double(e + 1); }});
    return c;
  };
  m["ConstantLR factor=0.25 total_iters=4"] = [] {
    SchedCase c{sgd1(0.3), nullptr};
    c.sched = std::make_shared<ConstantLR>(*c.opt, 0.25, 4);
    return c;
  };
  m["ConstantLR defaults"] = [] {
    SchedCase c{sgd1(0.3), nullptr};
    c.sched = std::make_shared<ConstantLR>(*c.opt);
    return c;
  };
  m["PolynomialLR total_iters=6 power=2"] = [] {
    SchedCase c{sgd1(0.4), nullptr};
    c.sched = std::make_shared<PolynomialLR>(*c.opt, 6, 2.0);
    return c;
  };
  m["PolynomialLR defaults"] = [] {
    SchedCase c{sgd1(0.4), nullptr};
    c.sched = std::make_shared<PolynomialLR>(*c.opt);
    return c;
  };
  m["CyclicLR NAdam per-group"] = [] {
    std::vector<OptimizerParamGroup> g;
    g.emplace_back(std::vector<Tensor>{leaf()});
    g.emplace_back(std::vector<Tensor>{leaf()},
                   std::make_unique<NAdamOptions>(NAdamOptions(1.0).betas({0.5, 0.99})));
    SchedCase c{std::make_unique<NAdam>(std::move(g), NAdamOptions(1.0)), nullptr};
    c.sched = std::make_shared<CyclicLR>(
        *c.opt, std::vector<double>{0.01, 0.02}, std::vector<double>{0.1, 0.2},
        CyclicLROptions().step_size_up(2).base_momentum({0.8, 0.7}).max_momentum({0.95, 0.9}));
    return c;
  };
  m["CyclicLR scale_fn 1/(1+x) iterations"] = [] {
    SchedCase c{sgd1(1.0, 0.0), nullptr};
    c.sched = std::make_shared<CyclicLR>(*c.opt, 0.0, 1.0,
                                         CyclicLROptions()
                                             .step_size_up(2)
                                             .cycle_momentum(false)
                                             .scale_fn([](double x) { return 1 / (1 + x); })
                                             .scale_mode("iterations"));
    return c;
  };
  m["CosineAnnealingWarmRestarts T_0=3 T_mult=2 eta_min=0.01"] = [] {
    SchedCase c{sgd1(0.5), nullptr};
    c.sched = std::make_shared<CosineAnnealingWarmRestarts>(*c.opt, 3, 2, 0.01);
    return c;
  };
  m["CosineAnnealingWarmRestarts T_0=4"] = [] {
    SchedCase c{sgd1(0.5), nullptr};
    c.sched = std::make_shared<CosineAnnealingWarmRestarts>(*c.opt, 4);
    return c;
  };
  m["ChainedScheduler ConstantLR(0.1, 2) + ExponentialLR(0.9)"] = [] {
    SchedCase c{sgd1(1.0), nullptr};
    c.sched = std::make_shared<ChainedScheduler>(std::vector<std::shared_ptr<LRScheduler>>{
        std::make_shared<ConstantLR>(*c.opt, 0.1, 2), std::make_shared<ExponentialLR>(*c.opt, 0.9)});
    return c;
  };
  return m;
}

// "CyclicLR mode=<mode> up=<n> down=<n> gamma=<g>": built from its name.
std::optional<SchedCase> cyclic_mode_case(const std::string& name) {
  static const std::regex re(R"(CyclicLR mode=(\w+) up=(\d+) down=(\d+) gamma=([0-9.]+))");
  std::smatch m;
  if (!std::regex_match(name, m, re)) return std::nullopt;
  SchedCase c{sgd1(5.0, 0.5), nullptr};
  c.sched = std::make_shared<optim::CyclicLR>(*c.opt, 0.1, 1.0,
                                              optim::CyclicLROptions()
                                                  .step_size_up(std::stod(m[2]))
                                                  .step_size_down(std::stod(m[3]))
                                                  .mode(m[1])
                                                  .gamma(std::stod(m[4])));
  return c;
}

// "<case> lr: [..]; [..]" and "<case> momentum: ...": the value after construction, then
// after each step() (momentum: SGD's momentum, or beta1). "<case> step(<epoch>)[ after ..]:
// lr <x>[ T_i <n> last_epoch <n>]": step(epoch) (step() where empty) on the case as the lines
// before left it; the script's bare "CosineAnnealingWarmRestarts" is its first such case.
TEST(OptimMorePyTorch, SchedulersMatchTheFixture) {
  const auto cases = sched_cases();
  std::map<std::string, SchedCase> live;  // each case as its last line left it
  std::set<std::string> seen;
  const std::vector<std::string> lines = fixture_lines();
  int checked = 0, scheduler_lines = 0;
  static const std::regex seq_re(R"((.*) (lr|momentum): (.*))");
  static const std::regex epoch_re(
      R"((.*) step\(([0-9.]*)\)(?: after [0-9.]+)?: lr (\S+)(?: T_i (\d+) last_epoch (\d+))?)");
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    if (is_optimizer_line(line)) continue;
    ++scheduler_lines;
    SCOPED_TRACE(line);
    std::smatch m;
    if (i == 0 && line.rfind("torch 2.", 0) == 0) {
      ++checked;  // the version that printed the file
    } else if (std::regex_match(line, m, epoch_re)) {
      const std::string name = m[1] == "CosineAnnealingWarmRestarts"
                                   ? "CosineAnnealingWarmRestarts T_0=3 T_mult=2 eta_min=0.01"
                                   : std::string(m[1]);
      ASSERT_EQ(live.count(name), 1u) << "no case " << name << " run before";
      auto* warm = dynamic_cast<optim::CosineAnnealingWarmRestarts*>(live.at(name).sched.get());
      ASSERT_NE(warm, nullptr);
      if (m[2].length() == 0) warm->step();
      else warm->step(std::stod(m[2]));
      expect_close(lr_of(*live.at(name).opt), std::stod(m[3]), kRel, "lr");
      if (m[4].matched) {
        EXPECT_EQ(warm->T_i(), std::stoll(m[4]));
        EXPECT_EQ(warm->last_epoch(), std::stoll(m[5]));
      }
      ++checked;
    } else if (std::regex_match(line, m, seq_re)) {
      const std::string name = m[1], what = m[2];
      std::optional<SchedCase> c = cyclic_mode_case(name);
      if (!c && cases.count(name)) c = cases.at(name)();
      ASSERT_TRUE(c) << "no case " << name;
      std::vector<Vec> want;
      std::stringstream ss(m[3]);
      for (std::string v; std::getline(ss, v, ';');) want.push_back(parse_vec(v.substr(v.find('['))));
      for (size_t e = 0; e < want.size(); ++e) {
        if (e > 0) c->sched->step();
        Vec got;
        for (size_t g = 0; g < c->opt->param_groups().size(); ++g)
          got.push_back(what == "lr" ? lr_of(*c->opt, g) : momentum_of(*c->opt, g));
        expect_close(got, want[e], kRel, what + " after " + std::to_string(e) + " steps");
      }
      live[name] = std::move(*c);
      seen.insert(name + " " + what);
      ++checked;
    } else {
      ADD_FAILURE() << "a line of no case";
    }
  }
  EXPECT_EQ(checked, scheduler_lines);
  // Both lines of every case built here, and the four CyclicLR modes.
  for (const auto& [name, make] : cases)
    for (const char* what : {"lr", "momentum"})
      EXPECT_EQ(seen.count(name + " " + what), 1u) << name << " " << what;
  EXPECT_EQ(seen.size(), 2 * (cases.size() + 4));
}

}  // namespace
