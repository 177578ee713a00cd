// The launch plan of an elementwise kernel, read from a TensorIter (or one output tensor):
// operand pointers, the coalesced shape and byte strides, outermost dimension first.
#pragma once

#include <cstdint>

#include "core/tensor_iter.h"

namespace wick::detail::gpu {

inline constexpr int kMaxDims = 16;

struct Plan {
  int device = 0;
  int nops = 1;  // operand 0 is the output
  int ndim = 1;
  int64_t numel = 0;
  bool contiguous = true;  // one dimension, unit strides for every operand
  char* ptrs[3] = {};
  int64_t shape[kMaxDims] = {};
  int64_t strides[3][kMaxDims] = {};
};

// Throws NotImplementedError naming op beyond kMaxDims coalesced dimensions.
Plan make_plan(const TensorIter& it, const char* op);
// The output alone (fill): its dimensions coalesced as TensorIter does.
Plan make_plan(const Tensor& out, const char* op);

}  // namespace wick::detail::gpu
