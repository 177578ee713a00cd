// The launch plan of an elementwise kernel, read from a TensorIter as it is: operand pointers,
// TensorIter's coalesced shape and byte strides (outermost dimension first), never coalesced again.
#pragma once

#include <cstdint>

#include "core/tensor_iter.h"

namespace wick::detail::gpu {

inline constexpr int kMaxDims = 16;
inline constexpr int kMaxOperands = TensorIter::kMaxOperands;  // the output and up to 3 inputs

struct Plan {
  int device = 0;
  int nops = 1;  // operand 0 is the output
  int ndim = 1;
  int64_t numel = 0;
  bool contiguous = true;  // one dimension, unit strides for every operand
  char* ptrs[kMaxOperands] = {};
  int64_t shape[kMaxDims] = {};
  int64_t strides[kMaxOperands][kMaxDims] = {};
};

// Throws NotImplementedError naming op beyond kMaxDims coalesced dimensions.
Plan make_plan(const TensorIter& it, const char* op);

}  // namespace wick::detail::gpu
