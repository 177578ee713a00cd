// Optimizer base: groups, state, zero_grad and the gradient checks every step makes.
#include "wick/optim/optimizer.h"

#include <iostream>
#include <typeinfo>

#include "optim/optimizer_internal.h"
#include "wick/autograd.h"
#include "wick/ops.h"
#include "wick/optim/adagrad.h"
#include "wick/optim/adam.h"
#include "wick/optim/rmsprop.h"
#include "wick/optim/sgd.h"

namespace wick::detail {

std::vector<optim::OptimizerParamGroup> one_param_group(std::vector<Tensor> params) {
  std::vector<optim::OptimizerParamGroup> g;
  if (!params.empty()) g.emplace_back(std::move(params));
  return g;
}

std::vector<optim::OptimizerParamGroup> nonempty_param_groups(std::vector<optim::OptimizerParamGroup> groups,
                                                              const char* op) {
  WICK_CHECK(!groups.empty(), ValueError, op, "optimizer got an empty parameter list");
  return groups;
}

void check_hyperparameters(const optim::OptimizerOptions& options, const char* op) {
  using namespace optim;
  if (const auto* o = dynamic_cast<const SGDOptions*>(&options)) {
    WICK_CHECK(o->lr() >= 0, ValueError, op, "Invalid learning rate: ", o->lr());
    WICK_CHECK(o->momentum() >= 0, ValueError, op, "Invalid momentum value: ", o->momentum());
    WICK_CHECK(o->weight_decay() >= 0, ValueError, op, "Invalid weight_decay value: ", o->weight_decay());
    WICK_CHECK(!o->nesterov() || (o->momentum() > 0 && o->dampening() == 0), ValueError, op,
               "Nesterov momentum requires a momentum and zero dampening");
  } else if (const auto* o = dynamic_cast<const AdamOptions*>(&options)) {  // Adam and AdamW
    WICK_CHECK(o->lr() >= 0, ValueError, op, "Invalid learning rate: ", o->lr());
    WICK_CHECK(o->eps() >= 0, ValueError, op, "Invalid epsilon value: ", o->eps());
    const auto [b1, b2] = o->betas();
    WICK_CHECK(b1 >= 0 && b1 < 1, ValueError, op, "Invalid beta parameter at index 0: ", b1);
    WICK_CHECK(b2 >= 0 && b2 < 1, ValueError, op, "Invalid beta parameter at index 1: ", b2);
    WICK_CHECK(o->weight_decay() >= 0, ValueError, op, "Invalid weight_decay value: ", o->weight_decay());
  } else if (const auto* o = dynamic_cast<const RMSpropOptions*>(&options)) {
    WICK_CHECK(o->lr() >= 0, ValueError, op, "Invalid learning rate: ", o->lr());
    WICK_CHECK(o->eps() >= 0, ValueError, op, "Invalid epsilon value: ", o->eps());
    WICK_CHECK(o->momentum() >= 0, ValueError, op, "Invalid momentum value: ", o->momentum());
    WICK_CHECK(o->weight_decay() >= 0, ValueError, op, "Invalid weight_decay value: ", o->weight_decay());
    WICK_CHECK(o->alpha() >= 0, ValueError, op, "Invalid alpha value: ", o->alpha());
  } else if (const auto* o = dynamic_cast<const AdagradOptions*>(&options)) {
    WICK_CHECK(o->lr() >= 0, ValueError, op, "Invalid learning rate: ", o->lr());
    WICK_CHECK(o->lr_decay() >= 0, ValueError, op, "Invalid lr_decay value: ", o->lr_decay());
    WICK_CHECK(o->weight_decay() >= 0, ValueError, op, "Invalid weight_decay value: ", o->weight_decay());
    WICK_CHECK(o->initial_accumulator_value() >= 0, ValueError, op,
               "Invalid initial_accumulator_value value: ", o->initial_accumulator_value());
    WICK_CHECK(o->eps() >= 0, ValueError, op, "Invalid epsilon value: ", o->eps());
  }
}

bool foreach_fits(const Tensor& t, const Tensor& p) {
  return t.defined() && t.is_contiguous() && t.dtype() == p.dtype() && t.device() == p.device() &&
         t.numel() == p.numel();
}

}  // namespace wick::detail

namespace wick::optim {

OptimizerParamGroup::OptimizerParamGroup(const OptimizerParamGroup& o)
    : params_(o.params_), options_(o.options_ ? o.options_->clone() : nullptr), initial_lr_(o.initial_lr_) {}

OptimizerParamGroup& OptimizerParamGroup::operator=(const OptimizerParamGroup& o) {
  params_ = o.params_;
  options_ = o.options_ ? o.options_->clone() : nullptr;
  initial_lr_ = o.initial_lr_;
  return *this;
}

OptimizerOptions& OptimizerParamGroup::options() const {
  WICK_CHECK(options_ != nullptr, ValueError, "param_groups", "this parameter group has no options");
  return *options_;
}

namespace {
// Whether a group's options suit the optimizer whose defaults are d: its step reads them as
// d's type (Adam and AdamW share AdamOptions and AdamWOptions).
bool same_kind(const OptimizerOptions& o, const OptimizerOptions& d) {
  if (typeid(o) == typeid(d)) return true;
  return dynamic_cast<const AdamOptions*>(&o) != nullptr && dynamic_cast<const AdamOptions*>(&d) != nullptr;
}

// The name of the optimizer whose defaults are d: the op a constructor's errors name.
const char* optimizer_name(const OptimizerOptions& d) {
  if (dynamic_cast<const AdamWOptions*>(&d)) return "AdamW";
  if (dynamic_cast<const AdamOptions*>(&d)) return "Adam";
  if (dynamic_cast<const SGDOptions*>(&d)) return "SGD";
  if (dynamic_cast<const RMSpropOptions*>(&d)) return "RMSprop";
  if (dynamic_cast<const AdagradOptions*>(&d)) return "Adagrad";
  return "Optimizer";
}


// The group to append to groups (the optimizer's defaults where it has no options of its own),
// after every check; op: the call the user made (the constructor or add_param_group).
OptimizerParamGroup checked_group(const std::vector<OptimizerParamGroup>& groups, const OptimizerOptions& defaults,
                                  const OptimizerParamGroup& group, const char* op) {
  WICK_CHECK(!group.has_options() || same_kind(group.options(), defaults), TypeError, op,
             "the group's options are of another optimizer's type (", typeid(group.options()).name(),
             ") than this optimizer's (", typeid(defaults).name(), ")");
  if (group.has_options()) detail::check_hyperparameters(group.options(), op);
  const std::vector<Tensor>& params = group.params();
  bool duplicate = false;
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    WICK_CHECK(p.defined(), ValueError, op, "optimizer got an undefined parameter");
    WICK_CHECK(p.is_floating_point(), TypeError, op,
               "optimizer can only optimize Tensors of floating point dtype, but parameter ", i, " of the group is ",
               p.dtype());
    WICK_CHECK(p.is_leaf(), ValueError, op, "can't optimize a non-leaf Tensor");
    for (const auto& other : groups)
      for (const Tensor& q : other.params())
        WICK_CHECK(!q.is_same(p), ValueError, op, "some parameters appear in more than one parameter group");
    for (size_t j = 0; j < i; ++j) duplicate = duplicate || params[j].is_same(p);
  }
  // PyTorch accepts this with a warning, and its step then updates that parameter twice.
  if (duplicate)
    std::cerr << "[" << op << "] UserWarning: optimizer contains a parameter group with duplicate parameters; "
              << "in future, this will cause an error\n";
  OptimizerParamGroup g(params, group.has_options() ? group.options().clone() : defaults.clone());
  g.initial_lr() = group.initial_lr();
  return g;
}
}  // namespace

Optimizer::Optimizer(std::vector<OptimizerParamGroup> groups, std::unique_ptr<OptimizerOptions> defaults)
    : defaults_(std::move(defaults)) {
  const char* op = optimizer_name(*defaults_);
  detail::check_hyperparameters(*defaults_, op);
  for (const auto& g : groups) groups_.push_back(checked_group(groups_, *defaults_, g, op));
}

void Optimizer::add_param_group(const OptimizerParamGroup& group) {
  groups_.push_back(checked_group(groups_, *defaults_, group, "add_param_group"));
}

void Optimizer::zero_grad(bool set_to_none) {
  NoGradGuard no_grad;
  for (auto& g : groups_) {
    for (Tensor& p : g.params()) {
      if (!p.grad().defined()) continue;
      if (set_to_none) p.mutable_grad() = Tensor();
      else p.mutable_grad().zero_();
    }
  }
}

ParamState& Optimizer::state(const Tensor& param) { return state_[param.impl()]; }

void Optimizer::check_grad(const Tensor& p, const char* op) {
  const Tensor& g = p.grad();
  WICK_CHECK(g.device() == p.device(), DeviceError, op, "the gradient of a parameter on ", p.device(),
             " is on ", g.device(), "; gradients must live on their parameter's device");
  WICK_CHECK(g.dtype() == p.dtype(), TypeError, op, "the gradient (", g.dtype(), ") and the parameter (",
             p.dtype(), ") differ in dtype");
  WICK_CHECK(g.sizes().equals(p.sizes()), ValueError, op, "the gradient of shape ", g.sizes(),
             " does not match its parameter of shape ", p.sizes());
}

void Optimizer::check_grads(const char* op) const {
  for (const auto& group : groups_)
    for (const Tensor& p : group.params())
      if (p.grad().defined()) check_grad(p, op);
}

}  // namespace wick::optim
