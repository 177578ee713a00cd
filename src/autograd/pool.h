// 2-D pooling of [N, C, H, W] inputs: the forward computations and their recorded forms
// (pool_backward.cpp). nn::functional checks the arguments, builds the geometry and calls
// these, the recorded form when detail::needs_grad(x).
#pragma once

#include <cstdint>

#include "wick/tensor.h"

namespace wick::autograd {

struct Pool2dGeometry {
  int64_t kh, kw, sh, sw, ph, pw, dh, dw, oh, ow;
  int64_t hp, wp;  // padded extents the windows need (left padding plus room on the right)
};

// Max over each window, without recording.
Tensor max_pool2d_forward(const Tensor& x, const Pool2dGeometry& g);
// Mean over each window, without recording (divisor: see avg_pool2d_divisor).
Tensor avg_pool2d_forward(const Tensor& x, const Pool2dGeometry& g, bool count_include_pad);

// The same, recorded as PyTorch's MaxPool2DWithIndicesBackward0 and AvgPool2DBackward0.
Tensor max_pool2d(const Tensor& x, const Pool2dGeometry& g);
Tensor avg_pool2d(const Tensor& x, const Pool2dGeometry& g, bool count_include_pad);

}  // namespace wick::autograd
