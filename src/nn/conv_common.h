// What the convolution modules (nn/conv.cpp, nn/pooling3d.cpp) share: their channel checks,
// PyTorch's initialization, and a transposed convolution's output padding from output_size.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "wick/tensor.h"

namespace wick::nn::detail {

// The checks every convolution module makes of its channels and groups (PyTorch's _ConvNd).
void check_groups(const char* op, int64_t in_channels, int64_t out_channels, int64_t groups);

// PyTorch's initialization of every convolution: weight kaiming_uniform_(a = sqrt(5)), bias
// U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with the weight's fan-in (a transposed convolution's
// [in, out / groups, k...] weight has fan-in (out / groups) times its kernel's volume).
void reset_conv(Tensor& weight, Tensor& bias);

// PyTorch's padding='same' of one spatial dim: dilation * (kernel - 1) zeros in all, (left,
// right) with the odd one on the right.
inline std::pair<int64_t, int64_t> same_padding(int64_t kernel, int64_t dilation) {
  const int64_t total = dilation * (kernel - 1);
  return {total / 2, total - total / 2};
}

// The output padding per spatial dim (dims of them: kernel, stride, padding, dilation) that
// makes a transposed convolution of x give output_size (the spatial sizes, or the whole output
// shape), within the one stride of sizes that are valid; ValueError "[op] ..." otherwise.
std::vector<int64_t> transposed_output_padding(const Tensor& x, const std::vector<int64_t>& output_size,
                                               const int64_t* kernel, const int64_t* stride,
                                               const int64_t* padding, const int64_t* dilation, int dims,
                                               const char* op);

}  // namespace wick::nn::detail
