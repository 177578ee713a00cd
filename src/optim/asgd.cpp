// ASGD, as torch.optim's single-tensor form, at step t (eta and mu: the state's, as stored):
//   g = grad (-grad with maximize) + wd p;  p *= 1 - lambd eta;  p -= eta g
//   ax = p where mu is 1, else ax += mu (p - ax)
//   eta = lr / (1 + lambd lr t)^alpha;  mu = 1 / max(1, t - t0)  (rounded to their dtype)
// Composed of tensor ops on the parameter's device; eta and mu are CPU scalars.
#include "wick/optim/asgd.h"

#include <algorithm>
#include <cmath>

#include "optim/optimizer_internal.h"
#include "wick/autograd.h"
#include "wick/ops.h"

namespace wick::optim {

ASGD::ASGD(std::vector<Tensor> params, const ASGDOptions& options)
    : ASGD(detail::one_param_group(std::move(params)), options) {}

ASGD::ASGD(std::vector<OptimizerParamGroup> groups, const ASGDOptions& defaults)
    : Optimizer(detail::nonempty_param_groups(std::move(groups), "ASGD"), defaults.clone()) {}

void ASGD::step() {
  NoGradGuard no_grad;
  check_grads("ASGD.step");
  detail::check_host_step_not_capturing(
      groups_, "ASGD.step",
      "its step count, eta and mu live on the host, so every replay would repeat one step's scalars");
  for (auto& group : groups_) {
    const auto& o = static_cast<const ASGDOptions&>(group.options());
    for (Tensor& p : group.params()) {
      if (!p.grad().defined()) continue;
      ParamState& st = state(p);
      Tensor& eta = detail::state_tensor(st, "eta", [&] { return detail::scalar_state(o.lr()); });
      Tensor& mu = detail::state_tensor(st, "mu", [] { return detail::scalar_state(1.0); });
      Tensor& ax = detail::state_tensor(st, "ax", [&] { return wick::zeros_like(p); });
      Tensor g = o.maximize() ? p.grad().neg() : p.grad();
      ++st.step;
      if (o.weight_decay() != 0) g = g.add(p, o.weight_decay());
      const double eta_value = eta.item<double>();
      p.mul_(1 - o.lambd() * eta_value);
      p.add_(g, -eta_value);
      const double mu_value = mu.item<double>();
      if (mu_value != 1) ax.add_((p - ax).mul_(mu_value));
      else ax.copy_(p);
      const double t = double(st.step);
      eta.fill_(o.lr() / std::pow(1 + o.lambd() * o.lr() * t, o.alpha()));
      mu.fill_(1 / std::max(1.0, t - o.t0()));
    }
  }
}

}  // namespace wick::optim
