// RMSprop, as torch.optim's single-tensor form:
//   g = grad (-grad with maximize) + wd p;  v = alpha v + (1 - alpha) g^2
//   centered: m = alpha m + (1 - alpha) g;  avg = sqrt(v - m^2) + eps;  else avg = sqrt(v) + eps
//   momentum: buf = momentum buf + g / avg;  p -= lr buf;  else p -= lr g / avg
// Composed of tensor ops on the parameter's device (no multi-tensor kernel yet); the step
// count only counts, so nothing is read back to the host.
#include "wick/optim/rmsprop.h"

#include "optim/optimizer_internal.h"
#include "wick/autograd.h"
#include "wick/ops.h"

namespace wick::optim {

RMSprop::RMSprop(std::vector<Tensor> params, const RMSpropOptions& options)
    : RMSprop(detail::one_param_group(std::move(params)), options) {}

RMSprop::RMSprop(std::vector<OptimizerParamGroup> groups, const RMSpropOptions& defaults)
    : Optimizer(detail::nonempty_param_groups(std::move(groups), "RMSprop"), defaults.clone()) {
}

void RMSprop::step() {
  NoGradGuard no_grad;
  check_grads("RMSprop.step");
  for (auto& group : groups_) {
    const auto& o = static_cast<const RMSpropOptions&>(group.options());
    for (Tensor& p : group.params()) {
      if (!p.grad().defined()) continue;
      ParamState& st = state(p);
      // A state loaded for other options (momentum or centered turned on since) starts the
      // missing buffers at zero, as PyTorch's lazy initialisation does for a fresh state.
      auto buffer = [&](const char* name) -> Tensor& {
        auto it = st.tensors.find(name);
        if (it == st.tensors.end()) it = st.tensors.emplace(name, wick::zeros_like(p)).first;
        return it->second;
      };
      Tensor g = o.maximize() ? p.grad().neg() : p.grad();
      ++st.step;
      if (o.weight_decay() != 0) g = g.add(p, o.weight_decay());
      Tensor& v = buffer("square_avg");
      v.mul_(o.alpha()).add_(g * g, 1 - o.alpha());
      Tensor avg;
      if (o.centered()) {
        Tensor& m = buffer("grad_avg");
        m.mul_(o.alpha()).add_(g, 1 - o.alpha());
        avg = (v - m * m).sqrt_().add_(o.eps());
      } else {
        avg = v.sqrt().add_(o.eps());
      }
      if (o.momentum() > 0) {
        Tensor& buf = buffer("momentum_buffer");
        buf.mul_(o.momentum()).add_(g / avg);
        p.add_(buf, -o.lr());
      } else {
        p.add_(g / avg, -o.lr());
      }
    }
  }
}

}  // namespace wick::optim
