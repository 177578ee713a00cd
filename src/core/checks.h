// The checks ops make of their arguments before any work: devices, dims, broadcasting, the
// result dtype by PyTorch's promotion rules, memory overlap, defined tensors, sizes and strides,
// values that fit a dtype. TensorIter
// (core/tensor_iter.h) makes them for the elementwise ops; any op may call them itself.
#pragma once

#include <cstdint>

#include "wick/tensor.h"

namespace wick::detail {

// Memory overlap, as PyTorch classifies it: None (disjoint or empty), Full (the same elements
// in the same order), Partial (some shared, or the same in another order), TooHard (a layout
// with holes or repeats, which is not analysed).
enum class Overlap { None, Full, Partial, TooHard };
// Every element at its own address, the elements filling one range without holes.
bool is_non_overlapping_and_dense(const Tensor& t);
Overlap overlap_status(const Tensor& a, const Tensor& b);
// ValueError "[op] unsupported operation: more than one element of the written-to tensor
// refers to a single memory location..." when out repeats an element (a size > 1 with stride 0).
void check_no_internal_overlap(const Tensor& out, const char* op);
// ValueError "[op] unsupported operation: some elements of the input tensor and the written-to
// tensor refer to a single memory location..." when out and in overlap partially.
void check_no_partial_overlap(const Tensor& out, const Tensor& in, const char* op);

// PyTorch's result_type for tensors (dimensioned before 0-d) and an optional Scalar.
Dtype result_type(std::initializer_list<Tensor> tensors, const Scalar* scalar = nullptr);
// The broadcast shape of a and b, or a ValueError naming op.
DimVector broadcast_shapes(IntArrayRef a, IntArrayRef b, const char* op);
// Throws DeviceError unless t is on device; arg names the argument.
void check_same_device(const Tensor& t, Device device, const char* op, const char* arg);
// Wraps a negative dim and checks the range (IndexError as PyTorch words it).
int64_t wrap_dim(int64_t d, int64_t ndim, const char* op);
// ValueError naming op for a negative size.
void check_sizes(IntArrayRef sizes, const char* op);
// Rejects strides of the wrong length or negative, as PyTorch's factories do.
void check_strides(IntArrayRef sizes, IntArrayRef strides, const char* op);
// ValueError "[op] value cannot be converted to type ... without overflow" when value does not fit dtype.
void check_fits(const Scalar& value, Dtype dtype, const char* op);
// PyTorch's categories of dtypes in promotion: 0 bool, 1 integer, 2 floating.
inline int promotion_category(Dtype t) { return t == kBool ? 0 : (is_floating_point(t) ? 2 : 1); }
// Throws ValueError "[op] expected a defined tensor ..." when t is undefined (Tensor()).
inline void check_defined(const Tensor& t, const char* op, const char* arg = "input") {
  WICK_CHECK(t.defined(), ValueError, op, "expected a defined tensor for argument '", arg,
             "' but got an undefined one (Tensor())");
}
// Throws ValueError "[op] invalid memory format (n)" for an integer cast to MemoryFormat that
// names none of its values.
inline void check_memory_format(MemoryFormat f, const char* op) {
  WICK_CHECK(int(f) >= 0 && int(f) <= int(MemoryFormat::ChannelsLast3d), ValueError, op, "invalid memory format (",
             int(f), ")");
}

}  // namespace wick::detail
