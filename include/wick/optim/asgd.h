// ASGD, as torch.optim.ASGD: SGD with a decaying step eta = lr / (1 + lambd lr t)^alpha and
// weight decay lambd, keeping ax, the running average of the parameter from step t0 on.
//
//   wick::optim::ASGD opt(net->parameters(), wick::optim::ASGDOptions(1e-2).t0(100));
//   // ... train; then evaluate with opt.state(p).tensors.at("ax") in place of p.
#pragma once

#include "wick/nn/options.h"
#include "wick/optim/optimizer.h"

namespace wick::optim {

struct ASGDOptions : OptimizerOptions {
  ASGDOptions(double lr = 1e-2) : lr_(lr) {}
  WICK_ARG(double, lr);
  // The decay term.
  WICK_ARG(double, lambd) = 1e-4;
  // The power of eta's decay.
  WICK_ARG(double, alpha) = 0.75;
  // The step from which ax averages (before it, ax follows the parameter).
  WICK_ARG(double, t0) = 1e6;
  WICK_ARG(double, weight_decay) = 0;
  // Maximize the objective: step along the gradient (PyTorch's maximize).
  WICK_ARG(bool, maximize) = false;

 public:
  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<ASGDOptions>(*this); }
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
};

// State per parameter: ax (the average), eta and mu (0-dim CPU tensors of the default dtype,
// float32 unless that is float64, as PyTorch's scalar state) and the step. eta starts at the
// lr of the first step and is recomputed from the group's lr after each step.
class ASGD : public Optimizer {
 public:
  ASGD(std::vector<Tensor> params, const ASGDOptions& options = {});
  ASGD(std::vector<OptimizerParamGroup> groups, const ASGDOptions& defaults = {});
  void step() override;
  using Optimizer::step;  // step(closure)
};

}  // namespace wick::optim
