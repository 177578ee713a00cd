// Making tensors inside core: devices, sizes and strides of new tensors, storage, views, and
// writing values into tensors being built. (The checks of an op's arguments: core/checks.h;
// an op named as its caller: core/as_op.h; linear layers' GEMM: core/linalg.h.)
#pragma once

#include "core/checks.h"
#include "wick/tensor.h"

namespace wick::detail {

// "cuda" -> "cuda:<current>", "cpu:0" -> "cpu"; checks CUDA indices.
Device resolve_device(Device d, const char* op);
DimVector contiguous_strides(IntArrayRef sizes);
// The element count and byte size of a contiguous tensor of these sizes: ValueError naming op
// for a negative size or a product that overflows int64.
int64_t checked_numel(IntArrayRef sizes, const char* op);
size_t checked_nbytes(IntArrayRef sizes, Dtype dtype, const char* op);
// empty() and full() whose errors (sizes, overflow, out of memory) name op.
Tensor empty_for(IntArrayRef sizes, TensorOptions o, const char* op);
Tensor full_for(IntArrayRef sizes, const Scalar& value, TensorOptions o, const char* op);
Tensor make_tensor(Storage storage, Dtype dtype, IntArrayRef sizes, IntArrayRef strides, int64_t offset);
// A view of t's storage with new geometry (keeps dtype).
inline Tensor make_view(const Tensor& t, IntArrayRef sizes, IntArrayRef strides, int64_t offset) {
  return make_tensor(t.impl()->storage(), t.dtype(), sizes, strides, offset);
}
// Applies requires_grad from the options.
Tensor finish_factory(Tensor t, const TensorOptions& o);
// Options o with t's dtype and device where o names none (op names the caller in errors).
TensorOptions like_options(const Tensor& t, TensorOptions o, const char* op);
// Dense strides that keep the order of strides' dims (PyTorch's infer_dense_strides, whose
// ordering is TensorIterator's): dims sorted by increasing stride, a larger size after a smaller
// one among equal strides, a stride-0 dim where it stands; sizes 0 and 1 take no room.
DimVector infer_dense_strides(IntArrayRef sizes, IntArrayRef strides);
// The strides of a new tensor of t's sizes in memory_format (none: Preserve): t's own when t
// is non-overlapping and dense, else infer_dense_strides. ValueError naming op for a
// channels-last format of the wrong rank.
DimVector like_strides(const Tensor& t, std::optional<MemoryFormat> memory_format, const char* op);
// The strides memory_format (not Preserve) gives a new tensor of these sizes.
DimVector format_strides(IntArrayRef sizes, MemoryFormat memory_format, const char* op);
// empty_for with dense strides (a permutation of contiguous ones, any stride on a dim of size
// 1): the storage holds exactly the elements.
Tensor empty_dense_for(IntArrayRef sizes, IntArrayRef strides, TensorOptions o, const char* op);
// A new tensor like t laid out as memory_format says: the output of clone, to and *_like.
inline Tensor empty_like_for(const Tensor& t, TensorOptions o, std::optional<MemoryFormat> memory_format,
                             const char* op) {
  return empty_dense_for(t.sizes(), like_strides(t, memory_format, op), o, op);
}
// Copies src (broadcast, cast, any devices) into dst without counting it as an in-place
// write: for outputs that are being built (factories, to, clone).
void copy_values(const Tensor& dst, const Tensor& src, bool non_blocking);
// Writes value (cast to out's dtype) into every element of out, any layout, without counting
// it as an in-place write: builds the TensorIter and runs the backend's fill.
void fill_values(const Tensor& out, const Scalar& value, const char* op = "fill_");
// Marks an in-place write (autograd's version counter).
inline void bump_version(const Tensor& t) { t.impl()->storage()->bump_version(); }

}  // namespace wick::detail
