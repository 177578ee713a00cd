// LambdaLR, MultiStepLR, ExponentialLR, LinearLR, OneCycleLR, SequentialLR and
// ReduceLROnPlateau: learning-rate (and momentum) sequences against PyTorch's closed forms and
// recurrences written out here, and state_dict round trips continuing the same sequence.
#include <algorithm>
#include <cmath>
#include <memory>
#include <numbers>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../nn/nn_test_util.h"
#include "wick/wick.h"

using namespace wick;
using wick::testing::error_of;

namespace {

Tensor leaf() { return tensor({1.0}).requires_grad_(); }
double lr_of(const optim::Optimizer& o, size_t g = 0) { return o.param_groups()[g].options().get_lr(); }

TEST(SchedulersMore, LambdaLRPerGroup) {
  auto a = leaf(), b = leaf();
  std::vector<optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<Tensor>{a});
  groups.emplace_back(std::vector<Tensor>{b}, std::make_unique<optim::SGDOptions>(0.5));
  optim::SGD opt(std::move(groups), optim::SGDOptions(0.1));
  optim::LambdaLR sched(opt, std::vector<optim::LambdaLR::Lambda>{[](int64_t e) { return 1.0 / double(e + 2); },
                                                                  [](int64_t e) { return std::pow(0.9, double(e)); }});
  // The lr of epoch 0 is set at construction.
  EXPECT_DOUBLE_EQ(lr_of(opt, 0), 0.1 / 2);
  EXPECT_DOUBLE_EQ(lr_of(opt, 1), 0.5);
  for (int e = 1; e <= 6; ++e) {
    sched.step();
    EXPECT_DOUBLE_EQ(lr_of(opt, 0), 0.1 / (e + 2)) << e;
    EXPECT_DOUBLE_EQ(lr_of(opt, 1), 0.5 * std::pow(0.9, e)) << e;
    EXPECT_EQ(sched.get_last_lr(), (std::vector<double>{lr_of(opt, 0), lr_of(opt, 1)}));
  }
  EXPECT_EQ(error_of([&] { optim::LambdaLR bad(opt, std::vector<optim::LambdaLR::Lambda>{[](int64_t) { return 1.0; }}); }),
            "[LambdaLR] Expected 2 lr_lambdas, but got 1");
}

TEST(SchedulersMore, MultiStepAndExponential) {
  auto p = leaf();
  optim::SGD opt({p}, optim::SGDOptions(1.0));
  optim::MultiStepLR ms(opt, {6, 2, 6}, 0.5);  // unsorted, 6 twice: two factors at epoch 6
  for (int e = 1; e <= 9; ++e) {
    ms.step();
    const int n = (e >= 2) + 2 * (e >= 6);
    EXPECT_DOUBLE_EQ(lr_of(opt), std::pow(0.5, n)) << e;
  }
  optim::SGD opt2({p}, optim::SGDOptions(0.3));
  optim::ExponentialLR ex(opt2, 0.8);
  EXPECT_DOUBLE_EQ(lr_of(opt2), 0.3);
  double want = 0.3;
  for (int e = 1; e <= 8; ++e) {
    ex.step();
    want *= 0.8;
    EXPECT_NEAR(lr_of(opt2), want, 1e-15) << e;
  }
}

TEST(SchedulersMore, LinearLR) {
  auto p = leaf();
  optim::SGD opt({p}, optim::SGDOptions(0.2));
  optim::LinearLR lin(opt, 0.25, 0.75, 4);
  EXPECT_NEAR(lr_of(opt), 0.2 * 0.25, 1e-15);
  for (int e = 1; e <= 8; ++e) {
    lin.step();
    const double f = 0.25 + (0.75 - 0.25) * std::min(e, 4) / 4.0;
    EXPECT_NEAR(lr_of(opt), 0.2 * f, 1e-15) << e;
  }
  EXPECT_EQ(error_of([&] { optim::LinearLR bad(opt, 0.0); }),
            "[LinearLR] Starting multiplicative factor expected to be greater than 0 and less or equal to 1.");
  EXPECT_EQ(error_of([&] { optim::LinearLR bad(opt, 0.5, 1.5); }),
            "[LinearLR] Ending multiplicative factor expected to be between 0 and 1.");
}

// PyTorch's OneCycleLR get_lr, written out: the phase holding step, and its anneal.
struct OneCycleRef {
  double initial, max, min, max_m, base_m;
  double total, pct;
  bool cos, three;
  double anneal(double a, double b, double t) const {
    return cos ? b + (a - b) / 2 * (std::cos(std::numbers::pi * t) + 1) : (b - a) * t + a;
  }
  std::pair<double, double> at(int step) const {
    struct P {
      double end, lr0, lr1, m0, m1;
    };
    std::vector<P> ph;
    if (three)
      ph = {{pct * total - 1, initial, max, max_m, base_m},
            {2 * pct * total - 2, max, initial, base_m, max_m},
            {total - 1, initial, min, max_m, max_m}};
    else
      ph = {{pct * total - 1, initial, max, max_m, base_m}, {total - 1, max, min, base_m, max_m}};
    double start = 0;
    for (size_t i = 0; i < ph.size(); ++i) {
      if (step <= ph[i].end || i + 1 == ph.size()) {
        const double t = (step - start) / (ph[i].end - start);
        return {anneal(ph[i].lr0, ph[i].lr1, t), anneal(ph[i].m0, ph[i].m1, t)};
      }
      start = ph[i].end;
    }
    return {0, 0};
  }
};

TEST(SchedulersMore, OneCycleLRWithSGDMomentum) {
  for (bool cos : {true, false}) {
    for (bool three : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "cos " << cos << " three_phase " << three);
      auto p = leaf();
      optim::SGD opt({p}, optim::SGDOptions(0.01).momentum(0.9));
      optim::OneCycleLR sched(opt, 0.5,
                              optim::OneCycleLROptions()
                                  .total_steps(20)
                                  .anneal_strategy(cos ? "cos" : "linear")
                                  .three_phase(three)
                                  .div_factor(10)
                                  .final_div_factor(100));
      const OneCycleRef ref{0.05, 0.5, 0.05 / 100, 0.95, 0.85, 20, 0.3, cos, three};
      auto momentum = [&] { return static_cast<const optim::SGDOptions&>(opt.param_groups()[0].options()).momentum(); };
      for (int s = 0; s <= 20; ++s) {
        if (s > 0) sched.step();
        const auto [lr, m] = ref.at(s);
        EXPECT_NEAR(lr_of(opt), lr, 1e-14) << "step " << s;
        EXPECT_NEAR(momentum(), m, 1e-14) << "step " << s;
      }
      EXPECT_EQ(error_of([&] { sched.step(); }),
                "[OneCycleLR.step] Tried to step 21 times. The specified number of total steps is 20");
      EXPECT_EQ(sched.last_epoch(), 20);  // the failed step changed nothing
    }
  }
}

TEST(SchedulersMore, OneCycleLRCyclesAdamBeta1AndChecksOptions) {
  auto p = leaf();
  optim::Adam opt({p}, optim::AdamOptions(1e-3).betas({0.9, 0.99}));
  optim::OneCycleLR sched(opt, 0.01, optim::OneCycleLROptions().epochs(2).steps_per_epoch(5).pct_start(0.4));
  const OneCycleRef ref{0.01 / 25, 0.01, 0.01 / 25 / 1e4, 0.95, 0.85, 10, 0.4, true, false};
  for (int s = 0; s <= 10; ++s) {
    if (s > 0) sched.step();
    const auto [b1, b2] = static_cast<const optim::AdamOptions&>(opt.param_groups()[0].options()).betas();
    EXPECT_NEAR(lr_of(opt), ref.at(s).first, 1e-15) << s;
    EXPECT_NEAR(b1, ref.at(s).second, 1e-14) << s;
    EXPECT_EQ(b2, 0.99);
  }
  optim::Adagrad ada({p});
  EXPECT_EQ(error_of([&] { optim::OneCycleLR bad(ada, 0.1, optim::OneCycleLROptions().total_steps(10)); }),
            "[OneCycleLR] optimizer must support momentum or beta1 with `cycle_momentum` option enabled");
  optim::OneCycleLR no_momentum(ada, 0.1, optim::OneCycleLROptions().total_steps(10).cycle_momentum(false));
  EXPECT_NEAR(lr_of(ada), 0.1 / 25, 1e-15);
  EXPECT_EQ(error_of([&] { optim::OneCycleLR bad(opt, 0.1, {}); }),
            "[OneCycleLR] You must define either total_steps OR (epochs AND steps_per_epoch)");
  EXPECT_EQ(error_of([&] { optim::OneCycleLR bad(opt, 0.1, optim::OneCycleLROptions().total_steps(5).anneal_strategy("exp")); }),
            "[OneCycleLR] anneal_strategy must be one of 'cos' or 'linear', instead got exp");
}

TEST(SchedulersMore, SequentialLRWarmupThenDecay) {
  auto p = leaf();
  optim::SGD opt({p}, optim::SGDOptions(0.1));
  auto warm = std::make_shared<optim::LinearLR>(opt, 0.1, 1.0, 3);
  auto decay = std::make_shared<optim::ExponentialLR>(opt, 0.5);
  optim::SequentialLR seq(opt, {warm, decay}, {3});
  // PyTorch: epochs 0..2 follow LinearLR from 0.1 * base, then ExponentialLR restarts at base.
  std::vector<double> want;
  for (int e = 0; e < 3; ++e) want.push_back(0.1 * (0.1 + 0.9 * e / 3.0));
  for (int e = 3; e <= 7; ++e) want.push_back(0.1 * std::pow(0.5, e - 3));
  EXPECT_NEAR(lr_of(opt), want[0], 1e-15);
  for (int e = 1; e <= 7; ++e) {
    seq.step();
    EXPECT_NEAR(lr_of(opt), want[size_t(e)], 1e-15) << "epoch " << e;
    EXPECT_NEAR(seq.get_last_lr()[0], want[size_t(e)], 1e-15);
  }
  EXPECT_EQ(error_of([&] { optim::SequentialLR bad(opt, {warm, decay}, {2, 4}); }),
            "[SequentialLR] Sequential Schedulers expects number of schedulers provided to be one more than the number "
            "of milestone points, but got number of schedulers 2 and the number of milestones to be equal to 2");
  optim::SGD other({p}, optim::SGDOptions(0.1));
  auto foreign = std::make_shared<optim::StepLR>(other, 2);
  EXPECT_NE(error_of([&] { optim::SequentialLR bad(opt, {warm, foreign}, {2}); }).find("belong to the same optimizer"),
            std::string::npos);
}

TEST(SchedulersMore, SequentialLRStateDictContinues) {
  auto run = [](int epochs, const Checkpoint* load, Checkpoint* save) {
    auto p = leaf();
    optim::SGD opt({p}, optim::SGDOptions(0.1));
    auto a = std::make_shared<optim::LinearLR>(opt, 0.5, 1.0, 2);
    auto b = std::make_shared<optim::StepLR>(opt, 2, 0.1);
    optim::SequentialLR seq(opt, {a, b}, {3});
    if (load) {
      seq.load_state_dict(*load);
      opt.param_groups()[0].options().set_lr(seq.get_last_lr()[0]);  // the optimizer's own state
    }
    std::vector<double> lrs;
    for (int e = 0; e < epochs; ++e) {
      seq.step();
      lrs.push_back(lr_of(opt));
    }
    if (save) *save = seq.state_dict();
    return lrs;
  };
  const std::vector<double> whole = run(8, nullptr, nullptr);
  Checkpoint mid;
  const std::vector<double> first = run(4, nullptr, &mid);
  const std::vector<double> rest = run(4, &mid, nullptr);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_DOUBLE_EQ(first[i], whole[i]) << i;
    EXPECT_DOUBLE_EQ(rest[i], whole[i + 4]) << i + 4;
  }
}

TEST(SchedulersMore, ReduceLROnPlateauModesCooldownAndMinLr) {
  auto p = leaf();
  optim::SGD opt({p}, optim::SGDOptions(1.0));
  optim::ReduceLROnPlateau sched(opt, optim::ReduceLROnPlateauOptions().factor(0.5).patience(1).cooldown(1).min_lr({0.2}));
  // PyTorch's recurrence, written out: rel threshold 1e-4 in min mode.
  struct Ref {
    double best = INFINITY, lr = 1.0;
    int bad = 0, cooldown = 0;
    void step(double m) {
      if (m < best * (1 - 1e-4)) {
        best = m;
        bad = 0;
      } else {
        ++bad;
      }
      if (cooldown > 0) {
        --cooldown;
        bad = 0;
      }
      if (bad > 1) {
        const double nl = std::max(lr * 0.5, 0.2);
        if (lr - nl > 1e-8) lr = nl;
        cooldown = 1;
        bad = 0;
      }
    }
  } ref;
  const std::vector<double> metrics{1.0, 0.9, 0.95, 0.9, 0.91, 0.92, 0.93, 0.899995, 0.8999, 0.95, 0.96, 0.97, 0.98, 0.99};
  for (double m : metrics) {
    sched.step(m);
    ref.step(m);
    EXPECT_DOUBLE_EQ(lr_of(opt), ref.lr) << "metric " << m;
    EXPECT_EQ(sched.num_bad_epochs(), ref.bad);
    EXPECT_EQ(sched.get_last_lr()[0], lr_of(opt));
  }
  EXPECT_DOUBLE_EQ(lr_of(opt), 0.2);  // reached min_lr
  EXPECT_LT(lr_of(opt), 1.0);

  // max mode, absolute threshold.
  optim::SGD opt2({p}, optim::SGDOptions(1.0));
  optim::ReduceLROnPlateau mx(opt2, optim::ReduceLROnPlateauOptions().mode("max").threshold_mode("abs").threshold(0.1).patience(0));
  mx.step(1.0);  // better than -inf
  EXPECT_EQ(lr_of(opt2), 1.0);
  mx.step(1.05);  // not better by 0.1: reduce (patience 0)
  EXPECT_DOUBLE_EQ(lr_of(opt2), 0.1);
  mx.step(1.2);  // better
  EXPECT_DOUBLE_EQ(lr_of(opt2), 0.1);
  EXPECT_EQ(mx.best(), 1.2);

  EXPECT_EQ(error_of([&] { optim::ReduceLROnPlateau bad(opt, optim::ReduceLROnPlateauOptions().factor(1.0)); }),
            "[ReduceLROnPlateau] Factor should be < 1.0.");
  EXPECT_EQ(error_of([&] { optim::ReduceLROnPlateau bad(opt, optim::ReduceLROnPlateauOptions().mode("up")); }),
            "[ReduceLROnPlateau] mode up is unknown!");
  EXPECT_EQ(error_of([&] { optim::ReduceLROnPlateau bad(opt, optim::ReduceLROnPlateauOptions().min_lr({0.1, 0.2})); }),
            "[ReduceLROnPlateau] expected 1 min_lrs, got 2");
}

TEST(SchedulersMore, ReduceLROnPlateauStateDictContinues) {
  const std::vector<double> metrics{1.0, 0.99999, 1.0, 1.0, 0.5, 0.6, 0.7, 0.8, 0.9};
  auto make_opts = [] { return optim::ReduceLROnPlateauOptions().patience(1).factor(0.3); };
  auto p = leaf();
  optim::SGD whole_opt({p}, optim::SGDOptions(1.0));
  optim::ReduceLROnPlateau whole(whole_opt, make_opts());
  std::vector<double> want;
  for (double m : metrics) {
    whole.step(m);
    want.push_back(lr_of(whole_opt));
  }
  optim::SGD a_opt({p}, optim::SGDOptions(1.0));
  optim::ReduceLROnPlateau a(a_opt, make_opts());
  for (size_t i = 0; i < 4; ++i) a.step(metrics[i]);
  Checkpoint sd = a.state_dict();
  optim::SGD b_opt({p}, optim::SGDOptions(lr_of(a_opt)));
  optim::ReduceLROnPlateau b(b_opt, optim::ReduceLROnPlateauOptions());
  b.load_state_dict(sd);
  EXPECT_EQ(b.best(), a.best());
  EXPECT_EQ(b.num_bad_epochs(), a.num_bad_epochs());
  for (size_t i = 4; i < metrics.size(); ++i) {
    b.step(metrics[i]);
    EXPECT_DOUBLE_EQ(lr_of(b_opt), want[i]) << i;
  }
  // A fresh scheduler's best (inf) survives the JSON round trip.
  optim::ReduceLROnPlateau fresh(b_opt, make_opts());
  optim::ReduceLROnPlateau c(b_opt, optim::ReduceLROnPlateauOptions().mode("max"));
  c.load_state_dict(fresh.state_dict());
  EXPECT_EQ(c.best(), INFINITY);
  // Another scheduler's state is refused.
  optim::ExponentialLR ex(b_opt, 0.5);
  EXPECT_NE(error_of([&] { ex.load_state_dict(sd); }).find("ReduceLROnPlateau"), std::string::npos);
}

TEST(SchedulersMore, StateDictRoundTripsContinueTheSequence) {
  // Each scheduler: run 10 epochs straight, or 4, save, load into a fresh one (optimizer lr
  // restored as its own load_state_dict would), run 6: the same lrs.
  using Make = std::function<std::unique_ptr<optim::LRScheduler>(optim::Optimizer&)>;
  const std::vector<std::pair<const char*, Make>> makers{
      {"MultiStepLR", [](optim::Optimizer& o) { return std::make_unique<optim::MultiStepLR>(o, std::vector<int64_t>{2, 5}, 0.3); }},
      {"ExponentialLR", [](optim::Optimizer& o) { return std::make_unique<optim::ExponentialLR>(o, 0.7); }},
      {"LinearLR", [](optim::Optimizer& o) { return std::make_unique<optim::LinearLR>(o, 0.2, 0.9, 6); }},
      {"LambdaLR", [](optim::Optimizer& o) { return std::make_unique<optim::LambdaLR>(o, [](int64_t e) { return 1.0 / double(1 + e); }); }},
      {"OneCycleLR", [](optim::Optimizer& o) {
         return std::make_unique<optim::OneCycleLR>(o, 0.4, optim::OneCycleLROptions().total_steps(12).three_phase(true));
       }}};
  for (const auto& [name, make] : makers) {
    SCOPED_TRACE(name);
    auto p = leaf();
    optim::SGD o1({p}, optim::SGDOptions(0.1).momentum(0.9));
    auto s1 = make(o1);
    std::vector<double> want;
    for (int e = 0; e < 10; ++e) {
      s1->step();
      want.push_back(lr_of(o1));
    }
    optim::SGD o2({p}, optim::SGDOptions(0.1).momentum(0.9));
    auto s2 = make(o2);
    for (int e = 0; e < 4; ++e) s2->step();
    Checkpoint osd = o2.state_dict();
    Checkpoint ssd = s2->state_dict();
    optim::SGD o3({p}, optim::SGDOptions(0.1).momentum(0.9));
    auto s3 = make(o3);
    o3.load_state_dict(osd);
    s3->load_state_dict(ssd);
    EXPECT_EQ(s3->last_epoch(), 4);
    for (int e = 4; e < 10; ++e) {
      s3->step();
      EXPECT_DOUBLE_EQ(lr_of(o3), want[size_t(e)]) << "epoch " << e;
    }
  }
}

TEST(SchedulersMore, LaterSchedulersTakeTheInitialLr) {
  // PyTorch's group["initial_lr"]: a second scheduler's base is the lr the first one found.
  auto p = leaf();
  optim::SGD opt({p}, optim::SGDOptions(0.4));
  optim::LinearLR warm(opt, 0.5, 1.0, 2);
  EXPECT_DOUBLE_EQ(lr_of(opt), 0.2);
  ASSERT_TRUE(opt.param_groups()[0].initial_lr().has_value());
  EXPECT_EQ(*opt.param_groups()[0].initial_lr(), 0.4);
  optim::ExponentialLR ex(opt, 0.5);
  EXPECT_EQ(nlohmann::json::parse(ex.state_dict().metadata.at("scheduler"))["base_lrs"][0], 0.4);
  EXPECT_EQ(nlohmann::json::parse(opt.state_dict().metadata.at("param_groups"))[0]["initial_lr"], 0.4);
}

TEST(SchedulersMore, ReduceLROnPlateauSetsNoInitialLr) {
  // As PyTorch's: a scheduler made after it takes the lr of its own construction as its base.
  auto p = leaf();
  optim::SGD opt({p}, optim::SGDOptions(0.4));
  optim::ReduceLROnPlateau plateau(opt, optim::ReduceLROnPlateauOptions().patience(0).factor(0.5));
  EXPECT_FALSE(opt.param_groups()[0].initial_lr().has_value());
  EXPECT_FALSE(nlohmann::json::parse(opt.state_dict().metadata.at("param_groups"))[0].contains("initial_lr"));
  plateau.step(1.0);
  plateau.step(2.0);  // no improvement: 0.4 -> 0.2
  EXPECT_DOUBLE_EQ(lr_of(opt), 0.2);
  EXPECT_FALSE(opt.param_groups()[0].initial_lr().has_value());
  optim::ExponentialLR ex(opt, 0.5);
  EXPECT_EQ(*opt.param_groups()[0].initial_lr(), 0.2);
  EXPECT_EQ(nlohmann::json::parse(ex.state_dict().metadata.at("scheduler"))["base_lrs"][0], 0.2);
}

TEST(SchedulersMore, SequentialLRLaterSchedulersWaitAtEpochMinusOne) {
  // As PyTorch's: the schedulers after the first are undone to last_epoch -1 until their milestone
  // restarts them at 0; a state saved meanwhile says so and loads back.
  auto p = leaf();
  optim::SGD opt({p}, optim::SGDOptions(0.1));
  auto a = std::make_shared<optim::LinearLR>(opt, 0.5, 1.0, 2);
  auto b = std::make_shared<optim::ExponentialLR>(opt, 0.5);
  auto c = std::make_shared<optim::StepLR>(opt, 1, 0.5);
  optim::SequentialLR seq(opt, {a, b, c}, {2, 4});
  EXPECT_EQ(a->last_epoch(), 0);
  EXPECT_EQ(b->last_epoch(), -1);
  EXPECT_EQ(c->last_epoch(), -1);
  seq.step();
  seq.step();  // b restarts
  EXPECT_EQ(b->last_epoch(), 0);
  EXPECT_EQ(c->last_epoch(), -1);
  const Checkpoint saved = seq.state_dict(), saved_opt = opt.state_dict();
  EXPECT_EQ(nlohmann::json::parse(saved.metadata.at("scheduler"))["_schedulers"][2]["last_epoch"], -1);
  std::vector<double> want;
  for (int e = 0; e < 4; ++e) {
    seq.step();
    want.push_back(lr_of(opt));
  }
  optim::SGD opt2({leaf()}, optim::SGDOptions(0.1));
  auto a2 = std::make_shared<optim::LinearLR>(opt2, 0.5, 1.0, 2);
  auto b2 = std::make_shared<optim::ExponentialLR>(opt2, 0.5);
  auto c2 = std::make_shared<optim::StepLR>(opt2, 1, 0.5);
  optim::SequentialLR seq2(opt2, {a2, b2, c2}, {2, 4});
  opt2.load_state_dict(saved_opt);
  seq2.load_state_dict(saved);
  EXPECT_EQ(c2->last_epoch(), -1);
  for (int e = 0; e < 4; ++e) {
    seq2.step();
    EXPECT_DOUBLE_EQ(lr_of(opt2), want[size_t(e)]) << e;
  }
}

}  // namespace
