/* The one elementwise launcher: out[i] = f(in...[i]) for 0 to 3 inputs, any dtypes, any
 * layout (launch_elementwise<Out, In...>(op, plan, f)). Every elementwise op (fill, casts,
 * arithmetic, comparisons, unary math, where, clamp, the pointwise ops) is an instance of it
 * with its own functor, so there is one template to tune and to compile. Kernels that need
 * operand addresses rather than values (gather, the scans that check operands before an op
 * writes) run on the same strided kernel through launch_strided.
 *
 * Work split: 256-thread blocks.
 * - Contiguous operands: one block per kBlock * U vectors of 16 bytes of the widest
 *   operand (VEC elements each, e.g. 4 floats; the others load the same elements), each
 *   thread issuing its U loads per input before its stores (U = kUnrollFor: 1 for one input,
 *   4 for more); as many blocks as the size needs (64-bit indices). The last n % VEC
 *   elements go one per thread of block 0.
 * - Strided operands (views, broadcasting): at most 8 blocks per SM (a full wave at 2048
 *   threads/SM), each thread walking a grid-stride loop with a 64-bit index (measured faster
 *   than a 32-bit one for where and clamp), one element per step; the coalesced multi-index
 *   comes from 32-bit division by multiply-and-shift (a 64-bit division is ~70 instructions)
 *   in StridedArgs::offsets, the one place offsets are computed; offsets use TensorIter's byte
 *   strides. Launches over 2^31 elements are split on the host along the outer dimensions,
 *   so the 32-bit division is exact in every piece.
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
#include <optional>
#include <type_traits>
#include <utility>

#include "core/op_math.h"
#include "cuda/cuda_check.h"
#include "cuda/kernels/plan.h"
#include "cuda/runtime.h"
#include "wick/dtype.h"
#include "wick/ops.h"

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

// The type arithmetic runs in is opmath_t<T> (core/op_math.h), as on the CPU.

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

template <class... T> struct Types {};

// ---- the strided path

// The operands of one launch of fewer than 2^31 elements, innermost dimension first.
template <int N>
struct StridedArgs {
  int ndim;
  FastDivmod sizes[kMaxDims];
  int64_t strides[N][kMaxDims];
  char* ptrs[N];

  // Byte offsets of element i of every operand.
  __device__ __forceinline__ void offsets(uint32_t i, int64_t (&off)[N]) const {
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] = 0;
#pragma unroll
    for (int d = 0; d < kMaxDims; ++d) {
      if (d == ndim) break;
      const uint32_t q = sizes[d].div(i);
      const int64_t r = int64_t(i - q * sizes[d].divisor);
      i = q;
#pragma unroll
      for (int k = 0; k < N; ++k) off[k] += r * strides[k][d];
    }
  }
};

// body(ptrs, offsets) for every element of args.
template <int N, class Body>
__global__ void __launch_bounds__(kBlock) strided_kernel(int64_t n, Body body, StridedArgs<N> args) {
  const int64_t step = int64_t(gridDim.x) * kBlock;
  for (int64_t i = int64_t(blockIdx.x) * kBlock + threadIdx.x; i < n; i += step) {
    int64_t off[N];
    args.offsets(uint32_t(i), off);
    body(args.ptrs, off);
  }
}

// The grid of a grid-stride kernel of kBlock-thread blocks, the one rule of the CUDA kernels:
// the blocks the work asks for (blocks_for(items), or one a row), but at most waves times the
// blocks that the device's SMs hold at once (2048 threads each), and at least one.
inline int64_t blocks_for(int64_t items) { return (items + kBlock - 1) / kBlock; }
inline int grid_blocks(int64_t blocks, int device, int64_t waves = 1) {
  const int64_t cap = int64_t(sm_count(device)) * (2048 / kBlock) * waves;
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

// Runs body(char* const* ptrs, const int64_t (&offsets)[N]) for every element of p (N
// operands) on the current stream of p's device, through the strided kernel.
template <int N, class Body>
void launch_strided(const char* op, const Plan& p, const Body& body) {
  if (p.numel == 0) return;
  CudaDeviceScope scope(p.device);
  cudaStream_t stream = current_cuda_stream(p.device);
  for_each_32bit_piece(p, [&](const Plan& q) {
    StridedArgs<N> args;
    args.ndim = q.ndim;
    for (int d = 0; d < q.ndim; ++d) {  // innermost first
      const int src = q.ndim - 1 - d;
      args.sizes[d] = FastDivmod(uint32_t(q.shape[src]));
      for (int k = 0; k < N; ++k) args.strides[k][d] = q.strides[k][src];
    }
    for (int k = 0; k < N; ++k) args.ptrs[k] = q.ptrs[k];
    strided_kernel<N, Body>
        <<<grid_blocks(blocks_for(q.numel), q.device), kBlock, 0, stream>>>(q.numel, body, args);
    WICK_CUDA_AFTER_LAUNCH(op, stream);
  });
}

template <class Out, class F, class... In, size_t... I>
__device__ __forceinline__ void apply_at(const F& f, char* const* ptrs,
                                         const int64_t (&off)[sizeof...(In) + 1], Types<In...>,
                                         std::index_sequence<I...>) {
  *reinterpret_cast<Out*>(ptrs[0] + off[0]) = f(*reinterpret_cast<const In*>(ptrs[I + 1] + off[I + 1])...);
}

// The strided kernel's body for values: out = f(in...) at the element's offsets.
template <class F, class Out, class... In>
struct ValuesBody {
  F f;
  __device__ __forceinline__ void operator()(char* const* ptrs,
                                             const int64_t (&off)[sizeof...(In) + 1]) const {
    apply_at<Out>(f, ptrs, off, Types<In...>{}, std::index_sequence_for<In...>{});
  }
};

// The strided kernel's body for VEC consecutive elements of every operand at once (the
// innermost dimension unit-strided in all of them): out = f(in...) over 16-byte vectors.
template <int VEC, class Out, class F, class... In, size_t... I>
__device__ __forceinline__ void apply_vec_at(const F& f, char* const* ptrs,
                                             const int64_t (&off)[sizeof...(In) + 1], Types<In...>,
                                             std::index_sequence<I...>);

template <int VEC, class F, class Out, class... In>
struct VecValuesBody {
  F f;
  __device__ __forceinline__ void operator()(char* const* ptrs,
                                             const int64_t (&off)[sizeof...(In) + 1]) const {
    apply_vec_at<VEC, Out>(f, ptrs, off, Types<In...>{}, std::index_sequence_for<In...>{});
  }
};

// p seen in vectors of vec elements: when the innermost dimension is unit-strided in every
// operand (elem[k] bytes an element) and splits into whole vectors, and every operand's
// pointer and other strides keep each vector 16-byte aligned. A transpose made contiguous
// (a [B, H, T, d] view copied to [B, T, H, d]) moves a 16-byte vector a thread instead of one
// element, with one offset computation per vector.
template <int N>
bool vector_plan(const Plan& p, const size_t (&elem)[N], int vec, Plan& q) {
  if (vec <= 1 || p.ndim < 1 || p.nops != N) return false;
  const int in = p.ndim - 1;
  if (p.shape[in] % vec != 0) return false;
  for (int k = 0; k < N; ++k) {
    const int64_t bytes = int64_t(elem[k]) * vec;
    if (p.strides[k][in] != int64_t(elem[k]) || uintptr_t(p.ptrs[k]) % uint64_t(bytes) != 0) return false;
    for (int d = 0; d < in; ++d)
      if (p.strides[k][d] % bytes != 0) return false;
  }
  q = p;
  q.shape[in] = p.shape[in] / vec;
  q.numel = p.numel / vec;
  for (int k = 0; k < N; ++k) q.strides[k][in] = int64_t(elem[k]) * vec;
  return true;
}

// ---- the contiguous path

// Vectors per thread in the contiguous kernel: a block covers kBlock * unroll consecutive
// vectors, and each thread issues all its loads before its first store. Measured on an H200
// (64M floats): one input streams fastest with one vector per thread and many blocks (4180
// GB/s, cudaMemcpy's rate, against 3990 with four); two inputs with four (add at 4300).
template <int Inputs>
inline constexpr int kUnrollFor = Inputs <= 1 ? 1 : 4;

// One vector of each input.
template <int VEC, class... T> struct VecRegs {};
template <int VEC, class T, class... R>
struct VecRegs<VEC, T, R...> {
  Vec<T, VEC> head;
  VecRegs<VEC, R...> tail;
};
template <size_t I, class R>
__device__ __forceinline__ auto& reg(R& r) {
  if constexpr (I == 0) return r.head;
  else return reg<I - 1>(r.tail);
}

template <int N>
struct Operands {
  char* ptrs[N];
};

template <int VEC, class Out, class F, class... In, size_t... I>
__device__ __forceinline__ void contiguous_body(int64_t n, const F& f, char* const* p, Types<In...>,
                                                std::index_sequence<I...>) {
  constexpr int kUnroll = kUnrollFor<int(sizeof...(In))>;
  const int64_t nvec = n / VEC;
  const int64_t base = int64_t(blockIdx.x) * (kBlock * kUnroll) + threadIdx.x;
  auto* o_vec = reinterpret_cast<Vec<Out, VEC>*>(p[0]);
  VecRegs<VEC, In...> r[kUnroll];
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const int64_t v = base + u * kBlock;
    if (v < nvec) ((reg<I>(r[u]) = reinterpret_cast<const Vec<In, VEC>*>(p[I + 1])[v]), ...);
  }
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const int64_t v = base + u * kBlock;
    if (v < nvec) {
      Vec<Out, VEC> o;
#pragma unroll
      for (int k = 0; k < VEC; ++k) o.v[k] = f(reg<I>(r[u]).v[k]...);
      o_vec[v] = o;
    }
  }
  if (blockIdx.x == 0) {  // the last n % VEC elements
    const int64_t i = nvec * VEC + threadIdx.x;
    if (i < n) reinterpret_cast<Out*>(p[0])[i] = f(reinterpret_cast<const In*>(p[I + 1])[i]...);
  }
}

template <int VEC, class Out, class F, class... In, size_t... I>
__device__ __forceinline__ void apply_vec_at(const F& f, char* const* ptrs,
                                             const int64_t (&off)[sizeof...(In) + 1], Types<In...>,
                                             std::index_sequence<I...>) {
  VecRegs<VEC, In...> r;
  ((reg<I>(r) = *reinterpret_cast<const Vec<In, VEC>*>(ptrs[I + 1] + off[I + 1])), ...);
  Vec<Out, VEC> o;
#pragma unroll
  for (int k = 0; k < VEC; ++k) o.v[k] = f(reg<I>(r).v[k]...);
  *reinterpret_cast<Vec<Out, VEC>*>(ptrs[0] + off[0]) = o;
}

template <int VEC, class F, class Out, class... In>
__global__ void __launch_bounds__(kBlock) contiguous_kernel(int64_t n, F f, Operands<sizeof...(In) + 1> ops) {
  contiguous_body<VEC, Out>(n, f, ops.ptrs, Types<In...>{}, std::index_sequence_for<In...>{});
}

// ---- the launcher

// The driver's handle of a kernel on each device, for launch_kernel (cuda_check.h).
template <auto Kernel>
inline std::atomic<void*> kernel_handle[kMaxCudaDevices];

// Runs out = f(in...) over p (operands out, in...: their C++ types) on the current stream of
// p's device: the contiguous kernel when every operand is dense and 16-byte-vector aligned,
// else the strided one.
template <class Out, class... In, class F>
void launch_elementwise(const char* op, const Plan& p, const F& f) {
  constexpr int N = sizeof...(In) + 1;
  static_assert(N <= kMaxOperands, "at most 3 inputs");
  if (p.numel == 0) return;
  constexpr size_t elem[N] = {sizeof(Out), sizeof(In)...};
  constexpr size_t widest = std::max({sizeof(Out), sizeof(In)...});
  constexpr int VEC = int(16 / widest);
  bool vectorizable = p.contiguous;
  for (int k = 0; k < N; ++k) vectorizable = vectorizable && uintptr_t(p.ptrs[k]) % (elem[k] * VEC) == 0;
  if (!vectorizable) {
    Plan q;
    if (vector_plan<N>(p, elem, VEC, q))
      return launch_strided<N>(op, q, VecValuesBody<VEC, F, Out, In...>{f});
    return launch_strided<N>(op, p, ValuesBody<F, Out, In...>{f});
  }
  CudaDeviceScope scope(p.device);
  cudaStream_t stream = current_cuda_stream(p.device);
  Operands<N> ops;
  for (int k = 0; k < N; ++k) ops.ptrs[k] = p.ptrs[k];
  constexpr int64_t per_block = kBlock * kUnrollFor<int(sizeof...(In))>;
  const int64_t blocks = std::max<int64_t>(1, (p.numel / VEC + per_block - 1) / per_block);
  int64_t n = p.numel;
  F fn = f;
  void* args[] = {&n, &fn, &ops};
  constexpr auto kernel = &contiguous_kernel<VEC, F, Out, In...>;
  launch_kernel(reinterpret_cast<const void*>(kernel), kernel_handle<kernel>[p.device], dim3(unsigned(blocks)),
                dim3(kBlock), stream, args, op);
}

// ---- checks that must finish before an op writes (an out-of-range index, an integer zero
// divisor): the strided kernel records one offending value, and the host waits for the answer.

template <class Pred>
struct FindBody {
  Pred bad;
  unsigned long long* found;
  template <int N>
  __device__ __forceinline__ void operator()(char* const* ptrs, const int64_t (&off)[N]) const {
    int64_t value = 0;
    if (bad(ptrs, off, value)) {
      atomicExch(found + 1, static_cast<unsigned long long>(value));
      atomicExch(found, 1ull);
    }
  }
};

// find_any's body inside a graph capture: a bad value stops the kernel (the launch's error is
// the next call's; the device's context is lost, as after PyTorch's device-side assertions).
template <class Pred>
struct TrapBody {
  Pred bad;
  template <int N>
  __device__ __forceinline__ void operator()(char* const* ptrs, const int64_t (&off)[N]) const {
    int64_t value = 0;
    if (bad(ptrs, off, value)) {
      printf("wick: a checked value (%lld) is out of range in a kernel captured in a CUDA graph\n",
             static_cast<long long>(value));
      __trap();
    }
  }
};

// Some value v for which bad(ptrs, offsets, v) held over the N operands of p, or nullopt.
// Synchronizes with the current stream (the price of raising before anything is written). While
// the stream captures a graph the host cannot wait: the check is captured as a kernel that stops
// on a bad value, and the answer is nullopt.
template <int N, class Pred>
std::optional<int64_t> find_any(const char* op, const Plan& p, const Pred& bad) {
  if (p.numel == 0) return std::nullopt;
  CudaDeviceScope scope(p.device);
  cudaStream_t stream = current_cuda_stream(p.device);
  if (stream_is_capturing(p.device, stream)) {
    launch_strided<N>(op, p, TrapBody<Pred>{bad});
    return std::nullopt;
  }
  Tensor flag = empty({2}, TensorOptions(kInt64).device(Device(kCUDA, p.device)));
  auto* found = static_cast<unsigned long long*>(flag.data_ptr());
  WICK_CUDA_CHECK(cudaMemsetAsync(found, 0, 16, stream), op);
  launch_strided<N>(op, p, FindBody<Pred>{bad, found});
  unsigned long long host[2] = {};
  WICK_CUDA_CHECK(cudaMemcpyAsync(host, found, 16, cudaMemcpyDeviceToHost, stream), op);
  WICK_CUDA_CHECK(cudaStreamSynchronize(stream), op);
  if (!host[0]) return std::nullopt;
  return int64_t(host[1]);
}

}  // namespace wick::detail::gpu
