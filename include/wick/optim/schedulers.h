// Learning-rate schedulers: call step() once per epoch, after the optimizer's step().
//
//   wick::optim::StepLR sched(opt, /*step_size=*/30, /*gamma=*/0.1);
//   wick::optim::CosineAnnealingLR cos(opt, /*T_max=*/100, /*eta_min=*/0.0);
#pragma once

#include <map>
#include <string>
#include <vector>

#include "wick/optim/optimizer.h"

namespace wick::optim {

class LRScheduler {
 public:
  explicit LRScheduler(Optimizer& optimizer);
  virtual ~LRScheduler() = default;
  // Advances one epoch and sets each group's learning rate.
  void step();
  int64_t last_epoch() const { return last_epoch_; }
  std::vector<double> get_last_lr() const { return last_lr_; }
  // PyTorch's state_dict: metadata "scheduler" holds JSON {"type", "last_epoch", "base_lrs",
  // "last_lr", and the scheduler's own hyperparameters (StepLR: step_size, gamma;
  // CosineAnnealingLR: T_max, eta_min)}; no tensors.
  Checkpoint state_dict() const;
  // Takes a state_dict of a scheduler of the same type over as many groups. Everything is
  // checked first: ValueError "[load_state_dict] ..." leaves the scheduler as it was. The
  // optimizer's learning rates are the optimizer's state (its load_state_dict).
  void load_state_dict(const Checkpoint& state);

 protected:
  // The scheduler's name and own hyperparameters, for state_dict.
  virtual const char* type_name() const { return "LRScheduler"; }
  virtual std::map<std::string, double> hyperparameters() const { return {}; }
  // Throws "[load_state_dict] ..." unless h holds valid hyperparameters of this scheduler;
  // then, with apply, takes them.
  virtual void load_hyperparameters(const std::map<std::string, double>& h, bool apply) {}

  // The learning rates for epoch last_epoch_ (after it was advanced).
  virtual std::vector<double> get_lr() = 0;
  std::vector<double> current_lrs() const;

  Optimizer& optimizer_;
  std::vector<double> base_lrs_;
  std::vector<double> last_lr_;
  int64_t last_epoch_ = 0;
};

// lr = base_lr * gamma^(epoch / step_size).
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);

 protected:
  std::vector<double> get_lr() override;
  const char* type_name() const override { return "StepLR"; }
  std::map<std::string, double> hyperparameters() const override;
  void load_hyperparameters(const std::map<std::string, double>& h, bool apply) override;

 private:
  int64_t step_size_;
  double gamma_;
};

// lr = eta_min + (base_lr - eta_min) (1 + cos(pi epoch / T_max)) / 2, PyTorch's recursive form.
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0);

 protected:
  std::vector<double> get_lr() override;
  const char* type_name() const override { return "CosineAnnealingLR"; }
  std::map<std::string, double> hyperparameters() const override;
  void load_hyperparameters(const std::map<std::string, double>& h, bool apply) override;

 private:
  int64_t t_max_;
  double eta_min_;
};

}  // namespace wick::optim
