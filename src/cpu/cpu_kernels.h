// CPU kernels that live in their own files, gathered into the table by cpu_kernels.cpp.
#pragma once

#include "core/kernel_table.h"

namespace wick::detail::cpu {

void cpu_reduce(ReduceOp op, const Tensor& values, const Tensor& indices, const Tensor& in, double arg);
void cpu_gemm(const GemmArgs& args);
void cpu_unary(UnaryOp op, const TensorIter& it, const Scalar* a, const Scalar* b);
void cpu_pointwise(PointwiseOp op, const TensorIter& it);
void cpu_compare(CompareOp op, const TensorIter& it, const Scalar* scalar);
void cpu_where(const TensorIter& it);
void cpu_softmax(bool log, const Tensor& out, const Tensor& in);
void cpu_softmax_backward(bool log, const Tensor& grad_input, const Tensor& grad, const Tensor& result);
void cpu_gather(const TensorIter& it, int64_t dim_stride, int64_t size, const char* op);
void cpu_nll_loss_forward(const Tensor& out, const Tensor& total_weight, const Tensor& input,
                          const Tensor& target, const Tensor& weight, int64_t ignore_index,
                          LossReduction reduction, bool logits);
void cpu_nll_loss_backward(const Tensor& grad_input, const Tensor& grad_out, const Tensor& target,
                           const Tensor& weight, const Tensor& total_weight, int64_t ignore_index,
                           LossReduction reduction);
// 2-D convolution (conv_kernel.cpp): im2col + BLAS GEMM for float32/float64, core's generic
// implementation for the rest.
Tensor cpu_conv2d_forward(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dParams& p);
std::array<Tensor, 3> cpu_conv2d_backward(const Tensor& dy, const Tensor& x, const Tensor& w,
                                          const Conv2dParams& p, std::array<bool, 3> needs);
// 2-D max pooling (pool_kernel.cpp): direct loops for float32/float64, core's generic
// implementation for the rest.
std::array<Tensor, 2> cpu_max_pool2d_forward(const Tensor& x, const Pool2dGeometry& g);
Tensor cpu_max_pool2d_backward(const Tensor& dy, const Tensor& offsets, IntArrayRef x_sizes,
                               const Pool2dGeometry& g);
void cpu_sgd_step(std::span<const Tensor> params, std::span<const Tensor> grads, std::span<const Tensor> bufs,
                  const SgdStepArgs& args);
void cpu_unscale_check(std::span<const Tensor> grads, const Tensor& found_inf, const Tensor& inv_scale);
void cpu_adam_step(std::span<const Tensor> params, std::span<const Tensor> grads,
                   std::span<const Tensor> exp_avgs, std::span<const Tensor> exp_avg_sqs,
                   std::span<const Tensor> max_exp_avg_sqs, const AdamStepArgs& args);

}  // namespace wick::detail::cpu
