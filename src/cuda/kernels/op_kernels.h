// Host entry points of the CUDA op kernels beyond fill/copy/binary (kernels.h): the matmul,
// reduction, softmax, random, unary/pointwise, comparison and indexing families of the
// KernelTable (src/core/kernel_table.h), with the table's signatures.
#pragma once

#include "core/kernel_table.h"

namespace wick::detail::gpu {

void gemm(const GemmArgs& g);          // src/cuda/blas.cpp: cuBLASLt for floating dtypes
void gemm_integer(const GemmArgs& g);  // gemm.cu: integer dtypes, a tiled kernel
void reduce(ReduceOp op, const Tensor& values, const Tensor& indices, const Tensor& in, double arg);
void softmax(bool log, const Tensor& out, const Tensor& in);
void random(RandomOp op, const Tensor& out, uint64_t seed, uint64_t offset, double a, double b);
void unary(UnaryOp op, const TensorIter& it, const Scalar* a, const Scalar* b);
void pointwise(PointwiseOp op, const TensorIter& it);
void compare(CompareOp op, const TensorIter& it, const Scalar* scalar);
void where(const TensorIter& it);
void gather(const TensorIter& it, int64_t dim_stride, int64_t size, const char* op);

}  // namespace wick::detail::gpu
