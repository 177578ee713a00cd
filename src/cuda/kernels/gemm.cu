/* Integer matrix products on CUDA (cuBLASLt has no general integer GEMM): c = alpha * a @ b +
 * beta * c for every integer dtype, batched, with either operand transposed.
 *
 * Work split: 16x16 output tiles per 256-thread block, k walked in steps of 16 through shared
 * memory, batch items on gridDim.z. Products accumulate in 64-bit unsigned arithmetic and the
 * result is truncated to the dtype at the end: the same wrap-around (mod 2^bits) as the CPU's
 * loop in the dtype itself. Simple rather than fast: integer matmul is rare in training.
 */
#include "cuda/kernels/elementwise.cuh"
#include "cuda/kernels/op_kernels.h"

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

}  // namespace wick::detail::gpu
