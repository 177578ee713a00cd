/* softmax and log_softmax on CUDA over the middle dim of a contiguous [outer, n, inner] tensor,
 * with the row maximum subtracted before exp (no overflow). Three kernels:
 *
 * - cached_kernel (inner == 1, n up to 256 threads x 8 vectors of 16 bytes: 8192 floats,
 *   16384 halves, 4096 doubles; rows 16-byte aligned): one block per row loads the row once
 *   into registers, reduces the maximum, then the sum of exp, over the block, and writes. The
 *   row crosses device memory once each way, which is the floor: this is the path of the
 *   8192 x 8192 benchmark.
 * - online_kernel (inner == 1, any n): a warp per row (n <= 1024) or a block per row keeps a
 *   running (max, sum of exp) pair, rescaling the sum when the max grows, so one read gives
 *   both; a second read (mostly from L2) writes the outputs. The pair is softmax_rows.cuh's,
 *   which loss.cu's one-block cross_entropy kernel shares for log_softmax values bit for bit.
 * - column_kernel (inner > 1): one thread per column, the same running pair down the column;
 *   adjacent threads read adjacent addresses.
 * The backward (softmax_backward) is one kernel too: a block per row (inner == 1) or a thread
 * per column sums g (or g * y), then writes the gradient in a second pass over the row.
 * Arithmetic in float for 16-bit floats and float32, double for float64, with CUDA's accurate
 * expf/logf (device_math.cuh). A row of -inf gives nan, as PyTorch and wick's CPU.
 */
#include "cuda/kernels/block_reduce.cuh"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/elementwise.cuh"
#include "cuda/kernels/op_kernels.h"
#include "cuda/kernels/softmax_rows.cuh"

namespace wick::detail::gpu {

namespace {

constexpr int kCachedVecs = 8;  // 16-byte vectors per thread in cached_kernel

template <class T>
__global__ void __launch_bounds__(kBlock) cached_kernel(const T* in, T* out, int64_t rows, int64_t n, bool log) {
  using M = opmath_t<T>;
  constexpr int VEC = int(16 / sizeof(T));
  const int64_t nvec = n / VEC;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const auto* src = reinterpret_cast<const Vec<T, VEC>*>(in + row * n);
    auto* dst = reinterpret_cast<Vec<T, VEC>*>(out + row * n);
    M x[kCachedVecs][VEC];
#pragma unroll
    for (int u = 0; u < kCachedVecs; ++u) {
      const int64_t v = threadIdx.x + int64_t(u) * kBlock;
      if (v < nvec) {
        const Vec<T, VEC> a = src[v];
#pragma unroll
        for (int k = 0; k < VEC; ++k) x[u][k] = cast<M>(a.v[k]);
      }
    }
    M mx = M(-INFINITY);
#pragma unroll
    for (int u = 0; u < kCachedVecs; ++u)
      if (threadIdx.x + int64_t(u) * kBlock < nvec)
#pragma unroll
        for (int k = 0; k < VEC; ++k) mx = max_of(mx, x[u][k]);
    mx = block_all_reduce(mx, MaxMerge{}, M(-INFINITY));
    M sum = 0;
#pragma unroll
    for (int u = 0; u < kCachedVecs; ++u)
      if (threadIdx.x + int64_t(u) * kBlock < nvec)
#pragma unroll
        for (int k = 0; k < VEC; ++k) {
          const M e = m_exp(x[u][k] - mx);
          sum += e;
          if (!log) x[u][k] = e;
        }
    sum = block_all_reduce(sum, SumMerge{}, M(0));
    // log_softmax as (x - max) - log(sum), PyTorch's order: max + log(sum) would lose x - max
    // when |max| dwarfs log(sum) (rows of 1e30 gave 0 instead of -log n).
    const M lsum = m_log(sum), inv = M(1) / sum;
#pragma unroll
    for (int u = 0; u < kCachedVecs; ++u) {
      const int64_t v = threadIdx.x + int64_t(u) * kBlock;
      if (v < nvec) {
        Vec<T, VEC> o;
#pragma unroll
        for (int k = 0; k < VEC; ++k) o.v[k] = cast<T>(log ? (x[u][k] - mx) - lsum : x[u][k] * inv);
        dst[v] = o;
      }
    }
  }
}

template <class T>
__global__ void __launch_bounds__(kBlock) online_kernel(const T* in, T* out, int64_t rows, int64_t n, int group,
                                                        bool log, int64_t causal_l) {
  using M = opmath_t<T>;
  const int lane = int(threadIdx.x) % group;
  const int64_t groups_per_block = kBlock / group;
  for (int64_t row = int64_t(blockIdx.x) * groups_per_block + threadIdx.x / group; row < rows;
       row += int64_t(gridDim.x) * groups_per_block) {
    const T* x = in + row * n;
    T* y = out + row * n;
    // With causal_l, row r attends its first r % causal_l + 1 columns and writes 0 beyond.
    const int64_t m = causal_l > 0 && row % causal_l + 1 < n ? row % causal_l + 1 : n;
    Running<M> r{M(-INFINITY), M(0)};
    for (int64_t i = lane; i < m; i += group) r.add(cast<M>(x[i]));
    if (group == 32) {
      r = warp_merge(r);
      r.m = __shfl_sync(0xffffffffu, r.m, 0);
      r.s = __shfl_sync(0xffffffffu, r.s, 0);
    } else {
      r = block_all_reduce(r, RunningMerge{}, Running<M>{M(-INFINITY), M(0)});
    }
    const M lsum = m_log(r.s), inv = M(1) / r.s;
    for (int64_t i = lane; i < m; i += group) {
      const M v = cast<M>(x[i]);
      y[i] = cast<T>(log ? (v - r.m) - lsum : m_exp(v - r.m) * inv);
    }
    for (int64_t i = m + lane; i < n; i += group) y[i] = cast<T>(M(0));
  }
}

template <class T>
__global__ void __launch_bounds__(kBlock) column_kernel(const T* in, T* out, int64_t outer, int64_t n, int64_t inner,
                                                        bool log) {
  using M = opmath_t<T>;
  for (int64_t c = int64_t(blockIdx.x) * kBlock + threadIdx.x; c < outer * inner; c += int64_t(gridDim.x) * kBlock) {
    const int64_t o = c / inner, j = c % inner;
    const T* x = in + o * n * inner + j;
    T* y = out + o * n * inner + j;
    Running<M> r{M(-INFINITY), M(0)};
    for (int64_t i = 0; i < n; ++i) r.add(cast<M>(x[i * inner]));
    const M lsum = m_log(r.s), inv = M(1) / r.s;
    for (int64_t i = 0; i < n; ++i) {
      const M v = cast<M>(x[i * inner]);
      y[i * inner] = cast<T>(log ? (v - r.m) - lsum : m_exp(v - r.m) * inv);
    }
  }
}

template <class T>
void softmax_typed(bool log, const Tensor& out, const Tensor& in, const char* op) {
  const int64_t outer = in.size(0), n = in.size(1), inner = in.size(2);
  const int device = in.device().index();
  CudaDeviceScope scope(device);
  cudaStream_t stream = current_cuda_stream(device);
  const T* x = static_cast<const T*>(in.data_ptr());
  T* y = static_cast<T*>(out.data_ptr());
  constexpr int64_t VEC = 16 / sizeof(T);
  const bool aligned = n % VEC == 0 && uintptr_t(x) % 16 == 0 && uintptr_t(y) % 16 == 0;
  if (inner > 1) {
    column_kernel<T><<<grid_blocks(blocks_for(outer * inner), device, 4), kBlock, 0, stream>>>(
        x, y, outer, n, inner, log);
  } else if (aligned && n > 1024 && n <= kBlock * kCachedVecs * VEC) {
    cached_kernel<T><<<grid_blocks(outer, device, 4), kBlock, 0, stream>>>(x, y, outer, n, log);
  } else {
    const int group = n <= 1024 ? 32 : kBlock;
    const int64_t blocks = (outer + kBlock / group - 1) / (kBlock / group);
    online_kernel<T><<<grid_blocks(blocks, device, 4), kBlock, 0, stream>>>(x, y, outer, n, group, log, 0);
  }
  WICK_CUDA_AFTER_LAUNCH(op, stream);
}

// The causal softmax of contiguous [rows, n] (see KernelTable::causal_softmax): online_kernel
// over each row's first row % l + 1 columns.
template <class T>
void causal_softmax_typed(const Tensor& out, const Tensor& in, int64_t l) {
  const int64_t rows = in.size(0), n = in.size(1);
  const int device = in.device().index();
  CudaDeviceScope scope(device);
  cudaStream_t stream = current_cuda_stream(device);
  const int group = n <= 1024 ? 32 : kBlock;
  const int64_t blocks = (rows + kBlock / group - 1) / (kBlock / group);
  online_kernel<T><<<grid_blocks(blocks, device, 4), kBlock, 0, stream>>>(
      static_cast<const T*>(in.data_ptr()), static_cast<T*>(out.data_ptr()), rows, n, group, false, l);
  WICK_CUDA_AFTER_LAUNCH("softmax", stream);
}

// ---- backward: softmax y * (g - sum(g * y)), log_softmax g - exp(y) * sum(g), over n.

// inner == 1: a block per row, the sum over the block, then a second pass that writes.
template <class T>
__global__ void __launch_bounds__(kBlock)
    backward_rows_kernel(const T* g, const T* y, T* gi, int64_t rows, int64_t n, bool log) {
  using M = opmath_t<T>;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* gr = g + row * n;
    const T* yr = y + row * n;
    T* o = gi + row * n;
    M s = 0;
    for (int64_t k = threadIdx.x; k < n; k += kBlock)
      s += log ? cast<M>(gr[k]) : cast<M>(gr[k]) * cast<M>(yr[k]);
    s = block_all_reduce(s, SumMerge{}, M(0));
    for (int64_t k = threadIdx.x; k < n; k += kBlock) {
      const M gv = cast<M>(gr[k]), yv = cast<M>(yr[k]);
      o[k] = cast<T>(log ? gv - m_exp(yv) * s : yv * (gv - s));
    }
  }
}

// inner > 1: a thread per column; adjacent threads on adjacent addresses.
template <class T>
__global__ void __launch_bounds__(kBlock)
    backward_cols_kernel(const T* g, const T* y, T* gi, int64_t outer, int64_t n, int64_t inner, bool log) {
  using M = opmath_t<T>;
  for (int64_t c = int64_t(blockIdx.x) * kBlock + threadIdx.x; c < outer * inner;
       c += int64_t(gridDim.x) * kBlock) {
    const int64_t o = c / inner, j = c - o * inner;
    const int64_t base = o * n * inner + j;
    M s = 0;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t k = base + i * inner;
      s += log ? cast<M>(g[k]) : cast<M>(g[k]) * cast<M>(y[k]);
    }
    for (int64_t i = 0; i < n; ++i) {
      const int64_t k = base + i * inner;
      const M gv = cast<M>(g[k]), yv = cast<M>(y[k]);
      gi[k] = cast<T>(log ? gv - m_exp(yv) * s : yv * (gv - s));
    }
  }
}

template <class T>
void softmax_backward_typed(bool log, const Tensor& grad_input, const Tensor& grad, const Tensor& result,
                            const char* op) {
  const int64_t outer = result.size(0), n = result.size(1), inner = result.size(2);
  const int device = result.device().index();
  CudaDeviceScope scope(device);
  cudaStream_t stream = current_cuda_stream(device);
  const T* g = static_cast<const T*>(grad.data_ptr());
  const T* y = static_cast<const T*>(result.data_ptr());
  T* gi = static_cast<T*>(grad_input.data_ptr());
  if (inner > 1) {
    backward_cols_kernel<T><<<grid_blocks(blocks_for(outer * inner), device, 4), kBlock, 0, stream>>>(
        g, y, gi, outer, n, inner, log);
  } else {
    backward_rows_kernel<T><<<grid_blocks(outer, device, 4), kBlock, 0, stream>>>(g, y, gi, outer, n, log);
  }
  WICK_CUDA_AFTER_LAUNCH(op, stream);
}

}  // namespace

void softmax_backward(bool log, const Tensor& grad_input, const Tensor& grad, const Tensor& result) {
  if (result.numel() == 0) return;
  const char* op = log ? "log_softmax_backward" : "softmax_backward";
  auto body = [&]<class T>() { softmax_backward_typed<T>(log, grad_input, grad, result, op); };
  WICK_DISPATCH_FLOATING(result.dtype(), op, body);
}

void causal_softmax(const Tensor& out, const Tensor& in, int64_t l) {
  if (in.numel() == 0) return;
  auto body = [&]<class T>() { causal_softmax_typed<T>(out, in, l); };
  WICK_DISPATCH_FLOATING(in.dtype(), "softmax", body);
}

void softmax(bool log, const Tensor& out, const Tensor& in) {
  if (in.numel() == 0) return;
  const char* op = log ? "log_softmax" : "softmax";
  auto body = [&]<class T>() { softmax_typed<T>(log, out, in, op); };
  WICK_DISPATCH_FLOATING(in.dtype(), op, body);
}

}  // namespace wick::detail::gpu
