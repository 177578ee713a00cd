// conv2d of nn::functional: core's convolution (src/core/conv.cpp, recorded there as one
// ConvolutionBackward0 node), which this only extends to unbatched inputs. The poolings live
// in pooling_functions.cpp.
#include "core/conv.h"
#include "wick/nn/functional.h"
#include "wick/ops.h"

namespace wick::nn::functional {

namespace {

// Runs f on x made 4-D (an unbatched [C, H, W] input gets a batch dim of 1 and loses it after).
template <class F>
Tensor batched(const Tensor& x, const char* op, F f) {
  WICK_CHECK(x.dim() == 3 || x.dim() == 4, ValueError, op,
             "Expected 3D (unbatched) or 4D (batched) input to ", op, ", but got input of size: ", x.sizes());
  if (x.dim() == 4) return f(x);
  return f(x.unsqueeze(0)).squeeze(0);
}

}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, Pair stride, Pair padding,
              Pair dilation, int64_t groups) {
  const wick::detail::Conv2dParams p{
      {stride.h, stride.w}, {padding.h, padding.w}, {dilation.h, dilation.w}, groups};
  return batched(x, "conv2d", [&](const Tensor& x4) { return wick::detail::conv2d(x4, weight, bias, p); });
}

}  // namespace wick::nn::functional
