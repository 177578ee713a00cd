// SGD, as torch.optim.SGD: d = g + wd p; buf = momentum buf + (1 - dampening) d (buf = d on
// the first step); d = d + momentum buf (Nesterov) or buf; p -= lr d.
//
// With foreach (the default), the dense parameters of a group are bucketed by (device, dtype)
// and each bucket takes one multi-tensor kernel (KernelTable's sgd_step: one pass per element,
// a few launches on CUDA); any other parameter takes the per-parameter ops below.
#include "wick/optim/sgd.h"

#include <map>
#include <tuple>

#include "core/kernel_table.h"
#include "core/tensor_ops.h"
#include "optim/optimizer_internal.h"
#include "wick/autograd.h"
#include "wick/ops.h"

namespace wick::optim {

SGD::SGD(std::vector<Tensor> params, const SGDOptions& options)
    : SGD(detail::one_param_group(std::move(params)), options) {}

SGD::SGD(std::vector<OptimizerParamGroup> groups, const SGDOptions& defaults)
    : Optimizer(detail::nonempty_param_groups(std::move(groups), "SGD"), defaults.clone()) {}

void SGD::step() {
  NoGradGuard no_grad;
  check_grads("SGD.step");
  for (auto& group : groups_) {
    const auto& o = static_cast<const SGDOptions&>(group.options());
    // (device type, device index, dtype, first step) -> parameters, gradients, buffers.
    using Key = std::tuple<int, int, int, bool>;
    struct Lists {
      std::vector<Tensor> params, grads, bufs;
    };
    std::map<Key, Lists> buckets;
    for (Tensor& p : group.params()) {
      if (!p.grad().defined()) continue;
      check_grad(p, "SGD.step");
      if (o.foreach () && p.is_floating_point() && p.is_contiguous() && detail::foreach_fits(p.grad(), p)) {
        Tensor buf;
        bool init = false;
        if (o.momentum() != 0) {
          ParamState& st = state(p);
          auto it = st.tensors.find("momentum_buffer");
          if (it == st.tensors.end()) init = true;
          else buf = it->second;
        }
        if (o.momentum() == 0 || init || detail::foreach_fits(buf, p)) {
          // Zeroed, though the first step writes it without reading (buf = d): the fused kernel
          // loads every operand, and nothing should read memory that was never written.
          if (init) buf = state(p).tensors["momentum_buffer"] = wick::zeros_like(p);
          Lists& l = buckets[Key{int(p.device().type()), int(p.device().index()), int(p.dtype()), init}];
          l.params.push_back(p);
          l.grads.push_back(p.grad());
          if (buf.defined()) l.bufs.push_back(buf);
          continue;
        }
      }
      Tensor d = o.maximize() ? p.grad().neg() : p.grad();
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
    for (auto& [key, l] : buckets) {
      const detail::SgdStepArgs args{o.lr(),       o.momentum(), o.dampening(),   o.weight_decay(),
                                     o.nesterov(), o.maximize(), std::get<3>(key)};
      const Device device = l.params[0].device();
      detail::kernel<&detail::KernelTable::sgd_step>(device, "SGD.step")(l.params, l.grads, l.bufs, args);
      for (const Tensor& p : l.params) detail::bump_version(p);
      for (const Tensor& b : l.bufs) detail::bump_version(b);
    }
  }
}

}  // namespace wick::optim
