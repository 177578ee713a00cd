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
  for (int d = 0; d < p.ndim; ++d) p.shape[d] = it.shape()[d];
  for (int k = 0; k < p.nops; ++k) {
    p.ptrs[k] = static_cast<char*>(it.operand(k).data_ptr());
    for (int d = 0; d < p.ndim; ++d) p.strides[k][d] = it.strides(k)[d];
  }
  return p;
}

}  // namespace wick::detail::gpu
