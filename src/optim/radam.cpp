// RAdam, as torch.optim's single-tensor form, at step t:
//   g = grad (-grad with maximize);  decoupled: p *= 1 - lr wd;  else g += wd p
//   m = lerp(m, g, 1 - b1);  v = b2 v + (1 - b2) g^2
//   rho_inf = 2 / (1 - b2) - 1;  rho_t = rho_inf - 2 t b2^t / (1 - b2^t)
//   rho_t > 5:  p -= m / (1 - b1^t) * lr * sqrt(1 - b2^t) / (sqrt(v) + eps) * r_t,
//               r_t = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))
//   else:       p -= m / (1 - b1^t) * lr
// Composed of tensor ops on the parameter's device; the scalars are host numbers.
#include "wick/optim/radam.h"

#include <cmath>

#include "optim/optimizer_internal.h"
#include "wick/autograd.h"
#include "wick/ops.h"

namespace wick::optim {

RAdam::RAdam(std::vector<Tensor> params, const RAdamOptions& options)
    : RAdam(detail::one_param_group(std::move(params)), options) {}

RAdam::RAdam(std::vector<OptimizerParamGroup> groups, const RAdamOptions& defaults)
    : Optimizer(detail::nonempty_param_groups(std::move(groups), "RAdam"), defaults.clone()) {}

void RAdam::step() {
  NoGradGuard no_grad;
  check_grads("RAdam.step");
  detail::check_host_step_not_capturing(
      groups_, "RAdam.step",
      "its step count lives on the host, so every replay would repeat one step's rectification");
  for (auto& group : groups_) {
    const auto& o = static_cast<const RAdamOptions&>(group.options());
    const auto [b1, b2] = o.betas();
    const double lr = o.lr();
    for (Tensor& p : group.params()) {
      if (!p.grad().defined()) continue;
      ParamState& st = state(p);
      Tensor& m = detail::state_tensor(st, "exp_avg", [&] { return wick::zeros_like(p); });
      Tensor& v = detail::state_tensor(st, "exp_avg_sq", [&] { return wick::zeros_like(p); });
      Tensor g = o.maximize() ? p.grad().neg() : p.grad();
      ++st.step;
      const double t = double(st.step);
      if (o.weight_decay() != 0) {
        if (o.decoupled_weight_decay()) p.mul_(1 - lr * o.weight_decay());
        else g = g.add(p, o.weight_decay());
      }
      m.lerp_(g, 1 - b1);
      v.mul_(b2).add_(g * g, 1 - b2);
      const double bc1 = 1 - std::pow(b1, t), bc2 = 1 - std::pow(b2, t);
      const double rho_inf = 2 / (1 - b2) - 1;
      const double rho_t = rho_inf - 2 * t * std::pow(b2, t) / bc2;
      Tensor corrected = m / bc1;
      if (rho_t > 5.0) {
        const double rect =
            std::sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t));
        // PyTorch's number / tensor is the tensor's reciprocal times the number.
        Tensor adaptive = v.sqrt().add_(o.eps()).reciprocal_().mul_(std::sqrt(bc2));
        p.sub_(corrected.mul_(lr).mul_(adaptive).mul_(rect));
      } else {
        p.sub_(corrected.mul_(lr));
      }
    }
  }
}

}  // namespace wick::optim
