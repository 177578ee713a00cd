// The CUDA backend's KernelTable. Families not yet on CUDA throw NotImplementedError naming the op.
#include <iterator>

#include "core/kernel_table.h"
#include "cuda/kernels/kernels.h"
#include "wick/error.h"

namespace wick::detail {

namespace {

[[noreturn]] void missing(const char* op) { raise<NotImplementedError>(op, "not yet on CUDA"); }

void reduce_missing(ReduceOp op, const Tensor&, const Tensor&) { missing(op == ReduceOp::Sum ? "sum" : "mean"); }

void gemm_missing(const GemmArgs&) { missing("matmul"); }

void random_missing(RandomOp op, const Tensor&, uint64_t, uint64_t, double, double) {
  missing(op == RandomOp::Uniform ? "uniform_" : op == RandomOp::Normal ? "normal_" : "randint");
}

void unary_missing(UnaryOp op, const TensorIter&, const Scalar*, const Scalar*) {
  static const char* names[] = {"neg", "abs", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh",
                                "sigmoid", "relu", "gelu", "gelu", "silu", "pow", "pow", "remainder", "clamp"};
  missing(size_t(op) < std::size(names) ? names[size_t(op)] : "unary op");
}

void pointwise_missing(PointwiseOp op, const TensorIter&) {
  static const char* names[] = {"pow", "remainder", "clamp_min", "clamp_max", "clamp"};
  missing(size_t(op) < std::size(names) ? names[size_t(op)] : "pointwise op");
}

void compare_missing(CompareOp op, const TensorIter&, const Scalar*) {
  static const char* names[] = {"eq", "ne", "lt", "le", "gt", "ge"};
  missing(size_t(op) < std::size(names) ? names[size_t(op)] : "comparison");
}

void where_missing(const TensorIter&) { missing("where"); }

void reduce_dim_missing(DimReduceOp op, const Tensor&, const Tensor&, const Tensor&, double) {
  static const char* names[] = {"max", "min", "argmax", "argmin", "var", "std", "norm"};
  missing(size_t(op) < std::size(names) ? names[size_t(op)] : "reduction");
}

void softmax_missing(bool log, const Tensor&, const Tensor&) { missing(log ? "log_softmax" : "softmax"); }

void gather_missing(const TensorIter&, int64_t, int64_t, const char* op) { missing(op); }

}  // namespace

const KernelTable& cuda_kernels() {
  static const KernelTable table = {
      .fill = &gpu::fill,
      .copy = &gpu::copy,
      .binary = &gpu::binary,
      .reduce = &reduce_missing,
      .gemm = &gemm_missing,
      .random = &random_missing,
      .unary = &unary_missing,
      .pointwise = &pointwise_missing,
      .compare = &compare_missing,
      .where = &where_missing,
      .reduce_dim = &reduce_dim_missing,
      .softmax = &softmax_missing,
      .gather = &gather_missing,
  };
  return table;
}

}  // namespace wick::detail
