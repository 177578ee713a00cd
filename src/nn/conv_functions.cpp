// conv2d of nn::functional: core's convolution (src/core/conv.cpp, recorded there as one
// ConvolutionBackward0 node), which this only extends to unbatched inputs; conv1d's and
// conv_transpose1d's forms through it, and padding='same' / 'valid'. The poolings live
// in pooling_functions.cpp.
#include "core/as_op.h"
#include "core/conv.h"
#include "core/tensor_ops.h"
#include "nn/batched.h"
#include "nn/conv_common.h"
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

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, Pair stride, enumtype::kSame, Pair dilation,
              int64_t groups) {
  wick::detail::check_defined(x, "conv2d", "self");
  wick::detail::check_defined(weight, "conv2d", "weight");
  WICK_CHECK(weight.dim() == 4, ValueError, "conv2d", "weight must be 4-D [out, in / groups, kh, kw], got ",
             weight.sizes());
  WICK_CHECK(stride.h == 1 && stride.w == 1, ValueError, "conv2d",
             "padding='same' is not supported for strided convolutions");
  const auto [top, bottom] = detail::same_padding(weight.size(2), dilation.h);
  const auto [left, right] = detail::same_padding(weight.size(3), dilation.w);
  if (top == bottom && left == right) return conv2d(x, weight, bias, 1, {top, left}, dilation, groups);
  // PyTorch's: the odd zero of each dim padded on its right (bottom) first, the rest symmetric.
  return wick::detail::as_op("conv2d", [&] {
    return conv2d(pad(x, {0, right - left, 0, bottom - top}), weight, bias, 1, {top, left}, dilation, groups);
  });
}

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, Pair stride, enumtype::kValid,
              Pair dilation, int64_t groups) {
  return conv2d(x, weight, bias, stride, Pair(0), dilation, groups);
}

Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride, enumtype::kSame,
              int64_t dilation, int64_t groups) {
  wick::detail::check_defined(x, "conv1d", "self");
  wick::detail::check_defined(weight, "conv1d", "weight");
  WICK_CHECK(weight.dim() == 3, ValueError, "conv1d", "weight must be 3-D [out, in / groups, k], got ",
             weight.sizes());
  WICK_CHECK(stride == 1, ValueError, "conv1d", "padding='same' is not supported for strided convolutions");
  const auto [left, right] = detail::same_padding(weight.size(2), dilation);
  if (left == right) return conv1d(x, weight, bias, 1, left, dilation, groups);
  return wick::detail::as_op("conv1d",
                             [&] { return conv1d(pad(x, {0, right - left}), weight, bias, 1, left, dilation, groups); });
}

Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride, enumtype::kValid,
              int64_t dilation, int64_t groups) {
  return conv1d(x, weight, bias, stride, int64_t(0), dilation, groups);
}

Tensor conv_transpose1d(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride, int64_t padding,
                        int64_t output_padding, int64_t groups, int64_t dilation) {
  constexpr const char* op = "conv_transpose1d";
  wick::detail::check_defined(x, op, "self");
  wick::detail::check_defined(weight, op, "weight");
  WICK_CHECK(x.dim() == 2 || x.dim() == 3, ValueError, op,
             "Expected 2D (unbatched) or 3D (batched) input to conv_transpose1d, but got input of size: ", x.sizes());
  WICK_CHECK(weight.dim() == 3, ValueError, op, "weight must be 3-D [in, out / groups, k], got ", weight.sizes());
  // [N, C, L] as [N, C, 1, L] (unbatched [C, L] as [C, 1, L]) and the weight's kernel as (1, k):
  // conv_transpose2d's stride, padding, output padding and dilation along L.
  return wick::detail::as_op(op, [&] {
    return conv_transpose2d(x.unsqueeze(-2), weight.unsqueeze(2), bias, {1, stride}, {0, padding},
                            {0, output_padding}, groups, {1, dilation})
        .squeeze(-2);
  });
}

}  // namespace wick::nn::functional
