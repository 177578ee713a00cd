// Sliding blocks and sampling grids of images [N, C, H, W] (or unbatched [C, H, W]):
// unfold / fold (im2col / col2im), affine_grid and grid_sample, and the Unfold and Fold modules.
//
//   namespace F = wick::nn::functional;
//   auto cols = F::unfold(x, F::UnfoldFuncOptions({2, 2}).stride(2));        // [N, C * 4, L]
//   auto back = F::fold(cols, F::FoldFuncOptions({8, 8}, {2, 2}).stride(2));  // [N, C, 8, 8]
//   auto grid = F::affine_grid(theta, {n, c, 16, 16}, /*align_corners=*/false);  // [N, 16, 16, 2]
//   auto y = F::grid_sample(x, grid, F::GridSampleFuncOptions().mode(wick::kBilinear)
//                                        .padding_mode(wick::kBorder).align_corners(false));
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "wick/enums.h"
#include "wick/nn/functional.h"
#include "wick/nn/module.h"
#include "wick/nn/options.h"
#include "wick/tensor.h"

namespace wick::nn {

// A (height, width) pair that remembers whether it was given as one value: Unfold and Fold
// print what they were given, as Python's do (kernel_size=2, kernel_size=(2, 3)).
struct GivenPair : functional::Pair {
  bool one = false;
  GivenPair(int64_t v) : Pair(v), one(true) {}
  GivenPair(int64_t h, int64_t w) : Pair(h, w) {}
  GivenPair(std::initializer_list<int64_t> l) : Pair(l), one(l.size() == 1) {}
  GivenPair(const functional::Pair& p) : Pair(p) {}
  // Python's repr: 2 or (2, 3).
  std::string repr() const;
};

// LibTorch's UnfoldOptions (and F::UnfoldFuncOptions): kernel_size, then dilation, padding
// and stride, each one value or (height, width).
struct UnfoldOptions {
  UnfoldOptions(GivenPair kernel_size) : kernel_size_(kernel_size) {}
  WICK_ARG(GivenPair, kernel_size);
  WICK_ARG(GivenPair, dilation) = 1;
  WICK_ARG(GivenPair, padding) = 0;
  WICK_ARG(GivenPair, stride) = 1;
};

// LibTorch's FoldOptions (and F::FoldFuncOptions): the output's spatial size and kernel_size,
// then dilation, padding and stride.
struct FoldOptions {
  FoldOptions(GivenPair output_size, GivenPair kernel_size)
      : output_size_(output_size), kernel_size_(kernel_size) {}
  WICK_ARG(GivenPair, output_size);
  WICK_ARG(GivenPair, kernel_size);
  WICK_ARG(GivenPair, dilation) = 1;
  WICK_ARG(GivenPair, padding) = 0;
  WICK_ARG(GivenPair, stride) = 1;
};

namespace functional {

using UnfoldFuncOptions = UnfoldOptions;
using FoldFuncOptions = FoldOptions;

// torch.nn.functional.unfold (im2col): every kernel_size block of the zero-padded input
// [N, C, H, W] as a column of [N, C * kh * kw, L], L the number of blocks (rows of blocks
// first); [C, H, W] gives [C * kh * kw, L]. grad_fn Im2ColBackward0.
Tensor unfold(const Tensor& input, Pair kernel_size, Pair dilation = 1, Pair padding = 0, Pair stride = 1);
Tensor unfold(const Tensor& input, const UnfoldFuncOptions& options);
// torch.nn.functional.fold (col2im): unfold's adjoint; the columns [N, C * kh * kw, L] (or
// [C * kh * kw, L]) summed into [N, C, output_size] where blocks overlap. grad_fn Col2ImBackward0.
Tensor fold(const Tensor& input, Pair output_size, Pair kernel_size, Pair dilation = 1, Pair padding = 0,
            Pair stride = 1);
Tensor fold(const Tensor& input, const FoldFuncOptions& options);

// torch.nn.functional.affine_grid: the sampling grid [N, H, W, 2] of the affine maps theta
// [N, 2, 3] for size {N, C, H, W} (or [N, D, H, W, 3] of theta [N, 3, 4] for {N, C, D, H, W}),
// in grid_sample's normalized coordinates. Differentiable wrt theta.
Tensor affine_grid(const Tensor& theta, IntArrayRef size, bool align_corners = false);

// LibTorch's GridSampleFuncOptions: mode kBilinear or kNearest ("bicubic" raises
// NotImplementedError), padding_mode kZeros, kBorder or kReflection, align_corners (false when
// not given).
struct GridSampleFuncOptions {
  WICK_ARG(std::string, mode) = "bilinear";
  WICK_ARG(std::string, padding_mode) = "zeros";
  WICK_ARG(std::optional<bool>, align_corners) = std::nullopt;
};

// torch.nn.functional.grid_sample for 4-D input [N, C, H, W] and grid [N, Ho, Wo, 2] of (x, y)
// in [-1, 1] (-1 the left and top, 1 the right and bottom, of the corner pixels' centers with
// align_corners, else of their outer edges): output [N, C, Ho, Wo]. Differentiable wrt input
// and (bilinear) grid; composed of gathers, so it runs on every device.
Tensor grid_sample(const Tensor& input, const Tensor& grid, const GridSampleFuncOptions& options = {});
Tensor grid_sample(const Tensor& input, const Tensor& grid, const std::string& mode,
                   const std::string& padding_mode = "zeros",
                   std::optional<bool> align_corners = std::nullopt);

}  // namespace functional

// Unfold: F::unfold as a module; printed Unfold(kernel_size=(2, 3), dilation=1, padding=0, stride=1).
class UnfoldImpl : public Module {
 public:
  explicit UnfoldImpl(const UnfoldOptions& options) : options(options) {}
  UnfoldImpl(GivenPair kernel_size) : options(kernel_size) {}
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;
  UnfoldOptions options;
};
WICK_MODULE(Unfold);

// Fold: F::fold as a module; printed
// Fold(output_size=(4, 5), kernel_size=(2, 2), dilation=1, padding=0, stride=1).
class FoldImpl : public Module {
 public:
  explicit FoldImpl(const FoldOptions& options) : options(options) {}
  FoldImpl(GivenPair output_size, GivenPair kernel_size) : options(output_size, kernel_size) {}
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;
  FoldOptions options;
};
WICK_MODULE(Fold);

}  // namespace wick::nn
