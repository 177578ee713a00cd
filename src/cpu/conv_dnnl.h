// float32 convolution through oneDNN's primitives (conv_dnnl.cpp), tried first by the CPU's
// convolution kernel; false where oneDNN is not built in or declines the problem.
#pragma once

#include <array>

#include "core/kernel_table.h"
#include "wick/tensor.h"

namespace wick::detail::cpu {

// y: a new [N, O, oh, ow] tensor on success. x, w and b contiguous.
bool dnnl_conv2d_forward(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dParams& p, int64_t oh,
                         int64_t ow, Tensor& y);
// r: new gradients for the inputs `needs` asks for, on success. dy, x and w contiguous.
bool dnnl_conv2d_backward(const Tensor& dy, const Tensor& x, const Tensor& w, const Conv2dParams& p,
                          std::array<bool, 3> needs, std::array<Tensor, 3>& r);

}  // namespace wick::detail::cpu
