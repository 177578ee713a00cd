// Optimizer: parameter groups with their options, per-parameter state on the parameter's
// device, zero_grad and step, as LibTorch's torch::optim::Optimizer.
//
//   wick::optim::SGD opt(net->parameters(), wick::optim::SGDOptions(0.1).momentum(0.9));
//   opt.zero_grad();  loss.backward();  opt.step();
//   opt.param_groups()[0].options().set_lr(0.01);
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "wick/io/safetensors.h"
#include "wick/tensor.h"

namespace wick::serialize {
class OutputArchive;
class InputArchive;
}  // namespace wick::serialize

namespace wick::optim {

// Options common to every optimizer: the learning rate (schedulers change it).
class OptimizerOptions {
 public:
  virtual ~OptimizerOptions() = default;
  virtual std::unique_ptr<OptimizerOptions> clone() const = 0;
  virtual double get_lr() const = 0;
  virtual void set_lr(double lr) = 0;
};

class OptimizerParamGroup {
 public:
  OptimizerParamGroup(std::vector<Tensor> params) : params_(std::move(params)) {}
  OptimizerParamGroup(std::vector<Tensor> params, std::unique_ptr<OptimizerOptions> options)
      : params_(std::move(params)), options_(std::move(options)) {}
  OptimizerParamGroup(const OptimizerParamGroup& o);
  OptimizerParamGroup& operator=(const OptimizerParamGroup& o);
  OptimizerParamGroup(OptimizerParamGroup&&) = default;
  OptimizerParamGroup& operator=(OptimizerParamGroup&&) = default;

  std::vector<Tensor>& params() { return params_; }
  const std::vector<Tensor>& params() const { return params_; }
  bool has_options() const { return options_ != nullptr; }
  OptimizerOptions& options() const;
  void set_options(std::unique_ptr<OptimizerOptions> options) { options_ = std::move(options); }
  // PyTorch's group["initial_lr"]: the learning rate the first scheduler found (the one every
  // later scheduler takes as its base); none until a scheduler sets it.
  std::optional<double>& initial_lr() { return initial_lr_; }
  const std::optional<double>& initial_lr() const { return initial_lr_; }

 private:
  std::vector<Tensor> params_;
  std::unique_ptr<OptimizerOptions> options_;
  std::optional<double> initial_lr_;
};

// Per-parameter state: named tensors (exp_avg, momentum_buffer, ...) and a step count.
struct ParamState {
  std::map<std::string, Tensor> tensors;
  int64_t step = 0;
};

class Optimizer {
 public:
  Optimizer(std::vector<OptimizerParamGroup> groups, std::unique_ptr<OptimizerOptions> defaults);
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of every parameter that has a gradient.
  virtual void step() = 0;
  // LibTorch's step(closure), PyTorch's step(closure): the loss closure returns, evaluated with
  // grad mode on (it computes the gradients), then step(); an empty closure is step() alone
  // (the loss undefined). L-BFGS, which evaluates the closure several times, has its own.
  Tensor step(const std::function<Tensor()>& closure);
  // Drops the gradients (set_to_none, PyTorch's default) or zeroes them in place.
  void zero_grad(bool set_to_none = true);
  // A group with its own options (the defaults where none are given). Virtual: a wrapper such
  // as ZeroRedundancyOptimizer also gives the group to what it wraps.
  virtual void add_param_group(const OptimizerParamGroup& group);

  std::vector<OptimizerParamGroup>& param_groups() { return groups_; }
  const std::vector<OptimizerParamGroup>& param_groups() const { return groups_; }
  const OptimizerOptions& defaults() const { return *defaults_; }
  // PyTorch's state_dict, as a Checkpoint (one .safetensors file): the tensors of each
  // parameter's state as "state.<i>.<name>" (i: the parameter's index counting through the
  // groups in order; SGD: momentum_buffer; Adam, AdamW: exp_avg, exp_avg_sq, max_exp_avg_sq;
  // RMSprop: square_avg, momentum_buffer, grad_avg; Adagrad: sum; Adamax: exp_avg, exp_inf;
  // NAdam: exp_avg, exp_avg_sq, mu_product; RAdam: exp_avg, exp_avg_sq; Rprop: prev, step_size;
  // ASGD: eta, mu, ax), and metadata "optimizer" (the class name, as "SGD" or "NAdam"),
  // "state" (JSON {"<i>": {"step": n}}) and
  // "param_groups" (JSON [{hyperparameters..., "params": [i, ...]}], with "initial_lr" once a
  // scheduler has set it). The tensors are the
  // optimizer's own (not copies). Optimizers of one's own override both.
  virtual Checkpoint state_dict() const;
  // Replaces the groups' hyperparameters and every parameter's state by those of state (a
  // state_dict of an optimizer of the same kind over parameters of the same shapes, in the
  // same groups), copied onto each parameter's device. Everything is checked before anything
  // changes: ValueError or TypeError "[load_state_dict] ..." (a wrong kind, number of groups or
  // parameters, a missing or unexpected key, a state tensor of another shape or dtype than its
  // parameter, an invalid hyperparameter) leaves the optimizer as it was.
  virtual void load_state_dict(const Checkpoint& state);
  // LibTorch's archives (wick/serialize.h): save writes state_dict() into archive (its tensors
  // under their dotted names, its metadata as string values); load reads them back through
  // load_state_dict, with its checks (nothing changes when one fails). Give the optimizer an
  // archive of its own (or a nested one): load takes every tensor and value it holds.
  virtual void save(serialize::OutputArchive& archive) const;
  virtual void load(serialize::InputArchive& archive);

  // State of a parameter (created empty on first use).
  ParamState& state(const Tensor& param);
  const std::map<const void*, ParamState>& state() const { return state_; }

 protected:
  // Throws unless p's gradient lives on p's device with p's dtype and shape.
  static void check_grad(const Tensor& p, const char* op);
  // check_grad for every parameter with a gradient, before a step writes anything, so a step
  // that fails changes no parameter and no state.
  void check_grads(const char* op) const;

  std::vector<OptimizerParamGroup> groups_;
  std::unique_ptr<OptimizerOptions> defaults_;
  std::map<const void*, ParamState> state_;  // keyed by the parameter's TensorImpl
};

}  // namespace wick::optim
