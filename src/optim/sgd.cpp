// SGD, as torch.optim.SGD: d = g + wd p; buf = momentum buf + (1 - dampening) d (buf = d on
// the first step); d = d + momentum buf (Nesterov) or buf; p -= lr d.
#include "wick/optim/sgd.h"

#include "wick/autograd.h"
#include "wick/ops.h"

namespace wick::optim {

namespace {
std::vector<OptimizerParamGroup> one_group(std::vector<Tensor> params) {
  std::vector<OptimizerParamGroup> g;
  g.emplace_back(std::move(params));
  return g;
}
}  // namespace

SGD::SGD(std::vector<Tensor> params, const SGDOptions& options)
    : SGD(one_group(std::move(params)), options) {}

SGD::SGD(std::vector<OptimizerParamGroup> groups, const SGDOptions& defaults)
    : Optimizer(std::move(groups), defaults.clone()) {
  WICK_CHECK(defaults.lr() >= 0, ValueError, "SGD", "Invalid learning rate: ", defaults.lr());
  WICK_CHECK(defaults.momentum() >= 0, ValueError, "SGD", "Invalid momentum value: ", defaults.momentum());
  WICK_CHECK(defaults.weight_decay() >= 0, ValueError, "SGD",
             "Invalid weight_decay value: ", defaults.weight_decay());
  WICK_CHECK(!defaults.nesterov() || (defaults.momentum() > 0 && defaults.dampening() == 0), ValueError,
             "SGD", "Nesterov momentum requires a momentum and zero dampening");
}

void SGD::step() {
  NoGradGuard no_grad;
  check_grads("SGD.step");
  for (auto& group : groups_) {
    const auto& o = static_cast<const SGDOptions&>(group.options());
    for (Tensor& p : group.params()) {
      if (!p.grad().defined()) continue;
      check_grad(p, "SGD.step");
      Tensor d = p.grad();
      if (o.weight_decay() != 0) d = d.add(p, o.weight_decay());
      if (o.momentum() != 0) {
        ParamState& st = state(p);
        auto it = st.tensors.find("momentum_buffer");
        Tensor buf;
        if (it == st.tensors.end()) {
          buf = st.tensors["momentum_buffer"] = d.clone();
        } else {
          buf = it->second;
          buf.mul_(o.momentum()).add_(d, 1 - o.dampening());
        }
        d = o.nesterov() ? d.add(buf, o.momentum()) : buf;
      }
      p.add_(d, -o.lr());
    }
  }
}

}  // namespace wick::optim
