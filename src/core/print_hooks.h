// What printing takes from outside core, and one entry point for its tests.
//
//   detail::grad_fn_name(loss);             // "SumBackward0", or "" for a leaf
//   detail::repr_on(cpu_tensor, "cuda:7");  // the repr as if the tensor lived on cuda:7
#pragma once

#include <string>

#include "wick/device.h"
#include "wick/tensor.h"

namespace wick::detail {

// PyTorch's name of the autograd node that made t ("AddmmBackward0"), or "" when t has none.
// Defined by autograd (src/autograd/print_support.cpp).
std::string grad_fn_name(const Tensor& t);

// repr(t) with `shown` printed as the device: lets CPU-only machines test the device suffix
// and how it wraps with the others.
std::string repr_on(const Tensor& t, Device shown);

}  // namespace wick::detail
