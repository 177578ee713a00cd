// cat and stack. cat checks shapes, promotes dtypes, allocates the result and copies each
// input into its slice with the backend's copy family (no kernel of its own); stack is cat of
// the inputs unsqueezed at dim. With grad, the result is computed once and then recorded
// (autograd/hooks.h).
#include "autograd/hooks.h"
#include "core/as_op.h"
#include "core/autocast.h"
#include "core/kernel_table.h"
#include "core/checks.h"
#include "core/tensor_ops.h"
#include "wick/ops.h"

namespace wick {

using namespace detail;

namespace {
Tensor cat_impl(const std::vector<Tensor>& tensors, int64_t dim);
Tensor stack_impl(const std::vector<Tensor>& tensors, int64_t dim);
}  // namespace

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  if (autocast::active()) [[unlikely]]
    return autocast::run(
        autocast::Policy::None, autocast::Policy::Promote, "cat",
        [&](const std::vector<Tensor>& ts) { return wick::cat(ts, dim); }, tensors);
  const bool grad = needs_grad(tensors);
  Tensor out = forward_once(grad, [&] { return cat_impl(tensors, dim); });
  if (grad) [[unlikely]] autograd::record_cat(tensors, out, dim);
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  if (autocast::active()) [[unlikely]]
    return autocast::run(
        autocast::Policy::None, autocast::Policy::Promote, "stack",
        [&](const std::vector<Tensor>& ts) { return wick::stack(ts, dim); }, tensors);
  const bool grad = needs_grad(tensors);
  Tensor out = forward_once(grad, [&] { return stack_impl(tensors, dim); });
  if (grad) [[unlikely]] autograd::record_stack(tensors, out, dim);
  return out;
}

namespace {

Tensor cat_impl(const std::vector<Tensor>& tensors, int64_t dim) {
  WICK_CHECK(!tensors.empty(), ValueError, "cat", "expected a non-empty list of Tensors");
  for (const Tensor& t : tensors) check_defined(t, "cat", "tensors");
  // 1-D empty tensors are skipped in shape checks, as PyTorch still allows for old code.
  auto skipped = [](const Tensor& t) { return t.dim() == 1 && t.size(0) == 0; };
  const Tensor* ref = nullptr;
  Dtype dtype = tensors[0].dtype();
  for (const Tensor& t : tensors) {
    WICK_CHECK(t.defined(), ValueError, "cat", "expected defined tensors");
    check_same_device(t, tensors[0].device(), "cat", "tensors");
    dtype = promote_types(dtype, t.dtype());
    if (!ref && !skipped(t)) ref = &t;
  }
  if (!ref) return empty({0}, TensorOptions(dtype).device(tensors[0].device()));
  WICK_CHECK(ref->dim() > 0, ValueError, "cat", "zero-dimensional tensor (at position ", ref - tensors.data(),
             ") cannot be concatenated");
  const int64_t d = wrap_dim(dim, ref->dim(), "cat");
  DimVector sizes(ref->sizes());
  sizes[size_t(d)] = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (skipped(t)) continue;
    WICK_CHECK(t.dim() == ref->dim(), ValueError, "cat", "Tensors must have same number of dimensions: got ",
               ref->dim(), " and ", t.dim());
    for (int64_t k = 0; k < t.dim(); ++k)
      WICK_CHECK(k == d || t.size(k) == ref->size(k), ValueError, "cat", "Sizes of tensors must match except in dimension ",
                 d, ". Expected size ", ref->size(k), " but got size ", t.size(k), " for tensor number ", i,
                 " in the list.");
    sizes[size_t(d)] += t.size(d);
  }
  Tensor out = empty_for(sizes, TensorOptions(dtype).device(ref->device()), "cat");
  int64_t offset = 0;
  for (const Tensor& t : tensors) {
    if (skipped(t) || t.size(d) == 0) continue;
    copy_values(out.narrow(d, offset, t.size(d)), t, false);
    offset += t.size(d);
  }
  return out;
}

Tensor stack_impl(const std::vector<Tensor>& tensors, int64_t dim) {
  WICK_CHECK(!tensors.empty(), ValueError, "stack", "expects a non-empty TensorList");
  for (const Tensor& t : tensors) check_defined(t, "stack", "tensors");
  const int64_t d = wrap_dim(dim, tensors[0].dim() + 1, "stack");
  std::vector<Tensor> parts;
  parts.reserve(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    WICK_CHECK(tensors[i].sizes().equals(tensors[0].sizes()), ValueError, "stack",
               "stack expects each tensor to be equal size, but got ", tensors[0].sizes(), " at entry 0 and ",
               tensors[i].sizes(), " at entry ", i);
    parts.push_back(tensors[i].unsqueeze(d));
  }
  return as_op("stack", [&] { return cat(parts, d); });
}

}  // namespace

}  // namespace wick
