// The 3-D poolings and ConvTranspose3d over [N, C, D, H, W] (or unbatched [C, D, H, W]), with
// their functional forms. No kernels of their own: each is composed of existing ops (padding,
// unfold along the three spatial dims, reductions; conv_transpose2d per depth tap), so every
// device runs them and autograd records the composition's nodes (docs/design.md §10).
//
//   wick::nn::MaxPool3d pool(wick::nn::MaxPool3dOptions(3).stride(2).padding(1));
//   auto [values, indices] = F::max_pool3d_with_indices(x, 2);   // indices into each D*H*W plane
//   wick::nn::ConvTranspose3d up(wick::nn::ConvTranspose3dOptions(8, 4, 4).stride(2).padding(1));
#pragma once

#include <optional>
#include <tuple>
#include <vector>

#include "wick/nn/conv.h"
#include "wick/nn/module.h"
#include "wick/nn/options.h"

namespace wick::nn {

namespace functional {

// torch.nn.functional.max_pool3d; the _with_indices form also gives each maximum's flat index
// into its input's D * H * W plane (Python's return_indices=True).
Tensor max_pool3d(const Tensor& x, Triple kernel_size, std::optional<Triple> stride = std::nullopt,
                  Triple padding = 0, Triple dilation = 1, bool ceil_mode = false);
std::tuple<Tensor, Tensor> max_pool3d_with_indices(const Tensor& x, Triple kernel_size,
                                                   std::optional<Triple> stride = std::nullopt, Triple padding = 0,
                                                   Triple dilation = 1, bool ceil_mode = false);
Tensor avg_pool3d(const Tensor& x, Triple kernel_size, std::optional<Triple> stride = std::nullopt,
                  Triple padding = 0, bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);
// Output bin i of a dim of size n covers [floor(i n / out), ceil((i + 1) n / out)), as PyTorch's.
Tensor adaptive_avg_pool3d(const Tensor& x, Triple output_size);
Tensor adaptive_max_pool3d(const Tensor& x, Triple output_size);
std::tuple<Tensor, Tensor> adaptive_max_pool3d_with_indices(const Tensor& x, Triple output_size);
// torch.nn.functional.conv_transpose3d, weight [in, out / groups, kd, kh, kw]: one
// conv_transpose2d per depth tap over the input's depth slices folded into the batch, each
// placed at its output depths.
Tensor conv_transpose3d(const Tensor& x, const Tensor& weight, const Tensor& bias = {}, Triple stride = 1,
                        Triple padding = 0, Triple output_padding = 0, int64_t groups = 1, Triple dilation = 1);

// LibTorch's keyword forms: F::max_pool3d(x, F::MaxPool3dFuncOptions(3).stride(2)), ...
struct MaxPool3dFuncOptions {
  MaxPool3dFuncOptions(Triple kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}
  WICK_ARG(Triple, kernel_size);
  WICK_ARG(Triple, stride);
  WICK_ARG(Triple, padding) = 0;
  WICK_ARG(Triple, dilation) = 1;
  WICK_ARG(bool, ceil_mode) = false;
};
inline Tensor max_pool3d(const Tensor& x, const MaxPool3dFuncOptions& o) {
  return max_pool3d(x, o.kernel_size(), o.stride(), o.padding(), o.dilation(), o.ceil_mode());
}
inline std::tuple<Tensor, Tensor> max_pool3d_with_indices(const Tensor& x, const MaxPool3dFuncOptions& o) {
  return max_pool3d_with_indices(x, o.kernel_size(), o.stride(), o.padding(), o.dilation(), o.ceil_mode());
}
struct AvgPool3dFuncOptions {
  AvgPool3dFuncOptions(Triple kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}
  WICK_ARG(Triple, kernel_size);
  WICK_ARG(Triple, stride);
  WICK_ARG(Triple, padding) = 0;
  WICK_ARG(bool, ceil_mode) = false;
  WICK_ARG(bool, count_include_pad) = true;
  WICK_ARG(std::optional<int64_t>, divisor_override) = std::nullopt;
};
inline Tensor avg_pool3d(const Tensor& x, const AvgPool3dFuncOptions& o) {
  return avg_pool3d(x, o.kernel_size(), o.stride(), o.padding(), o.ceil_mode(), o.count_include_pad(),
                    o.divisor_override());
}
struct AdaptiveAvgPool3dFuncOptions {
  AdaptiveAvgPool3dFuncOptions(Triple output_size) : output_size_(output_size) {}
  WICK_ARG(Triple, output_size);
};
inline Tensor adaptive_avg_pool3d(const Tensor& x, const AdaptiveAvgPool3dFuncOptions& o) {
  return adaptive_avg_pool3d(x, o.output_size());
}
using AdaptiveMaxPool3dFuncOptions = AdaptiveAvgPool3dFuncOptions;
inline Tensor adaptive_max_pool3d(const Tensor& x, const AdaptiveMaxPool3dFuncOptions& o) {
  return adaptive_max_pool3d(x, o.output_size());
}
inline std::tuple<Tensor, Tensor> adaptive_max_pool3d_with_indices(const Tensor& x,
                                                                   const AdaptiveMaxPool3dFuncOptions& o) {
  return adaptive_max_pool3d_with_indices(x, o.output_size());
}
struct ConvTranspose3dFuncOptions {
  WICK_ARG(Tensor, bias) = {};
  WICK_ARG(Triple, stride) = 1;
  WICK_ARG(Triple, padding) = 0;
  WICK_ARG(Triple, output_padding) = 0;
  WICK_ARG(int64_t, groups) = 1;
  WICK_ARG(Triple, dilation) = 1;
};
inline Tensor conv_transpose3d(const Tensor& x, const Tensor& weight, const ConvTranspose3dFuncOptions& o) {
  return conv_transpose3d(x, weight, o.bias(), o.stride(), o.padding(), o.output_padding(), o.groups(),
                          o.dilation());
}

}  // namespace functional

struct MaxPool3dOptions {
  MaxPool3dOptions(ExpandingTriple kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}
  WICK_ARG(ExpandingTriple, kernel_size);
  WICK_ARG(ExpandingTriple, stride);
  WICK_ARG(ExpandingTriple, padding) = 0;
  WICK_ARG(ExpandingTriple, dilation) = 1;
  WICK_ARG(bool, ceil_mode) = false;
};

class MaxPool3dImpl : public Module {
 public:
  explicit MaxPool3dImpl(const MaxPool3dOptions& options) : options(options) {}
  explicit MaxPool3dImpl(ExpandingTriple kernel_size) : options(kernel_size) {}
  Tensor forward(const Tensor& x);
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& x);
  std::string extra_repr() const override;
  MaxPool3dOptions options;
};
WICK_MODULE(MaxPool3d);

struct AvgPool3dOptions {
  AvgPool3dOptions(ExpandingTriple kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}
  WICK_ARG(ExpandingTriple, kernel_size);
  WICK_ARG(ExpandingTriple, stride);
  WICK_ARG(ExpandingTriple, padding) = 0;
  WICK_ARG(bool, ceil_mode) = false;
  WICK_ARG(bool, count_include_pad) = true;
  WICK_ARG(std::optional<int64_t>, divisor_override) = std::nullopt;
};

class AvgPool3dImpl : public Module {
 public:
  explicit AvgPool3dImpl(const AvgPool3dOptions& options) : options(options) {}
  explicit AvgPool3dImpl(ExpandingTriple kernel_size) : options(kernel_size) {}
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  AvgPool3dOptions options;
};
WICK_MODULE(AvgPool3d);

struct AdaptiveAvgPool3dOptions {
  AdaptiveAvgPool3dOptions(ExpandingTriple output_size) : output_size_(output_size) {}
  WICK_ARG(ExpandingTriple, output_size);
};

class AdaptiveAvgPool3dImpl : public Module {
 public:
  explicit AdaptiveAvgPool3dImpl(ExpandingTriple output_size) : options(output_size) {}
  explicit AdaptiveAvgPool3dImpl(const AdaptiveAvgPool3dOptions& options) : options(options) {}
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  AdaptiveAvgPool3dOptions options;
};
WICK_MODULE(AdaptiveAvgPool3d);

struct AdaptiveMaxPool3dOptions {
  AdaptiveMaxPool3dOptions(ExpandingTriple output_size) : output_size_(output_size) {}
  WICK_ARG(ExpandingTriple, output_size);
};

class AdaptiveMaxPool3dImpl : public Module {
 public:
  explicit AdaptiveMaxPool3dImpl(ExpandingTriple output_size) : options(output_size) {}
  explicit AdaptiveMaxPool3dImpl(const AdaptiveMaxPool3dOptions& options) : options(options) {}
  Tensor forward(const Tensor& x);
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& x);
  std::string extra_repr() const override;
  AdaptiveMaxPool3dOptions options;
};
WICK_MODULE(AdaptiveMaxPool3d);

struct ConvTranspose3dOptions {
  ConvTranspose3dOptions(int64_t in_channels, int64_t out_channels, ExpandingTriple kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  WICK_ARG(int64_t, in_channels);
  WICK_ARG(int64_t, out_channels);
  WICK_ARG(ExpandingTriple, kernel_size);
  WICK_ARG(ExpandingTriple, stride) = 1;
  WICK_ARG(ExpandingTriple, padding) = 0;
  WICK_ARG(ExpandingTriple, output_padding) = 0;
  WICK_ARG(int64_t, groups) = 1;
  WICK_ARG(bool, bias) = true;
  WICK_ARG(ExpandingTriple, dilation) = 1;
};

class ConvTranspose3dImpl : public Module {
 public:
  ConvTranspose3dImpl(int64_t in_channels, int64_t out_channels, ExpandingTriple kernel_size)
      : ConvTranspose3dImpl(ConvTranspose3dOptions(in_channels, out_channels, kernel_size)) {}
  explicit ConvTranspose3dImpl(const ConvTranspose3dOptions& options);
  // output_size ((d, h, w), or the whole output shape) picks the output padding, as PyTorch's.
  Tensor forward(const Tensor& x, const std::optional<std::vector<int64_t>>& output_size = std::nullopt);
  // weight kaiming_uniform_(a = sqrt(5)) (fan_in from weight dim 1); bias U(+-1/sqrt(fan_in)).
  void reset_parameters();
  std::string extra_repr() const override;
  ConvTranspose3dOptions options;
  Tensor weight, bias;
};
WICK_MODULE(ConvTranspose3d);

}  // namespace wick::nn
