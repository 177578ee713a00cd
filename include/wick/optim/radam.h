// RAdam, as torch.optim.RAdam: Adam whose adaptive step is rectified by the variance of its
// estimate, and left out (a momentum step) while too few steps make that estimate unreliable.
//
//   wick::optim::RAdam opt(net->parameters(), wick::optim::RAdamOptions(1e-3).weight_decay(0.01));
#pragma once

#include <tuple>

#include "wick/nn/options.h"
#include "wick/optim/optimizer.h"

namespace wick::optim {

struct RAdamOptions : OptimizerOptions {
  RAdamOptions(double lr = 1e-3) : lr_(lr) {}
  WICK_ARG(double, lr);

 public:
  using Betas = std::tuple<double, double>;
  WICK_ARG(Betas, betas) = Betas(0.9, 0.999);
  WICK_ARG(double, eps) = 1e-8;
  WICK_ARG(double, weight_decay) = 0;
  // Multiply the weights by 1 - lr weight_decay (AdamW's decay) instead of adding
  // weight_decay * p to the gradient.
  WICK_ARG(bool, decoupled_weight_decay) = false;
  // Maximize the objective: step along the gradient (PyTorch's maximize).
  WICK_ARG(bool, maximize) = false;

 public:
  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<RAdamOptions>(*this); }
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
};

// State per parameter: exp_avg, exp_avg_sq (and the step).
class RAdam : public Optimizer {
 public:
  RAdam(std::vector<Tensor> params, const RAdamOptions& options = {});
  RAdam(std::vector<OptimizerParamGroup> groups, const RAdamOptions& defaults = {});
  void step() override;
  using Optimizer::step;  // step(closure)
};

}  // namespace wick::optim
