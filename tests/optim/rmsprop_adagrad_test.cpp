// RMSprop and Adagrad against their update rules written out in plain float64 loops (the loss
// sum(c * p^2), gradient 2 c p, for several steps, each option on), their options and errors,
// per-group options, and state_dict round trips mid-training giving identical next steps.
#include <cmath>
#include <cstring>

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

Tensor from(const std::vector<double>& v, Dtype dt) { return tensor({v[0], v[1], v[2], v[3]}, dt); }

class RmspropAdagrad : public ::testing::TestWithParam<Device> {
 public:
  void SetUp() override {
    if (GetParam().is_cuda() && !cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  }
  Device dev() const { return GetParam(); }
  Tensor param(Dtype dt = kFloat64) const { return from(kP0, dt).to(dev()).requires_grad_(); }
  Tensor c(Dtype dt = kFloat64) const { return from(kC, dt).to(dev()); }
  void backward(Tensor& p) const { (c(p.dtype()) * p * p).sum().backward(); }
  std::vector<double> run(optim::Optimizer& opt, Tensor& p, int steps) const {
    for (int s = 0; s < steps; ++s) {
      opt.zero_grad();
      backward(p);
      opt.step();
    }
    return p.detach().cpu().to(kFloat64).to_vector<double>();
  }
};

// PyTorch's RMSprop, element by element in float64.
std::vector<double> rmsprop_reference(double lr, double alpha, double eps, double wd, double momentum, bool centered,
                                      bool maximize, int steps) {
  std::vector<double> x = kP0, v(4, 0), m(4, 0), buf(4, 0);
  for (int s = 0; s < steps; ++s) {
    auto g = grad_of(x);
    for (size_t i = 0; i < 4; ++i) {
      double d = maximize ? -g[i] : g[i];
      d += wd * x[i];
      v[i] = alpha * v[i] + (1 - alpha) * d * d;
      double avg;
      if (centered) {
        m[i] = alpha * m[i] + (1 - alpha) * d;
        avg = std::sqrt(v[i] - m[i] * m[i]) + eps;
      } else {
        avg = std::sqrt(v[i]) + eps;
      }
      if (momentum > 0) {
        buf[i] = momentum * buf[i] + d / avg;
        x[i] -= lr * buf[i];
      } else {
        x[i] -= lr * d / avg;
      }
    }
  }
  return x;
}

// PyTorch's Adagrad, element by element in float64.
std::vector<double> adagrad_reference(double lr, double lr_decay, double wd, double init, double eps, bool maximize,
                                      int steps) {
  std::vector<double> x = kP0, sum(4, init);
  for (int s = 1; s <= steps; ++s) {
    auto g = grad_of(x);
    const double clr = lr / (1 + (s - 1) * lr_decay);
    for (size_t i = 0; i < 4; ++i) {
      double d = maximize ? -g[i] : g[i];
      d += wd * x[i];
      sum[i] += d * d;
      x[i] -= clr * d / (std::sqrt(sum[i]) + eps);
    }
  }
  return x;
}

TEST_P(RmspropAdagrad, RMSpropMatchesTheUpdateRule) {
  struct Case {
    double lr, alpha, eps, wd, momentum;
    bool centered, maximize;
  };
  for (const Case& cs : {Case{0.01, 0.99, 1e-8, 0, 0, false, false}, Case{0.02, 0.9, 1e-3, 0, 0, false, false},
                         Case{0.01, 0.95, 1e-8, 0.1, 0, false, false}, Case{0.01, 0.9, 1e-8, 0, 0.8, false, false},
                         Case{0.01, 0.9, 1e-6, 0, 0, true, false}, Case{0.005, 0.8, 1e-6, 0.05, 0.9, true, false},
                         Case{0.01, 0.99, 1e-8, 0, 0.5, false, true}}) {
    SCOPED_TRACE(::testing::Message() << "lr " << cs.lr << " alpha " << cs.alpha << " wd " << cs.wd << " momentum "
                                      << cs.momentum << " centered " << cs.centered << " maximize " << cs.maximize);
    auto p = param();
    optim::RMSprop opt({p}, optim::RMSpropOptions(cs.lr)
                                .alpha(cs.alpha)
                                .eps(cs.eps)
                                .weight_decay(cs.wd)
                                .momentum(cs.momentum)
                                .centered(cs.centered)
                                .maximize(cs.maximize));
    auto got = run(opt, p, 5);
    expect_vec(got, rmsprop_reference(cs.lr, cs.alpha, cs.eps, cs.wd, cs.momentum, cs.centered, cs.maximize, 5));
    const auto& st = opt.state(p);
    EXPECT_EQ(st.step, 5);
    EXPECT_EQ(st.tensors.count("square_avg"), 1u);
    EXPECT_EQ(st.tensors.count("momentum_buffer"), cs.momentum > 0 ? 1u : 0u);
    EXPECT_EQ(st.tensors.count("grad_avg"), cs.centered ? 1u : 0u);
    for (const auto& [name, t] : st.tensors) EXPECT_EQ(t.device(), dev()) << name;
  }
}

TEST_P(RmspropAdagrad, AdagradMatchesTheUpdateRule) {
  struct Case {
    double lr, lr_decay, wd, init, eps;
    bool maximize;
  };
  for (const Case& cs : {Case{0.1, 0, 0, 0, 1e-10, false}, Case{0.1, 0.05, 0, 0, 1e-10, false},
                         Case{0.05, 0, 0.1, 0, 1e-10, false}, Case{0.1, 0, 0, 0.5, 1e-10, false},
                         Case{0.1, 0.01, 0.02, 0.1, 1e-3, false}, Case{0.1, 0, 0, 0, 1e-10, true}}) {
    SCOPED_TRACE(::testing::Message() << "lr " << cs.lr << " lr_decay " << cs.lr_decay << " wd " << cs.wd
                                      << " init " << cs.init << " eps " << cs.eps << " maximize " << cs.maximize);
    auto p = param();
    optim::Adagrad opt({p}, optim::AdagradOptions(cs.lr)
                                .lr_decay(cs.lr_decay)
                                .weight_decay(cs.wd)
                                .initial_accumulator_value(cs.init)
                                .eps(cs.eps)
                                .maximize(cs.maximize));
    // The state exists from construction on, as PyTorch's.
    ASSERT_EQ(opt.state(p).tensors.count("sum"), 1u);
    expect_vec(opt.state(p).tensors.at("sum").cpu().to_vector<double>(), std::vector<double>(4, cs.init));
    auto got = run(opt, p, 5);
    expect_vec(got, adagrad_reference(cs.lr, cs.lr_decay, cs.wd, cs.init, cs.eps, cs.maximize, 5));
    EXPECT_EQ(opt.state(p).step, 5);
  }
}

TEST_P(RmspropAdagrad, Float32FollowsTheFloat64Rule) {
  auto p = param(kFloat32);
  optim::RMSprop rms({p}, optim::RMSpropOptions(0.01).momentum(0.9).centered(true));
  expect_vec(run(rms, p, 4), rmsprop_reference(0.01, 0.99, 1e-8, 0, 0.9, true, false, 4), 1e-5);
  auto q = param(kFloat32);
  optim::Adagrad ada({q}, optim::AdagradOptions(0.1).lr_decay(0.01));
  expect_vec(run(ada, q, 4), adagrad_reference(0.1, 0.01, 0, 0, 1e-10, false, 4), 1e-5);
}

TEST_P(RmspropAdagrad, PerGroupOptionsAndSkippedParameters) {
  auto a = param(), b = param(), unused = param();
  std::vector<optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<Tensor>{a});
  groups.emplace_back(std::vector<Tensor>{b, unused}, std::make_unique<optim::RMSpropOptions>(
                                                          optim::RMSpropOptions(0.02).alpha(0.9).momentum(0.5)));
  optim::RMSprop opt(std::move(groups), optim::RMSpropOptions(0.01));
  for (int s = 0; s < 3; ++s) {
    opt.zero_grad();
    backward(a);
    backward(b);
    opt.step();
  }
  expect_vec(a.detach().cpu().to_vector<double>(), rmsprop_reference(0.01, 0.99, 1e-8, 0, 0, false, false, 3));
  expect_vec(b.detach().cpu().to_vector<double>(), rmsprop_reference(0.02, 0.9, 1e-8, 0, 0.5, false, false, 3));
  expect_vec(unused.detach().cpu().to_vector<double>(), kP0, 0);  // no gradient: untouched
  EXPECT_EQ(opt.state(unused).step, 0);

  auto x = param(), y = param();
  std::vector<optim::OptimizerParamGroup> ag;
  ag.emplace_back(std::vector<Tensor>{x});
  ag.emplace_back(std::vector<Tensor>{y},
                  std::make_unique<optim::AdagradOptions>(optim::AdagradOptions(0.05).lr_decay(0.1)));
  optim::Adagrad ada(std::move(ag), optim::AdagradOptions(0.1));
  for (int s = 0; s < 3; ++s) {
    ada.zero_grad();
    backward(x);
    backward(y);
    ada.step();
  }
  expect_vec(x.detach().cpu().to_vector<double>(), adagrad_reference(0.1, 0, 0, 0, 1e-10, false, 3));
  expect_vec(y.detach().cpu().to_vector<double>(), adagrad_reference(0.05, 0.1, 0, 0, 1e-10, false, 3));
}

bool same_bits(const Tensor& a, const Tensor& b) {
  Tensor x = a.detach().cpu().contiguous(), y = b.detach().cpu().contiguous();
  return x.dtype() == y.dtype() && x.sizes().equals(y.sizes()) &&
         std::memcmp(x.data_ptr(), y.data_ptr(), size_t(x.nbytes())) == 0;
}

// Trains 3 steps, saves, loads into a fresh parameter and optimizer, and checks the next 3
// steps of both are bitwise equal.
template <class Opt, class Options>
void round_trip(const RmspropAdagrad& t, const Options& options, const std::vector<std::string>& names) {
  auto p = t.param();
  Opt opt({p}, options);
  for (int s = 0; s < 3; ++s) {
    opt.zero_grad();
    t.backward(p);
    opt.step();
  }
  Checkpoint sd = opt.state_dict();
  for (const std::string& n : names) EXPECT_EQ(sd.tensors.count("state.0." + n), 1u) << n;
  EXPECT_EQ(sd.tensors.size(), names.size());
  auto q = p.detach().clone().requires_grad_();
  Opt fresh({q}, Options(123.0));  // hyperparameters come from the state
  fresh.load_state_dict(sd);
  EXPECT_EQ(fresh.state(q).step, 3);
  EXPECT_EQ(fresh.param_groups()[0].options().get_lr(), options.lr());
  for (int s = 0; s < 3; ++s) {
    for (auto [o, x] : {std::pair<optim::Optimizer*, Tensor*>{&opt, &p}, {&fresh, &q}}) {
      o->zero_grad();
      t.backward(*x);
      o->step();
    }
    EXPECT_TRUE(same_bits(p, q)) << "step " << s;
  }
  for (const std::string& n : names) EXPECT_TRUE(same_bits(opt.state(p).tensors.at(n), fresh.state(q).tensors.at(n))) << n;
}

TEST_P(RmspropAdagrad, StateDictRoundTripMidTraining) {
  round_trip<optim::RMSprop>(*this, optim::RMSpropOptions(0.01).alpha(0.9).momentum(0.5).centered(true).weight_decay(0.01),
                             {"square_avg", "momentum_buffer", "grad_avg"});
  round_trip<optim::RMSprop>(*this, optim::RMSpropOptions(0.01), {"square_avg"});
  round_trip<optim::Adagrad>(*this, optim::AdagradOptions(0.1).lr_decay(0.05).initial_accumulator_value(0.1), {"sum"});
}

INSTANTIATE_TEST_SUITE_P(Devices, RmspropAdagrad, ::testing::Values(Device(kCPU), Device(kCUDA, 0)),
                         [](const auto& info) { return info.param.is_cuda() ? std::string("CUDA") : std::string("CPU"); });

TEST(RmspropAdagradState, FormatAndRefusals) {
  auto p = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  optim::RMSprop opt({p}, optim::RMSpropOptions(0.01).momentum(0.9));
  (p * p).sum().backward();
  opt.step();
  Checkpoint sd = opt.state_dict();
  EXPECT_EQ(sd.metadata.at("optimizer"), "RMSprop");
  auto groups = nlohmann::json::parse(sd.metadata.at("param_groups"));
  EXPECT_EQ(groups[0]["alpha"], 0.99);
  EXPECT_EQ(groups[0]["momentum"], 0.9);
  EXPECT_EQ(groups[0]["centered"], false);
  EXPECT_EQ(nlohmann::json::parse(sd.metadata.at("state"))["0"]["step"], 1);

  // A state missing a buffer its options need is refused, and nothing changes.
  optim::RMSprop other({p}, optim::RMSpropOptions(0.5));
  Checkpoint bad = sd;
  bad.tensors.erase("state.0.momentum_buffer");
  EXPECT_NE(error_of([&] { other.load_state_dict(bad); }).find("[load_state_dict] missing tensor 'state.0.momentum_buffer'"),
            std::string::npos);
  EXPECT_EQ(other.param_groups()[0].options().get_lr(), 0.5);
  // Another optimizer's state is refused.
  optim::Adagrad ada({p});
  EXPECT_NE(error_of([&] { ada.load_state_dict(sd); }).find("is an RMSprop optimizer's"), std::string::npos);
  Checkpoint asd = ada.state_dict();
  EXPECT_EQ(asd.metadata.at("optimizer"), "Adagrad");
  EXPECT_EQ(asd.tensors.count("state.0.sum"), 1u);  // present before any step, as PyTorch's
}

TEST(RmspropAdagradState, InvalidOptionsThrow) {
  auto p = tensor({1.0}).requires_grad_();
  EXPECT_EQ(error_of([&] { optim::RMSprop({p}, optim::RMSpropOptions(-1)); }), "[RMSprop] Invalid learning rate: -1");
  EXPECT_EQ(error_of([&] { optim::RMSprop({p}, optim::RMSpropOptions().alpha(-0.5)); }),
            "[RMSprop] Invalid alpha value: -0.5");
  EXPECT_EQ(error_of([&] { optim::RMSprop({p}, optim::RMSpropOptions().momentum(-1)); }),
            "[RMSprop] Invalid momentum value: -1");
  EXPECT_EQ(error_of([&] { optim::Adagrad({p}, optim::AdagradOptions().lr_decay(-1)); }),
            "[Adagrad] Invalid lr_decay value: -1");
  EXPECT_EQ(error_of([&] { optim::Adagrad({p}, optim::AdagradOptions().initial_accumulator_value(-1)); }),
            "[Adagrad] Invalid initial_accumulator_value value: -1");
  EXPECT_EQ(error_of([&] { optim::Adagrad(std::vector<Tensor>{}); }), "[Adagrad] optimizer got an empty parameter list");
}

}  // namespace
