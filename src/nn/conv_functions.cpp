// conv2d and the 2-D poolings of nn::functional, each recorded as one autograd node
// (ConvolutionBackward0, MaxPool2DWithIndicesBackward0, AvgPool2DBackward0). conv2d is core's
// (src/core/conv.cpp); here it only gains unbatched inputs.
//
// Pooling uses the same window view as the generic convolution: the padded input seen as
// [N, C, kh, kw, OH, OW] without a copy. Max pooling copies the windows once to reduce them;
// its backward adds the gradient into the kh * kw offsets where the max was taken.
#include <cmath>

#include "autograd/function.h"
#include "core/conv.h"
#include "core/tensor_iter.h"
#include "core/tensor_ops.h"
#include "wick/nn/functional.h"
#include "wick/ops.h"

namespace wick::nn::functional {

namespace {

// Runs f on x made 4-D (an unbatched [C, H, W] input gets a batch dim of 1 and loses it after).
template <class F>
Tensor batched(const Tensor& x, const char* op, F f) {
  WICK_CHECK(x.dim() == 3 || x.dim() == 4, ValueError, op,
             "Expected 3D (unbatched) or 4D (batched) input to ", op, ", but got input of size: ", x.sizes());
  if (x.dim() == 4) return f(x);
  return f(x.unsqueeze(0)).squeeze(0);
}

// Pooling output size (PyTorch's pooling_output_shape).
int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode, const char* op) {
  WICK_CHECK(k > 0 && s > 0 && d > 0, ValueError, op,
             "kernel_size, stride and dilation must be greater than zero");
  WICK_CHECK(p >= 0 && p <= (d * (k - 1) + 1) / 2, ValueError, op,
             "pad should be at most half of effective kernel size, but got pad=", p, ", kernel_size=", k,
             " and dilation=", d);
  const int64_t num = in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  int64_t out = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  WICK_CHECK(out > 0, ValueError, op, "Given input size ", in, ", the output size ", out, " is too small");
  return out;
}

struct PoolGeometry {
  int64_t kh, kw, sh, sw, ph, pw, dh, dw, oh, ow;
  int64_t hp, wp;  // padded extents the windows need (left padding plus room on the right)
};

PoolGeometry pool_geometry(const Tensor& x, Pair k, Pair s, Pair p, Pair d, bool ceil_mode, const char* op) {
  PoolGeometry g{k.h, k.w, s.h, s.w, p.h, p.w, d.h, d.w, 0, 0, 0, 0};
  g.oh = pool_out(x.size(2), k.h, s.h, p.h, d.h, ceil_mode, op);
  g.ow = pool_out(x.size(3), k.w, s.w, p.w, d.w, ceil_mode, op);
  g.hp = std::max(x.size(2) + 2 * p.h, (g.oh - 1) * s.h + d.h * (k.h - 1) + 1);
  g.wp = std::max(x.size(3) + 2 * p.w, (g.ow - 1) * s.w + d.w * (k.w - 1) + 1);
  return g;
}

// x placed at (ph, pw) in a [N, C, hp, wp] tensor filled with fill.
Tensor pad_to(const Tensor& x, const PoolGeometry& g, double fill) {
  Tensor out = wick::full({x.size(0), x.size(1), g.hp, g.wp}, fill, x.options());
  out.narrow(2, g.ph, x.size(2)).narrow(3, g.pw, x.size(3)).copy_(x);
  return out;
}

// [N, C, kh, kw, OH, OW] windows of a padded tensor.
Tensor windows(const Tensor& xp, const PoolGeometry& g) {
  const int64_t sh = xp.stride(2), sw = xp.stride(3);
  return wick::detail::make_view(xp, {xp.size(0), xp.size(1), g.kh, g.kw, g.oh, g.ow},
                                 {xp.stride(0), xp.stride(1), sh * g.dh, sw * g.dw, sh * g.sh, sw * g.sw},
                                 xp.storage_offset());
}

// The gradient of x from per-offset contributions: dwin(i, j) is added into the window
// offset (i, j) of a zero padded gradient, which is then cut back to x's size.
template <class F>
Tensor scatter_windows(IntArrayRef x_sizes, const PoolGeometry& g, const TensorOptions& o, F contribution) {
  Tensor dxp = wick::zeros({x_sizes[0], x_sizes[1], g.hp, g.wp}, o);
  Tensor dwin = windows(dxp, g);
  for (int64_t i = 0; i < g.kh; ++i)
    for (int64_t j = 0; j < g.kw; ++j) dwin.select(2, i).select(2, j).add_(contribution(i, j));
  return dxp.narrow(2, g.ph, x_sizes[2]).narrow(3, g.pw, x_sizes[3]);
}

}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, Pair stride, Pair padding,
              Pair dilation, int64_t groups) {
  const wick::detail::Conv2dParams p{
      {stride.h, stride.w}, {padding.h, padding.w}, {dilation.h, dilation.w}, groups};
  return batched(x, "conv2d", [&](const Tensor& x4) { return wick::detail::conv2d(x4, weight, bias, p); });
}

Tensor max_pool2d(const Tensor& x, Pair kernel_size, std::optional<Pair> stride, Pair padding, Pair dilation,
                  bool ceil_mode) {
  return batched(x, "max_pool2d", [&](const Tensor& x4) {
    const PoolGeometry g = pool_geometry(x4, kernel_size, stride.value_or(kernel_size), padding, dilation,
                                         ceil_mode, "max_pool2d");
    auto [values, indices] = autograd::forward([&] {
      Tensor win = windows(pad_to(x4, g, -INFINITY), g).permute({0, 1, 4, 5, 2, 3});
      return win.reshape({x4.size(0), x4.size(1), g.oh, g.ow, g.kh * g.kw}).max(-1);
    });
    if (!GradMode::is_enabled() || !x4.requires_grad()) return values;
    return autograd::record(
        "MaxPool2DWithIndicesBackward0", {x4}, values, {indices},
        [g, sizes = DimVector(x4.sizes())](autograd::BackwardContext& c) -> autograd::variable_list {
          Tensor idx = c.saved(0), dy = c.grad(), zero = wick::zeros_like(dy);
          return {scatter_windows(sizes, g, dy.options(), [&](int64_t i, int64_t j) {
            return wick::where(idx == i * g.kw + j, dy, zero);
          })};
        });
  });
}

Tensor avg_pool2d(const Tensor& x, Pair kernel_size, std::optional<Pair> stride, Pair padding, bool ceil_mode,
                  bool count_include_pad) {
  return batched(x, "avg_pool2d", [&](const Tensor& x4) {
    const PoolGeometry g =
        pool_geometry(x4, kernel_size, stride.value_or(kernel_size), padding, 1, ceil_mode, "avg_pool2d");
    // The divisor of each window: its elements inside the input, plus the zero padding when
    // count_include_pad (never the room added on the right for ceil_mode).
    Tensor divisor = autograd::forward([&] {
      Tensor ones = wick::ones({1, 1, x4.size(2) + (count_include_pad ? 2 * g.ph : 0),
                                x4.size(3) + (count_include_pad ? 2 * g.pw : 0)},
                               x4.options());
      PoolGeometry gm = g;
      if (count_include_pad) gm.ph = gm.pw = 0;
      Tensor mp = wick::zeros({1, 1, g.hp, g.wp}, x4.options());
      mp.narrow(2, gm.ph, ones.size(2)).narrow(3, gm.pw, ones.size(3)).copy_(ones);
      return windows(mp, g).sum({2, 3});  // [1, 1, OH, OW]
    });
    Tensor y = autograd::forward([&] { return windows(pad_to(x4, g, 0), g).sum({2, 3}) / divisor; });
    if (!GradMode::is_enabled() || !x4.requires_grad()) return y;
    return autograd::record(
        "AvgPool2DBackward0", {x4}, y, {divisor},
        [g, sizes = DimVector(x4.sizes())](autograd::BackwardContext& c) -> autograd::variable_list {
          Tensor share = c.grad() / c.saved(0);
          return {scatter_windows(sizes, g, share.options(), [&](int64_t, int64_t) { return share; })};
        });
  });
}

Tensor adaptive_avg_pool2d(const Tensor& x, Pair output_size) {
  return batched(x, "adaptive_avg_pool2d", [&](const Tensor& x4) {
    const int64_t h = x4.size(2), w = x4.size(3), oh = output_size.h, ow = output_size.w;
    WICK_CHECK(oh > 0 && ow > 0, ValueError, "adaptive_avg_pool2d", "output_size must be positive");
    if (oh == 1 && ow == 1) return x4.mean({2, 3}, true);
    if (h % oh == 0 && w % ow == 0) return avg_pool2d(x4, Pair(h / oh, w / ow));
    // Uneven bins: bin i covers [floor(i h / oh), ceil((i + 1) h / oh)).
    std::vector<Tensor> rows;
    for (int64_t i = 0; i < oh; ++i) {
      const int64_t h0 = i * h / oh, h1 = ((i + 1) * h + oh - 1) / oh;
      std::vector<Tensor> cells;
      for (int64_t j = 0; j < ow; ++j) {
        const int64_t w0 = j * w / ow, w1 = ((j + 1) * w + ow - 1) / ow;
        cells.push_back(x4.narrow(2, h0, h1 - h0).narrow(3, w0, w1 - w0).mean({2, 3}));
      }
      rows.push_back(wick::stack(cells, -1));
    }
    return wick::stack(rows, -2);
  });
}

}  // namespace wick::nn::functional
