// Cumulative sums and products along one dim, without autograd: what cumsum, cumprod and
// their backward formulas run (src/core/shape_scan_ops.cpp).
#pragma once

#include "core/kernel_table.h"
#include "wick/tensor.h"

namespace wick::detail {

// The inclusive scan of t along dim in t's dtype (reverse: from the last element back), as a
// new contiguous tensor of t's sizes. bool is scanned as int64 and cast back.
Tensor cumulative(ScanOp op, const Tensor& t, int64_t dim, bool reverse, const char* name);

}  // namespace wick::detail
