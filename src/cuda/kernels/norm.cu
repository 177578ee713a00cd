/* LayerNorm and RMSNorm on CUDA: the norm_forward and norm_backward entries
 * (core/kernel_table.h) over the rows of a contiguous [m, n] tensor.
 *
 * A row belongs to a group of G threads: a warp (G = 32, eight rows to a 256-thread block) when
 * it fits the warp's registers (kCache vectors of 16 bytes a thread: 1024 16-bit floats, 512
 * floats, 256 doubles), a block (G = 256) when it fits the block's (eight times that), else a
 * block that walks the row in a loop, reading it again from L2. In the first two cases a thread
 * holds the elements [(u G + lane) VEC, + VEC) for u < kCache, loaded with 16-byte vectors
 * when n is a multiple of VEC and the pointers are aligned (else element by element, bounds
 * checked), so the row crosses device memory once each way:
 * - forward: one kernel; the mean, then the centred sum of squares, from the registers (two
 *   passes, exact), rstd = 1 / sqrt(var + eps), then y written.
 * - backward: dx in one kernel (a group per row: the sums of g and g xhat over the row, then
 *   dx); the same kernel adds dy xhat and dy into per-thread partial sums of the thread's
 *   columns over the rows it visits, combines a block's warps in shared memory in warp order,
 *   and writes one partial row per block; a second small kernel adds the partial rows into
 *   dweight and dbias, in an order fixed by their count (sum_parts). The grid is fixed by the device, so the sums are the same on
 *   every run.
 * Arithmetic in float for 16-bit floats and float32, double for float64.
 */
#include "cuda/kernels/block_reduce.cuh"
#include "cuda/kernels/column_sums.cuh"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/elementwise.cuh"
#include "cuda/kernels/op_kernels.h"

#include <atomic>

namespace wick::detail::gpu {

namespace {

constexpr int kCache = 4;  // 16-byte vectors of a row per thread, kept in registers
// The fused add_norm kernels (float32 rows) with a 16-bit output keep up to 8 vectors a thread
// with a warp a row, so that GPT-2's 768 (6 vectors) stays warp-per-row; their other instances
// are 1, 2 and 4. With a float32 output, 6 vectors spilled: those stay at 4.
constexpr int kCacheFuse = 8;

// The most elements of a row a warp keeps (warp per row) for these instances.
template <bool kFuse, class Y>
constexpr int64_t warp_row_max(int vec) {
  return int64_t(32) * (kFuse && sizeof(Y) == 2 ? kCacheFuse : kCache) * vec;
}

// Whether rows of n elements (vec a vector) take a warp each. The fused 16-bit instances keep
// GPT-2's 768 in a warp: measured against a block a row on an H100 (docs/performance.md), the
// warp was the faster of the two.
template <bool kFuse, class Y>
bool warp_per_row(int64_t n, int vec) {
  return n <= warp_row_max<kFuse, Y>(vec);
}

// Calls launch.template operator()<U>() for the U (vectors a thread holds) that covers u: the
// plain kernels' 1..4, the fused ones' 1, 2, 4, and with a warp a row 6 and 8.
template <bool kFuse, int G, class Y, class L>
void with_vectors(int64_t u, const L& launch) {
  if (u <= 1) launch.template operator()<1>();
  else if (u == 2) launch.template operator()<2>();
  else if constexpr (!kFuse) {
    if (u == 3) launch.template operator()<3>();
    else launch.template operator()<4>();
  } else if constexpr (G == 32 && sizeof(Y) == 2) {
    if (u <= 4) launch.template operator()<4>();
    else if (u <= 6) launch.template operator()<6>();
    else launch.template operator()<8>();
  } else {
    launch.template operator()<4>();
  }
}

// The sum of v over the group (a warp, or the block), in every thread of it. Every thread of
// the group must call it.
template <int G, class M>
__device__ __forceinline__ M group_sum(M v) {
  if constexpr (G == 32) {
#pragma unroll
    for (int d = 16; d > 0; d /= 2) v += __shfl_xor_sync(0xffffffffu, v, d);
    return v;
  } else {
    return block_all_reduce(v, SumMerge{}, M(0));
  }
}

// VEC values of p from element i (i < n) as M: with 16-byte vectors when aligned (then i + VEC
// <= n), else one by one, 0 beyond n.
template <int VEC, class P, class M>
__device__ __forceinline__ void load(const P* p, int64_t i, bool aligned, int64_t n, M (&out)[VEC]) {
  if (aligned) {
    constexpr int PV = int(16 / sizeof(P)) < VEC ? int(16 / sizeof(P)) : VEC;
#pragma unroll
    for (int h = 0; h < VEC; h += PV) {
      const Vec<P, PV> a = *reinterpret_cast<const Vec<P, PV>*>(p + i + h);
#pragma unroll
      for (int k = 0; k < PV; ++k) out[h + k] = cast<M>(a.v[k]);
    }
  } else {
#pragma unroll
    for (int k = 0; k < VEC; ++k) out[k] = i + k < n ? cast<M>(p[i + k]) : M(0);
  }
}

// VEC values of p from element i into raw (p's own type, 0 beyond n): 16 bytes a load when
// aligned. The kernels load every vector of a row this way before using any, so that a row's
// loads are in flight together (converted to M where they are used, they were issued one
// vector after another under register pressure).
template <int VEC, class P>
__device__ __forceinline__ void load_raw(const P* p, int64_t i, bool aligned, int64_t n, Vec<P, VEC>& raw) {
  if (aligned) {
    constexpr int PV = int(16 / sizeof(P)) < VEC ? int(16 / sizeof(P)) : VEC;
#pragma unroll
    for (int h = 0; h < VEC; h += PV)
      *reinterpret_cast<Vec<P, PV>*>(raw.v + h) = *reinterpret_cast<const Vec<P, PV>*>(p + i + h);
  } else {
#pragma unroll
    for (int k = 0; k < VEC; ++k) raw.v[k] = i + k < n ? p[i + k] : P(0);
  }
}

template <int VEC, class T, class M>
__device__ __forceinline__ void store(T* p, int64_t i, bool aligned, int64_t n, const M (&v)[VEC]) {
  if (aligned) {
    Vec<T, VEC> o;
#pragma unroll
    for (int k = 0; k < VEC; ++k) o.v[k] = cast<T>(v[k]);
    *reinterpret_cast<Vec<T, VEC>*>(p + i) = o;
  } else {
#pragma unroll
    for (int k = 0; k < VEC; ++k)
      if (i + k < n) p[i + k] = cast<T>(v[k]);
  }
}

// a + b rounded once, never contracted with a product before it into an fma (the add kernel's
// rounding, which the composed add_norm gradients have).
__device__ __forceinline__ float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add_rn(double a, double b) { return __dadd_rn(a, b); }

// ---- forward

// U (<= kCache): the vectors a thread holds of a row, the fewest that cover n (as the
// backward's), so that a short row does not pay the registers of the longest one.
// Y: y's type (add_norm_forward's 16-bit output; T otherwise). kFuse (add_norm_forward's
// instances, apart so that the plain ones keep their registers): with delta, the row is
// x + delta, written to s.
template <class T, class W, int G, int U, class Y = T, bool kFuse = false>
__global__ void __launch_bounds__(kBlock, U * int(16 / sizeof(T)) <= 24 ? 4 : 2)
    forward_cached(const T* x, const Y* delta, T* s_out, Y* y, const W* w, const W* b, opmath_t<T>* mean,
                   opmath_t<T>* rstd, int64_t m, int64_t n, opmath_t<T> eps, bool rms, bool aligned) {
  using M = opmath_t<T>;
  constexpr int VEC = int(16 / sizeof(T));
  constexpr int R = kBlock / G;
  const int lane = int(threadIdx.x) % G;
  for (int64_t row = int64_t(blockIdx.x) * R + threadIdx.x / G; row < m; row += int64_t(gridDim.x) * R) {
    const T* xr = x + row * n;
    Y* yr = y + row * n;
    Vec<T, VEC> v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t i = (int64_t(u) * G + lane) * VEC;
      if (i < n) {
        load_raw<VEC>(xr, i, aligned, n, v[u]);
      } else {
#pragma unroll
        for (int k = 0; k < VEC; ++k) v[u].v[k] = cast<T>(0.0f);
      }
    }
    if (kFuse && delta) {  // uniform over the grid
      Vec<Y, VEC> d[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int64_t i = (int64_t(u) * G + lane) * VEC;
        if (i < n) load_raw<VEC>(delta + row * n, i, aligned, n, d[u]);
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int64_t i = (int64_t(u) * G + lane) * VEC;
        if (i >= n) continue;
        M sum[VEC];
#pragma unroll
        for (int k = 0; k < VEC; ++k) {
          sum[k] = cast<M>(v[u].v[k]) + cast<M>(d[u].v[k]);
          v[u].v[k] = cast<T>(sum[k]);
        }
        store<VEC>(s_out + row * n, i, aligned, n, sum);
      }
    }
    M s = 0;
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int k = 0; k < VEC; ++k) s += cast<M>(v[u].v[k]);  // 0 beyond n
    const M mu = rms ? M(0) : group_sum<G>(s) / M(n);
    M q = 0;
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t i = (int64_t(u) * G + lane) * VEC;
#pragma unroll
      for (int k = 0; k < VEC; ++k)
        if (i + k < n) {
          const M d = cast<M>(v[u].v[k]) - mu;
          q += d * d;
        }
    }
    const M rs = M(1) / m_sqrt(group_sum<G>(q) / M(n) + eps);
    if (lane == 0) {
      if (mean) mean[row] = mu;
      if (rstd) rstd[row] = rs;
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t i = (int64_t(u) * G + lane) * VEC;
      if (i >= n) continue;
      M o[VEC], p[VEC];
#pragma unroll
      for (int k = 0; k < VEC; ++k) o[k] = (cast<M>(v[u].v[k]) - mu) * rs;
      if (w) {
        load<VEC>(w, i, aligned, n, p);
#pragma unroll
        for (int k = 0; k < VEC; ++k) o[k] *= p[k];
      }
      if (b) {
        load<VEC>(b, i, aligned, n, p);
#pragma unroll
        for (int k = 0; k < VEC; ++k) o[k] += p[k];
      }
      store<VEC>(yr, i, aligned, n, o);
    }
  }
}

// Rows too long for the registers: a block per row, three passes (mean, centred squares, y).
// With delta, a first pass writes the row of x + delta to s, which the others read.
template <class T, class W, class Y = T, bool kFuse = false>
__global__ void __launch_bounds__(kBlock)
    forward_loop(const T* x, const Y* delta, T* s_out, Y* y, const W* w, const W* b, opmath_t<T>* mean,
                 opmath_t<T>* rstd, int64_t m, int64_t n, opmath_t<T> eps, bool rms) {
  using M = opmath_t<T>;
  for (int64_t row = blockIdx.x; row < m; row += gridDim.x) {
    const T* xr = x + row * n;
    Y* yr = y + row * n;
    if (kFuse && delta) {  // uniform over the grid; each thread rereads only the elements it wrote
      for (int64_t i = threadIdx.x; i < n; i += kBlock)
        s_out[row * n + i] = cast<T>(cast<M>(xr[i]) + cast<M>(delta[row * n + i]));
      xr = s_out + row * n;
    }
    M mu = 0;
    if (!rms) {
      M s = 0;
      for (int64_t i = threadIdx.x; i < n; i += kBlock) s += cast<M>(xr[i]);
      mu = group_sum<kBlock>(s) / M(n);
    }
    M q = 0;
    for (int64_t i = threadIdx.x; i < n; i += kBlock) {
      const M d = cast<M>(xr[i]) - mu;
      q += d * d;
    }
    const M rs = M(1) / m_sqrt(group_sum<kBlock>(q) / M(n) + eps);
    if (threadIdx.x == 0) {
      if (mean) mean[row] = mu;
      if (rstd) rstd[row] = rs;
    }
    for (int64_t i = threadIdx.x; i < n; i += kBlock) {
      M o = (cast<M>(xr[i]) - mu) * rs;
      if (w) o *= cast<M>(w[i]);
      if (b) o += cast<M>(b[i]);
      yr[i] = cast<Y>(o);
    }
  }
}

// ---- backward

// dx of the group's rows (when dx), and the block's partial row of sum(dy xhat) and sum(dy)
// (when part_w, part_b: [gridDim.x, n]). U (<= kCache): the vectors a thread holds of a row,
// the fewest that cover n. A thread holds a row's x and dy as loaded (16-bit floats stay 16-bit)
// and computes x hat and g w from them twice (for the row's sums, then for dx), so that a row's
// loads are all in flight at once and the registers stay few:
// - G = 32 (a warp a row): the partial sums of a warp's columns live in its own slice of
//   shared memory (dynamic: R warps x 2 x n values), each lane adding into the columns it
//   loads, so no two lanes meet; the block's warps are added in warp order at the end. Kept in
//   registers beside x hat and dy, a row of 768 16-bit floats took 128 registers and spilled,
//   two blocks an SM, and its loads went out one vector after another.
// - G = kBlock (a block a row): each thread keeps its columns' sums in registers.
template <int VEC, class M>
__device__ __forceinline__ void add_into(M* acc, int64_t i, bool aligned, int64_t n, const M (&v)[VEC]) {
  if (aligned) {
    constexpr int PV = int(16 / sizeof(M)) < VEC ? int(16 / sizeof(M)) : VEC;
#pragma unroll
    for (int h = 0; h < VEC; h += PV) {
      Vec<M, PV>& a = *reinterpret_cast<Vec<M, PV>*>(acc + i + h);
      Vec<M, PV> t = a;
#pragma unroll
      for (int k = 0; k < PV; ++k) t.v[k] += v[h + k];
      a = t;
    }
  } else {
#pragma unroll
    for (int k = 0; k < VEC; ++k)
      if (i + k < n) acc[i + k] += v[k];
  }
}

// Y: dy's type (add_norm_backward's 16-bit gradient of y; T otherwise). kFuse
// (add_norm_backward's instances): gs (or null) is added to dx, and the sum is also written
// rounded to Y in ddelta (or not: null).
template <class T, class W, int G, int U, class Y = T, bool kFuse = false>
__global__ void __launch_bounds__(kBlock, G == 32 ? (U * int(16 / sizeof(T)) <= 16 ? 4 : U * int(16 / sizeof(T)) <= 24 ? 3 : 2) : U * int(16 / sizeof(T)) <= 24 ? 2 : 1)
    backward_cached(const Y* dy, const T* x, const opmath_t<T>* mean, const opmath_t<T>* rstd, const W* w, T* dx,
                    const T* gs, Y* ddelta, opmath_t<T>* part_w, opmath_t<T>* part_b, int64_t m, int64_t n, bool rms,
                    bool aligned) {
  using M = opmath_t<T>;
  constexpr int VEC = int(16 / sizeof(T));
  constexpr int R = kBlock / G;
  constexpr bool kShared = G == 32;
  const int lane = int(threadIdx.x) % G;
  const bool params = part_w || part_b;
  // kShared: this warp's sums (w's n, then b's n); else the thread's, in registers.
  extern __shared__ unsigned char norm_smem[];
  M* acc = kShared ? reinterpret_cast<M*>(norm_smem) + int64_t(threadIdx.x / 32) * 2 * n : nullptr;
  M pw[kShared ? 1 : U][VEC], pb[kShared ? 1 : U][VEC];
  if constexpr (kShared) {
    if (params)
      for (int64_t i = lane; i < 2 * n; i += 32) acc[i] = 0;
    __syncwarp();
  } else {
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int k = 0; k < VEC; ++k) pw[u][k] = pb[u][k] = 0;
  }
  for (int64_t row = int64_t(blockIdx.x) * R + threadIdx.x / G; row < m; row += int64_t(gridDim.x) * R) {
    const Y* gr = dy + row * n;
    const T* xr = x + row * n;
    const M mu = rms ? M(0) : mean[row], rs = rstd[row];
    Vec<T, VEC> xv[U];
    Vec<Y, VEC> gv[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t i = (int64_t(u) * G + lane) * VEC;
      if (i < n) {
        load_raw<VEC>(xr, i, aligned, n, xv[u]);
        load_raw<VEC>(gr, i, aligned, n, gv[u]);
      } else {
#pragma unroll
        for (int k = 0; k < VEC; ++k) {
          xv[u].v[k] = cast<T>(0.0f);
          gv[u].v[k] = cast<Y>(0.0f);
        }
      }
    }
    M a = 0, c = 0;
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t i = (int64_t(u) * G + lane) * VEC;
      M wv[VEC], sw[VEC], sb[VEC];
      if (w && i < n) {
        load<VEC>(w, i, aligned, n, wv);
      } else {
#pragma unroll
        for (int k = 0; k < VEC; ++k) wv[k] = 1;
      }
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        // g is 0 beyond n, so those elements add nothing anywhere.
        const M xh = (cast<M>(xv[u].v[k]) - mu) * rs, g = cast<M>(gv[u].v[k]);
        sw[k] = g * xh;
        sb[k] = g;
        a += g * wv[k];
        c += g * wv[k] * xh;
      }
      if constexpr (kShared) {
        if (params && i < n) {
          add_into<VEC>(acc, i, aligned, n, sw);
          add_into<VEC>(acc + n, i, aligned, n, sb);
        }
      } else {
#pragma unroll
        for (int k = 0; k < VEC; ++k) {
          pw[u][k] += sw[k];
          pb[u][k] += sb[k];
        }
      }
    }
    if (dx || (kFuse && ddelta)) {
      a = rms ? M(0) : group_sum<G>(a) / M(n);
      c = group_sum<G>(c) / M(n);
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int64_t i = (int64_t(u) * G + lane) * VEC;
        if (i >= n) continue;
        M wv[VEC], o[VEC];
        if (w) {
          load<VEC>(w, i, aligned, n, wv);
        } else {
#pragma unroll
          for (int k = 0; k < VEC; ++k) wv[k] = 1;
        }
#pragma unroll
        for (int k = 0; k < VEC; ++k) {
          const M xh = (cast<M>(xv[u].v[k]) - mu) * rs;
          o[k] = rs * (cast<M>(gv[u].v[k]) * wv[k] - a - xh * c);
        }
        if constexpr (kFuse) {
          if (gs) {
            M p[VEC];
            load<VEC>(gs + row * n, i, aligned, n, p);
#pragma unroll
            for (int k = 0; k < VEC; ++k) o[k] = add_rn(o[k], p[k]);  // not contracted: add's rounding
          }
          if (ddelta) store<VEC>(ddelta + row * n, i, aligned, n, o);
        }
        if (dx) store<VEC>(dx + row * n, i, aligned, n, o);
      }
    }
  }
  if (!params) return;  // uniform over the grid
  if constexpr (kShared) {
    // The block's warps hold the same columns: added in warp order.
    __syncthreads();
    const M* base = reinterpret_cast<const M*>(norm_smem);
    for (int64_t i = threadIdx.x; i < n; i += kBlock) {
      M tw = 0, tb = 0;
#pragma unroll
      for (int r = 0; r < R; ++r) {
        tw += base[int64_t(r) * 2 * n + i];
        tb += base[int64_t(r) * 2 * n + n + i];
      }
      if (part_w) part_w[int64_t(blockIdx.x) * n + i] = tw;
      if (part_b) part_b[int64_t(blockIdx.x) * n + i] = tb;
    }
  } else {
    // One group per block: each thread owns its columns of the block's partial row.
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t i = (int64_t(u) * G + lane) * VEC;
#pragma unroll
      for (int k = 0; k < VEC; ++k)
        if (i + k < n) {
          if (part_w) part_w[int64_t(blockIdx.x) * n + i + k] = pw[u][k];
          if (part_b) part_b[int64_t(blockIdx.x) * n + i + k] = pb[u][k];
        }
    }
  }
}

// Rows too long for the registers: a block per row; a thread owns the columns threadIdx.x +
// j kBlock of the block's partial row, which it zeroes first and adds into row by row.
template <class T, class W, class Y = T, bool kFuse = false>
__global__ void __launch_bounds__(kBlock)
    backward_loop(const Y* dy, const T* x, const opmath_t<T>* mean, const opmath_t<T>* rstd, const W* w, T* dx,
                  const T* gs, Y* ddelta, opmath_t<T>* part_w, opmath_t<T>* part_b, int64_t m, int64_t n, bool rms) {
  using M = opmath_t<T>;
  M* bw = part_w ? part_w + int64_t(blockIdx.x) * n : nullptr;
  M* bb = part_b ? part_b + int64_t(blockIdx.x) * n : nullptr;
  for (int64_t i = threadIdx.x; i < n; i += kBlock) {
    if (bw) bw[i] = 0;
    if (bb) bb[i] = 0;
  }
  for (int64_t row = blockIdx.x; row < m; row += gridDim.x) {
    const Y* gr = dy + row * n;
    const T* xr = x + row * n;
    const M mu = rms ? M(0) : mean[row], rs = rstd[row];
    M a = 0, c = 0;
    for (int64_t i = threadIdx.x; i < n; i += kBlock) {
      const M gv = cast<M>(gr[i]), xh = (cast<M>(xr[i]) - mu) * rs;
      if (bw) bw[i] += gv * xh;
      if (bb) bb[i] += gv;
      const M gw = w ? gv * cast<M>(w[i]) : gv;
      a += gw;
      c += gw * xh;
    }
    if (!dx && !(kFuse && ddelta)) continue;  // uniform over the block
    a = rms ? M(0) : group_sum<kBlock>(a) / M(n);
    c = group_sum<kBlock>(c) / M(n);
    for (int64_t i = threadIdx.x; i < n; i += kBlock) {
      const M gv = cast<M>(gr[i]), xh = (cast<M>(xr[i]) - mu) * rs;
      const M gw = w ? gv * cast<M>(w[i]) : gv;
      M o = rs * (gw - a - xh * c);
      if constexpr (kFuse) {
        if (gs) o = add_rn(o, cast<M>(gs[row * n + i]));
        if (ddelta) ddelta[row * n + i] = cast<Y>(o);
      }
      if (dx) dx[row * n + i] = cast<T>(o);
    }
  }
}


template <class P>
const P* ptr_or_null(const Tensor& t) {
  return t.defined() ? static_cast<const P*>(t.data_ptr()) : nullptr;
}
template <class P>
P* mut_or_null(const Tensor& t) {
  return t.defined() ? static_cast<P*>(t.data_ptr()) : nullptr;
}
bool aligned16(const void* p) { return uintptr_t(p) % 16 == 0; }

// The blocks of kernel (kBlock threads, smem bytes of dynamic shared memory) resident on the
// device at once: one full wave. Remembered per kernel for the last smem asked (the same on
// every device of a build's one architecture).
template <auto kernel>
int64_t resident_blocks(size_t smem, int device, const char* op) {
  static std::atomic<uint64_t> last{0};  // smem << 16 | blocks an SM, 0 before the first call
  const uint64_t seen = last.load(std::memory_order_relaxed);
  int per_sm = int(seen & 0xffff);
  if (seen == 0 || (seen >> 16) != smem) {
    int k = 0;
    WICK_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&k, kernel, kBlock, smem), op);
    per_sm = std::max(k, 1);
    last.store(uint64_t(smem) << 16 | uint64_t(per_sm), std::memory_order_relaxed);
  }
  return int64_t(per_sm) * sm_count(device);
}

// Y: y's type (and delta's, when defined); kFuse: add_norm_forward.
template <class T, class W, class Y = T, bool kFuse = false>
void forward_typed(bool rms, const Tensor& st, const Tensor& yt, const Tensor& meant, const Tensor& rstdt,
                   const Tensor& xt, const Tensor& deltat, const Tensor& wt, const Tensor& bt, double eps,
                   const char* op) {
  using M = opmath_t<T>;
  constexpr int VEC = int(16 / sizeof(T));
  const int64_t m = xt.size(0), n = xt.size(1);
  const int device = xt.device().index();
  CudaDeviceScope scope(device);
  cudaStream_t stream = current_cuda_stream(device);
  const T* x = ptr_or_null<T>(xt);
  const Y* delta = ptr_or_null<Y>(deltat);
  T* s = delta ? mut_or_null<T>(st) : nullptr;
  Y* y = mut_or_null<Y>(yt);
  const W* w = ptr_or_null<W>(wt);
  const W* b = ptr_or_null<W>(bt);
  M* mean = mut_or_null<M>(meant);
  M* rstd = mut_or_null<M>(rstdt);
  const bool aligned = n % VEC == 0 && aligned16(x) && aligned16(y) && (!w || aligned16(w)) &&
                       (!b || aligned16(b)) && (!delta || (aligned16(delta) && aligned16(s)));
  // The group size G and the vectors U a thread holds, as compile-time constants.
  auto cached = [&]<int G>() {
    constexpr int R = kBlock / G;
    const int grid = grid_blocks((m + R - 1) / R, device, 4);
    const int64_t u = (n + int64_t(G) * VEC - 1) / (int64_t(G) * VEC);
    auto launch = [&]<int U>() {
      forward_cached<T, W, G, U, Y, kFuse>
          <<<grid, kBlock, 0, stream>>>(x, delta, s, y, w, b, mean, rstd, m, n, M(eps), rms, aligned);
    };
    with_vectors<kFuse, G, Y>(u, launch);
  };
  if (warp_per_row<kFuse, Y>(n, VEC)) {
    cached.template operator()<32>();
  } else if (n <= kBlock * kCache * VEC) {
    cached.template operator()<kBlock>();
  } else {
    forward_loop<T, W, Y, kFuse>
        <<<grid_blocks(m, device, 4), kBlock, 0, stream>>>(x, delta, s, y, w, b, mean, rstd, m, n, M(eps), rms);
  }
  WICK_CUDA_AFTER_LAUNCH(op, stream);
}

// Y: dy's type (and ddelta's, when defined); kFuse: add_norm_backward.
template <class T, class W, class Y = T, bool kFuse = false>
void backward_typed(bool rms, const Tensor& dxt, const Tensor& ddeltat, const Tensor& dwt, const Tensor& dbt,
                    const Tensor& dyt, const Tensor& gst, const Tensor& xt, const Tensor& meant, const Tensor& rstdt,
                    const Tensor& wt, const char* op) {
  using M = opmath_t<T>;
  constexpr int VEC = int(16 / sizeof(T));
  const int64_t m = xt.size(0), n = xt.size(1);
  const int device = xt.device().index();
  CudaDeviceScope scope(device);
  cudaStream_t stream = current_cuda_stream(device);
  const Y* dy = ptr_or_null<Y>(dyt);
  const T* gs = ptr_or_null<T>(gst);
  Y* ddelta = mut_or_null<Y>(ddeltat);
  const T* x = ptr_or_null<T>(xt);
  const M* mean = ptr_or_null<M>(meant);
  const M* rstd = ptr_or_null<M>(rstdt);
  const W* w = ptr_or_null<W>(wt);
  T* dx = mut_or_null<T>(dxt);
  const bool params = dwt.defined() || dbt.defined();
  const int R = warp_per_row<kFuse, Y>(n, VEC) ? kBlock / 32 : 1;
  const int64_t want = (m + R - 1) / R;
  Tensor part_w, part_b;  // freed after the launches: the allocator orders their reuse on this stream
  const TensorOptions acc = xt.options().dtype(std::is_same_v<M, double> ? kFloat64 : kFloat32);
  int grid = 0;
  // With parameter gradients the grid is one full wave of the kernel (every block resident at
  // once, each walking its share of the rows), which also keeps the partial rows few. At a
  // fixed four blocks an SM, the backward for rows of 768 bf16 values (80 registers, three
  // blocks an SM) ran as a full wave and then a third of one: 132 blocks alone, one an SM.
  // Without them, a grid of short blocks as the forward's.
  auto launch_with = [&]<auto kernel>(size_t smem, auto... more) {
    grid = params ? int(std::max<int64_t>(1, std::min<int64_t>(want, resident_blocks<kernel>(smem, device, op))))
                  : grid_blocks(want, device, 4);
    if (dwt.defined()) part_w = empty({grid, n}, acc);
    if (dbt.defined()) part_b = empty({grid, n}, acc);
    kernel<<<grid, kBlock, smem, stream>>>(dy, x, mean, rstd, w, dx, gs, ddelta, mut_or_null<M>(part_w),
                                           mut_or_null<M>(part_b), m, n, rms, more...);
  };
  const bool aligned = n % VEC == 0 && aligned16(x) && aligned16(dy) && (!dx || aligned16(dx)) &&
                       (!w || aligned16(w)) && (!gs || aligned16(gs)) && (!ddelta || aligned16(ddelta));
  // The group size G and the vectors U a thread holds, as compile-time constants.
  auto cached = [&]<int G>() {
    const int64_t u = (n + int64_t(G) * VEC - 1) / (int64_t(G) * VEC);
    auto launch = [&]<int U>() {
      constexpr auto kernel = backward_cached<T, W, G, U, Y, kFuse>;
      // The warps' partial sums (G = 32, with parameter gradients): beyond 48 KB (rows of more
      // than 768 16-bit floats) the kernel must ask for it.
      const size_t smem = G == 32 && params ? size_t(kBlock / 32) * 2 * size_t(n) * sizeof(M) : 0;
      if (smem > 48 * 1024)
        WICK_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)), op);
      launch_with.template operator()<kernel>(smem, aligned);
    };
    with_vectors<kFuse, G, Y>(u, launch);
  };
  if (warp_per_row<kFuse, Y>(n, VEC)) {
    cached.template operator()<32>();
  } else if (n <= kBlock * kCache * VEC) {
    cached.template operator()<kBlock>();
  } else {
    launch_with.template operator()<backward_loop<T, W, Y, kFuse>>(0);
  }
  WICK_CUDA_AFTER_LAUNCH(op, stream);
  if (params) {
    M* pw = mut_or_null<M>(part_w);
    M* pb = mut_or_null<M>(part_b);
    sum_parts<M, W><<<grid_blocks((n + kSumCols - 1) / kSumCols, device), kBlock, 0, stream>>>(
        pw, pb, mut_or_null<W>(dwt), mut_or_null<W>(dbt), grid, n);
    WICK_CUDA_AFTER_LAUNCH(op, stream);
  }
}

// body<T, W>() for x's dtype T and the parameters' W (T, or float for a 16-bit x with float32
// parameters).
template <class F>
void dispatch(const Tensor& x, const Tensor& param, const char* op, const F& body) {
  WICK_DISPATCH_FLOATING(x.dtype(), op, [&]<class T>() {
    if constexpr (is_half_v<T>) {
      if (param.defined() && param.dtype() == kFloat32) return body.template operator()<T, float>();
    }
    body.template operator()<T, T>();
  });
}

}  // namespace

void norm_forward(bool rms, const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x,
                  const Tensor& weight, const Tensor& bias, double eps) {
  if (x.numel() == 0) return;
  const char* op = rms ? "rms_norm" : "layer_norm";
  dispatch(x, weight.defined() ? weight : bias, op,
           [&]<class T, class W>() { forward_typed<T, W>(rms, Tensor(), y, mean, rstd, x, Tensor(), weight, bias, eps, op); });
}

void norm_backward(bool rms, const Tensor& dx, const Tensor& dweight, const Tensor& dbias, const Tensor& dy,
                   const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& weight) {
  if (x.numel() == 0) return;
  const char* op = rms ? "rms_norm_backward" : "layer_norm_backward";
  const Tensor& param = weight.defined() ? weight : dweight.defined() ? dweight : dbias;
  dispatch(x, param, op, [&]<class T, class W>() {
    backward_typed<T, W>(rms, dx, Tensor(), dweight, dbias, dy, Tensor(), x, mean, rstd, weight, op);
  });
}

// add_norm's entries: x float32 with float32 parameters; y (and delta, dy, ddelta) of one of
// the three float types.
template <class F>
void dispatch_y(Dtype y, const char* op, const F& body) {
  switch (y) {
    case kFloat32: return body.template operator()<float>();
    case kBFloat16: return body.template operator()<BFloat16>();
    case kFloat16: return body.template operator()<Half>();
    default: raise<TypeError>(op, "expected a float32, float16 or bfloat16 output, got ", y);
  }
}

void add_norm_forward(bool rms, const Tensor& s, const Tensor& y, const Tensor& mean, const Tensor& rstd,
                      const Tensor& x, const Tensor& delta, const Tensor& weight, const Tensor& bias, double eps) {
  if (x.numel() == 0) return;
  const char* op = rms ? "add_rms_norm" : "add_layer_norm";
  dispatch_y(y.dtype(), op, [&]<class Y>() {
    forward_typed<float, float, Y, true>(rms, s, y, mean, rstd, x, delta, weight, bias, eps, op);
  });
}

void add_norm_backward(bool rms, const Tensor& dx, const Tensor& ddelta, const Tensor& dweight, const Tensor& dbias,
                       const Tensor& gy, const Tensor& gs, const Tensor& s, const Tensor& mean, const Tensor& rstd,
                       const Tensor& weight) {
  if (s.numel() == 0) return;
  const char* op = rms ? "add_rms_norm_backward" : "add_layer_norm_backward";
  dispatch_y(gy.dtype(), op, [&]<class Y>() {
    backward_typed<float, float, Y, true>(rms, dx, ddelta, dweight, dbias, gy, gs, s, mean, rstd, weight, op);
  });
}

}  // namespace wick::detail::gpu
