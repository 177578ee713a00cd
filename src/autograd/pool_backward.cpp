// 2-D max and average pooling and their backward formulas.
//
// Pooling sees the padded input as [N, C, kh, kw, OH, OW] windows without a copy. Max pooling
// copies the windows once to reduce them; its backward adds the gradient into the kh * kw
// offsets where the max was taken. Average pooling's backward spreads each output's gradient
// over its window. On the CPU, float32/float64 max pooling runs as direct loops instead.
#include <cmath>
#include <limits>
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

// CPU float32/float64 max pooling scans each window in place with plain loops, an (N, C)
// plane per iteration over OpenMP threads, instead of copying the padded input and its windows
// and reducing them. The results are the window ops': positions outside the input count as
// -inf, the first NaN or else the first maximum of a window wins.
bool direct_max_pool(const Tensor& t) {
  return t.device().is_cpu() && (t.dtype() == kFloat32 || t.dtype() == kFloat64);
}

// Below this much window work a pooling runs on the calling thread.
constexpr int64_t kPoolParallelGrain = 32768;

template <class T>
void max_pool_planes(const T* x, T* y, int64_t* off, int64_t planes, int64_t h, int64_t w,
                     const Pool2dGeometry& g) {
  const int64_t out = g.oh * g.ow;
#pragma omp parallel for if (planes * out * g.kh * g.kw > kPoolParallelGrain) schedule(static)
  for (int64_t p = 0; p < planes; ++p) {
    const T* xp = x + p * h * w;
    for (int64_t oy = 0; oy < g.oh; ++oy)
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        T best = -std::numeric_limits<T>::infinity();
        int64_t at = 0;
        for (int64_t i = 0; i < g.kh; ++i) {
          const int64_t iy = oy * g.sh - g.ph + i * g.dh;
          for (int64_t j = 0; j < g.kw; ++j) {
            const int64_t ix = ox * g.sw - g.pw + j * g.dw;
            if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;  // -inf: never above best
            const T v = xp[iy * w + ix];
            if (std::isnan(v)) {
              best = v, at = i * g.kw + j;
              goto found;
            }
            if (v > best) best = v, at = i * g.kw + j;
          }
        }
      found:
        y[p * out + oy * g.ow + ox] = best;
        off[p * out + oy * g.ow + ox] = at;
      }
  }
}

// dx (zero, [planes, h, w]) += dy at the input position of each window's saved offset.
template <class T>
void max_pool_backward_planes(const T* dy, const int64_t* off, T* dx, int64_t planes, int64_t h, int64_t w,
                              const Pool2dGeometry& g) {
  const int64_t out = g.oh * g.ow;
#pragma omp parallel for if (planes * out > kPoolParallelGrain) schedule(static)
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oy = 0; oy < g.oh; ++oy)
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        const int64_t e = p * out + oy * g.ow + ox;
        const int64_t iy = oy * g.sh - g.ph + off[e] / g.kw * g.dh,
                      ix = ox * g.sw - g.pw + off[e] % g.kw * g.dw;
        if (iy >= 0 && iy < h && ix >= 0 && ix < w) dx[(p * h + iy) * w + ix] += dy[e];
      }
}

// Each window's max and its offset i * kw + j in the window.
std::tuple<Tensor, Tensor> max_with_offsets(const Tensor& x, const Pool2dGeometry& g) {
  if (direct_max_pool(x)) {
    const Tensor xc = x.contiguous();
    Tensor values = wick::empty({x.size(0), x.size(1), g.oh, g.ow}, x.options());
    Tensor offsets = wick::empty({x.size(0), x.size(1), g.oh, g.ow}, x.options().dtype(kInt64));
    const int64_t planes = x.size(0) * x.size(1);
    if (x.dtype() == kFloat32)
      max_pool_planes(xc.data_ptr<float>(), values.data_ptr<float>(), offsets.data_ptr<int64_t>(), planes,
                      x.size(2), x.size(3), g);
    else
      max_pool_planes(xc.data_ptr<double>(), values.data_ptr<double>(), offsets.data_ptr<int64_t>(), planes,
                      x.size(2), x.size(3), g);
    return {values, offsets};
  }
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
                  if (direct_max_pool(c.grad()) && c.saved(0).is_contiguous()) {
                    const Tensor dy = c.grad().contiguous(), idx = c.saved(0);
                    Tensor dx = wick::zeros(sizes, dy.options());
                    const int64_t planes = sizes[0] * sizes[1];
                    if (dy.dtype() == kFloat32)
                      max_pool_backward_planes(dy.data_ptr<float>(), idx.data_ptr<int64_t>(),
                                               dx.data_ptr<float>(), planes, sizes[2], sizes[3], g);
                    else
                      max_pool_backward_planes(dy.data_ptr<double>(), idx.data_ptr<int64_t>(),
                                               dx.data_ptr<double>(), planes, sizes[2], sizes[3], g);
                    return {dx};
                  }
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
