// nn::utils::clip_grad_norm_ and clip_grad_value_, as torch.nn.utils's.
//
// The total norm is made without waiting for the device: one norm per gradient (each a
// reduction kernel on its device), those norms stacked on the first gradient's device and
// reduced once more, the clip coefficient min(max_norm / (total + 1e-6), 1) computed there as a
// 0-d tensor, and every gradient multiplied by it in place. Only error_if_nonfinite reads the
// total back to the host.
#include "wick/nn/utils/clip_grad.h"

#include <cmath>
#include <sstream>

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

}  // namespace

Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type,
                       bool error_if_nonfinite, std::optional<bool> foreach) {
  (void)foreach;
  NoGradGuard no_grad;
  const std::vector<Tensor> grads = grads_of(parameters);
  if (grads.empty()) return zeros({});
  const Device first = grads.front().device();
  std::vector<Tensor> norms;
  norms.reserve(grads.size());
  for (const Tensor& g : grads) norms.push_back(norm(g, norm_type).to(first));
  Tensor total = norm(stack(norms), norm_type);
  if (error_if_nonfinite) {
    const double t = total.item<double>();
    WICK_CHECK(std::isfinite(t), ValueError, "clip_grad_norm_", "The total norm of order ", python_float(norm_type),
               " for gradients from `parameters` is non-finite, so it cannot be clipped. To disable this error and "
               "scale the gradients by the non-finite norm anyway, set `error_if_nonfinite=False`");
  }
  Tensor coef = clamp_max(max_norm / (total + 1e-6), 1.0);
  for (const Tensor& g : grads) {
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
