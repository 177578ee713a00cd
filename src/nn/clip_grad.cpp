// nn::utils::clip_grad_norm_ and clip_grad_value_, as torch.nn.utils's.
//
// The total norm is made without waiting for the device. Where the backend has the
// foreach_norm_partials entry (CUDA) and foreach is not false (norm_type 2 or inf), the contiguous
// 16- and 32-bit float gradients of each device and dtype go through one multi-tensor pass that
// leaves a partial norm per chunk (core/kernel_table.h), reduced to the
// group's norm; any other gradient gets a norm of its own (a reduction kernel). Those norms are
// stacked on the first gradient's device and reduced once more, the clip coefficient
// min(max_norm / (total + 1e-6), 1) is computed there as a 0-d tensor, and the gradients are
// multiplied by it in place: a group in one multi-tensor pass (GradScaler's unscale kernel),
// the others one at a time. Only error_if_nonfinite reads the total back to the host.
#include "wick/nn/utils/clip_grad.h"

#include <cmath>
#include <map>
#include <sstream>
#include <utility>

#include "core/kernel_table.h"

#include "wick/autograd.h"
#include "wick/ops.h"

namespace wick::nn::utils {

namespace {

std::vector<Tensor> grads_of(const std::vector<Tensor>& parameters) {
  std::vector<Tensor> grads;
  grads.reserve(parameters.size());
  for (const Tensor& p : parameters)
    if (p.defined() && p.grad().defined()) grads.push_back(p.grad());
  return grads;
}

// norm_type as Python prints a float: 2.0, 0.5, inf.
std::string python_float(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::ostringstream os;
  os << v;
  std::string s = os.str();
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

// The gradients taken by the multi-tensor passes, one list per (device, dtype), and the rest.
struct Groups {
  std::vector<std::vector<Tensor>> lists;
  std::vector<Tensor> rest;
};

Groups group(const std::vector<Tensor>& grads, bool foreach) {
  Groups g;
  std::map<std::pair<int, int>, size_t> index;
  for (const Tensor& t : grads) {
    if (!(foreach && is_floating_point(t.dtype()) && t.dtype() != kFloat64 && t.is_contiguous() &&
          detail::backend(t.device()).foreach_norm_partials)) {
      g.rest.push_back(t);
      continue;
    }
    const auto [it, added] = index.emplace(std::make_pair(t.device().index(), int(t.dtype())), g.lists.size());
    if (added) g.lists.emplace_back();
    g.lists[it->second].push_back(t);
  }
  return g;
}

}  // namespace

Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type,
                       bool error_if_nonfinite, std::optional<bool> foreach) {
  NoGradGuard no_grad;
  const std::vector<Tensor> grads = grads_of(parameters);
  if (grads.empty()) return zeros({});
  const Device first = grads.front().device();
  const bool inf = std::isinf(norm_type) && norm_type > 0;
  const Groups groups = group(grads, foreach.value_or(true) && (norm_type == 2 || inf));
  std::vector<Tensor> norms;
  norms.reserve(groups.lists.size() + groups.rest.size());
  for (const std::vector<Tensor>& list : groups.lists) {
    // the group's norm, in the gradients' dtype as a norm of each would be
    const Tensor partials =
        detail::kernel<&detail::KernelTable::foreach_norm_partials>(list.front().device(), "clip_grad_norm_")(list, inf);
    norms.push_back((inf ? partials.max() : partials.sum().sqrt()).to(first, list.front().dtype()));
  }
  for (const Tensor& g : groups.rest) norms.push_back(norm(g, norm_type).to(first));
  Tensor total = norm(stack(norms), norm_type);
  if (error_if_nonfinite) {
    const double t = total.item<double>();
    WICK_CHECK(std::isfinite(t), ValueError, "clip_grad_norm_", "The total norm of order ", python_float(norm_type),
               " for gradients from `parameters` is non-finite, so it cannot be clipped. To disable this error and "
               "scale the gradients by the non-finite norm anyway, set `error_if_nonfinite=False`");
  }
  Tensor coef = clamp_max(max_norm / (total + 1e-6), 1.0);
  for (const std::vector<Tensor>& list : groups.lists) {
    const Device d = list.front().device();
    const Tensor c = coef.to(d, kFloat32).reshape({1});
    const Tensor unused_flag = zeros({1}, TensorOptions(kFloat32).device(d));
    detail::kernel<&detail::KernelTable::unscale_check>(d, "clip_grad_norm_")(list, unused_flag, c);
  }
  for (const Tensor& g : groups.rest) {
    Tensor target = g;  // a handle to the gradient itself
    target.mul_(coef.to(g.device(), g.dtype()));
  }
  return total;
}

Tensor clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type, bool error_if_nonfinite,
                       std::optional<bool> foreach) {
  return clip_grad_norm_(std::vector<Tensor>{parameter}, max_norm, norm_type, error_if_nonfinite, foreach);
}

void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value, std::optional<bool> foreach) {
  (void)foreach;
  NoGradGuard no_grad;
  for (const Tensor& g : grads_of(parameters)) {
    Tensor target = g;
    target.clamp_(std::optional<Scalar>(-clip_value), std::optional<Scalar>(clip_value));
  }
}

void clip_grad_value_(const Tensor& parameter, double clip_value, std::optional<bool> foreach) {
  clip_grad_value_(std::vector<Tensor>{parameter}, clip_value, foreach);
}

}  // namespace wick::nn::utils
