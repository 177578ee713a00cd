// Host entry points of the CUDA op kernels beyond fill/copy/binary (kernels.h): the matmul,
// reduction, softmax, random, unary/pointwise, comparison and indexing families of the
// KernelTable (src/core/kernel_table.h), with the table's signatures.
#pragma once

#include "core/kernel_table.h"

namespace wick::detail::gpu {

void gemm(const GemmArgs& g);          // src/cuda/blas.cpp: cuBLASLt for floating dtypes
void gemm_integer(const GemmArgs& g);  // gemm.cu: integer dtypes, a tiled kernel
// gemm.cu: float32 batch-1 products of at most WICK_GEMM_SMALL_MAX_MACS multiply-adds in one
// kernel (bias and operand sums included); false (nothing launched) for any other problem, or
// where the launch is refused (a device without thread-block clusters). The caller (gemm) holds
// the device scope of g.c.
bool gemm_small_f32(const GemmArgs& g);
void reduce(ReduceOp op, const Tensor& values, const Tensor& indices, const Tensor& in, double arg);
void softmax(bool log, const Tensor& out, const Tensor& in);
void softmax_backward(bool log, const Tensor& grad_input, const Tensor& grad, const Tensor& result);
void causal_softmax(const Tensor& out, const Tensor& in, int64_t l);
void cross_entropy_rows(const Tensor& lse, const Tensor& nll, const Tensor& input, const Tensor& target,
                        int64_t ignore_index, const Tensor& grad_input, const Tensor& coef);
void cross_entropy_rows_backward(const Tensor& grad_input, const Tensor& coef, const Tensor& scale,
                                 const Tensor& input, const Tensor& lse, const Tensor& target, int64_t ignore_index);
// norm.cu: LayerNorm and RMSNorm over the rows of a contiguous [m, n] tensor.
void norm_forward(bool rms, const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x,
                  const Tensor& weight, const Tensor& bias, double eps);
void norm_backward(bool rms, const Tensor& dx, const Tensor& dweight, const Tensor& dbias, const Tensor& dy,
                   const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& weight);
void add_norm_forward(bool rms, const Tensor& s, const Tensor& y, const Tensor& mean, const Tensor& rstd,
                      const Tensor& x, const Tensor& delta, const Tensor& weight, const Tensor& bias, double eps);
void add_norm_backward(bool rms, const Tensor& dx, const Tensor& ddelta, const Tensor& dweight, const Tensor& dbias,
                       const Tensor& gy, const Tensor& gs, const Tensor& s, const Tensor& mean, const Tensor& rstd,
                       const Tensor& weight);
// gelu_bias_backward.cu: the backward of a linear layer's GELU with its bias gradient.
bool gelu_backward_bias(const Tensor& grad_input, const Tensor& bias_grad, const Tensor& grad, const Tensor& input,
                        bool tanh_form);
void random(RandomOp op, const Tensor& out, uint64_t seed, uint64_t offset, double a, double b);
void unary(UnaryOp op, const TensorIter& it, const Scalar* a, const Scalar* b);
void pointwise(PointwiseOp op, const TensorIter& it);
void compare(CompareOp op, const TensorIter& it, const Scalar* scalar);
void bitwise(BitwiseOp op, const TensorIter& it, const Scalar* scalar);
void where(const TensorIter& it);
// scan.cu: cumulative sums and products along the middle dim.
void scan(ScanOp op, const Tensor& out, const Tensor& in, bool reverse);
void gather(const TensorIter& it, int64_t dim_stride, int64_t size, const char* op);
// sort_scatter.cu: the sort (CUB segmented radix sort), scatter (atomics for the add forms) and
// multinomial entries.
void scatter(const Tensor& out, const Tensor& src, const Tensor& index, int64_t dim_stride, int64_t size, ScatterOp sop,
             const char* op);
void sort(const Tensor& indices, const Tensor& in, int64_t k, bool descending);
void multinomial(const Tensor& out, const Tensor& probs, const Tensor& uniforms);
// loss.cu: nll_loss's entries, and the deferred report of a bad target that their kernels
// leave (raises IndexError "[nll_loss] Target v is out of bounds." once, if one is pending).
void nll_loss_forward(const Tensor& out, const Tensor& total_weight, const Tensor& input,
                      const Tensor& target, const Tensor& weight, int64_t ignore_index,
                      LossReduction reduction, bool logits);
void nll_loss_backward(const Tensor& grad_input, const Tensor& grad_out, const Tensor& target,
                       const Tensor& weight, const Tensor& total_weight, int64_t ignore_index,
                       LossReduction reduction);
void log_softmax_nll_loss_forward(const Tensor& logp, const Tensor& out, const Tensor& total_weight,
                                  const Tensor& input, const Tensor& target, const Tensor& weight,
                                  int64_t ignore_index, LossReduction reduction);
void log_softmax_nll_loss_backward(const Tensor& grad_input, const Tensor& grad_out, const Tensor& logp,
                                   const Tensor& target, const Tensor& weight, const Tensor& total_weight,
                                   int64_t ignore_index, LossReduction reduction);
void raise_pending_target_error();
// optim.cu: the multi-tensor optimizer steps.
void sgd_step(std::span<const Tensor> params, std::span<const Tensor> grads, std::span<const Tensor> bufs,
              const SgdStepArgs& args);
void unscale_check(std::span<const Tensor> grads, const Tensor& found_inf, const Tensor& inv_scale);
Tensor foreach_norm_partials(std::span<const Tensor> tensors, bool inf_norm);
void adam_step(std::span<const Tensor> params, std::span<const Tensor> grads,
               std::span<const Tensor> exp_avgs, std::span<const Tensor> exp_avg_sqs,
               std::span<const Tensor> max_exp_avg_sqs, const AdamStepArgs& args);

}  // namespace wick::detail::gpu
