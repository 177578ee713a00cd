// Optimizer base: groups, state, zero_grad and the gradient checks every step makes.
#include "wick/optim/optimizer.h"

#include <iostream>
#include <typeinfo>

#include "core/cuda_hooks.h"
#include "optim/optimizer_internal.h"
#include "wick/autograd.h"
#include "wick/ops.h"
#include "wick/optim/adagrad.h"
#include "wick/optim/adam.h"
#include "wick/optim/adamax.h"
#include "wick/optim/asgd.h"
#include "wick/optim/nadam.h"
#include "wick/optim/radam.h"
#include "wick/optim/rmsprop.h"
#include "wick/optim/rprop.h"
#include "wick/optim/sgd.h"

namespace wick::detail {

void check_host_step_not_capturing(const std::vector<optim::OptimizerParamGroup>& groups, const char* op,
                                   const char* why) {
  for (const auto& group : groups)
    for (const Tensor& p : group.params())
      if (p.is_cuda() && p.grad().defined()) cuda_check_not_capturing(p.device(), op, why);
}

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

namespace {
// The checks of Adam's constructor, which Adamax, NAdam and RAdam make too.
void check_adam_like(double lr, double eps, std::tuple<double, double> betas, double weight_decay, const char* op) {
  WICK_CHECK(lr >= 0, ValueError, op, "Invalid learning rate: ", lr);
  WICK_CHECK(eps >= 0, ValueError, op, "Invalid epsilon value: ", eps);
  const auto [b1, b2] = betas;
  WICK_CHECK(b1 >= 0 && b1 < 1, ValueError, op, "Invalid beta parameter at index 0: ", b1);
  WICK_CHECK(b2 >= 0 && b2 < 1, ValueError, op, "Invalid beta parameter at index 1: ", b2);
  WICK_CHECK(weight_decay >= 0, ValueError, op, "Invalid weight_decay value: ", weight_decay);
}
}  // namespace

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
  } else if (const auto* o = dynamic_cast<const AdamaxOptions*>(&options)) {
    check_adam_like(o->lr(), o->eps(), o->betas(), o->weight_decay(), op);
  } else if (const auto* o = dynamic_cast<const NAdamOptions*>(&options)) {
    check_adam_like(o->lr(), o->eps(), o->betas(), o->weight_decay(), op);
    WICK_CHECK(o->momentum_decay() >= 0, ValueError, op, "Invalid momentum_decay value: ", o->momentum_decay());
  } else if (const auto* o = dynamic_cast<const RAdamOptions*>(&options)) {
    check_adam_like(o->lr(), o->eps(), o->betas(), o->weight_decay(), op);
  } else if (const auto* o = dynamic_cast<const RpropOptions*>(&options)) {
    WICK_CHECK(o->lr() >= 0, ValueError, op, "Invalid learning rate: ", o->lr());
    const auto [minus, plus] = o->etas();
    WICK_CHECK(0 < minus && minus < 1 && 1 < plus, ValueError, op, "Invalid eta values: ", minus, ", ", plus);
  } else if (const auto* o = dynamic_cast<const ASGDOptions*>(&options)) {
    WICK_CHECK(o->lr() >= 0, ValueError, op, "Invalid learning rate: ", o->lr());
    WICK_CHECK(o->weight_decay() >= 0, ValueError, op, "Invalid weight_decay value: ", o->weight_decay());
  }
}

bool foreach_fits(const Tensor& t, const Tensor& p) {
  return t.defined() && t.is_contiguous() && t.dtype() == p.dtype() && t.device() == p.device() &&
         t.numel() == p.numel();
}

bool has_betas(const optim::OptimizerOptions& o) {
  using namespace optim;
  return dynamic_cast<const AdamOptions*>(&o) || dynamic_cast<const AdamaxOptions*>(&o) ||
         dynamic_cast<const NAdamOptions*>(&o) || dynamic_cast<const RAdamOptions*>(&o);
}

bool has_momentum(const optim::OptimizerOptions& o) {
  return dynamic_cast<const optim::SGDOptions*>(&o) || dynamic_cast<const optim::RMSpropOptions*>(&o);
}

void set_momentum_or_beta1(optim::OptimizerOptions& o, double value) {
  using namespace optim;
  auto beta1 = [&](auto* opts) { opts->betas({value, std::get<1>(opts->betas())}); };
  if (auto* a = dynamic_cast<AdamOptions*>(&o)) beta1(a);
  else if (auto* x = dynamic_cast<AdamaxOptions*>(&o)) beta1(x);
  else if (auto* n = dynamic_cast<NAdamOptions*>(&o)) beta1(n);
  else if (auto* r = dynamic_cast<RAdamOptions*>(&o)) beta1(r);
  else if (auto* sgd = dynamic_cast<SGDOptions*>(&o)) sgd->momentum(value);
  else if (auto* rms = dynamic_cast<RMSpropOptions*>(&o)) rms->momentum(value);
}

Tensor scalar_state(double value) {
  return wick::tensor(value, TensorOptions(get_default_dtype() == kFloat64 ? kFloat64 : kFloat32));
}

void scalar_state_mul(Tensor& t, double b) {
  const double a = t.item<double>();
  if (t.dtype() == kFloat64) t.fill_(a * b);
  else t.fill_(double(float(a) * float(b)));
}

Tensor& state_tensor(optim::ParamState& st, const char* name, const std::function<Tensor()>& make) {
  auto it = st.tensors.find(name);
  if (it == st.tensors.end()) it = st.tensors.emplace(name, make()).first;
  return it->second;
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
  if (dynamic_cast<const AdamaxOptions*>(&d)) return "Adamax";
  if (dynamic_cast<const NAdamOptions*>(&d)) return "NAdam";
  if (dynamic_cast<const RAdamOptions*>(&d)) return "RAdam";
  if (dynamic_cast<const RpropOptions*>(&d)) return "Rprop";
  if (dynamic_cast<const ASGDOptions*>(&d)) return "ASGD";
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

Tensor Optimizer::step(const std::function<Tensor()>& closure) {
  Tensor loss;
  if (closure) {
    AutoGradMode enable(true);
    loss = closure();
  }
  step();
  return loss;
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
