// scatter, scatter_add, index_add and index_copy, out of place and in place.
//
// All four are the backend's scatter family (core/kernel_table.h): the written tensor is
// restrided to the shape being scattered (the index's for scatter, the source's for index_add
// and index_copy) with stride 0 along dim, the 1-D index of index_add/index_copy is restrided
// across the source's shape (as index_select's), and element i lands at out[i] + index[i] *
// stride(dim). The out-of-place forms clone self and scatter into the clone; the in-place forms
// scatter into self, or with grad record the out-of-place op (autograd::inplace). Indices are
// checked by the backend before it writes, so a failed call changes nothing.
//
// scatter with reduce ("add", "multiply") and scatter_reduce ("sum", "prod", "mean", "amax",
// "amin") are the same scatter with the backend reducing into each position (ScatterOp);
// scatter_reduce's include_self = false first writes the reduction's identity at every position
// src reaches, and its mean divides by a count scattered the same way.
//
// Repeated indices: the add forms add every value; scatter and index_copy keep one of the
// values written to a position, which one unspecified (PyTorch's rule: on CUDA it depends on
// the order threads run).
#include <cmath>

#include "autograd/hooks.h"
#include "core/as_op.h"
#include "core/kernel_table.h"
#include "core/tensor_ops.h"
#include "wick/ops.h"

namespace wick {

using namespace detail;

namespace {

enum class Kind : uint8_t { Scatter, ScatterAdd, IndexAdd, IndexCopy };

// 0-d tensors act as [1].
Tensor as_1d(const Tensor& t) { return t.dim() == 0 ? t.reshape({1}) : t; }

// scatter and scatter_add's checks (PyTorch's scatter_gather_dtype_check and shape check):
// src null for a scalar value.
void check_scatter(const Tensor& self, int64_t d, const Tensor& index, const Tensor* src, const char* op) {
  check_same_device(index, self.device(), op, "index");
  WICK_CHECK(index.dtype() == kInt64, TypeError, op, "Expected dtype int64 for index");
  if (src) {
    check_same_device(*src, self.device(), op, "src");
    WICK_CHECK(src->dtype() == self.dtype(), TypeError, op, "Expected self.dtype to be equal to src.dtype");
  }
  if (index.numel() == 0) return;
  const int64_t nd = std::max<int64_t>(self.dim(), 1);
  WICK_CHECK(std::max<int64_t>(index.dim(), 1) == nd, ValueError, op,
             "Index tensor must have the same number of dimensions as self tensor");
  if (src)
    WICK_CHECK(std::max<int64_t>(src->dim(), 1) == nd, ValueError, op,
               "Index tensor must have the same number of dimensions as src tensor");
  const Tensor s1 = as_1d(self), i1 = as_1d(index);
  const Tensor src1 = src ? as_1d(*src) : Tensor();
  for (int64_t i = 0; i < nd; ++i) {
    const bool over_self = i != d && i1.size(i) > s1.size(i);
    const bool over_src = src && i1.size(i) > src1.size(i);
    if (over_self || over_src) {
      if (src)
        raise<ValueError>(op, "Expected index ", index.sizes(), " to be smaller than self ", self.sizes(),
                          " apart from dimension ", d, " and to be smaller size than src ", src->sizes());
      raise<ValueError>(op, "Expected index ", index.sizes(), " to be smaller than self ", self.sizes(),
                        " apart from dimension ", d);
    }
  }
}

// index_add and index_copy's checks.
void check_index_slices(const Tensor& self, int64_t d, const Tensor& index, const Tensor& source, Kind kind,
                        const char* op) {
  check_same_device(index, self.device(), op, "index");
  check_same_device(source, self.device(), op, "source");
  if (kind == Kind::IndexAdd) {
    WICK_CHECK(index.dim() <= 1, IndexError, op, "Index is supposed to be a vector");
    WICK_CHECK(index.dtype() == kInt64 || index.dtype() == kInt32, TypeError, op,
               "Expected dtype int32/int64 for index");
    WICK_CHECK(source.dtype() == self.dtype(), TypeError, op, "self (", self.dtype(), ") and source (",
               source.dtype(), ") must have the same scalar type");
  } else {
    WICK_CHECK(index.dim() <= 1, IndexError, op, "Index should have dimension 1 or 0 (got ", index.dim(), ")");
    WICK_CHECK(index.dtype() == kInt64, TypeError, op, "Expected a long tensor for index, but got ", index.dtype());
    WICK_CHECK(source.dtype() == self.dtype(), TypeError, op,
               "self and source expected to have the same dtype, but got (self) ", self.dtype(), " and (source) ",
               source.dtype());
  }
  const Tensor s1 = as_1d(self), src1 = as_1d(source);
  const int64_t slices = source.dim() == 0 ? 1 : src1.size(d);
  WICK_CHECK(index.numel() == slices, IndexError, op, "Number of indices (", index.numel(),
             ") should be equal to source.size(dim) (", slices, ")");
  bool same = src1.dim() == s1.dim();
  for (int64_t i = 0; same && i < s1.dim(); ++i) same = i == d || src1.size(i) == s1.size(i);
  WICK_CHECK(same, ValueError, op,
             "source tensor shape must match self tensor shape, excluding the specified dimension. Got self.shape = ",
             self.sizes(), " source.shape = ", source.sizes());
}

// Scatters into out (self's values already there, or self itself): src null with value for a
// scalar; for index_add/index_copy, src is the source (alpha already applied).
void scatter_into(const Tensor& out, int64_t d, const Tensor& index, const Tensor* src, const Scalar* value,
                  Kind kind, ScatterOp sop, const char* op) {
  if (index.numel() == 0) return;
  const Tensor o = as_1d(out), idx = as_1d(index);
  Tensor idx_r, src_r;
  if (kind == Kind::Scatter || kind == Kind::ScatterAdd) {
    idx_r = idx;
    if (src) {
      const Tensor s = as_1d(*src);
      src_r = make_view(s, idx.sizes(), s.strides(), s.storage_offset());
    } else {
      Tensor v = full_for({}, *value, TensorOptions(out.dtype()).device(out.device()), op);
      src_r = make_view(v, idx.sizes(), DimVector(size_t(idx.dim()), 0), v.storage_offset());
    }
  } else {
    src_r = as_1d(*src);
    DimVector istr(size_t(src_r.dim()), 0);
    istr[size_t(d)] = idx.stride(0);
    idx_r = make_view(idx, src_r.sizes(), istr, idx.storage_offset());
  }
  if (idx_r.numel() == 0) return;
  DimVector ostr(o.strides());
  ostr[size_t(d)] = 0;
  Tensor o_r = make_view(o, idx_r.sizes(), ostr, o.storage_offset());
  kernel<&KernelTable::scatter>(out.device(), op)(o_r, src_r, idx_r, o.stride(d), o.size(d), sop, op);
}

// The checks, then the scatter into out (out-of-place: a clone of self; in place: self).
void run(const Tensor& self, const Tensor& out, int64_t dim, const Tensor& index, const Tensor* src,
         const Scalar* value, const Scalar& alpha, Kind kind, const char* op) {
  const int64_t d = wrap_dim(dim, std::max<int64_t>(self.dim(), 1), op);
  if (kind == Kind::Scatter || kind == Kind::ScatterAdd) {
    check_scatter(self, d, index, src, op);
    scatter_into(out, d, index, src, value, kind, kind == Kind::ScatterAdd ? ScatterOp::Add : ScatterOp::Write, op);
    return;
  }
  check_index_slices(self, d, index, *src, kind, op);
  Tensor source = *src;
  if (kind == Kind::IndexAdd && !(alpha.is_integral() && alpha.to<int64_t>() == 1))
    source = mul(source, alpha).to(self.dtype());
  scatter_into(out, d, index, &source, nullptr, kind, kind == Kind::IndexAdd ? ScatterOp::Add : ScatterOp::Write,
               op);
}

const Scalar kOne = Scalar(1);

Tensor out_of_place(const Tensor& self, int64_t dim, const Tensor& index, const Tensor* src, const Scalar* value,
                    const Scalar& alpha, Kind kind, const char* op) {
  check_defined(self, op, "self");
  check_defined(index, op, "index");
  if (src) check_defined(*src, op, kind == Kind::Scatter || kind == Kind::ScatterAdd ? "src" : "source");
  const bool grad = src ? needs_grad(self, *src) : needs_grad(self);
  Tensor out = forward_once(grad, [&] {
    Tensor r = self.clone();
    run(self, r, dim, index, src, value, alpha, kind, op);
    return r;
  });
  if (grad) [[unlikely]] {
    const int64_t d = wrap_dim(dim, std::max<int64_t>(self.dim(), 1), op);
    switch (kind) {
      case Kind::Scatter: autograd::record_scatter(self, index, src, out, d); break;
      case Kind::ScatterAdd: autograd::record_scatter_add(self, index, *src, out, d); break;
      case Kind::IndexAdd: autograd::record_index_add(self, index, *src, alpha, out, d); break;
      case Kind::IndexCopy: autograd::record_index_copy(self, index, *src, out, d); break;
    }
  }
  return out;
}

template <class F>
Tensor& in_place(Tensor& self, int64_t dim, const Tensor& index, const Tensor* src, const Scalar* value,
                 const Scalar& alpha, Kind kind, const char* op, F&& recorded) {
  check_defined(self, op, "self");
  check_defined(index, op, "index");
  if (src) check_defined(*src, op, kind == Kind::Scatter || kind == Kind::ScatterAdd ? "src" : "source");
  if ((src ? needs_grad(self, *src) : needs_grad(self))) [[unlikely]]
    return autograd::inplace(self, op, recorded);
  check_no_internal_overlap(self, op);
  run(self, self, dim, index, src, value, alpha, kind, op);
  bump_version(self);
  return self;
}

// ---- scatter with reduce ("add", "multiply") and scatter_reduce

enum class Reduce : uint8_t { Sum, Prod, Mean, Amax, Amin };

ScatterOp scatter_reduce_op(std::string_view reduce, const char* op) {
  if (reduce == "add") return ScatterOp::Add;
  if (reduce == "multiply") return ScatterOp::Prod;
  raise<ValueError>(op, "reduce argument must be either add or multiply.");
}

Reduce parse_reduce(std::string_view reduce, const char* op) {
  if (reduce == "sum") return Reduce::Sum;
  if (reduce == "prod") return Reduce::Prod;
  if (reduce == "mean") return Reduce::Mean;
  if (reduce == "amax") return Reduce::Amax;
  if (reduce == "amin") return Reduce::Amin;
  raise<ValueError>(op, "reduce argument must be either sum, prod, mean, amax or amin, got ", reduce);
}

// The value a position starts from when self is left out (include_self = false): the identity
// of the reduction in dtype (the lowest value for amax, the highest for amin).
Scalar reduce_identity(Reduce r, Dtype dtype) {
  if (r == Reduce::Sum || r == Reduce::Mean) return Scalar(0);
  if (r == Reduce::Prod) return Scalar(1);
  const bool lowest = r == Reduce::Amax;
  if (is_floating_point(dtype)) return Scalar(lowest ? -INFINITY : INFINITY);
  switch (dtype) {
    case kBool: return Scalar(!lowest);
    case kUInt8: return Scalar(int64_t(lowest ? 0 : 255));
    case kInt8: return Scalar(int64_t(lowest ? INT8_MIN : INT8_MAX));
    case kInt16: return Scalar(int64_t(lowest ? INT16_MIN : INT16_MAX));
    case kInt32: return Scalar(int64_t(lowest ? INT32_MIN : INT32_MAX));
    default: return Scalar(lowest ? INT64_MIN : INT64_MAX);
  }
}

// scatter_reduce into out (a clone of self, or self): the positions src writes start from the
// reduction's identity unless include_self; mean divides each position by the number of values
// reduced into it (self counting as one), flooring for integer dtypes, as PyTorch does.
void run_scatter_reduce(const Tensor& self, const Tensor& out, int64_t d, const Tensor& index, const Tensor& src,
                        Reduce r, bool include_self, const char* op) {
  if (index.numel() == 0) return;
  if (!include_self) {
    const Scalar id = reduce_identity(r, self.dtype());
    scatter_into(out, d, index, nullptr, &id, Kind::Scatter, ScatterOp::Write, op);
  }
  const ScatterOp sop = r == Reduce::Sum || r == Reduce::Mean ? ScatterOp::Add
                        : r == Reduce::Prod                   ? ScatterOp::Prod
                        : r == Reduce::Amax                   ? ScatterOp::Max
                                                              : ScatterOp::Min;
  scatter_into(out, d, index, &src, nullptr, Kind::Scatter, sop, op);
  if (r != Reduce::Mean) return;
  Tensor count = include_self ? ones_like(out) : zeros_like(out);
  const Tensor one = ones({}, out.options());
  const Tensor ones_r = make_view(one, index.sizes(), DimVector(size_t(index.dim()), 0), one.storage_offset());
  scatter_into(count, d, index, &ones_r, nullptr, Kind::ScatterAdd, ScatterOp::Add, op);
  count.masked_fill_(count == 0, 1);
  Tensor mean;
  if (is_floating_point(out.dtype())) {
    mean = out / count;
  } else {
    // Exact: out - remainder(out, count) is a multiple of count.
    mean = ((out - out.remainder(count)).to(kFloat64) / count).to(out.dtype());
  }
  copy_values(out, mean, false);
}

void check_scatter_reduce(const Tensor& self, int64_t d, const Tensor& index, const Tensor& src, Reduce r,
                          const char* op) {
  check_scatter(self, d, index, &src, op);
  WICK_CHECK(!(r == Reduce::Mean && self.dtype() == kBool), TypeError, op,
             "result type Float can't be cast to the desired output type Bool");
}

}  // namespace

Tensor scatter(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce) {
  return as_op("scatter", [&] {
    check_defined(t, "scatter", "self");
    check_defined(index, "scatter", "index");
    check_defined(src, "scatter", "src");
    const ScatterOp sop = scatter_reduce_op(reduce, "scatter");
    const int64_t d = wrap_dim(dim, std::max<int64_t>(t.dim(), 1), "scatter");
    check_scatter(t, d, index, &src, "scatter");
    const bool grad = needs_grad(t, src);
    Tensor out = forward_once(grad, [&] {
      Tensor r = t.clone();
      scatter_into(r, d, index, &src, nullptr, Kind::Scatter, sop, "scatter");
      return r;
    });
    if (grad) [[unlikely]] autograd::record_scatter_with_reduce(t, &src, out);
    return out;
  });
}
Tensor scatter(const Tensor& t, int64_t dim, const Tensor& index, const Scalar& value, std::string_view reduce) {
  return as_op("scatter", [&] {
    check_defined(t, "scatter", "self");
    check_defined(index, "scatter", "index");
    const ScatterOp sop = scatter_reduce_op(reduce, "scatter");
    const int64_t d = wrap_dim(dim, std::max<int64_t>(t.dim(), 1), "scatter");
    check_scatter(t, d, index, nullptr, "scatter");
    const bool grad = needs_grad(t);
    Tensor out = forward_once(grad, [&] {
      Tensor r = t.clone();
      scatter_into(r, d, index, nullptr, &value, Kind::Scatter, sop, "scatter");
      return r;
    });
    if (grad) [[unlikely]] autograd::record_scatter_with_reduce(t, nullptr, out);
    return out;
  });
}
Tensor scatter_reduce(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce,
                      bool include_self) {
  return as_op("scatter_reduce", [&] {
    const char* op = "scatter_reduce";
    check_defined(t, op, "self");
    check_defined(index, op, "index");
    check_defined(src, op, "src");
    const Reduce r = parse_reduce(reduce, op);
    const int64_t d = wrap_dim(dim, std::max<int64_t>(t.dim(), 1), op);
    check_scatter_reduce(t, d, index, src, r, op);
    const bool grad = needs_grad(t, src);
    Tensor out = forward_once(grad, [&] {
      Tensor res = t.clone();
      run_scatter_reduce(t, res, d, index, src, r, include_self, op);
      return res;
    });
    if (grad) [[unlikely]] autograd::record_scatter_reduce(t, index, src, reduce, include_self, out, d);
    return out;
  });
}

Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce) const {
  return wick::scatter(*this, dim, index, src, reduce);
}
Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Scalar& value, std::string_view reduce) const {
  return wick::scatter(*this, dim, index, value, reduce);
}
Tensor Tensor::scatter_reduce(int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce,
                              bool include_self) const {
  return wick::scatter_reduce(*this, dim, index, src, reduce, include_self);
}

Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce) {
  return as_op("scatter_", [&]() -> Tensor& {
    const char* op = "scatter_";
    check_defined(*this, op, "self");
    check_defined(index, op, "index");
    check_defined(src, op, "src");
    if (needs_grad(*this, src)) [[unlikely]]
      return autograd::inplace(*this, op, [&](const Tensor& t) { return wick::scatter(t, dim, index, src, reduce); });
    const ScatterOp sop = scatter_reduce_op(reduce, op);
    const int64_t d = wrap_dim(dim, std::max<int64_t>(this->dim(), 1), op);
    check_scatter(*this, d, index, &src, op);
    check_no_internal_overlap(*this, op);
    scatter_into(*this, d, index, &src, nullptr, Kind::Scatter, sop, op);
    bump_version(*this);
    return *this;
  });
}
Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Scalar& value, std::string_view reduce) {
  return as_op("scatter_", [&]() -> Tensor& {
    const char* op = "scatter_";
    check_defined(*this, op, "self");
    check_defined(index, op, "index");
    if (needs_grad(*this)) [[unlikely]]
      return autograd::inplace(*this, op,
                               [&](const Tensor& t) { return wick::scatter(t, dim, index, value, reduce); });
    const ScatterOp sop = scatter_reduce_op(reduce, op);
    const int64_t d = wrap_dim(dim, std::max<int64_t>(this->dim(), 1), op);
    check_scatter(*this, d, index, nullptr, op);
    check_no_internal_overlap(*this, op);
    scatter_into(*this, d, index, nullptr, &value, Kind::Scatter, sop, op);
    bump_version(*this);
    return *this;
  });
}
Tensor& Tensor::scatter_reduce_(int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce,
                                bool include_self) {
  return as_op("scatter_reduce_", [&]() -> Tensor& {
    const char* op = "scatter_reduce_";
    check_defined(*this, op, "self");
    check_defined(index, op, "index");
    check_defined(src, op, "src");
    if (needs_grad(*this, src)) [[unlikely]]
      return autograd::inplace(*this, op, [&](const Tensor& t) {
        return wick::scatter_reduce(t, dim, index, src, reduce, include_self);
      });
    const Reduce r = parse_reduce(reduce, op);
    const int64_t d = wrap_dim(dim, std::max<int64_t>(this->dim(), 1), op);
    check_scatter_reduce(*this, d, index, src, r, op);
    check_no_internal_overlap(*this, op);
    run_scatter_reduce(*this, *this, d, index, src, r, include_self, op);
    bump_version(*this);
    return *this;
  });
}

Tensor scatter(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src) {
  return as_op("scatter", [&] { return out_of_place(t, dim, index, &src, nullptr, kOne, Kind::Scatter, "scatter"); });
}
Tensor scatter(const Tensor& t, int64_t dim, const Tensor& index, const Scalar& value) {
  return as_op("scatter", [&] { return out_of_place(t, dim, index, nullptr, &value, kOne, Kind::Scatter, "scatter"); });
}
Tensor scatter_add(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src) {
  return as_op("scatter_add",
               [&] { return out_of_place(t, dim, index, &src, nullptr, kOne, Kind::ScatterAdd, "scatter_add"); });
}
Tensor index_add(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha) {
  return as_op("index_add",
               [&] { return out_of_place(t, dim, index, &source, nullptr, alpha, Kind::IndexAdd, "index_add"); });
}
Tensor index_copy(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& source) {
  return as_op("index_copy",
               [&] { return out_of_place(t, dim, index, &source, nullptr, kOne, Kind::IndexCopy, "index_copy"); });
}

Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Tensor& src) const {
  return wick::scatter(*this, dim, index, src);
}
Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Scalar& value) const {
  return wick::scatter(*this, dim, index, value);
}
Tensor Tensor::scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const {
  return wick::scatter_add(*this, dim, index, src);
}
Tensor Tensor::index_add(int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha) const {
  return wick::index_add(*this, dim, index, source, alpha);
}
Tensor Tensor::index_copy(int64_t dim, const Tensor& index, const Tensor& source) const {
  return wick::index_copy(*this, dim, index, source);
}

Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Tensor& src) {
  return as_op("scatter_", [&]() -> Tensor& {
    return in_place(*this, dim, index, &src, nullptr, kOne, Kind::Scatter, "scatter_",
                    [&](const Tensor& t) { return wick::scatter(t, dim, index, src); });
  });
}
Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Scalar& value) {
  return as_op("scatter_", [&]() -> Tensor& {
    return in_place(*this, dim, index, nullptr, &value, kOne, Kind::Scatter, "scatter_",
                    [&](const Tensor& t) { return wick::scatter(t, dim, index, value); });
  });
}
Tensor& Tensor::scatter_add_(int64_t dim, const Tensor& index, const Tensor& src) {
  return as_op("scatter_add_", [&]() -> Tensor& {
    return in_place(*this, dim, index, &src, nullptr, kOne, Kind::ScatterAdd, "scatter_add_",
                    [&](const Tensor& t) { return wick::scatter_add(t, dim, index, src); });
  });
}
Tensor& Tensor::index_add_(int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha) {
  return as_op("index_add_", [&]() -> Tensor& {
    return in_place(*this, dim, index, &source, nullptr, alpha, Kind::IndexAdd, "index_add_",
                    [&](const Tensor& t) { return wick::index_add(t, dim, index, source, alpha); });
  });
}
Tensor& Tensor::index_copy_(int64_t dim, const Tensor& index, const Tensor& source) {
  return as_op("index_copy_", [&]() -> Tensor& {
    return in_place(*this, dim, index, &source, nullptr, kOne, Kind::IndexCopy, "index_copy_",
                    [&](const Tensor& t) { return wick::index_copy(t, dim, index, source); });
  });
}

}  // namespace wick
