// 2-D convolution in core: the op (checks, autograd, the device's kernel-table entries) and the
// generic implementation that fills those entries on CUDA in a build without cuDNN, and serves
// the CPU's dtypes that BLAS lacks. nn::functional::conv2d adds batching of unbatched inputs on top.
#pragma once

#include <array>

#include "core/kernel_table.h"
#include "wick/tensor.h"

namespace wick::detail {

// Output size of one spatial dim.
inline int64_t conv_out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

// y = conv(x, w) + b for x [N, C, H, W], w [O, C / groups, kh, kw], b [O] or undefined;
// recorded as ConvolutionBackward0 when an input requires grad. Errors name "conv2d".
Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dParams& p);
// y = conv(x, w) + b for x [N, C, L], w [O, C / groups, k]: conv2d over [N, C, 1, L] (p's
// first dims 1, 0, 1), recorded as one ConvolutionBackward0 node over the 3-D tensors, as
// PyTorch's. Errors name "conv1d".
Tensor conv1d(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dParams& p);
// {dx, dw, db} (those wanted by needs) of conv2d from dy, through the device's kernel.
std::array<Tensor, 3> conv2d_backward(const Tensor& dy, const Tensor& x, const Tensor& w,
                                      const Conv2dParams& p, std::array<bool, 3> needs);

// y = conv_transpose(x, w) + b for x [N, Cin, H, W], w [Cin, Cout / groups, kh, kw], b [Cout]
// or undefined: the input gradient of conv2d (weight w, geometry p) at dy = x, whose output
// grows by output_padding (oph, opw). Recorded as ConvolutionBackward0; errors name
// "conv_transpose2d".
Tensor conv_transpose2d(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dParams& p,
                        std::array<int64_t, 2> output_padding);
// {dx, dw, db} (those wanted by needs) of conv_transpose2d from dy: dx = conv2d(dy, w),
// dw = conv2d's weight gradient at input dy and output gradient x, db = dy summed.
std::array<Tensor, 3> conv_transpose2d_backward(const Tensor& dy, const Tensor& x, const Tensor& w,
                                                const Conv2dParams& p, std::array<bool, 3> needs);

// The generic implementation, usable on any device with copy, GEMM and add kernels; the
// KernelTable's conv2d entries have these signatures. Inputs are checked already.
Tensor generic_conv2d_forward(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dParams& p);
std::array<Tensor, 3> generic_conv2d_backward(const Tensor& dy, const Tensor& x, const Tensor& w,
                                              const Conv2dParams& p, std::array<bool, 3> needs);

}  // namespace wick::detail
