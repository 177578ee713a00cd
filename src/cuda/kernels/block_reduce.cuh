/* Reductions across the threads of a warp and of a block, the one mechanism of the CUDA
 * kernels, parameterised by the merge: sums and maxima (softmax.cu, loss.cu), the running
 * (max, sum of exp) pair of cross_entropy's rows (loss.cu), the states of the reduce family
 * (reduce.cu).
 *
 * merge(a, b) folds b into a (a: S&, b: const S&). A warp reduces as a tree of shuffles (lane
 * i takes lane i + 16, then i + 8, ... so the result is complete in lane 0); a block reduces
 * each warp so, then warp 0 reduces the warps' results the same way, filling the lanes beyond
 * the block's warps with identity. S is any trivially copyable state of 32-bit words (float,
 * double, a struct of them): it is shuffled word by word, as __shfl_down_sync does a double.
 */
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

namespace wick::detail::gpu {

// s as lane + delta holds it.
template <class S>
__device__ __forceinline__ S shuffle_down(const S& s, int delta) {
  static_assert(sizeof(S) % 4 == 0, "states are shuffled as 32-bit words");
  constexpr int kWords = int(sizeof(S) / 4);
  uint32_t w[kWords];
  memcpy(w, &s, sizeof(S));
#pragma unroll
  for (int k = 0; k < kWords; ++k) w[k] = __shfl_down_sync(0xffffffffu, w[k], delta);
  S r;
  memcpy(&r, w, sizeof(S));
  return r;
}

// The merge of the warp's 32 values; complete in lane 0. Every lane must call it.
template <class S, class Merge>
__device__ __forceinline__ S warp_reduce(S s, const Merge& merge) {
#pragma unroll
  for (int d = 16; d > 0; d /= 2) merge(s, shuffle_down(s, d));
  return s;
}

// One slot per warp of a block (at most 32 warps), shared by every reduction of a kernel over S.
template <class S>
__device__ __forceinline__ S* block_reduce_slots() {
  __shared__ alignas(16) unsigned char buf[sizeof(S) * 32];
  return reinterpret_cast<S*>(buf);
}

// The merge of the block's values (blockDim.x a multiple of 32); complete in thread 0. Every
// thread of the block must call it. Ends with a barrier, so the block may reduce again at once.
template <class S, class Merge>
__device__ __forceinline__ S block_reduce(S s, const Merge& merge, const S& identity) {
  S* part = block_reduce_slots<S>();
  const int lane = int(threadIdx.x) % 32, warp = int(threadIdx.x) / 32, warps = int(blockDim.x) / 32;
  s = warp_reduce(s, merge);
  if (lane == 0) part[warp] = s;
  __syncthreads();
  if (warp == 0) {
    s = lane < warps ? part[lane] : identity;
    s = warp_reduce(s, merge);
  }
  __syncthreads();  // part is reused by the next reduction
  return s;
}

// block_reduce's result, in every thread.
template <class S, class Merge>
__device__ __forceinline__ S block_all_reduce(S s, const Merge& merge, const S& identity) {
  S* part = block_reduce_slots<S>();
  s = block_reduce(s, merge, identity);
  if (threadIdx.x == 0) part[0] = s;
  __syncthreads();
  s = part[0];
  __syncthreads();  // part is reused by the next reduction
  return s;
}

// The merges of sums and of maxima.
struct SumMerge {
  template <class M>
  __device__ __forceinline__ void operator()(M& a, const M& b) const {
    a += b;
  }
};
// a < b ? b : a: a NaN in b is passed over (a NaN in a stays), as std::max(a, b) on the CPU.
struct MaxMerge {
  template <class M>
  __device__ __forceinline__ void operator()(M& a, const M& b) const {
    if (a < b) a = b;
  }
};

}  // namespace wick::detail::gpu
