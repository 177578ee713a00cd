// Rprop, as torch.optim's single-tensor form:
//   g = grad (-grad with maximize);  s = sign(g prev) -> etaplus where > 0, etaminus where < 0,
//   1 where 0 (NaN stays);  step_size = clamp(step_size * s, min, max)
//   g = 0 where s was negative;  p -= sign(g) step_size;  prev = g
// Composed of tensor ops on the parameter's device; the step count only counts.
#include "wick/optim/rprop.h"

#include "optim/optimizer_internal.h"
#include "wick/autograd.h"
#include "wick/ops.h"

namespace wick::optim {

Rprop::Rprop(std::vector<Tensor> params, const RpropOptions& options)
    : Rprop(detail::one_param_group(std::move(params)), options) {}

Rprop::Rprop(std::vector<OptimizerParamGroup> groups, const RpropOptions& defaults)
    : Optimizer(detail::nonempty_param_groups(std::move(groups), "Rprop"), defaults.clone()) {}

void Rprop::step() {
  NoGradGuard no_grad;
  check_grads("Rprop.step");
  for (auto& group : groups_) {
    const auto& o = static_cast<const RpropOptions&>(group.options());
    const auto [etaminus, etaplus] = o.etas();
    const auto [step_min, step_max] = o.step_sizes();
    for (Tensor& p : group.params()) {
      if (!p.grad().defined()) continue;
      ParamState& st = state(p);
      Tensor& prev = detail::state_tensor(st, "prev", [&] { return wick::zeros_like(p); });
      Tensor& step_size = detail::state_tensor(st, "step_size", [&] { return wick::full_like(p, o.lr()); });
      Tensor g = o.maximize() ? p.grad().neg() : p.grad();
      ++st.step;
      Tensor sign = g.mul(prev).sign_();
      const Tensor up = sign > 0, down = sign < 0, flat = sign == 0;
      sign.masked_fill_(up, etaplus).masked_fill_(down, etaminus).masked_fill_(flat, 1);
      step_size.mul_(sign).clamp_(step_min, step_max);
      g = g.masked_fill(down, 0);
      p.sub_(g.sign() * step_size);
      prev.copy_(g);
    }
  }
}

}  // namespace wick::optim
