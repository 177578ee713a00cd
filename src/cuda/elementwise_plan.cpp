#include "cuda/kernels/plan.h"

#include "wick/error.h"

namespace wick::detail::gpu {

Plan make_plan(const TensorIter& it, const char* op) {
  Plan p;
  p.device = it.device().index();
  p.nops = it.noperands();
  p.numel = it.numel();
  p.ndim = it.ndim();
  p.contiguous = it.is_contiguous();
  WICK_CHECK(p.ndim <= kMaxDims, NotImplementedError, op, "more than ", kMaxDims,
             " non-mergeable dimensions are not supported on CUDA (got ", p.ndim, ")");
  WICK_CHECK(p.nops <= 3, NotImplementedError, op, "at most 2 inputs on CUDA");
  for (int d = 0; d < p.ndim; ++d) p.shape[d] = it.shape()[d];
  for (int k = 0; k < p.nops; ++k) {
    p.ptrs[k] = static_cast<char*>(it.operand(k).data_ptr());
    for (int d = 0; d < p.ndim; ++d) p.strides[k][d] = it.strides(k)[d];
  }
  return p;
}

Plan make_plan(const Tensor& out, const char* op) {
  Plan p;
  p.device = out.device().index();
  p.nops = 1;
  p.numel = out.numel();
  p.ptrs[0] = static_cast<char*>(out.data_ptr());
  const int64_t es = out.element_size();
  // Drop size-1 dimensions; merge a dimension into the next inner one when it steps evenly.
  int n = 0;
  for (int64_t d = 0; d < out.dim(); ++d) {
    const int64_t size = out.size(d), stride = out.stride(d) * es;
    if (size == 1) continue;
    if (n > 0 && p.strides[0][n - 1] == stride * size) {
      p.shape[n - 1] *= size;
      p.strides[0][n - 1] = stride;
      continue;
    }
    WICK_CHECK(n < kMaxDims, NotImplementedError, op, "more than ", kMaxDims,
               " non-mergeable dimensions are not supported on CUDA");
    p.shape[n] = size;
    p.strides[0][n] = stride;
    ++n;
  }
  if (n == 0) {
    p.shape[0] = 1;
    p.strides[0][0] = es;
    n = 1;
  }
  p.ndim = n;
  p.contiguous = n == 1 && p.strides[0][0] == es;
  return p;
}

}  // namespace wick::detail::gpu
