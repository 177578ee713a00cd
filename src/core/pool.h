// 2-D max and average pooling in core: the ops (recorded as PyTorch's
// MaxPool2DWithIndicesBackward0 and AvgPool2DBackward0 when x requires grad), their input
// gradients, and the generic implementation of the kernel table's max-pooling entries, used
// where a backend leaves them null. nn::functional checks the arguments and builds the
// geometry (src/nn/pooling_functions.cpp).
#pragma once

#include <array>

#include "core/kernel_table.h"
#include "wick/tensor.h"

namespace wick::detail {

// The max of each window of x [N, C, H, W] (floating), [N, C, OH, OW].
Tensor max_pool2d(const Tensor& x, const Pool2dGeometry& g);
// The mean of each window; its divisor counts the window's elements inside x, plus the zero
// padding when count_include_pad (never the room added on the right for ceil_mode).
Tensor avg_pool2d(const Tensor& x, const Pool2dGeometry& g, bool count_include_pad);

// max_pool2d's input gradient from dy and the forward's window offsets (through the device's
// kernel, or the generic one).
Tensor max_pool2d_backward(const Tensor& dy, const Tensor& offsets, IntArrayRef x_sizes,
                           const Pool2dGeometry& g);
// avg_pool2d's input gradient: dy / divisor (the forward's, [1, 1, OH, OW]) spread over each
// window.
// What max_pool2d_backward's gradient is the adjoint of: x's values at each window's offset,
// [N, C, OH, OW] (the double backward of max pooling). No autograd.
Tensor max_pool2d_gather(const Tensor& x, const Tensor& offsets, const Pool2dGeometry& g);
// avg_pool2d's values of x for the forward's divisor (the adjoint of avg_pool2d_backward). No
// autograd.
Tensor avg_pool2d_with_divisor(const Tensor& x, const Tensor& divisor, const Pool2dGeometry& g);
Tensor avg_pool2d_backward(const Tensor& dy, const Tensor& divisor, IntArrayRef x_sizes,
                           const Pool2dGeometry& g);

// The generic implementation (composed of ops, any device); the KernelTable's max-pooling
// entries have these signatures.
std::array<Tensor, 2> generic_max_pool2d_forward(const Tensor& x, const Pool2dGeometry& g);
Tensor generic_max_pool2d_backward(const Tensor& dy, const Tensor& offsets, IntArrayRef x_sizes,
                                   const Pool2dGeometry& g);

}  // namespace wick::detail
