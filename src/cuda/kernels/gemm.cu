/* Matrix products on CUDA that cuBLASLt does not run.
 *
 * Integer matrix products (cuBLASLt has no general integer GEMM): c = alpha * a @ b +
 * beta * c for every integer dtype, batched, with either operand transposed.
 *
 * Work split: 16x16 output tiles per 256-thread block, k walked in steps of 16 through shared
 * memory, batch items on gridDim.z. Products accumulate in 64-bit unsigned arithmetic and the
 * result is truncated to the dtype at the end: the same wrap-around (mod 2^bits) as the CPU's
 * loop in the dtype itself. Simple rather than fast: integer matmul is rare in training.
 */
#include <cooperative_groups.h>

#include <cstdlib>

#include "cuda/kernels/elementwise.cuh"
#include "cuda/kernels/op_kernels.h"
#include "wick/backends.h"

namespace wick::detail::gpu {

namespace {

constexpr int kTile = 16;

struct IntGemm {
  const char* a;
  const char* b;
  char* c;
  int64_t batch, m, n, k, lda, ldb, ldc, stride_a, stride_b, stride_c;
  bool trans_a, trans_b;
  uint64_t alpha, beta;
};

template <class T>
__global__ void __launch_bounds__(kTile * kTile) int_gemm_kernel(IntGemm g) {
  __shared__ T as[kTile][kTile + 1];
  __shared__ T bs[kTile][kTile + 1];
  const int tx = threadIdx.x % kTile, ty = threadIdx.x / kTile;
  const int64_t row = int64_t(blockIdx.y) * kTile + ty, col = int64_t(blockIdx.x) * kTile + tx;
  for (int64_t z = blockIdx.z; z < g.batch; z += gridDim.z) {
    const T* a = reinterpret_cast<const T*>(g.a) + z * g.stride_a;
    const T* b = reinterpret_cast<const T*>(g.b) + z * g.stride_b;
    T* c = reinterpret_cast<T*>(g.c) + z * g.stride_c;
    uint64_t acc = 0;
    for (int64_t p0 = 0; p0 < g.k; p0 += kTile) {
      // as[ty][tx] = a(row, p0 + tx); bs[ty][tx] = b(p0 + ty, col)
      const int64_t pa = p0 + tx, pb = p0 + ty;
      T av = 0, bv = 0;
      if (row < g.m && pa < g.k) av = g.trans_a ? a[pa * g.lda + row] : a[row * g.lda + pa];
      if (col < g.n && pb < g.k) bv = g.trans_b ? b[col * g.ldb + pb] : b[pb * g.ldb + col];
      as[ty][tx] = av;
      bs[ty][tx] = bv;
      __syncthreads();
#pragma unroll
      for (int q = 0; q < kTile; ++q) acc += uint64_t(int64_t(as[ty][q])) * uint64_t(int64_t(bs[q][tx]));
      __syncthreads();
    }
    if (row < g.m && col < g.n) {
      T& out = c[row * g.ldc + col];
      uint64_t v = g.alpha * acc;
      if (g.beta != 0) v += g.beta * uint64_t(int64_t(out));
      out = T(v);
    }
  }
}

}  // namespace

void gemm_integer(const GemmArgs& g) {
  if (g.m == 0 || g.n == 0 || g.batch == 0) return;
  const int device = g.c.device().index();
  CudaDeviceScope scope(device);
  cudaStream_t stream = current_cuda_stream(device);
  IntGemm args{static_cast<const char*>(g.a.data_ptr()), static_cast<const char*>(g.b.data_ptr()),
               static_cast<char*>(g.c.data_ptr()), g.batch, g.m, g.n, g.k, g.lda, g.ldb, g.ldc,
               g.stride_a, g.stride_b, g.stride_c, g.trans_a, g.trans_b,
               uint64_t(int64_t(g.alpha)), uint64_t(int64_t(g.beta))};
  const dim3 grid(unsigned((g.n + kTile - 1) / kTile), unsigned((g.m + kTile - 1) / kTile),
                  unsigned(std::min<int64_t>(g.batch, 65535)));
  WICK_CHECK(grid.y <= 65535, NotImplementedError, "matmul", "integer matmul with more than ", 65535 * kTile,
             " rows on CUDA");
  auto body = [&]<class T>() {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      int_gemm_kernel<T><<<grid, kTile * kTile, 0, stream>>>(args);
      WICK_CUDA_AFTER_LAUNCH("matmul", stream);
    } else {
      raise<TypeError>("matmul", "\"addmm\" not implemented for '", g.c.dtype(), "'");
    }
  };
  WICK_DISPATCH_ALL(g.c.dtype(), "matmul", body);
}

// ---- Small float32 products (docs/design.md, "GEMM"): one kernel for the problems of a small
// layer (a few million multiply-adds), where cuBLASLt's kernels are latency-bound and spend
// one or two extra launches on split-K partials and bias gradients.
//
// Work split: 16x16 output tiles; each tile is worked by a cluster of S 256-thread blocks
// (S = 1 to 8, by the length of k) whose 8 S warps take turns over k in chunks of 32. A warp
// stages its chunk of op(a) (16 x 32) and op(b) (32 x 16) through its own shared memory with
// the loads of its next chunk in flight, each lane accumulating 2 x 4 outputs. The partial
// tiles are added in a fixed order (warps in a block, then the cluster's blocks through
// distributed shared memory), so results do not depend on timing, and no workspace or second
// kernel is needed. The bias (added to every row) and the operand sums (a linear layer's bias
// gradient) come out of the same kernel.

namespace {

namespace cg = cooperative_groups;

constexpr int kSmallTile = 16, kSmallChunk = 32, kSmallWarps = 8, kSmallMaxSlices = 8;

struct SmallGemm {
  const float* a;
  const float* b;
  float* c;
  const float* bias;  // n values added to every row, or null
  float* sums;        // sums over k of op(a) (m values) or op(b) (n values), or null
  int64_t m, n, k;
  int64_t a_row, a_k;  // op(a)(i, p) = a[i * a_row + p * a_k]
  int64_t b_k, b_col;  // op(b)(p, j) = b[p * b_k + j * b_col]
  int64_t ldc;
  float alpha, beta;
  int sums_of;  // 1: op(a), 2: op(b)
};

// Chunk q of op(a)'s rows [r0, r0 + 16) and op(b)'s columns [c0, c0 + 16) into registers:
// lanes walk the operand's unit-stride dimension where it has one, so loads coalesce.
template <bool AK, bool BK>
__device__ __forceinline__ void small_load(const SmallGemm& g, int64_t r0, int64_t c0, int64_t q, int lane,
                                           float (&ra)[16], float (&rb)[16]) {
  const int64_t k0 = q * kSmallChunk;
#pragma unroll
  for (int it = 0; it < 16; ++it) {
    // AK: lane = p, it = row; otherwise lane & 15 = row, p = 2 it + lane / 16.
    const int64_t i = r0 + (AK ? it : (lane & 15)), p = k0 + (AK ? lane : 2 * it + (lane >> 4));
    ra[it] = i < g.m && p < g.k ? __ldg(g.a + i * g.a_row + p * g.a_k) : 0.f;
    const int64_t j = c0 + (BK ? it : (lane & 15)), pb = k0 + (BK ? lane : 2 * it + (lane >> 4));
    rb[it] = j < g.n && pb < g.k ? __ldg(g.b + pb * g.b_k + j * g.b_col) : 0.f;
  }
}

template <bool AK, bool BK>
__global__ void __launch_bounds__(kSmallWarps * 32) small_sgemm_kernel(SmallGemm g) {
  __shared__ float as[kSmallWarps][kSmallTile][kSmallChunk + 1];  // [row][p]
  __shared__ float bs[kSmallWarps][kSmallChunk][kSmallTile + 1];  // [p][col]
  __shared__ float part[kSmallWarps][kSmallTile * kSmallTile];
  __shared__ float sum_part[kSmallWarps][kSmallTile];
  __shared__ float tile[kSmallTile * kSmallTile];  // this block's partial tile
  __shared__ float tile_sums[kSmallTile];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int slices = int(gridDim.z), slice = int(blockIdx.z);
  const int64_t r0 = int64_t(blockIdx.y) * kSmallTile, c0 = int64_t(blockIdx.x) * kSmallTile;
  const int64_t chunks = (g.k + kSmallChunk - 1) / kSmallChunk, step = int64_t(kSmallWarps) * slices;
  // Operand sums: the first block column sums op(a)'s rows, the first block row op(b)'s columns.
  const bool sum_a = g.sums_of == 1 && blockIdx.x == 0, sum_b = g.sums_of == 2 && blockIdx.y == 0;
  const int lr = (lane >> 2) * 2, lc = (lane & 3) * 4;  // this lane's 2 x 4 outputs
  float acc[2][4] = {};
  float s = 0.f;
  float ra[16], rb[16];
  int64_t q = int64_t(slice) * kSmallWarps + warp;
  if (q < chunks) small_load<AK, BK>(g, r0, c0, q, lane, ra, rb);
  for (; q < chunks; q += step) {
#pragma unroll
    for (int it = 0; it < 16; ++it) {
      if (AK) as[warp][it][lane] = ra[it];
      else as[warp][lane & 15][2 * it + (lane >> 4)] = ra[it];
      if (BK) bs[warp][lane][it] = rb[it];
      else bs[warp][2 * it + (lane >> 4)][lane & 15] = rb[it];
    }
    __syncwarp();
    if (q + step < chunks) small_load<AK, BK>(g, r0, c0, q + step, lane, ra, rb);
#pragma unroll
    for (int p = 0; p < kSmallChunk; ++p) {
      const float a0 = as[warp][lr][p], a1 = as[warp][lr + 1][p];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float bv = bs[warp][p][lc + j];
        acc[0][j] = fmaf(a0, bv, acc[0][j]);
        acc[1][j] = fmaf(a1, bv, acc[1][j]);
      }
    }
    if (lane < kSmallTile && (sum_a || sum_b)) {
#pragma unroll 8
      for (int p = 0; p < kSmallChunk; ++p) s += sum_a ? as[warp][lane][p] : bs[warp][p][lane];
    }
    __syncwarp();
  }
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) part[warp][(lr + i) * kSmallTile + lc + j] = acc[i][j];
  if (lane < kSmallTile) sum_part[warp][lane] = s;
  __syncthreads();
  const int t = threadIdx.x;
  float v = 0.f;
#pragma unroll
  for (int w = 0; w < kSmallWarps; ++w) v += part[w][t];
  float total = 0.f;
  if (t < kSmallTile) {
#pragma unroll
    for (int w = 0; w < kSmallWarps; ++w) total += sum_part[w][t];
  }
  if (slices > 1) {  // the cluster's blocks each finish every slices-th output of the tile
    cg::cluster_group cluster = cg::this_cluster();
    tile[t] = v;
    if (t < kSmallTile) tile_sums[t] = total;
    cluster.sync();
    const int rank = int(cluster.block_rank());
    if (t % slices == rank) {
      v = 0.f;
      for (int r = 0; r < slices; ++r) v += cluster.map_shared_rank(tile, r)[t];
      if (t < kSmallTile) {
        total = 0.f;
        for (int r = 0; r < slices; ++r) total += cluster.map_shared_rank(tile_sums, r)[t];
      }
    }
    cluster.sync();  // no block leaves while another reads its shared memory
    if (t % slices != rank) return;
  }
  const int64_t i = r0 + t / kSmallTile, j = c0 + t % kSmallTile;
  if (i < g.m && j < g.n) {
    float* out = g.c + i * g.ldc + j;
    v *= g.alpha;
    if (g.beta != 0.f) v = fmaf(g.beta, *out, v);
    if (g.bias) v += g.bias[j];
    *out = v;
  }
  if ((sum_a || sum_b) && t < kSmallTile) {
    const int64_t e = (sum_a ? r0 : c0) + t;
    if (e < (sum_a ? g.m : g.n)) g.sums[e] = total;
  }
}

// The largest problem (m * n * k) the small kernel takes: WICK_GEMM_SMALL_MAX_MACS, 0 = never.
int64_t small_gemm_max_macs() {
  static const int64_t v = [] {
    const char* e = std::getenv("WICK_GEMM_SMALL_MAX_MACS");
    return e && *e ? std::atoll(e) : int64_t(1) << 23;
  }();
  return v;
}

}  // namespace

bool gemm_small_f32(const GemmArgs& g) {
  if (g.c.dtype() != kFloat32 || g.batch != 1 || g.k <= 0 || g.m <= 0 || g.n <= 0) return false;
  const int64_t limit = small_gemm_max_macs();
  if (limit <= 0 || g.m > limit || g.n > limit || g.m * g.n > limit / g.k) return false;
  // Many tiles with a short k leave most warps of a block idle: cuBLASLt does better there.
  constexpr int64_t kMaxTiles = 512;
  const int64_t tiles_m = (g.m + kSmallTile - 1) / kSmallTile, tiles_n = (g.n + kSmallTile - 1) / kSmallTile;
  if (tiles_m * tiles_n > kMaxTiles) return false;
  // Each warp takes at least two chunks where k allows (a cluster of blocks costs more than a
  // warp's round over one chunk; measured on H100), up to a cluster of 8.
  const int64_t chunks = (g.k + kSmallChunk - 1) / kSmallChunk;
  const int slices =
      int(std::clamp<int64_t>((chunks + 2 * kSmallWarps - 1) / (2 * kSmallWarps), 1, kSmallMaxSlices));
  const bool with_sums = g.operand_sums != 0 && g.sums.defined() && !g.bias.defined() && g.beta == 0;
  SmallGemm p{static_cast<const float*>(g.a.data_ptr()),
              static_cast<const float*>(g.b.data_ptr()),
              static_cast<float*>(g.c.data_ptr()),
              g.bias.defined() ? static_cast<const float*>(g.bias.data_ptr()) : nullptr,
              with_sums ? static_cast<float*>(g.sums.data_ptr()) : nullptr,
              g.m,
              g.n,
              g.k,
              g.trans_a ? 1 : g.lda,
              g.trans_a ? g.lda : 1,
              g.trans_b ? 1 : g.ldb,
              g.trans_b ? g.ldb : 1,
              g.ldc,
              float(g.alpha),
              float(g.beta),
              with_sums ? g.operand_sums : 0};
  cudaStream_t stream = current_cuda_stream(g.c.device().index());  // gemm() holds the device scope
  cudaLaunchConfig_t config{};
  config.gridDim = dim3{unsigned(tiles_n), unsigned(tiles_m), unsigned(slices)};
  config.blockDim = dim3{kSmallWarps * 32, 1, 1};
  config.stream = stream;
  cudaLaunchAttribute cluster{};
  cluster.id = cudaLaunchAttributeClusterDimension;
  cluster.val.clusterDim.x = 1;
  cluster.val.clusterDim.y = 1;
  cluster.val.clusterDim.z = unsigned(slices);
  config.attrs = &cluster;
  config.numAttrs = 1;
  const bool ak = p.a_k == 1, bk = p.b_k == 1;
  cudaError_t e;
  if (ak && bk) e = cudaLaunchKernelEx(&config, small_sgemm_kernel<true, true>, p);
  else if (ak) e = cudaLaunchKernelEx(&config, small_sgemm_kernel<true, false>, p);
  else if (bk) e = cudaLaunchKernelEx(&config, small_sgemm_kernel<false, true>, p);
  else e = cudaLaunchKernelEx(&config, small_sgemm_kernel<false, false>, p);
  if (e != cudaSuccess) {  // nothing was launched (e.g. a device without clusters): cuBLASLt runs it
    (void)cudaGetLastError();
    return false;
  }
  WICK_CUDA_AFTER_LAUNCH("matmul", stream);
  if (with_sums && g.sums_done) *g.sums_done = true;
  return true;
}

}  // namespace wick::detail::gpu
