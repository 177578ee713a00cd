// CPU loops over a TensorIter: the element range is cut into chunks run by OpenMP threads
// (as many as threads_for says); each chunk calls an inner function on runs of the innermost
// dimension, with byte strides, so that the contiguous case is one flat loop the compiler
// vectorizes.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>

#include "core/op_math.h"
#include "core/tensor_iter.h"
#include "core/backend_settings.h"

namespace wick::detail::cpu {

// Below this many elements an op runs on the calling thread, and above it each thread gets
// about this many elements at least (PyTorch's grain). Measured on a 2-core x86 machine with
// libgomp's spinning workers: waking one more thread costs about 1 us, so two threads break
// even on a float add or sum near 16K elements and win by 1.3-1.5x at 32K-64K; exp breaks even
// near 4K. Larger teams cost more to start (a few us for 16 threads), which the rule "one
// thread per kParallelGrain elements" keeps in proportion: a 64K-element op uses 2 threads
// whatever the core count, and all 16 are used from 512K elements.
inline constexpr int64_t kParallelGrain = 32768;

// The team size for a loop over `work` elements cut into at most `tasks` independent pieces:
// 1 (run serially) when work <= kParallelGrain, when there is a single task, or when called
// from inside a parallel region (a nested team would oversubscribe the cores), else up to
// get_num_threads(), one thread per kParallelGrain elements.
inline int threads_for(int64_t work, int64_t tasks = INT64_MAX) {
  if (work <= kParallelGrain || tasks < 2 || omp_in_parallel()) return 1;
  const int64_t t =
      std::min({int64_t(cpu_num_threads()), (work + kParallelGrain - 1) / kParallelGrain, tasks});
  return int(std::max<int64_t>(t, 1));
}

// f(char** ptrs, const int64_t* inner_strides, int64_t n) for elements [begin, end).
template <class F>
void loop_range(const TensorIter& it, int64_t begin, int64_t end, F& f) {
  constexpr int kMax = TensorIter::kMaxOperands;
  const int nd = it.ndim(), nops = it.noperands();
  const IntArrayRef shape = it.shape();
  char* base[kMax];
  int64_t inner[kMax];
  for (int i = 0; i < nops; ++i) {
    base[i] = static_cast<char*>(it.operand(i).data_ptr());
    inner[i] = it.strides(i)[nd - 1];
  }
  if (nd == 1) {  // one run (every contiguous op): no multi-index to keep
    for (int i = 0; i < nops; ++i) base[i] += begin * inner[i];
    f(base, inner, end - begin);
    return;
  }
  DimVector idx(size_t(nd), 0);
  int64_t rem = begin;
  for (int d = nd - 1; d >= 0; --d) {
    idx[d] = rem % shape[d];
    rem /= shape[d];
  }
  char* ptrs[kMax];
  while (begin < end) {
    for (int i = 0; i < nops; ++i) {
      char* p = base[i];
      const int64_t* st = it.strides(i);
      for (int d = 0; d < nd; ++d) p += idx[d] * st[d];
      ptrs[i] = p;
    }
    int64_t n = std::min(shape[nd - 1] - idx[nd - 1], end - begin);
    f(ptrs, inner, n);
    begin += n;
    idx[nd - 1] += n;
    for (int d = nd - 1; d > 0 && idx[d] == shape[d]; --d) {
      idx[d] = 0;
      ++idx[d - 1];
    }
  }
}

template <class F>
void loop(const TensorIter& it, F&& f) {
  const int64_t n = it.numel();
  if (n == 0) return;
  const int chunks = threads_for(n);
  if (chunks == 1) {
    loop_range(it, 0, n, f);
    return;
  }
#pragma omp parallel for num_threads(chunks) schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    F local = f;
    loop_range(it, n * c / chunks, n * (c + 1) / chunks, local);
  }
}

// Value conversion as PyTorch casts: to bool is "!= 0", 16-bit floats go through float.
template <class To, class From>
inline To convert(From v) {
  if constexpr (std::is_same_v<To, bool>) return static_cast<opmath_t<From>>(v) != opmath_t<From>(0);
  else if constexpr (std::is_same_v<From, Half> || std::is_same_v<From, BFloat16>) return To(float(v));
  else if constexpr (std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>) return To(float(v));
  else return static_cast<To>(v);
}

}  // namespace wick::detail::cpu
