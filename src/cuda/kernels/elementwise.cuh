/* The one elementwise kernel: out[i] = f(in0[i], in1[i]) for 0, 1 or 2 inputs, any dtypes,
 * any layout. Every elementwise op (fill, casts, arithmetic, and later unary ops) is an
 * instance of it with its own functor, so there is one template to tune and to compile.
 *
 * Work split: 256-thread blocks.
 * - Contiguous operands: one block per kBlock * kUnroll vectors of 16 bytes of the widest
 *   operand (VEC elements each, e.g. 4 floats; the others load the same elements), each
 *   thread issuing its kUnroll loads before its stores; as many blocks as the size needs
 *   (64-bit indices), so each block streams one contiguous 16 KiB stretch. The last n % VEC
 *   elements go one per thread of block 0.
 * - Strided operands (views, broadcasting): at most 8 blocks per SM (a full wave at 2048
 *   threads/SM), each thread walking a grid-stride loop, one element per step; the coalesced
 *   multi-index comes from 32-bit division by multiply-and-shift (a 64-bit division is
 *   ~70 instructions); offsets use TensorIter's byte strides. Launches over 2^31 elements
 *   are split on the host along the outer dimensions.
 * Why it is fast: the contiguous path is pure streaming with the fewest, widest memory
 * transactions and enough threads in flight to cover DRAM latency; no shared memory or
 * synchronization is needed.
 */
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "cuda/kernels/plan.h"
#include "cuda/cuda_check.h"
#include "cuda/runtime.h"
#include "wick/dtype.h"

namespace wick::detail::gpu {

inline constexpr int kBlock = 256;

// ---- conversions on the device (the hardware instructions for 16-bit floats)

template <class T> inline constexpr bool is_half_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

template <class T>
__device__ __forceinline__ float half_to_float(T v) {
  if constexpr (std::is_same_v<T, Half>) return __half2float(__ushort_as_half(v.x));
  else return __bfloat162float(__ushort_as_bfloat16(v.x));
}

template <class T>
__device__ __forceinline__ T float_to_half(float f) {
  if constexpr (std::is_same_v<T, Half>) return T(__half_as_ushort(__float2half_rn(f)), typename T::from_bits_t{});
  else return T(__bfloat16_as_ushort(__float2bfloat16_rn(f)), typename T::from_bits_t{});
}

// static_cast with PyTorch's rules: 16-bit floats through float, bool as != 0.
template <class To, class From>
__device__ __forceinline__ To cast(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (is_half_v<From>) {
    return cast<To>(half_to_float(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (is_half_v<To>) {
    return float_to_half<To>(static_cast<float>(v));
  } else {
    return static_cast<To>(v);
  }
}

// The type arithmetic runs in: float for 16-bit floats, int for bool, else the type itself.
template <class T> struct OpMathOf { using type = T; };
template <> struct OpMathOf<Half> { using type = float; };
template <> struct OpMathOf<BFloat16> { using type = float; };
template <> struct OpMathOf<bool> { using type = int; };
template <class T> using OpMath = typename OpMathOf<T>::type;

// ---- 32-bit division by a runtime constant: q = (umulhi(n, m) + n) >> s, exact for n < 2^31.
struct FastDivmod {
  uint32_t divisor = 1, multiplier = 1, shift = 0;
  FastDivmod() = default;
  // d == 0 (a dimension of an empty tensor, where nothing is divided) acts as 1.
  explicit FastDivmod(uint32_t d) : divisor(d) {
    if (d == 0) return;
    shift = 0;
    while ((uint64_t(1) << shift) < d) ++shift;  // 2^shift >= d
    multiplier = uint32_t(((uint64_t(1) << 32) * ((uint64_t(1) << shift) - d)) / d + 1);
  }
  __host__ __device__ __forceinline__ uint32_t div(uint32_t n) const {
#if defined(__CUDA_ARCH__)
    const uint32_t t = __umulhi(n, multiplier);
#else
    const uint32_t t = uint32_t((uint64_t(n) * multiplier) >> 32);
#endif
    return (t + n) >> shift;
  }
};

template <class T, int N>
struct alignas(sizeof(T) * N) Vec {
  T v[N];
};

template <int NOPS>
struct StridedArgs {
  int ndim;                           // innermost first below
  FastDivmod sizes[kMaxDims];
  int64_t strides[NOPS][kMaxDims];
  char* ptrs[NOPS];
};

template <int NIN, class F, class Out, class In0, class In1>
__device__ __forceinline__ Out apply(const F& f, In0 a, In1 b) {
  if constexpr (NIN == 0) return f();
  else if constexpr (NIN == 1) return f(a);
  else return f(a, b);
}

// Vectors per thread in the contiguous kernel: a block covers kBlock * kUnroll consecutive
// vectors, and each thread issues all its loads before its first store.
inline constexpr int kUnroll = 4;

template <int VEC, int NIN, class F, class Out, class In0, class In1>
__global__ void __launch_bounds__(kBlock)
    contiguous_kernel(int64_t n, F f, Out* out, const In0* in0, const In1* in1) {
  const int64_t nvec = n / VEC;
  const int64_t base = int64_t(blockIdx.x) * (kBlock * kUnroll) + threadIdx.x;
  const auto* a_vec = reinterpret_cast<const Vec<In0, VEC>*>(in0);
  const auto* b_vec = reinterpret_cast<const Vec<In1, VEC>*>(in1);
  auto* o_vec = reinterpret_cast<Vec<Out, VEC>*>(out);
  Vec<In0, VEC> a[kUnroll];
  Vec<In1, VEC> b[kUnroll];
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const int64_t v = base + u * kBlock;
    if (v < nvec) {
      if constexpr (NIN >= 1) a[u] = a_vec[v];
      if constexpr (NIN >= 2) b[u] = b_vec[v];
    }
  }
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const int64_t v = base + u * kBlock;
    if (v < nvec) {
      Vec<Out, VEC> o;
#pragma unroll
      for (int k = 0; k < VEC; ++k) o.v[k] = apply<NIN, F, Out>(f, a[u].v[k], b[u].v[k]);
      o_vec[v] = o;
    }
  }
  if (blockIdx.x == 0) {  // the last n % VEC elements
    const int64_t i = nvec * VEC + threadIdx.x;
    if (i < n) {
      In0 x{};
      In1 y{};
      if constexpr (NIN >= 1) x = in0[i];
      if constexpr (NIN >= 2) y = in1[i];
      out[i] = apply<NIN, F, Out>(f, x, y);
    }
  }
}

template <int NIN, class F, class Out, class In0, class In1>
__global__ void __launch_bounds__(kBlock) strided_kernel(uint32_t n, F f, StridedArgs<NIN + 1> args) {
  const uint32_t step = gridDim.x * kBlock;
  for (uint32_t i = blockIdx.x * kBlock + threadIdx.x; i < n; i += step) {
    int64_t off[NIN + 1] = {};
    uint32_t idx = i;
#pragma unroll
    for (int d = 0; d < kMaxDims; ++d) {
      if (d == args.ndim) break;
      const uint32_t q = args.sizes[d].div(idx);
      const int64_t r = int64_t(idx - q * args.sizes[d].divisor);
      idx = q;
#pragma unroll
      for (int k = 0; k <= NIN; ++k) off[k] += r * args.strides[k][d];
    }
    In0 a{};
    In1 b{};
    if constexpr (NIN >= 1) a = *reinterpret_cast<const In0*>(args.ptrs[1] + off[1]);
    if constexpr (NIN >= 2) b = *reinterpret_cast<const In1*>(args.ptrs[2] + off[2]);
    *reinterpret_cast<Out*>(args.ptrs[0] + off[0]) = apply<NIN, F, Out>(f, a, b);
  }
}

inline int grid_size(int64_t work, int device) {
  const int64_t blocks = (work + kBlock - 1) / kBlock;
  const int64_t cap = int64_t(cuda_sm_count(device)) * (2048 / kBlock);
  return int(std::max<int64_t>(1, std::min(blocks, cap)));
}

// Calls fn(sub-plan) on pieces of p of fewer than 2^31 elements, split along outer dimensions.
template <class Fn>
void for_each_32bit_piece(const Plan& p, const Fn& fn) {
  constexpr int64_t kLimit = int64_t(1) << 31;
  if (p.numel < kLimit) {
    fn(p);
    return;
  }
  const int64_t outer = p.shape[0];
  const int64_t inner = p.numel / outer;
  Plan q = p;
  if (inner < kLimit) {
    const int64_t rows = (kLimit - 1) / inner;
    for (int64_t start = 0; start < outer; start += rows) {
      q.shape[0] = std::min(rows, outer - start);
      q.numel = q.shape[0] * inner;
      for (int k = 0; k < p.nops; ++k) q.ptrs[k] = p.ptrs[k] + start * p.strides[k][0];
      fn(q);
    }
    return;
  }
  // One outer index at a time over the inner dimensions.
  q.ndim = p.ndim - 1;
  q.numel = inner;
  for (int d = 0; d < q.ndim; ++d) {
    q.shape[d] = p.shape[d + 1];
    for (int k = 0; k < p.nops; ++k) q.strides[k][d] = p.strides[k][d + 1];
  }
  for (int64_t i = 0; i < outer; ++i) {
    for (int k = 0; k < p.nops; ++k) q.ptrs[k] = p.ptrs[k] + i * p.strides[k][0];
    for_each_32bit_piece(q, fn);
  }
}

// Runs f over p on the current stream of p's device. Out/In0/In1 are the operands' C++ types
// (In0/In1 unused below NIN inputs).
template <int NIN, class Out, class In0 = char, class In1 = char, class F>
void launch_elementwise(const char* op, const Plan& p, const F& f) {
  if (p.numel == 0) return;
  CudaDeviceScope scope(p.device);
  cudaStream_t stream = current_cuda_stream(p.device);
  constexpr size_t widest = std::max({sizeof(Out), NIN >= 1 ? sizeof(In0) : size_t(1), NIN >= 2 ? sizeof(In1) : size_t(1)});
  constexpr int VEC = int(16 / widest);
  auto aligned = [&](const void* ptr, size_t elem) { return uintptr_t(ptr) % (elem * VEC) == 0; };
  const bool vectorizable = p.contiguous && aligned(p.ptrs[0], sizeof(Out)) &&
                            (NIN < 1 || aligned(p.ptrs[1], sizeof(In0))) && (NIN < 2 || aligned(p.ptrs[2], sizeof(In1)));
  if (vectorizable) {
    const int64_t blocks = std::max<int64_t>(1, (p.numel / VEC + kBlock * kUnroll - 1) / (kBlock * kUnroll));
    contiguous_kernel<VEC, NIN, F, Out, In0, In1><<<unsigned(blocks), kBlock, 0, stream>>>(
        p.numel, f, reinterpret_cast<Out*>(p.ptrs[0]), reinterpret_cast<const In0*>(p.ptrs[1]),
        reinterpret_cast<const In1*>(p.ptrs[2]));
    WICK_CUDA_AFTER_LAUNCH(op, stream);
    return;
  }
  for_each_32bit_piece(p, [&](const Plan& q) {
    StridedArgs<NIN + 1> args;
    args.ndim = q.ndim;
    for (int d = 0; d < q.ndim; ++d) {  // innermost first
      const int src = q.ndim - 1 - d;
      args.sizes[d] = FastDivmod(uint32_t(q.shape[src]));
      for (int k = 0; k <= NIN; ++k) args.strides[k][d] = q.strides[k][src];
    }
    for (int k = 0; k <= NIN; ++k) args.ptrs[k] = q.ptrs[k];
    strided_kernel<NIN, F, Out, In0, In1><<<grid_size(q.numel, q.device), kBlock, 0, stream>>>(uint32_t(q.numel), f, args);
    WICK_CUDA_AFTER_LAUNCH(op, stream);
  });
}

}  // namespace wick::detail::gpu
