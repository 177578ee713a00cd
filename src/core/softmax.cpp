// softmax and log_softmax over one dim, and their one-kernel backward (core/softmax.h). With a
// dtype the input is cast first (as PyTorch's dtype argument does); the backend sees a
// contiguous [outer, n, inner] tensor (dim_plan.h). With grad, the result is computed once and
// then recorded (autograd/hooks.h).
#include "core/softmax.h"

#include "autograd/hooks.h"
#include "core/as_op.h"
#include "core/autocast.h"
#include "core/dim_plan.h"
#include "core/kernel_table.h"
#include "core/checks.h"
#include "core/tensor_ops.h"
#include "wick/ops.h"

namespace wick {

using namespace detail;

namespace {

Tensor softmax_impl(bool log, const Tensor& t, int64_t dim, std::optional<Dtype> dtype, const char* name) {
  (void)wrap_dim(dim, t.dim(), name);  // before the cast
  Tensor in = dtype && *dtype != t.dtype() ? t.to(*dtype) : t;
  WICK_CHECK(is_floating_point(in.dtype()), TypeError, name, "\"", name, "\" not implemented for '", in.dtype(), "'");
  // In t's dim order, so that a contiguous result of t's shape is [outer, n, inner] too.
  DimPlan p = as_op(name, [&] { return plan_along(in, dim, true, name, /*in_order=*/true); });
  Tensor out = empty_for(in.sizes(), in.options(), name);
  kernel<&KernelTable::softmax>(in.device(), name)(log, out.view({p.outer, p.n, p.inner}), p.in);
  return out;
}

}  // namespace

namespace detail {

Tensor softmax_backward(bool log, const Tensor& grad, const Tensor& result, int64_t dim) {
  check_defined(grad, "softmax_backward", "grad");
  check_defined(result, "softmax_backward", "result");
  const char* name = log ? "log_softmax_backward" : "softmax_backward";
  dim = wrap_dim(dim, result.dim(), name);
  Tensor y = result.contiguous();
  Tensor g = (grad.dtype() == y.dtype() ? grad : grad.to(y.dtype())).expand(y.sizes()).contiguous();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= y.size(d);
  for (int64_t d = dim + 1; d < y.dim(); ++d) inner *= y.size(d);
  const int64_t n = y.dim() == 0 ? 1 : y.size(dim);
  Tensor gi = empty(y.sizes(), y.options());
  kernel<&KernelTable::softmax_backward>(y.device(), name)(
      log, gi.view({outer, n, inner}), g.view({outer, n, inner}), y.view({outer, n, inner}));
  return gi;
}

Tensor causal_softmax(const Tensor& scores) {
  constexpr const char* name = "softmax";
  check_defined(scores, name, "self");
  if (autocast::active()) [[unlikely]]
    return autocast::run(
        autocast::Policy::Fp32, autocast::Policy::None, name, [](const Tensor& x) { return causal_softmax(x); },
        scores);
  WICK_CHECK(scores.dim() >= 2, ValueError, name, "causal softmax takes scores of at least 2 dims, got ",
             scores.dim());
  WICK_CHECK(is_floating_point(scores.dtype()), TypeError, name, "\"", name, "\" not implemented for '",
             scores.dtype(), "'");
  const bool grad = needs_grad(scores);
  Tensor out = forward_once(grad, [&] {
    Tensor in = scores.contiguous();
    Tensor y = empty_for(in.sizes(), in.options(), name);
    const int64_t n = in.size(-1);
    const int64_t rows = n == 0 ? 0 : in.numel() / n;
    kernel<&KernelTable::causal_softmax>(in.device(), name)(y.view({rows, n}), in.view({rows, n}), in.size(-2));
    return y;
  });
  if (grad) [[unlikely]] autograd::record_softmax(scores, out, -1);
  return out;
}

}  // namespace detail

Tensor softmax(const Tensor& t, int64_t dim, std::optional<Dtype> dtype) {
  check_defined(t, "softmax", "self");
  if (autocast::active() && !dtype) [[unlikely]]
    return autocast::run(
        autocast::Policy::Fp32, autocast::Policy::None, "softmax",
        [&](const Tensor& x) { return wick::softmax(x, dim); }, t);
  const bool grad = needs_grad(t);
  Tensor out = forward_once(grad, [&] { return softmax_impl(false, t, dim, dtype, "softmax"); });
  if (grad) [[unlikely]] autograd::record_softmax(t, out, dim);
  return out;
}
Tensor log_softmax(const Tensor& t, int64_t dim, std::optional<Dtype> dtype) {
  check_defined(t, "log_softmax", "self");
  if (autocast::active() && !dtype) [[unlikely]]
    return autocast::run(
        autocast::Policy::Fp32, autocast::Policy::None, "log_softmax",
        [&](const Tensor& x) { return wick::log_softmax(x, dim); }, t);
  const bool grad = needs_grad(t);
  Tensor out = forward_once(grad, [&] { return softmax_impl(true, t, dim, dtype, "log_softmax"); });
  if (grad) [[unlikely]] autograd::record_log_softmax(t, out, dim);
  return out;
}
Tensor Tensor::softmax(int64_t dim, std::optional<Dtype> dtype) const {
  return wick::softmax(*this, dim, dtype);
}
Tensor Tensor::log_softmax(int64_t dim, std::optional<Dtype> dtype) const {
  check_defined(*this, "log_softmax", "self");
  return wick::log_softmax(*this, dim, dtype);
}

}  // namespace wick
