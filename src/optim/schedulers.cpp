// StepLR and CosineAnnealingLR, with PyTorch's closed and recursive forms.
#include "wick/optim/schedulers.h"

#include <cmath>
#include <numbers>

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
