// unfold / fold (im2col / col2im), affine_grid, grid_sample, and the Unfold and Fold modules.
//
// unfold and fold share one index: for each (kernel tap, block) pair, the position of its
// element in the zero-padded image flattened to Hp * Wp, made with arange on the input's
// device. unfold is index_select of the padded image at that index; fold is index_add of the
// columns into a zero padded image, then cropped. Each records one node, named as PyTorch's
// (Im2ColBackward0, Col2ImBackward0), whose formula is the other op, so gradients of every
// order record. affine_grid (a bmm of a base grid) and grid_sample (where, floor and gather)
// are composed of ops and record what they are made of. No kernel of their own: every device
// that has those ops runs them.
#include "wick/nn/vision.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "autograd/function.h"
#include "autograd/hooks.h"
#include "core/as_op.h"
#include "core/checks.h"
#include "nn/repr.h"
#include "wick/nn/functional.h"
#include "wick/ops.h"

namespace wick::nn {

std::string GivenPair::repr() const { return one && h == w ? std::to_string(h) : detail::py_tuple({h, w}); }

namespace functional {
namespace {

// The sliding blocks of an image of H x W: kernel k, dilation d, padding p, stride s, the
// padded size and the number of blocks along each dim.
struct Blocks {
  Pair k, d, p, s;
  int64_t h, w;    // the image
  int64_t hp, wp;  // padded
  int64_t oh, ow;  // blocks
};

// Blocks along one dim: floor((size + 2 p - d (k - 1) - 1) / s) + 1, rounded down as
// PyTorch's div_rtn (a negative count stays negative).
int64_t block_count(int64_t size, int64_t k, int64_t d, int64_t p, int64_t s) {
  const int64_t num = size + 2 * p - d * (k - 1) - 1;
  return (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
}

Blocks blocks_of(int64_t h, int64_t w, Pair k, Pair d, Pair p, Pair s) {
  return {k,
          d,
          p,
          s,
          h,
          w,
          h + 2 * p.h,
          w + 2 * p.w,
          block_count(h, k.h, d.h, p.h, s.h),
          block_count(w, k.w, d.w, p.w, s.w)};
}

void check_block_args(const char* op, Pair k, Pair d, Pair p, Pair s) {
  WICK_CHECK(k.h > 0 && k.w > 0, ValueError, op,
             "kernel size should be greater than zero, but got kernel_height: ", k.h, " kernel_width: ", k.w);
  WICK_CHECK(s.h > 0 && s.w > 0, ValueError, op,
             "stride should be greater than zero, but got stride_height: ", s.h, " stride_width: ", s.w);
  WICK_CHECK(d.h > 0 && d.w > 0, ValueError, op,
             "dilation should be greater than zero, but got dilation_height: ", d.h,
             " dilation_width: ", d.w);
  WICK_CHECK(p.h >= 0 && p.w >= 0, ValueError, op,
             "padding should be non-negative, but got pad_height: ", p.h, " pad_width: ", p.w);
}

std::string str(Pair p) { return detail::py_tuple({p.h, p.w}); }

// The position in the padded image, flattened, of tap (i, j) of block (bi, bj), in the order
// [i, j, bi, bj]: unfold's columns read channel, then tap, then block.
Tensor block_index(const Blocks& b, Device device) {
  const TensorOptions o = TensorOptions(kInt64).device(device);
  Tensor rows =
      (arange(b.k.h, o) * b.d.h).view({b.k.h, 1, 1, 1}) + (arange(b.oh, o) * b.s.h).view({1, 1, b.oh, 1});
  Tensor cols =
      (arange(b.k.w, o) * b.d.w).view({1, b.k.w, 1, 1}) + (arange(b.ow, o) * b.s.w).view({1, 1, 1, b.ow});
  return (rows * b.wp + cols).reshape({-1});
}

// x [N, C, H, W] -> [N, C * kh * kw, L]
Tensor im2col(const Tensor& x, const Blocks& b) {
  const int64_t n = x.size(0), c = x.size(1);
  Tensor padded = b.p.h || b.p.w ? pad(x, {b.p.w, b.p.w, b.p.h, b.p.h}) : x;
  return padded.reshape({n, c, b.hp * b.wp})
      .index_select(2, block_index(b, x.device()))
      .view({n, c * b.k.h * b.k.w, b.oh * b.ow});
}

// cols [N, C * kh * kw, L] -> [N, C, H, W]
Tensor col2im(const Tensor& cols, const Blocks& b) {
  const int64_t n = cols.size(0), c = cols.size(1) / (b.k.h * b.k.w);
  Tensor sums = zeros({n, c, b.hp * b.wp}, cols.options())
                    .index_add(2, block_index(b, cols.device()), cols.reshape({n, c, -1}))
                    .view({n, c, b.hp, b.wp});
  if (b.p.h || b.p.w) sums = sums.narrow(2, b.p.h, b.h).narrow(3, b.p.w, b.w).contiguous();
  return sums;
}

}  // namespace

Tensor unfold(const Tensor& input, Pair kernel_size, Pair dilation, Pair padding, Pair stride) {
  constexpr const char* op = "unfold";
  wick::detail::check_defined(input, op, "input");
  check_block_args(op, kernel_size, dilation, padding, stride);
  const int64_t nd = input.dim();
  WICK_CHECK(
      (nd == 3 || nd == 4) && input.size(-1) != 0 && input.size(-2) != 0 && (nd == 3 || input.size(1) != 0),
      ValueError, op,
      "Expected 3D or 4D (batch mode) tensor input with possibly 0 batch size and non-zero dimensions for "
      "input, but got: ",
      input.sizes());
  const Blocks b = blocks_of(input.size(-2), input.size(-1), kernel_size, dilation, padding, stride);
  WICK_CHECK(b.oh >= 1 && b.ow >= 1, ValueError, op, "Given input with spatial size (", b.h, ", ", b.w,
             "), kernel_size=", str(kernel_size), ", dilation=", str(dilation), ", padding=", str(padding),
             ", calculated shape of the array of sliding blocks as (", b.oh, ", ", b.ow,
             "), but its components must be at least one.");
  const bool batched = nd == 4;
  const bool grad = wick::detail::needs_grad(input);
  Tensor out = wick::detail::forward_once(grad, [&] {
    return wick::detail::as_op(op, [&] {
      Tensor cols = im2col(batched ? input : input.unsqueeze(0), b);
      return batched ? cols : cols.squeeze(0);
    });
  });
  if (grad) [[unlikely]]
    autograd::record("Im2ColBackward0", {input}, out, {},
                     [b](autograd::BackwardContext& c) -> autograd::variable_list {
                       return {fold(c.grad(), Pair(b.h, b.w), b.k, b.d, b.p, b.s)};
                     });
  return out;
}

Tensor unfold(const Tensor& input, const UnfoldFuncOptions& o) {
  return unfold(input, o.kernel_size(), o.dilation(), o.padding(), o.stride());
}

Tensor fold(const Tensor& input, Pair output_size, Pair kernel_size, Pair dilation, Pair padding,
            Pair stride) {
  constexpr const char* op = "fold";
  wick::detail::check_defined(input, op, "input");
  check_block_args(op, kernel_size, dilation, padding, stride);
  const int64_t nd = input.dim();
  WICK_CHECK(
      (nd == 2 || nd == 3) && input.size(-1) != 0 && input.size(-2) != 0, ValueError, op,
      "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero dimensions, "
      "but got: ",
      input.sizes());
  const int64_t dim = nd == 3 ? 1 : 0, taps = kernel_size.h * kernel_size.w;
  WICK_CHECK(input.size(dim) % taps == 0, ValueError, op, "Expected size of input's dimension ", dim,
             ", which is ", input.size(dim),
             ", to be divisible by the product of kernel_size, but got kernel_size=", str(kernel_size), ".");
  WICK_CHECK(output_size.h >= 1 && output_size.w >= 1, ValueError, op,
             "Expected output spatial size to be positive, but got: output_size=", str(output_size), ".");
  const Blocks b = blocks_of(output_size.h, output_size.w, kernel_size, dilation, padding, stride);
  WICK_CHECK(b.oh >= 1 && b.ow >= 1, ValueError, op, "Given output_size=", str(output_size),
             ", kernel_size=", str(kernel_size), ", dilation=", str(dilation), ", padding=", str(padding),
             ", stride=", str(stride), ", calculated shape of the array of sliding blocks as (", b.oh, ", ",
             b.ow, "), which is too small (non-positive)");
  WICK_CHECK(input.size(dim + 1) == b.oh * b.ow, ValueError, op, "Given output_size=", str(output_size),
             ", kernel_size=", str(kernel_size), ", dilation=", str(dilation), ", padding=", str(padding),
             ", stride=", str(stride), ", expected size of input's dimension ", dim + 1,
             " to match the calculated number of sliding blocks ", b.oh, " * ", b.ow, " = ", b.oh * b.ow,
             ", but got input.size(", dim + 1, ") = ", input.size(dim + 1), ".");
  const bool batched = nd == 3;
  const bool grad = wick::detail::needs_grad(input);
  Tensor out = wick::detail::forward_once(grad, [&] {
    return wick::detail::as_op(op, [&] {
      Tensor img = col2im(batched ? input : input.unsqueeze(0), b);
      return batched ? img : img.squeeze(0);
    });
  });
  if (grad) [[unlikely]]
    autograd::record("Col2ImBackward0", {input}, out, {},
                     [b](autograd::BackwardContext& c) -> autograd::variable_list {
                       return {unfold(c.grad(), b.k, b.d, b.p, b.s)};
                     });
  return out;
}

Tensor fold(const Tensor& input, const FoldFuncOptions& o) {
  return fold(input, o.output_size(), o.kernel_size(), o.dilation(), o.padding(), o.stride());
}

// ---- affine_grid

namespace {

// steps points from -1 to 1: the pixel centers with align_corners, else the same spread
// over (steps - 1) / steps of the span; one point is 0 (PyTorch's linspace_from_neg_one).
Tensor grid_line(int64_t steps, bool align_corners, const TensorOptions& o) {
  if (steps <= 1) return zeros({1}, o);
  Tensor line = linspace(-1, 1, steps, o);
  return align_corners ? line : line * double(steps - 1) / double(steps);
}

}  // namespace

Tensor affine_grid(const Tensor& theta, IntArrayRef size, bool align_corners) {
  constexpr const char* op = "affine_grid";
  wick::detail::check_defined(theta, op, "theta");
  WICK_CHECK(is_floating_point(theta.dtype()), ValueError, op,
             "Expected theta to have floating point type, but got ", theta.dtype());
  const size_t nd = size.size();
  WICK_CHECK(
      nd == 4 || nd == 5, NotImplementedError, op,
      "affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, respectively. Got size ",
      size, ".");
  const int64_t rows = nd == 4 ? 2 : 3;
  WICK_CHECK(theta.dim() == 3 && theta.size(1) == rows && theta.size(2) == rows + 1, ValueError, op,
             "Expected a batch of ", rows, "D affine matrices of shape Nx", rows, "x", rows + 1, " for size ",
             size, ". Got ", theta.sizes(), ".");
  bool positive = true;
  for (int64_t s : size) positive = positive && s > 0;
  bool unit_span = false;
  for (size_t i = 2; i < nd; ++i) unit_span = unit_span || size[i] == 1;
  WICK_CHECK((align_corners && unit_span) || positive, ValueError, op,
             "Expected non-zero, positive output size. Got ", size);
  WICK_CHECK(theta.size(0) == size[0], ValueError, op, "Expected theta's batch size, ", theta.size(0),
             ", to match size[0] = ", size[0]);
  return wick::detail::as_op(op, [&] {
    const TensorOptions o = theta.options();
    // base [*spatial, rows + 1]: x (the last dim), y, (z), then 1
    std::vector<int64_t> spatial(size.begin() + 2, size.end());
    std::vector<Tensor> coords;
    for (int64_t i = int64_t(spatial.size()) - 1; i >= 0; --i) {
      std::vector<int64_t> shape(spatial.size() + 1, 1);
      shape[size_t(i)] = -1;
      std::vector<int64_t> full = spatial;
      full.push_back(1);
      coords.push_back(grid_line(spatial[size_t(i)], align_corners, o).view(shape).expand(full));
    }
    std::vector<int64_t> full = spatial;
    full.push_back(1);
    coords.push_back(ones(full, o));
    int64_t points = 1;
    for (int64_t s : spatial) points *= s;
    Tensor base = cat(coords, -1).reshape({1, points, rows + 1});
    std::vector<int64_t> out_shape{size[0]};
    out_shape.insert(out_shape.end(), spatial.begin(), spatial.end());
    out_shape.push_back(rows);
    return matmul(base, theta.transpose(1, 2)).view(out_shape);
  });
}

// ---- grid_sample

namespace {

enum class GridPadding { zeros, border, reflection };

// min(max(c, 0), size - 1), with PyTorch's derivative: 0 on and past either bound.
Tensor clip(const Tensor& c, int64_t size) {
  Tensor low = where(c > 0.0, c, 0.0);
  return where(low < double(size - 1), low, double(size - 1));
}

// c reflected into [twice_low / 2, twice_high / 2] (PyTorch's reflect_coordinates), with its
// derivative +-1.
Tensor reflect(const Tensor& c, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return zeros_like(c);
  const double low = twice_low / 2.0, span = (twice_high - twice_low) / 2.0;
  Tensor in = c - low;
  in = where(in < 0.0, -in, in);
  Tensor flips = (in.detach() / span).floor();
  Tensor extra = in - flips * span;
  return where(remainder(flips, 2.0) == 0.0, extra + low, (span + low) - extra);
}

// The source coordinate, in pixels, of grid coordinate g along a dim of size pixels
// (PyTorch's grid_sampler_compute_source_index).
Tensor source_index(const Tensor& g, int64_t size, GridPadding padding, bool align_corners) {
  Tensor c = align_corners ? (g + 1.0) / 2.0 * double(size - 1) : ((g + 1.0) * double(size) - 1.0) / 2.0;
  if (padding == GridPadding::border) {
    c = clip(c, size);
  } else if (padding == GridPadding::reflection) {
    c = align_corners ? reflect(c, 0, 2 * (size - 1)) : reflect(c, -1, 2 * size - 1);
    c = clip(c, size);
  }
  // non-finite and huge coordinates sample nothing (PyTorch's safe_downgrade_to_int_range)
  const double int_min = double(std::numeric_limits<int32_t>::min());
  const double int_max = double(std::numeric_limits<int32_t>::max()) - 1;
  return where((c >= int_min).logical_and(c <= int_max), c, -100.0);
}

// The values of flat [N, C, H * W] at the integral coordinates (x, y) [N, L], and whether each
// lies inside the image ([N, L], of the grid's dtype).
struct Corner {
  Tensor values, inside;
};
Corner corner(const Tensor& flat, const Tensor& x, const Tensor& y, int64_t h, int64_t w) {
  Tensor inside =
      (x >= 0.0).logical_and(x <= double(w - 1)).logical_and(y >= 0.0).logical_and(y <= double(h - 1));
  Tensor index = (y.clamp(0.0, double(h - 1)) * double(w) + x.clamp(0.0, double(w - 1))).to(kInt64);
  Tensor values = flat.gather(2, index.unsqueeze(1).expand({flat.size(0), flat.size(1), index.size(1)}));
  return {values, inside.to(x.dtype())};
}

}  // namespace

Tensor grid_sample(const Tensor& input, const Tensor& grid, const std::string& mode,
                   const std::string& padding_mode, std::optional<bool> align_corners_given) {
  constexpr const char* op = "grid_sample";
  wick::detail::check_defined(input, op, "input");
  wick::detail::check_defined(grid, op, "grid");
  WICK_CHECK(mode == "bilinear" || mode == "nearest" || mode == "bicubic", ValueError, op,
             "expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: '", mode, "'");
  WICK_CHECK(padding_mode == "zeros" || padding_mode == "border" || padding_mode == "reflection", ValueError,
             op, "expected padding_mode to be 'zeros', 'border', or 'reflection', but got: '", padding_mode,
             "'");
  WICK_CHECK(input.device() == grid.device(), DeviceError, op,
             "expected input and grid to be on same device, but input is on ", input.device(),
             " and grid is on ", grid.device());
  WICK_CHECK(input.dtype() == grid.dtype(), TypeError, op,
             "expected input and grid to have same dtype, but input has ", input.dtype(), " and grid has ",
             grid.dtype());
  WICK_CHECK(is_floating_point(input.dtype()), TypeError, op,
             "expected input to have a floating point dtype, but got ", input.dtype());
  WICK_CHECK(input.dim() != 5 || grid.dim() != 5, NotImplementedError, op,
             "5-D (volumetric) input is not implemented yet; wick samples 4-D input");
  WICK_CHECK(input.dim() == 4 && grid.dim() == 4, ValueError, op,
             "expected 4D or 5D input and grid with same number of dimensions, but got input with sizes ",
             input.sizes(), " and grid with sizes ", grid.sizes());
  WICK_CHECK(input.size(0) == grid.size(0), ValueError, op,
             "expected grid and input to have same batch size, but got input with sizes ", input.sizes(),
             " and grid with sizes ", grid.sizes());
  WICK_CHECK(grid.size(3) == 2, ValueError, op,
             "expected grid to have size 2 in last dimension, but got grid with sizes ", grid.sizes());
  for (int64_t i = 2; i < 4; ++i)
    WICK_CHECK(input.size(i) > 0, ValueError, op,
               "expected input to have non-empty spatial dimensions, but input has sizes ", input.sizes(),
               " with dimension ", i, " being empty");
  WICK_CHECK(mode != "bicubic", NotImplementedError, op,
             "mode 'bicubic' is not implemented yet (bilinear and nearest are)");
  const bool align_corners = align_corners_given.value_or(false);
  const GridPadding padding = padding_mode == "zeros"    ? GridPadding::zeros
                              : padding_mode == "border" ? GridPadding::border
                                                         : GridPadding::reflection;
  return wick::detail::as_op(op, [&] {
    const int64_t n = input.size(0), c = input.size(1), h = input.size(2), w = input.size(3);
    const int64_t ho = grid.size(1), wo = grid.size(2), points = ho * wo;
    Tensor ix = source_index(grid.select(3, 0).reshape({n, points}), w, padding, align_corners);
    Tensor iy = source_index(grid.select(3, 1).reshape({n, points}), h, padding, align_corners);
    Tensor flat = input.reshape({n, c, h * w});
    Tensor out;
    if (mode == "nearest") {
      // PyTorch rounds half to even (nearbyint), as round does
      Corner k = corner(flat, ix.detach().round(), iy.detach().round(), h, w);
      out = k.values * k.inside.unsqueeze(1);
    } else {
      Tensor x0 = ix.detach().floor(), y0 = iy.detach().floor();
      Tensor x1 = x0 + 1.0, y1 = y0 + 1.0;
      const Tensor wx0 = x1 - ix, wx1 = ix - x0, wy0 = y1 - iy, wy1 = iy - y0;
      for (auto [x, y, weight] : {std::tuple{x0, y0, wx0 * wy0}, std::tuple{x1, y0, wx1 * wy0},
                                  std::tuple{x0, y1, wx0 * wy1}, std::tuple{x1, y1, wx1 * wy1}}) {
        Corner k = corner(flat, x, y, h, w);
        Tensor term = k.values * (weight * k.inside).unsqueeze(1);
        out = out.defined() ? out + term : term;
      }
    }
    return out.view({n, c, ho, wo});
  });
}

Tensor grid_sample(const Tensor& input, const Tensor& grid, const GridSampleFuncOptions& o) {
  return grid_sample(input, grid, o.mode(), o.padding_mode(), o.align_corners());
}

}  // namespace functional

// ---- the modules

Tensor UnfoldImpl::forward(const Tensor& input) { return functional::unfold(input, options); }
std::string UnfoldImpl::extra_repr() const {
  return "kernel_size=" + options.kernel_size().repr() + ", dilation=" + options.dilation().repr() +
         ", padding=" + options.padding().repr() + ", stride=" + options.stride().repr();
}

Tensor FoldImpl::forward(const Tensor& input) { return functional::fold(input, options); }
std::string FoldImpl::extra_repr() const {
  return "output_size=" + options.output_size().repr() + ", kernel_size=" + options.kernel_size().repr() +
         ", dilation=" + options.dilation().repr() + ", padding=" + options.padding().repr() +
         ", stride=" + options.stride().repr();
}

}  // namespace wick::nn
