// CPU kernels that live in their own files, gathered into the table by kernel_table.cpp.
#pragma once

#include "core/kernel_table.h"

namespace wick::detail::cpu {

void reduce(ReduceOp op, const Tensor& values, const Tensor& indices, const Tensor& in, double arg);
void gemm(const GemmArgs& args);
void unary(UnaryOp op, const TensorIter& it, const Scalar* a, const Scalar* b);
void pointwise(PointwiseOp op, const TensorIter& it);
void compare(CompareOp op, const TensorIter& it, const Scalar* scalar);
void bitwise(BitwiseOp op, const TensorIter& it, const Scalar* scalar);
void where(const TensorIter& it);
void softmax(bool log, const Tensor& out, const Tensor& in);
void softmax_backward(bool log, const Tensor& grad_input, const Tensor& grad, const Tensor& result);
void causal_softmax(const Tensor& out, const Tensor& in, int64_t l);
void cross_entropy_rows(const Tensor& lse, const Tensor& nll, const Tensor& input, const Tensor& target,
                        int64_t ignore_index, const Tensor& grad_input, const Tensor& coef);
void cross_entropy_rows_backward(const Tensor& grad_input, const Tensor& coef, const Tensor& scale,
                                 const Tensor& input, const Tensor& lse, const Tensor& target, int64_t ignore_index);
// norm.cpp: LayerNorm and RMSNorm over the rows of a contiguous [m, n] tensor.
void norm_forward(bool rms, const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x,
                  const Tensor& weight, const Tensor& bias, double eps);
void norm_backward(bool rms, const Tensor& dx, const Tensor& dweight, const Tensor& dbias, const Tensor& dy,
                   const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& weight);
// scan.cpp: cumulative sums and products along the middle dim.
void scan(ScanOp op, const Tensor& out, const Tensor& in, bool reverse);
void gather(const TensorIter& it, int64_t dim_stride, int64_t size, const char* op);
// sort_scatter.cpp: the sort, scatter and multinomial entries.
void scatter(const Tensor& out, const Tensor& src, const Tensor& index, int64_t dim_stride, int64_t size, ScatterOp sop,
             const char* op);
void sort(const Tensor& indices, const Tensor& in, int64_t k, bool descending);
void multinomial(const Tensor& out, const Tensor& probs, const Tensor& uniforms);
void nll_loss_forward(const Tensor& out, const Tensor& total_weight, const Tensor& input,
                          const Tensor& target, const Tensor& weight, int64_t ignore_index,
                          LossReduction reduction, bool logits);
void nll_loss_backward(const Tensor& grad_input, const Tensor& grad_out, const Tensor& target,
                           const Tensor& weight, const Tensor& total_weight, int64_t ignore_index,
                           LossReduction reduction);
// 2-D convolution (conv.cpp): im2col + BLAS GEMM for float32/float64, core's generic
// implementation for the rest.
Tensor conv2d_forward(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dParams& p);
std::array<Tensor, 3> conv2d_backward(const Tensor& dy, const Tensor& x, const Tensor& w,
                                          const Conv2dParams& p, std::array<bool, 3> needs);
// 2-D max pooling (pool.cpp): direct loops for float32/float64, core's generic
// implementation for the rest.
std::array<Tensor, 2> max_pool2d_forward(const Tensor& x, const Pool2dGeometry& g);
Tensor max_pool2d_backward(const Tensor& dy, const Tensor& offsets, IntArrayRef x_sizes, const Pool2dGeometry& g);
void sgd_step(std::span<const Tensor> params, std::span<const Tensor> grads, std::span<const Tensor> bufs,
                  const SgdStepArgs& args);
void unscale_check(std::span<const Tensor> grads, const Tensor& found_inf, const Tensor& inv_scale);
void adam_step(std::span<const Tensor> params, std::span<const Tensor> grads,
                   std::span<const Tensor> exp_avgs, std::span<const Tensor> exp_avg_sqs,
                   std::span<const Tensor> max_exp_avg_sqs, const AdamStepArgs& args);

}  // namespace wick::detail::cpu
