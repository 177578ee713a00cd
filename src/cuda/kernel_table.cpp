// The CUDA backend's KernelTable. Families not yet on CUDA throw NotImplementedError.
#include "core/kernel_table.h"
#include "cuda/kernels/kernels.h"
#include "wick/error.h"

namespace wick::detail {

namespace {

void reduce_missing(ReduceOp op, const Tensor&, const Tensor&) {
  raise<NotImplementedError>(op == ReduceOp::Sum ? "sum" : "mean", "not yet on CUDA");
}

void gemm_missing(const GemmArgs&) { raise<NotImplementedError>("matmul", "not yet on CUDA"); }

void random_missing(RandomOp op, const Tensor&, uint64_t, uint64_t, double, double) {
  raise<NotImplementedError>(op == RandomOp::Uniform ? "uniform_" : op == RandomOp::Normal ? "normal_" : "randint",
                             "not yet on CUDA");
}

}  // namespace

const KernelTable& cuda_kernels() {
  static const KernelTable table = {
      &gpu::fill, &gpu::copy, &gpu::binary, &reduce_missing, &gemm_missing, &random_missing,
  };
  return table;
}

}  // namespace wick::detail
