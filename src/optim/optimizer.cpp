// Optimizer base: groups, state, zero_grad and the gradient checks every step makes.
#include "wick/optim/optimizer.h"

#include <typeinfo>

#include "optim/optimizer_internal.h"
#include "wick/autograd.h"
#include "wick/ops.h"
#include "wick/optim/adam.h"

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

Optimizer::Optimizer(std::vector<OptimizerParamGroup> groups, std::unique_ptr<OptimizerOptions> defaults)
    : defaults_(std::move(defaults)) {
  for (const auto& g : groups) add_param_group(g);
}

namespace {
// Whether a group's options suit the optimizer whose defaults are d: its step reads them as
// d's type (Adam and AdamW share AdamOptions and AdamWOptions).
bool same_kind(const OptimizerOptions& o, const OptimizerOptions& d) {
  if (typeid(o) == typeid(d)) return true;
  return dynamic_cast<const AdamOptions*>(&o) != nullptr && dynamic_cast<const AdamOptions*>(&d) != nullptr;
}
}  // namespace

void Optimizer::add_param_group(const OptimizerParamGroup& group) {
  WICK_CHECK(!group.has_options() || same_kind(group.options(), *defaults_), TypeError, "add_param_group",
             "the group's options are of another optimizer's type (", typeid(group.options()).name(),
             ") than this optimizer's (", typeid(*defaults_).name(), ")");
  OptimizerParamGroup g(group.params(), group.has_options() ? group.options().clone() : defaults_->clone());
  g.initial_lr() = group.initial_lr();
  for (const Tensor& p : g.params()) {
    WICK_CHECK(p.defined(), ValueError, "add_param_group", "optimizer got an undefined parameter");
    WICK_CHECK(p.is_leaf(), ValueError, "add_param_group", "can't optimize a non-leaf Tensor");
    for (const auto& other : groups_)
      for (const Tensor& q : other.params())
        WICK_CHECK(!q.is_same(p), ValueError, "add_param_group",
                   "some parameters appear in more than one parameter group");
  }
  groups_.push_back(std::move(g));
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
