/* Elementwise kernels over a TensorIter of up to 4 operands, for what elementwise.cuh (two
 * inputs, values only) cannot express: three inputs (where, clamp(x, lo, hi)) and kernels
 * that need operand addresses rather than values (gather).
 *
 * IterArgs<N> holds the operands' pointers and byte strides, innermost dimension first, and
 * turns a linear index into per-operand offsets: 32-bit division by multiply-and-shift
 * (FastDivmod) below 2^31 elements, plain 64-bit division above (rare, and correct).
 * launch_ternary has the same two paths as launch_elementwise: 16-byte vector loads when
 * every operand is contiguous and aligned, else one element per step through the strides.
 */
#pragma once

#include <optional>

#include "cuda/kernels/elementwise.cuh"
#include "wick/ops.h"

namespace wick::detail::gpu {

template <int N>
struct IterArgs {
  int ndim = 1;
  int64_t numel = 0;
  bool contiguous = true;
  char* ptrs[N] = {};
  FastDivmod fast[kMaxDims];
  int64_t sizes[kMaxDims] = {};
  int64_t strides[N][kMaxDims] = {};

  // Byte offsets of element i of every operand.
  template <bool WIDE>
  __device__ __forceinline__ void offsets(int64_t i, int64_t (&off)[N]) const {
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] = 0;
    if constexpr (WIDE) {
      for (int d = 0; d < ndim; ++d) {
        const int64_t r = i % sizes[d];
        i /= sizes[d];
#pragma unroll
        for (int k = 0; k < N; ++k) off[k] += r * strides[k][d];
      }
    } else {
      uint32_t idx = uint32_t(i);
#pragma unroll
      for (int d = 0; d < kMaxDims; ++d) {
        if (d == ndim) break;
        const uint32_t q = fast[d].div(idx);
        const int64_t r = int64_t(idx - q * fast[d].divisor);
        idx = q;
#pragma unroll
        for (int k = 0; k < N; ++k) off[k] += r * strides[k][d];
      }
    }
  }
};

// Operands of it, which must have N of them. Throws NotImplementedError naming op beyond
// kMaxDims coalesced dimensions.
template <int N>
IterArgs<N> iter_args(const TensorIter& it, const char* op) {
  IterArgs<N> a;
  a.ndim = it.ndim();
  a.numel = it.numel();
  a.contiguous = it.is_contiguous();
  WICK_CHECK(a.ndim <= kMaxDims, NotImplementedError, op, "more than ", kMaxDims,
             " non-mergeable dimensions are not supported on CUDA (got ", a.ndim, ")");
  for (int k = 0; k < N; ++k) a.ptrs[k] = static_cast<char*>(it.operand(k).data_ptr());
  for (int d = 0; d < a.ndim; ++d) {  // innermost first
    const int src = a.ndim - 1 - d;
    a.sizes[d] = it.shape()[src];
    a.fast[d] = FastDivmod(uint32_t(std::min<int64_t>(a.sizes[d], INT32_MAX)));
    for (int k = 0; k < N; ++k) a.strides[k][d] = it.strides(k)[src];
  }
  return a;
}

inline bool needs_wide_index(int64_t numel) { return numel >= (int64_t(1) << 31); }

template <int VEC, class F, class Out, class A, class B, class C>
__global__ void __launch_bounds__(kBlock) ternary_contiguous(int64_t n, F f, Out* out, const A* a, const B* b, const C* c) {
  const int64_t step = int64_t(gridDim.x) * kBlock;
  const int64_t first = int64_t(blockIdx.x) * kBlock + threadIdx.x;
  const int64_t nvec = n / VEC;
  for (int64_t v = first; v < nvec; v += step) {
    const Vec<A, VEC> x = reinterpret_cast<const Vec<A, VEC>*>(a)[v];
    const Vec<B, VEC> y = reinterpret_cast<const Vec<B, VEC>*>(b)[v];
    const Vec<C, VEC> z = reinterpret_cast<const Vec<C, VEC>*>(c)[v];
    Vec<Out, VEC> o;
#pragma unroll
    for (int k = 0; k < VEC; ++k) o.v[k] = f(x.v[k], y.v[k], z.v[k]);
    reinterpret_cast<Vec<Out, VEC>*>(out)[v] = o;
  }
  for (int64_t i = nvec * VEC + first; i < n; i += step) out[i] = f(a[i], b[i], c[i]);
}

template <bool WIDE, class F, class Out, class A, class B, class C>
__global__ void __launch_bounds__(kBlock) ternary_strided(IterArgs<4> args, F f) {
  const int64_t step = int64_t(gridDim.x) * kBlock;
  for (int64_t i = int64_t(blockIdx.x) * kBlock + threadIdx.x; i < args.numel; i += step) {
    int64_t off[4];
    args.template offsets<WIDE>(i, off);
    *reinterpret_cast<Out*>(args.ptrs[0] + off[0]) =
        f(*reinterpret_cast<const A*>(args.ptrs[1] + off[1]), *reinterpret_cast<const B*>(args.ptrs[2] + off[2]),
          *reinterpret_cast<const C*>(args.ptrs[3] + off[3]));
  }
}

// out = f(a, b, c) over it (operands out, a, b, c) on the current stream of its device.
template <class Out, class A, class B, class C, class F>
void launch_ternary(const char* op, const TensorIter& it, const F& f) {
  if (it.numel() == 0) return;
  const IterArgs<4> args = iter_args<4>(it, op);
  const int device = it.device().index();
  CudaDeviceScope scope(device);
  cudaStream_t stream = current_cuda_stream(device);
  constexpr size_t widest = std::max({sizeof(Out), sizeof(A), sizeof(B), sizeof(C)});
  constexpr int VEC = int(16 / widest);
  auto aligned = [&](int k, size_t elem) { return uintptr_t(args.ptrs[k]) % (elem * VEC) == 0; };
  if (args.contiguous && aligned(0, sizeof(Out)) && aligned(1, sizeof(A)) && aligned(2, sizeof(B)) &&
      aligned(3, sizeof(C))) {
    ternary_contiguous<VEC, F, Out, A, B, C><<<grid_size(args.numel / VEC + 1, device), kBlock, 0, stream>>>(
        args.numel, f, reinterpret_cast<Out*>(args.ptrs[0]), reinterpret_cast<const A*>(args.ptrs[1]),
        reinterpret_cast<const B*>(args.ptrs[2]), reinterpret_cast<const C*>(args.ptrs[3]));
  } else if (needs_wide_index(args.numel)) {
    ternary_strided<true, F, Out, A, B, C><<<grid_size(args.numel, device), kBlock, 0, stream>>>(args, f);
  } else {
    ternary_strided<false, F, Out, A, B, C><<<grid_size(args.numel, device), kBlock, 0, stream>>>(args, f);
  }
  WICK_CUDA_AFTER_LAUNCH(op, stream);
}

// ---- checks that must finish before an op writes (an out-of-range index, an integer zero
// divisor): a scan kernel records one offending value, and the host waits for the answer.

template <bool WIDE, int N, class F>
__global__ void __launch_bounds__(kBlock) find_kernel(IterArgs<N> args, F bad, unsigned long long* found) {
  const int64_t step = int64_t(gridDim.x) * kBlock;
  for (int64_t i = int64_t(blockIdx.x) * kBlock + threadIdx.x; i < args.numel; i += step) {
    int64_t off[N];
    args.template offsets<WIDE>(i, off);
    int64_t value = 0;
    if (bad(args.ptrs, off, value)) {
      atomicExch(found + 1, static_cast<unsigned long long>(value));
      atomicExch(found, 1ull);
    }
  }
}

// Some value v for which bad(ptrs, offsets, v) held over the elements of args, or nullopt.
// Synchronizes with the current stream (the price of raising before anything is written).
template <int N, class F>
std::optional<int64_t> find_any(const IterArgs<N>& args, int device, const char* op, const F& bad) {
  if (args.numel == 0) return std::nullopt;
  CudaDeviceScope scope(device);
  cudaStream_t stream = current_cuda_stream(device);
  Tensor flag = empty({2}, TensorOptions(kInt64).device(Device(kCUDA, device)));
  auto* found = static_cast<unsigned long long*>(flag.data_ptr());
  WICK_CUDA_CHECK(cudaMemsetAsync(found, 0, 16, stream), op);
  if (needs_wide_index(args.numel))
    find_kernel<true><<<grid_size(args.numel, device), kBlock, 0, stream>>>(args, bad, found);
  else
    find_kernel<false><<<grid_size(args.numel, device), kBlock, 0, stream>>>(args, bad, found);
  WICK_CUDA_AFTER_LAUNCH(op, stream);
  unsigned long long host[2] = {};
  WICK_CUDA_CHECK(cudaMemcpyAsync(host, found, 16, cudaMemcpyDeviceToHost, stream), op);
  WICK_CUDA_CHECK(cudaStreamSynchronize(stream), op);
  if (!host[0]) return std::nullopt;
  return int64_t(host[1]);
}

}  // namespace wick::detail::gpu
