// 2-D max and average pooling and their backward formulas.
//
// Pooling sees the padded input as [N, C, kh, kw, OH, OW] windows without a copy. Max pooling
// copies the windows once to reduce them; its backward adds the gradient into the kh * kw
// offsets where the max was taken. Average pooling's backward spreads each output's gradient
// over its window. On the CPU, float32/float64 max pooling runs as direct loops instead.
#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

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

// ceil(a / b) for b > 0 and any a.
int64_t ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

// One row oy of a plane's outputs: best[ow] and at[ow], visiting the window offsets in order
// (i, then j), each offset one pass over the outputs whose input column lies inside the row
// (outside is -inf, never above best). A value wins over a number when it is larger or NaN;
// once best is NaN nothing replaces it.
template <class T>
void max_pool_row(const T* xp, T* best, int64_t* at, int64_t oy, int64_t h, int64_t w,
                  const Pool2dGeometry& g) {
  std::fill(best, best + g.ow, -std::numeric_limits<T>::infinity());
  std::fill(at, at + g.ow, int64_t(0));
  for (int64_t i = 0; i < g.kh; ++i) {
    const int64_t iy = oy * g.sh - g.ph + i * g.dh;
    if (iy < 0 || iy >= h) continue;
    for (int64_t j = 0; j < g.kw; ++j) {
      const int64_t shift = j * g.dw - g.pw;  // input column of output 0
      const int64_t first = std::max<int64_t>(0, ceil_div(-shift, g.sw));
      const int64_t last = std::min<int64_t>(g.ow, ceil_div(w - shift, g.sw));
      const T* row = xp + iy * w + shift;
      const int64_t e = i * g.kw + j;
      for (int64_t ox = first; ox < last; ++ox) {
        const T v = row[ox * g.sw], b = best[ox];
        const bool take = (v > b) | ((v != v) & (b == b));
        best[ox] = take ? v : b;
        at[ox] = take ? e : at[ox];
      }
    }
  }
}

// The usual 2x2 window with stride 2 and no padding, every window inside the input: the same
// selection written so that it vectorizes, with NaN left out; a row holding a NaN is done
// again by max_pool_row. at_buf holds ow offsets as T (the vector lanes), widened at the end.
template <class T>
void max_pool_row_2x2(const T* xp, T* best, int64_t* at, T* at_buf, int64_t oy, int64_t h, int64_t w,
                      const Pool2dGeometry& g) {
  const T* r0 = xp + 2 * oy * w;
  const T* r1 = r0 + w;
  int64_t nan = 0;
  for (int64_t ox = 0; ox < g.ow; ++ox) {
    const T a = r0[2 * ox], b = r0[2 * ox + 1], c = r1[2 * ox], d = r1[2 * ox + 1];
    T m = a, k = 0;
    k = b > m ? T(1) : k;
    m = b > m ? b : m;
    k = c > m ? T(2) : k;
    m = c > m ? c : m;
    k = d > m ? T(3) : k;
    m = d > m ? d : m;
    best[ox] = m;
    at_buf[ox] = k;
    nan += (a != a) + (b != b) + (c != c) + (d != d);
  }
  if (nan) return max_pool_row(xp, best, at, oy, h, w, g);
  for (int64_t ox = 0; ox < g.ow; ++ox) at[ox] = int64_t(at_buf[ox]);
}

template <class T>
void max_pool_planes(const T* x, T* y, int64_t* off, int64_t planes, int64_t h, int64_t w,
                     const Pool2dGeometry& g) {
  const int64_t out = g.oh * g.ow;
  const bool two = g.kh == 2 && g.kw == 2 && g.sh == 2 && g.sw == 2 && g.ph == 0 && g.pw == 0 && g.dh == 1 &&
                   g.dw == 1 && 2 * g.oh <= h && 2 * g.ow <= w;
#pragma omp parallel if (planes * out * g.kh * g.kw > kPoolParallelGrain)
  {
    std::vector<T> at_buf(two ? size_t(g.ow) : 0);
#pragma omp for schedule(static)
    for (int64_t p = 0; p < planes; ++p)
      for (int64_t oy = 0; oy < g.oh; ++oy) {
        T* best = y + p * out + oy * g.ow;
        int64_t* at = off + p * out + oy * g.ow;
        if (two) max_pool_row_2x2(x + p * h * w, best, at, at_buf.data(), oy, h, w, g);
        else max_pool_row(x + p * h * w, best, at, oy, h, w, g);
      }
  }
}

// dx (zero, [planes, h, w]) += dy at the input position of each window's saved offset.
template <class T>
void max_pool_backward_planes(const T* dy, const int64_t* off, T* dx, int64_t planes, int64_t h, int64_t w,
                              const Pool2dGeometry& g) {
  const int64_t out = g.oh * g.ow;
  // Each offset's row and column within the window, in input elements (no division per output).
  std::vector<int64_t> di(size_t(g.kh * g.kw)), dj(size_t(g.kh * g.kw));
  for (int64_t e = 0; e < g.kh * g.kw; ++e) di[size_t(e)] = e / g.kw * g.dh, dj[size_t(e)] = e % g.kw * g.dw;
#pragma omp parallel for if (planes * out > kPoolParallelGrain) schedule(static)
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oy = 0; oy < g.oh; ++oy)
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        const int64_t e = p * out + oy * g.ow + ox;
        const int64_t iy = oy * g.sh - g.ph + di[size_t(off[e])], ix = ox * g.sw - g.pw + dj[size_t(off[e])];
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
