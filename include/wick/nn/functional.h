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
#include <vector>

#include "wick/enums.h"
#include "wick/nn/options.h"
#include "wick/tensor.h"

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
// place in weight (without recording).
Tensor embedding(const Tensor& indices, const Tensor& weight, std::optional<int64_t> padding_idx = std::nullopt,
                 std::optional<double> max_norm = std::nullopt, double norm_type = 2.0);
Tensor flatten(const Tensor& x, int64_t start_dim = 1, int64_t end_dim = -1);
// Normalizes over the trailing dims of normalized_shape; weight and bias optional.
Tensor layer_norm(const Tensor& x, const std::vector<int64_t>& normalized_shape, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5);
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
};
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = {}, Pair stride = 1,
              Pair padding = 0, Pair dilation = 1, int64_t groups = 1);
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

}  // namespace wick::nn::functional

// ATen's functions of these names in namespace wick, as LibTorch's torch::dropout,
// torch::nll_loss, torch::conv2d ... (Python's torch.dropout, torch.conv2d ...): the functions
// above, whose arguments come in ATen's order; the losses also take LibTorch's reduction enum
// (wick::Reduction::Sum) where Python takes a string.
namespace wick {
using nn::functional::adaptive_avg_pool2d;
using nn::functional::avg_pool2d;
using nn::functional::binary_cross_entropy;
using nn::functional::conv2d;
using nn::functional::conv_transpose2d;
using nn::functional::dropout;
using nn::functional::group_norm;
using nn::functional::l1_loss;
using nn::functional::layer_norm;
using nn::functional::leaky_relu;
using nn::functional::max_pool2d;
using nn::functional::mse_loss;
using nn::functional::nll_loss;
using nn::functional::smooth_l1_loss;
// at::nll_loss(self, target, weight, reduction, ignore_index): reduction before ignore_index.
Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight, Reduction::Reduction reduction,
                int64_t ignore_index = -100);
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction::Reduction reduction);
Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction::Reduction reduction);
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, Reduction::Reduction reduction, double beta = 1.0);
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight,
                            Reduction::Reduction reduction);
// torch.constant_pad_nd: pad(input, pad, "constant", value).
Tensor constant_pad_nd(const Tensor& input, IntArrayRef pad, const Scalar& value = 0);
}  // namespace wick
