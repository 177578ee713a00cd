// CPU loops over a TensorIter: the element range is cut into chunks run by OpenMP threads;
// each chunk calls an inner function on runs of the innermost dimension, with byte strides,
// so that the contiguous case is one flat loop the compiler vectorizes.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>

#include "core/op_math.h"
#include "core/tensor_iter.h"

namespace wick::detail::cpu {

// Below this many elements an op runs on the calling thread (thread start-up costs more).
inline constexpr int64_t kParallelGrain = 32768;

// f(char** ptrs, const int64_t* inner_strides, int64_t n) for elements [begin, end).
template <class F>
void cpu_loop_range(const TensorIter& it, int64_t begin, int64_t end, F& f) {
  constexpr int kMax = TensorIter::kMaxOperands;
  const int nd = it.ndim(), nops = it.noperands();
  const IntArrayRef shape = it.shape();
  char* base[kMax];
  int64_t inner[kMax];
  for (int i = 0; i < nops; ++i) {
    base[i] = static_cast<char*>(it.operand(i).data_ptr());
    inner[i] = it.strides(i)[nd - 1];
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
void cpu_loop(const TensorIter& it, F&& f) {
  const int64_t n = it.numel();
  if (n == 0) return;
  if (n < kParallelGrain || omp_in_parallel()) {
    cpu_loop_range(it, 0, n, f);
    return;
  }
  const int64_t chunks = std::min<int64_t>(omp_get_max_threads(), (n + kParallelGrain - 1) / kParallelGrain);
#pragma omp parallel for num_threads(int(chunks)) schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    F local = f;
    cpu_loop_range(it, n * c / chunks, n * (c + 1) / chunks, local);
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
