// softmax and log_softmax over one dim. With a dtype the input is cast first (as PyTorch's
// dtype argument does); the backend sees a contiguous [outer, n, inner] tensor.
#include "autograd/hooks.h"
#include "core/kernel_table.h"
#include "core/tensor_iter.h"
#include "wick/ops.h"

namespace wick {

using namespace detail;

namespace {

Tensor softmax_impl(bool log, const Tensor& t, int64_t dim, std::optional<Dtype> dtype, const char* name) {
  const int64_t d = wrap_dim(dim, t.dim(), name);
  Tensor in = dtype && *dtype != t.dtype() ? t.to(*dtype) : t;
  WICK_CHECK(is_floating_point(in.dtype()), TypeError, name, "\"", name, "\" not implemented for '", in.dtype(), "'");
  in = in.contiguous();
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < d; ++i) outer *= in.size(i);
  for (int64_t i = d + 1; i < in.dim(); ++i) inner *= in.size(i);
  const int64_t n = in.dim() ? in.size(d) : 1;
  Tensor out = empty(in.sizes(), in.options());
  kernel<&KernelTable::softmax>(in.device(), name)(log, out.view({outer, n, inner}), in.view({outer, n, inner}));
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
