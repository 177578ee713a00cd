// 2-D max and average pooling and their backward formulas.
//
// Pooling sees the padded input as [N, C, kh, kw, OH, OW] windows without a copy. Max pooling
// copies the windows once to reduce them; its backward adds the gradient into the kh * kw
// offsets where the max was taken. Average pooling's backward spreads each output's gradient
// over its window.
#include <cmath>
#include <tuple>

#include "autograd/function.h"
#include "autograd/pool.h"
#include "core/tensor_ops.h"
#include "wick/ops.h"

namespace wick::autograd {

namespace {

// x placed at (ph, pw) in a [N, C, hp, wp] tensor filled with fill.
Tensor pad_to(const Tensor& x, const Pool2dGeometry& g, double fill) {
  Tensor out = wick::full({x.size(0), x.size(1), g.hp, g.wp}, fill, x.options());
  out.narrow(2, g.ph, x.size(2)).narrow(3, g.pw, x.size(3)).copy_(x);
  return out;
}

// [N, C, kh, kw, OH, OW] windows of a padded tensor.
Tensor windows(const Tensor& xp, const Pool2dGeometry& g) {
  const int64_t sh = xp.stride(2), sw = xp.stride(3);
  return wick::detail::make_view(xp, {xp.size(0), xp.size(1), g.kh, g.kw, g.oh, g.ow},
                                 {xp.stride(0), xp.stride(1), sh * g.dh, sw * g.dw, sh * g.sh, sw * g.sw},
                                 xp.storage_offset());
}

// The gradient of x from per-offset contributions: contribution(i, j) is added into the
// window offset (i, j) of a zero padded gradient, which is then cut back to x's size.
template <class F>
Tensor scatter_windows(IntArrayRef x_sizes, const Pool2dGeometry& g, const TensorOptions& o, F contribution) {
  Tensor dxp = wick::zeros({x_sizes[0], x_sizes[1], g.hp, g.wp}, o);
  Tensor dwin = windows(dxp, g);
  for (int64_t i = 0; i < g.kh; ++i)
    for (int64_t j = 0; j < g.kw; ++j) dwin.select(2, i).select(2, j).add_(contribution(i, j));
  return dxp.narrow(2, g.ph, x_sizes[2]).narrow(3, g.pw, x_sizes[3]);
}

// Each window's max and its offset i * kw + j in the window.
std::tuple<Tensor, Tensor> max_with_offsets(const Tensor& x, const Pool2dGeometry& g) {
  Tensor win = windows(pad_to(x, g, -INFINITY), g).permute({0, 1, 4, 5, 2, 3});
  return win.reshape({x.size(0), x.size(1), g.oh, g.ow, g.kh * g.kw}).max(-1);
}

// The divisor of each window, [1, 1, OH, OW]: its elements inside the input, plus the zero
// padding when count_include_pad (never the room added on the right for ceil_mode).
Tensor avg_divisor(const Tensor& x, const Pool2dGeometry& g, bool count_include_pad) {
  Tensor ones = wick::ones(
      {1, 1, x.size(2) + (count_include_pad ? 2 * g.ph : 0), x.size(3) + (count_include_pad ? 2 * g.pw : 0)},
      x.options());
  const int64_t top = count_include_pad ? 0 : g.ph, left = count_include_pad ? 0 : g.pw;
  Tensor mp = wick::zeros({1, 1, g.hp, g.wp}, x.options());
  mp.narrow(2, top, ones.size(2)).narrow(3, left, ones.size(3)).copy_(ones);
  return windows(mp, g).sum({2, 3});
}

Tensor avg_with(const Tensor& x, const Pool2dGeometry& g, const Tensor& divisor) {
  return windows(pad_to(x, g, 0), g).sum({2, 3}) / divisor;
}

}  // namespace

Tensor max_pool2d_forward(const Tensor& x, const Pool2dGeometry& g) {
  return std::get<0>(max_with_offsets(x, g));
}

Tensor avg_pool2d_forward(const Tensor& x, const Pool2dGeometry& g, bool count_include_pad) {
  return avg_with(x, g, avg_divisor(x, g, count_include_pad));
}

Tensor max_pool2d(const Tensor& x, const Pool2dGeometry& g) {
  auto [values, offsets] = forward([&] { return max_with_offsets(x, g); });
  return record("MaxPool2DWithIndicesBackward0", {x}, values, {offsets},
                [g, sizes = DimVector(x.sizes())](BackwardContext& c) -> variable_list {
                  Tensor idx = c.saved(0), dy = c.grad(), zero = wick::zeros_like(dy);
                  return {scatter_windows(sizes, g, dy.options(), [&](int64_t i, int64_t j) {
                    return wick::where(idx == i * g.kw + j, dy, zero);
                  })};
                });
}

Tensor avg_pool2d(const Tensor& x, const Pool2dGeometry& g, bool count_include_pad) {
  Tensor divisor = forward([&] { return avg_divisor(x, g, count_include_pad); });
  Tensor y = forward([&] { return avg_with(x, g, divisor); });
  return record(
      "AvgPool2DBackward0", {x}, y, {divisor},
      [g, sizes = DimVector(x.sizes())](BackwardContext& c) -> variable_list {
        Tensor share = c.grad() / c.saved(0);
        return {scatter_windows(sizes, g, share.options(), [&](int64_t, int64_t) { return share; })};
      });
}

}  // namespace wick::autograd
