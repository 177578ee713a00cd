// StepLR and CosineAnnealingLR, with PyTorch's closed and recursive forms.
#include "wick/optim/schedulers.h"

#include <cmath>
#include <numbers>

#include <nlohmann/json.hpp>

namespace wick::optim {

LRScheduler::LRScheduler(Optimizer& optimizer) : optimizer_(optimizer) {
  base_lrs_ = current_lrs();
  last_lr_ = base_lrs_;
}

std::vector<double> LRScheduler::current_lrs() const {
  std::vector<double> lrs;
  for (const auto& g : optimizer_.param_groups()) lrs.push_back(g.options().get_lr());
  return lrs;
}

void LRScheduler::step() {
  ++last_epoch_;
  last_lr_ = get_lr();
  auto& groups = optimizer_.param_groups();
  for (size_t i = 0; i < groups.size() && i < last_lr_.size(); ++i) groups[i].options().set_lr(last_lr_[i]);
}

namespace {
using Json = nlohmann::json;
constexpr const char* kOp = "load_state_dict";

// A JSON array of n finite numbers.
std::vector<double> lr_list(const Json& j, const char* key, size_t n) {
  WICK_CHECK(j.contains(key) && j.at(key).is_array(), ValueError, kOp, "the scheduler state has no '", key,
             "' list");
  const Json& a = j.at(key);
  WICK_CHECK(a.size() == n, ValueError, kOp, "the scheduler state's '", key, "' has ", a.size(),
             " learning rates, the optimizer has ", n, " parameter groups");
  std::vector<double> out;
  for (const Json& v : a) {
    WICK_CHECK(v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() >= 0, ValueError, kOp,
               "the scheduler state's '", key, "' holds ", v.dump(), ", not a finite non-negative learning rate");
    out.push_back(v.get<double>());
  }
  return out;
}
}  // namespace

Checkpoint LRScheduler::state_dict() const {
  Json j = {{"type", type_name()}, {"last_epoch", last_epoch_}, {"base_lrs", base_lrs_}, {"last_lr", last_lr_}};
  for (const auto& [k, v] : hyperparameters()) j[k] = v;
  Checkpoint out;
  out.metadata["scheduler"] = j.dump();
  return out;
}

void LRScheduler::load_state_dict(const Checkpoint& state) {
  auto it = state.metadata.find("scheduler");
  WICK_CHECK(it != state.metadata.end(), ValueError, kOp,
             "the state has no 'scheduler' metadata (is it a scheduler's state_dict, or a checkpoint without its "
             "prefix?)");
  Json j;
  try {
    j = Json::parse(it->second);
  } catch (const Json::exception& e) {
    detail::raise<ValueError>(kOp, "the 'scheduler' metadata is not valid JSON (", e.what(), ")");
  }
  WICK_CHECK(j.is_object(), ValueError, kOp, "the 'scheduler' metadata must be a JSON object");
  WICK_CHECK(j.contains("type") && j.at("type").is_string(), ValueError, kOp, "the scheduler state has no 'type'");
  WICK_CHECK(j.at("type").get<std::string>() == type_name(), ValueError, kOp, "the state is a ",
             j.at("type").get<std::string>(), "'s, this scheduler is a ", type_name());
  WICK_CHECK(j.contains("last_epoch") && j.at("last_epoch").is_number_integer() &&
                 j.at("last_epoch").get<int64_t>() >= 0,
             ValueError, kOp, "the scheduler state's 'last_epoch' must be a non-negative integer");
  const size_t n = optimizer_.param_groups().size();
  std::vector<double> base = lr_list(j, "base_lrs", n), last = lr_list(j, "last_lr", n);
  std::map<std::string, double> h;
  for (const auto& [k, unused] : hyperparameters()) {
    WICK_CHECK(j.contains(k) && j.at(k).is_number(), ValueError, kOp, "the scheduler state has no number '", k,
               "'");
    h[k] = j.at(k).get<double>();
  }
  load_hyperparameters(h, false);
  // Nothing below throws.
  load_hyperparameters(h, true);
  last_epoch_ = j.at("last_epoch").get<int64_t>();
  base_lrs_ = std::move(base);
  last_lr_ = std::move(last);
}

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  WICK_CHECK(step_size > 0, ValueError, "StepLR", "step_size must be positive, got ", step_size);
}

std::vector<double> StepLR::get_lr() {
  // Recursive, as PyTorch: a change made by hand to a group's lr carries on.
  std::vector<double> lrs = current_lrs();
  if (last_epoch_ % step_size_ == 0)
    for (double& lr : lrs) lr *= gamma_;
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
    : LRScheduler(optimizer), t_max_(T_max), eta_min_(eta_min) {
  WICK_CHECK(T_max > 0, ValueError, "CosineAnnealingLR", "T_max must be positive, got ", T_max);
}

std::vector<double> CosineAnnealingLR::get_lr() {
  const double pi = std::numbers::pi;
  const auto t = double(last_epoch_), T = double(t_max_);
  std::vector<double> lrs = current_lrs();
  for (size_t i = 0; i < lrs.size(); ++i) {
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
