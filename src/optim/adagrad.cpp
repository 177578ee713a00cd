// Adagrad, as torch.optim's single-tensor form:
//   g = grad (-grad with maximize) + wd p;  clr = lr / (1 + (step - 1) lr_decay)
//   sum += g^2;  p -= clr g / (sqrt(sum) + eps)
// Composed of tensor ops on the parameter's device (no multi-tensor kernel yet); the step count
// lives on the host (clr is a host number), so nothing is read back from the device.
#include "wick/optim/adagrad.h"

#include "optim/optimizer_internal.h"
#include "wick/autograd.h"
#include "wick/ops.h"

namespace wick::optim {

Adagrad::Adagrad(std::vector<Tensor> params, const AdagradOptions& options)
    : Adagrad(detail::one_param_group(std::move(params)), options) {}

Adagrad::Adagrad(std::vector<OptimizerParamGroup> groups, const AdagradOptions& defaults)
    : Optimizer(detail::nonempty_param_groups(std::move(groups), "Adagrad"), defaults.clone()) {
  NoGradGuard no_grad;
  for (const auto& g : groups_) {
    const auto& o = static_cast<const AdagradOptions&>(g.options());
    for (const Tensor& p : g.params())
      state(p).tensors["sum"] = wick::full_like(p, o.initial_accumulator_value());
  }
}

void Adagrad::step() {
  NoGradGuard no_grad;
  check_grads("Adagrad.step");
  detail::check_host_step_not_capturing(
      groups_, "Adagrad.step",
      "its step count lives on the host, so every replay would repeat one step's learning-rate decay");
  for (auto& group : groups_) {
    const auto& o = static_cast<const AdagradOptions&>(group.options());
    for (Tensor& p : group.params()) {
      if (!p.grad().defined()) continue;
      ParamState& st = state(p);
      auto it = st.tensors.find("sum");  // a group added after construction starts here
      if (it == st.tensors.end()) it = st.tensors.emplace("sum", wick::full_like(p, o.initial_accumulator_value())).first;
      Tensor& sum = it->second;
      Tensor g = o.maximize() ? p.grad().neg() : p.grad();
      ++st.step;
      if (o.weight_decay() != 0) g = g.add(p, o.weight_decay());
      const double clr = o.lr() / (1 + double(st.step - 1) * o.lr_decay());
      sum.add_(g * g);
      p.add_(g / sum.sqrt().add_(o.eps()), -clr);
    }
  }
}

}  // namespace wick::optim
