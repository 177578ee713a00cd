// Rprop, as torch.optim.Rprop: each element moves by its own step size, against the sign of
// its gradient; the step size grows by etas[1] while the sign holds and shrinks by etas[0]
// when it flips (and that element then skips its move).
//
//   wick::optim::Rprop opt(net->parameters(), wick::optim::RpropOptions(1e-2).etas({0.5, 1.2}));
#pragma once

#include <tuple>

#include "wick/nn/options.h"
#include "wick/optim/optimizer.h"

namespace wick::optim {

struct RpropOptions : OptimizerOptions {
  RpropOptions(double lr = 1e-2) : lr_(lr) {}
  // The step size every element starts from (read at a parameter's first step only).
  WICK_ARG(double, lr);

 public:
  using Pair = std::tuple<double, double>;
  // (etaminus, etaplus): the factors that shrink and grow a step size; 0 < etaminus < 1 < etaplus.
  WICK_ARG(Pair, etas) = Pair(0.5, 1.2);
  // (min, max): the bounds of a step size.
  WICK_ARG(Pair, step_sizes) = Pair(1e-6, 50);
  // Maximize the objective: step along the gradient (PyTorch's maximize).
  WICK_ARG(bool, maximize) = false;

 public:
  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<RpropOptions>(*this); }
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
};

// State per parameter: prev (the last gradient taken, zero where it flipped sign), step_size
// (and the step).
class Rprop : public Optimizer {
 public:
  Rprop(std::vector<Tensor> params, const RpropOptions& options = {});
  Rprop(std::vector<OptimizerParamGroup> groups, const RpropOptions& defaults = {});
  void step() override;
  using Optimizer::step;  // step(closure)
};

}  // namespace wick::optim
