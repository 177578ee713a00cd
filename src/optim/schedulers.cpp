// The learning-rate schedulers, with PyTorch's recursive forms (get_lr: a change made by hand
// to a group's lr carries on) and closed forms (closed_form_lr: SequentialLR's restarts).
#include "wick/optim/schedulers.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numbers>

#include <nlohmann/json.hpp>

#include "optim/optimizer_internal.h"

namespace wick::optim {

namespace {
// Runs a constructor's checks of its arguments, then hands the optimizer on to the base, which
// records each group's initial_lr: a scheduler refused for its arguments leaves the optimizer
// as it was (PyTorch checks them before its base __init__ too).
template <class Check>
Optimizer& checked_first(Optimizer& optimizer, Check&& check) {
  check();
  return optimizer;
}
}  // namespace

LRScheduler::LRScheduler(Optimizer& optimizer) : LRScheduler(optimizer, true) {}

LRScheduler::LRScheduler(Optimizer& optimizer, bool records_initial_lr) : optimizer_(optimizer) {
  // PyTorch's group["initial_lr"]: the first scheduler records each group's lr; every
  // scheduler takes those as its base.
  for (auto& g : optimizer_.param_groups()) {
    if (!g.initial_lr() && records_initial_lr) g.initial_lr() = g.options().get_lr();
    base_lrs_.push_back(g.initial_lr() ? *g.initial_lr() : g.options().get_lr());
  }
  last_lr_ = current_lrs();
}

std::vector<double> LRScheduler::current_lrs() const {
  std::vector<double> lrs;
  for (const auto& g : optimizer_.param_groups()) lrs.push_back(g.options().get_lr());
  return lrs;
}

void LRScheduler::set_lrs(const std::vector<double>& lrs) {
  auto& groups = optimizer_.param_groups();
  for (size_t i = 0; i < groups.size() && i < lrs.size(); ++i) groups[i].options().set_lr(lrs[i]);
}

void LRScheduler::step() {
  ++last_epoch_;
  std::vector<double> lrs;
  try {
    lrs = get_lr();
  } catch (...) {
    --last_epoch_;  // a step that fails changes nothing
    throw;
  }
  last_lr_ = std::move(lrs);
  set_lrs(last_lr_);
}

void LRScheduler::initial_step() {
  last_lr_ = get_lr();
  set_lrs(last_lr_);
}

void LRScheduler::restart() {
  const int64_t epoch = last_epoch_;
  last_epoch_ = 0;
  std::vector<double> lrs;
  try {
    lrs = closed_form_lr();
  } catch (...) {
    last_epoch_ = epoch;
    throw;
  }
  last_lr_ = std::move(lrs);
  set_lrs(last_lr_);
}

namespace {
using Json = nlohmann::json;
constexpr const char* kOp = "load_state_dict";

// A JSON array of finite non-negative numbers, n of them or (where also is not 0) also of them.
std::vector<double> lr_list(const Json& j, const char* key, size_t n, size_t also = 0) {
  WICK_CHECK(j.contains(key) && j.at(key).is_array(), ValueError, kOp, "the scheduler state has no '", key,
             "' list");
  const Json& a = j.at(key);
  WICK_CHECK(a.size() == n || (also != 0 && a.size() == also), ValueError, kOp, "the scheduler state's '", key,
             "' has ", a.size(), " learning rates, this scheduler has ", n,
             " (one per parameter group of the optimizer when it was made)");
  std::vector<double> out;
  for (const Json& v : a) {
    WICK_CHECK(v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() >= 0, ValueError, kOp,
               "the scheduler state's '", key, "' holds ", v.dump(), ", not a finite non-negative learning rate");
    out.push_back(v.get<double>());
  }
  return out;
}
}  // namespace

std::string LRScheduler::state_text() const {
  Json j = {{"type", type_name()}, {"last_epoch", last_epoch_}, {"base_lrs", base_lrs_}, {"last_lr", last_lr_}};
  for (const auto& [k, v] : hyperparameters()) j[k] = v;
  const Json extra = Json::parse(extra_state());
  j.update(extra);
  return j.dump();
}

Checkpoint LRScheduler::state_dict() const {
  Checkpoint out;
  out.metadata["scheduler"] = state_text();
  return out;
}

void LRScheduler::load_state_dict(const Checkpoint& state) {
  auto it = state.metadata.find("scheduler");
  WICK_CHECK(it != state.metadata.end(), ValueError, kOp,
             "the state has no 'scheduler' metadata (is it a scheduler's state_dict, or a checkpoint without its "
             "prefix?)");
  load_state_text(it->second, false);
  // Nothing below throws (but for memory).
  load_state_text(it->second, true);
}

void LRScheduler::load_state_text(const std::string& text, bool apply) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::exception& e) {
    detail::raise<ValueError>(kOp, "the 'scheduler' metadata is not valid JSON (", e.what(), ")");
  }
  WICK_CHECK(j.is_object(), ValueError, kOp, "the 'scheduler' metadata must be a JSON object");
  WICK_CHECK(j.contains("type") && j.at("type").is_string(), ValueError, kOp, "the scheduler state has no 'type'");
  WICK_CHECK(j.at("type").get<std::string>() == type_name(), ValueError, kOp, "the state is a ",
             j.at("type").get<std::string>(), "'s, this scheduler is a ", type_name());
  // -1: a scheduler of a SequentialLR waiting for its milestone.
  WICK_CHECK(j.contains("last_epoch") && j.at("last_epoch").is_number_integer() &&
                 j.at("last_epoch").get<int64_t>() >= -1,
             ValueError, kOp, "the scheduler state's 'last_epoch' must be an integer from -1 on");
  // base_lrs: one per group the scheduler was made with (groups added later keep their own lr,
  // and the schedulers' per-group lists are that long); last_lr: that many, or one per group now.
  std::vector<double> base = lr_list(j, "base_lrs", base_lrs_.size()),
                      last = lr_list(j, "last_lr", base_lrs_.size(), optimizer_.param_groups().size());
  std::map<std::string, double> h;
  for (const auto& [k, unused] : hyperparameters()) {
    WICK_CHECK(j.contains(k) && j.at(k).is_number(), ValueError, kOp, "the scheduler state has no number '", k,
               "'");
    h[k] = j.at(k).get<double>();
  }
  load_hyperparameters(h, false);
  load_extra_state(text, false);
  if (!apply) return;
  load_hyperparameters(h, true);
  load_extra_state(text, true);
  last_epoch_ = j.at("last_epoch").get<int64_t>();
  base_lrs_ = std::move(base);
  last_lr_ = std::move(last);
}

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(checked_first(optimizer,
                                [&] {
                                  WICK_CHECK(step_size > 0, ValueError, "StepLR",
                                             "step_size must be positive, got ", step_size);
                                })),
      step_size_(step_size), gamma_(gamma) {}

std::vector<double> StepLR::get_lr() {
  // Recursive, as PyTorch: a change made by hand to a group's lr carries on.
  std::vector<double> lrs = current_lrs();
  if (last_epoch_ % step_size_ == 0)
    for (double& lr : lrs) lr *= gamma_;
  return lrs;
}

std::vector<double> StepLR::closed_form_lr() {
  std::vector<double> lrs = base_lrs_;
  for (double& lr : lrs) lr *= std::pow(gamma_, double(last_epoch_ / step_size_));
  return lrs;
}

std::map<std::string, double> StepLR::hyperparameters() const {
  return {{"step_size", double(step_size_)}, {"gamma", gamma_}};
}

void StepLR::load_hyperparameters(const std::map<std::string, double>& h, bool apply) {
  const double step_size = h.at("step_size"), gamma = h.at("gamma");
  WICK_CHECK(step_size >= 1 && step_size <= 9.0e15 && step_size == std::floor(step_size), ValueError, kOp,
             "the StepLR state's step_size must be a positive integer, got ", step_size);
  WICK_CHECK(std::isfinite(gamma), ValueError, kOp, "the StepLR state's gamma must be finite, got ", gamma);
  if (apply) {
    step_size_ = int64_t(step_size);
    gamma_ = gamma;
  }
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min)
    : LRScheduler(checked_first(optimizer,
                                [&] {
                                  WICK_CHECK(T_max > 0, ValueError, "CosineAnnealingLR",
                                             "T_max must be positive, got ", T_max);
                                })),
      t_max_(T_max), eta_min_(eta_min) {}

std::vector<double> CosineAnnealingLR::get_lr() {
  const double pi = std::numbers::pi;
  const auto t = double(last_epoch_), T = double(t_max_);
  std::vector<double> lrs = current_lrs();
  // A group added after the scheduler was made has no base lr: it keeps its lr, as PyTorch's
  // zip over base_lrs and param_groups leaves it.
  for (size_t i = 0; i < lrs.size() && i < base_lrs_.size(); ++i) {
    const double base = base_lrs_[i];
    if (last_epoch_ == 0) continue;
    if ((last_epoch_ - 1 - t_max_) % (2 * t_max_) == 0) {
      lrs[i] = lrs[i] + (base - eta_min_) * (1 - std::cos(pi / T)) / 2;
    } else {
      lrs[i] = (1 + std::cos(pi * t / T)) / (1 + std::cos(pi * (t - 1) / T)) * (lrs[i] - eta_min_) + eta_min_;
    }
  }
  return lrs;
}

}  // namespace wick::optim

namespace wick::optim {

std::vector<double> CosineAnnealingLR::closed_form_lr() {
  std::vector<double> lrs = base_lrs_;
  for (double& lr : lrs)
    lr = eta_min_ + (lr - eta_min_) * (1 + std::cos(std::numbers::pi * double(last_epoch_) / double(t_max_))) / 2;
  return lrs;
}

std::map<std::string, double> CosineAnnealingLR::hyperparameters() const {
  return {{"T_max", double(t_max_)}, {"eta_min", eta_min_}};
}

void CosineAnnealingLR::load_hyperparameters(const std::map<std::string, double>& h, bool apply) {
  const double t_max = h.at("T_max"), eta_min = h.at("eta_min");
  WICK_CHECK(t_max >= 1 && t_max <= 9.0e15 && t_max == std::floor(t_max), ValueError, kOp,
             "the CosineAnnealingLR state's T_max must be a positive integer, got ", t_max);
  WICK_CHECK(std::isfinite(eta_min), ValueError, kOp, "the CosineAnnealingLR state's eta_min must be finite, got ",
             eta_min);
  if (apply) {
    t_max_ = int64_t(t_max);
    eta_min_ = eta_min;
  }
}

}  // namespace wick::optim

namespace wick::optim {

namespace {

// A JSON value of the state's text, checked by want (with its description for the message).
Json state_json(const std::string& text) { return Json::parse(text); }

std::vector<double> number_list(const Json& j, const char* key, size_t n, const char* type) {
  WICK_CHECK(j.contains(key) && j.at(key).is_array() && j.at(key).size() == n, ValueError, kOp, "the ", type,
             " state's '", key, "' must be a list of ", n, " numbers");
  std::vector<double> out;
  for (const Json& v : j.at(key)) {
    WICK_CHECK(v.is_number() && std::isfinite(v.get<double>()), ValueError, kOp, "the ", type, " state's '", key,
               "' holds ", v.dump(), ", not a finite number");
    out.push_back(v.get<double>());
  }
  return out;
}

std::vector<int64_t> milestone_list(const Json& j, const char* type) {
  WICK_CHECK(j.contains("milestones") && j.at("milestones").is_array(), ValueError, kOp, "the ", type,
             " state has no 'milestones' list");
  std::vector<int64_t> out;
  for (const Json& v : j.at("milestones")) {
    WICK_CHECK(v.is_number_integer(), ValueError, kOp, "the ", type, " state's 'milestones' holds ", v.dump(),
               ", not an integer");
    out.push_back(v.get<int64_t>());
  }
  return out;
}

bool whole(double x) { return std::isfinite(x) && x == std::floor(x) && std::abs(x) <= 9.0e15; }

// Each group's value: one for all, or one per group (PyTorch's _format_param).
std::vector<double> per_group(const std::vector<double>& v, size_t groups, const char* op, const char* name) {
  if (v.size() == 1) return std::vector<double>(groups, v[0]);
  WICK_CHECK(v.size() == groups, ValueError, op, "expected ", groups, " values for ", name, ", got ", v.size());
  return v;
}

}  // namespace

// ---- LambdaLR

LambdaLR::LambdaLR(Optimizer& optimizer, Lambda lr_lambda)
    : LambdaLR(optimizer, std::vector<Lambda>(optimizer.param_groups().size(), lr_lambda)) {}

LambdaLR::LambdaLR(Optimizer& optimizer, std::vector<Lambda> lr_lambdas)
    : LRScheduler(checked_first(optimizer,
                                [&] {
                                  const size_t n = optimizer.param_groups().size();
                                  WICK_CHECK(lr_lambdas.size() == n, ValueError, "LambdaLR", "Expected ", n,
                                             " lr_lambdas, but got ", lr_lambdas.size());
                                  for (const Lambda& f : lr_lambdas)
                                    WICK_CHECK(bool(f), ValueError, "LambdaLR", "an lr_lambda is empty");
                                })),
      lambdas_(std::move(lr_lambdas)) {
  initial_step();
}

std::vector<double> LambdaLR::get_lr() {
  std::vector<double> lrs = base_lrs_;
  for (size_t i = 0; i < lrs.size(); ++i) lrs[i] *= lambdas_[i](last_epoch_);
  return lrs;
}

// ---- MultiStepLR

MultiStepLR::MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma)
    : LRScheduler(optimizer), milestones_(std::move(milestones)), gamma_(gamma) {
  std::sort(milestones_.begin(), milestones_.end());
}

std::vector<double> MultiStepLR::get_lr() {
  std::vector<double> lrs = current_lrs();
  const auto n = std::count(milestones_.begin(), milestones_.end(), last_epoch_);
  if (n > 0)
    for (double& lr : lrs) lr *= std::pow(gamma_, double(n));
  return lrs;
}

std::vector<double> MultiStepLR::closed_form_lr() {
  const auto n = std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) - milestones_.begin();
  std::vector<double> lrs = base_lrs_;
  for (double& lr : lrs) lr *= std::pow(gamma_, double(n));
  return lrs;
}

void MultiStepLR::load_hyperparameters(const std::map<std::string, double>& h, bool apply) {
  const double gamma = h.at("gamma");
  WICK_CHECK(std::isfinite(gamma), ValueError, kOp, "the MultiStepLR state's gamma must be finite, got ", gamma);
  if (apply) gamma_ = gamma;
}

std::string MultiStepLR::extra_state() const { return Json{{"milestones", milestones_}}.dump(); }

void MultiStepLR::load_extra_state(const std::string& state, bool apply) {
  std::vector<int64_t> m = milestone_list(state_json(state), "MultiStepLR");
  std::sort(m.begin(), m.end());
  if (apply) milestones_ = std::move(m);
}

// ---- ExponentialLR

ExponentialLR::ExponentialLR(Optimizer& optimizer, double gamma) : LRScheduler(optimizer), gamma_(gamma) {}

std::vector<double> ExponentialLR::get_lr() {
  std::vector<double> lrs = current_lrs();
  if (last_epoch_ != 0)
    for (double& lr : lrs) lr *= gamma_;
  return lrs;
}

std::vector<double> ExponentialLR::closed_form_lr() {
  std::vector<double> lrs = base_lrs_;
  for (double& lr : lrs) lr *= std::pow(gamma_, double(last_epoch_));
  return lrs;
}

void ExponentialLR::load_hyperparameters(const std::map<std::string, double>& h, bool apply) {
  const double gamma = h.at("gamma");
  WICK_CHECK(std::isfinite(gamma), ValueError, kOp, "the ExponentialLR state's gamma must be finite, got ", gamma);
  if (apply) gamma_ = gamma;
}

// ---- LinearLR

LinearLR::LinearLR(Optimizer& optimizer, double start_factor, double end_factor, int64_t total_iters)
    : LRScheduler(checked_first(
          optimizer,
          [&] {
            WICK_CHECK(
                start_factor > 0 && start_factor <= 1, ValueError, "LinearLR",
                "Starting multiplicative factor expected to be greater than 0 and less or equal to 1.");
            WICK_CHECK(end_factor >= 0 && end_factor <= 1, ValueError, "LinearLR",
                       "Ending multiplicative factor expected to be between 0 and 1.");
            WICK_CHECK(total_iters >= 0, ValueError, "LinearLR", "total_iters must be non-negative, got ",
                       total_iters);
          })),
      start_factor_(start_factor), end_factor_(end_factor), total_iters_(total_iters) {
  initial_step();
}

std::vector<double> LinearLR::get_lr() {
  std::vector<double> lrs = current_lrs();
  if (last_epoch_ == 0) {
    for (double& lr : lrs) lr *= start_factor_;
  } else if (last_epoch_ <= total_iters_) {
    const double d = end_factor_ - start_factor_;
    const double f = 1 + d / (double(total_iters_) * start_factor_ + double(last_epoch_ - 1) * d);
    for (double& lr : lrs) lr *= f;
  }
  return lrs;
}

std::vector<double> LinearLR::closed_form_lr() {
  // total_iters = 0 never leaves start_factor (PyTorch's recursive form).
  const double f = total_iters_ == 0 ? start_factor_
                                     : start_factor_ + (end_factor_ - start_factor_) *
                                                           double(std::min(total_iters_, last_epoch_)) /
                                                           double(total_iters_);
  std::vector<double> lrs = base_lrs_;
  for (double& lr : lrs) lr *= f;
  return lrs;
}

std::map<std::string, double> LinearLR::hyperparameters() const {
  return {{"start_factor", start_factor_}, {"end_factor", end_factor_}, {"total_iters", double(total_iters_)}};
}

void LinearLR::load_hyperparameters(const std::map<std::string, double>& h, bool apply) {
  const double s = h.at("start_factor"), e = h.at("end_factor"), n = h.at("total_iters");
  WICK_CHECK(s > 0 && s <= 1 && e >= 0 && e <= 1, ValueError, kOp,
             "the LinearLR state's factors must lie in (0, 1] and [0, 1], got ", s, " and ", e);
  WICK_CHECK(whole(n) && n >= 0, ValueError, kOp, "the LinearLR state's total_iters must be a non-negative integer, got ",
             n);
  if (apply) {
    start_factor_ = s;
    end_factor_ = e;
    total_iters_ = int64_t(n);
  }
}

// ---- OneCycleLR

OneCycleLR::OneCycleLR(Optimizer& optimizer, double max_lr, const OneCycleLROptions& options)
    : OneCycleLR(optimizer, std::vector<double>{max_lr}, options) {}

namespace {
// OneCycleLR's arguments, checked before anything is set.
void check_one_cycle(const Optimizer& optimizer, const std::vector<double>& max_lr,
                     const OneCycleLROptions& o) {
  constexpr const char* op = "OneCycleLR";
  if (o.total_steps() != 0) {
    WICK_CHECK(o.total_steps() > 0, ValueError, op, "Expected positive integer total_steps, but got ",
               o.total_steps());
  } else {
    WICK_CHECK(o.epochs() != 0 || o.steps_per_epoch() != 0, ValueError, op,
               "You must define either total_steps OR (epochs AND steps_per_epoch)");
    WICK_CHECK(o.epochs() > 0, ValueError, op, "Expected positive integer epochs, but got ", o.epochs());
    WICK_CHECK(o.steps_per_epoch() > 0, ValueError, op, "Expected positive integer steps_per_epoch, but got ",
               o.steps_per_epoch());
    WICK_CHECK(o.epochs() <= std::numeric_limits<int64_t>::max() / o.steps_per_epoch(), ValueError, op,
               "epochs * steps_per_epoch (", o.epochs(), " * ", o.steps_per_epoch(), ") overflows int64");
  }
  WICK_CHECK(o.pct_start() >= 0 && o.pct_start() <= 1, ValueError, op,
             "Expected float between 0 and 1 pct_start, but got ", o.pct_start());
  WICK_CHECK(o.anneal_strategy() == "cos" || o.anneal_strategy() == "linear", ValueError, op,
             "anneal_strategy must be one of 'cos' or 'linear', instead got ", o.anneal_strategy());
  (void)per_group(max_lr, optimizer.param_groups().size(), op, "max_lr");
  if (o.cycle_momentum()) {
    const OptimizerOptions& d = optimizer.defaults();
    WICK_CHECK(detail::has_betas(d) || detail::has_momentum(d), ValueError, op,
               "optimizer must support momentum or beta1 with `cycle_momentum` option enabled");
  }
}
}  // namespace

OneCycleLR::OneCycleLR(Optimizer& optimizer, std::vector<double> max_lr, const OneCycleLROptions& o)
    : LRScheduler(checked_first(optimizer, [&] { check_one_cycle(optimizer, max_lr, o); })),
      pct_start_(o.pct_start()), cos_(o.anneal_strategy() == "cos"), three_phase_(o.three_phase()),
      cycle_momentum_(o.cycle_momentum()) {
  total_steps_ = o.total_steps() != 0 ? o.total_steps() : o.epochs() * o.steps_per_epoch();
  const size_t n = base_lrs_.size();
  max_lrs_ = per_group(max_lr, n, "OneCycleLR", "max_lr");
  for (size_t i = 0; i < n; ++i) {
    initial_lrs_.push_back(max_lrs_[i] / o.div_factor());
    min_lrs_.push_back(initial_lrs_[i] / o.final_div_factor());
  }
  if (cycle_momentum_) {
    use_beta1_ = detail::has_betas(optimizer.defaults());
    max_momentums_.assign(n, o.max_momentum());
    base_momentums_.assign(n, o.base_momentum());
  }
  // Nothing below throws: the groups take their initial lr and momentum.
  auto& groups = optimizer_.param_groups();
  for (size_t i = 0; i < n; ++i) groups[i].initial_lr() = initial_lrs_[i];
  if (cycle_momentum_)
    for (size_t i = 0; i < n; ++i) set_momentum(i, max_momentums_[i]);
  base_lrs_ = initial_lrs_;
  initial_step();
}

std::vector<OneCycleLR::Phase> OneCycleLR::phases() const {
  const double t = double(total_steps_), p = pct_start_;
  // lr: 0 initial, 1 max, 2 min; momentum: 0 max, 1 base.
  if (three_phase_) return {{p * t - 1, 0, 1, 0, 1}, {2 * p * t - 2, 1, 0, 1, 0}, {t - 1, 0, 2, 0, 0}};
  return {{p * t - 1, 0, 1, 0, 1}, {t - 1, 1, 2, 1, 0}};
}

double OneCycleLR::anneal(double start, double end, double pct) const {
  if (cos_) return end + (start - end) / 2.0 * (std::cos(std::numbers::pi * pct) + 1);
  return (end - start) * pct + start;
}

void OneCycleLR::set_momentum(size_t group, double momentum) {
  detail::set_momentum_or_beta1(optimizer_.param_groups()[group].options(), momentum);
}

std::vector<double> OneCycleLR::get_lr() {
  WICK_CHECK(last_epoch_ <= total_steps_, ValueError, "OneCycleLR.step", "Tried to step ", last_epoch_,
             " times. The specified number of total steps is ", total_steps_);
  const auto ph = phases();
  const double step = double(last_epoch_);
  std::vector<double> lrs, momentums;
  for (size_t g = 0; g < base_lrs_.size(); ++g) {
    const double lr_at[3] = {initial_lrs_[g], max_lrs_[g], min_lrs_[g]};
    double start = 0;
    for (size_t i = 0; i < ph.size(); ++i) {
      if (step <= ph[i].end_step || i + 1 == ph.size()) {
        const double pct = (step - start) / (ph[i].end_step - start);
        lrs.push_back(anneal(lr_at[ph[i].start_lr], lr_at[ph[i].end_lr], pct));
        if (cycle_momentum_) {
          const double m_at[2] = {max_momentums_[g], base_momentums_[g]};
          momentums.push_back(anneal(m_at[ph[i].start_momentum], m_at[ph[i].end_momentum], pct));
        }
        break;
      }
      start = ph[i].end_step;
    }
  }
  for (size_t g = 0; g < momentums.size(); ++g) set_momentum(g, momentums[g]);
  return lrs;
}

std::map<std::string, double> OneCycleLR::hyperparameters() const {
  return {{"total_steps", double(total_steps_)},
          {"pct_start", pct_start_},
          {"three_phase", three_phase_ ? 1.0 : 0.0},
          {"cycle_momentum", cycle_momentum_ ? 1.0 : 0.0},
          {"use_beta1", use_beta1_ ? 1.0 : 0.0}};
}

void OneCycleLR::load_hyperparameters(const std::map<std::string, double>& h, bool apply) {
  const double total = h.at("total_steps"), pct = h.at("pct_start");
  WICK_CHECK(whole(total) && total >= 1, ValueError, kOp, "the OneCycleLR state's total_steps must be a positive integer, got ",
             total);
  WICK_CHECK(pct >= 0 && pct <= 1, ValueError, kOp, "the OneCycleLR state's pct_start must lie in [0, 1], got ", pct);
  for (const char* k : {"three_phase", "cycle_momentum", "use_beta1"})
    WICK_CHECK(h.at(k) == 0 || h.at(k) == 1, ValueError, kOp, "the OneCycleLR state's ", k, " must be 0 or 1");
  WICK_CHECK(h.at("cycle_momentum") == (cycle_momentum_ ? 1 : 0) && h.at("use_beta1") == (use_beta1_ ? 1 : 0),
             ValueError, kOp, "the OneCycleLR state cycles momentum otherwise than this scheduler");
  if (apply) {
    total_steps_ = int64_t(total);
    pct_start_ = pct;
    three_phase_ = h.at("three_phase") == 1;
  }
}

std::string OneCycleLR::extra_state() const {
  return Json{{"anneal_strategy", cos_ ? "cos" : "linear"}, {"initial_lrs", initial_lrs_},
              {"max_lrs", max_lrs_},                         {"min_lrs", min_lrs_},
              {"max_momentums", max_momentums_},             {"base_momentums", base_momentums_}}
      .dump();
}

void OneCycleLR::load_extra_state(const std::string& state, bool apply) {
  const Json j = state_json(state);
  WICK_CHECK(j.contains("anneal_strategy") && j.at("anneal_strategy").is_string() &&
                 (j.at("anneal_strategy") == "cos" || j.at("anneal_strategy") == "linear"),
             ValueError, kOp, "the OneCycleLR state's anneal_strategy must be 'cos' or 'linear'");
  const size_t n = base_lrs_.size(), m = cycle_momentum_ ? n : 0;
  auto initial = number_list(j, "initial_lrs", n, "OneCycleLR"), max = number_list(j, "max_lrs", n, "OneCycleLR"),
       min = number_list(j, "min_lrs", n, "OneCycleLR");
  auto max_m = number_list(j, "max_momentums", m, "OneCycleLR"),
       base_m = number_list(j, "base_momentums", m, "OneCycleLR");
  if (!apply) return;
  cos_ = j.at("anneal_strategy") == "cos";
  initial_lrs_ = std::move(initial);
  max_lrs_ = std::move(max);
  min_lrs_ = std::move(min);
  max_momentums_ = std::move(max_m);
  base_momentums_ = std::move(base_m);
}

// ---- SequentialLR

SequentialLR::SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
                           std::vector<int64_t> milestones)
    : LRScheduler(checked_first(
          optimizer,
          [&] {
            constexpr const char* op = "SequentialLR";
            WICK_CHECK(!schedulers.empty(), ValueError, op, "SequentialLR expects at least one scheduler");
            for (size_t i = 0; i < schedulers.size(); ++i) {
              WICK_CHECK(schedulers[i] != nullptr, ValueError, op, "the scheduler at index ", i, " is null");
              WICK_CHECK(dynamic_cast<const ReduceLROnPlateau*>(schedulers[i].get()) == nullptr, ValueError, op,
                         "SequentialLR does not support `ReduceLROnPlateau` scheduler as it requires additional "
                         "kwargs to be specified when calling `step`, but got one at index ",
                         i, " in the given schedulers sequence.");
              WICK_CHECK(&schedulers[i]->optimizer_ == &optimizer, ValueError, op,
                         "SequentialLR expects all schedulers to belong to the same optimizer, but got scheduler "
                         "at index ",
                         i, " with another optimizer");
            }
            WICK_CHECK(milestones.size() + 1 == schedulers.size(), ValueError, op,
                       "Sequential Schedulers expects number of schedulers provided to be one more than the number "
                       "of milestone points, but got number of schedulers ",
                       schedulers.size(), " and the number of milestones to be equal to ", milestones.size());
          })),
      schedulers_(std::move(schedulers)),
      milestones_(std::move(milestones)) {
  // Back to the initial learning rates, and the first scheduler's epoch 0 (PyTorch undoes the
  // schedulers' initial steps and makes the first one's again): the others wait at epoch -1
  // until their milestone restarts them.
  set_lrs(base_lrs_);
  schedulers_[0]->restart();
  for (size_t i = 1; i < schedulers_.size(); ++i) schedulers_[i]->last_epoch_ = -1;
  last_lr_ = schedulers_[0]->last_lr_;
}

std::vector<double> SequentialLR::get_lr() {
  const size_t idx = size_t(std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) - milestones_.begin());
  LRScheduler& s = *schedulers_[idx];
  if (idx > 0 && milestones_[idx - 1] == last_epoch_) s.restart();
  else s.step();
  return s.last_lr_;
}

std::string SequentialLR::extra_state() const {
  Json children = Json::array();
  for (const auto& s : schedulers_) children.push_back(Json::parse(s->state_text()));
  return Json{{"milestones", milestones_}, {"_schedulers", children}}.dump();
}

void SequentialLR::load_extra_state(const std::string& state, bool apply) {
  const Json j = state_json(state);
  const std::vector<int64_t> m = milestone_list(j, "SequentialLR");
  WICK_CHECK(j.contains("_schedulers") && j.at("_schedulers").is_array() &&
                 j.at("_schedulers").size() == schedulers_.size(),
             ValueError, kOp, "the SequentialLR state must hold ", schedulers_.size(), " schedulers' states");
  WICK_CHECK(m.size() + 1 == schedulers_.size(), ValueError, kOp, "the SequentialLR state has ", m.size(),
             " milestones for ", schedulers_.size(), " schedulers");
  for (size_t i = 0; i < schedulers_.size(); ++i) schedulers_[i]->load_state_text(j.at("_schedulers")[i].dump(), apply);
  if (apply) milestones_ = m;
}

// ---- ReduceLROnPlateau

ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& optimizer, const ReduceLROnPlateauOptions& o)
    : LRScheduler(optimizer, /*records_initial_lr=*/false),
      max_mode_(o.mode() == "max"),
      abs_mode_(o.threshold_mode() == "abs"),
      factor_(o.factor()),
      threshold_(o.threshold()),
      eps_(o.eps()),
      patience_(o.patience()),
      cooldown_(o.cooldown()) {
  constexpr const char* op = "ReduceLROnPlateau";
  WICK_CHECK(o.factor() < 1.0, ValueError, op, "Factor should be < 1.0.");
  WICK_CHECK(o.mode() == "min" || o.mode() == "max", ValueError, op, "mode ", o.mode(), " is unknown!");
  WICK_CHECK(o.threshold_mode() == "rel" || o.threshold_mode() == "abs", ValueError, op, "threshold mode ",
             o.threshold_mode(), " is unknown!");
  const size_t n = base_lrs_.size();
  WICK_CHECK(o.min_lr().size() == 1 || o.min_lr().size() == n, ValueError, op, "expected ", n, " min_lrs, got ",
             o.min_lr().size());
  min_lrs_ = o.min_lr().size() == 1 ? std::vector<double>(n, o.min_lr()[0]) : o.min_lr();
  best_ = max_mode_ ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
}

bool ReduceLROnPlateau::is_better(double a, double best) const {
  if (!max_mode_ && !abs_mode_) return a < best * (1 - threshold_);
  if (!max_mode_) return a < best - threshold_;
  if (!abs_mode_) return a > best * (threshold_ + 1);
  return a > best + threshold_;
}

void ReduceLROnPlateau::step(double metric) {
  auto& groups = optimizer_.param_groups();
  if (groups.size() != min_lrs_.size()) {
    // Groups added since construction: one min_lr given for all extends to them, as PyTorch's
    // default_min_lr does; a list of them raises as PyTorch's does.
    const bool one = std::adjacent_find(min_lrs_.begin(), min_lrs_.end(), std::not_equal_to<>()) == min_lrs_.end();
    if (!one || min_lrs_.empty()) {
      detail::raise<ValueError>("ReduceLROnPlateau.step", "The number of param groups in the `optimizer` (",
                                groups.size(), ") differs from when `ReduceLROnPlateau` was initialized (",
                                min_lrs_.size(), "), usually due to a new param group being added to the optimizer");
    }
    min_lrs_.resize(groups.size(), min_lrs_.front());
  }
  ++last_epoch_;
  if (is_better(metric, best_)) {
    best_ = metric;
    num_bad_epochs_ = 0;
  } else {
    ++num_bad_epochs_;
  }
  if (cooldown_counter_ > 0) {
    --cooldown_counter_;
    num_bad_epochs_ = 0;
  }
  if (num_bad_epochs_ > patience_) {
    for (size_t i = 0; i < groups.size(); ++i) {
      const double old_lr = groups[i].options().get_lr();
      const double new_lr = std::max(old_lr * factor_, min_lrs_[i]);
      if (old_lr - new_lr > eps_) groups[i].options().set_lr(new_lr);
    }
    cooldown_counter_ = cooldown_;
    num_bad_epochs_ = 0;
  }
  last_lr_ = current_lrs();
}

std::vector<double> ReduceLROnPlateau::get_lr() {
  detail::raise<TypeError>("ReduceLROnPlateau.step", "ReduceLROnPlateau steps on a metric: call step(metric)");
}

std::map<std::string, double> ReduceLROnPlateau::hyperparameters() const {
  return {{"factor", factor_},
          {"patience", double(patience_)},
          {"threshold", threshold_},
          {"cooldown", double(cooldown_)},
          {"eps", eps_},
          {"num_bad_epochs", double(num_bad_epochs_)},
          {"cooldown_counter", double(cooldown_counter_)}};
}

void ReduceLROnPlateau::load_hyperparameters(const std::map<std::string, double>& h, bool apply) {
  WICK_CHECK(h.at("factor") < 1.0 && std::isfinite(h.at("factor")), ValueError, kOp,
             "the ReduceLROnPlateau state's factor must be < 1.0, got ", h.at("factor"));
  for (const char* k : {"patience", "cooldown", "num_bad_epochs", "cooldown_counter"})
    WICK_CHECK(whole(h.at(k)) && h.at(k) >= 0, ValueError, kOp, "the ReduceLROnPlateau state's ", k,
               " must be a non-negative integer, got ", h.at(k));
  WICK_CHECK(std::isfinite(h.at("threshold")) && std::isfinite(h.at("eps")), ValueError, kOp,
             "the ReduceLROnPlateau state's threshold and eps must be finite");
  if (!apply) return;
  factor_ = h.at("factor");
  patience_ = int64_t(h.at("patience"));
  threshold_ = h.at("threshold");
  cooldown_ = int64_t(h.at("cooldown"));
  eps_ = h.at("eps");
  num_bad_epochs_ = int64_t(h.at("num_bad_epochs"));
  cooldown_counter_ = int64_t(h.at("cooldown_counter"));
}

// best is a number, or "inf" / "-inf" before any metric (JSON has no infinities).
std::string ReduceLROnPlateau::extra_state() const {
  Json best = std::isfinite(best_) ? Json(best_) : Json(best_ > 0 ? "inf" : best_ < 0 ? "-inf" : "nan");
  return Json{{"mode", max_mode_ ? "max" : "min"},
              {"threshold_mode", abs_mode_ ? "abs" : "rel"},
              {"min_lrs", min_lrs_},
              {"best", best}}
      .dump();
}

void ReduceLROnPlateau::load_extra_state(const std::string& state, bool apply) {
  const Json j = state_json(state);
  auto text = [&](const char* key, const char* a, const char* b) {
    WICK_CHECK(j.contains(key) && j.at(key).is_string() && (j.at(key) == a || j.at(key) == b), ValueError, kOp,
               "the ReduceLROnPlateau state's ", key, " must be '", a, "' or '", b, "'");
    return j.at(key).get<std::string>() == b;
  };
  const bool max_mode = text("mode", "min", "max"), abs_mode = text("threshold_mode", "rel", "abs");
  std::vector<double> min_lrs = number_list(j, "min_lrs", base_lrs_.size(), "ReduceLROnPlateau");
  WICK_CHECK(j.contains("best"), ValueError, kOp, "the ReduceLROnPlateau state has no 'best'");
  const Json& b = j.at("best");
  double best = 0;
  if (b.is_number()) best = b.get<double>();
  else if (b == "inf") best = std::numeric_limits<double>::infinity();
  else if (b == "-inf") best = -std::numeric_limits<double>::infinity();
  else if (b == "nan") best = std::numeric_limits<double>::quiet_NaN();
  else detail::raise<ValueError>(kOp, "the ReduceLROnPlateau state's best must be a number, 'inf' or '-inf'");
  if (!apply) return;
  max_mode_ = max_mode;
  abs_mode_ = abs_mode;
  min_lrs_ = std::move(min_lrs);
  best_ = best;
}

}  // namespace wick::optim
