// RMSprop, as torch.optim.RMSprop: a running mean of squared gradients scales each step
// (centered: minus the squared running mean of the gradients), with optional momentum.
//
//   wick::optim::RMSprop opt(net->parameters(), wick::optim::RMSpropOptions(1e-2).alpha(0.9).centered(true));
#pragma once

#include "wick/nn/options.h"
#include "wick/optim/optimizer.h"

namespace wick::optim {

struct RMSpropOptions : OptimizerOptions {
  RMSpropOptions(double lr = 1e-2) : lr_(lr) {}
  WICK_ARG(double, lr);
  // Smoothing constant of the running mean of squared gradients.
  WICK_ARG(double, alpha) = 0.99;
  WICK_ARG(double, eps) = 1e-8;
  WICK_ARG(double, weight_decay) = 0;
  WICK_ARG(double, momentum) = 0;
  // Divide by the estimated variance of the gradient instead of its second moment.
  WICK_ARG(bool, centered) = false;
  // Maximize the objective: step along the gradient (PyTorch's maximize).
  WICK_ARG(bool, maximize) = false;

 public:
  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<RMSpropOptions>(*this); }
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
};

class RMSprop : public Optimizer {
 public:
  RMSprop(std::vector<Tensor> params, const RMSpropOptions& options = {});
  RMSprop(std::vector<OptimizerParamGroup> groups, const RMSpropOptions& defaults = {});
  void step() override;
  using Optimizer::step;  // step(closure)
};

}  // namespace wick::optim
