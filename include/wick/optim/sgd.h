// SGD with momentum, dampening, weight decay and Nesterov momentum, as torch.optim.SGD.
//
//   wick::optim::SGD opt(net->parameters(), wick::optim::SGDOptions(0.1).momentum(0.9).nesterov(true));
#pragma once

#include "wick/nn/options.h"
#include "wick/optim/optimizer.h"

namespace wick::optim {

struct SGDOptions : OptimizerOptions {
  SGDOptions(double lr) : lr_(lr) {}
  WICK_ARG(double, lr);
  WICK_ARG(double, momentum) = 0;
  WICK_ARG(double, dampening) = 0;
  WICK_ARG(double, weight_decay) = 0;
  WICK_ARG(bool, nesterov) = false;
  // Maximize the objective: step along the gradient (PyTorch's maximize).
  WICK_ARG(bool, maximize) = false;
  // Update every dense parameter of one device and dtype together in one multi-tensor kernel
  // (PyTorch's foreach/fused forms: float32/float64 results equal the per-parameter ops, 16-bit
  // floats compute in float and round once); false runs each parameter's update as
  // separate tensor ops.
  WICK_ARG(bool, foreach) = true;

 public:
  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<SGDOptions>(*this); }
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
};

class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, const SGDOptions& options);
  SGD(std::vector<OptimizerParamGroup> groups, const SGDOptions& defaults);
  void step() override;
  using Optimizer::step;  // step(closure)
};

}  // namespace wick::optim
