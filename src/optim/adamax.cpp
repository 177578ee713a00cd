// Adamax, as torch.optim's single-tensor form:
//   g = grad (-grad with maximize) + wd p;  m = lerp(m, g, 1 - b1);  u = max(b2 u, |g| + eps)
//   p -= lr / (1 - b1^t) * m / u
// Composed of tensor ops on the parameter's device; the bias correction is a host number.
#include "wick/optim/adamax.h"

#include <cmath>

#include "optim/optimizer_internal.h"
#include "wick/autograd.h"
#include "wick/ops.h"

namespace wick::optim {

Adamax::Adamax(std::vector<Tensor> params, const AdamaxOptions& options)
    : Adamax(detail::one_param_group(std::move(params)), options) {}

Adamax::Adamax(std::vector<OptimizerParamGroup> groups, const AdamaxOptions& defaults)
    : Optimizer(detail::nonempty_param_groups(std::move(groups), "Adamax"), defaults.clone()) {}

void Adamax::step() {
  NoGradGuard no_grad;
  check_grads("Adamax.step");
  detail::check_host_step_not_capturing(
      groups_, "Adamax.step",
      "its step count lives on the host, so every replay would repeat one step's bias correction");
  for (auto& group : groups_) {
    const auto& o = static_cast<const AdamaxOptions&>(group.options());
    const auto [b1, b2] = o.betas();
    for (Tensor& p : group.params()) {
      if (!p.grad().defined()) continue;
      ParamState& st = state(p);
      Tensor& m = detail::state_tensor(st, "exp_avg", [&] { return wick::zeros_like(p); });
      Tensor& u = detail::state_tensor(st, "exp_inf", [&] { return wick::zeros_like(p); });
      Tensor g = o.maximize() ? p.grad().neg() : p.grad();
      ++st.step;
      if (o.weight_decay() != 0) g = g.add(p, o.weight_decay());
      m.lerp_(g, 1 - b1);
      u.copy_(wick::maximum(u.mul_(b2), g.abs().add_(o.eps())));
      const double clr = o.lr() / (1 - std::pow(b1, double(st.step)));
      p.add_(m / u, -clr);
    }
  }
}

}  // namespace wick::optim
