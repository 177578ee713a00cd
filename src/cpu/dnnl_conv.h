// float32 convolution through oneDNN's primitives (dnnl_conv.cpp), tried first by the CPU's
// convolution kernel; false where oneDNN is not built in or declines the problem.
#pragma once

#include <array>

#include "core/kernel_table.h"
#include "wick/tensor.h"

namespace wick::detail::cpu {

// The CPU convolution path that the environment variable WICK_CPU_CONV asks for, read at each
// call: "auto" or unset (the kernel chooses), "dnnl" (oneDNN's primitives wherever they take the
// problem, whatever its channel count) or "im2col" (the kernels of conv.cpp). A forced
// path that cannot run a problem leaves it to auto's choice. Any other value is a ValueError.
enum class ConvPath { Auto, Dnnl, Own };
ConvPath conv_path();
// The path that ran this thread's last CPU float convolution (forward or backward): Dnnl or
// Own. For tests, which check that a forced path is taken.
ConvPath conv_last_path();
// Whether wick is built with oneDNN (WICK_CPU_BLAS=dnnl).
bool dnnl_conv2d_built();

// y: a new [N, O, oh, ow] tensor on success. x, w and b contiguous.
// `forced`: WICK_CPU_CONV=dnnl, which lifts the minimum channel count of auto's choice.
bool dnnl_conv2d_forward(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dParams& p, int64_t oh,
                         int64_t ow, bool forced, Tensor& y);
// r: new gradients for the inputs `needs` asks for, on success. dy, x and w contiguous.
bool dnnl_conv2d_backward(const Tensor& dy, const Tensor& x, const Tensor& w, const Conv2dParams& p,
                          std::array<bool, 3> needs, bool forced, std::array<Tensor, 3>& r);

}  // namespace wick::detail::cpu
