// softmax and log_softmax on the CPU over the middle dim of a contiguous [outer, n, inner]
// tensor, numerically stable: the row maximum is subtracted before exp, so no exp overflows.
//
// inner == 1 (softmax over the last dim): each row is three unit-stride passes (max; exp,
// written and summed; scale), the row staying in the first-level cache after the first. inner > 1: a block of
// up to kBlock adjacent columns is processed together so the innermost loop walks contiguous memory and
// vectorizes. Tasks (rows or column blocks) are split among threads; the backward (softmax_backward)
// walks the same tasks. Arithmetic is in float for 16-bit floats, in the dtype otherwise; exp is
// vec_math.h's, which vectorizes (see unary.cpp for no-trapping-math).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif
#include <algorithm>
#include <cmath>
#include <cstring>

#include <omp.h>

#include "cpu/kernels.h"
#include "cpu/loops.h"
#include "cpu/vec_math.h"

namespace wick::detail::cpu {

namespace {

constexpr int64_t kBlock = 64;

// Row passes keep kLanes partial maxima/sums so that the loops vectorize (a single running
// sum is a dependency chain the compiler may not reorder).
constexpr int64_t kLanes = 16;

template <class M, class T, class F>
[[gnu::always_inline]] inline M lane_sum(const T* x, int64_t n, F f) {
  M acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int64_t k = 0; k < kLanes; ++k) acc[k] += f(M(x[i + k]));
  M s = 0;
  for (; i < n; ++i) s += f(M(x[i]));
  for (int64_t k = 0; k < kLanes; ++k) s += acc[k];
  return s;
}

template <class M, class T>
[[gnu::always_inline]] inline M row_max(const T* x, int64_t n) {
#if defined(__GNUC__) && !defined(__clang__)
  if constexpr (std::is_same_v<T, float>) {
    // GCC leaves the array version scalar (a < b ? b : a is no MAX_EXPR while NaNs are
    // possible); written on vectors, it is one compare-and-select per vector.
    typedef float V __attribute__((vector_size(32)));
    V a0 = V{} - INFINITY, a1 = a0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
      V v0, v1;
      std::memcpy(&v0, x + i, sizeof(V));
      std::memcpy(&v1, x + i + 8, sizeof(V));
      a0 = a0 < v0 ? v0 : a0;
      a1 = a1 < v1 ? v1 : a1;
    }
    float mx = -INFINITY;
    for (; i < n; ++i) mx = mx < x[i] ? x[i] : mx;
    for (int k = 0; k < 8; ++k) {
      mx = mx < a0[k] ? a0[k] : mx;
      mx = mx < a1[k] ? a1[k] : mx;
    }
    return mx;  // as below
  }
#endif
  M acc[kLanes];
  for (auto& a : acc) a = -INFINITY;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int64_t k = 0; k < kLanes; ++k) acc[k] = acc[k] < M(x[i + k]) ? M(x[i + k]) : acc[k];
  M mx = -INFINITY;
  for (; i < n; ++i) mx = mx < M(x[i]) ? M(x[i]) : mx;
  for (int64_t k = 0; k < kLanes; ++k) mx = mx < acc[k] ? acc[k] : mx;
  return mx;  // a NaN is skipped here but makes every exp, and so the row, NaN
}

template <class T>
[[gnu::always_inline]] inline void softmax_row(bool log, const T* x, T* y, int64_t n) {
  using M = opmath_t<T>;
  const M mx = row_max<M>(x, n);
  // A row of -inf only gives nan (-inf - -inf), as PyTorch does.
  if (log) {
    // (x - max) - log(sum), in that order as PyTorch: max + log(sum) first would lose the
    // logarithm next to a large maximum (rows of 1e30 gave 0 instead of -log(n)).
    const M lse = std::log(lane_sum<M>(x, n, [mx](M v) { return vexp(v - mx); }));
    for (int64_t i = 0; i < n; ++i) y[i] = T((M(x[i]) - mx) - lse);
    return;
  }
  if constexpr (std::is_same_v<T, M>) {  // write the exps and sum them in one pass, then scale
    // The same lanes and order as lane_sum over the written exps.
    M acc[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
      for (int64_t k = 0; k < kLanes; ++k) {
        const M e = vexp(x[i + k] - mx);
        y[i + k] = e;
        acc[k] += e;
      }
    M sum = 0;
    for (; i < n; ++i) {
      const M e = vexp(x[i] - mx);
      y[i] = e;
      sum += e;
    }
    for (int64_t k = 0; k < kLanes; ++k) sum += acc[k];
    const M inv = M(1) / sum;
    for (int64_t i = 0; i < n; ++i) y[i] *= inv;
  } else {  // 16-bit: don't round the exps before normalizing
    const M inv = M(1) / lane_sum<M>(x, n, [mx](M v) { return vexp(v - mx); });
    for (int64_t i = 0; i < n; ++i) y[i] = T(vexp(M(x[i]) - mx) * inv);
  }
}

// Columns j0 .. j0 + jn of one [n, inner] slice.
template <class T>
[[gnu::always_inline]] inline void softmax_cols(bool log, const T* x, T* y, int64_t n, int64_t inner,
                                                int64_t jn) {
  using M = opmath_t<T>;
  M mx[kBlock], sum[kBlock];
  for (int64_t j = 0; j < jn; ++j) {
    mx[j] = -INFINITY;
    sum[j] = 0;
  }
  for (int64_t r = 0; r < n; ++r)
    for (int64_t j = 0; j < jn; ++j) mx[j] = mx[j] < M(x[r * inner + j]) ? M(x[r * inner + j]) : mx[j];
  for (int64_t r = 0; r < n; ++r)
    for (int64_t j = 0; j < jn; ++j) sum[j] += vexp(M(x[r * inner + j]) - mx[j]);
  if (log) {
    for (int64_t j = 0; j < jn; ++j) sum[j] = std::log(sum[j]);  // as the rows: (x - max) - log(sum)
    for (int64_t r = 0; r < n; ++r)
      for (int64_t j = 0; j < jn; ++j) y[r * inner + j] = T((M(x[r * inner + j]) - mx[j]) - sum[j]);
  } else {
    for (int64_t j = 0; j < jn; ++j) sum[j] = M(1) / sum[j];
    for (int64_t r = 0; r < n; ++r)
      for (int64_t j = 0; j < jn; ++j) y[r * inner + j] = T(vexp(M(x[r * inner + j]) - mx[j]) * sum[j]);
  }
}

// Tasks [t0, t1): rows (inner == 1) or column blocks of the [outer, n, inner] input.
template <class T>
[[gnu::always_inline]] inline void softmax_tasks(bool log, const T* x, T* y, int64_t n, int64_t inner,
                                                 int64_t blocks, int64_t t0, int64_t t1) {
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t o = t / blocks;
    if (inner == 1) {
      softmax_row(log, x + o * n, y + o * n, n);
    } else {
      const int64_t j0 = (t % blocks) * kBlock;
      const int64_t off = o * n * inner + j0;
      softmax_cols(log, x + off, y + off, n, inner, std::min(kBlock, inner - j0));
    }
  }
}

// float32 compiled again for AVX2 and AVX-512, chosen at load time by the CPU's features: the
// exp polynomial and the lane sums are the same operations in wider registers, so every
// version gives the same bits (no FMA contraction: the build is ISO C++).
WICK_CPU_CLONES void softmax_tasks_f32(bool log, const float* x, float* y, int64_t n, int64_t inner,
                                       int64_t blocks, int64_t t0, int64_t t1) {
  softmax_tasks(log, x, y, n, inner, blocks, t0, t1);
}

// Rows [r0, r1) of the causal softmax: row r over its first r % l + 1 columns, zeros after.
template <class T>
[[gnu::always_inline]] inline void causal_rows(const T* x, T* y, int64_t n, int64_t l, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t m = std::min(n, r % l + 1);
    softmax_row(false, x + r * n, y + r * n, m);
    std::fill(y + r * n + m, y + (r + 1) * n, T(0));
  }
}

WICK_CPU_CLONES void causal_rows_f32(const float* x, float* y, int64_t n, int64_t l, int64_t r0, int64_t r1) {
  causal_rows(x, y, n, l, r0, r1);
}

template <class T>
void causal_softmax_typed(const Tensor& out, const Tensor& in, int64_t l) {
  const int64_t rows = in.size(0), n = in.size(1);
  const T* x = static_cast<const T*>(in.data_ptr());
  T* y = static_cast<T*>(out.data_ptr());
  // About half of each row is read: the work is rows * n / 2.
  const int nt = threads_for(rows * n / 2, rows);
  auto run = [&](int64_t r0, int64_t r1) {
    if constexpr (std::is_same_v<T, float>) causal_rows_f32(x, y, n, l, r0, r1);
    else causal_rows(x, y, n, l, r0, r1);
  };
  if (nt == 1) return run(0, rows);
#pragma omp parallel num_threads(nt)
  {
    const int64_t k = omp_get_thread_num(), m = omp_get_num_threads();
    run(rows * k / m, rows * (k + 1) / m);
  }
}

template <class T>
void softmax_typed(bool log, const Tensor& out, const Tensor& in) {
  const int64_t outer = in.size(0), n = in.size(1), inner = in.size(2);
  const T* x = static_cast<const T*>(in.data_ptr());
  T* y = static_cast<T*>(out.data_ptr());
  const int64_t blocks = inner == 1 ? 1 : (inner + kBlock - 1) / kBlock;
  const int64_t tasks = outer * blocks;
  const int nt = threads_for(outer * n * inner, tasks);
  auto run = [&](int64_t t0, int64_t t1) {
    if constexpr (std::is_same_v<T, float>) softmax_tasks_f32(log, x, y, n, inner, blocks, t0, t1);
    else softmax_tasks(log, x, y, n, inner, blocks, t0, t1);
  };
  if (nt == 1) return run(0, tasks);
#pragma omp parallel num_threads(nt)
  {
    const int64_t k = omp_get_thread_num(), m = omp_get_num_threads();
    run(tasks * k / m, tasks * (k + 1) / m);
  }
}

// The backward of one [n, inner] slice, columns j0 .. j0 + jn (inner == 1: one row).
template <class T>
[[gnu::always_inline]] inline void softmax_backward_cols(bool log, const T* g, const T* y, T* gi, int64_t n,
                                                         int64_t inner, int64_t jn) {
  using M = opmath_t<T>;
  M sum[kBlock];
  for (int64_t j = 0; j < jn; ++j) sum[j] = 0;
  for (int64_t r = 0; r < n; ++r)
    for (int64_t j = 0; j < jn; ++j) {
      const int64_t k = r * inner + j;
      sum[j] += log ? M(g[k]) : M(g[k]) * M(y[k]);
    }
  for (int64_t r = 0; r < n; ++r)
    for (int64_t j = 0; j < jn; ++j) {
      const int64_t k = r * inner + j;
      gi[k] = log ? T(M(g[k]) - vexp(M(y[k])) * sum[j]) : T(M(y[k]) * (M(g[k]) - sum[j]));
    }
}

// Backward tasks [t0, t1), as softmax_tasks.
template <class T>
[[gnu::always_inline]] inline void softmax_backward_tasks(bool log, const T* g, const T* y, T* gi, int64_t n,
                                                          int64_t inner, int64_t blocks, int64_t t0,
                                                          int64_t t1) {
  using M = opmath_t<T>;
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t o = t / blocks;
    if (inner == 1) {
      const T* gr = g + o * n;
      const T* yr = y + o * n;
      T* out = gi + o * n;
      const M s = log ? lane_sum<M>(gr, n, [](M v) { return v; }) : [&] {
        M acc = 0;
        for (int64_t i = 0; i < n; ++i) acc += M(gr[i]) * M(yr[i]);
        return acc;
      }();
      if (log) {
        for (int64_t i = 0; i < n; ++i) out[i] = T(M(gr[i]) - vexp(M(yr[i])) * s);
      } else {
        for (int64_t i = 0; i < n; ++i) out[i] = T(M(yr[i]) * (M(gr[i]) - s));
      }
    } else {
      const int64_t j0 = (t % blocks) * kBlock;
      const int64_t off = o * n * inner + j0;
      softmax_backward_cols(log, g + off, y + off, gi + off, n, inner, std::min(kBlock, inner - j0));
    }
  }
}

WICK_CPU_CLONES void softmax_backward_tasks_f32(bool log, const float* g, const float* y, float* gi,
                                                int64_t n, int64_t inner, int64_t blocks, int64_t t0,
                                                int64_t t1) {
  softmax_backward_tasks(log, g, y, gi, n, inner, blocks, t0, t1);
}

template <class T>
void softmax_backward_typed(bool log, const Tensor& grad_input, const Tensor& grad, const Tensor& result) {
  const int64_t outer = result.size(0), n = result.size(1), inner = result.size(2);
  const T* g = static_cast<const T*>(grad.data_ptr());
  const T* y = static_cast<const T*>(result.data_ptr());
  T* gi = static_cast<T*>(grad_input.data_ptr());
  const int64_t blocks = inner == 1 ? 1 : (inner + kBlock - 1) / kBlock;
  const int64_t tasks = outer * blocks;
  const int nt = threads_for(outer * n * inner, tasks);
  auto run = [&](int64_t t0, int64_t t1) {
    if constexpr (std::is_same_v<T, float>)
      softmax_backward_tasks_f32(log, g, y, gi, n, inner, blocks, t0, t1);
    else softmax_backward_tasks(log, g, y, gi, n, inner, blocks, t0, t1);
  };
  if (nt == 1) return run(0, tasks);
#pragma omp parallel num_threads(nt)
  {
    const int64_t k = omp_get_thread_num(), m = omp_get_num_threads();
    run(tasks * k / m, tasks * (k + 1) / m);
  }
}

}  // namespace

void softmax_backward(bool log, const Tensor& grad_input, const Tensor& grad, const Tensor& result) {
  if (result.numel() == 0) return;
  WICK_DISPATCH_FLOATING(result.dtype(), log ? "log_softmax_backward" : "softmax_backward",
                         [&]<class T>() { softmax_backward_typed<T>(log, grad_input, grad, result); });
}

void softmax(bool log, const Tensor& out, const Tensor& in) {
  if (in.numel() == 0) return;
  WICK_DISPATCH_FLOATING(in.dtype(), log ? "log_softmax" : "softmax",
                         [&]<class T>() { softmax_typed<T>(log, out, in); });
}

void causal_softmax(const Tensor& out, const Tensor& in, int64_t l) {
  if (in.numel() == 0) return;
  WICK_DISPATCH_FLOATING(in.dtype(), "softmax", [&]<class T>() { causal_softmax_typed<T>(out, in, l); });
}

}  // namespace wick::detail::cpu
