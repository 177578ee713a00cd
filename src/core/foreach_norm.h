// The norm of many CUDA tensors in one multi-tensor pass (clip_grad_norm_'s foreach path,
// src/nn/clip_grad.cpp): src/cuda/kernels/optim.cu; a build without CUDA raises.
#pragma once

#include <span>

#include "wick/tensor.h"

namespace wick::detail {

// tensors: on one CUDA device, of one floating dtype, each contiguous. A vector on that device
// (float32; float64 for float64 tensors), one element a chunk of a tensor, whose sum is the sum
// of the squares of all their elements (inf_norm false), or whose max is the largest |element|
// (inf_norm true; NaN where an element is NaN). Nothing waits for the device.
Tensor cuda_foreach_norm_partials(std::span<const Tensor> tensors, bool inf_norm);

}  // namespace wick::detail
