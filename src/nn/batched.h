// The 2-D image ops of nn::functional (conv2d and the poolings) take a batched [N, C, H, W]
// or an unbatched [C, H, W] input, as PyTorch's do.
#pragma once

#include "wick/error.h"
#include "wick/tensor.h"

namespace wick::nn::detail {

// Runs f on x made 4-D (an unbatched [C, H, W] input gets a batch dim of 1 and loses it after).
template <class F>
Tensor batched(const Tensor& x, const char* op, F f) {
  WICK_CHECK(x.dim() == 3 || x.dim() == 4, ValueError, op,
             "Expected 3D (unbatched) or 4D (batched) input to ", op, ", but got input of size: ", x.sizes());
  if (x.dim() == 4) return f(x);
  return f(x.unsqueeze(0)).squeeze(0);
}

}  // namespace wick::nn::detail
