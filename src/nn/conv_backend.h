// The seam between Conv2d and the device: a backend computes the forward and the backward of
// a 2-D convolution. The generic backend (conv_backend.cpp) works on every device with views,
// copies and GEMM; a device library registers its own for its device type when it loads
// (src/cuda/cudnn_conv.cpp: cuDNN for kCUDA).
#pragma once

#include <array>

#include "wick/tensor.h"

namespace wick::nn::detail {

struct Conv2dParams {
  int64_t stride[2], padding[2], dilation[2];
  int64_t groups;
};

struct ConvBackend {
  // y = conv(x, w) + b for x [N, C, H, W], w [O, C / groups, kh, kw], b [O] or undefined.
  Tensor (*forward)(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dParams& p);
  // {dx, dw, db} for the wanted ones (needs[i]) from dy.
  std::array<Tensor, 3> (*backward)(const Tensor& dy, const Tensor& x, const Tensor& w, const Conv2dParams& p,
                                    std::array<bool, 3> needs);
};

// The backend for a device: the registered one for its type, else the generic one.
const ConvBackend& conv_backend(Device device);
void register_conv_backend(DeviceType type, const ConvBackend* backend);
const ConvBackend& generic_conv_backend();

// Output size of one spatial dim.
inline int64_t conv_out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

}  // namespace wick::nn::detail
