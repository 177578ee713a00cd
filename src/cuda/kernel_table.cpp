// The CUDA backend's KernelTable: every family runs on the GPU (src/cuda/kernels, blas.cpp).
#include "core/kernel_table.h"
#include "cuda/kernels/kernels.h"
#include "cuda/kernels/op_kernels.h"

namespace wick::detail {

const KernelTable& cuda_kernels() {
  static const KernelTable table = {
      .fill = &gpu::fill,
      .copy = &gpu::copy,
      .binary = &gpu::binary,
      .reduce = &gpu::reduce,
      .gemm = &gpu::gemm,
      .random = &gpu::random,
      .unary = &gpu::unary,
      .pointwise = &gpu::pointwise,
      .compare = &gpu::compare,
      .where = &gpu::where,
      .softmax = &gpu::softmax,
      .gather = &gpu::gather,
  };
  return table;
}

}  // namespace wick::detail
