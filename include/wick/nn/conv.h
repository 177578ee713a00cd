// Conv2d over [N, C, H, W] (or unbatched [C, H, W]) with PyTorch's default initialization.
// The forward and backward run through the device's kernel table (src/core/conv.h): cuDNN on
// CUDA when the build found it, else a GEMM-based one (im2col), which also takes the CPU and
// what cuDNN lacks (integer dtypes).
//
//   wick::nn::Conv2d conv(wick::nn::Conv2dOptions(1, 8, 3).stride(1).padding(1).bias(false));
//   auto y = conv(wick::randn({4, 1, 28, 28}));   // [4, 8, 28, 28]
//
// ConvTranspose2d, conv2d's transpose (its input gradient), weight [in, out / groups, kh, kw]:
//   wick::nn::ConvTranspose2d up(wick::nn::ConvTranspose2dOptions(8, 3, 4).stride(2).padding(1));
//   auto img = up(wick::randn({4, 8, 14, 14}));   // [4, 3, 28, 28]
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "wick/nn/functional.h"
#include "wick/nn/module.h"
#include "wick/nn/options.h"

namespace wick::nn {

using ExpandingPair = functional::Pair;

struct Conv2dOptions {
  Conv2dOptions(int64_t in_channels, int64_t out_channels, ExpandingPair kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  WICK_ARG(int64_t, in_channels);
  WICK_ARG(int64_t, out_channels);
  // sizes, or wick::kSame / wick::kValid (functional::PaddingN)
  using padding_t = functional::Padding2d;
  WICK_ARG(ExpandingPair, kernel_size);
  WICK_ARG(ExpandingPair, stride) = 1;
  WICK_ARG(padding_t, padding) = 0;
  WICK_ARG(ExpandingPair, dilation) = 1;
  WICK_ARG(int64_t, groups) = 1;
  WICK_ARG(bool, bias) = true;
  // "zeros", "reflect", "replicate" or "circular" (or wick::kReflect ...): other modes pad the
  // input with F::pad before a convolution without padding, as PyTorch's.
  WICK_ARG(std::string, padding_mode) = "zeros";
};

class Conv2dImpl : public Module {
 public:
  Conv2dImpl(int64_t in_channels, int64_t out_channels, ExpandingPair kernel_size)
      : Conv2dImpl(Conv2dOptions(in_channels, out_channels, kernel_size)) {}
  explicit Conv2dImpl(const Conv2dOptions& options);
  Tensor forward(const Tensor& x);
  // weight kaiming_uniform_(a = sqrt(5)); bias U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
  void reset_parameters();
  std::string extra_repr() const override;
  Conv2dOptions options;
  Tensor weight, bias;
};
WICK_MODULE(Conv2d);

// Conv1d over [N, C, L] (or unbatched [C, L]): weight [out, in / groups, k], conv2d's kernels
// underneath (functional::conv1d).
struct Conv1dOptions {
  Conv1dOptions(int64_t in_channels, int64_t out_channels, int64_t kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  WICK_ARG(int64_t, in_channels);
  WICK_ARG(int64_t, out_channels);
  // a size, or wick::kSame / wick::kValid
  using padding_t = functional::Padding1d;
  WICK_ARG(int64_t, kernel_size);
  WICK_ARG(int64_t, stride) = 1;
  WICK_ARG(padding_t, padding) = 0;
  WICK_ARG(int64_t, dilation) = 1;
  WICK_ARG(int64_t, groups) = 1;
  WICK_ARG(bool, bias) = true;
  // as Conv2dOptions::padding_mode
  WICK_ARG(std::string, padding_mode) = "zeros";
};

class Conv1dImpl : public Module {
 public:
  Conv1dImpl(int64_t in_channels, int64_t out_channels, int64_t kernel_size)
      : Conv1dImpl(Conv1dOptions(in_channels, out_channels, kernel_size)) {}
  explicit Conv1dImpl(const Conv1dOptions& options);
  Tensor forward(const Tensor& x);
  // weight kaiming_uniform_(a = sqrt(5)); bias U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
  void reset_parameters();
  std::string extra_repr() const override;
  Conv1dOptions options;
  Tensor weight, bias;
};
WICK_MODULE(Conv1d);

struct ConvTranspose2dOptions {
  ConvTranspose2dOptions(int64_t in_channels, int64_t out_channels, ExpandingPair kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  WICK_ARG(int64_t, in_channels);
  WICK_ARG(int64_t, out_channels);
  WICK_ARG(ExpandingPair, kernel_size);
  WICK_ARG(ExpandingPair, stride) = 1;
  WICK_ARG(ExpandingPair, padding) = 0;
  WICK_ARG(ExpandingPair, output_padding) = 0;
  WICK_ARG(int64_t, groups) = 1;
  WICK_ARG(bool, bias) = true;
  WICK_ARG(ExpandingPair, dilation) = 1;
};

class ConvTranspose2dImpl : public Module {
 public:
  ConvTranspose2dImpl(int64_t in_channels, int64_t out_channels, ExpandingPair kernel_size)
      : ConvTranspose2dImpl(ConvTranspose2dOptions(in_channels, out_channels, kernel_size)) {}
  explicit ConvTranspose2dImpl(const ConvTranspose2dOptions& options);
  // output_size ((h, w), or the whole output shape) picks the output padding, as PyTorch's.
  Tensor forward(const Tensor& x, const std::optional<std::vector<int64_t>>& output_size = std::nullopt);
  // weight kaiming_uniform_(a = sqrt(5)) (fan_in from weight dim 1); bias U(+-1/sqrt(fan_in)).
  void reset_parameters();
  std::string extra_repr() const override;
  ConvTranspose2dOptions options;
  Tensor weight, bias;
};
WICK_MODULE(ConvTranspose2d);

// ConvTranspose1d over [N, C, L] (or unbatched [C, L]), weight [in, out / groups, k]: conv1d's
// transpose, conv_transpose2d's kernels over [N, C, 1, L] (functional::conv_transpose1d).
//   wick::nn::ConvTranspose1d up(wick::nn::ConvTranspose1dOptions(8, 4, 4).stride(2).padding(1));
//   auto y = up(wick::randn({2, 8, 16}));   // [2, 4, 32]
namespace functional {
// torch.nn.functional.conv_transpose1d, PyTorch's argument order (groups before dilation). The
// output is the squeeze of a conv_transpose2d's (node SqueezeBackward1).
Tensor conv_transpose1d(const Tensor& x, const Tensor& weight, const Tensor& bias = {}, int64_t stride = 1,
                        int64_t padding = 0, int64_t output_padding = 0, int64_t groups = 1, int64_t dilation = 1);
struct ConvTranspose1dFuncOptions {
  WICK_ARG(Tensor, bias) = {};
  WICK_ARG(int64_t, stride) = 1;
  WICK_ARG(int64_t, padding) = 0;
  WICK_ARG(int64_t, output_padding) = 0;
  WICK_ARG(int64_t, groups) = 1;
  WICK_ARG(int64_t, dilation) = 1;
};
inline Tensor conv_transpose1d(const Tensor& x, const Tensor& weight, const ConvTranspose1dFuncOptions& o) {
  return conv_transpose1d(x, weight, o.bias(), o.stride(), o.padding(), o.output_padding(), o.groups(),
                          o.dilation());
}
}  // namespace functional

struct ConvTranspose1dOptions {
  ConvTranspose1dOptions(int64_t in_channels, int64_t out_channels, int64_t kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  WICK_ARG(int64_t, in_channels);
  WICK_ARG(int64_t, out_channels);
  WICK_ARG(int64_t, kernel_size);
  WICK_ARG(int64_t, stride) = 1;
  WICK_ARG(int64_t, padding) = 0;
  WICK_ARG(int64_t, output_padding) = 0;
  WICK_ARG(int64_t, groups) = 1;
  WICK_ARG(bool, bias) = true;
  WICK_ARG(int64_t, dilation) = 1;
};

class ConvTranspose1dImpl : public Module {
 public:
  ConvTranspose1dImpl(int64_t in_channels, int64_t out_channels, int64_t kernel_size)
      : ConvTranspose1dImpl(ConvTranspose1dOptions(in_channels, out_channels, kernel_size)) {}
  explicit ConvTranspose1dImpl(const ConvTranspose1dOptions& options);
  // output_size ((l), or the whole output shape) picks the output padding, as PyTorch's.
  Tensor forward(const Tensor& x, const std::optional<std::vector<int64_t>>& output_size = std::nullopt);
  // weight kaiming_uniform_(a = sqrt(5)) (fan_in from weight dim 1); bias U(+-1/sqrt(fan_in)).
  void reset_parameters();
  std::string extra_repr() const override;
  ConvTranspose1dOptions options;
  Tensor weight, bias;
};
WICK_MODULE(ConvTranspose1d);

// Conv3d over [N, C, D, H, W] (or unbatched [C, D, H, W]), weight [out, in / groups, kd, kh,
// kw]: conv2d's kernels underneath, one call per depth tap (functional::conv3d).
namespace functional {
// Three sizes (depth, height, width), from one value or three (LibTorch's ExpandingArray<3>).
struct Triple {
  int64_t d, h, w;
  Triple(int64_t v) : d(v), h(v), w(v) {}
  Triple(int64_t d_, int64_t h_, int64_t w_) : d(d_), h(h_), w(w_) {}
  Triple(std::initializer_list<int64_t> l);
  bool operator==(const Triple& o) const { return d == o.d && h == o.h && w == o.w; }
  // LibTorch's ExpandingArray<3> reads, as Pair's: k->at(0), (*k)[2], k->size().
  int64_t operator[](size_t i) const { return i == 0 ? d : i == 1 ? h : w; }
  int64_t at(size_t i) const;
  static constexpr size_t size() { return 3; }
  const Triple* operator->() const { return this; }
  const Triple& operator*() const { return *this; }
};
// torch.nn.functional.conv3d. The depth taps are conv2d calls over the input's depth slices
// folded into the batch, summed, so the autograd graph shows conv2d's nodes.
Tensor conv3d(const Tensor& x, const Tensor& weight, const Tensor& bias = {}, Triple stride = 1, Triple padding = 0,
              Triple dilation = 1, int64_t groups = 1);
// padding='same' and 'valid', as conv2d's.
Tensor conv3d(const Tensor& x, const Tensor& weight, const Tensor& bias, Triple stride, enumtype::kSame padding,
              Triple dilation = 1, int64_t groups = 1);
Tensor conv3d(const Tensor& x, const Tensor& weight, const Tensor& bias, Triple stride, enumtype::kValid padding,
              Triple dilation = 1, int64_t groups = 1);
using Padding3d = PaddingN<Triple>;
struct Conv3dFuncOptions {
  WICK_ARG(Tensor, bias) = {};
  WICK_ARG(Triple, stride) = 1;
  // sizes, or wick::kSame / wick::kValid
  WICK_ARG(Padding3d, padding) = 0;
  WICK_ARG(Triple, dilation) = 1;
  WICK_ARG(int64_t, groups) = 1;
};
inline Tensor conv3d(const Tensor& x, const Tensor& weight, const Conv3dFuncOptions& o) {
  if (o.padding().is_same()) return conv3d(x, weight, o.bias(), o.stride(), kSame, o.dilation(), o.groups());
  return conv3d(x, weight, o.bias(), o.stride(), o.padding().sizes(), o.dilation(), o.groups());
}
}  // namespace functional

using ExpandingTriple = functional::Triple;

struct Conv3dOptions {
  Conv3dOptions(int64_t in_channels, int64_t out_channels, ExpandingTriple kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  WICK_ARG(int64_t, in_channels);
  WICK_ARG(int64_t, out_channels);
  // sizes, or wick::kSame / wick::kValid
  using padding_t = functional::Padding3d;
  WICK_ARG(ExpandingTriple, kernel_size);
  WICK_ARG(ExpandingTriple, stride) = 1;
  WICK_ARG(padding_t, padding) = 0;
  WICK_ARG(ExpandingTriple, dilation) = 1;
  WICK_ARG(int64_t, groups) = 1;
  WICK_ARG(bool, bias) = true;
};

class Conv3dImpl : public Module {
 public:
  Conv3dImpl(int64_t in_channels, int64_t out_channels, ExpandingTriple kernel_size)
      : Conv3dImpl(Conv3dOptions(in_channels, out_channels, kernel_size)) {}
  explicit Conv3dImpl(const Conv3dOptions& options);
  Tensor forward(const Tensor& x);
  // weight kaiming_uniform_(a = sqrt(5)); bias U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
  void reset_parameters();
  std::string extra_repr() const override;
  Conv3dOptions options;
  Tensor weight, bias;
};
WICK_MODULE(Conv3d);

}  // namespace wick::nn

namespace wick {
using nn::functional::conv_transpose1d;
}  // namespace wick
