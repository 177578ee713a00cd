// The CPU's 2-D max pooling (KernelTable's max_pool2d entries) for float32/float64: each
// window is scanned in place with plain loops, an (N, C) plane per iteration over OpenMP
// threads, instead of copying the padded input and its windows and reducing them as the generic
// implementation (core/pool.h) does; the other dtypes, and offsets of another layout, go there.
// The results are the generic implementation's: positions outside the input count as -inf, the
// first NaN or else the first maximum of a window wins.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/pool.h"
#include "cpu/kernels.h"
#include "wick/ops.h"

namespace wick::detail::cpu {

namespace {

bool direct(const Tensor& t) { return t.dtype() == kFloat32 || t.dtype() == kFloat64; }

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

}  // namespace

std::array<Tensor, 2> max_pool2d_forward(const Tensor& x, const Pool2dGeometry& g) {
  if (!direct(x)) return generic_max_pool2d_forward(x, g);
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

Tensor max_pool2d_backward(const Tensor& dy, const Tensor& offsets, IntArrayRef x_sizes,
                               const Pool2dGeometry& g) {
  if (!direct(dy) || !offsets.is_contiguous()) return generic_max_pool2d_backward(dy, offsets, x_sizes, g);
  const Tensor dyc = dy.contiguous();
  Tensor dx = wick::zeros(x_sizes, dyc.options());
  const int64_t planes = x_sizes[0] * x_sizes[1];
  if (dy.dtype() == kFloat32)
    max_pool_backward_planes(dyc.data_ptr<float>(), offsets.data_ptr<int64_t>(), dx.data_ptr<float>(), planes,
                             x_sizes[2], x_sizes[3], g);
  else
    max_pool_backward_planes(dyc.data_ptr<double>(), offsets.data_ptr<int64_t>(), dx.data_ptr<double>(),
                             planes, x_sizes[2], x_sizes[3], g);
  return dx;
}

}  // namespace wick::detail::cpu
