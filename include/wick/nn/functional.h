// nn::functional: the stateless forms of the layers and losses, as torch.nn.functional.
//
//   namespace F = wick::nn::functional;
//   auto h = F::relu(F::linear(x, w, b));
//   auto loss = F::cross_entropy(h, target);
//   auto y = F::max_pool2d(F::conv2d(img, k, {}, 1, 1), 2);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "wick/enums.h"
#include "wick/nn/options.h"
#include "wick/tensor.h"

namespace wick {
namespace enumtype {
// A convolution's padding (LibTorch's torch::kSame, torch::kValid; Python's padding='same',
// padding='valid').
struct kSame {
  operator std::string() const { return "same"; }
  const char* str() const { return "same"; }
};
struct kValid {
  operator std::string() const { return "valid"; }
  const char* str() const { return "valid"; }
};
}  // namespace enumtype
inline constexpr enumtype::kSame kSame{};
inline constexpr enumtype::kValid kValid{};

// wick/ops.h's one_hot (declared there with its default), which nn::functional::one_hot calls.
Tensor one_hot(const Tensor& t, int64_t num_classes);
}  // namespace wick

namespace wick::nn::functional {

// ---- activations
Tensor relu(const Tensor& x);
Tensor gelu(const Tensor& x, const std::string& approximate = "none");
Tensor silu(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor softmax(const Tensor& x, int64_t dim);
Tensor log_softmax(const Tensor& x, int64_t dim);

// ---- layers
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = {});
// Zeroes elements with probability p and scales the rest by 1 / (1 - p) when training.
Tensor dropout(const Tensor& x, double p = 0.5, bool training = true);
// Rows of weight at the indices (int64 or int32); padding_idx's row gets no gradient. With
// max_norm, the looked-up rows whose norm_type-norm exceeds it are first scaled down to it, in
// place in weight (without recording). scale_grad_by_freq divides the gradient each lookup
// passes to its row by the number of lookups of that row in indices; sparse gradients are
// not supported (sparse = true raises NotImplementedError).
Tensor embedding(const Tensor& indices, const Tensor& weight, std::optional<int64_t> padding_idx = std::nullopt,
                 std::optional<double> max_norm = std::nullopt, double norm_type = 2.0, bool scale_grad_by_freq = false,
                 bool sparse = false);
Tensor flatten(const Tensor& x, int64_t start_dim = 1, int64_t end_dim = -1);
// Normalizes over the trailing dims of normalized_shape; weight and bias optional.
Tensor layer_norm(const Tensor& x, const std::vector<int64_t>& normalized_shape, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5);
// A pre-norm transformer's step along its residual stream, fused: returns {s, y} with
// s = x + delta (x itself when delta is undefined) and y = layer_norm(s, ...) in dtype: when
// dtype is unset, layer_norm's own (s's), or, under autocast on s's device, autocast's dtype (y
// feeds the block's matmuls, which would cast it to that). Its values and gradients are those
// of `s = x + delta; y = layer_norm(s, ...).to(dtype)`. On CUDA a float32 x, with delta
// undefined or of y's dtype and float32 parameters, takes one kernel each way: no separate add
// or cast, and the gradient reaching s from later blocks added in the same backward kernel
// (node AddLayerNormBackward0); anything else runs those ops.
//
//   auto [h, a] = F::add_layer_norm(h, attn_out, {768}, ln_2->weight, ln_2->bias);
std::pair<Tensor, Tensor> add_layer_norm(const Tensor& x, const Tensor& delta,
                                         const std::vector<int64_t>& normalized_shape, const Tensor& weight = {},
                                         const Tensor& bias = {}, double eps = 1e-5,
                                         std::optional<Dtype> dtype = std::nullopt);
// x * rsqrt(mean(x^2 over the trailing normalized_shape dims) + eps) * weight; eps unset: the
// machine epsilon of the computation type (16-bit floats compute in float32).
Tensor rms_norm(const Tensor& x, const std::vector<int64_t>& normalized_shape, const Tensor& weight = {},
                std::optional<double> eps = std::nullopt);
// Normalizes [N, C, *] over each of num_groups groups of channels; weight and bias [C].
Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight = {}, const Tensor& bias = {},
                  double eps = 1e-5);
// Normalizes over every dim but 1 (channels). In training, batch statistics are used and the
// running ones (when given) updated in place with momentum; else the running ones are used.
Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight = {}, const Tensor& bias = {}, bool training = false,
                  double momentum = 0.1, double eps = 1e-5);

// ---- convolution and pooling over [N, C, H, W] (or unbatched [C, H, W]); pairs are (h, w)
struct Pair {
  int64_t h, w;
  Pair(int64_t v) : h(v), w(v) {}
  Pair(int64_t h_, int64_t w_) : h(h_), w(w_) {}
  Pair(std::initializer_list<int64_t> l) {
    WICK_CHECK(l.size() == 1 || l.size() == 2, ValueError, "Pair", "expected 1 or 2 values, got ", l.size());
    h = *l.begin();
    w = *(l.end() - 1);
  }
  bool operator==(const Pair& o) const { return h == o.h && w == o.w; }
  // LibTorch's ExpandingArray<2> reads: options.kernel_size()->at(0), (*k)[1], k->size().
  int64_t operator[](size_t i) const { return i == 0 ? h : w; }
  int64_t at(size_t i) const;
  static constexpr size_t size() { return 2; }
  const Pair* operator->() const { return this; }
  const Pair& operator*() const { return *this; }
};
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = {}, Pair stride = 1,
              Pair padding = 0, Pair dilation = 1, int64_t groups = 1);
// A convolution's padding as LibTorch's options take it (their padding_t): sizes, or kSame
// (the output as large as the input: dilation * (kernel - 1) zeros in all, half of them on the
// left and top, the odd one on the right and bottom, as PyTorch's; stride 1 only) or kValid (no
// padding). It reads as its sizes where code reads them (0 for kSame and kValid).
struct PaddingKind {
  enum Kind { sizes, same, valid };
  Kind kind = sizes;
  bool is_same() const { return kind == same; }
  bool is_valid() const { return kind == valid; }
};
// One size (Conv1dOptions::padding): converts to the int64_t it holds.
struct Padding1d : PaddingKind {
  int64_t value = 0;
  Padding1d(int64_t v = 0) : value(v) {}
  Padding1d(enumtype::kSame) : PaddingKind{same} {}
  Padding1d(enumtype::kValid) : PaddingKind{valid} {}
  operator int64_t() const { return value; }
};
// Sizes of 2 or 3 dims (a Pair or a Triple) or kSame / kValid.
template <class Sizes>
struct PaddingN : Sizes, PaddingKind {
  PaddingN(int64_t v = 0) : Sizes(v) {}
  PaddingN(const Sizes& s) : Sizes(s) {}
  PaddingN(std::initializer_list<int64_t> l) : Sizes(l) {}
  PaddingN(enumtype::kSame) : Sizes(0), PaddingKind{same} {}
  PaddingN(enumtype::kValid) : Sizes(0), PaddingKind{valid} {}
  const Sizes& sizes() const { return *this; }
};
using Padding2d = PaddingN<Pair>;
// conv2d(x, w, b, stride, kSame): PyTorch's padding='same' (ValueError "[conv2d] padding='same'
// is not supported for strided convolutions" for a stride other than 1); kValid is padding 0.
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, Pair stride, enumtype::kSame padding,
              Pair dilation = 1, int64_t groups = 1);
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, Pair stride, enumtype::kValid padding,
              Pair dilation = 1, int64_t groups = 1);
// The transposed convolution (conv2d's input gradient) of x [N, Cin, H, W] or [Cin, H, W] with
// weight [Cin, Cout / groups, kh, kw]; PyTorch's argument order (groups before dilation).
Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias = {}, Pair stride = 1,
                        Pair padding = 0, Pair output_padding = 0, int64_t groups = 1, Pair dilation = 1);
// stride defaults to kernel_size; padding pads with -inf.
Tensor max_pool2d(const Tensor& x, Pair kernel_size, std::optional<Pair> stride = std::nullopt,
                  Pair padding = 0, Pair dilation = 1, bool ceil_mode = false);
Tensor avg_pool2d(const Tensor& x, Pair kernel_size, std::optional<Pair> stride = std::nullopt,
                  Pair padding = 0, bool ceil_mode = false, bool count_include_pad = true);
Tensor adaptive_avg_pool2d(const Tensor& x, Pair output_size);

// ---- the 1-D forms over [N, C, L] (or unbatched [C, L]), weight [out, in / groups, k]: the
// 2-D ops over [N, C, 1, L] (nodes as PyTorch's composite forms: the output's is SqueezeBackward1)
Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias = {}, int64_t stride = 1,
              int64_t padding = 0, int64_t dilation = 1, int64_t groups = 1);
// padding='same' and 'valid', as conv2d's.
Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride, enumtype::kSame padding,
              int64_t dilation = 1, int64_t groups = 1);
Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride, enumtype::kValid padding,
              int64_t dilation = 1, int64_t groups = 1);
Tensor max_pool1d(const Tensor& x, int64_t kernel_size, std::optional<int64_t> stride = std::nullopt,
                  int64_t padding = 0, int64_t dilation = 1, bool ceil_mode = false);
Tensor avg_pool1d(const Tensor& x, int64_t kernel_size, std::optional<int64_t> stride = std::nullopt,
                  int64_t padding = 0, bool ceil_mode = false, bool count_include_pad = true);
Tensor adaptive_avg_pool1d(const Tensor& x, int64_t output_size);

// ---- padding
// Pads the last pad.size() / 2 dims: pad is {left, right} of the last dim, then of the one
// before, ... mode: "constant" (with value; negative pads crop), "reflect", "replicate" or
// "circular".
Tensor pad(const Tensor& x, const std::vector<int64_t>& pad, const std::string& mode = "constant",
           double value = 0);

// ---- resampling (src/nn/interpolate.cpp)
// torch.nn.functional.interpolate of [N, C, L], [N, C, H, W] or [N, C, D, H, W] input: the
// spatial dims resized to size, or to floor(in * scale_factor) (one of the two; an empty one is
// Python's None; one value applies to every spatial dim). mode: "nearest", "nearest-exact",
// "linear" (3-D), "bilinear" (4-D), "trilinear" (5-D); "bicubic", "area" and antialias raise
// NotImplementedError. align_corners only for the linear modes (false when not given);
// recompute_scale_factor = true resamples with the computed size's scale rather than
// scale_factor. The linear modes take floating-point input.
Tensor interpolate(const Tensor& input, IntArrayRef size = {}, const std::vector<double>& scale_factor = {},
                   const std::string& mode = "nearest", std::optional<bool> align_corners = std::nullopt,
                   std::optional<bool> recompute_scale_factor = std::nullopt, bool antialias = false);
// LibTorch's keyword form: F::interpolate(x, F::InterpolateFuncOptions().size(std::vector<int64_t>{8, 8})
// .mode(wick::kBilinear).align_corners(false)).
struct InterpolateFuncOptions {
  WICK_ARG(std::optional<std::vector<int64_t>>, size) = std::nullopt;
  WICK_ARG(std::optional<std::vector<double>>, scale_factor) = std::nullopt;
  WICK_ARG(std::string, mode) = "nearest";
  WICK_ARG(std::optional<bool>, align_corners) = std::nullopt;
  WICK_ARG(std::optional<bool>, recompute_scale_factor) = std::nullopt;
  WICK_ARG(bool, antialias) = false;
};
Tensor interpolate(const Tensor& input, const InterpolateFuncOptions& options);

// ---- losses; reduction is "mean", "sum" or "none"
Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                     int64_t ignore_index = -100, const std::string& reduction = "mean",
                     double label_smoothing = 0.0);
// LibTorch's keyword form: F::cross_entropy(x, t, F::CrossEntropyFuncOptions().reduction(wick::kSum)
// .ignore_index(0).weight(w).label_smoothing(0.1)).
struct CrossEntropyFuncOptions {
  WICK_ARG(Tensor, weight) = {};
  WICK_ARG(int64_t, ignore_index) = -100;
  WICK_ARG(std::string, reduction) = "mean";
  WICK_ARG(double, label_smoothing) = 0.0;
};
Tensor cross_entropy(const Tensor& input, const Tensor& target, const CrossEntropyFuncOptions& options);
Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                int64_t ignore_index = -100, const std::string& reduction = "mean");
Tensor mse_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean");
Tensor l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean");
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                                        const std::string& reduction = "mean", const Tensor& pos_weight = {});

// ---- leaky_relu, dropout2d, binary_cross_entropy, smooth_l1_loss (src/nn/functional_more.cpp)
// x where x > 0, else negative_slope * x.
// The activations of nn::ELU ... (wick/nn/activation.h), each one node named as PyTorch's
// (EluBackward0, SoftplusBackward0, HardtanhBackward0, ...), for floating inputs.
Tensor elu(const Tensor& x, double alpha = 1.0);
Tensor selu(const Tensor& x);
Tensor celu(const Tensor& x, double alpha = 1.0);
Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0);
Tensor hardtanh(const Tensor& x, double min_val = -1.0, double max_val = 1.0);
Tensor relu6(const Tensor& x);
Tensor mish(const Tensor& x);
Tensor hardswish(const Tensor& x);
Tensor hardsigmoid(const Tensor& x);
Tensor logsigmoid(const Tensor& x);
Tensor softsign(const Tensor& x);
Tensor tanhshrink(const Tensor& x);
Tensor threshold(const Tensor& x, double threshold, double value);
// weight: one slope, or one per channel of x's dim 1.
Tensor prelu(const Tensor& x, const Tensor& weight);
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
// Zeroes whole channels ([N, C, ...] or unbatched [C, ...]) with probability p and scales the
// rest by 1 / (1 - p) when training.
Tensor dropout2d(const Tensor& x, double p = 0.5, bool training = true);
// -weight (target log(input) + (1 - target) log(1 - input)) on probabilities input, each log
// clamped to >= -100 as PyTorch's.
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                            const std::string& reduction = "mean");
// 0.5 d^2 / beta where d = |input - target| < beta, else d - 0.5 beta (beta = 0: l1_loss).
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean",
                      double beta = 1.0);

// ---- LibTorch's keyword forms: F::dropout(x, F::DropoutFuncOptions().p(0.2).training(false)),
// F::max_pool2d(x, F::MaxPool2dFuncOptions(2).stride(2)) ... Each options struct holds the
// keyword arguments of the function above of the same name, which its overload calls; the
// inplace flags give the same values out of place.
struct DropoutFuncOptions {
  WICK_ARG(double, p) = 0.5;
  WICK_ARG(bool, training) = true;
  WICK_ARG(bool, inplace) = false;
};
inline Tensor dropout(const Tensor& x, const DropoutFuncOptions& o) { return dropout(x, o.p(), o.training()); }
using Dropout2dFuncOptions = DropoutFuncOptions;
inline Tensor dropout2d(const Tensor& x, const Dropout2dFuncOptions& o) {
  return dropout2d(x, o.p(), o.training());
}

struct ReLUFuncOptions {
  ReLUFuncOptions(bool inplace = false) : inplace_(inplace) {}
  WICK_ARG(bool, inplace);
};
inline Tensor relu(const Tensor& x, const ReLUFuncOptions&) { return relu(x); }
using ReLU6FuncOptions = ReLUFuncOptions;
using SELUFuncOptions = ReLUFuncOptions;
inline Tensor relu6(const Tensor& x, const ReLU6FuncOptions&) { return relu6(x); }
inline Tensor selu(const Tensor& x, const SELUFuncOptions&) { return selu(x); }
struct LeakyReLUFuncOptions {
  WICK_ARG(double, negative_slope) = 0.01;
  WICK_ARG(bool, inplace) = false;
};
inline Tensor leaky_relu(const Tensor& x, const LeakyReLUFuncOptions& o) { return leaky_relu(x, o.negative_slope()); }
struct ELUFuncOptions {
  WICK_ARG(double, alpha) = 1.0;
  WICK_ARG(bool, inplace) = false;
};
using CELUFuncOptions = ELUFuncOptions;
inline Tensor elu(const Tensor& x, const ELUFuncOptions& o) { return elu(x, o.alpha()); }
inline Tensor celu(const Tensor& x, const CELUFuncOptions& o) { return celu(x, o.alpha()); }
struct SoftplusFuncOptions {
  WICK_ARG(double, beta) = 1.0;
  WICK_ARG(double, threshold) = 20.0;
};
inline Tensor softplus(const Tensor& x, const SoftplusFuncOptions& o) { return softplus(x, o.beta(), o.threshold()); }
struct HardtanhFuncOptions {
  WICK_ARG(double, min_val) = -1.0;
  WICK_ARG(double, max_val) = 1.0;
  WICK_ARG(bool, inplace) = false;
};
inline Tensor hardtanh(const Tensor& x, const HardtanhFuncOptions& o) { return hardtanh(x, o.min_val(), o.max_val()); }
struct ThresholdFuncOptions {
  ThresholdFuncOptions(double threshold, double value) : threshold_(threshold), value_(value) {}
  WICK_ARG(double, threshold);
  WICK_ARG(double, value);
  WICK_ARG(bool, inplace) = false;
};
inline Tensor threshold(const Tensor& x, const ThresholdFuncOptions& o) { return threshold(x, o.threshold(), o.value()); }
struct GELUFuncOptions {
  WICK_ARG(std::string, approximate) = "none";
};
inline Tensor gelu(const Tensor& x, const GELUFuncOptions& o) { return gelu(x, o.approximate()); }
struct SoftmaxFuncOptions {
  SoftmaxFuncOptions(int64_t dim) : dim_(dim) {}
  WICK_ARG(int64_t, dim);
};
using LogSoftmaxFuncOptions = SoftmaxFuncOptions;
inline Tensor softmax(const Tensor& x, const SoftmaxFuncOptions& o) { return softmax(x, o.dim()); }
inline Tensor log_softmax(const Tensor& x, const LogSoftmaxFuncOptions& o) { return log_softmax(x, o.dim()); }

struct Conv2dFuncOptions {
  WICK_ARG(Tensor, bias) = {};
  WICK_ARG(Pair, stride) = 1;
  // sizes, or wick::kSame / wick::kValid
  WICK_ARG(Padding2d, padding) = 0;
  WICK_ARG(Pair, dilation) = 1;
  WICK_ARG(int64_t, groups) = 1;
};
inline Tensor conv2d(const Tensor& x, const Tensor& weight, const Conv2dFuncOptions& o) {
  if (o.padding().is_same()) return conv2d(x, weight, o.bias(), o.stride(), kSame, o.dilation(), o.groups());
  return conv2d(x, weight, o.bias(), o.stride(), o.padding().sizes(), o.dilation(), o.groups());
}
struct Conv1dFuncOptions {
  WICK_ARG(Tensor, bias) = {};
  WICK_ARG(int64_t, stride) = 1;
  // a size, or wick::kSame / wick::kValid
  WICK_ARG(Padding1d, padding) = 0;
  WICK_ARG(int64_t, dilation) = 1;
  WICK_ARG(int64_t, groups) = 1;
};
inline Tensor conv1d(const Tensor& x, const Tensor& weight, const Conv1dFuncOptions& o) {
  if (o.padding().is_same()) return conv1d(x, weight, o.bias(), o.stride(), kSame, o.dilation(), o.groups());
  return conv1d(x, weight, o.bias(), o.stride(), o.padding().value, o.dilation(), o.groups());
}
struct ConvTranspose2dFuncOptions {
  WICK_ARG(Tensor, bias) = {};
  WICK_ARG(Pair, stride) = 1;
  WICK_ARG(Pair, padding) = 0;
  WICK_ARG(Pair, output_padding) = 0;
  WICK_ARG(int64_t, groups) = 1;
  WICK_ARG(Pair, dilation) = 1;
};
inline Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const ConvTranspose2dFuncOptions& o) {
  return conv_transpose2d(x, weight, o.bias(), o.stride(), o.padding(), o.output_padding(), o.groups(),
                          o.dilation());
}
struct MaxPool2dFuncOptions {
  MaxPool2dFuncOptions(Pair kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}
  WICK_ARG(Pair, kernel_size);
  WICK_ARG(Pair, stride);
  WICK_ARG(Pair, padding) = 0;
  WICK_ARG(Pair, dilation) = 1;
  WICK_ARG(bool, ceil_mode) = false;
};
inline Tensor max_pool2d(const Tensor& x, const MaxPool2dFuncOptions& o) {
  return max_pool2d(x, o.kernel_size(), o.stride(), o.padding(), o.dilation(), o.ceil_mode());
}
struct AvgPool2dFuncOptions {
  AvgPool2dFuncOptions(Pair kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}
  WICK_ARG(Pair, kernel_size);
  WICK_ARG(Pair, stride);
  WICK_ARG(Pair, padding) = 0;
  WICK_ARG(bool, ceil_mode) = false;
  WICK_ARG(bool, count_include_pad) = true;
};
inline Tensor avg_pool2d(const Tensor& x, const AvgPool2dFuncOptions& o) {
  return avg_pool2d(x, o.kernel_size(), o.stride(), o.padding(), o.ceil_mode(), o.count_include_pad());
}
struct AdaptiveAvgPool2dFuncOptions {
  AdaptiveAvgPool2dFuncOptions(Pair output_size) : output_size_(output_size) {}
  WICK_ARG(Pair, output_size);
};
inline Tensor adaptive_avg_pool2d(const Tensor& x, const AdaptiveAvgPool2dFuncOptions& o) {
  return adaptive_avg_pool2d(x, o.output_size());
}
struct MaxPool1dFuncOptions {
  MaxPool1dFuncOptions(int64_t kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}
  WICK_ARG(int64_t, kernel_size);
  WICK_ARG(int64_t, stride);
  WICK_ARG(int64_t, padding) = 0;
  WICK_ARG(int64_t, dilation) = 1;
  WICK_ARG(bool, ceil_mode) = false;
};
inline Tensor max_pool1d(const Tensor& x, const MaxPool1dFuncOptions& o) {
  return max_pool1d(x, o.kernel_size(), o.stride(), o.padding(), o.dilation(), o.ceil_mode());
}
struct AvgPool1dFuncOptions {
  AvgPool1dFuncOptions(int64_t kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}
  WICK_ARG(int64_t, kernel_size);
  WICK_ARG(int64_t, stride);
  WICK_ARG(int64_t, padding) = 0;
  WICK_ARG(bool, ceil_mode) = false;
  WICK_ARG(bool, count_include_pad) = true;
};
inline Tensor avg_pool1d(const Tensor& x, const AvgPool1dFuncOptions& o) {
  return avg_pool1d(x, o.kernel_size(), o.stride(), o.padding(), o.ceil_mode(), o.count_include_pad());
}

struct LayerNormFuncOptions {
  LayerNormFuncOptions(std::vector<int64_t> normalized_shape) : normalized_shape_(std::move(normalized_shape)) {}
  WICK_ARG(std::vector<int64_t>, normalized_shape);
  WICK_ARG(Tensor, weight) = {};
  WICK_ARG(Tensor, bias) = {};
  WICK_ARG(double, eps) = 1e-5;
};
inline Tensor layer_norm(const Tensor& x, const LayerNormFuncOptions& o) {
  return layer_norm(x, o.normalized_shape(), o.weight(), o.bias(), o.eps());
}
struct GroupNormFuncOptions {
  GroupNormFuncOptions(int64_t num_groups) : num_groups_(num_groups) {}
  WICK_ARG(int64_t, num_groups);
  WICK_ARG(Tensor, weight) = {};
  WICK_ARG(Tensor, bias) = {};
  WICK_ARG(double, eps) = 1e-5;
};
inline Tensor group_norm(const Tensor& x, const GroupNormFuncOptions& o) {
  return group_norm(x, o.num_groups(), o.weight(), o.bias(), o.eps());
}
struct PadFuncOptions {
  PadFuncOptions(std::vector<int64_t> pad) : pad_(std::move(pad)) {}
  WICK_ARG(std::vector<int64_t>, pad);
  WICK_ARG(std::string, mode) = "constant";
  WICK_ARG(double, value) = 0;
};
inline Tensor pad(const Tensor& x, const PadFuncOptions& o) { return pad(x, o.pad(), o.mode(), o.value()); }

struct NLLLossFuncOptions {
  WICK_ARG(Tensor, weight) = {};
  WICK_ARG(int64_t, ignore_index) = -100;
  WICK_ARG(std::string, reduction) = "mean";
};
inline Tensor nll_loss(const Tensor& input, const Tensor& target, const NLLLossFuncOptions& o) {
  return nll_loss(input, target, o.weight(), o.ignore_index(), o.reduction());
}
struct MSELossFuncOptions {
  // MSELossFuncOptions(torch::kSum): the enum spellings convert to their strings
  MSELossFuncOptions(std::string reduction = "mean") : reduction_(std::move(reduction)) {}
  WICK_ARG(std::string, reduction);
};
using L1LossFuncOptions = MSELossFuncOptions;
inline Tensor mse_loss(const Tensor& input, const Tensor& target, const MSELossFuncOptions& o) {
  return mse_loss(input, target, o.reduction());
}
inline Tensor l1_loss(const Tensor& input, const Tensor& target, const L1LossFuncOptions& o) {
  return l1_loss(input, target, o.reduction());
}
struct SmoothL1LossFuncOptions {
  WICK_ARG(std::string, reduction) = "mean";
  WICK_ARG(double, beta) = 1.0;
};
inline Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const SmoothL1LossFuncOptions& o) {
  return smooth_l1_loss(input, target, o.reduction(), o.beta());
}
struct BinaryCrossEntropyFuncOptions {
  WICK_ARG(Tensor, weight) = {};
  WICK_ARG(std::string, reduction) = "mean";
};
inline Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const BinaryCrossEntropyFuncOptions& o) {
  return binary_cross_entropy(input, target, o.weight(), o.reduction());
}
struct BinaryCrossEntropyWithLogitsFuncOptions {
  WICK_ARG(Tensor, weight) = {};
  WICK_ARG(std::string, reduction) = "mean";
  WICK_ARG(Tensor, pos_weight) = {};
};
inline Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                               const BinaryCrossEntropyWithLogitsFuncOptions& o) {
  return binary_cross_entropy_with_logits(input, target, o.weight(), o.reduction(), o.pos_weight());
}

// ---- distances, normalization, kl_div, huber_loss, pixel shuffling, alpha_dropout
// (src/nn/nn_more.cpp; each composed of other ops, whose nodes it records, but huber_loss,
// pixel_shuffle and pixel_unshuffle: one node each, named as PyTorch's)

// x divided by its p-norm over dim, the norm clamped to at least eps (torch.nn.functional.normalize).
Tensor normalize(const Tensor& x, double p = 2.0, int64_t dim = 1, double eps = 1e-12);
// The cosine of the angle between x1 and x2 (broadcast together) along dim, as PyTorch 2's:
// sum(x1 / max(||x1||, eps) * x2 / max(||x2||, eps)) over dim. The clamp is applied without
// recording, so the gradient flows through the norms as if unclamped (as PyTorch's).
Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, int64_t dim = 1, double eps = 1e-8);
// ||x1 - x2 + eps||_p over the last dim of the broadcast shape.
Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, double p = 2.0, double eps = 1e-6,
                         bool keepdim = false);
// The pointwise KL divergence target (log target - input) of log-probabilities input:
// xlogy(target, target) - target * input, or exp(target) (target - input) with log_target.
// reduction: "mean" (over every element), "batchmean" (the sum divided by input.size(0)),
// "sum" or "none".
Tensor kl_div(const Tensor& input, const Tensor& target, const std::string& reduction = "mean",
              bool log_target = false);
// 0.5 d^2 where d = |input - target| < delta, else delta (d - 0.5 delta); input and target
// broadcast together (HuberLossBackward0).
Tensor huber_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean",
                  double delta = 1.0);
// torch.nn.functional.one_hot: wick::one_hot (int64 class indices -> int64 [..., num_classes];
// -1: max + 1).
inline Tensor one_hot(const Tensor& t, int64_t num_classes = -1) { return wick::one_hot(t, num_classes); }
// [*, C r^2, H, W] -> [*, C, H r, W r] (PixelShuffleBackward0), and its inverse
// [*, C, H r, W r] -> [*, C r^2, H, W] (PixelUnshuffleBackward0).
Tensor pixel_shuffle(const Tensor& x, int64_t upscale_factor);
Tensor pixel_unshuffle(const Tensor& x, int64_t downscale_factor);
// SELU's dropout (PyTorch's formula): in training, each element is kept with probability 1 - p
// and becomes a x + alpha a p, or else alpha a (p - 1), where alpha = 1.7580993408473766 and
// a = 1 / sqrt((alpha^2 p + 1) (1 - p)), which keep zero mean and unit variance; p = 1 gives
// zeros. Not training (the default, as PyTorch's): x itself.
Tensor alpha_dropout(const Tensor& x, double p = 0.5, bool training = false);

// LibTorch's keyword forms of these.
struct NormalizeFuncOptions {
  WICK_ARG(double, p) = 2.0;
  WICK_ARG(int64_t, dim) = 1;
  WICK_ARG(double, eps) = 1e-12;
};
inline Tensor normalize(const Tensor& x, const NormalizeFuncOptions& o) {
  return normalize(x, o.p(), o.dim(), o.eps());
}
struct CosineSimilarityFuncOptions {
  WICK_ARG(int64_t, dim) = 1;
  WICK_ARG(double, eps) = 1e-8;
};
inline Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, const CosineSimilarityFuncOptions& o) {
  return cosine_similarity(x1, x2, o.dim(), o.eps());
}
struct PairwiseDistanceFuncOptions {
  WICK_ARG(double, p) = 2.0;
  WICK_ARG(double, eps) = 1e-6;
  WICK_ARG(bool, keepdim) = false;
};
inline Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, const PairwiseDistanceFuncOptions& o) {
  return pairwise_distance(x1, x2, o.p(), o.eps(), o.keepdim());
}
struct KLDivFuncOptions {
  // KLDivFuncOptions(wick::kBatchMean): the enum spellings convert to their strings
  KLDivFuncOptions(std::string reduction = "mean") : reduction_(std::move(reduction)) {}
  WICK_ARG(std::string, reduction);
  WICK_ARG(bool, log_target) = false;
};
inline Tensor kl_div(const Tensor& input, const Tensor& target, const KLDivFuncOptions& o) {
  return kl_div(input, target, o.reduction(), o.log_target());
}
struct HuberLossFuncOptions {
  HuberLossFuncOptions(std::string reduction = "mean") : reduction_(std::move(reduction)) {}
  WICK_ARG(std::string, reduction);
  WICK_ARG(double, delta) = 1.0;
};
inline Tensor huber_loss(const Tensor& input, const Tensor& target, const HuberLossFuncOptions& o) {
  return huber_loss(input, target, o.reduction(), o.delta());
}
struct PixelShuffleFuncOptions {
  PixelShuffleFuncOptions(int64_t upscale_factor) : upscale_factor_(upscale_factor) {}
  WICK_ARG(int64_t, upscale_factor);
};
inline Tensor pixel_shuffle(const Tensor& x, const PixelShuffleFuncOptions& o) {
  return pixel_shuffle(x, o.upscale_factor());
}
struct PixelUnshuffleFuncOptions {
  PixelUnshuffleFuncOptions(int64_t downscale_factor) : downscale_factor_(downscale_factor) {}
  WICK_ARG(int64_t, downscale_factor);
};
inline Tensor pixel_unshuffle(const Tensor& x, const PixelUnshuffleFuncOptions& o) {
  return pixel_unshuffle(x, o.downscale_factor());
}
struct AlphaDropoutFuncOptions {
  WICK_ARG(double, p) = 0.5;
  WICK_ARG(bool, training) = false;
  WICK_ARG(bool, inplace) = false;
};
inline Tensor alpha_dropout(const Tensor& x, const AlphaDropoutFuncOptions& o) {
  return alpha_dropout(x, o.p(), o.training());
}

// ---- adaptive max pooling, instance_norm, bilinear and embedding_bag (src/nn/nn_more2.cpp;
// each composed of other ops, whose nodes it records)

// The maximum over each of output_size windows of [N, C, H, W] (or [C, H, W]); window i of a dim
// of size n covers [floor(i n / out), ceil((i + 1) n / out)), as PyTorch's. The _with_indices
// forms (LibTorch's spelling; Python's return_indices=True) also give each maximum's int64 index
// into its input's H * W plane (L for the 1-D form), as max_unpool2d reads them.
Tensor adaptive_max_pool2d(const Tensor& x, Pair output_size);
std::tuple<Tensor, Tensor> adaptive_max_pool2d_with_indices(const Tensor& x, Pair output_size);
// The same over [N, C, L] (or [C, L]).
Tensor adaptive_max_pool1d(const Tensor& x, int64_t output_size);
std::tuple<Tensor, Tensor> adaptive_max_pool1d_with_indices(const Tensor& x, int64_t output_size);
struct AdaptiveMaxPool2dFuncOptions {
  AdaptiveMaxPool2dFuncOptions(Pair output_size) : output_size_(output_size) {}
  WICK_ARG(Pair, output_size);
};
inline Tensor adaptive_max_pool2d(const Tensor& x, const AdaptiveMaxPool2dFuncOptions& o) {
  return adaptive_max_pool2d(x, o.output_size());
}
inline std::tuple<Tensor, Tensor> adaptive_max_pool2d_with_indices(const Tensor& x,
                                                                   const AdaptiveMaxPool2dFuncOptions& o) {
  return adaptive_max_pool2d_with_indices(x, o.output_size());
}
struct AdaptiveMaxPool1dFuncOptions {
  AdaptiveMaxPool1dFuncOptions(int64_t output_size) : output_size_(output_size) {}
  WICK_ARG(int64_t, output_size);
};
inline Tensor adaptive_max_pool1d(const Tensor& x, const AdaptiveMaxPool1dFuncOptions& o) {
  return adaptive_max_pool1d(x, o.output_size());
}
inline std::tuple<Tensor, Tensor> adaptive_max_pool1d_with_indices(const Tensor& x,
                                                                   const AdaptiveMaxPool1dFuncOptions& o) {
  return adaptive_max_pool1d_with_indices(x, o.output_size());
}

// Normalizes [N, C, *] over * for each sample and channel (torch.nn.functional.instance_norm):
// batch_norm of the input viewed as [1, N C, *], with weight, bias and the running statistics
// repeated N times; the running statistics (when given) then get the mean over the batch of the
// updated copies. use_input_stats = false normalizes with the running statistics instead.
Tensor instance_norm(const Tensor& x, const Tensor& running_mean = {}, const Tensor& running_var = {},
                     const Tensor& weight = {}, const Tensor& bias = {}, bool use_input_stats = true,
                     double momentum = 0.1, double eps = 1e-5);
struct InstanceNormFuncOptions {
  WICK_ARG(Tensor, running_mean) = {};
  WICK_ARG(Tensor, running_var) = {};
  WICK_ARG(Tensor, weight) = {};
  WICK_ARG(Tensor, bias) = {};
  WICK_ARG(bool, use_input_stats) = true;
  WICK_ARG(double, momentum) = 0.1;
  WICK_ARG(double, eps) = 1e-5;
};
inline Tensor instance_norm(const Tensor& x, const InstanceNormFuncOptions& o) {
  return instance_norm(x, o.running_mean(), o.running_var(), o.weight(), o.bias(), o.use_input_stats(),
                       o.momentum(), o.eps());
}

// y[..., o] = sum_ij x1[..., i] weight[o, i, j] x2[..., j] + bias[o]: x1 [*, in1], x2 [*, in2]
// (the same leading dims), weight [out, in1, in2], bias [out] or undefined.
Tensor bilinear(const Tensor& x1, const Tensor& x2, const Tensor& weight, const Tensor& bias = {});

// The sums, means or maxima of bags of rows of weight (torch.nn.functional.embedding_bag).
// input: 2-D [B, L] (B bags of L indices; offsets undefined) or 1-D with offsets, the start
// of each bag (offsets[0] = 0, non-decreasing); with include_last_offset, offsets has one more
// entry, the end of the last bag. mode: "sum", "mean" or "max" (wick::kSum, kMean, kMax);
// per_sample_weights (input's shape, mode "sum" only) scale each row. Indices equal to
// padding_idx are left out of their bag (not counted by "mean"); an empty bag gives zeros. With
// max_norm, the rows looked up are first renormalized in place, as embedding's.
Tensor embedding_bag(const Tensor& input, const Tensor& weight, const Tensor& offsets = {},
                     std::optional<double> max_norm = std::nullopt, double norm_type = 2.0,
                     bool scale_grad_by_freq = false, const std::string& mode = "mean", bool sparse = false,
                     const Tensor& per_sample_weights = {}, bool include_last_offset = false,
                     std::optional<int64_t> padding_idx = std::nullopt);
struct EmbeddingBagFuncOptions {
  WICK_ARG(Tensor, offsets) = {};
  WICK_ARG(std::optional<double>, max_norm) = std::nullopt;
  WICK_ARG(double, norm_type) = 2.0;
  WICK_ARG(bool, scale_grad_by_freq) = false;
  // "sum", "mean" or "max"; LibTorch's wick::kSum, kMean and kMax convert to these.
  WICK_ARG(std::string, mode) = "mean";
  WICK_ARG(bool, sparse) = false;
  WICK_ARG(Tensor, per_sample_weights) = {};
  WICK_ARG(bool, include_last_offset) = false;
  WICK_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
};
inline Tensor embedding_bag(const Tensor& input, const Tensor& weight, const EmbeddingBagFuncOptions& o) {
  return embedding_bag(input, weight, o.offsets(), o.max_norm(), o.norm_type(), o.scale_grad_by_freq(), o.mode(),
                       o.sparse(), o.per_sample_weights(), o.include_last_offset(), o.padding_idx());
}

}  // namespace wick::nn::functional

// ATen's functions of these names in namespace wick, as LibTorch's torch::dropout,
// torch::nll_loss, torch::conv2d ... (Python's torch.dropout, torch.conv2d ...): the functions
// above, whose arguments come in ATen's order; the losses also take LibTorch's reduction enum
// (wick::Reduction::Sum) where Python takes a string.
namespace wick {
using nn::functional::adaptive_avg_pool1d;
using nn::functional::adaptive_avg_pool2d;
using nn::functional::avg_pool1d;
using nn::functional::avg_pool2d;
using nn::functional::binary_cross_entropy;
using nn::functional::conv1d;
using nn::functional::conv2d;
using nn::functional::conv_transpose2d;
using nn::functional::hardsigmoid;
using nn::functional::hardswish;
using nn::functional::mish;
using nn::functional::prelu;
using nn::functional::group_norm;
using nn::functional::l1_loss;
using nn::functional::layer_norm;
using nn::functional::max_pool1d;
using nn::functional::max_pool2d;
using nn::functional::mse_loss;
using nn::functional::nll_loss;
using nn::functional::smooth_l1_loss;
// at::nll_loss(self, target, weight, reduction, ignore_index): reduction before ignore_index.
Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight, Reduction::Reduction reduction,
                int64_t ignore_index = -100);
// at::nll_loss2d: nll_loss of a [N, C, H, W] input and its [N, H, W] target (other ranks raise
// ValueError, as ATen's "only batches of spatial targets supported").
Tensor nll_loss2d(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                  Reduction::Reduction reduction = Reduction::Mean, int64_t ignore_index = -100);
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction::Reduction reduction);
Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction::Reduction reduction);
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, Reduction::Reduction reduction, double beta = 1.0);
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight,
                            Reduction::Reduction reduction);
// The activations and dropout one function each (nn::functional adds LibTorch's FuncOptions
// overloads), so that a name can be passed on: nn::Functional(wick::leaky_relu, 0.2).
inline Tensor dropout(const Tensor& x, double p, bool train) { return nn::functional::dropout(x, p, train); }
inline Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01) {
  return nn::functional::leaky_relu(x, negative_slope);
}
inline Tensor elu(const Tensor& x, double alpha = 1.0) { return nn::functional::elu(x, alpha); }
inline Tensor celu(const Tensor& x, double alpha = 1.0) { return nn::functional::celu(x, alpha); }
inline Tensor selu(const Tensor& x) { return nn::functional::selu(x); }
inline Tensor relu6(const Tensor& x) { return nn::functional::relu6(x); }
inline Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0) {
  return nn::functional::softplus(x, beta, threshold);
}
inline Tensor hardtanh(const Tensor& x, double min_val = -1.0, double max_val = 1.0) {
  return nn::functional::hardtanh(x, min_val, max_val);
}
inline Tensor threshold(const Tensor& x, double threshold, double value) {
  return nn::functional::threshold(x, threshold, value);
}
// torch.unflatten(input, dim, sizes) (Tensor.unflatten): dim split into sizes (one of them may be
// -1, inferred), a view of input.
Tensor unflatten(const Tensor& input, int64_t dim, IntArrayRef sizes);
// torch.constant_pad_nd: pad(input, pad, "constant", value).
Tensor constant_pad_nd(const Tensor& input, IntArrayRef pad, const Scalar& value = 0);
// ATen's reflection_pad1d/2d/3d and replication_pad1d/2d/3d: pad(input, padding, "reflect" or
// "replicate") with padding of 2, 4 or 6 values.
Tensor reflection_pad1d(const Tensor& input, IntArrayRef padding);
Tensor reflection_pad2d(const Tensor& input, IntArrayRef padding);
Tensor reflection_pad3d(const Tensor& input, IntArrayRef padding);
Tensor replication_pad1d(const Tensor& input, IntArrayRef padding);
Tensor replication_pad2d(const Tensor& input, IntArrayRef padding);
Tensor replication_pad3d(const Tensor& input, IntArrayRef padding);
// More of ATen's forms, LibTorch's torch::kl_div ...: the nn::functional ones in ATen's argument
// order, the reduction as LibTorch's enum.
using nn::functional::cosine_similarity;
using nn::functional::pairwise_distance;
using nn::functional::pixel_shuffle;
using nn::functional::pixel_unshuffle;
Tensor kl_div(const Tensor& input, const Tensor& target, Reduction::Reduction reduction = Reduction::Mean,
              bool log_target = false);
Tensor huber_loss(const Tensor& input, const Tensor& target, Reduction::Reduction reduction = Reduction::Mean,
                  double delta = 1.0);
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                                        const Tensor& pos_weight = {},
                                        Reduction::Reduction reduction = Reduction::Mean);
Tensor cross_entropy_loss(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                          Reduction::Reduction reduction = Reduction::Mean, int64_t ignore_index = -100,
                          double label_smoothing = 0.0);
Tensor log_sigmoid(const Tensor& input);
// at::embedding(weight, indices, padding_idx = -1, ...): the weight first; a negative
// padding_idx is none.
Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx = -1,
                 bool scale_grad_by_freq = false, bool sparse = false);
// at::batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
// cudnn_enabled): F::batch_norm's arguments in ATen's order (cudnn_enabled is the library's
// choice in wick).
Tensor batch_norm(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                  const Tensor& running_var, bool training, double momentum, double eps, bool cudnn_enabled);
// ||t||_2 over dims (all of them when none are given): at::frobenius_norm.
Tensor frobenius_norm(const Tensor& input);
Tensor frobenius_norm(const Tensor& input, IntArrayRef dim, bool keepdim = false);
// at::upsample_nearest2d / upsample_bilinear2d of [N, C, H, W] to output_size (h, w), as
// F::interpolate with that size (the scales, when given, are not used: the size decides).
Tensor upsample_nearest2d(const Tensor& input, IntArrayRef output_size,
                          std::optional<double> scales_h = std::nullopt, std::optional<double> scales_w = std::nullopt);
Tensor upsample_bilinear2d(const Tensor& input, IntArrayRef output_size, bool align_corners,
                           std::optional<double> scales_h = std::nullopt, std::optional<double> scales_w = std::nullopt);
}  // namespace wick
