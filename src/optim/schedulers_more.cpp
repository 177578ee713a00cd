// MultiplicativeLR, ConstantLR, PolynomialLR, CyclicLR, CosineAnnealingWarmRestarts and
// ChainedScheduler, with PyTorch's recursive forms (get_lr) and closed forms (closed_form_lr,
// for SequentialLR's restarts); their states join LRScheduler's state_dict.
#include "wick/optim/schedulers_more.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include <nlohmann/json.hpp>

#include "optim/optimizer_internal.h"

namespace wick::optim {

namespace {
using Json = nlohmann::json;
constexpr const char* kOp = "load_state_dict";

// Runs a constructor's checks (and any change they make ready) before the base records each
// group's initial_lr: a scheduler refused for its arguments leaves the optimizer as it was.
template <class Check>
Optimizer& checked_first(Optimizer& optimizer, Check&& check) {
  check();
  return optimizer;
}

bool whole(double x) { return std::isfinite(x) && x == std::floor(x) && std::abs(x) <= 9.0e15; }

// Each group's value: one for all, or one per group (PyTorch's _format_param).
std::vector<double> per_group(const std::vector<double>& v, size_t groups, const char* op, const char* name) {
  if (v.size() == 1) return std::vector<double>(groups, v[0]);
  WICK_CHECK(v.size() == groups, ValueError, op, name, " must have the same length as optimizer.param_groups. ",
             name, " has ", v.size(), " values, param_groups has ", groups, ".");
  return v;
}

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
}  // namespace

// ---- MultiplicativeLR

MultiplicativeLR::MultiplicativeLR(Optimizer& optimizer, Lambda lr_lambda)
    : MultiplicativeLR(optimizer, std::vector<Lambda>(optimizer.param_groups().size(), lr_lambda)) {}

MultiplicativeLR::MultiplicativeLR(Optimizer& optimizer, std::vector<Lambda> lr_lambdas)
    : LRScheduler(checked_first(optimizer,
                                [&] {
                                  const size_t n = optimizer.param_groups().size();
                                  WICK_CHECK(lr_lambdas.size() == n, ValueError, "MultiplicativeLR", "Expected ",
                                             n, " lr_lambdas, but got ", lr_lambdas.size());
                                  for (const Lambda& f : lr_lambdas)
                                    WICK_CHECK(bool(f), ValueError, "MultiplicativeLR", "an lr_lambda is empty");
                                })),
      lambdas_(std::move(lr_lambdas)) {}

std::vector<double> MultiplicativeLR::get_lr() {
  std::vector<double> lrs = current_lrs();
  if (last_epoch_ > 0) {
    // zip(lr_lambdas, param_groups): a group added later keeps its lr.
    lrs.resize(std::min(lrs.size(), lambdas_.size()));
    for (size_t i = 0; i < lrs.size(); ++i) lrs[i] *= lambdas_[i](last_epoch_);
  }
  return lrs;
}

// ---- ConstantLR

ConstantLR::ConstantLR(Optimizer& optimizer, double factor, int64_t total_iters)
    : LRScheduler(checked_first(optimizer,
                                [&] {
                                  WICK_CHECK(factor >= 0 && factor <= 1, ValueError, "ConstantLR",
                                             "Constant multiplicative factor expected to be between 0 and 1.");
                                  WICK_CHECK(total_iters >= 0, ValueError, "ConstantLR",
                                             "total_iters must be non-negative, got ", total_iters);
                                })),
      factor_(factor), total_iters_(total_iters) {
  initial_step();
}

std::vector<double> ConstantLR::get_lr() {
  std::vector<double> lrs = current_lrs();
  if (last_epoch_ == 0) {
    for (double& lr : lrs) lr *= factor_;
  } else if (last_epoch_ == total_iters_) {
    for (double& lr : lrs) lr *= 1.0 / factor_;
  }
  return lrs;
}

std::vector<double> ConstantLR::closed_form_lr() {
  std::vector<double> lrs = base_lrs_;
  const double f = factor_ + double(last_epoch_ >= total_iters_) * (1 - factor_);
  for (double& lr : lrs) lr *= f;
  return lrs;
}

std::map<std::string, double> ConstantLR::hyperparameters() const {
  return {{"factor", factor_}, {"total_iters", double(total_iters_)}};
}

void ConstantLR::load_hyperparameters(const std::map<std::string, double>& h, bool apply) {
  const double f = h.at("factor"), n = h.at("total_iters");
  WICK_CHECK(f >= 0 && f <= 1, ValueError, kOp, "the ConstantLR state's factor must lie in [0, 1], got ", f);
  WICK_CHECK(whole(n) && n >= 0, ValueError, kOp,
             "the ConstantLR state's total_iters must be a non-negative integer, got ", n);
  if (apply) {
    factor_ = f;
    total_iters_ = int64_t(n);
  }
}

// ---- PolynomialLR

PolynomialLR::PolynomialLR(Optimizer& optimizer, int64_t total_iters, double power)
    : LRScheduler(checked_first(optimizer,
                                [&] {
                                  WICK_CHECK(total_iters >= 0, ValueError, "PolynomialLR",
                                             "total_iters must be non-negative, got ", total_iters);
                                })),
      total_iters_(total_iters), power_(power) {}

std::vector<double> PolynomialLR::get_lr() {
  std::vector<double> lrs = current_lrs();
  if (last_epoch_ == 0 || last_epoch_ > total_iters_) return lrs;
  const double t = double(last_epoch_), n = double(total_iters_);
  const double f = std::pow((1.0 - t / n) / (1.0 - (t - 1) / n), power_);
  for (double& lr : lrs) lr *= f;
  return lrs;
}

std::vector<double> PolynomialLR::closed_form_lr() {
  // Python's min(total_iters, epoch) / total_iters raises for total_iters 0.
  WICK_CHECK(total_iters_ > 0, ValueError, "PolynomialLR", "float division by zero (total_iters is 0)");
  std::vector<double> lrs = base_lrs_;
  const double n = double(total_iters_);
  for (double& lr : lrs) lr *= std::pow(1.0 - double(std::min(total_iters_, last_epoch_)) / n, power_);
  return lrs;
}

std::map<std::string, double> PolynomialLR::hyperparameters() const {
  return {{"total_iters", double(total_iters_)}, {"power", power_}};
}

void PolynomialLR::load_hyperparameters(const std::map<std::string, double>& h, bool apply) {
  const double n = h.at("total_iters"), power = h.at("power");
  WICK_CHECK(whole(n) && n >= 0, ValueError, kOp,
             "the PolynomialLR state's total_iters must be a non-negative integer, got ", n);
  WICK_CHECK(std::isfinite(power), ValueError, kOp, "the PolynomialLR state's power must be finite, got ", power);
  if (apply) {
    total_iters_ = int64_t(n);
    power_ = power;
  }
}

// ---- CyclicLR

CyclicLR::CyclicLR(Optimizer& optimizer, double base_lr, double max_lr, const CyclicLROptions& options)
    : CyclicLR(optimizer, std::vector<double>{base_lr}, std::vector<double>{max_lr}, options) {}

CyclicLR::CyclicLR(Optimizer& optimizer, std::vector<double> base_lr, std::vector<double> max_lr,
                   const CyclicLROptions& o)
    : LRScheduler(checked_first(
          optimizer,
          [&] {
            constexpr const char* op = "CyclicLR";
            const size_t n = optimizer.param_groups().size();
            base_lr = per_group(base_lr, n, op, "base_lr");
            max_lr = per_group(max_lr, n, op, "max_lr");
            WICK_CHECK(o.step_size_up() > 0 && (!o.step_size_down() || *o.step_size_down() >= 0), ValueError, op,
                       "step_size_up must be positive and step_size_down non-negative");
            WICK_CHECK(o.scale_fn() || o.mode() == "triangular" || o.mode() == "triangular2" ||
                           o.mode() == "exp_range",
                       ValueError, op, "mode is invalid and scale_fn is None");
            WICK_CHECK(!o.scale_fn() || o.scale_mode() == "cycle" || o.scale_mode() == "iterations", ValueError, op,
                       "scale_mode must be 'cycle' or 'iterations', got ", o.scale_mode());
            if (o.cycle_momentum()) {
              const OptimizerOptions& d = optimizer.defaults();
              WICK_CHECK(detail::has_betas(d) || detail::has_momentum(d), ValueError, op,
                         "optimizer must support momentum or beta1 with `cycle_momentum` option enabled");
              (void)per_group(o.base_momentum(), n, op, "base_momentum");
              (void)per_group(o.max_momentum(), n, op, "max_momentum");
            }
            // Checked: the groups start at base_lr (and max_momentum) before the base records
            // their initial_lr, as PyTorch's.
            auto& groups = optimizer.param_groups();
            for (size_t i = 0; i < n; ++i) groups[i].options().set_lr(base_lr[i]);
          })),
      mode_(o.mode()), gamma_(o.gamma()), scale_fn_(o.scale_fn()), cycle_momentum_(o.cycle_momentum()) {
  const size_t n = optimizer.param_groups().size();
  const double up = o.step_size_up(), down = o.step_size_down() ? *o.step_size_down() : up;
  total_size_ = up + down;
  step_ratio_ = up / total_size_;
  cycle_scale_ = scale_fn_ ? o.scale_mode() == "cycle" : mode_ != "exp_range";
  max_lrs_ = max_lr;
  if (cycle_momentum_) {
    use_beta1_ = detail::has_betas(optimizer.defaults());
    base_momentums_ = per_group(o.base_momentum(), n, "CyclicLR", "base_momentum");
    max_momentums_ = per_group(o.max_momentum(), n, "CyclicLR", "max_momentum");
    for (size_t i = 0; i < n; ++i)
      detail::set_momentum_or_beta1(optimizer.param_groups()[i].options(), max_momentums_[i]);
  }
  base_lrs_ = base_lr;
  initial_step();
}

double CyclicLR::scale(double x) const {
  if (scale_fn_) return scale_fn_(x);
  if (mode_ == "triangular") return 1.0;
  if (mode_ == "triangular2") return 1 / std::pow(2.0, x - 1);
  return std::pow(gamma_, x);
}

std::vector<double> CyclicLR::get_lr() {
  const double e = double(last_epoch_);
  const double cycle = std::floor(1 + e / total_size_);
  const double x = 1.0 + e / total_size_ - cycle;
  const double factor = x <= step_ratio_ ? x / step_ratio_ : (x - 1) / (step_ratio_ - 1);
  const double s = scale(cycle_scale_ ? cycle : e);
  std::vector<double> lrs;
  for (size_t i = 0; i < base_lrs_.size(); ++i) lrs.push_back(base_lrs_[i] + (max_lrs_[i] - base_lrs_[i]) * factor * s);
  if (cycle_momentum_) {
    auto& groups = optimizer_.param_groups();
    for (size_t i = 0; i < base_momentums_.size() && i < groups.size(); ++i)
      detail::set_momentum_or_beta1(groups[i].options(),
                                    max_momentums_[i] - (max_momentums_[i] - base_momentums_[i]) * factor * s);
  }
  return lrs;
}

std::map<std::string, double> CyclicLR::hyperparameters() const {
  return {{"total_size", total_size_},
          {"step_ratio", step_ratio_},
          {"gamma", gamma_},
          {"cycle_momentum", cycle_momentum_ ? 1.0 : 0.0},
          {"use_beta1", use_beta1_ ? 1.0 : 0.0}};
}

void CyclicLR::load_hyperparameters(const std::map<std::string, double>& h, bool apply) {
  const double total = h.at("total_size"), ratio = h.at("step_ratio"), gamma = h.at("gamma");
  WICK_CHECK(std::isfinite(total) && total > 0, ValueError, kOp,
             "the CyclicLR state's total_size must be positive, got ", total);
  WICK_CHECK(ratio > 0 && ratio <= 1, ValueError, kOp, "the CyclicLR state's step_ratio must lie in (0, 1], got ",
             ratio);
  WICK_CHECK(std::isfinite(gamma), ValueError, kOp, "the CyclicLR state's gamma must be finite, got ", gamma);
  WICK_CHECK(h.at("cycle_momentum") == (cycle_momentum_ ? 1 : 0) && h.at("use_beta1") == (use_beta1_ ? 1 : 0),
             ValueError, kOp, "the CyclicLR state cycles momentum otherwise than this scheduler");
  if (apply) {
    total_size_ = total;
    step_ratio_ = ratio;
    gamma_ = gamma;
  }
}

std::string CyclicLR::extra_state() const {
  return Json{{"mode", mode_},
              {"scale_mode", cycle_scale_ ? "cycle" : "iterations"},
              {"max_lrs", max_lrs_},
              {"base_momentums", base_momentums_},
              {"max_momentums", max_momentums_}}
      .dump();
}

void CyclicLR::load_extra_state(const std::string& state, bool apply) {
  const Json j = Json::parse(state);
  auto text = [&](const char* key) {
    WICK_CHECK(j.contains(key) && j.at(key).is_string(), ValueError, kOp, "the CyclicLR state has no '", key, "'");
    return j.at(key).get<std::string>();
  };
  const std::string mode = text("mode"), scale_mode = text("scale_mode");
  WICK_CHECK(scale_fn_ || mode == "triangular" || mode == "triangular2" || mode == "exp_range", ValueError, kOp,
             "the CyclicLR state's mode '", mode, "' is invalid and this scheduler has no scale_fn");
  WICK_CHECK(scale_mode == "cycle" || scale_mode == "iterations", ValueError, kOp,
             "the CyclicLR state's scale_mode must be 'cycle' or 'iterations'");
  const size_t n = base_lrs_.size(), m = cycle_momentum_ ? n : 0;
  auto max = number_list(j, "max_lrs", n, "CyclicLR");
  auto base_m = number_list(j, "base_momentums", m, "CyclicLR"), max_m = number_list(j, "max_momentums", m, "CyclicLR");
  if (!apply) return;
  mode_ = mode;
  cycle_scale_ = scale_mode == "cycle";
  max_lrs_ = std::move(max);
  base_momentums_ = std::move(base_m);
  max_momentums_ = std::move(max_m);
}

// ---- CosineAnnealingWarmRestarts

CosineAnnealingWarmRestarts::CosineAnnealingWarmRestarts(Optimizer& optimizer, int64_t T_0, int64_t T_mult,
                                                         double eta_min)
    : LRScheduler(checked_first(optimizer,
                                [&] {
                                  constexpr const char* op = "CosineAnnealingWarmRestarts";
                                  WICK_CHECK(T_0 > 0, ValueError, op, "Expected positive integer T_0, but got ", T_0);
                                  WICK_CHECK(T_mult >= 1, ValueError, op, "Expected integer T_mult >= 1, but got ",
                                             T_mult);
                                  WICK_CHECK(std::isfinite(eta_min), ValueError, op,
                                             "Expected finite eta_min, but got ", eta_min);
                                })),
      t_0_(T_0), t_mult_(T_mult), t_i_(T_0), eta_min_(eta_min) {
  initial_step();
}

std::vector<double> CosineAnnealingWarmRestarts::lrs_now() const {
  std::vector<double> lrs = base_lrs_;
  const double c = (1 + std::cos(std::numbers::pi * t_cur_ / double(t_i_))) / 2;
  for (double& lr : lrs) lr = eta_min_ + (lr - eta_min_) * c;
  return lrs;
}

std::vector<double> CosineAnnealingWarmRestarts::get_lr() {
  // step(): one epoch on; initial_step() (last_epoch 0): the start of the first cycle.
  if (last_epoch_ > 0) {
    t_cur_ += 1;
    if (t_cur_ >= double(t_i_)) {
      t_cur_ -= double(t_i_);
      t_i_ *= t_mult_;
    }
  }
  return lrs_now();
}

void CosineAnnealingWarmRestarts::seek(double epoch) {
  const double t0 = double(t_0_), m = double(t_mult_);
  if (epoch >= t0) {
    if (t_mult_ == 1) {
      t_cur_ = std::fmod(epoch, t0);
    } else {
      const auto n = int64_t(std::log(epoch / t0 * (m - 1) + 1) / std::log(m));
      t_cur_ = epoch - t0 * (std::pow(m, double(n)) - 1) / (m - 1);
      t_i_ = t_0_ * int64_t(std::llround(std::pow(m, double(n))));
    }
  } else {
    t_i_ = t_0_;
    t_cur_ = epoch;
  }
}

std::vector<double> CosineAnnealingWarmRestarts::closed_form_lr() {
  seek(double(last_epoch_));
  return lrs_now();
}

void CosineAnnealingWarmRestarts::step(double epoch) {
  WICK_CHECK(epoch >= 0 && std::isfinite(epoch), ValueError, "CosineAnnealingWarmRestarts.step",
             "Expected non-negative epoch, but got ", epoch);
  seek(epoch);
  last_epoch_ = int64_t(std::floor(epoch));
  last_lr_ = lrs_now();
  set_lrs(last_lr_);
}

std::map<std::string, double> CosineAnnealingWarmRestarts::hyperparameters() const {
  return {{"T_0", double(t_0_)}, {"T_i", double(t_i_)}, {"T_mult", double(t_mult_)}, {"eta_min", eta_min_},
          {"T_cur", t_cur_}};
}

void CosineAnnealingWarmRestarts::load_hyperparameters(const std::map<std::string, double>& h, bool apply) {
  const double t0 = h.at("T_0"), ti = h.at("T_i"), tm = h.at("T_mult"), eta_min = h.at("eta_min"),
               tc = h.at("T_cur");
  WICK_CHECK(whole(t0) && t0 >= 1 && whole(ti) && ti >= 1 && whole(tm) && tm >= 1, ValueError, kOp,
             "the CosineAnnealingWarmRestarts state's T_0, T_i and T_mult must be positive integers");
  WICK_CHECK(std::isfinite(eta_min) && std::isfinite(tc), ValueError, kOp,
             "the CosineAnnealingWarmRestarts state's eta_min and T_cur must be finite");
  if (apply) {
    t_0_ = int64_t(t0);
    t_i_ = int64_t(ti);
    t_mult_ = int64_t(tm);
    eta_min_ = eta_min;
    t_cur_ = tc;
  }
}

// ---- ChainedScheduler

Optimizer& ChainedScheduler::checked_optimizer(const std::vector<std::shared_ptr<LRScheduler>>& schedulers,
                                               Optimizer* optimizer) {
  constexpr const char* op = "ChainedScheduler";
  WICK_CHECK(!schedulers.empty(), ValueError, op,
             "ChainedScheduler expects at least one scheduler to be chained, but got no scheduler.");
  for (size_t i = 0; i < schedulers.size(); ++i)
    WICK_CHECK(schedulers[i] != nullptr, ValueError, op, "the scheduler at index ", i, " is null");
  Optimizer& opt = optimizer ? *optimizer : schedulers[0]->optimizer_;
  for (size_t i = 0; i < schedulers.size(); ++i)
    WICK_CHECK(&schedulers[i]->optimizer_ == &opt, ValueError, op,
               "ChainedScheduler expects all schedulers to belong to the same optimizer, but got scheduler at "
               "index ",
               i, " with another optimizer");
  return opt;
}

ChainedScheduler::ChainedScheduler(std::vector<std::shared_ptr<LRScheduler>> schedulers)
    : LRScheduler(checked_optimizer(schedulers, nullptr)), schedulers_(std::move(schedulers)) {}

ChainedScheduler::ChainedScheduler(std::vector<std::shared_ptr<LRScheduler>> schedulers, Optimizer& optimizer)
    : LRScheduler(checked_optimizer(schedulers, &optimizer)), schedulers_(std::move(schedulers)) {}

std::vector<double> ChainedScheduler::get_lr() {
  for (const auto& s : schedulers_) s->step();
  return current_lrs();
}

std::string ChainedScheduler::extra_state() const {
  Json children = Json::array();
  for (const auto& s : schedulers_) children.push_back(Json::parse(s->state_text()));
  return Json{{"_schedulers", children}}.dump();
}

void ChainedScheduler::load_extra_state(const std::string& state, bool apply) {
  const Json j = Json::parse(state);
  WICK_CHECK(j.contains("_schedulers") && j.at("_schedulers").is_array() &&
                 j.at("_schedulers").size() == schedulers_.size(),
             ValueError, kOp, "the ChainedScheduler state must hold ", schedulers_.size(), " schedulers' states");
  for (size_t i = 0; i < schedulers_.size(); ++i) schedulers_[i]->load_state_text(j.at("_schedulers")[i].dump(), apply);
}

}  // namespace wick::optim
