// Adamax, as torch.optim.Adamax: Adam with the infinity norm, each element's step divided by
// a decaying maximum of |grad| instead of the root of a mean of squares.
//
//   wick::optim::Adamax opt(net->parameters(), wick::optim::AdamaxOptions(2e-3).betas({0.9, 0.99}));
#pragma once

#include <tuple>

#include "wick/nn/options.h"
#include "wick/optim/optimizer.h"

namespace wick::optim {

struct AdamaxOptions : OptimizerOptions {
  AdamaxOptions(double lr = 2e-3) : lr_(lr) {}
  WICK_ARG(double, lr);

 public:
  using Betas = std::tuple<double, double>;
  WICK_ARG(Betas, betas) = Betas(0.9, 0.999);
  WICK_ARG(double, eps) = 1e-8;
  WICK_ARG(double, weight_decay) = 0;
  // Maximize the objective: step along the gradient (PyTorch's maximize).
  WICK_ARG(bool, maximize) = false;

 public:
  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<AdamaxOptions>(*this); }
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
};

// State per parameter: exp_avg, exp_inf (and the step).
class Adamax : public Optimizer {
 public:
  Adamax(std::vector<Tensor> params, const AdamaxOptions& options = {});
  Adamax(std::vector<OptimizerParamGroup> groups, const AdamaxOptions& defaults = {});
  void step() override;
  using Optimizer::step;  // step(closure)
};

}  // namespace wick::optim
