// Adam and AdamW, as torch.optim's single-tensor forms:
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2  (v_max = max(v_max, v) with amsgrad)
//   p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
// Adam adds wd p to g; AdamW multiplies p by 1 - lr wd first.
//
// With foreach (the default), the dense parameters of a group are bucketed by (device, dtype,
// step count) and each bucket takes one multi-tensor kernel (KernelTable's adam_step: one pass
// per element, a few launches on CUDA; the bias corrections computed here from the step);
// any other parameter takes the per-parameter ops below.
#include "wick/optim/adam.h"

#include <cmath>
#include <map>
#include <tuple>

#include "core/cuda_hooks.h"
#include "core/kernel_table.h"
#include "core/tensor_ops.h"
#include "optim/optimizer_internal.h"
#include "wick/autograd.h"
#include "wick/ops.h"

namespace wick::optim {

namespace {
const Tensor* find(const ParamState& st, const char* name) {
  auto it = st.tensors.find(name);
  return it == st.tensors.end() ? nullptr : &it->second;
}
// The defaults as the options type of the optimizer being made (AdamWOptions for AdamW,
// AdamOptions for Adam), whichever of the two the caller passed: the optimizer's errors name
// the class called, which the base reads from that type.
std::unique_ptr<OptimizerOptions> defaults_as(const AdamOptions& options, bool decoupled) {
  if (!decoupled) return std::make_unique<AdamOptions>(options);
  auto w = std::make_unique<AdamWOptions>();
  static_cast<AdamOptions&>(*w) = options;
  return w;
}

}  // namespace

Adam::Adam(std::vector<Tensor> params, const AdamOptions& options)
    : Adam(detail::one_param_group(std::move(params)), options) {}

Adam::Adam(std::vector<OptimizerParamGroup> groups, const AdamOptions& defaults)
    : Adam(std::move(groups), defaults_as(defaults, false), false) {}

Adam::Adam(std::vector<OptimizerParamGroup> groups, std::unique_ptr<OptimizerOptions> defaults,
           bool decoupled)
    : Optimizer(detail::nonempty_param_groups(std::move(groups), decoupled ? "AdamW" : "Adam"),
                std::move(defaults)),
      decoupled_(decoupled) {}

void Adam::step() {
  NoGradGuard no_grad;
  const char* op = decoupled_ ? "AdamW.step" : "Adam.step";
  check_grads(op);
  for (auto& group : groups_)
    for (const Tensor& p : group.params())
      if (p.is_cuda())
        detail::cuda_check_not_capturing(
            p.device(), op,
            "its step count lives on the host, so every replay would repeat one step's bias "
            "correction");
  for (auto& group : groups_) {
    const auto& o = static_cast<const AdamOptions&>(group.options());
    const auto [b1, b2] = o.betas();
    // (device type, device index, dtype, step after this one) -> the operand lists.
    using Key = std::tuple<int, int, int, int64_t>;
    struct Lists {
      std::vector<Tensor> params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs;
    };
    std::map<Key, Lists> buckets;
    for (Tensor& p : group.params()) {
      if (!p.grad().defined()) continue;
      check_grad(p, op);
      ParamState& st = state(p);
      if (o.foreach () && p.is_floating_point() && p.is_contiguous() && detail::foreach_fits(p.grad(), p)) {
        bool ok = true;
        if (st.step != 0) {
          const Tensor* m = find(st, "exp_avg");
          const Tensor* v = find(st, "exp_avg_sq");
          const Tensor* vmax = o.amsgrad() ? find(st, "max_exp_avg_sq") : nullptr;
          ok = m && v && detail::foreach_fits(*m, p) && detail::foreach_fits(*v, p) &&
               (!o.amsgrad() || (vmax && detail::foreach_fits(*vmax, p)));
        }
        if (ok) {
          if (st.step == 0) {
            st.tensors["exp_avg"] = wick::zeros_like(p);
            st.tensors["exp_avg_sq"] = wick::zeros_like(p);
            if (o.amsgrad()) st.tensors["max_exp_avg_sq"] = wick::zeros_like(p);
          }
          ++st.step;
          Lists& l = buckets[Key{int(p.device().type()), int(p.device().index()), int(p.dtype()), st.step}];
          l.params.push_back(p);
          l.grads.push_back(p.grad());
          l.exp_avgs.push_back(st.tensors["exp_avg"]);
          l.exp_avg_sqs.push_back(st.tensors["exp_avg_sq"]);
          if (o.amsgrad()) l.max_exp_avg_sqs.push_back(st.tensors["max_exp_avg_sq"]);
          continue;
        }
      }
      Tensor g = o.maximize() ? p.grad().neg() : p.grad();
      if (st.step == 0) {
        st.tensors["exp_avg"] = wick::zeros_like(p);
        st.tensors["exp_avg_sq"] = wick::zeros_like(p);
        if (o.amsgrad()) st.tensors["max_exp_avg_sq"] = wick::zeros_like(p);
      }
      ++st.step;
      if (o.weight_decay() != 0) {
        if (decoupled_) p.mul_(1 - o.lr() * o.weight_decay());
        else g = g.add(p, o.weight_decay());
      }
      Tensor m = st.tensors["exp_avg"], v = st.tensors["exp_avg_sq"];
      m.mul_(b1).add_(g, 1 - b1);
      v.mul_(b2).add_(g * g, 1 - b2);
      const double bc1 = 1 - std::pow(b1, double(st.step)), bc2 = 1 - std::pow(b2, double(st.step));
      Tensor vv = v;
      if (o.amsgrad()) {
        Tensor vmax = st.tensors["max_exp_avg_sq"];
        vmax.copy_(wick::where(vmax > v, vmax, v));
        vv = vmax;
      }
      Tensor denom = (vv.sqrt() / std::sqrt(bc2)).add_(o.eps());
      p.sub_(m / denom, o.lr() / bc1);
    }
    for (auto& [key, l] : buckets) {
      const double step = double(std::get<3>(key));
      const double bc1 = 1 - std::pow(b1, step), bc2 = 1 - std::pow(b2, step);
      const detail::AdamStepArgs args{
          o.lr(),         b1,         b2,          o.eps(),     o.weight_decay(), bc1,
          std::sqrt(bc2), decoupled_, o.amsgrad(), o.maximize()};
      detail::kernel<&detail::KernelTable::adam_step>(l.params[0].device(), op)(
          l.params, l.grads, l.exp_avgs, l.exp_avg_sqs, l.max_exp_avg_sqs, args);
      for (auto* list : {&l.params, &l.exp_avgs, &l.exp_avg_sqs, &l.max_exp_avg_sqs})
        for (const Tensor& t : *list) detail::bump_version(t);
    }
  }
}

AdamW::AdamW(std::vector<Tensor> params, const AdamOptions& options)
    : Adam(detail::one_param_group(std::move(params)), defaults_as(options, true), true) {}

AdamW::AdamW(std::vector<OptimizerParamGroup> groups, const AdamOptions& defaults)
    : Adam(std::move(groups), defaults_as(defaults, true), true) {}

}  // namespace wick::optim
