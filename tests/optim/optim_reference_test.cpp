// The optimizers and learning-rate schedulers against PyTorch's own values: what
// tests/gen/optim_reference.py writes (tests/fixtures/optim_reference.safetensors, float64 on the
// CPU; its docstring lists the cases, mirrored here).
//
// Optimizers: the same options over the same two groups give PyTorch's parameters after 3 and 5
// steps (foreach on and off); state_dict after 3 steps holds PyTorch's state tensors, steps and
// hyperparameters; and a fresh optimizer that loads PyTorch's state after 3 steps (in wick's
// Checkpoint form) continues to PyTorch's parameters after 5.
// Schedulers: the learning rates (and OneCycleLR's momenta) of every step are PyTorch's; the
// scheduler's and the optimizer's state_dict after 5 steps hold PyTorch's values; and a fresh
// optimizer and scheduler loading PyTorch's states after 5 steps (or wick's own) continue the
// same sequence.
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "wick/io/safetensors.h"
#include "wick/wick.h"

namespace wick {
namespace {

using Json = nlohmann::json;

constexpr double kTol = 1e-12;

const std::string& fixture_path() {
  static const std::string path = std::string(WICK_TEST_FIXTURES_DIR) + "/optim_reference.safetensors";
  return path;
}

const Checkpoint& fixture() {
  static const Checkpoint c = std::filesystem::exists(fixture_path()) ? load_checkpoint(fixture_path()) : Checkpoint{};
  return c;
}

Tensor at(const std::string& name) {
  auto it = fixture().tensors.find(name);
  if (it == fixture().tensors.end()) ADD_FAILURE() << "the fixture has no tensor " << name;
  return it == fixture().tensors.end() ? Tensor() : it->second;
}

const Json& meta(const std::string& key) {
  static std::map<std::string, Json> parsed;
  auto it = parsed.find(key);
  if (it == parsed.end()) it = parsed.emplace(key, Json::parse(fixture().metadata.at(key))).first;
  return it->second;
}

void expect_near(double got, double want, const std::string& what) {
  EXPECT_NEAR(got, want, kTol * (1 + std::abs(want))) << what;
}

void expect_tensor(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_TRUE(got.defined() && want.defined()) << what;
  ASSERT_EQ(got.sizes().vec(), want.sizes().vec()) << what;
  EXPECT_EQ(got.dtype(), kFloat64) << what;
  const auto g = got.detach().cpu().to_vector<double>(), w = want.detach().cpu().to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) expect_near(g[i], w[i], what + " element " + std::to_string(i));
}

// got equals want: numbers within kTol (an integer equals the same double), everything else
// exactly; objects key by key, both ways.
void expect_json(const Json& got, const Json& want, const std::string& what) {
  if (want.is_number()) {
    ASSERT_TRUE(got.is_number()) << what << ": " << got.dump() << ", PyTorch " << want.dump();
    expect_near(got.get<double>(), want.get<double>(), what);
  } else if (want.is_array()) {
    ASSERT_TRUE(got.is_array() && got.size() == want.size()) << what << ": " << got.dump() << ", PyTorch "
                                                              << want.dump();
    for (size_t i = 0; i < want.size(); ++i) expect_json(got[i], want[i], what + "[" + std::to_string(i) + "]");
  } else if (want.is_object()) {
    ASSERT_TRUE(got.is_object()) << what << ": " << got.dump();
    for (const auto& [k, v] : want.items()) {
      if (!got.contains(k)) ADD_FAILURE() << what << ": wick has no '" << k << "'";
      else expect_json(got.at(k), v, what + "." + k);
    }
    for (const auto& [k, v] : got.items())
      if (!want.contains(k)) ADD_FAILURE() << what << ": wick has '" << k << "', PyTorch's state does not";
  } else {
    EXPECT_EQ(got, want) << what;
  }
}

class OptimReference : public ::testing::Test {
 protected:
  void SetUp() override {
    // Written by tests/gen/optim_reference.py with PyTorch and committed.
    ASSERT_TRUE(std::filesystem::exists(fixture_path()))
        << fixture_path() << " is absent: run tests/gen/optim_reference.py";
  }
};

// ---- Optimizers

// An optimizer over groups {w[0]} (lr0) and {w[1]} (lr1), both with options o otherwise.
template <class Opt, class Options>
std::unique_ptr<optim::Optimizer> two_groups(Options o, double lr0, double lr1, const std::vector<Tensor>& w) {
  std::vector<optim::OptimizerParamGroup> groups;
  o.lr(lr0);
  groups.emplace_back(std::vector<Tensor>{w[0]}, o.clone());
  o.lr(lr1);
  groups.emplace_back(std::vector<Tensor>{w[1]}, o.clone());
  return std::make_unique<Opt>(std::move(groups), o);
}

struct OptimizerCase {
  const char* kind;  // wick's state_dict "optimizer"
  std::function<std::unique_ptr<optim::Optimizer>(const std::vector<Tensor>& w, bool foreach)> make;
};

// The cases of the fixture's docstring, by name.
OptimizerCase optimizer_case(const std::string& name) {
  using namespace optim;
  using W = const std::vector<Tensor>&;
  if (name == "sgd")
    return {"SGD", [](W w, bool f) { return two_groups<SGD>(SGDOptions(0.1).foreach (f), 0.1, 0.05, w); }};
  if (name == "sgd_nesterov")
    return {"SGD", [](W w, bool f) {
              return two_groups<SGD>(SGDOptions(0.1).momentum(0.9).nesterov(true).weight_decay(0.01).foreach (f), 0.1,
                                     0.05, w);
            }};
  if (name == "sgd_dampening")
    return {"SGD", [](W w, bool f) {
              return two_groups<SGD>(SGDOptions(0.05).momentum(0.8).dampening(0.3).maximize(true).foreach (f), 0.05,
                                     0.02, w);
            }};
  if (name == "adam")
    return {"Adam", [](W w, bool f) {
              return two_groups<Adam>(AdamOptions().betas({0.8, 0.95}).eps(1e-6).weight_decay(0.1).foreach (f), 0.01,
                                      0.02, w);
            }};
  if (name == "adam_amsgrad")
    return {"Adam", [](W w, bool f) {
              return two_groups<Adam>(AdamOptions().betas({0.5, 0.9}).amsgrad(true).foreach (f), 0.05, 0.02, w);
            }};
  if (name == "adamw")
    return {"AdamW", [](W w, bool f) {
              return two_groups<AdamW>(AdamWOptions().weight_decay(0.05).foreach (f), 0.01, 0.03, w);
            }};
  if (name == "adamw_amsgrad")
    return {"AdamW", [](W w, bool f) {
              return two_groups<AdamW>(
                  AdamWOptions().betas({0.7, 0.8}).weight_decay(0.1).amsgrad(true).maximize(true).foreach (f), 0.02,
                  0.01, w);
            }};
  if (name == "rmsprop")
    return {"RMSprop", [](W w, bool) {
              return two_groups<RMSprop>(
                  RMSpropOptions().alpha(0.9).eps(1e-6).weight_decay(0.01).momentum(0.5).centered(true), 0.01, 0.005,
                  w);
            }};
  if (name == "rmsprop_plain")
    return {"RMSprop", [](W w, bool) { return two_groups<RMSprop>(RMSpropOptions(), 0.01, 0.02, w); }};
  if (name == "rmsprop_maximize")
    return {"RMSprop", [](W w, bool) {
              return two_groups<RMSprop>(RMSpropOptions().weight_decay(0.1).maximize(true), 0.01, 0.02, w);
            }};
  if (name == "adagrad_maximize")
    return {"Adagrad", [](W w, bool) {
              return two_groups<Adagrad>(AdagradOptions().eps(1e-6).maximize(true), 0.05, 0.1, w);
            }};
  if (name == "adagrad")
    return {"Adagrad", [](W w, bool) {
              return two_groups<Adagrad>(
                  AdagradOptions().lr_decay(0.1).weight_decay(0.05).initial_accumulator_value(0.2), 0.1, 0.05, w);
            }};
  ADD_FAILURE() << "no optimizer case " << name;
  return {};
}

std::vector<Tensor> leaves(const std::string& prefix) {
  return {at(prefix + "0").clone().requires_grad_(), at(prefix + "1").clone().requires_grad_()};
}

// zero_grad; the fixture's loss sum(c_i w_i + w_i^2 + 0.1 w_i^3), backward; step.
void train_step(optim::Optimizer& opt, const std::vector<Tensor>& w) {
  opt.zero_grad();
  Tensor loss;
  for (size_t i = 0; i < w.size(); ++i) {
    const Tensor c = at("input.c" + std::to_string(i));
    Tensor term = (c * w[i] + w[i] * w[i] + 0.1 * w[i] * w[i] * w[i]).sum();
    loss = loss.defined() ? loss + term : term;
  }
  loss.backward();
  opt.step();
}

void expect_params(const std::vector<Tensor>& w, const std::string& name, int step) {
  for (size_t i = 0; i < w.size(); ++i)
    expect_tensor(w[i], at(name + ".after" + std::to_string(step) + "." + std::to_string(i)),
                  name + " parameter " + std::to_string(i) + " after " + std::to_string(step) + " steps");
}

// The fixture's state tensors of a case, as wick names them ("state.<i>.<name>").
TensorMap torch_state_tensors(const std::string& name) {
  TensorMap out;
  const std::string prefix = name + ".state.";
  for (const auto& [k, t] : fixture().tensors)
    if (k.starts_with(prefix)) out.emplace(k.substr(name.size() + 1), t);
  return out;
}

// wick's state_dict after 3 steps against PyTorch's: the same state tensors, steps (PyTorch's
// SGD keeps none: 0) and hyperparameters (every one wick has but foreach, which PyTorch keeps
// as None for its default).
void expect_optimizer_state(const Checkpoint& sd, const std::string& name, const char* kind) {
  const Json want = meta("optimizers").at(name);
  EXPECT_EQ(sd.metadata.at("optimizer"), kind);
  const TensorMap torch_tensors = torch_state_tensors(name);
  std::set<std::string> got_names, want_names;
  for (const auto& [k, t] : sd.tensors) got_names.insert(k);
  for (const auto& [k, t] : torch_tensors) want_names.insert(k);
  EXPECT_EQ(got_names, want_names) << name;
  for (const auto& [k, t] : torch_tensors)
    if (sd.tensors.count(k)) {
      expect_tensor(sd.tensors.at(k), t, name + " " + k);
    }

  const Json state = Json::parse(sd.metadata.at("state"));
  std::set<std::string> got_ids, want_ids;
  for (const auto& [i, e] : state.items()) got_ids.insert(i);
  for (const auto& [i, e] : want.at("state").items()) {
    want_ids.insert(i);
    if (state.contains(i)) {
      EXPECT_EQ(state.at(i).at("step"), e.value("step", 0)) << name << " state " << i;
    }
  }
  EXPECT_EQ(got_ids, want_ids) << name;

  const Json groups = Json::parse(sd.metadata.at("param_groups"));
  const Json& want_groups = want.at("param_groups");
  ASSERT_EQ(groups.size(), want_groups.size()) << name;
  for (size_t g = 0; g < groups.size(); ++g)
    for (const auto& [k, v] : groups[g].items()) {
      if (k == "foreach") continue;
      const std::string what = name + " param_groups[" + std::to_string(g) + "]." + k;
      if (!want_groups[g].contains(k)) ADD_FAILURE() << what << ": PyTorch's group has none";
      else expect_json(v, want_groups[g].at(k), what);
    }
}

// PyTorch's optimizer state (JSON of the fixture, tensors under prefix) in wick's Checkpoint
// form; foreach: PyTorch's None (its default) made wick's choice.
Checkpoint wick_optimizer_state(const char* kind, const Json& torch_state, const TensorMap& tensors, bool foreach) {
  Checkpoint c;
  c.tensors = tensors;
  Json state = Json::object();
  for (const auto& [i, e] : torch_state.at("state").items()) state[i] = {{"step", e.value("step", 0)}};
  Json groups = torch_state.at("param_groups");
  for (Json& g : groups) g["foreach"] = foreach;
  c.metadata["optimizer"] = kind;
  c.metadata["state"] = state.dump();
  c.metadata["param_groups"] = groups.dump();
  return c;
}

void check_optimizer(const std::string& name) {
  const OptimizerCase k = optimizer_case(name);
  ASSERT_TRUE(k.make) << name;
  for (const bool foreach : {true, false}) {
    SCOPED_TRACE(name + (foreach ? " (foreach)" : " (per parameter)"));
    // Five steps from the fixture's inputs.
    const std::vector<Tensor> w = leaves("input.w");
    auto opt = k.make(w, foreach);
    for (int step = 1; step <= 5; ++step) {
      train_step(*opt, w);
      if (step == 3) {
        expect_params(w, name, 3);
        expect_optimizer_state(opt->state_dict(), name, k.kind);
      }
    }
    expect_params(w, name, 5);

    // PyTorch's parameters and state after 3 steps, loaded into a fresh optimizer (its learning
    // rates changed first, so that the state's must replace them), then 2 steps more.
    const std::vector<Tensor> w3 = leaves(name + ".after3.");
    auto resumed = k.make(w3, foreach);
    for (auto& g : resumed->param_groups()) g.options().set_lr(1.0);
    resumed->load_state_dict(
        wick_optimizer_state(k.kind, meta("optimizers").at(name), torch_state_tensors(name), foreach));
    for (int step = 4; step <= 5; ++step) train_step(*resumed, w3);
    expect_params(w3, name, 5);
  }
}

TEST_F(OptimReference, SgdPlain) { check_optimizer("sgd"); }
TEST_F(OptimReference, SgdNesterovWeightDecay) { check_optimizer("sgd_nesterov"); }
TEST_F(OptimReference, SgdDampeningMaximize) { check_optimizer("sgd_dampening"); }
TEST_F(OptimReference, AdamWeightDecay) { check_optimizer("adam"); }
TEST_F(OptimReference, AdamAmsgrad) { check_optimizer("adam_amsgrad"); }
TEST_F(OptimReference, AdamW) { check_optimizer("adamw"); }
TEST_F(OptimReference, AdamWAmsgradMaximize) { check_optimizer("adamw_amsgrad"); }
TEST_F(OptimReference, RMSpropCenteredMomentum) { check_optimizer("rmsprop"); }
TEST_F(OptimReference, RMSpropPlain) { check_optimizer("rmsprop_plain"); }
TEST_F(OptimReference, RMSpropWeightDecayMaximize) { check_optimizer("rmsprop_maximize"); }
TEST_F(OptimReference, AdagradLrDecayInitialAccumulator) { check_optimizer("adagrad"); }
TEST_F(OptimReference, AdagradEpsMaximize) { check_optimizer("adagrad_maximize"); }

// ---- Schedulers

constexpr int kSchedSteps = 12;
constexpr double kPlateauMetrics[kSchedSteps] = {1.0, 0.9, 0.95, 0.95, 0.9, 0.96, 0.97, 0.5, 0.5, 0.51, 0.52, 0.53};

// The fixture's SGD: two groups of a parameter [2] each, lr 0.1 and 0.02, momentum 0.9.
std::unique_ptr<optim::SGD> sched_optimizer() {
  std::vector<Tensor> p = {zeros({2}, kFloat64).requires_grad_(), zeros({2}, kFloat64).requires_grad_()};
  auto o = two_groups<optim::SGD>(optim::SGDOptions(0.1).momentum(0.9), 0.1, 0.02, p);
  return std::unique_ptr<optim::SGD>(static_cast<optim::SGD*>(o.release()));
}

// The cases of the fixture's docstring, by name.
std::unique_ptr<optim::LRScheduler> make_scheduler(const std::string& name, optim::Optimizer& o) {
  using namespace optim;
  if (name == "step") return std::make_unique<StepLR>(o, 3, 0.5);
  if (name == "cosine") return std::make_unique<CosineAnnealingLR>(o, 5, 0.001);
  if (name == "lambda")
    return std::make_unique<LambdaLR>(o, std::vector<LambdaLR::Lambda>{
                                             [](int64_t e) { return std::pow(0.9, double(e)); },
                                             [](int64_t e) { return 1.0 / (1.0 + double(e)); }});
  if (name == "multistep") return std::make_unique<MultiStepLR>(o, std::vector<int64_t>{2, 5, 5, 9}, 0.3);
  if (name == "exponential") return std::make_unique<ExponentialLR>(o, 0.8);
  if (name == "linear") return std::make_unique<LinearLR>(o, 0.25, 0.75, 6);
  if (name == "onecycle_cos")
    return std::make_unique<OneCycleLR>(o, std::vector<double>{0.5, 0.1},
                                        OneCycleLROptions()
                                            .total_steps(14)
                                            .pct_start(0.25)
                                            .anneal_strategy("cos")
                                            .base_momentum(0.8)
                                            .max_momentum(0.9)
                                            .div_factor(10)
                                            .final_div_factor(100));
  if (name == "onecycle_linear_three")
    return std::make_unique<OneCycleLR>(o, 0.4,
                                        OneCycleLROptions()
                                            .total_steps(13)
                                            .pct_start(0.3)
                                            .anneal_strategy("linear")
                                            .three_phase(true)
                                            .base_momentum(0.7)
                                            .max_momentum(0.95));
  if (name == "sequential")
    return std::make_unique<SequentialLR>(
        o,
        std::vector<std::shared_ptr<LRScheduler>>{std::make_shared<LinearLR>(o, 0.1, 1.0, 3),
                                                  std::make_shared<ExponentialLR>(o, 0.9),
                                                  std::make_shared<StepLR>(o, 2, 0.5)},
        std::vector<int64_t>{4, 8});
  if (name == "plateau_min_rel")
    return std::make_unique<ReduceLROnPlateau>(o, ReduceLROnPlateauOptions()
                                                      .mode("min")
                                                      .factor(0.5)
                                                      .patience(1)
                                                      .threshold(0.01)
                                                      .threshold_mode("rel")
                                                      .cooldown(1)
                                                      .min_lr({0.03, 0.001}));
  if (name == "plateau_max_abs")
    return std::make_unique<ReduceLROnPlateau>(o, ReduceLROnPlateauOptions()
                                                      .mode("max")
                                                      .factor(0.3)
                                                      .patience(0)
                                                      .threshold(0.02)
                                                      .threshold_mode("abs")
                                                      .cooldown(2)
                                                      .min_lr({0.005}));
  ADD_FAILURE() << "no scheduler case " << name;
  return nullptr;
}

// Step `step` (from 1) of a case: ReduceLROnPlateau's with the fixture's metric (negated in max mode).
void sched_step(const std::string& name, optim::LRScheduler& s, int step) {
  if (auto* plateau = dynamic_cast<optim::ReduceLROnPlateau*>(&s))
    plateau->step((name == "plateau_max_abs" ? -1 : 1) * kPlateauMetrics[step - 1]);
  else
    s.step();
}

void expect_lrs(const optim::Optimizer& opt, const Json& want, int step, const std::string& name) {
  const Json& lrs = want.at("lrs").at(size_t(step));
  const Json& momenta = want.at("momenta").at(size_t(step));
  for (size_t g = 0; g < opt.param_groups().size(); ++g) {
    const auto& o = static_cast<const optim::SGDOptions&>(opt.param_groups()[g].options());
    const std::string what = name + " step " + std::to_string(step) + " group " + std::to_string(g);
    expect_near(o.lr(), lrs.at(g).get<double>(), what + " lr");
    expect_near(o.momentum(), momenta.at(g).get<double>(), what + " momentum");
  }
}

// PyTorch's scheduler state t in wick's form, for a scheduler of the type of wick's state
// like (whose entries PyTorch's state lacks come from like: the base_lrs ReduceLROnPlateau
// keeps none of, in PyTorch); groups: PyTorch's optimizer groups (OneCycleLR keeps its
// per-group bounds there); anneal: OneCycleLR's strategy where PyTorch's state does not name it
// (before PyTorch 2, whose state keeps the annealing function itself).
Json wick_scheduler_state(const Json& t, const Json& like, const Json& groups, const std::string& anneal) {
  const std::string type = like.at("type");
  Json out = {{"type", type}, {"last_epoch", t.at("last_epoch")}, {"last_lr", t.at("_last_lr")}};
  out["base_lrs"] = t.contains("base_lrs") ? t.at("base_lrs") : like.at("base_lrs");
  // Entries of the same name and meaning.
  for (const char* k : {"step_size", "gamma", "T_max", "eta_min", "start_factor", "end_factor", "total_iters",
                        "total_steps", "factor", "patience", "threshold", "cooldown", "eps", "num_bad_epochs",
                        "cooldown_counter", "mode", "threshold_mode", "min_lrs", "best"})
    if (t.contains(k) && like.contains(k)) out[k] = t.at(k);
  if (type == "MultiStepLR") out["milestones"] = t.at("milestones");
  if (type == "OneCycleLR") {
    const Json& phases = t.at("_schedule_phases");
    out["three_phase"] = phases.size() == 3 ? 1.0 : 0.0;
    out["pct_start"] = (phases.at(0).at("end_step").get<double>() + 1) / t.at("total_steps").get<double>();
    out["cycle_momentum"] = t.at("cycle_momentum").get<bool>() ? 1.0 : 0.0;
    out["use_beta1"] = t.at("use_beta1").get<bool>() ? 1.0 : 0.0;
    out["anneal_strategy"] = t.value("_anneal_func_type", anneal);
    const bool momentum = t.at("cycle_momentum").get<bool>();
    // wick's per-group lists: PyTorch's group entries (the momenta only where it cycles them).
    const std::pair<const char*, const char*> lists[] = {{"initial_lrs", "initial_lr"},
                                                         {"max_lrs", "max_lr"},
                                                         {"min_lrs", "min_lr"},
                                                         {"max_momentums", "max_momentum"},
                                                         {"base_momentums", "base_momentum"}};
    for (const auto& [mine, theirs] : lists) {
      Json list = Json::array();
      const bool is_momentum = std::string(mine).find("momentum") != std::string::npos;
      if (!is_momentum || momentum)
        for (const Json& g : groups) list.push_back(g.at(theirs));
      out[mine] = list;
    }
  }
  if (type == "SequentialLR") {
    out["milestones"] = t.at("_milestones");
    Json children = Json::array();
    for (size_t i = 0; i < t.at("_schedulers").size(); ++i)
      children.push_back(wick_scheduler_state(t.at("_schedulers")[i], like.at("_schedulers")[i], groups, anneal));
    out["_schedulers"] = children;
  }
  return out;
}

Checkpoint scheduler_checkpoint(const Json& state) {
  Checkpoint c;
  c.metadata["scheduler"] = state.dump();
  return c;
}

void check_scheduler(const std::string& name) {
  SCOPED_TRACE(name);
  const Json want = meta("schedulers").at(name);
  const std::string anneal = name == "onecycle_linear_three" ? "linear" : "cos";
  auto opt = sched_optimizer();
  auto s = make_scheduler(name, *opt);
  ASSERT_TRUE(s);
  expect_lrs(*opt, want, 0, name);
  Checkpoint opt5, sched5;
  for (int step = 1; step <= kSchedSteps; ++step) {
    opt->step();  // no gradients: changes nothing, as PyTorch's in the fixture
    sched_step(name, *s, step);
    expect_lrs(*opt, want, step, name);
    if (step != 5) continue;
    opt5 = opt->state_dict();
    sched5 = s->state_dict();
    // The optimizer's groups as PyTorch's (initial_lr included, or absent as there).
    const Json groups = Json::parse(opt5.metadata.at("param_groups"));
    const Json& want_groups = want.at("optimizer5").at("param_groups");
    ASSERT_EQ(groups.size(), want_groups.size());
    for (size_t g = 0; g < groups.size(); ++g) {
      EXPECT_EQ(groups[g].contains("initial_lr"), want_groups[g].contains("initial_lr")) << "group " << g;
      for (const auto& [k, v] : groups[g].items())
        if (k != "foreach" && want_groups[g].contains(k))
          expect_json(v, want_groups[g].at(k), "optimizer param_groups[" + std::to_string(g) + "]." + k);
    }
    // The scheduler's state as PyTorch's.
    const Json mine = Json::parse(sched5.metadata.at("scheduler"));
    expect_json(mine, wick_scheduler_state(want.at("state5"), mine, want_groups, anneal), "state_dict");
  }

  // Resumed at step 5 from PyTorch's states, then from wick's own: the same sequence on.
  for (const bool from_torch : {true, false}) {
    SCOPED_TRACE(from_torch ? "resumed from PyTorch's state" : "resumed from wick's state");
    auto opt2 = sched_optimizer();
    auto s2 = make_scheduler(name, *opt2);
    if (from_torch) {
      const Json& t = want.at("optimizer5");
      opt2->load_state_dict(wick_optimizer_state("SGD", t, {}, true));
      const Json like = Json::parse(s2->state_dict().metadata.at("scheduler"));
      s2->load_state_dict(
          scheduler_checkpoint(wick_scheduler_state(want.at("state5"), like, t.at("param_groups"), anneal)));
    } else {
      opt2->load_state_dict(opt5);
      s2->load_state_dict(sched5);
    }
    expect_lrs(*opt2, want, 5, name);
    for (int step = 6; step <= kSchedSteps; ++step) {
      sched_step(name, *s2, step);
      expect_lrs(*opt2, want, step, name);
    }
  }
}

TEST_F(OptimReference, StepLR) { check_scheduler("step"); }
TEST_F(OptimReference, CosineAnnealingLR) { check_scheduler("cosine"); }
TEST_F(OptimReference, LambdaLRPerGroup) { check_scheduler("lambda"); }
TEST_F(OptimReference, MultiStepLRRepeatedMilestone) { check_scheduler("multistep"); }
TEST_F(OptimReference, ExponentialLR) { check_scheduler("exponential"); }
TEST_F(OptimReference, LinearLR) { check_scheduler("linear"); }
TEST_F(OptimReference, OneCycleLRCos) { check_scheduler("onecycle_cos"); }
TEST_F(OptimReference, OneCycleLRLinearThreePhase) { check_scheduler("onecycle_linear_three"); }
TEST_F(OptimReference, SequentialLR) { check_scheduler("sequential"); }
TEST_F(OptimReference, ReduceLROnPlateauMinRel) { check_scheduler("plateau_min_rel"); }
TEST_F(OptimReference, ReduceLROnPlateauMaxAbs) { check_scheduler("plateau_max_abs"); }

// Every case of the fixture has its test above (a case added to the script without one fails).
TEST_F(OptimReference, EveryFixtureCaseIsTested) {
  const std::set<std::string> optimizers = {"sgd",           "sgd_nesterov",     "sgd_dampening", "adam",
                                            "adam_amsgrad",  "adamw",            "adamw_amsgrad", "rmsprop",
                                            "rmsprop_plain", "rmsprop_maximize", "adagrad",       "adagrad_maximize"};
  const std::set<std::string> schedulers = {"step",         "cosine",       "lambda",
                                            "multistep",    "exponential",  "linear",
                                            "onecycle_cos", "onecycle_linear_three", "sequential",
                                            "plateau_min_rel", "plateau_max_abs"};
  std::set<std::string> got;
  for (const auto& [k, v] : meta("optimizers").items()) got.insert(k);
  EXPECT_EQ(got, optimizers);
  got.clear();
  for (const auto& [k, v] : meta("schedulers").items()) got.insert(k);
  EXPECT_EQ(got, schedulers);
}

}  // namespace
}  // namespace wick
