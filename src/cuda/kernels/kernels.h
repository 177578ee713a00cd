// Host entry points of the CUDA kernels, as the KernelTable (src/core/kernel_table.h) wants them.
#pragma once

#include "core/kernel_table.h"

namespace wick::detail::gpu {

void fill(const TensorIter& it, const Scalar& value);
void copy(const TensorIter& it);
void binary(BinaryOp op, const TensorIter& it, const Scalar* scalar, const Scalar& alpha);

}  // namespace wick::detail::gpu
