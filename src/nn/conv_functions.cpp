// conv2d of nn::functional: core's convolution (src/core/conv.cpp, recorded there as one
// ConvolutionBackward0 node), which this only extends to unbatched inputs. The poolings live
// in pooling_functions.cpp.
#include "core/as_op.h"
#include "core/conv.h"
#include "core/tensor_ops.h"
#include "nn/batched.h"
#include "wick/nn/functional.h"
#include "wick/ops.h"

namespace wick::nn::functional {

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, Pair stride, Pair padding,
              Pair dilation, int64_t groups) {
  wick::detail::check_defined(x, "conv2d", "self");
  const wick::detail::Conv2dParams p{
      {stride.h, stride.w}, {padding.h, padding.w}, {dilation.h, dilation.w}, groups};
  wick::detail::check_defined(weight, "conv2d", "weight");
  return wick::detail::as_op("conv2d", [&] {
    return detail::batched(x, "conv2d",
                           [&](const Tensor& x4) { return wick::detail::conv2d(x4, weight, bias, p); });
  });
}

Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias, Pair stride, Pair padding,
                        Pair output_padding, int64_t groups, Pair dilation) {
  wick::detail::check_defined(x, "conv_transpose2d", "self");
  wick::detail::check_defined(weight, "conv_transpose2d", "weight");
  const wick::detail::Conv2dParams p{
      {stride.h, stride.w}, {padding.h, padding.w}, {dilation.h, dilation.w}, groups};
  return wick::detail::as_op("conv_transpose2d", [&] {
    return detail::batched(x, "conv_transpose2d", [&](const Tensor& x4) {
      return wick::detail::conv_transpose2d(x4, weight, bias, p, {output_padding.h, output_padding.w});
    });
  });
}

}  // namespace wick::nn::functional
