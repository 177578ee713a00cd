// 2-D max and average pooling: the ops, and the generic implementation of the kernel table's
// max-pooling entries.
//
// The generic implementation sees the padded input as [N, C, kh, kw, OH, OW] windows without
// a copy. Max pooling copies the windows once to reduce them; its backward adds the gradient
// into the kh * kw offsets where the max was taken. Average pooling (no kernel-table entries:
// it is these ops on every device) sums the windows, and its backward spreads each output's
// gradient over its window. The CPU's float32/float64 max pooling runs as direct loops instead
// (src/cpu/pool.cpp); CUDA's entries are null for now, so it runs the generic one.
#include "core/pool.h"

#include <cmath>

#include "autograd/hooks.h"
#include "core/tensor_ops.h"
#include "wick/ops.h"

namespace wick::detail {

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
  return make_view(xp, {xp.size(0), xp.size(1), g.kh, g.kw, g.oh, g.ow},
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

// The divisor of each window, [1, 1, OH, OW] (see avg_pool2d).
Tensor avg_divisor(const Tensor& x, const Pool2dGeometry& g, bool count_include_pad) {
  Tensor ones = wick::ones(
      {1, 1, x.size(2) + (count_include_pad ? 2 * g.ph : 0), x.size(3) + (count_include_pad ? 2 * g.pw : 0)},
      x.options());
  const int64_t top = count_include_pad ? 0 : g.ph, left = count_include_pad ? 0 : g.pw;
  Tensor mp = wick::zeros({1, 1, g.hp, g.wp}, x.options());
  mp.narrow(2, top, ones.size(2)).narrow(3, left, ones.size(3)).copy_(ones);
  return windows(mp, g).sum({2, 3});
}

}  // namespace

std::array<Tensor, 2> generic_max_pool2d_forward(const Tensor& x, const Pool2dGeometry& g) {
  Tensor win = windows(pad_to(x, g, -INFINITY), g).permute({0, 1, 4, 5, 2, 3});
  auto [values, offsets] = win.reshape({x.size(0), x.size(1), g.oh, g.ow, g.kh * g.kw}).max(-1);
  return {values, offsets};
}

Tensor generic_max_pool2d_backward(const Tensor& dy, const Tensor& offsets, IntArrayRef x_sizes,
                                   const Pool2dGeometry& g) {
  Tensor zero = wick::zeros_like(dy);
  return scatter_windows(x_sizes, g, dy.options(), [&](int64_t i, int64_t j) {
    return wick::where(offsets == i * g.kw + j, dy, zero);
  });
}

Tensor max_pool2d(const Tensor& x, const Pool2dGeometry& g) {
  const bool grad = needs_grad(x);
  std::array<Tensor, 2> r = forward_once(grad, [&] {
    auto entry = backend(x.device()).max_pool2d_forward;
    return entry ? entry(x, g) : generic_max_pool2d_forward(x, g);
  });
  if (grad) [[unlikely]] autograd::record_max_pool2d(x, r[0], r[1], g);
  return std::move(r[0]);
}

Tensor max_pool2d_backward(const Tensor& dy, const Tensor& offsets, IntArrayRef x_sizes,
                           const Pool2dGeometry& g) {
  auto entry = backend(dy.device()).max_pool2d_backward;
  return entry ? entry(dy, offsets, x_sizes, g) : generic_max_pool2d_backward(dy, offsets, x_sizes, g);
}

Tensor max_pool2d_gather(const Tensor& x, const Tensor& offsets, const Pool2dGeometry& g) {
  Tensor win = windows(pad_to(x, g, 0), g)
                   .permute({0, 1, 4, 5, 2, 3})
                   .reshape({x.size(0), x.size(1), g.oh, g.ow, g.kh * g.kw});
  return win.gather(-1, offsets.unsqueeze(-1)).squeeze(-1);
}

Tensor avg_pool2d_with_divisor(const Tensor& x, const Tensor& divisor, const Pool2dGeometry& g) {
  return windows(pad_to(x, g, 0), g).sum({2, 3}) / divisor;
}

Tensor avg_pool2d(const Tensor& x, const Pool2dGeometry& g, bool count_include_pad) {
  const bool grad = needs_grad(x);
  Tensor divisor;
  Tensor y = forward_once(grad, [&] {
    divisor = avg_divisor(x, g, count_include_pad);
    return windows(pad_to(x, g, 0), g).sum({2, 3}) / divisor;
  });
  if (grad) [[unlikely]] autograd::record_avg_pool2d(x, y, divisor, g);
  return y;
}

Tensor avg_pool2d_backward(const Tensor& dy, const Tensor& divisor, IntArrayRef x_sizes,
                           const Pool2dGeometry& g) {
  Tensor share = dy / divisor;
  return scatter_windows(x_sizes, g, share.options(), [&](int64_t, int64_t) { return share; });
}

}  // namespace wick::detail
