// Learning-rate schedulers, as torch.optim.lr_scheduler: call step() once per epoch (or
// batch, for OneCycleLR), after the optimizer's step(); ReduceLROnPlateau's step takes the
// metric it watches.
//
//   wick::optim::StepLR sched(opt, /*step_size=*/30, /*gamma=*/0.1);
//   wick::optim::CosineAnnealingLR cos(opt, /*T_max=*/100, /*eta_min=*/0.0);
//   wick::optim::OneCycleLR one(opt, /*max_lr=*/0.1, wick::optim::OneCycleLROptions().total_steps(1000));
//   wick::optim::ReduceLROnPlateau plateau(opt, wick::optim::ReduceLROnPlateauOptions().patience(5));
//   plateau.step(val_loss);
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "wick/nn/options.h"
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
  // CosineAnnealingLR: T_max, eta_min; MultiStepLR: milestones, gamma; ExponentialLR: gamma;
  // LinearLR: start_factor, end_factor, total_iters; OneCycleLR: total_steps, the phases'
  // bounds, anneal_strategy, ...; SequentialLR: milestones and its schedulers' states;
  // ReduceLROnPlateau: its options, best, num_bad_epochs, cooldown_counter)}; no tensors.
  // LambdaLR's functions are not saved (PyTorch saves none that are plain functions).
  Checkpoint state_dict() const;
  // Takes a state_dict of a scheduler of the same type over as many groups. Everything is
  // checked first: ValueError "[load_state_dict] ..." leaves the scheduler as it was. The
  // optimizer's learning rates are the optimizer's state (its load_state_dict).
  void load_state_dict(const Checkpoint& state);

 protected:
  // records_initial_lr false: the groups' initial_lr is left as it is (and base_lrs_ are the
  // groups' initial_lr where set, else their lr), as PyTorch's ReduceLROnPlateau, which sets none.
  LRScheduler(Optimizer& optimizer, bool records_initial_lr);
  // The scheduler's name and own hyperparameters, for state_dict.
  virtual const char* type_name() const { return "LRScheduler"; }
  virtual std::map<std::string, double> hyperparameters() const { return {}; }
  // Throws "[load_state_dict] ..." unless h holds valid hyperparameters of this scheduler;
  // then, with apply, takes them.
  virtual void load_hyperparameters(const std::map<std::string, double>& /*h*/, bool /*apply*/) {}
  // State that is not a number: the text of a JSON object whose entries join state_dict's; and
  // its reader, given the whole state's JSON text (throws "[load_state_dict] ..." unless valid;
  // then, with apply, takes it).
  virtual std::string extra_state() const { return "{}"; }
  virtual void load_extra_state(const std::string& /*state*/, bool /*apply*/) {}

  // The learning rates for epoch last_epoch_ (after it was advanced).
  virtual std::vector<double> get_lr() = 0;
  // The learning rates of epoch last_epoch_ from base_lrs_ alone (PyTorch's
  // _get_closed_form_lr; get_lr() where that is a closed form already).
  virtual std::vector<double> closed_form_lr() { return get_lr(); }
  // PyTorch's initial step at construction: epoch 0's get_lr() written to the groups.
  void initial_step();
  // Epoch 0 again, its learning rates in closed form (PyTorch's step(0), which SequentialLR
  // makes at each milestone).
  void restart();
  std::vector<double> current_lrs() const;
  void set_lrs(const std::vector<double>& lrs);

  Optimizer& optimizer_;
  std::vector<double> base_lrs_;
  std::vector<double> last_lr_;
  int64_t last_epoch_ = 0;

 private:
  // The state's JSON text, and its reader (checks everything; with apply, takes it).
  std::string state_text() const;
  void load_state_text(const std::string& text, bool apply);

  friend class SequentialLR;
  friend class ChainedScheduler;
};

// lr = base_lr * gamma^(epoch / step_size).
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);

 protected:
  std::vector<double> get_lr() override;
  std::vector<double> closed_form_lr() override;
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
  std::vector<double> closed_form_lr() override;
  const char* type_name() const override { return "CosineAnnealingLR"; }
  std::map<std::string, double> hyperparameters() const override;
  void load_hyperparameters(const std::map<std::string, double>& h, bool apply) override;

 private:
  int64_t t_max_;
  double eta_min_;
};

// lr = base_lr * lr_lambda(epoch), one function for every group or one per group.
class LambdaLR : public LRScheduler {
 public:
  using Lambda = std::function<double(int64_t)>;
  LambdaLR(Optimizer& optimizer, Lambda lr_lambda);
  LambdaLR(Optimizer& optimizer, std::vector<Lambda> lr_lambdas);

 protected:
  std::vector<double> get_lr() override;
  const char* type_name() const override { return "LambdaLR"; }

 private:
  std::vector<Lambda> lambdas_;
};

// lr = base_lr * gamma^(number of milestones <= epoch); milestones may repeat (each counts).
class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma = 0.1);

 protected:
  std::vector<double> get_lr() override;
  std::vector<double> closed_form_lr() override;
  const char* type_name() const override { return "MultiStepLR"; }
  std::map<std::string, double> hyperparameters() const override { return {{"gamma", gamma_}}; }
  void load_hyperparameters(const std::map<std::string, double>& h, bool apply) override;
  std::string extra_state() const override;
  void load_extra_state(const std::string& state, bool apply) override;

 private:
  std::vector<int64_t> milestones_;  // sorted
  double gamma_;
};

// lr = base_lr * gamma^epoch.
class ExponentialLR : public LRScheduler {
 public:
  ExponentialLR(Optimizer& optimizer, double gamma);

 protected:
  std::vector<double> get_lr() override;
  std::vector<double> closed_form_lr() override;
  const char* type_name() const override { return "ExponentialLR"; }
  std::map<std::string, double> hyperparameters() const override { return {{"gamma", gamma_}}; }
  void load_hyperparameters(const std::map<std::string, double>& h, bool apply) override;

 private:
  double gamma_;
};

// lr = base_lr * (start_factor + (end_factor - start_factor) min(epoch, total_iters) / total_iters),
// PyTorch's recursive form (the first lr is set at construction).
class LinearLR : public LRScheduler {
 public:
  LinearLR(Optimizer& optimizer, double start_factor = 1.0 / 3, double end_factor = 1.0, int64_t total_iters = 5);

 protected:
  std::vector<double> get_lr() override;
  std::vector<double> closed_form_lr() override;
  const char* type_name() const override { return "LinearLR"; }
  std::map<std::string, double> hyperparameters() const override;
  void load_hyperparameters(const std::map<std::string, double>& h, bool apply) override;

 private:
  double start_factor_, end_factor_;
  int64_t total_iters_;
};

// OneCycleLR's keyword arguments (PyTorch's defaults). Give total_steps, or epochs and
// steps_per_epoch.
struct OneCycleLROptions {
  WICK_ARG(int64_t, total_steps) = 0;
  WICK_ARG(int64_t, epochs) = 0;
  WICK_ARG(int64_t, steps_per_epoch) = 0;
  // The fraction of the cycle spent increasing the learning rate.
  WICK_ARG(double, pct_start) = 0.3;
  // "cos" or "linear".
  WICK_ARG(std::string, anneal_strategy) = "cos";
  // Cycle SGD's or RMSprop's momentum, or Adam's beta1, inversely to the learning rate.
  WICK_ARG(bool, cycle_momentum) = true;
  WICK_ARG(double, base_momentum) = 0.85;
  WICK_ARG(double, max_momentum) = 0.95;
  // initial_lr = max_lr / div_factor; min_lr = initial_lr / final_div_factor.
  WICK_ARG(double, div_factor) = 25;
  WICK_ARG(double, final_div_factor) = 1e4;
  // A third phase: up to max_lr, back down to initial_lr, then down to min_lr.
  WICK_ARG(bool, three_phase) = false;
};

// The 1cycle policy, stepped once per batch: lr rises from initial_lr to max_lr over
// pct_start of total_steps, then anneals (cos or linear) to min_lr; momentum moves inversely.
class OneCycleLR : public LRScheduler {
 public:
  OneCycleLR(Optimizer& optimizer, double max_lr, const OneCycleLROptions& options);
  OneCycleLR(Optimizer& optimizer, std::vector<double> max_lr, const OneCycleLROptions& options);

 protected:
  std::vector<double> get_lr() override;
  const char* type_name() const override { return "OneCycleLR"; }
  std::map<std::string, double> hyperparameters() const override;
  void load_hyperparameters(const std::map<std::string, double>& h, bool apply) override;
  std::string extra_state() const override;
  void load_extra_state(const std::string& state, bool apply) override;

 private:
  struct Phase {
    double end_step;
    int start_lr, end_lr, start_momentum, end_momentum;  // 0 initial/max, 1 max/base, 2 min
  };
  std::vector<Phase> phases() const;
  double anneal(double start, double end, double pct) const;
  void set_momentum(size_t group, double momentum);

  int64_t total_steps_;
  double pct_start_;
  bool cos_;
  bool three_phase_;
  bool cycle_momentum_;
  bool use_beta1_ = false;
  // Per group: initial, max and min learning rates; max and base momentum.
  std::vector<double> initial_lrs_, max_lrs_, min_lrs_, max_momentums_, base_momentums_;
};

// Runs schedulers[0] until milestones[0], then schedulers[1] (restarted at its epoch 0) until
// milestones[1], and so on. The schedulers must drive this optimizer. As PyTorch's, the
// schedulers after the first wait at last_epoch -1 (their state_dict says so) until their
// milestone.
class SequentialLR : public LRScheduler {
 public:
  SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
               std::vector<int64_t> milestones);

 protected:
  std::vector<double> get_lr() override;
  const char* type_name() const override { return "SequentialLR"; }
  std::string extra_state() const override;
  void load_extra_state(const std::string& state, bool apply) override;

 private:
  std::vector<std::shared_ptr<LRScheduler>> schedulers_;
  std::vector<int64_t> milestones_;
};

// ReduceLROnPlateau's keyword arguments (PyTorch's defaults).
struct ReduceLROnPlateauOptions {
  // "min": reduce when the metric stops decreasing; "max": when it stops increasing.
  WICK_ARG(std::string, mode) = "min";
  // new_lr = max(lr * factor, min_lr); factor < 1.
  WICK_ARG(double, factor) = 0.1;
  // Epochs without improvement tolerated before reducing.
  WICK_ARG(int64_t, patience) = 10;
  WICK_ARG(double, threshold) = 1e-4;
  // "rel": better means beyond best * (1 -/+ threshold); "abs": beyond best -/+ threshold.
  WICK_ARG(std::string, threshold_mode) = "rel";
  // Epochs to wait after a reduction before counting bad epochs again.
  WICK_ARG(int64_t, cooldown) = 0;
  // One lower bound for every group, or one per group.
  WICK_ARG(std::vector<double>, min_lr) = {0.0};
  // A reduction smaller than eps is not made.
  WICK_ARG(double, eps) = 1e-8;
};

// Reduces every group's learning rate by factor when the metric given to step() has not
// improved for patience epochs. Sets no group's initial_lr (as PyTorch's).
class ReduceLROnPlateau : public LRScheduler {
 public:
  ReduceLROnPlateau(Optimizer& optimizer, const ReduceLROnPlateauOptions& options = {});
  // One epoch's metric (a validation loss, say).
  void step(double metric);
  double best() const { return best_; }
  int64_t num_bad_epochs() const { return num_bad_epochs_; }

 protected:
  // Refuses: this scheduler steps with a metric.
  std::vector<double> get_lr() override;
  const char* type_name() const override { return "ReduceLROnPlateau"; }
  std::map<std::string, double> hyperparameters() const override;
  void load_hyperparameters(const std::map<std::string, double>& h, bool apply) override;
  std::string extra_state() const override;
  void load_extra_state(const std::string& state, bool apply) override;

 private:
  bool is_better(double a, double best) const;

  bool max_mode_, abs_mode_;
  double factor_, threshold_, eps_;
  int64_t patience_, cooldown_;
  std::vector<double> min_lrs_;
  double best_;
  int64_t num_bad_epochs_ = 0, cooldown_counter_ = 0;
};

}  // namespace wick::optim
