// Adagrad, as torch.optim.Adagrad: each element's step is divided by the root of its summed
// squared gradients; the learning rate decays as lr / (1 + (step - 1) lr_decay).
//
//   wick::optim::Adagrad opt(net->parameters(), wick::optim::AdagradOptions(1e-2).lr_decay(1e-4));
#pragma once

#include "wick/nn/options.h"
#include "wick/optim/optimizer.h"

namespace wick::optim {

struct AdagradOptions : OptimizerOptions {
  AdagradOptions(double lr = 1e-2) : lr_(lr) {}
  WICK_ARG(double, lr);
  WICK_ARG(double, lr_decay) = 0;
  WICK_ARG(double, weight_decay) = 0;
  // The value the sum of squared gradients starts from.
  WICK_ARG(double, initial_accumulator_value) = 0;
  WICK_ARG(double, eps) = 1e-10;
  // Maximize the objective: step along the gradient (PyTorch's maximize).
  WICK_ARG(bool, maximize) = false;

 public:
  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<AdagradOptions>(*this); }
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
};

// As PyTorch's, the state of every parameter (step 0, sum filled with
// initial_accumulator_value) exists from construction on.
class Adagrad : public Optimizer {
 public:
  Adagrad(std::vector<Tensor> params, const AdagradOptions& options = {});
  Adagrad(std::vector<OptimizerParamGroup> groups, const AdagradOptions& defaults = {});
  void step() override;
  using Optimizer::step;  // step(closure)
};

}  // namespace wick::optim
