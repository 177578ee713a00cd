// The backward of a 2-D convolution: one ConvolutionBackward0 node over (input, weight, bias),
// recorded by core's conv2d after its forward, whose formula is the device's conv2d_backward
// entry (cuDNN on CUDA where built, im2col + BLAS on the CPU, else the generic col2im + GEMM in
// src/core/conv.cpp).
#include "autograd/function.h"
#include "autograd/hooks.h"
#include "core/conv.h"

namespace wick::autograd {

void record_conv2d(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y,
                   const wick::detail::Conv2dParams& p) {
  record("ConvolutionBackward0", {x, w, b}, y, {x, w}, [p](BackwardContext& c) -> variable_list {
    auto r = wick::detail::conv2d_backward(c.grad(), c.saved(0), c.saved(1), p,
                                           {c.needs(0), c.needs(1), c.needs(2)});
    return {r[0], r[1], r[2]};
  });
}

// The transposed convolution's node has PyTorch's name too; its formulas swap conv2d's
// forward and input-gradient kernels (core/conv.h).
void record_conv_transpose2d(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y,
                             const wick::detail::Conv2dParams& p) {
  record("ConvolutionBackward0", {x, w, b}, y, {x, w}, [p](BackwardContext& c) -> variable_list {
    auto r = wick::detail::conv_transpose2d_backward(c.grad(), c.saved(0), c.saved(1), p,
                                                     {c.needs(0), c.needs(1), c.needs(2)});
    return {r[0], r[1], r[2]};
  });
}

}  // namespace wick::autograd
