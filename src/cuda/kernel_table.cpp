// The CUDA backend's KernelTable: every family runs on the GPU (src/cuda/kernels, blas.cpp);
// convolution through cuDNN (cudnn_conv.cpp) when the build has it, else core's generic
// im2col + GEMM on top of the other families; max pooling through core's generic windows.
#include "core/conv.h"
#include "core/kernel_table.h"
#include "cuda/cudnn_conv.h"
#include "cuda/kernels/kernels.h"
#include "cuda/kernels/op_kernels.h"

namespace wick::detail {

const KernelTable& cuda_kernels() {
  static const KernelTable table = {
      .fill = &gpu::fill,
      .copy = &gpu::copy,
      .binary = &gpu::binary,
      .binary_flat = nullptr,  // a launch costs more than a plan: every op goes through binary
      .reduce = &gpu::reduce,
      .gemm = &gpu::gemm,
      .random = &gpu::random,
      .unary = &gpu::unary,
      .pointwise = &gpu::pointwise,
      .compare = &gpu::compare,
      .bitwise = &gpu::bitwise,
      .where = &gpu::where,
      .softmax = &gpu::softmax,
      .softmax_backward = &gpu::softmax_backward,
      .causal_softmax = &gpu::causal_softmax,
      .norm_forward = &gpu::norm_forward,
      .norm_backward = &gpu::norm_backward,
      .add_norm_forward = &gpu::add_norm_forward,
      .add_norm_backward = &gpu::add_norm_backward,
      .gelu_backward_bias = &gpu::gelu_backward_bias,
      .scan = &gpu::scan,
      .gather = &gpu::gather,
      .scatter = &gpu::scatter,
      .sort = &gpu::sort,
      .multinomial = &gpu::multinomial,
      .nll_loss_forward = &gpu::nll_loss_forward,
      .nll_loss_backward = &gpu::nll_loss_backward,
      .log_softmax_nll_loss_forward = &gpu::log_softmax_nll_loss_forward,
      .log_softmax_nll_loss_backward = &gpu::log_softmax_nll_loss_backward,
      .cross_entropy_rows = &gpu::cross_entropy_rows,
      .cross_entropy_rows_backward = &gpu::cross_entropy_rows_backward,
#ifdef WICK_HAVE_CUDNN
      .conv2d_forward = &gpu::cudnn_conv2d_forward,
      .conv2d_backward = &gpu::cudnn_conv2d_backward,
#else
      .conv2d_forward = &generic_conv2d_forward,
      .conv2d_backward = &generic_conv2d_backward,
#endif
      .max_pool2d_forward = nullptr,  // core's generic windows implementation (core/pool.h)
      .max_pool2d_backward = nullptr,
      .sgd_step = &gpu::sgd_step,
      .adam_step = &gpu::adam_step,
      .unscale_check = &gpu::unscale_check,
      .foreach_norm_partials = &gpu::foreach_norm_partials,
      .binary_mixed_float = true,
  };
  return table;
}

}  // namespace wick::detail
