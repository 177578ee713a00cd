/* scaled_dot_product_attention's flash path on CUDA, float16 and bfloat16, forward and backward,
 * after FlashAttention-2 (Dao, 2023): the [L, S] scores are never stored, only tiles of them in
 * shared memory, so memory is linear in the sequence (docs/design.md, "The flash attention path").
 *
 * Tiles of 64 query rows by 64 keys, 4 warps a block, each warp owning 16 of the 64 rows of a
 * tile. Products on tensor cores through WMMA (16x16x16 fragments, 16-bit inputs, float
 * accumulators) from shared memory; softmax, masks and dropout by plain threads over the tile in
 * shared memory. Head dims are padded with zeros to D = 64 or 128 (the kernels' template).
 *
 * forward (a block per (batch * head, query tile)): for each key tile, S = Q K^T, then per row
 * the online softmax (running max m and sum l, O rescaled by exp(m_old - m_new)), P (dropped
 * where dropout drops, in the input dtype) and O += P V; at the end O / l and the row's
 * log-sum-exp m + log(l), which the backward uses to recompute P without a second pass.
 * backward (a block per (batch * kv head, key tile)): delta = rowsum(dO * O) first (its own
 * kernel); then for each query head of the kv head's group and each query tile, S and
 * dP = dO V^T, P = exp(S * scale - lse), dS = P * (dP - delta), dV += P^T dO and dK += dS^T Q in
 * float shared memory (the block owns its key rows: no atomics), dQ += dS K by float atomics
 * into a workspace converted at the end.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "core/flash_attention.h"
#include "core/philox.h"
#include "cuda/cuda_check.h"
#include "cuda/runtime.h"

namespace wick::detail {

namespace gpu {

namespace {

namespace wmma = nvcuda::wmma;

constexpr int kBr = 64;  // query rows of a tile
constexpr int kBc = 64;  // keys of a tile
constexpr int kThreads = 128;
constexpr int kLdP = kBc + 8;  // 16-bit [rows][keys] tiles
constexpr int kLdS = kBc + 4;  // float [rows][keys] tiles

struct Params {
  const void *q, *k, *v, *o, *dout;
  float* lse;
  int64_t q_sb, q_sh, q_sl, k_sb, k_sh, k_sl, v_sb, v_sh, v_sl, d_sb, d_sh, d_sl;
  int B, H, Hkv, L, S, E;
  float scale;
  bool causal;
  bool dropout;
  float keep;      // 1 - dropout_p
  float rescale;   // 1 / (1 - dropout_p)
  uint64_t seed, offset;
  int64_t row_counters;  // ceil(S / 4): Philox counters of a row of the weights
  void *out, *dq, *dk, *dv;
  float *dq_accum, *delta;
};

__device__ inline float to_float(__half x) { return __half2float(x); }
__device__ inline float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
template <class T>
__device__ inline T from_float(float x);
template <>
__device__ inline __half from_float<__half>(float x) { return __float2half_rn(x); }
template <>
__device__ inline __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

__device__ inline float warp_max(float x) {
  for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
}
__device__ inline float warp_sum(float x) {
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}

// Whether dropout keeps weight (bh, i, j) (the counter layout of FlashAttentionArgs).
__device__ inline bool dropout_keep(const Params& p, int64_t bh, int64_t i, int64_t j) {
  const uint64_t counter = uint64_t((bh * p.L + i) * p.row_counters + (j >> 2));
  const philox::Block r = philox::draw_block(p.seed, p.offset, counter);
  const int w = int(j & 3);
  const uint32_t bits = w == 0 ? r.v[0] : w == 1 ? r.v[1] : w == 2 ? r.v[2] : r.v[3];
  return float(bits >> 8) * (1.0f / 16777216.0f) < p.keep;
}

using Acc = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

// acc += A B for one warp's 16x16 tile of the product, over KTiles steps of 16: A is 16 rows by
// 16 * KTiles, B is 16 * KTiles by 16 columns, each row- or column-major in shared memory with
// leading dimension lda or ldb.
template <class T, class LayoutA, class LayoutB, int KTiles>
__device__ inline void mma_k(Acc& acc, const T* a, int lda, const T* b, int ldb) {
  constexpr bool a_row = std::is_same_v<LayoutA, wmma::row_major>;
  constexpr bool b_row = std::is_same_v<LayoutB, wmma::row_major>;
#pragma unroll
  for (int kk = 0; kk < KTiles; ++kk) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, T, LayoutA> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, T, LayoutB> fb;
    wmma::load_matrix_sync(fa, a + (a_row ? kk * 16 : kk * 16 * lda), lda);
    wmma::load_matrix_sync(fb, b + (b_row ? kk * 16 * ldb : kk * 16), ldb);
    wmma::mma_sync(acc, fa, fb, acc);
  }
}

// rows x D tile of 16-bit values from src (row stride ld_src elements) into dst (row stride
// ldd): rows at or past `valid` and columns at or past E are zeros. 16-byte vectors.
template <class T, int D>
__device__ inline void load_tile(T* dst, int ldd, const T* src, int64_t ld_src, int rows, int valid, int E) {
  constexpr int kVecs = D / 8;
  for (int idx = threadIdx.x; idx < rows * kVecs; idx += kThreads) {
    const int r = idx / kVecs, c = (idx % kVecs) * 8;
    uint4 val = make_uint4(0u, 0u, 0u, 0u);
    if (r < valid && c < E) val = *reinterpret_cast<const uint4*>(src + int64_t(r) * ld_src + c);
    *reinterpret_cast<uint4*>(dst + r * ldd + c) = val;
  }
}

template <int D>
constexpr size_t fwd_smem_bytes() {
  return size_t(3 * kBr * (D + 8)) * 2 + size_t(kBr * kLdP) * 2 + size_t(kBr * kLdS) * 4 +
         size_t(kBr * (D + 4)) * 4;
}

template <class T, int D>
__global__ void __launch_bounds__(kThreads) flash_fwd_kernel(const Params p) {
  constexpr int kLdT = D + 8, kLdO = D + 4;
  extern __shared__ __align__(128) unsigned char smem[];
  T* Qs = reinterpret_cast<T*>(smem);
  T* Ks = Qs + kBr * kLdT;
  T* Vs = Ks + kBc * kLdT;
  T* Ps = Vs + kBc * kLdT;
  float* Ss = reinterpret_cast<float*>(Ps + kBr * kLdP);
  float* Os = Ss + kBr * kLdS;

  const int64_t bh = blockIdx.x;
  const int b = int(bh / p.H), h = int(bh % p.H);
  const int hk = h / (p.H / p.Hkv);
  const int nqt = (p.L + kBr - 1) / kBr;
  const int q0 = (nqt - 1 - int(blockIdx.y)) * kBr;  // the longest causal tiles first
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

  const T* qg = static_cast<const T*>(p.q) + b * p.q_sb + h * p.q_sh + int64_t(q0) * p.q_sl;
  const T* kg = static_cast<const T*>(p.k) + b * p.k_sb + hk * p.k_sh;
  const T* vg = static_cast<const T*>(p.v) + b * p.v_sb + hk * p.v_sh;
  load_tile<T, D>(Qs, kLdT, qg, p.q_sl, kBr, min(kBr, p.L - q0), p.E);
  for (int idx = threadIdx.x; idx < kBr * kLdO; idx += kThreads) Os[idx] = 0.f;

  float m[16], l[16];  // this warp's rows' running max and sum (every lane holds them)
#pragma unroll
  for (int r = 0; r < 16; ++r) {
    m[r] = -INFINITY;
    l[r] = 0.f;
  }
  const int kend = p.causal ? min(p.S, q0 + kBr) : p.S;
  const int nkt = (kend + kBc - 1) / kBc;
  for (int kt = 0; kt < nkt; ++kt) {
    const int k0 = kt * kBc;
    __syncthreads();  // the previous tile's Ks and Vs are read
    load_tile<T, D>(Ks, kLdT, kg + int64_t(k0) * p.k_sl, p.k_sl, kBc, min(kBc, p.S - k0), p.E);
    load_tile<T, D>(Vs, kLdT, vg + int64_t(k0) * p.v_sl, p.v_sl, kBc, min(kBc, p.S - k0), p.E);
    __syncthreads();

    // S = Q K^T for this warp's 16 rows
    for (int n = 0; n < kBc / 16; ++n) {
      Acc acc;
      wmma::fill_fragment(acc, 0.f);
      mma_k<T, wmma::row_major, wmma::col_major, D / 16>(acc, Qs + warp * 16 * kLdT, kLdT, Ks + n * 16 * kLdT, kLdT);
      wmma::store_matrix_sync(Ss + warp * 16 * kLdS + n * 16, acc, kLdS, wmma::mem_row_major);
    }
    __syncwarp();

    // the online softmax of the warp's rows; each lane two keys of a row
#pragma unroll
    for (int r = 0; r < 16; ++r) {
      const int row = warp * 16 + r, i = q0 + row;
      float x[2];
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const int jl = lane + 32 * c, j = k0 + jl;
        const bool ok = j < p.S && (!p.causal || j <= i);
        x[c] = ok ? Ss[row * kLdS + jl] * p.scale : -INFINITY;
      }
      const float m_new = fmaxf(m[r], warp_max(fmaxf(x[0], x[1])));
      float alpha = 1.f, e[2] = {0.f, 0.f};
      if (m_new != -INFINITY) {
        alpha = __expf(m[r] - m_new);  // 0 while the row had only masked keys
        e[0] = __expf(x[0] - m_new);
        e[1] = __expf(x[1] - m_new);
      }
      l[r] = l[r] * alpha + warp_sum(e[0] + e[1]);
      m[r] = m_new;
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const int jl = lane + 32 * c;
        float pv = e[c];
        if (p.dropout && pv != 0.f) pv = dropout_keep(p, bh, i, k0 + jl) ? pv * p.rescale : 0.f;
        Ps[row * kLdP + jl] = from_float<T>(pv);
      }
      for (int d = lane; d < D; d += 32) Os[row * kLdO + d] *= alpha;
    }
    __syncwarp();

    // O += P V for the warp's rows
    for (int n = 0; n < D / 16; ++n) {
      Acc acc;
      wmma::load_matrix_sync(acc, Os + warp * 16 * kLdO + n * 16, kLdO, wmma::mem_row_major);
      mma_k<T, wmma::row_major, wmma::row_major, kBc / 16>(acc, Ps + warp * 16 * kLdP, kLdP, Vs + n * 16, kLdT);
      wmma::store_matrix_sync(Os + warp * 16 * kLdO + n * 16, acc, kLdO, wmma::mem_row_major);
    }
    __syncwarp();
  }
  __syncthreads();  // Os is initialized even where no key tile ran

  // O / l and the log-sum-exp of the warp's rows; a row that attended nothing gives zeros
  T* og = static_cast<T*>(p.out) + (bh * p.L + q0) * p.E;
#pragma unroll
  for (int r = 0; r < 16; ++r) {
    const int row = warp * 16 + r;
    if (q0 + row >= p.L) continue;
    const float inv = l[r] > 0.f ? 1.f / l[r] : 0.f;
    for (int d = lane; d < p.E; d += 32) og[int64_t(row) * p.E + d] = from_float<T>(Os[row * kLdO + d] * inv);
    if (lane == 0) p.lse[bh * p.L + q0 + row] = l[r] > 0.f ? m[r] + logf(l[r]) : INFINITY;
  }
}

// delta[row] = sum over d of dout * out, a warp per row of [B * H * L, E].
template <class T>
__global__ void __launch_bounds__(kThreads) flash_delta_kernel(const Params p) {
  const int64_t rows = int64_t(p.B) * p.H * p.L;
  const int64_t row = int64_t(blockIdx.x) * (kThreads / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const int64_t i = row % p.L, bh = row / p.L;
  const int64_t b = bh / p.H, h = bh % p.H;
  const T* dg = static_cast<const T*>(p.dout) + b * p.d_sb + h * p.d_sh + i * p.d_sl;
  const T* og = static_cast<const T*>(p.o) + row * p.E;
  float s = 0.f;
  for (int d = lane; d < p.E; d += 32) s += to_float(dg[d]) * to_float(og[d]);
  s = warp_sum(s);
  if (lane == 0) p.delta[row] = s;
}

// Floats of the backward's region that holds S and dP, then dQ's tile.
template <int D>
inline constexpr int kBwdUnionFloats = 2 * kBr * kLdS > kBr * (D + 4) ? 2 * kBr * kLdS : kBr * (D + 4);

template <int D>
constexpr size_t bwd_smem_bytes() {
  return size_t(4 * kBr * (D + 8)) * 2 + size_t(2 * kBr * kLdP) * 2 + size_t(2 * kBc * (D + 4)) * 4 +
         size_t(kBwdUnionFloats<D>) * 4 + size_t(2 * kBr) * 4;
}

// Within sm_90's 227 KiB of shared memory a block (one block per SM for D = 128 backward).
static_assert(fwd_smem_bytes<128>() <= 232448 && bwd_smem_bytes<128>() <= 232448);

template <class T, int D>
__global__ void __launch_bounds__(kThreads) flash_bwd_kernel(const Params p) {
  constexpr int kLdT = D + 8, kLdA = D + 4;
  extern __shared__ __align__(128) unsigned char smem[];
  T* Ks = reinterpret_cast<T*>(smem);
  T* Vs = Ks + kBc * kLdT;
  T* Qs = Vs + kBc * kLdT;
  T* dOs = Qs + kBr * kLdT;
  T* Pt = dOs + kBr * kLdT;   // dropped P, [query][key]
  T* dSt = Pt + kBr * kLdP;   // dS, [query][key]
  float* dKa = reinterpret_cast<float*>(dSt + kBr * kLdP);
  float* dVa = dKa + kBc * kLdA;
  float* U = dVa + kBc * kLdA;  // S and dP, then dQ's tile
  float* Ss = U;
  float* dPs = U + kBr * kLdS;
  float* dQs = U;
  float* lse_s = U + kBwdUnionFloats<D>;
  float* delta_s = lse_s + kBr;

  const int64_t bhk = blockIdx.x;
  const int b = int(bhk / p.Hkv), hk = int(bhk % p.Hkv);
  const int group = p.H / p.Hkv;
  const int k0 = int(blockIdx.y) * kBc;
  const int kvalid = min(kBc, p.S - k0);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

  load_tile<T, D>(Ks, kLdT, static_cast<const T*>(p.k) + b * p.k_sb + hk * p.k_sh + int64_t(k0) * p.k_sl, p.k_sl,
                  kBc, kvalid, p.E);
  load_tile<T, D>(Vs, kLdT, static_cast<const T*>(p.v) + b * p.v_sb + hk * p.v_sh + int64_t(k0) * p.v_sl, p.v_sl,
                  kBc, kvalid, p.E);
  for (int idx = threadIdx.x; idx < kBc * kLdA; idx += kThreads) {
    dKa[idx] = 0.f;
    dVa[idx] = 0.f;
  }
  const int nqt = (p.L + kBr - 1) / kBr;
  const int qt_first = p.causal ? k0 / kBr : 0;  // earlier query rows attend none of these keys

  for (int g = 0; g < group; ++g) {
    const int h = hk * group + g;
    const int64_t bh = int64_t(b) * p.H + h;
    for (int qt = qt_first; qt < nqt; ++qt) {
      const int q0 = qt * kBr;
      __syncthreads();  // the previous tile's shared memory is read
      load_tile<T, D>(Qs, kLdT, static_cast<const T*>(p.q) + b * p.q_sb + h * p.q_sh + int64_t(q0) * p.q_sl,
                      p.q_sl, kBr, min(kBr, p.L - q0), p.E);
      load_tile<T, D>(dOs, kLdT,
                      static_cast<const T*>(p.dout) + b * p.d_sb + h * p.d_sh + int64_t(q0) * p.d_sl, p.d_sl,
                      kBr, min(kBr, p.L - q0), p.E);
      if (threadIdx.x < kBr) {
        const int i = q0 + threadIdx.x;
        lse_s[threadIdx.x] = i < p.L ? p.lse[bh * p.L + i] : INFINITY;
        delta_s[threadIdx.x] = i < p.L ? p.delta[bh * p.L + i] : 0.f;
      }
      __syncthreads();

      // S = Q K^T and dP = dO V^T for the warp's 16 query rows
      for (int n = 0; n < kBc / 16; ++n) {
        Acc s_acc, dp_acc;
        wmma::fill_fragment(s_acc, 0.f);
        wmma::fill_fragment(dp_acc, 0.f);
        mma_k<T, wmma::row_major, wmma::col_major, D / 16>(s_acc, Qs + warp * 16 * kLdT, kLdT, Ks + n * 16 * kLdT, kLdT);
        mma_k<T, wmma::row_major, wmma::col_major, D / 16>(dp_acc, dOs + warp * 16 * kLdT, kLdT, Vs + n * 16 * kLdT,
                                                           kLdT);
        wmma::store_matrix_sync(Ss + warp * 16 * kLdS + n * 16, s_acc, kLdS, wmma::mem_row_major);
        wmma::store_matrix_sync(dPs + warp * 16 * kLdS + n * 16, dp_acc, kLdS, wmma::mem_row_major);
      }
      __syncwarp();

      // P, dropped P and dS of the warp's rows
      for (int r = 0; r < 16; ++r) {
        const int row = warp * 16 + r, i = q0 + row;
        const float lse = lse_s[row], dl = delta_s[row];
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          const int jl = lane + 32 * c, j = k0 + jl;
          const bool ok = i < p.L && j < p.S && (!p.causal || j <= i) && lse != INFINITY;
          const float pr = ok ? __expf(Ss[row * kLdS + jl] * p.scale - lse) : 0.f;
          float dp = dPs[row * kLdS + jl], pd = pr;
          if (p.dropout && ok) {
            const bool keep = dropout_keep(p, bh, i, j);
            pd = keep ? pr * p.rescale : 0.f;
            dp = keep ? dp * p.rescale : 0.f;
          }
          Pt[row * kLdP + jl] = from_float<T>(pd);
          dSt[row * kLdP + jl] = from_float<T>(pr * (dp - dl));
        }
      }
      __syncthreads();  // every row of Pt and dSt is written; S and dP are read

      // dV += P^T dO and dK += dS^T Q for the warp's 16 keys
      for (int n = 0; n < D / 16; ++n) {
        Acc dv_acc, dk_acc;
        wmma::load_matrix_sync(dv_acc, dVa + warp * 16 * kLdA + n * 16, kLdA, wmma::mem_row_major);
        wmma::load_matrix_sync(dk_acc, dKa + warp * 16 * kLdA + n * 16, kLdA, wmma::mem_row_major);
        mma_k<T, wmma::col_major, wmma::row_major, kBr / 16>(dv_acc, Pt + warp * 16, kLdP, dOs + n * 16, kLdT);
        mma_k<T, wmma::col_major, wmma::row_major, kBr / 16>(dk_acc, dSt + warp * 16, kLdP, Qs + n * 16, kLdT);
        wmma::store_matrix_sync(dVa + warp * 16 * kLdA + n * 16, dv_acc, kLdA, wmma::mem_row_major);
        wmma::store_matrix_sync(dKa + warp * 16 * kLdA + n * 16, dk_acc, kLdA, wmma::mem_row_major);
      }

      // dQ += dS K * scale for the warp's 16 query rows, through shared memory into the workspace
      for (int n = 0; n < D / 16; ++n) {
        Acc acc;
        wmma::fill_fragment(acc, 0.f);
        mma_k<T, wmma::row_major, wmma::row_major, kBc / 16>(acc, dSt + warp * 16 * kLdP, kLdP, Ks + n * 16, kLdT);
        wmma::store_matrix_sync(dQs + warp * 16 * kLdA + n * 16, acc, kLdA, wmma::mem_row_major);
      }
      __syncwarp();
      for (int r = 0; r < 16; ++r) {
        const int row = warp * 16 + r, i = q0 + row;
        if (i >= p.L) break;
        float* dst = p.dq_accum + (bh * p.L + i) * p.E;
        for (int d = lane; d < p.E; d += 32) atomicAdd(dst + d, dQs[row * kLdA + d] * p.scale);
      }
    }
  }
  __syncthreads();

  // the block's keys: dK * scale and dV
  T* dkg = static_cast<T*>(p.dk) + (bhk * p.S + k0) * p.E;
  T* dvg = static_cast<T*>(p.dv) + (bhk * p.S + k0) * p.E;
  for (int idx = threadIdx.x; idx < kvalid * p.E; idx += kThreads) {
    const int r = idx / p.E, d = idx % p.E;
    dkg[int64_t(r) * p.E + d] = from_float<T>(dKa[r * kLdA + d] * p.scale);
    dvg[int64_t(r) * p.E + d] = from_float<T>(dVa[r * kLdA + d]);
  }
}

template <class T>
__global__ void __launch_bounds__(256) flash_dq_convert_kernel(const float* src, T* dst, int64_t n) {
  for (int64_t idx = int64_t(blockIdx.x) * 256 + threadIdx.x; idx < n; idx += int64_t(gridDim.x) * 256)
    dst[idx] = from_float<T>(src[idx]);
}

Params make_params(const FlashAttentionArgs& a) {
  Params p{};
  p.q = a.q.data_ptr();
  p.k = a.k.data_ptr();
  p.v = a.v.data_ptr();
  p.o = a.out.data_ptr();
  p.out = a.out.data_ptr();
  p.lse = static_cast<float*>(a.lse.data_ptr());
  p.q_sb = a.q.stride(0), p.q_sh = a.q.stride(1), p.q_sl = a.q.stride(2);
  p.k_sb = a.k.stride(0), p.k_sh = a.k.stride(1), p.k_sl = a.k.stride(2);
  p.v_sb = a.v.stride(0), p.v_sh = a.v.stride(1), p.v_sl = a.v.stride(2);
  p.B = int(a.q.size(0));
  p.H = int(a.q.size(1));
  p.Hkv = int(a.k.size(1));
  p.L = int(a.q.size(2));
  p.S = int(a.k.size(2));
  p.E = int(a.q.size(3));
  p.scale = float(a.scale);
  p.causal = a.causal;
  p.dropout = a.dropout_p > 0;
  p.keep = float(1.0 - a.dropout_p);
  p.rescale = a.dropout_p < 1 ? float(1.0 / (1.0 - a.dropout_p)) : 0.f;
  p.seed = a.seed;
  p.offset = a.offset;
  p.row_counters = (int64_t(p.S) + 3) / 4;
  if (a.dout.defined()) {
    p.dout = a.dout.data_ptr();
    p.d_sb = a.dout.stride(0), p.d_sh = a.dout.stride(1), p.d_sl = a.dout.stride(2);
    p.dq = a.dq.data_ptr();
    p.dk = a.dk.data_ptr();
    p.dv = a.dv.data_ptr();
    p.dq_accum = static_cast<float*>(a.dq_accum.data_ptr());
    p.delta = static_cast<float*>(a.delta.data_ptr());
  }
  return p;
}

template <class T, int D>
void launch_forward(const Params& p, cudaStream_t stream) {
  constexpr size_t bytes = fwd_smem_bytes<D>();
  WICK_CUDA_CHECK(cudaFuncSetAttribute(flash_fwd_kernel<T, D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       int(bytes)),
                  "scaled_dot_product_attention");
  const dim3 grid(unsigned(int64_t(p.B) * p.H), unsigned((p.L + kBr - 1) / kBr));
  flash_fwd_kernel<T, D><<<grid, kThreads, bytes, stream>>>(p);
}

template <class T, int D>
void launch_backward(const Params& p, cudaStream_t stream) {
  constexpr size_t bytes = bwd_smem_bytes<D>();
  WICK_CUDA_CHECK(cudaFuncSetAttribute(flash_bwd_kernel<T, D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       int(bytes)),
                  "scaled_dot_product_attention");
  const dim3 grid(unsigned(int64_t(p.B) * p.Hkv), unsigned((p.S + kBc - 1) / kBc));
  flash_bwd_kernel<T, D><<<grid, kThreads, bytes, stream>>>(p);
}

template <class T>
void forward_typed(const Params& p, cudaStream_t stream) {
  if (p.E <= 64) launch_forward<T, 64>(p, stream);
  else launch_forward<T, 128>(p, stream);
}

template <class T>
void backward_typed(const Params& p, cudaStream_t stream) {
  const int64_t rows = int64_t(p.B) * p.H * p.L;
  flash_delta_kernel<T><<<unsigned((rows + 3) / 4), kThreads, 0, stream>>>(p);
  if (p.S > 0) {
    if (p.E <= 64) launch_backward<T, 64>(p, stream);
    else launch_backward<T, 128>(p, stream);
  }
  const int64_t n = rows * p.E;
  const int64_t blocks = (n + 255) / 256;
  flash_dq_convert_kernel<T><<<unsigned(blocks < 65536 ? blocks : 65536), 256, 0, stream>>>(
      p.dq_accum, static_cast<T*>(p.dq), n);
}

}  // namespace

}  // namespace gpu

using namespace gpu;

void cuda_flash_attention_forward(const FlashAttentionArgs& a) {
  const char* op = "scaled_dot_product_attention";
  if (a.out.numel() == 0) return;
  const int device = a.q.device().index();
  CudaDeviceScope scope(device);
  cudaStream_t stream = current_cuda_stream(device);
  const Params p = make_params(a);
  if (a.q.dtype() == kFloat16) forward_typed<__half>(p, stream);
  else forward_typed<__nv_bfloat16>(p, stream);
  WICK_CUDA_AFTER_LAUNCH(op, stream);
}

void cuda_flash_attention_backward(const FlashAttentionArgs& a) {
  const char* op = "scaled_dot_product_attention_backward";
  const int device = a.q.device().index();
  CudaDeviceScope scope(device);
  cudaStream_t stream = current_cuda_stream(device);
  const Params p = make_params(a);
  if (a.out.numel() == 0) {
    // no query rows: dq is empty, dk and dv zeros
    if (a.dk.numel() > 0) WICK_CUDA_CHECK(cudaMemsetAsync(a.dk.data_ptr(), 0, size_t(a.dk.nbytes()), stream), op);
    if (a.dv.numel() > 0) WICK_CUDA_CHECK(cudaMemsetAsync(a.dv.data_ptr(), 0, size_t(a.dv.nbytes()), stream), op);
    return;
  }
  if (a.q.dtype() == kFloat16) backward_typed<__half>(p, stream);
  else backward_typed<__nv_bfloat16>(p, stream);
  WICK_CUDA_AFTER_LAUNCH(op, stream);
}

}  // namespace wick::detail
