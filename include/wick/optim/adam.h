// Adam and AdamW, as torch.optim.Adam and torch.optim.AdamW (AdamW decays the weights
// directly, lr * weight_decay * p, instead of adding weight_decay * p to the gradient).
//
//   wick::optim::Adam opt(net->parameters(), wick::optim::AdamOptions(1e-3));
//   wick::optim::AdamW optw(net->parameters(), wick::optim::AdamWOptions(1e-3).weight_decay(0.01));
#pragma once

#include <tuple>

#include "wick/nn/options.h"
#include "wick/optim/optimizer.h"

namespace wick::optim {

struct AdamOptions : OptimizerOptions {
  AdamOptions(double lr = 1e-3) : lr_(lr) {}
  WICK_ARG(double, lr);

 public:
  using Betas = std::tuple<double, double>;
  WICK_ARG(Betas, betas) = Betas(0.9, 0.999);
  WICK_ARG(double, eps) = 1e-8;
  WICK_ARG(double, weight_decay) = 0;
  WICK_ARG(bool, amsgrad) = false;
  // Maximize the objective: step along the gradient (PyTorch's maximize).
  WICK_ARG(bool, maximize) = false;
  // Update every dense parameter of one device and dtype together in one multi-tensor kernel
  // (PyTorch's foreach/fused forms: float32/float64 results equal the per-parameter ops, 16-bit
  // floats compute in float and round once); false runs each parameter's update as
  // separate tensor ops.
  WICK_ARG(bool, foreach) = true;

 public:
  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<AdamOptions>(*this); }
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
};

// AdamOptions with AdamW's default weight decay (0.01); setters chain as AdamOptions.
struct AdamWOptions : AdamOptions {
  AdamWOptions(double lr = 1e-3) : AdamOptions(lr) { weight_decay(1e-2); }
  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<AdamWOptions>(*this); }
};

class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, const AdamOptions& options = {});
  Adam(std::vector<OptimizerParamGroup> groups, const AdamOptions& defaults = {});
  void step() override;
  using Optimizer::step;  // step(closure)

 protected:
  Adam(std::vector<OptimizerParamGroup> groups, std::unique_ptr<OptimizerOptions> defaults, bool decoupled);

 private:
  bool decoupled_ = false;
};

class AdamW : public Adam {
 public:
  AdamW(std::vector<Tensor> params, const AdamOptions& options = AdamWOptions());
  AdamW(std::vector<OptimizerParamGroup> groups, const AdamOptions& defaults = AdamWOptions());
};

}  // namespace wick::optim
