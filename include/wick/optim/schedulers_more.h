// More learning-rate schedulers, as torch.optim.lr_scheduler's: MultiplicativeLR, ConstantLR,
// PolynomialLR, CyclicLR, CosineAnnealingWarmRestarts and ChainedScheduler. Call step() once
// per epoch (CyclicLR: per batch) after the optimizer's step().
//
//   wick::optim::CyclicLR cyc(opt, /*base_lr=*/1e-3, /*max_lr=*/1e-2,
//                             wick::optim::CyclicLROptions().step_size_up(500).mode("triangular2"));
//   wick::optim::CosineAnnealingWarmRestarts warm(opt, /*T_0=*/10, /*T_mult=*/2);
//   warm.step(epoch + batch / double(batches));  // fractional epochs
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "wick/nn/options.h"
#include "wick/optim/schedulers.h"

namespace wick::optim {

// lr = lr * lr_lambda(epoch) each epoch after the first: one function for every group or one
// per group (not saved by state_dict, as PyTorch saves no plain function).
class MultiplicativeLR : public LRScheduler {
 public:
  using Lambda = std::function<double(int64_t)>;
  MultiplicativeLR(Optimizer& optimizer, Lambda lr_lambda);
  MultiplicativeLR(Optimizer& optimizer, std::vector<Lambda> lr_lambdas);

 protected:
  std::vector<double> get_lr() override;
  const char* type_name() const override { return "MultiplicativeLR"; }

 private:
  std::vector<Lambda> lambdas_;
};

// lr = base_lr * factor until epoch total_iters, then base_lr; 0 <= factor <= 1.
class ConstantLR : public LRScheduler {
 public:
  ConstantLR(Optimizer& optimizer, double factor = 1.0 / 3, int64_t total_iters = 5);

 protected:
  std::vector<double> get_lr() override;
  std::vector<double> closed_form_lr() override;
  const char* type_name() const override { return "ConstantLR"; }
  std::map<std::string, double> hyperparameters() const override;
  void load_hyperparameters(const std::map<std::string, double>& h, bool apply) override;

 private:
  double factor_;
  int64_t total_iters_;
};

// lr = base_lr * (1 - min(epoch, total_iters) / total_iters)^power, PyTorch's recursive form.
class PolynomialLR : public LRScheduler {
 public:
  PolynomialLR(Optimizer& optimizer, int64_t total_iters = 5, double power = 1.0);

 protected:
  std::vector<double> get_lr() override;
  std::vector<double> closed_form_lr() override;
  const char* type_name() const override { return "PolynomialLR"; }
  std::map<std::string, double> hyperparameters() const override;
  void load_hyperparameters(const std::map<std::string, double>& h, bool apply) override;

 private:
  int64_t total_iters_;
  double power_;
};

// CyclicLR's keyword arguments (PyTorch's defaults). base_momentum and max_momentum: one value
// for every group or one per group.
struct CyclicLROptions {
  // Iterations of the rising half of a cycle, and of the falling half (none: as many as rising).
  WICK_ARG(double, step_size_up) = 2000;
  WICK_ARG(std::optional<double>, step_size_down) = std::nullopt;
  // "triangular", "triangular2" (the amplitude halves each cycle) or "exp_range" (the amplitude
  // scales by gamma^iteration); ignored where scale_fn is given.
  WICK_ARG(std::string, mode) = "triangular";
  WICK_ARG(double, gamma) = 1.0;
  // A scale of one's own (of the cycle number, or of the iteration with scale_mode "iterations").
  WICK_ARG(std::function<double(double)>, scale_fn) = nullptr;
  WICK_ARG(std::string, scale_mode) = "cycle";
  // Cycle SGD's or RMSprop's momentum, or beta1 of an optimizer with betas, inversely to the lr.
  WICK_ARG(bool, cycle_momentum) = true;
  WICK_ARG(std::vector<double>, base_momentum) = {0.8};
  WICK_ARG(std::vector<double>, max_momentum) = {0.9};
};

// The cyclical learning rate policy, stepped once per batch: lr goes from base_lr to max_lr
// and back in each cycle (the groups' lr is set to base_lr at construction).
class CyclicLR : public LRScheduler {
 public:
  CyclicLR(Optimizer& optimizer, double base_lr, double max_lr, const CyclicLROptions& options = {});
  // One learning rate per group each.
  CyclicLR(Optimizer& optimizer, std::vector<double> base_lr, std::vector<double> max_lr,
           const CyclicLROptions& options = {});

 protected:
  std::vector<double> get_lr() override;
  const char* type_name() const override { return "CyclicLR"; }
  std::map<std::string, double> hyperparameters() const override;
  void load_hyperparameters(const std::map<std::string, double>& h, bool apply) override;
  std::string extra_state() const override;
  void load_extra_state(const std::string& state, bool apply) override;

 private:
  double scale(double x) const;

  double total_size_, step_ratio_;
  std::string mode_;
  double gamma_;
  std::function<double(double)> scale_fn_;  // the user's; none for the modes
  bool cycle_scale_;                        // scale_mode "cycle" (else "iterations")
  bool cycle_momentum_, use_beta1_ = false;
  std::vector<double> max_lrs_, base_momentums_, max_momentums_;
};

// SGDR: lr = eta_min + (base_lr - eta_min) (1 + cos(pi T_cur / T_i)) / 2, T_cur the epochs
// since the last restart, T_i the length of the current cycle (T_0, then T_0 T_mult, ...).
class CosineAnnealingWarmRestarts : public LRScheduler {
 public:
  CosineAnnealingWarmRestarts(Optimizer& optimizer, int64_t T_0, int64_t T_mult = 1, double eta_min = 0);
  using LRScheduler::step;
  // Sets the schedule at epoch, which may be fractional (epoch + i / iters inside an epoch).
  void step(double epoch);
  double T_cur() const { return t_cur_; }
  int64_t T_i() const { return t_i_; }

 protected:
  std::vector<double> get_lr() override;
  std::vector<double> closed_form_lr() override;
  const char* type_name() const override { return "CosineAnnealingWarmRestarts"; }
  std::map<std::string, double> hyperparameters() const override;
  void load_hyperparameters(const std::map<std::string, double>& h, bool apply) override;

 private:
  void seek(double epoch);  // T_cur and T_i at epoch
  std::vector<double> lrs_now() const;

  int64_t t_0_, t_mult_, t_i_;
  double eta_min_, t_cur_ = 0;
};

// Steps every scheduler of the list, in order, at each step(): their effects compose. The
// schedulers must drive one optimizer; state_dict holds each one's state.
class ChainedScheduler : public LRScheduler {
 public:
  explicit ChainedScheduler(std::vector<std::shared_ptr<LRScheduler>> schedulers);
  ChainedScheduler(std::vector<std::shared_ptr<LRScheduler>> schedulers, Optimizer& optimizer);

 protected:
  std::vector<double> get_lr() override;
  const char* type_name() const override { return "ChainedScheduler"; }
  std::string extra_state() const override;
  void load_extra_state(const std::string& state, bool apply) override;

 private:
  static Optimizer& checked_optimizer(const std::vector<std::shared_ptr<LRScheduler>>& schedulers,
                                      Optimizer* optimizer);
  std::vector<std::shared_ptr<LRScheduler>> schedulers_;
};

}  // namespace wick::optim
