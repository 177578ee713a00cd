// The type elementwise arithmetic runs in, one rule for every backend (the CPU loops and the
// CUDA kernels both read it): 16-bit floats compute in float and round once at the end; every
// other type, bool included, computes in itself. bool staying bool is PyTorch's rule:
// True + True is True, and add(True, True, alpha=-1) is True too (alpha is cast to bool).
// Includable from .cu files: it needs only wick/half.h, whose Half/BFloat16 work on the device.
#pragma once

#include "wick/half.h"

namespace wick::detail {

template <class T> struct OpMath { using type = T; };
template <> struct OpMath<Half> { using type = float; };
template <> struct OpMath<BFloat16> { using type = float; };
template <class T> using opmath_t = typename OpMath<T>::type;

}  // namespace wick::detail
