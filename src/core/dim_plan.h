// The one planner for work "along a dim": a reduction over some dims of t (sum, mean, max,
// min, argmax, argmin, var, std, norm) or an op along one dim (softmax) sees t as a contiguous
// [outer, n, inner] tensor and works over n, the shape the backends' reduce and softmax
// families take. The result's column o * inner + j is element (o, j) of the kept dims, in t's
// dim order, so a contiguous result of out_sizes (or of t's sizes, for softmax) lines up.
#pragma once

#include <cstdint>

#include "wick/tensor.h"

namespace wick::detail {

enum class PlanMode : uint8_t {
  View,  // in is a view of t: the kernel reads t's own memory
  Copy,  // in is a fresh contiguous copy of t (kept dims first, then the reduced ones)
};

struct DimPlan {
  Tensor in;  // contiguous [outer, n, inner]
  PlanMode mode = PlanMode::View;
  DimVector out_sizes;  // the result's sizes: reduced dims dropped, or kept as 1 with keepdim
  int64_t outer = 1, n = 1, inner = 1;
};

// Over dims (empty: every dim), in any order. A view when t is contiguous and no kept dim of
// size > 1 lies between reduced ones, or when t permuted to (kept, reduced) or (reduced, kept)
// is contiguous; else a copy. Throws IndexError for a dim out of range, ValueError for a
// repeated one. A 0-dim t is planned as [1, 1, 1] (its dim may be named as 0 or -1).
DimPlan plan_dims(const Tensor& t, IntArrayRef dims, bool keepdim, const char* op);

// Along one dim. in_order: in keeps t's dim order (a view only when t is contiguous, else a
// copy of t.contiguous()), for results that have t's shape, as softmax's do.
DimPlan plan_along(const Tensor& t, int64_t dim, bool keepdim, const char* op, bool in_order = false);

}  // namespace wick::detail
