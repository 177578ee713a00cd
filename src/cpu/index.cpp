// gather and index_select on the CPU: one kernel over a TensorIter whose source operand is
// restrided with stride 0 along the indexed dim, so out[i] = *(src[i] + index[i] * dim_stride).
// Indices are checked in a first pass, so a bad index throws before anything is written.
#include <cstring>

#include "cpu/kernels.h"
#include "cpu/map_loop.h"

namespace wick::detail::cpu {

namespace {

template <class I>
void check_indices(const TensorIter& it, int64_t size, const char* op) {
  int64_t bad = 0;
  bool found = false;
  auto scan = [&](char** p, const int64_t* s, int64_t n) {
    if (s[2] == 0) n = 1;  // the same index along the run
    for (int64_t i = 0; i < n && !found; ++i) {
      const int64_t v = int64_t(load<I>(p[2], s[2], i));
      if (v < 0 || v >= size) {
        found = true;
        bad = v;
      }
    }
  };
  loop_range(it, 0, it.numel(), scan);
  WICK_CHECK(!found, IndexError, op, "index ", bad, " is out of bounds for dimension with size ", size);
}

template <class T, class I>
void gather_typed(const TensorIter& it, int64_t dim_stride) {
  loop(it, [dim_stride](char** p, const int64_t* s, int64_t n) {
    if (s[2] == 0) {  // one index for the whole run (index_select of rows): a block copy
      const char* src = p[1] + int64_t(*reinterpret_cast<const I*>(p[2])) * dim_stride;
      if (s[0] == int64_t(sizeof(T)) && s[1] == int64_t(sizeof(T))) {
        std::memcpy(p[0], src, size_t(n) * sizeof(T));
      } else {
        for (int64_t i = 0; i < n; ++i)
          *reinterpret_cast<T*>(p[0] + i * s[0]) = *reinterpret_cast<const T*>(src + i * s[1]);
      }
      return;
    }
    for (int64_t i = 0; i < n; ++i) {
      const int64_t v = int64_t(load<I>(p[2], s[2], i));
      *reinterpret_cast<T*>(p[0] + i * s[0]) = *reinterpret_cast<const T*>(p[1] + i * s[1] + v * dim_stride);
    }
  });
}

// Elements are moved as bytes: only the element size matters.
template <class I>
void gather_sized(const TensorIter& it, int64_t dim_stride) {
  switch (it.output().element_size()) {
    case 1:
      return gather_typed<uint8_t, I>(it, dim_stride);
    case 2:
      return gather_typed<uint16_t, I>(it, dim_stride);
    case 4:
      return gather_typed<uint32_t, I>(it, dim_stride);
    default:
      return gather_typed<uint64_t, I>(it, dim_stride);
  }
}

}  // namespace

void gather(const TensorIter& it, int64_t dim_stride, int64_t size, const char* op) {
  if (it.numel() == 0) return;
  if (it.input(1).dtype() == kInt32) {
    check_indices<int32_t>(it, size, op);
    gather_sized<int32_t>(it, dim_stride);
  } else {
    check_indices<int64_t>(it, size, op);
    gather_sized<int64_t>(it, dim_stride);
  }
}

}  // namespace wick::detail::cpu
