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

Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride, int64_t padding,
              int64_t dilation, int64_t groups) {
  wick::detail::check_defined(x, "conv1d", "self");
  wick::detail::check_defined(weight, "conv1d", "weight");
  WICK_CHECK(x.dim() == 2 || x.dim() == 3, ValueError, "conv1d",
             "Expected 2D (unbatched) or 3D (batched) input to conv1d, but got input of size: ", x.sizes());
  WICK_CHECK(weight.dim() == 3, ValueError, "conv1d", "weight must be 3-D [out, in / groups, k], got ",
             weight.sizes());
  // [N, C, L] as [N, C, 1, L]: conv2d's kernel (1, k), the same stride, padding and dilation along L.
  const wick::detail::Conv2dParams p{{1, stride}, {0, padding}, {1, dilation}, groups};
  if (x.dim() == 3) return wick::detail::conv1d(x, weight, bias, p);
  return wick::detail::conv1d(x.unsqueeze(0), weight, bias, p).squeeze(0);
}

}  // namespace wick::nn::functional
