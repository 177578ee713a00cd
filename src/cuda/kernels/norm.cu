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
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/elementwise.cuh"
#include "cuda/kernels/op_kernels.h"

namespace wick::detail::gpu {

namespace {

constexpr int kCache = 4;  // 16-byte vectors of a row per thread, kept in registers

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

// ---- forward

// U (<= kCache): the vectors a thread holds of a row, the fewest that cover n (as the
// backward's), so that a short row does not pay the registers of the longest one.
template <class T, class W, int G, int U>
__global__ void __launch_bounds__(kBlock, U * int(16 / sizeof(T)) <= 24 ? 4 : 2)
    forward_cached(const T* x, T* y, const W* w, const W* b, opmath_t<T>* mean, opmath_t<T>* rstd, int64_t m,
                   int64_t n, opmath_t<T> eps, bool rms, bool aligned) {
  using M = opmath_t<T>;
  constexpr int VEC = int(16 / sizeof(T));
  constexpr int R = kBlock / G;
  const int lane = int(threadIdx.x) % G;
  for (int64_t row = int64_t(blockIdx.x) * R + threadIdx.x / G; row < m; row += int64_t(gridDim.x) * R) {
    const T* xr = x + row * n;
    T* yr = y + row * n;
    M v[U][VEC];
    M s = 0;
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t i = (int64_t(u) * G + lane) * VEC;
      if (i < n) {
        load<VEC>(xr, i, aligned, n, v[u]);
      } else {
#pragma unroll
        for (int k = 0; k < VEC; ++k) v[u][k] = 0;
      }
#pragma unroll
      for (int k = 0; k < VEC; ++k) s += v[u][k];  // 0 beyond n
    }
    const M mu = rms ? M(0) : group_sum<G>(s) / M(n);
    M q = 0;
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t i = (int64_t(u) * G + lane) * VEC;
#pragma unroll
      for (int k = 0; k < VEC; ++k)
        if (i + k < n) {
          const M d = v[u][k] - mu;
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
      for (int k = 0; k < VEC; ++k) o[k] = (v[u][k] - mu) * rs;
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
template <class T, class W>
__global__ void __launch_bounds__(kBlock)
    forward_loop(const T* x, T* y, const W* w, const W* b, opmath_t<T>* mean, opmath_t<T>* rstd, int64_t m,
                 int64_t n, opmath_t<T> eps, bool rms) {
  using M = opmath_t<T>;
  for (int64_t row = blockIdx.x; row < m; row += gridDim.x) {
    const T* xr = x + row * n;
    T* yr = y + row * n;
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
      yr[i] = cast<T>(o);
    }
  }
}

// ---- backward

// dx of the group's rows (when dx), and the block's partial row of sum(dy xhat) and sum(dy)
// (when part_w, part_b: [gridDim.x, n]). U (<= kCache): the vectors a thread holds of a row,
// the fewest that cover n, so that the four arrays of U vectors (x hat, dy, and the two partial
// sums) stay in registers with two blocks on an SM where they fit in 128 (up to 24 values
// each): with kCache of each for every n, a warp row of 768 16-bit floats took 180 registers a
// thread, one block an SM, and the kernel ran at a quarter of the memory's rate.
template <class T, class W, int G, int U>
__global__ void __launch_bounds__(kBlock, U * int(16 / sizeof(T)) <= 24 ? 2 : 1)
    backward_cached(const T* dy, const T* x, const opmath_t<T>* mean, const opmath_t<T>* rstd, const W* w, T* dx,
                    opmath_t<T>* part_w, opmath_t<T>* part_b, int64_t m, int64_t n, bool rms, bool aligned) {
  using M = opmath_t<T>;
  constexpr int VEC = int(16 / sizeof(T));
  constexpr int R = kBlock / G;
  const int lane = int(threadIdx.x) % G;
  M pw[U][VEC], pb[U][VEC];
#pragma unroll
  for (int u = 0; u < U; ++u)
#pragma unroll
    for (int k = 0; k < VEC; ++k) pw[u][k] = pb[u][k] = 0;
  for (int64_t row = int64_t(blockIdx.x) * R + threadIdx.x / G; row < m; row += int64_t(gridDim.x) * R) {
    const T* gr = dy + row * n;
    const T* xr = x + row * n;
    const M mu = rms ? M(0) : mean[row], rs = rstd[row];
    M xh[U][VEC], g[U][VEC];
    M a = 0, c = 0;
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t i = (int64_t(u) * G + lane) * VEC;
      if (i < n) {
        load<VEC>(xr, i, aligned, n, xh[u]);
        load<VEC>(gr, i, aligned, n, g[u]);
      } else {
#pragma unroll
        for (int k = 0; k < VEC; ++k) xh[u][k] = g[u][k] = 0;
      }
      M wv[VEC];
      if (w && i < n) {
        load<VEC>(w, i, aligned, n, wv);
      } else {
#pragma unroll
        for (int k = 0; k < VEC; ++k) wv[k] = 1;
      }
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        // g is 0 beyond n, so those elements add nothing anywhere.
        xh[u][k] = (xh[u][k] - mu) * rs;
        pw[u][k] += g[u][k] * xh[u][k];
        pb[u][k] += g[u][k];
        g[u][k] *= wv[k];
        a += g[u][k];
        c += g[u][k] * xh[u][k];
      }
    }
    if (dx) {
      a = rms ? M(0) : group_sum<G>(a) / M(n);
      c = group_sum<G>(c) / M(n);
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int64_t i = (int64_t(u) * G + lane) * VEC;
        if (i >= n) continue;
        M o[VEC];
#pragma unroll
        for (int k = 0; k < VEC; ++k) o[k] = rs * (g[u][k] - a - xh[u][k] * c);
        store<VEC>(dx + row * n, i, aligned, n, o);
      }
    }
  }
  if (!part_w && !part_b) return;  // uniform over the grid
  if constexpr (G == kBlock) {
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
  } else {
    // The block's warps hold the same columns: added in shared memory in warp order.
    __shared__ M sw[32 * kCache * VEC], sb[32 * kCache * VEC];
    const int warp = int(threadIdx.x) / 32;
    for (int r = 0; r < R; ++r) {
      if (warp == r) {
#pragma unroll
        for (int u = 0; u < U; ++u) {
          const int64_t i = (int64_t(u) * G + lane) * VEC;
#pragma unroll
          for (int k = 0; k < VEC; ++k)
            if (i + k < n) {
              sw[i + k] = r == 0 ? pw[u][k] : sw[i + k] + pw[u][k];
              sb[i + k] = r == 0 ? pb[u][k] : sb[i + k] + pb[u][k];
            }
        }
      }
      __syncthreads();
    }
    for (int64_t i = threadIdx.x; i < n; i += kBlock) {
      if (part_w) part_w[int64_t(blockIdx.x) * n + i] = sw[i];
      if (part_b) part_b[int64_t(blockIdx.x) * n + i] = sb[i];
    }
  }
}

// Rows too long for the registers: a block per row; a thread owns the columns threadIdx.x +
// j kBlock of the block's partial row, which it zeroes first and adds into row by row.
template <class T, class W>
__global__ void __launch_bounds__(kBlock)
    backward_loop(const T* dy, const T* x, const opmath_t<T>* mean, const opmath_t<T>* rstd, const W* w, T* dx,
                  opmath_t<T>* part_w, opmath_t<T>* part_b, int64_t m, int64_t n, bool rms) {
  using M = opmath_t<T>;
  M* bw = part_w ? part_w + int64_t(blockIdx.x) * n : nullptr;
  M* bb = part_b ? part_b + int64_t(blockIdx.x) * n : nullptr;
  for (int64_t i = threadIdx.x; i < n; i += kBlock) {
    if (bw) bw[i] = 0;
    if (bb) bb[i] = 0;
  }
  for (int64_t row = blockIdx.x; row < m; row += gridDim.x) {
    const T* gr = dy + row * n;
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
    if (!dx) continue;  // uniform over the block
    a = rms ? M(0) : group_sum<kBlock>(a) / M(n);
    c = group_sum<kBlock>(c) / M(n);
    for (int64_t i = threadIdx.x; i < n; i += kBlock) {
      const M gv = cast<M>(gr[i]), xh = (cast<M>(xr[i]) - mu) * rs;
      const M gw = w ? gv * cast<M>(w[i]) : gv;
      dx[row * n + i] = cast<T>(rs * (gw - a - xh * c));
    }
  }
}

// dweight[j], dbias[j] = the sums of the parts partial rows' column j. A block takes kSumCols
// columns; its threads split the partial rows into kSumSlices interleaved slices (slice s adds
// rows s, s + kSumSlices, ...), and one thread per column adds the slices' sums in slice order,
// so the order of every addition is fixed by parts alone and runs repeat bit for bit. One
// thread per column walking all the partial rows in turn left the kernel bound by the latency
// of its loads (n threads, hundreds of dependent steps each).
constexpr int kSumCols = 8, kSumSlices = kBlock / kSumCols;

template <class M, class W>
__global__ void __launch_bounds__(kBlock)
    sum_parts(const M* part_w, const M* part_b, W* dw, W* db, int64_t parts, int64_t n) {
  __shared__ M sw[kSumSlices][kSumCols], sb[kSumSlices][kSumCols];
  const int c = int(threadIdx.x) % kSumCols, s = int(threadIdx.x) / kSumCols;
  for (int64_t j0 = int64_t(blockIdx.x) * kSumCols; j0 < n; j0 += int64_t(gridDim.x) * kSumCols) {
    const int64_t j = j0 + c;
    M aw = 0, ab = 0;
    if (j < n) {
      for (int64_t p = s; p < parts; p += kSumSlices) {
        if (part_w) aw += part_w[p * n + j];
        if (part_b) ab += part_b[p * n + j];
      }
    }
    sw[s][c] = aw;
    sb[s][c] = ab;
    __syncthreads();
    if (s == 0 && j < n) {
      M tw = 0, tb = 0;
      for (int k = 0; k < kSumSlices; ++k) {
        tw += sw[k][c];
        tb += sb[k][c];
      }
      if (dw) dw[j] = cast<W>(tw);
      if (db) db[j] = cast<W>(tb);
    }
    __syncthreads();
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

template <class T, class W>
void forward_typed(bool rms, const Tensor& yt, const Tensor& meant, const Tensor& rstdt, const Tensor& xt,
                   const Tensor& wt, const Tensor& bt, double eps, const char* op) {
  using M = opmath_t<T>;
  constexpr int VEC = int(16 / sizeof(T));
  const int64_t m = xt.size(0), n = xt.size(1);
  const int device = xt.device().index();
  CudaDeviceScope scope(device);
  cudaStream_t stream = current_cuda_stream(device);
  const T* x = ptr_or_null<T>(xt);
  T* y = mut_or_null<T>(yt);
  const W* w = ptr_or_null<W>(wt);
  const W* b = ptr_or_null<W>(bt);
  M* mean = mut_or_null<M>(meant);
  M* rstd = mut_or_null<M>(rstdt);
  const bool aligned =
      n % VEC == 0 && aligned16(x) && aligned16(y) && (!w || aligned16(w)) && (!b || aligned16(b));
  // The group size G and the vectors U a thread holds, as compile-time constants.
  auto cached = [&]<int G>() {
    constexpr int R = kBlock / G;
    const int grid = grid_blocks((m + R - 1) / R, device, 4);
    const int64_t u = (n + int64_t(G) * VEC - 1) / (int64_t(G) * VEC);
    auto launch = [&]<int U>() {
      forward_cached<T, W, G, U><<<grid, kBlock, 0, stream>>>(x, y, w, b, mean, rstd, m, n, M(eps), rms, aligned);
    };
    static_assert(kCache == 4);
    if (u <= 1) launch.template operator()<1>();
    else if (u == 2) launch.template operator()<2>();
    else if (u == 3) launch.template operator()<3>();
    else launch.template operator()<4>();
  };
  if (n <= 32 * kCache * VEC) {
    cached.template operator()<32>();
  } else if (n <= kBlock * kCache * VEC) {
    cached.template operator()<kBlock>();
  } else {
    forward_loop<T, W><<<grid_blocks(m, device, 4), kBlock, 0, stream>>>(x, y, w, b, mean, rstd, m, n, M(eps), rms);
  }
  WICK_CUDA_AFTER_LAUNCH(op, stream);
}

template <class T, class W>
void backward_typed(bool rms, const Tensor& dxt, const Tensor& dwt, const Tensor& dbt, const Tensor& dyt,
                    const Tensor& xt, const Tensor& meant, const Tensor& rstdt, const Tensor& wt, const char* op) {
  using M = opmath_t<T>;
  constexpr int VEC = int(16 / sizeof(T));
  const int64_t m = xt.size(0), n = xt.size(1);
  const int device = xt.device().index();
  CudaDeviceScope scope(device);
  cudaStream_t stream = current_cuda_stream(device);
  const T* dy = ptr_or_null<T>(dyt);
  const T* x = ptr_or_null<T>(xt);
  const M* mean = ptr_or_null<M>(meant);
  const M* rstd = ptr_or_null<M>(rstdt);
  const W* w = ptr_or_null<W>(wt);
  T* dx = mut_or_null<T>(dxt);
  const bool params = dwt.defined() || dbt.defined();
  const int R = n <= 32 * kCache * VEC ? kBlock / 32 : 1;
  const int64_t want = (m + R - 1) / R;
  // With parameter gradients, a grid of a few blocks per SM keeps the partial rows few.
  const int grid = params ? int(std::max<int64_t>(1, std::min<int64_t>(want, int64_t(sm_count(device)) * 4)))
                          : grid_blocks(want, device, 4);
  Tensor part_w, part_b;  // freed after the launches: the allocator orders their reuse on this stream
  const TensorOptions acc = xt.options().dtype(std::is_same_v<M, double> ? kFloat64 : kFloat32);
  if (dwt.defined()) part_w = empty({grid, n}, acc);
  if (dbt.defined()) part_b = empty({grid, n}, acc);
  M* pw = mut_or_null<M>(part_w);
  M* pb = mut_or_null<M>(part_b);
  const bool aligned = n % VEC == 0 && aligned16(x) && aligned16(dy) && (!dx || aligned16(dx)) && (!w || aligned16(w));
  // The group size G and the vectors U a thread holds, as compile-time constants.
  auto cached = [&]<int G>() {
    const int64_t u = (n + int64_t(G) * VEC - 1) / (int64_t(G) * VEC);
    auto launch = [&]<int U>() {
      backward_cached<T, W, G, U><<<grid, kBlock, 0, stream>>>(dy, x, mean, rstd, w, dx, pw, pb, m, n, rms, aligned);
    };
    static_assert(kCache == 4);
    if (u <= 1) launch.template operator()<1>();
    else if (u == 2) launch.template operator()<2>();
    else if (u == 3) launch.template operator()<3>();
    else launch.template operator()<4>();
  };
  if (n <= 32 * kCache * VEC) {
    cached.template operator()<32>();
  } else if (n <= kBlock * kCache * VEC) {
    cached.template operator()<kBlock>();
  } else {
    backward_loop<T, W><<<grid, kBlock, 0, stream>>>(dy, x, mean, rstd, w, dx, pw, pb, m, n, rms);
  }
  WICK_CUDA_AFTER_LAUNCH(op, stream);
  if (params) {
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
           [&]<class T, class W>() { forward_typed<T, W>(rms, y, mean, rstd, x, weight, bias, eps, op); });
}

void norm_backward(bool rms, const Tensor& dx, const Tensor& dweight, const Tensor& dbias, const Tensor& dy,
                   const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& weight) {
  if (x.numel() == 0) return;
  const char* op = rms ? "rms_norm_backward" : "layer_norm_backward";
  const Tensor& param = weight.defined() ? weight : dweight.defined() ? dweight : dbias;
  dispatch(x, param, op, [&]<class T, class W>() {
    backward_typed<T, W>(rms, dx, dweight, dbias, dy, x, mean, rstd, weight, op);
  });
}

}  // namespace wick::detail::gpu
