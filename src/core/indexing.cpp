// index_select, gather and one_hot. index_select and gather share the backend's gather
// family: the source is restrided with stride 0 along the indexed dim (and, for index_select,
// the 1-D index is restrided across the output's shape), so one elementwise pass reads
// src[..., index[...], ...]. Bounds are checked by the backend before it writes. With grad, the
// result is computed once and then recorded (autograd/hooks.h).
#include <algorithm>
#include <vector>

#include "autograd/hooks.h"
#include "core/as_op.h"
#include "core/kernel_table.h"
#include "core/tensor_iter.h"
#include "core/tensor_ops.h"
#include "wick/ops.h"

namespace wick {

using namespace detail;

namespace {

// out[i] = src[..., index_r[i], ...] along dim d through the gather family: src_r is src
// restrided to the output's shape with stride 0 along d.
Tensor run_gather(const Tensor& src, int64_t d, const Tensor& index_r, const char* op) {
  DimVector strides(src.strides());
  strides[size_t(d)] = 0;
  Tensor src_r = make_view(src, index_r.sizes(), strides, src.storage_offset());
  IterConfig cfg;
  cfg.op = op;
  cfg.names[1] = "index";
  cfg.compute_dtype = src.dtype();
  cfg.keep_dtype = 2;  // the index keeps its integer dtype
  cfg.contiguous_output = true;
  auto it = TensorIter::build({}, {src_r, index_r}, cfg);
  if (it.numel() == 0) return it.result();  // nothing to gather (an empty src's strides may be huge)
  kernel<&KernelTable::gather>(it.device(), op)(it, src.stride(d) * src.element_size(), src.size(d), op);
  return it.result();
}

Tensor index_select_impl(const Tensor& t, int64_t dim, const Tensor& index);
Tensor gather_impl(const Tensor& t, int64_t dim, const Tensor& index);

}  // namespace

Tensor index_select(const Tensor& t, int64_t dim, const Tensor& index) {
  check_defined(t, "index_select", "self");
  check_defined(index, "index_select", "index");
  const bool grad = needs_grad(t);
  Tensor out = forward_once(grad, [&] { return index_select_impl(t, dim, index); });
  if (grad) [[unlikely]] autograd::record_index_select(t, index, out, dim);
  return out;
}

Tensor gather(const Tensor& t, int64_t dim, const Tensor& index) {
  check_defined(t, "gather", "self");
  check_defined(index, "gather", "index");
  const bool grad = needs_grad(t);
  Tensor out = forward_once(grad, [&] { return gather_impl(t, dim, index); });
  if (grad) [[unlikely]] autograd::record_gather(t, index, out, dim);
  return out;
}

namespace {

Tensor index_select_impl(const Tensor& t, int64_t dim, const Tensor& index) {
  WICK_CHECK(index.dim() <= 1, IndexError, "index_select", "Index is supposed to be a vector");
  WICK_CHECK(index.dtype() == kInt64 || index.dtype() == kInt32, TypeError, "index_select",
             "Expected dtype int32 or int64 for index (got ", index.dtype(), ")");
  const int64_t d = wrap_dim(dim, t.dim(), "index_select");
  const int64_t k = index.numel();
  WICK_CHECK(t.dim() > 0 || k == 1, IndexError, "index_select", "Index to scalar can have only 1 value, got ",
             k, " value(s)");
  // A 0-d self is indexed as [1] and the result viewed back as 0-d.
  Tensor src = t.dim() == 0 ? t.reshape({1}) : t;
  Tensor idx = index.dim() == 0 ? index.reshape({1}) : index;
  DimVector sizes(src.sizes()), idx_strides(size_t(src.dim()), 0);
  sizes[size_t(d)] = k;
  idx_strides[size_t(d)] = idx.stride(0);  // the 1-D index spread across the output's shape
  Tensor out = run_gather(src, d, make_view(idx, sizes, idx_strides, idx.storage_offset()), "index_select");
  return t.dim() == 0 ? out.view({}) : out;
}

Tensor gather_impl(const Tensor& t, int64_t dim, const Tensor& index) {
  WICK_CHECK(index.dtype() == kInt64, TypeError, "gather", "Expected dtype int64 for index (got ",
             index.dtype(), ")");
  const int64_t d = wrap_dim(dim, t.dim(), "gather");
  // 0-d operands act as [1]; the result takes index's shape.
  Tensor src = t.dim() == 0 ? t.reshape({1}) : t;
  Tensor idx = index.dim() == 0 ? index.reshape({1}) : index;
  WICK_CHECK(idx.dim() == src.dim(), ValueError, "gather",
             "Index tensor must have the same number of dimensions as input tensor");
  for (int64_t i = 0; i < src.dim(); ++i)
    WICK_CHECK(i == d || idx.size(i) <= src.size(i), ValueError, "gather", "Size does not match at dimension ", i,
               " expected index ", index.sizes(), " to be no larger than self ", t.sizes(), " apart from dimension ",
               d);
  Tensor out = run_gather(src, d, idx, "gather");
  return index.dim() == 0 ? out.view({}) : out;
}

}  // namespace

Tensor one_hot(const Tensor& t, int64_t num_classes) {
  return wick::detail::as_op("one_hot", [&]() -> Tensor {
    check_defined(t, "one_hot", "self");
    WICK_CHECK(t.dtype() == kInt64, TypeError, "one_hot",
               "one_hot is only applicable to index tensor of type int64 (got ", t.dtype(), ")");
    WICK_CHECK(num_classes >= -1, ValueError, "one_hot", "num_classes should be positive or -1 (got ",
               num_classes, ")");
    if (t.numel() == 0) {
      WICK_CHECK(num_classes > 0, ValueError, "one_hot",
                 "Can not infer total number of classes from empty tensor.");
    } else {
      WICK_CHECK(wick::min(t).item<int64_t>() >= 0, ValueError, "one_hot",
                 "Class values must be non-negative.");
      const int64_t hi = wick::max(t).item<int64_t>();
      if (num_classes == -1) num_classes = hi + 1;
      WICK_CHECK(hi < num_classes, ValueError, "one_hot", "Class values must be smaller than num_classes.");
    }
    // (t[..., None] == arange(C)) as int64: two existing kernels, no kernel of its own. The
    // result is row-major whatever t's layout, as PyTorch's.
    Tensor classes = arange(num_classes, TensorOptions(kInt64).device(t.device()));
    return eq(t.unsqueeze(-1), classes).to(kInt64, false, false, MemoryFormat::Contiguous);
  });
}

// torch.flip: each flipped dim is an index_select with the reversed positions (one copy per
// dim, no kernel of its own; the gradient flows through index_select's).
Tensor flip(const Tensor& t, IntArrayRef dims) {
  return as_op("flip", [&]() -> Tensor {
    check_defined(t, "flip", "self");
    std::vector<bool> seen(size_t(std::max<int64_t>(t.dim(), 1)), false);
    std::vector<int64_t> wrapped;
    for (int64_t d : dims) {
      const int64_t w = wrap_dim(d, t.dim(), "flip");
      WICK_CHECK(!seen[size_t(w)], ValueError, "flip", "dim ", w, " appears multiple times in the list of dims");
      seen[size_t(w)] = true;
      wrapped.push_back(w);
    }
    if (t.dim() == 0 || wrapped.empty()) return t.clone();
    Tensor out = t;
    for (int64_t w : wrapped) {
      const int64_t n = t.size(w);
      out = out.index_select(w, arange(n - 1, -1, -1, TensorOptions(kInt64).device(t.device())));
    }
    return out;
  });
}

Tensor Tensor::index_select(int64_t dim, const Tensor& index) const {
  return wick::index_select(*this, dim, index);
}
Tensor Tensor::flip(IntArrayRef dims) const { return wick::flip(*this, dims); }
Tensor Tensor::gather(int64_t dim, const Tensor& index) const { return wick::gather(*this, dim, index); }

}  // namespace wick
