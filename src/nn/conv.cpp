// Conv2d, Conv1d, ConvTranspose2d, ConvTranspose1d, Conv3d (and functional::conv3d) and the pooling modules.
#include "wick/nn/conv.h"

#include <cmath>

#include "core/as_op.h"
#include "core/checks.h"
#include "core/tensor_ops.h"
#include "nn/conv_common.h"
#include "nn/repr.h"
#include "wick/nn/init.h"
#include "wick/nn/pooling.h"
#include "wick/ops.h"

namespace wick::nn {

namespace {

std::string pair_repr(functional::Pair p) { return detail::py_tuple({p.h, p.w}); }

// PyTorch's check of a convolution's padding_mode, and its repr (printed when not "zeros").
void check_padding_mode(const std::string& mode, const char* op) {
  WICK_CHECK(mode == "zeros" || mode == "reflect" || mode == "replicate" || mode == "circular", ValueError, op,
             "padding_mode must be one of {'zeros', 'reflect', 'replicate', 'circular'}, but got padding_mode='",
             mode, "'");
}
std::string padding_mode_repr(const std::string& mode) { return mode == "zeros" ? "" : ", padding_mode=" + mode; }

// PyTorch's check of a module's padding='same': stride 1 along every dim.
void check_same_stride(const functional::PaddingKind& padding, std::initializer_list<int64_t> stride, const char* op) {
  if (!padding.is_same()) return;
  for (int64_t s : stride)
    WICK_CHECK(s == 1, ValueError, op, "padding='same' is not supported for strided convolutions");
}

// ", padding=same" / ", padding=valid" as PyTorch prints a string padding, else sizes (when not 0).
std::string padding_repr(const functional::PaddingKind& padding, bool zero, const std::string& sizes) {
  if (padding.is_same()) return ", padding=same";
  if (padding.is_valid()) return ", padding=valid";
  return zero ? "" : ", padding=" + sizes;
}

// The padding of each spatial dim, (left, right), for 'same' (dilation * (kernel - 1) in all,
// the odd one on the right) or the given sizes on both sides.
std::pair<int64_t, int64_t> same_or_sizes(const functional::PaddingKind& padding, int64_t size, int64_t kernel,
                                          int64_t dilation) {
  return padding.is_same() ? detail::same_padding(kernel, dilation) : std::pair{size, size};
}

// A convolution's input padded by mode (reflect, replicate, circular) on both sides of each
// spatial dim, last dim first (F::pad's order), as PyTorch's _conv_forward before a convolution
// without padding.
Tensor pad_for_mode(const Tensor& x, const std::vector<int64_t>& pad, const std::string& mode, const char* op) {
  check_padding_mode(mode, op);
  return wick::detail::as_op(op, [&] { return functional::pad(x, pad, mode); });
}

}  // namespace

namespace detail {

void check_groups(const char* op, int64_t in_channels, int64_t out_channels, int64_t groups) {
  WICK_CHECK(groups > 0, ValueError, op, "groups must be a positive integer");
  WICK_CHECK(in_channels % groups == 0, ValueError, op, "in_channels must be divisible by groups");
  WICK_CHECK(out_channels % groups == 0, ValueError, op, "out_channels must be divisible by groups");
}

void reset_conv(Tensor& weight, Tensor& bias) {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const int64_t fan_in = init::calculate_fan_in_and_fan_out(weight).first;
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(double(fan_in)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
}

std::vector<int64_t> transposed_output_padding(const Tensor& x, const std::vector<int64_t>& output_size,
                                               const int64_t* kernel, const int64_t* stride,
                                               const int64_t* padding, const int64_t* dilation, int dims,
                                               const char* op) {
  const int64_t lead = x.dim() - dims;
  std::vector<int64_t> size = output_size;
  if (int64_t(size.size()) == lead + dims) size.erase(size.begin(), size.begin() + lead);
  WICK_CHECK(int64_t(size.size()) == dims, ValueError, op, "ConvTranspose", dims, "D: for ", x.dim(),
             "D input, output_size must have ", dims, " or ", lead + dims, " elements (got ", output_size.size(),
             ")");
  const size_t nd = size_t(dims);
  std::vector<int64_t> lo(nd), hi(nd), out(nd);
  for (int i = 0; i < dims; ++i) {
    lo[i] = (x.size(lead + i) - 1) * stride[i] - 2 * padding[i] + dilation[i] * (kernel[i] - 1) + 1;
    hi[i] = lo[i] + stride[i] - 1;
  }
  for (int i = 0; i < dims; ++i)
    WICK_CHECK(size[i] >= lo[i] && size[i] <= hi[i], ValueError, op, "requested an output size of ",
               IntArrayRef(size), ", but valid sizes range from ", IntArrayRef(lo), " to ", IntArrayRef(hi),
               " (for an input of ", IntArrayRef(x.sizes().data() + lead, size_t(dims)), ")");
  for (int i = 0; i < dims; ++i) out[i] = size[i] - lo[i];
  return out;
}

}  // namespace detail

Conv2dImpl::Conv2dImpl(const Conv2dOptions& options) : options(options) {
  const int64_t g = options.groups();
  detail::check_groups("Conv2d", options.in_channels(), options.out_channels(), g);
  check_padding_mode(options.padding_mode(), "Conv2d");
  check_same_stride(options.padding(), {options.stride().h, options.stride().w}, "Conv2d");
  weight =
      register_parameter("weight", wick::detail::empty_for({options.out_channels(), options.in_channels() / g,
                                                            options.kernel_size().h, options.kernel_size().w},
                                                           {}, "Conv2d"));
  if (options.bias())
    bias = register_parameter("bias", wick::detail::empty_for({options.out_channels()}, {}, "Conv2d"));
  reset_parameters();
}

void Conv2dImpl::reset_parameters() { detail::reset_conv(weight, bias); }

Tensor Conv2dImpl::forward(const Tensor& x) {
  const auto& p = options.padding();
  if (options.padding_mode() != "zeros") {
    check_same_stride(p, {options.stride().h, options.stride().w}, "Conv2d");
    const auto [top, bottom] = same_or_sizes(p, p.h, options.kernel_size().h, options.dilation().h);
    const auto [left, right] = same_or_sizes(p, p.w, options.kernel_size().w, options.dilation().w);
    return functional::conv2d(pad_for_mode(x, {left, right, top, bottom}, options.padding_mode(), "Conv2d"), weight,
                              bias, options.stride(), 0, options.dilation(), options.groups());
  }
  if (p.is_same())
    return functional::conv2d(x, weight, bias, options.stride(), kSame, options.dilation(), options.groups());
  return functional::conv2d(x, weight, bias, options.stride(), p.sizes(), options.dilation(), options.groups());
}

std::string Conv2dImpl::extra_repr() const {
  // PyTorch prints the options that differ from their defaults.
  std::string s = std::to_string(options.in_channels()) + ", " + std::to_string(options.out_channels()) +
                  ", kernel_size=" + pair_repr(options.kernel_size()) +
                  ", stride=" + pair_repr(options.stride());
  const auto& p = options.padding();
  s += padding_repr(p, p.sizes() == functional::Pair(0), pair_repr(p.sizes()));
  if (!(options.dilation() == functional::Pair(1))) s += ", dilation=" + pair_repr(options.dilation());
  if (options.groups() != 1) s += ", groups=" + std::to_string(options.groups());
  if (!bias.defined()) s += ", bias=False";
  return s + padding_mode_repr(options.padding_mode());
}

Conv1dImpl::Conv1dImpl(const Conv1dOptions& options) : options(options) {
  const int64_t g = options.groups();
  detail::check_groups("Conv1d", options.in_channels(), options.out_channels(), g);
  check_padding_mode(options.padding_mode(), "Conv1d");
  check_same_stride(options.padding(), {options.stride()}, "Conv1d");
  weight = register_parameter(
      "weight", wick::detail::empty_for({options.out_channels(), options.in_channels() / g, options.kernel_size()},
                                        {}, "Conv1d"));
  if (options.bias())
    bias = register_parameter("bias", wick::detail::empty_for({options.out_channels()}, {}, "Conv1d"));
  reset_parameters();
}

void Conv1dImpl::reset_parameters() { detail::reset_conv(weight, bias); }

Tensor Conv1dImpl::forward(const Tensor& x) {
  const auto& p = options.padding();
  if (options.padding_mode() != "zeros") {
    check_same_stride(p, {options.stride()}, "Conv1d");
    const auto [left, right] = same_or_sizes(p, p.value, options.kernel_size(), options.dilation());
    return functional::conv1d(pad_for_mode(x, {left, right}, options.padding_mode(), "Conv1d"), weight, bias,
                              options.stride(), 0, options.dilation(), options.groups());
  }
  if (p.is_same())
    return functional::conv1d(x, weight, bias, options.stride(), kSame, options.dilation(), options.groups());
  return functional::conv1d(x, weight, bias, options.stride(), p.value, options.dilation(), options.groups());
}

std::string Conv1dImpl::extra_repr() const {
  const auto one = [](int64_t v) { return detail::py_tuple({v}); };
  std::string s = std::to_string(options.in_channels()) + ", " + std::to_string(options.out_channels()) +
                  ", kernel_size=" + one(options.kernel_size()) + ", stride=" + one(options.stride());
  const auto& p = options.padding();
  s += padding_repr(p, p.value == 0, one(p.value));
  if (options.dilation() != 1) s += ", dilation=" + one(options.dilation());
  if (options.groups() != 1) s += ", groups=" + std::to_string(options.groups());
  if (!bias.defined()) s += ", bias=False";
  return s + padding_mode_repr(options.padding_mode());
}

// ---- transposed convolution

ConvTranspose2dImpl::ConvTranspose2dImpl(const ConvTranspose2dOptions& options) : options(options) {
  const int64_t g = options.groups();
  detail::check_groups("ConvTranspose2d", options.in_channels(), options.out_channels(), g);
  weight = register_parameter(
      "weight", wick::detail::empty_for({options.in_channels(), options.out_channels() / g,
                                         options.kernel_size().h, options.kernel_size().w},
                                        {}, "ConvTranspose2d"));
  if (options.bias())
    bias = register_parameter("bias", wick::detail::empty_for({options.out_channels()}, {}, "ConvTranspose2d"));
  reset_parameters();
}

void ConvTranspose2dImpl::reset_parameters() { detail::reset_conv(weight, bias); }

Tensor ConvTranspose2dImpl::forward(const Tensor& x, const std::optional<std::vector<int64_t>>& output_size) {
  const ConvTranspose2dOptions& o = options;
  functional::Pair op = o.output_padding();
  if (output_size && x.defined() && (x.dim() == 3 || x.dim() == 4)) {
    const int64_t k[2] = {o.kernel_size().h, o.kernel_size().w}, s[2] = {o.stride().h, o.stride().w},
                  p[2] = {o.padding().h, o.padding().w}, d[2] = {o.dilation().h, o.dilation().w};
    const auto pad = detail::transposed_output_padding(x, *output_size, k, s, p, d, 2, "ConvTranspose2d");
    op = functional::Pair(pad[0], pad[1]);
  }
  return functional::conv_transpose2d(x, weight, bias, o.stride(), o.padding(), op, o.groups(), o.dilation());
}

std::string ConvTranspose2dImpl::extra_repr() const {
  std::string s = std::to_string(options.in_channels()) + ", " + std::to_string(options.out_channels()) +
                  ", kernel_size=" + pair_repr(options.kernel_size()) +
                  ", stride=" + pair_repr(options.stride());
  if (!(options.padding() == functional::Pair(0))) s += ", padding=" + pair_repr(options.padding());
  if (!(options.dilation() == functional::Pair(1))) s += ", dilation=" + pair_repr(options.dilation());
  if (!(options.output_padding() == functional::Pair(0)))
    s += ", output_padding=" + pair_repr(options.output_padding());
  if (options.groups() != 1) s += ", groups=" + std::to_string(options.groups());
  if (!bias.defined()) s += ", bias=False";
  return s;
}

ConvTranspose1dImpl::ConvTranspose1dImpl(const ConvTranspose1dOptions& options) : options(options) {
  const int64_t g = options.groups();
  detail::check_groups("ConvTranspose1d", options.in_channels(), options.out_channels(), g);
  weight = register_parameter(
      "weight", wick::detail::empty_for({options.in_channels(), options.out_channels() / g, options.kernel_size()},
                                        {}, "ConvTranspose1d"));
  if (options.bias())
    bias = register_parameter("bias", wick::detail::empty_for({options.out_channels()}, {}, "ConvTranspose1d"));
  reset_parameters();
}

void ConvTranspose1dImpl::reset_parameters() { detail::reset_conv(weight, bias); }

Tensor ConvTranspose1dImpl::forward(const Tensor& x, const std::optional<std::vector<int64_t>>& output_size) {
  const ConvTranspose1dOptions& o = options;
  int64_t op = o.output_padding();
  if (output_size && x.defined() && (x.dim() == 2 || x.dim() == 3)) {
    const int64_t k = o.kernel_size(), s = o.stride(), p = o.padding(), d = o.dilation();
    op = detail::transposed_output_padding(x, *output_size, &k, &s, &p, &d, 1, "ConvTranspose1d")[0];
  }
  return functional::conv_transpose1d(x, weight, bias, o.stride(), o.padding(), op, o.groups(), o.dilation());
}

std::string ConvTranspose1dImpl::extra_repr() const {
  const auto one = [](int64_t v) { return detail::py_tuple({v}); };
  std::string s = std::to_string(options.in_channels()) + ", " + std::to_string(options.out_channels()) +
                  ", kernel_size=" + one(options.kernel_size()) + ", stride=" + one(options.stride());
  if (options.padding() != 0) s += ", padding=" + one(options.padding());
  if (options.dilation() != 1) s += ", dilation=" + one(options.dilation());
  if (options.output_padding() != 0) s += ", output_padding=" + one(options.output_padding());
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

Tensor MaxPool1dImpl::forward(const Tensor& x) {
  return functional::max_pool1d(x, options.kernel_size(), options.stride(), options.padding(), options.dilation(),
                                options.ceil_mode());
}

std::string MaxPool1dImpl::extra_repr() const {
  return "kernel_size=" + std::to_string(options.kernel_size()) + ", stride=" + std::to_string(options.stride()) +
         ", padding=" + std::to_string(options.padding()) + ", dilation=" + std::to_string(options.dilation()) +
         ", ceil_mode=" + detail::py_bool(options.ceil_mode());
}

Tensor AvgPool1dImpl::forward(const Tensor& x) {
  return functional::avg_pool1d(x, options.kernel_size(), options.stride(), options.padding(), options.ceil_mode(),
                                options.count_include_pad());
}

std::string AvgPool1dImpl::extra_repr() const {
  // PyTorch keeps AvgPool1d's sizes as 1-tuples.
  return "kernel_size=" + detail::py_tuple({options.kernel_size()}) + ", stride=" +
         detail::py_tuple({options.stride()}) + ", padding=" + detail::py_tuple({options.padding()});
}

Tensor AdaptiveAvgPool1dImpl::forward(const Tensor& x) { return functional::adaptive_avg_pool1d(x, output_size); }

std::string AdaptiveAvgPool1dImpl::extra_repr() const { return "output_size=" + std::to_string(output_size); }

// ---- 3-D convolution

int64_t functional::Pair::at(size_t i) const {
  WICK_CHECK(i < 2, IndexError, "ExpandingArray", "index ", i, " is out of range for 2 values");
  return (*this)[i];
}

int64_t functional::Triple::at(size_t i) const {
  WICK_CHECK(i < 3, IndexError, "ExpandingArray", "index ", i, " is out of range for 3 values");
  return (*this)[i];
}

functional::Triple::Triple(std::initializer_list<int64_t> l) {
  WICK_CHECK(l.size() == 1 || l.size() == 3, ValueError, "Triple", "expected 1 or 3 values, got ", l.size());
  d = *l.begin();
  h = l.size() == 3 ? *(l.begin() + 1) : d;
  w = *(l.end() - 1);
}

Tensor functional::conv3d(const Tensor& x, const Tensor& weight, const Tensor& bias, Triple stride, Triple padding,
                          Triple dilation, int64_t groups) {
  constexpr const char* op = "conv3d";
  wick::detail::check_defined(x, op, "self");
  wick::detail::check_defined(weight, op, "weight");
  WICK_CHECK(x.dim() == 4 || x.dim() == 5, ValueError, op,
             "Expected 4D (unbatched) or 5D (batched) input to conv3d, but got input of size: ", x.sizes());
  WICK_CHECK(weight.dim() == 5, ValueError, op, "weight must be 5-D [out, in / groups, kd, kh, kw], got ",
             weight.sizes());
  if (x.dim() == 4) return conv3d(x.unsqueeze(0), weight, bias, stride, padding, dilation, groups).squeeze(0);
  WICK_CHECK(groups > 0, ValueError, op, "non-positive groups is not supported");
  WICK_CHECK(stride.d > 0 && stride.h > 0 && stride.w > 0, ValueError, op, "non-positive stride is not supported");
  WICK_CHECK(padding.d >= 0 && padding.h >= 0 && padding.w >= 0, ValueError, op, "negative padding is not supported");
  WICK_CHECK(dilation.d > 0 && dilation.h > 0 && dilation.w > 0, ValueError, op,
             "dilation should be greater than zero");
  const int64_t n = x.size(0), c = x.size(1), kd = weight.size(2);
  WICK_CHECK(c == weight.size(1) * groups, ValueError, op, "Given groups=", groups, ", weight of size ",
             weight.sizes(), ", expected input", x.sizes(), " to have ", weight.size(1) * groups,
             " channels, but got ", c, " channels instead");
  const int64_t depth = x.size(2) + 2 * padding.d, span = dilation.d * (kd - 1) + 1;
  WICK_CHECK(depth >= span && x.size(3) + 2 * padding.h >= dilation.h * (weight.size(3) - 1) + 1 &&
                 x.size(4) + 2 * padding.w >= dilation.w * (weight.size(4) - 1) + 1,
             ValueError, op, "Calculated padded input size per channel: (", depth, " x ", x.size(3) + 2 * padding.h,
             " x ", x.size(4) + 2 * padding.w, "). Kernel size: (", span, " x ",
             dilation.h * (weight.size(3) - 1) + 1, " x ", dilation.w * (weight.size(4) - 1) + 1,
             "). Kernel size can't be greater than actual input size");
  return wick::detail::as_op(op, [&] {
    const Tensor xp = padding.d ? functional::pad(x, {0, 0, 0, 0, padding.d, padding.d}) : x;
    const int64_t out_depth = (depth - span) / stride.d + 1;
    // Depth tap k reads depths k dilation + i stride of the padded input for the output depths
    // i: those slices, folded into the batch, convolved in 2-D with the weight's tap k.
    Tensor out;
    for (int64_t k = 0; k < kd; ++k) {
      const int64_t start = k * dilation.d;
      Tensor xs = xp.slice(2, start, start + (out_depth - 1) * stride.d + 1, stride.d)
                      .transpose(1, 2)
                      .reshape({n * out_depth, c, xp.size(3), xp.size(4)});
      Tensor yk = conv2d(xs, weight.select(2, k), k == 0 ? bias : Tensor(), {stride.h, stride.w},
                         {padding.h, padding.w}, {dilation.h, dilation.w}, groups);
      out = out.defined() ? out + yk : yk;
    }
    return out.reshape({n, out_depth, out.size(1), out.size(2), out.size(3)}).transpose(1, 2).contiguous();
  });
}

Tensor functional::conv3d(const Tensor& x, const Tensor& weight, const Tensor& bias, Triple stride, enumtype::kSame,
                          Triple dilation, int64_t groups) {
  constexpr const char* op = "conv3d";
  wick::detail::check_defined(weight, op, "weight");
  WICK_CHECK(weight.dim() == 5, ValueError, op, "weight must be 5-D [out, in / groups, kd, kh, kw], got ",
             weight.sizes());
  WICK_CHECK(stride.d == 1 && stride.h == 1 && stride.w == 1, ValueError, op,
             "padding='same' is not supported for strided convolutions");
  const auto [front, back] = detail::same_padding(weight.size(2), dilation.d);
  const auto [top, bottom] = detail::same_padding(weight.size(3), dilation.h);
  const auto [left, right] = detail::same_padding(weight.size(4), dilation.w);
  // PyTorch's: the odd zero of each dim padded on its right first, the rest symmetric.
  const bool odd = back != front || bottom != top || right != left;
  return wick::detail::as_op(op, [&] {
    const Tensor xp = odd ? functional::pad(x, {0, right - left, 0, bottom - top, 0, back - front}) : x;
    return conv3d(xp, weight, bias, 1, Triple(front, top, left), dilation, groups);
  });
}

Tensor functional::conv3d(const Tensor& x, const Tensor& weight, const Tensor& bias, Triple stride, enumtype::kValid,
                          Triple dilation, int64_t groups) {
  return conv3d(x, weight, bias, stride, Triple(0), dilation, groups);
}

Conv3dImpl::Conv3dImpl(const Conv3dOptions& options) : options(options) {
  const int64_t g = options.groups();
  detail::check_groups("Conv3d", options.in_channels(), options.out_channels(), g);
  check_same_stride(options.padding(), {options.stride().d, options.stride().h, options.stride().w}, "Conv3d");
  const auto& k = options.kernel_size();
  weight = register_parameter(
      "weight", wick::detail::empty_for({options.out_channels(), options.in_channels() / g, k.d, k.h, k.w}, {},
                                        "Conv3d"));
  if (options.bias())
    bias = register_parameter("bias", wick::detail::empty_for({options.out_channels()}, {}, "Conv3d"));
  reset_parameters();
}

void Conv3dImpl::reset_parameters() { detail::reset_conv(weight, bias); }

Tensor Conv3dImpl::forward(const Tensor& x) {
  const auto& p = options.padding();
  if (p.is_same())
    return functional::conv3d(x, weight, bias, options.stride(), kSame, options.dilation(), options.groups());
  return functional::conv3d(x, weight, bias, options.stride(), p.sizes(), options.dilation(), options.groups());
}

std::string Conv3dImpl::extra_repr() const {
  const auto three = [](functional::Triple t) { return detail::py_tuple({t.d, t.h, t.w}); };
  std::string s = std::to_string(options.in_channels()) + ", " + std::to_string(options.out_channels()) +
                  ", kernel_size=" + three(options.kernel_size()) + ", stride=" + three(options.stride());
  const auto& p = options.padding();
  s += padding_repr(p, p.sizes() == functional::Triple(0), three(p.sizes()));
  if (!(options.dilation() == functional::Triple(1))) s += ", dilation=" + three(options.dilation());
  if (options.groups() != 1) s += ", groups=" + std::to_string(options.groups());
  if (!bias.defined()) s += ", bias=False";
  return s;
}

}  // namespace wick::nn
