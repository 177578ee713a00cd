// softmax and log_softmax over one dim. With a dtype the input is cast first (as PyTorch's
// dtype argument does); the backend sees a contiguous [outer, n, inner] tensor (dim_plan.h).
#include "autograd/hooks.h"
#include "core/dim_plan.h"
#include "core/kernel_table.h"
#include "core/tensor_iter.h"
#include "wick/ops.h"

namespace wick {

using namespace detail;

namespace {

Tensor softmax_impl(bool log, const Tensor& t, int64_t dim, std::optional<Dtype> dtype, const char* name) {
  (void)wrap_dim(dim, t.dim(), name);  // before the cast
  Tensor in = dtype && *dtype != t.dtype() ? t.to(*dtype) : t;
  WICK_CHECK(is_floating_point(in.dtype()), TypeError, name, "\"", name, "\" not implemented for '", in.dtype(), "'");
  // In t's dim order, so that a contiguous result of t's shape is [outer, n, inner] too.
  DimPlan p = plan_along(in, dim, true, name, /*in_order=*/true);
  Tensor out = empty(in.sizes(), in.options());
  kernel<&KernelTable::softmax>(in.device(), name)(log, out.view({p.outer, p.n, p.inner}), p.in);
  return out;
}

}  // namespace

Tensor softmax(const Tensor& t, int64_t dim, std::optional<Dtype> dtype) {
  if (needs_grad(t)) [[unlikely]] return autograd::softmax(t, dim, dtype);
  return softmax_impl(false, t, dim, dtype, "softmax");
}
Tensor log_softmax(const Tensor& t, int64_t dim, std::optional<Dtype> dtype) {
  if (needs_grad(t)) [[unlikely]] return autograd::log_softmax(t, dim, dtype);
  return softmax_impl(true, t, dim, dtype, "log_softmax");
}
Tensor Tensor::softmax(int64_t dim, std::optional<Dtype> dtype) const { return wick::softmax(*this, dim, dtype); }
Tensor Tensor::log_softmax(int64_t dim, std::optional<Dtype> dtype) const {
  return wick::log_softmax(*this, dim, dtype);
}

}  // namespace wick
