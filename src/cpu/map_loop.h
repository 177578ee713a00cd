// map_loop: the inner loop shared by the CPU's elementwise families (unary, pointwise, compare,
// where). out[i] = f(in0[i], in1[i], ...) with each operand read as its own C++ type; a run
// whose operands are all dense becomes plain indexing the compiler vectorizes, any other run
// steps through byte strides.
#pragma once

#include <utility>

#include "cpu/loops.h"

namespace wick::detail::cpu {

template <class T>
inline const T& load(const char* p, int64_t stride, int64_t i) {
  return *reinterpret_cast<const T*>(p + i * stride);
}

template <class Out, class... In, class F, size_t... I>
inline void map_run(char** p, const int64_t* s, int64_t n, const F& f, std::index_sequence<I...>) {
  Out* o = reinterpret_cast<Out*>(p[0]);
  const bool dense = s[0] == int64_t(sizeof(Out)) && ((s[I + 1] == int64_t(sizeof(In))) && ...);
  if (dense) {
    for (int64_t i = 0; i < n; ++i) o[i] = f(reinterpret_cast<const In*>(p[I + 1])[i]...);
  } else {
    for (int64_t i = 0; i < n; ++i)
      *reinterpret_cast<Out*>(p[0] + i * s[0]) = f(load<In>(p[I + 1], s[I + 1], i)...);
  }
}

// f(In...) -> Out over every element of it (operand 0 the output).
template <class Out, class... In, class F>
void map_loop(const TensorIter& it, const F& f) {
  loop(it, [&f](char** p, const int64_t* s, int64_t n) {
    map_run<Out, In...>(p, s, n, f, std::index_sequence_for<In...>{});
  });
}

}  // namespace wick::detail::cpu
