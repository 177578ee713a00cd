// DimPlan: a reduction over some dims of t, seen as a contiguous [outer, n, inner] tensor that
// is reduced over n, the shape the backends' reduce_dim and softmax families take.
#pragma once

#include "wick/tensor.h"

namespace wick::detail {

struct DimPlan {
  Tensor in;            // contiguous [outer, n, inner]; a view of t whenever its layout allows
  DimVector out_sizes;  // the result's sizes (reduced dims dropped, or kept as 1 with keepdim)
  int64_t outer = 1, n = 1, inner = 1;
};

// dims empty: every dim. Throws IndexError for a dim out of range, ValueError for a repeat.
DimPlan plan_dims(const Tensor& t, IntArrayRef dims, bool keepdim, const char* op);

}  // namespace wick::detail
