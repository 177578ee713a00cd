// The CPU kernel of the Philox random stream (src/core/philox.h).
#pragma once

#include "core/kernel_table.h"

namespace wick::detail::cpu {

void random(RandomOp op, const Tensor& out, uint64_t seed, uint64_t offset, double a, double b);

}  // namespace wick::detail::cpu
