// Conv2d and the pooling modules.
#include "wick/nn/conv.h"

#include <cmath>

#include "core/tensor_ops.h"
#include "nn/repr.h"
#include "wick/nn/init.h"
#include "wick/nn/pooling.h"
#include "wick/ops.h"

namespace wick::nn {

namespace {
std::string pair_repr(functional::Pair p) { return detail::py_tuple({p.h, p.w}); }
}  // namespace

Conv2dImpl::Conv2dImpl(const Conv2dOptions& options) : options(options) {
  const int64_t g = options.groups();
  WICK_CHECK(g > 0, ValueError, "Conv2d", "groups must be a positive integer");
  WICK_CHECK(options.in_channels() % g == 0, ValueError, "Conv2d", "in_channels must be divisible by groups");
  WICK_CHECK(options.out_channels() % g == 0, ValueError, "Conv2d",
             "out_channels must be divisible by groups");
  weight =
      register_parameter("weight", wick::detail::empty_for({options.out_channels(), options.in_channels() / g,
                                                            options.kernel_size().h, options.kernel_size().w},
                                                           {}, "Conv2d"));
  if (options.bias())
    bias = register_parameter("bias", wick::detail::empty_for({options.out_channels()}, {}, "Conv2d"));
  reset_parameters();
}

void Conv2dImpl::reset_parameters() {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const int64_t fan_in = init::calculate_fan_in_and_fan_out(weight).first;
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(double(fan_in)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
}

Tensor Conv2dImpl::forward(const Tensor& x) {
  return functional::conv2d(x, weight, bias, options.stride(), options.padding(), options.dilation(),
                            options.groups());
}

std::string Conv2dImpl::extra_repr() const {
  // PyTorch prints the options that differ from their defaults.
  std::string s = std::to_string(options.in_channels()) + ", " + std::to_string(options.out_channels()) +
                  ", kernel_size=" + pair_repr(options.kernel_size()) +
                  ", stride=" + pair_repr(options.stride());
  if (!(options.padding() == functional::Pair(0))) s += ", padding=" + pair_repr(options.padding());
  if (!(options.dilation() == functional::Pair(1))) s += ", dilation=" + pair_repr(options.dilation());
  if (options.groups() != 1) s += ", groups=" + std::to_string(options.groups());
  if (!bias.defined()) s += ", bias=False";
  return s;
}

// ---- pooling

namespace {
// A pair prints as one number when both are equal, as the int PyTorch users usually pass.
std::string scalar_or_pair(functional::Pair p) { return p.h == p.w ? std::to_string(p.h) : pair_repr(p); }
}  // namespace

Tensor MaxPool2dImpl::forward(const Tensor& x) {
  return functional::max_pool2d(x, options.kernel_size(), options.stride(), options.padding(),
                                options.dilation(), options.ceil_mode());
}

std::string MaxPool2dImpl::extra_repr() const {
  return "kernel_size=" + scalar_or_pair(options.kernel_size()) +
         ", stride=" + scalar_or_pair(options.stride()) + ", padding=" + scalar_or_pair(options.padding()) +
         ", dilation=" + scalar_or_pair(options.dilation()) +
         ", ceil_mode=" + detail::py_bool(options.ceil_mode());
}

Tensor AvgPool2dImpl::forward(const Tensor& x) {
  return functional::avg_pool2d(x, options.kernel_size(), options.stride(), options.padding(),
                                options.ceil_mode(), options.count_include_pad());
}

std::string AvgPool2dImpl::extra_repr() const {
  return "kernel_size=" + scalar_or_pair(options.kernel_size()) +
         ", stride=" + scalar_or_pair(options.stride()) + ", padding=" + scalar_or_pair(options.padding());
}

Tensor AdaptiveAvgPool2dImpl::forward(const Tensor& x) {
  return functional::adaptive_avg_pool2d(x, output_size);
}

std::string AdaptiveAvgPool2dImpl::extra_repr() const { return "output_size=" + scalar_or_pair(output_size); }

}  // namespace wick::nn
