// Internal helpers shared by the op implementations in src/core.
#pragma once

#include "wick/tensor.h"

namespace wick::detail {

// "cuda" -> "cuda:<current>", "cpu:0" -> "cpu"; checks CUDA indices.
Device resolve_device(Device d, const char* op);
DimVector contiguous_strides(IntArrayRef sizes);
void check_sizes(IntArrayRef sizes, const char* op);
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
// Throws ValueError "[op] expected a defined tensor ..." when t is undefined (Tensor()).
inline void check_defined(const Tensor& t, const char* op, const char* arg = "input") {
  WICK_CHECK(t.defined(), ValueError, op, "expected a defined tensor for argument '", arg,
             "' but got an undefined one (Tensor())");
}
// Rejects strides of the wrong length or negative, as PyTorch's factories do.
void check_strides(IntArrayRef sizes, IntArrayRef strides, const char* op);
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
// ValueError "[op] value cannot be converted to type ... without overflow" when value does not fit dtype.
void check_fits(const Scalar& value, Dtype dtype, const char* op);
void fill_values(const Tensor& out, const Scalar& value, const char* op = "fill_");
// Runs f; a wick::Error it raises is raised again, of the same type, with its "[inner] "
// prefix replaced by "[op] ": a composite op (linear through addmm, embedding through
// index_select) names itself, the op its caller called.
std::string renamed_message(const Error& e, const char* op);
template <class F>
decltype(auto) as_op(const char* op, F&& f) {
  try {
    return f();
  } catch (const IndexError& e) {
    throw IndexError(renamed_message(e, op));
  } catch (const TypeError& e) {
    throw TypeError(renamed_message(e, op));
  } catch (const DeviceError& e) {
    throw DeviceError(renamed_message(e, op));
  } catch (const OutOfMemoryError& e) {
    throw OutOfMemoryError(renamed_message(e, op));
  } catch (const NotImplementedError& e) {
    throw NotImplementedError(renamed_message(e, op));
  } catch (const DistributedError& e) {
    throw DistributedError(renamed_message(e, op));
  } catch (const ValueError& e) {
    throw ValueError(renamed_message(e, op));
  }
}
// a @ b for matrices, and in sums the sums over k of a (which 1: a.sum(1), m values) or of b
// (which 2: b.sum(0), n values): a linear layer's weight and bias gradients. On CUDA one GEMM
// with cuBLASLt's bias-gradient epilogue where the library has it (WICK_GEMM_BIAS_GRAD=0 turns
// it off), else the GEMM and a sum. No autograd recording (backward formulas call it).
// out (optional: contiguous, m x n, a's dtype and device) receives the product, which is then
// returned; otherwise new memory.
Tensor mm_with_sums(const Tensor& a, const Tensor& b, int which, Tensor& sums, const Tensor& out = Tensor());

// Marks an in-place write (autograd's version counter).
inline void bump_version(const Tensor& t) { t.impl()->storage()->bump_version(); }

}  // namespace wick::detail
