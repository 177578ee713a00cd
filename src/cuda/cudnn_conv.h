// The CUDA kernel table's conv2d entries in a build with cuDNN (cudnn_conv.cpp).
#pragma once

#include <array>

#include "core/kernel_table.h"

namespace wick::detail::gpu {

Tensor cudnn_conv2d_forward(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dParams& p);
std::array<Tensor, 3> cudnn_conv2d_backward(const Tensor& dy, const Tensor& x, const Tensor& w,
                                            const Conv2dParams& p, std::array<bool, 3> needs);

}  // namespace wick::detail::gpu
