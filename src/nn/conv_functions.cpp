// conv2d of nn::functional, recorded as one autograd node (ConvolutionBackward0). The
// poolings live in pooling_functions.cpp.
#include "autograd/function.h"
#include "core/tensor_iter.h"
#include "core/tensor_ops.h"
#include "nn/conv_backend.h"
#include "wick/nn/functional.h"
#include "wick/ops.h"

namespace wick::nn::functional {

using nn::detail::Conv2dParams;

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
  WICK_CHECK(weight.dim() == 4, ValueError, "conv2d", "weight must be 4-D [out, in / groups, kh, kw], got ",
             weight.sizes());
  WICK_CHECK(groups > 0 && weight.size(0) % groups == 0, ValueError, "conv2d",
             "out_channels must be divisible by groups");
  return batched(x, "conv2d", [&](const Tensor& x4) {
    WICK_CHECK(x4.size(1) == weight.size(1) * groups, ValueError, "conv2d", "Given groups=", groups,
               ", weight of size ", weight.sizes(), ", expected input", x4.sizes(), " to have ",
               weight.size(1) * groups, " channels, but got ", x4.size(1), " channels instead");
    wick::detail::check_same_device(weight, x4.device(), "conv2d", "weight");
    if (bias.defined()) wick::detail::check_same_device(bias, x4.device(), "conv2d", "bias");
    WICK_CHECK(weight.dtype() == x4.dtype(), TypeError, "conv2d", "Input type (", x4.dtype(),
               ") and weight type (", weight.dtype(), ") should be the same");
    const Conv2dParams p{{stride.h, stride.w}, {padding.h, padding.w}, {dilation.h, dilation.w}, groups};
    const int64_t oh = nn::detail::conv_out_size(x4.size(2), weight.size(2), stride.h, padding.h, dilation.h);
    const int64_t ow = nn::detail::conv_out_size(x4.size(3), weight.size(3), stride.w, padding.w, dilation.w);
    WICK_CHECK(oh > 0 && ow > 0, ValueError, "conv2d", "Calculated output size: (", oh, "x", ow,
               "). Output size is too small");
    const auto& backend = nn::detail::conv_backend(x4.device());
    Tensor y = autograd::forward([&] { return backend.forward(x4, weight, bias, p); });
    if (!GradMode::is_enabled() ||
        !(x4.requires_grad() || weight.requires_grad() || (bias.defined() && bias.requires_grad())))
      return y;
    return autograd::record("ConvolutionBackward0", {x4, weight, bias}, y, {x4, weight},
                            [p, &backend](autograd::BackwardContext& c) -> autograd::variable_list {
                              auto r = backend.backward(c.grad(), c.saved(0), c.saved(1), p,
                                                        {c.needs(0), c.needs(1), c.needs(2)});
                              return {r[0], r[1], r[2]};
                            });
  });
}

}  // namespace wick::nn::functional
