// NAdam, as torch.optim's single-tensor form, at step t:
//   g = grad (-grad with maximize);  decoupled: p *= 1 - lr wd;  else g += wd p
//   mu_t = b1 (1 - 0.96^(t psi) / 2);  mu_product *= mu_t  (in its own dtype, float32 by default)
//   m = lerp(m, g, 1 - b1);  v = b2 v + (1 - b2) g^2;  d = sqrt(v / (1 - b2^t)) + eps
//   p -= lr (1 - mu_t) / (1 - mu_product) g / d + lr mu_{t+1} / (1 - mu_product mu_{t+1}) m / d
// Composed of tensor ops on the parameter's device; the scalars are host numbers.
#include "wick/optim/nadam.h"

#include <cmath>

#include "optim/optimizer_internal.h"
#include "wick/autograd.h"
#include "wick/ops.h"

namespace wick::optim {

NAdam::NAdam(std::vector<Tensor> params, const NAdamOptions& options)
    : NAdam(detail::one_param_group(std::move(params)), options) {}

NAdam::NAdam(std::vector<OptimizerParamGroup> groups, const NAdamOptions& defaults)
    : Optimizer(detail::nonempty_param_groups(std::move(groups), "NAdam"), defaults.clone()) {}

void NAdam::step() {
  NoGradGuard no_grad;
  check_grads("NAdam.step");
  detail::check_host_step_not_capturing(
      groups_, "NAdam.step",
      "its step count and mu_product live on the host, so every replay would repeat one step's scalars");
  for (auto& group : groups_) {
    const auto& o = static_cast<const NAdamOptions&>(group.options());
    const auto [b1, b2] = o.betas();
    const double lr = o.lr();
    for (Tensor& p : group.params()) {
      if (!p.grad().defined()) continue;
      ParamState& st = state(p);
      Tensor& m = detail::state_tensor(st, "exp_avg", [&] { return wick::zeros_like(p); });
      Tensor& v = detail::state_tensor(st, "exp_avg_sq", [&] { return wick::zeros_like(p); });
      Tensor& mu_product = detail::state_tensor(st, "mu_product", [] { return detail::scalar_state(1.0); });
      Tensor g = o.maximize() ? p.grad().neg() : p.grad();
      ++st.step;
      const double t = double(st.step);
      const double bc2 = 1 - std::pow(b2, t);
      if (o.weight_decay() != 0) {
        if (o.decoupled_weight_decay()) p.mul_(1 - lr * o.weight_decay());
        else g = g.add(p, o.weight_decay());
      }
      const double mu = b1 * (1.0 - 0.5 * std::pow(0.96, t * o.momentum_decay()));
      const double mu_next = b1 * (1.0 - 0.5 * std::pow(0.96, (t + 1) * o.momentum_decay()));
      detail::scalar_state_mul(mu_product, mu);
      const double prod = mu_product.item<double>(), prod_next = prod * mu_next;
      m.lerp_(g, 1 - b1);
      v.mul_(b2).add_(g * g, 1 - b2);
      Tensor denom = v.div(bc2).sqrt_().add_(o.eps());
      p.add_(g / denom, -lr * (1.0 - mu) / (1.0 - prod));
      p.add_(m / denom, (-lr * mu_next) / (1.0 - prod_next));
    }
  }
}

}  // namespace wick::optim
