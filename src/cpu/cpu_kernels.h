// CPU kernels that live in their own files, gathered into the table by cpu_kernels.cpp.
#pragma once

#include "core/kernel_table.h"

namespace wick::detail {

void cpu_reduce(ReduceOp op, const Tensor& out, const Tensor& in);
void cpu_gemm(const GemmArgs& args);

}  // namespace wick::detail
