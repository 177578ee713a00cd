// 2-D convolution on the CPU for float32 and float64 (float32 goes to oneDNN's convolution
// first where it is built in: dnnl_conv.cpp): explicit im2col of one image into a
// contiguous buffer reused across the images a thread runs, one BLAS GEMM per image and
// group, and col2im for the input gradient. Images are spread over OpenMP threads (each GEMM
// then runs on its own thread; OpenBLAS's OpenMP build does not start threads of its own
// inside a parallel region); a single image leaves the threading to BLAS. Other dtypes, empty
// sizes and sizes past BLAS's 32-bit counts go to core's generic implementation
// (src/core/conv.cpp), whose results these match.
//
// Layout: x [N, C, H, W], w [O, C / groups, kh, kw], y [N, O, OH, OW], all made contiguous.
// For image n and group g, cols [K, L] with K = C / groups * kh * kw and L = OH * OW holds the
// input window element (c, i, j) of every output position in row (c * kh + i) * kw + j, so
//   y[n, g]   = w[g] [og, K] @ cols [K, L]            (+ bias per row)
//   dw[g]    += dy[n, g] [og, L] @ cols^T [L, K]      (summed over the images)
//   dcols     = w[g]^T [K, og] @ dy[n, g] [og, L],    dx[n, g] = col2im(dcols)
// A 1x1 kernel with stride 1 and no padding needs no im2col: cols is the image itself.
#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include <cblas.h>
#include <omp.h>

#include "core/conv.h"
#include "cpu/dnnl_conv.h"
#include "cpu/kernels.h"
#include "cpu/vec_math.h"
#include "core/backend_settings.h"
#include "wick/ops.h"

namespace wick::detail::cpu {

namespace {

struct Shape {
  int64_t n, c, h, w, o, kh, kw, oh, ow, g, cg, og;
  int64_t sh, sw, ph, pw, dh, dw;
  int64_t k, l;  // GEMM sizes: K = cg * kh * kw, L = oh * ow
  bool direct;   // 1x1 kernel, stride 1, no padding: cols is the image
};

Shape shape_of(const Tensor& x, const Tensor& w, const Conv2dParams& p) {
  Shape s;
  s.n = x.size(0), s.c = x.size(1), s.h = x.size(2), s.w = x.size(3);
  s.o = w.size(0), s.kh = w.size(2), s.kw = w.size(3);
  s.sh = p.stride[0], s.sw = p.stride[1], s.ph = p.padding[0], s.pw = p.padding[1];
  s.dh = p.dilation[0], s.dw = p.dilation[1];
  s.oh = conv_out_size(s.h, s.kh, s.sh, s.ph, s.dh);
  s.ow = conv_out_size(s.w, s.kw, s.sw, s.pw, s.dw);
  s.g = p.groups, s.cg = s.c / s.g, s.og = s.o / s.g;
  s.k = s.cg * s.kh * s.kw, s.l = s.oh * s.ow;
  s.direct = s.kh == 1 && s.kw == 1 && s.sh == 1 && s.sw == 1 && s.ph == 0 && s.pw == 0;
  return s;
}

// Whether this kernel takes the problem: a BLAS dtype, nothing empty, GEMM sizes that fit
// BLAS's int.
bool usable(const Tensor& x, const Tensor& w, const Shape& s) {
  if (x.dtype() != kFloat32 && x.dtype() != kFloat64) return false;
  if (w.dtype() != x.dtype()) return false;
  if (s.n == 0 || s.c == 0 || s.o == 0 || s.cg == 0 || s.og == 0) return false;
  const int64_t most = std::max({s.k, s.l, s.og, s.cg * s.h * s.w});
  return most < INT_MAX && s.k * s.l < INT_MAX;
}

// ceil(a / b) for b > 0 and any a.
int64_t ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

// The output columns [first, last) whose input column ox * sw - pw + j * dw lies inside [0, w).
struct ColRange {
  int64_t first, last, in_first;  // in_first: the input column of `first`
};

ColRange col_range(const Shape& s, int64_t j) {
  const int64_t off = j * s.dw - s.pw;
  int64_t first = std::max<int64_t>(0, ceil_div(-off, s.sw));
  int64_t last = std::min<int64_t>(s.ow, ceil_div(s.w - off, s.sw));
  if (last < first) last = first;
  return {first, last, first * s.sw + off};
}

// cols [K, L] of one image's group, rows ld >= L apart: x points at its first channel, [cg, h, w].
template <class T>
void im2col(const T* x, T* cols, const Shape& s, int64_t ld) {
  for (int64_t c = 0; c < s.cg; ++c)
    for (int64_t i = 0; i < s.kh; ++i)
      for (int64_t j = 0; j < s.kw; ++j) {
        T* row = cols + ((c * s.kh + i) * s.kw + j) * ld;
        const ColRange r = col_range(s, j);
        for (int64_t oy = 0; oy < s.oh; ++oy) {
          T* out = row + oy * s.ow;
          const int64_t iy = oy * s.sh - s.ph + i * s.dh;
          if (iy < 0 || iy >= s.h) {
            std::fill(out, out + s.ow, T(0));
            continue;
          }
          const T* in = x + (c * s.h + iy) * s.w + r.in_first;
          std::fill(out, out + r.first, T(0));
          if (s.sw == 1) {
            std::memcpy(out + r.first, in, size_t(r.last - r.first) * sizeof(T));
          } else {
            for (int64_t ox = r.first; ox < r.last; ++ox) out[ox] = in[(ox - r.first) * s.sw];
          }
          std::fill(out + r.last, out + s.ow, T(0));
        }
      }
}

// dx [cg, h, w] of one image's group += col2im(dcols [K, L]).
template <class T>
void col2im(const T* dcols, T* dx, const Shape& s) {
  for (int64_t c = 0; c < s.cg; ++c)
    for (int64_t i = 0; i < s.kh; ++i)
      for (int64_t j = 0; j < s.kw; ++j) {
        const T* row = dcols + ((c * s.kh + i) * s.kw + j) * s.l;
        const ColRange r = col_range(s, j);
        for (int64_t oy = 0; oy < s.oh; ++oy) {
          const int64_t iy = oy * s.sh - s.ph + i * s.dh;
          if (iy < 0 || iy >= s.h) continue;
          const T* in = row + oy * s.ow + r.first;
          T* out = dx + (c * s.h + iy) * s.w + r.in_first;
          const int64_t len = r.last - r.first;
          if (s.sw == 1) {
            for (int64_t t = 0; t < len; ++t) out[t] += in[t];
          } else {
            for (int64_t t = 0; t < len; ++t) out[t * s.sw] += in[t];
          }
        }
      }
}

// Row-major C [m, n] = alpha op(A) op(B) + beta C through cblas_sgemm / cblas_dgemm.
template <class T>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb,
          T beta, T* c, int64_t ldc) {
  const auto at = ta ? CblasTrans : CblasNoTrans, bt = tb ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, at, bt, blasint(m), blasint(n), blasint(k), 1.0f, a, blasint(lda), b,
                blasint(ldb), beta, c, blasint(ldc));
  else
    cblas_dgemm(CblasRowMajor, at, bt, blasint(m), blasint(n), blasint(k), 1.0, a, blasint(lda), b,
                blasint(ldb), beta, c, blasint(ldc));
}

// Images run in parallel when there are several and enough work; one image leaves the
// threads to BLAS.
bool parallel_images(const Shape& s) {
  return s.n > 1 && omp_get_max_threads() > 1 && !omp_in_parallel() &&
         s.n * s.o * s.k * s.l >= (int64_t(1) << 16);
}

// ---- Few taps: the first layer of an image network (1 input channel, 3x3: K = 9) and
// depthwise layers. With K this small a GEMM with inner size K runs far below the library's
// peak, and the bias, the bias gradient and the weight gradient would each be a pass of their
// own over the output-sized tensors. Here each output plane is computed in one pass over it,
// from the image's cols [K, L] (im2col, once per image and group a thread meets):
//   y[n, o]   = b[o] + sum_t w[o, t] * cols[t]                       (written once, in place)
//   dw[o, t] += sum_l dy[n, o, l] * cols[t, l],  db[o] += sum_l dy[n, o, l] * 1
// The weight and bias gradients are K + 1 dot products of each dy plane (read once, in
// vectors, with up to 8 sums in registers) with the rows of cols and a row of ones. Tasks
// (below) are split over the threads in contiguous ranges; the gradients are summed per plane
// in float, per thread in double, and the threads' sums added in thread order, so a thread
// count gives the same bits each run.
// Up to 16 taps: at 27 (3 channels of 3x3; 3 -> 32 channels, 32x32, batch 64, one AVX2 core)
// the GEMM's forward was faster (2.2 ms against 2.5) and the gradients took the same time.
constexpr int64_t kMaxTaps = 16;

bool taps_usable(const Shape& s) { return s.k <= kMaxTaps; }

// The distance of cols's rows: L rounded up to 16 elements, plus 16, so that the rows the
// kernels read side by side do not all fall in the same sets of the first-level cache (rows
// a multiple of 4 KiB apart, as for a 32x32 image, would).
int64_t tap_ld(const Shape& s) { return (s.l + 15) / 16 * 16 + 16; }

// GCC vectors of 32 bytes, loaded and stored unaligned through memcpy (no function takes or
// returns one: that would depend on the target's ABI).
template <class T>
struct TapVec {
  typedef T V __attribute__((vector_size(32)));
  static constexpr int64_t kLanes = int64_t(32 / sizeof(T));
};
#define WICK_TAP_LOAD(v, p) std::memcpy(&(v), (p), sizeof(v))

// out[l] = bias + sum_t w[t] * cols[t * ld + l] for l < L.
template <class T>
[[gnu::always_inline]] inline void taps_plane(const T* cols, int64_t ld, const T* w, T bias, T* out,
                                              int64_t k, int64_t L) {
  using V = typename TapVec<T>::V;
  constexpr int64_t n = TapVec<T>::kLanes;
  int64_t l = 0;
  for (; l + 4 * n <= L; l += 4 * n) {  // four vectors of outputs at a time
    V acc[4];
    for (int v = 0; v < 4; ++v) acc[v] = V{} + bias;
    for (int64_t t = 0; t < k; ++t) {
      const T wt = w[t];
      const T* in = cols + t * ld + l;
      for (int v = 0; v < 4; ++v) {
        V a;
        WICK_TAP_LOAD(a, in + v * n);
        acc[v] += wt * a;
      }
    }
    std::memcpy(out + l, acc, sizeof(acc));
  }
  for (; l + n <= L; l += n) {
    V acc = V{} + bias;
    for (int64_t t = 0; t < k; ++t) {
      V a;
      WICK_TAP_LOAD(a, cols + t * ld + l);
      acc += w[t] * a;
    }
    std::memcpy(out + l, &acc, sizeof(acc));
  }
  for (; l < L; ++l) {
    T acc = bias;
    for (int64_t t = 0; t < k; ++t) acc += w[t] * cols[t * ld + l];
    out[l] = acc;
  }
}

// taps_plane for 4 output channels at once (weights w[c * k + t], outputs out[c * L_out + l]):
// each vector of cols loaded is used by the 4 channels, 8 sums in registers.
template <class T>
[[gnu::always_inline]] inline void taps_plane4(const T* cols, int64_t ld, const T* w, const T* bias, T* out,
                                               int64_t ldo, int64_t k, int64_t L) {
  using V = typename TapVec<T>::V;
  constexpr int64_t n = TapVec<T>::kLanes;
  int64_t l = 0;
  for (; l + 2 * n <= L; l += 2 * n) {
    V acc[4][2];
    for (int c = 0; c < 4; ++c) acc[c][0] = acc[c][1] = V{} + bias[c];
    for (int64_t t = 0; t < k; ++t) {
      V a0, a1;
      WICK_TAP_LOAD(a0, cols + t * ld + l);
      WICK_TAP_LOAD(a1, cols + t * ld + l + n);
      for (int c = 0; c < 4; ++c) {
        const T wt = w[c * k + t];
        acc[c][0] += wt * a0;
        acc[c][1] += wt * a1;
      }
    }
    for (int c = 0; c < 4; ++c) std::memcpy(out + c * ldo + l, acc[c], sizeof(acc[c]));
  }
  if (l < L)
    for (int c = 0; c < 4; ++c) taps_plane(cols + l, ld, w + c * k, bias[c], out + c * ldo + l, k, L - l);
}

// sums[r] += sum_l dy[l] * rows[r * ld + l] for the G rows r < G: dy is read once, the G sums
// stay in registers.
template <int G, class T>
[[gnu::always_inline]] inline void taps_dots_group(const T* rows, int64_t ld, const T* dy, int64_t L,
                                                   double* sums) {
  using V = typename TapVec<T>::V;
  constexpr int64_t n = TapVec<T>::kLanes;
  V acc[G] = {};
  int64_t l = 0;
  for (; l + n <= L; l += n) {
    V d;
    WICK_TAP_LOAD(d, dy + l);
    for (int r = 0; r < G; ++r) {
      V a;
      WICK_TAP_LOAD(a, rows + r * ld + l);
      acc[r] += a * d;
    }
  }
  for (int r = 0; r < G; ++r) {
    T tail = 0;
    for (int64_t e = l; e < L; ++e) tail += rows[r * ld + e] * dy[e];
    double total = double(tail);
    for (int64_t e = 0; e < n; ++e) total += double(acc[r][e]);
    sums[r] += total;
  }
}

// sums[r] += sum_l dy[l] * rows[r * ld + l] for r < k1, in groups of up to 8 rows.
template <class T>
[[gnu::always_inline]] inline void taps_dots(const T* rows, int64_t ld, const T* dy, int64_t k1, int64_t L,
                                             double* sums) {
  for (int64_t r = 0; r < k1; r += 8) {
    const T* at = rows + r * ld;
    switch (std::min<int64_t>(k1 - r, 8)) {
      case 1:
        taps_dots_group<1>(at, ld, dy, L, sums + r);
        break;
      case 2:
        taps_dots_group<2>(at, ld, dy, L, sums + r);
        break;
      case 3:
        taps_dots_group<3>(at, ld, dy, L, sums + r);
        break;
      case 4:
        taps_dots_group<4>(at, ld, dy, L, sums + r);
        break;
      case 5:
        taps_dots_group<5>(at, ld, dy, L, sums + r);
        break;
      case 6:
        taps_dots_group<6>(at, ld, dy, L, sums + r);
        break;
      case 7:
        taps_dots_group<7>(at, ld, dy, L, sums + r);
        break;
      default:
        taps_dots_group<8>(at, ld, dy, L, sums + r);
        break;
    }
  }
}

// Forward tasks: (image, group, block of kTapPositions output positions), each computing its
// positions for the group's output channels, so that the block of cols is read from the
// first-level cache (cols [27, 1024] of a 32x32 RGB image is larger than it).
constexpr int64_t kTapPositions = 256;

int64_t tap_blocks(const Shape& s) { return (s.l + kTapPositions - 1) / kTapPositions; }

template <class T>
[[gnu::always_inline]] inline void taps_forward_range(const T* X, const T* W, const T* B, T* Y,
                                                      const Shape& s, T* cols, int64_t t0, int64_t t1) {
  const int64_t blocks = tap_blocks(s);
  int64_t have = -1;  // the (image, group) whose cols are built
  for (int64_t task = t0; task < t1; ++task) {
    const int64_t ng = task / blocks, l0 = task % blocks * kTapPositions;
    const int64_t n = ng / s.g, g = ng % s.g, len = std::min(kTapPositions, s.l - l0);
    if (ng != have) {
      im2col(X + (n * s.c + g * s.cg) * s.h * s.w, cols, s, tap_ld(s));
      have = ng;
    }
    int64_t o = g * s.og;
    for (; o + 4 <= (g + 1) * s.og; o += 4) {
      const T bias[4] = {B ? B[o] : T(0), B ? B[o + 1] : T(0), B ? B[o + 2] : T(0), B ? B[o + 3] : T(0)};
      taps_plane4(cols + l0, tap_ld(s), W + o * s.k, bias, Y + (n * s.o + o) * s.l + l0, s.l, s.k, len);
    }
    for (; o < (g + 1) * s.og; ++o)
      taps_plane(cols + l0, tap_ld(s), W + o * s.k, B ? B[o] : T(0), Y + (n * s.o + o) * s.l + l0, s.k, len);
  }
}

// Backward tasks: (image, output channel) pairs.
template <class T>
[[gnu::always_inline]] inline void taps_backward_range(const T* X, const T* DY, const Shape& s, T* cols,
                                                       double* sums, int64_t t0, int64_t t1) {
  int64_t have = -1;
  for (int64_t task = t0; task < t1; ++task) {
    const int64_t n = task / s.o, o = task % s.o, g = o / s.og;
    if (n * s.g + g != have) {
      im2col(X + (n * s.c + g * s.cg) * s.h * s.w, cols, s, tap_ld(s));  // row k stays ones: the bias's
      have = n * s.g + g;
    }
    taps_dots(cols, tap_ld(s), DY + (n * s.o + o) * s.l, s.k + 1, s.l, sums + o * (s.k + 1));
  }
}

// float32 compiled for AVX2 and AVX-512 too (as softmax.cpp).
WICK_CPU_CLONES void taps_forward_range_f32(const float* X, const float* W, const float* B, float* Y,
                                            const Shape& s, float* cols, int64_t t0, int64_t t1) {
  taps_forward_range(X, W, B, Y, s, cols, t0, t1);
}
WICK_CPU_CLONES void taps_backward_range_f32(const float* X, const float* DY, const Shape& s, float* cols,
                                             double* sums, int64_t t0, int64_t t1) {
  taps_backward_range(X, DY, s, cols, sums, t0, t1);
}

// Threads for the tasks: about 2^15 multiply-adds per thread at least.
int taps_threads(const Shape& s, int64_t tasks) {
  if (omp_in_parallel()) return 1;
  const int64_t work = s.n * s.o * s.k * s.l;
  return int(std::clamp<int64_t>(std::min(work >> 15, tasks), 1, cpu_num_threads()));
}

template <class T>
void taps_forward(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y, const Shape& s) {
  const T* X = static_cast<const T*>(x.data_ptr());
  const T* W = static_cast<const T*>(w.data_ptr());
  const T* B = b.defined() ? static_cast<const T*>(b.data_ptr()) : nullptr;
  T* Y = static_cast<T*>(y.data_ptr());
  const int64_t tasks = s.n * s.g * tap_blocks(s);
#pragma omp parallel num_threads(taps_threads(s, tasks))
  {
    std::vector<T> cols(size_t(s.k * tap_ld(s)));
    const int64_t k = omp_get_thread_num(), m = omp_get_num_threads();
    const int64_t t0 = tasks * k / m, t1 = tasks * (k + 1) / m;
    if constexpr (std::is_same_v<T, float>) taps_forward_range_f32(X, W, B, Y, s, cols.data(), t0, t1);
    else taps_forward_range(X, W, B, Y, s, cols.data(), t0, t1);
  }
}

// The weight and bias gradients (r[1], r[2], either may be undefined); no input gradient.
template <class T>
void taps_backward(const Tensor& dy, const Tensor& x, std::array<Tensor, 3>& r, const Shape& s) {
  const T* DY = static_cast<const T*>(dy.data_ptr());
  const T* X = static_cast<const T*>(x.data_ptr());
  const int64_t tasks = s.n * s.o, per = s.o * (s.k + 1);
  const int threads = taps_threads(s, tasks);
  std::vector<double> sums(size_t(threads * per), 0.0);
#pragma omp parallel num_threads(threads)
  {
    std::vector<T> cols(size_t((s.k + 1) * tap_ld(s)), T(1));  // [K + 1, L]: im2col's rows, then ones
    const int64_t k = omp_get_thread_num(), m = omp_get_num_threads();
    const int64_t t0 = tasks * k / m, t1 = tasks * (k + 1) / m;
    double* mine = sums.data() + k * per;
    if constexpr (std::is_same_v<T, float>) taps_backward_range_f32(X, DY, s, cols.data(), mine, t0, t1);
    else taps_backward_range(X, DY, s, cols.data(), mine, t0, t1);
  }
  T* DW = r[1].defined() ? static_cast<T*>(r[1].data_ptr()) : nullptr;
  T* DB = r[2].defined() ? static_cast<T*>(r[2].data_ptr()) : nullptr;
  for (int64_t o = 0; o < s.o; ++o)
    for (int64_t t = 0; t <= s.k; ++t) {
      double total = 0;
      for (int th = 0; th < threads; ++th) total += sums[size_t(th * per + o * (s.k + 1) + t)];
      if (t < s.k && DW) DW[o * s.k + t] = T(total);
      if (t == s.k && DB) DB[o] = T(total);
    }
}

template <class T>
void forward_impl(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y, const Shape& s) {
  const T* X = static_cast<const T*>(x.data_ptr());
  const T* W = static_cast<const T*>(w.data_ptr());
  const T* B = b.defined() ? static_cast<const T*>(b.data_ptr()) : nullptr;
  T* Y = static_cast<T*>(y.data_ptr());
#pragma omp parallel if (parallel_images(s))
  {
    std::vector<T> cols(s.direct ? 0 : size_t(s.k * s.l));
#pragma omp for schedule(static)
    for (int64_t n = 0; n < s.n; ++n)
      for (int64_t g = 0; g < s.g; ++g) {
        const T* xg = X + (n * s.c + g * s.cg) * s.h * s.w;
        T* yg = Y + (n * s.o + g * s.og) * s.l;
        if (B)
          for (int64_t oc = 0; oc < s.og; ++oc)
            std::fill(yg + oc * s.l, yg + (oc + 1) * s.l, B[g * s.og + oc]);
        const T* src = xg;
        if (!s.direct) {
          im2col(xg, cols.data(), s, s.l);
          src = cols.data();
        }
        gemm<T>(false, false, s.og, s.l, s.k, W + g * s.og * s.k, s.k, src, s.l, B ? T(1) : T(0), yg, s.l);
      }
  }
}

template <class T>
void backward_impl(const Tensor& dy, const Tensor& x, const Tensor& w, std::array<Tensor, 3>& r,
                   const Shape& s) {
  const T* DY = static_cast<const T*>(dy.data_ptr());
  const T* X = static_cast<const T*>(x.data_ptr());
  const T* W = static_cast<const T*>(w.data_ptr());
  T* DX = r[0].defined() ? static_cast<T*>(r[0].data_ptr()) : nullptr;
  T* DW = r[1].defined() ? static_cast<T*>(r[1].data_ptr()) : nullptr;
  T* DB = r[2].defined() ? static_cast<T*>(r[2].data_ptr()) : nullptr;

  // Per output channel, the sum of dy over images and positions, in double (in vector lanes
  // along each row).
  auto row_sum = [&](int64_t n, int64_t oc) {
    const T* row = DY + (n * s.o + oc) * s.l;
    double part = 0;
#pragma omp simd reduction(+ : part)
    for (int64_t t = 0; t < s.l; ++t) part += double(row[t]);
    return part;
  };
  if (DB && !DX && !DW) {  // the bias gradient alone: a pass of its own over dy
#pragma omp parallel for if (s.n * s.o * s.l >= (int64_t(1) << 16)) schedule(static)
    for (int64_t oc = 0; oc < s.o; ++oc) {
      double acc = 0;
      for (int64_t n = 0; n < s.n; ++n) acc += row_sum(n, oc);
      DB[oc] = T(acc);
    }
    return;
  }
  if (!DX && !DW) return;

  // Each thread sums its images' weight gradients in its own [O, K] buffer, and their bias
  // gradients (while the image's dy is in cache) in its own [O] doubles; the buffers are added
  // in thread order afterwards, so a given thread count gives the same result each run.
  const bool par = parallel_images(s);
  const int threads = par ? omp_get_max_threads() : 1;
  std::vector<std::vector<T>> dw_parts(size_t(DW ? threads : 0));
  std::vector<std::vector<double>> db_parts(size_t(DB ? threads : 0));
#pragma omp parallel num_threads(threads) if (par)
  {
    const int t = omp_get_thread_num();
    T* dw = nullptr;
    if (DW) {
      dw_parts[size_t(t)].assign(size_t(s.o * s.k), T(0));
      dw = dw_parts[size_t(t)].data();
    }
    double* db = nullptr;
    if (DB) {
      db_parts[size_t(t)].assign(size_t(s.o), 0.0);
      db = db_parts[size_t(t)].data();
    }
    std::vector<T> cols(DW && !s.direct ? size_t(s.k * s.l) : 0);
    std::vector<T> dcols(DX && !s.direct ? size_t(s.k * s.l) : 0);
#pragma omp for schedule(static)
    for (int64_t n = 0; n < s.n; ++n)
      for (int64_t g = 0; g < s.g; ++g) {
        const T* dyg = DY + (n * s.o + g * s.og) * s.l;
        const T* wg = W + g * s.og * s.k;
        const int64_t xoff = (n * s.c + g * s.cg) * s.h * s.w;
        if (DW) {
          const T* src = X + xoff;
          if (!s.direct) {
            im2col(X + xoff, cols.data(), s, s.l);
            src = cols.data();
          }
          gemm<T>(false, true, s.og, s.k, s.l, dyg, s.l, src, s.l, T(1), dw + g * s.og * s.k, s.k);
        }
        if (DX) {
          if (s.direct) {
            gemm<T>(true, false, s.k, s.l, s.og, wg, s.k, dyg, s.l, T(0), DX + xoff, s.l);
          } else {
            gemm<T>(true, false, s.k, s.l, s.og, wg, s.k, dyg, s.l, T(0), dcols.data(), s.l);
            std::fill(DX + xoff, DX + xoff + s.cg * s.h * s.w, T(0));  // col2im accumulates
            col2im(dcols.data(), DX + xoff, s);
          }
        }
        if (DB)
          for (int64_t oc = g * s.og; oc < (g + 1) * s.og; ++oc) db[oc] += row_sum(n, oc);
      }
  }
  if (DB) {
    for (int64_t oc = 0; oc < s.o; ++oc) {
      double acc = 0;
      for (const std::vector<double>& part : db_parts)
        if (!part.empty()) acc += part[size_t(oc)];
      DB[oc] = T(acc);
    }
  }
  if (DW) {
    // A thread the runtime did not start left its buffer empty.
    std::fill(DW, DW + s.o * s.k, T(0));
    for (const std::vector<T>& part : dw_parts)
      if (!part.empty())
        for (int64_t e = 0; e < s.o * s.k; ++e) DW[e] += part[size_t(e)];
  }
}

thread_local ConvPath last_path = ConvPath::Auto;

}  // namespace

ConvPath conv_last_path() { return last_path; }

ConvPath conv_path() {
  const char* v = std::getenv("WICK_CPU_CONV");
  if (!v) return ConvPath::Auto;
  const std::string_view name(v);
  if (name == "auto" || name.empty()) return ConvPath::Auto;
  if (name == "dnnl") return ConvPath::Dnnl;
  if (name == "im2col") return ConvPath::Own;
  raise<ValueError>("conv2d", "WICK_CPU_CONV must be auto, dnnl or im2col, got \"", name, "\"");
}

Tensor conv2d_forward(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dParams& p) {
  const Shape s = shape_of(x, w, p);
  if (!usable(x, w, s) || (b.defined() && b.dtype() != x.dtype())) return generic_conv2d_forward(x, w, b, p);
  const ConvPath path = conv_path();
  const Tensor xc = x.contiguous(), wc = w.contiguous(), bc = b.defined() ? b.contiguous() : b;
  Tensor y;
  last_path = ConvPath::Dnnl;
  if (path != ConvPath::Own && dnnl_conv2d_forward(xc, wc, bc, p, s.oh, s.ow, path == ConvPath::Dnnl, y))
    return y;
  last_path = ConvPath::Own;
  y = wick::empty({s.n, s.o, s.oh, s.ow}, x.options());
  if (taps_usable(s)) {
    if (x.dtype() == kFloat32) taps_forward<float>(xc, wc, bc, y, s);
    else taps_forward<double>(xc, wc, bc, y, s);
    return y;
  }
  if (x.dtype() == kFloat32) forward_impl<float>(xc, wc, bc, y, s);
  else forward_impl<double>(xc, wc, bc, y, s);
  return y;
}

std::array<Tensor, 3> conv2d_backward(const Tensor& dy, const Tensor& x, const Tensor& w,
                                          const Conv2dParams& p, std::array<bool, 3> needs) {
  const Shape s = shape_of(x, w, p);
  if (!usable(x, w, s) || dy.dtype() != x.dtype()) return generic_conv2d_backward(dy, x, w, p, needs);
  const ConvPath path = conv_path();
  const Tensor dyc = dy.contiguous(), xc = x.contiguous(), wc = w.contiguous();
  std::array<Tensor, 3> r;
  last_path = ConvPath::Dnnl;
  if (path != ConvPath::Own && dnnl_conv2d_backward(dyc, xc, wc, p, needs, path == ConvPath::Dnnl, r))
    return r;
  last_path = ConvPath::Own;
  if (!needs[0] && taps_usable(s)) {  // weight and bias gradients only: no im2col
    if (needs[1]) r[1] = wick::empty(w.sizes(), w.options());
    if (needs[2]) r[2] = wick::empty({s.o}, w.options());
    if (x.dtype() == kFloat32) taps_backward<float>(dyc, xc, r, s);
    else taps_backward<double>(dyc, xc, r, s);
    return r;
  }
  // The input gradient is written image by image (zeroed there before col2im adds to it).
  if (needs[0]) r[0] = wick::empty(x.sizes(), x.options());
  if (needs[1]) r[1] = wick::empty(w.sizes(), w.options());
  if (needs[2]) r[2] = wick::empty({s.o}, w.options());
  if (x.dtype() == kFloat32) backward_impl<float>(dyc, xc, wc, r, s);
  else backward_impl<double>(dyc, xc, wc, r, s);
  return r;
}

}  // namespace wick::detail::cpu
