// L-BFGS, as torch.optim.LBFGS: each step(closure) runs up to max_iter quasi-Newton iterations,
// the closure re-evaluating the loss and its gradients (zero them, forward, backward, return
// the loss) as often as they need, with PyTorch's defaults, stopping rules and optional
// strong-Wolfe line search. One parameter group only, as PyTorch's.
//
//   wick::optim::LBFGS opt(model->parameters(), wick::optim::LBFGSOptions(1).line_search_fn("strong_wolfe"));
//   opt.step([&] { opt.zero_grad(); auto loss = F::mse_loss(model(x), y); loss.backward(); return loss; });
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "wick/nn/options.h"
#include "wick/optim/optimizer.h"

namespace wick::optim {

struct LBFGSOptions : OptimizerOptions {
  LBFGSOptions(double lr = 1) : lr_(lr) {}
  WICK_ARG(double, lr);
  WICK_ARG(int64_t, max_iter) = 20;
  // The most closure calls a step makes; max_iter * 5 / 4 when not given.
  WICK_ARG(std::optional<int64_t>, max_eval) = std::nullopt;
  WICK_ARG(double, tolerance_grad) = 1e-7;
  WICK_ARG(double, tolerance_change) = 1e-9;
  WICK_ARG(int64_t, history_size) = 100;
  // "strong_wolfe", or none (a fixed step of lr after the first).
  WICK_ARG(std::optional<std::string>, line_search_fn) = std::nullopt;

 public:
  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<LBFGSOptions>(*this); }
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
};

class LBFGS : public Optimizer {
 public:
  using LossClosure = std::function<Tensor()>;
  LBFGS(std::vector<Tensor> params, const LBFGSOptions& options = {});
  LBFGS(std::vector<OptimizerParamGroup> groups, const LBFGSOptions& defaults = {});
  // The closure's first loss (as PyTorch's step returns it). The parameters are updated in place.
  Tensor step(const LossClosure& closure);
  // ValueError: L-BFGS re-evaluates the loss, so it needs step(closure).
  void step() override;
  // PyTorch's, with the search's memory (d, t, old_dirs, old_stps, ro, H_diag,
  // prev_flat_grad, prev_loss, func_evals, n_iter) as the one state of the first parameter:
  // tensors "state.0.<name>" ("state.0.old_dirs.<k>" ... for the lists), numbers in "state".
  Checkpoint state_dict() const override;
  void load_state_dict(const Checkpoint& state) override;
  // One group only: ValueError, as PyTorch's.
  void add_param_group(const OptimizerParamGroup& group) override;

 private:
  struct Memory {
    int64_t func_evals = 0, n_iter = 0;
    Tensor d, prev_flat_grad, H_diag;
    std::vector<Tensor> old_dirs, old_stps, ro;
    std::optional<double> t, prev_loss;
  };
  Tensor flat_grad() const;
  void add_grad(double step, const Tensor& direction);
  int64_t numel() const;
  Memory memory_;
};

}  // namespace wick::optim
