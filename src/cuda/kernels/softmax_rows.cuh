/* The running (max, sum of exp) pair of softmax.cu's online_kernel and its warp reduction,
 * shared with loss.cu's one-block cross_entropy kernel so that the log-probabilities that
 * kernel writes come from the same arithmetic, in the same order, as log_softmax's own
 * (rows of up to 1024 values, a warp per row).
 */
#pragma once

#include "cuda/kernels/block_reduce.cuh"
#include "cuda/kernels/device_math.cuh"

namespace wick::detail::gpu {

template <class M>
__device__ __forceinline__ M max_of(M a, M b) {
  return a < b ? b : a;  // NaN in b is ignored, as std::max(mx, x) on the CPU; the sum turns it to nan
}

// The running pair: sum of exp(x - m) over the values seen, m their maximum.
template <class M>
struct Running {
  M m, s;
  __device__ void merge(const Running& o) {
    const M nm = max_of(m, o.m);
    if (nm == M(-INFINITY)) s = s + o.s;  // only -inf (or nothing) so far
    else s = s * m_exp(m - nm) + o.s * m_exp(o.m - nm);
    m = nm;
  }
  __device__ void add(M x) { merge(Running{x, M(1)}); }
};

// Running's merge, as block_reduce.cuh's reductions take it.
struct RunningMerge {
  template <class M>
  __device__ __forceinline__ void operator()(Running<M>& a, const Running<M>& b) const {
    a.merge(b);
  }
};

// The pair over a warp's lanes; valid in lane 0.
template <class M>
__device__ __forceinline__ Running<M> warp_merge(Running<M> r) {
  return warp_reduce(r, RunningMerge{});
}

}  // namespace wick::detail::gpu
