// NAdam, as torch.optim.NAdam: Adam with Nesterov momentum, whose momentum coefficient mu_t
// warms up with momentum_decay; decoupled_weight_decay decays the weights as AdamW does.
//
//   wick::optim::NAdam opt(net->parameters(), wick::optim::NAdamOptions(2e-3).momentum_decay(4e-3));
#pragma once

#include <tuple>

#include "wick/nn/options.h"
#include "wick/optim/optimizer.h"

namespace wick::optim {

struct NAdamOptions : OptimizerOptions {
  NAdamOptions(double lr = 2e-3) : lr_(lr) {}
  WICK_ARG(double, lr);

 public:
  using Betas = std::tuple<double, double>;
  WICK_ARG(Betas, betas) = Betas(0.9, 0.999);
  WICK_ARG(double, eps) = 1e-8;
  WICK_ARG(double, weight_decay) = 0;
  // mu_t = beta1 (1 - 0.96^(t momentum_decay) / 2).
  WICK_ARG(double, momentum_decay) = 4e-3;
  // Multiply the weights by 1 - lr weight_decay (AdamW's decay) instead of adding
  // weight_decay * p to the gradient.
  WICK_ARG(bool, decoupled_weight_decay) = false;
  // Maximize the objective: step along the gradient (PyTorch's maximize).
  WICK_ARG(bool, maximize) = false;

 public:
  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<NAdamOptions>(*this); }
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
};

// State per parameter: exp_avg, exp_avg_sq, mu_product (the product of the mu_t so far: a 0-dim
// CPU tensor of the default dtype, float32 unless that is float64, as PyTorch's) and the step.
class NAdam : public Optimizer {
 public:
  NAdam(std::vector<Tensor> params, const NAdamOptions& options = {});
  NAdam(std::vector<OptimizerParamGroup> groups, const NAdamOptions& defaults = {});
  void step() override;
  using Optimizer::step;  // step(closure)
};

}  // namespace wick::optim
