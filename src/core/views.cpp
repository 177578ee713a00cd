// View ops: new geometry over the same storage, no data copied (reshape copies only when
// no view can express the result, as in PyTorch). With grad, each computes its view once and
// then records its node (autograd/hooks.h).
#include <numeric>

#include "autograd/hooks.h"
#include "core/as_op.h"
#include "core/checks.h"
#include "core/tensor_ops.h"
#include "wick/ops.h"

namespace wick {

using namespace detail;

namespace {

// A view of t (Tensor::is_view): the one store marking it is all a view op adds.
inline Tensor view_of(const Tensor& t, IntArrayRef sizes, IntArrayRef strides, int64_t offset) {
  Tensor v = make_view(t, sizes, strides, offset);
  v.impl()->set_is_view(true);
  return v;
}

// Resolves one -1 in sizes against numel.
// storage_offset() + index * stride(d), for an index within size(d): it fits in int64 when the
// tensor has elements; an empty tensor may have any strides, and keeps its offset.
int64_t offset_of(const Tensor& t, int64_t index, int64_t d) {
  int64_t off = 0;
  if (__builtin_mul_overflow(index, t.stride(d), &off) ||
      __builtin_add_overflow(off, t.storage_offset(), &off))
    return t.storage_offset();
  return off;
}

DimVector infer_size(IntArrayRef sizes, int64_t numel, const char* op) {
  DimVector out(sizes.begin(), sizes.end());
  int64_t known = 1;
  int infer = -1;
  // A product that wraps around 2^64 could equal numel ({9, 6148914691236517206} of 6 elements).
  // As in PyTorch's overflow checks, a running product that overflows is refused even when a
  // later size is 0.
  bool overflow = false;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      WICK_CHECK(infer < 0, ValueError, op, "only one dimension can be inferred");
      infer = int(i);
    } else {
      WICK_CHECK(out[i] >= 0, ValueError, op, "invalid shape dimension ", out[i]);
      overflow |= __builtin_mul_overflow(known, out[i], &known);
    }
  }
  WICK_CHECK(!overflow, ValueError, op, "shape '", sizes, "' is invalid for input of size ", numel);
  if (infer >= 0) {
    WICK_CHECK(known != 0, ValueError, op, "cannot reshape tensor of ", numel, " elements into shape ", sizes,
               " because the unspecified dimension size -1 can be any value and is ambiguous");
    out[size_t(infer)] = numel / known;
    known *= out[size_t(infer)];
  }
  WICK_CHECK(known == numel, ValueError, op, "shape '", sizes, "' is invalid for input of size ", numel);
  return out;
}

// Strides for viewing (sizes, strides) as new_sizes without a copy, if possible
// (PyTorch's computeStride: chunks of dims that are contiguous among themselves).
std::optional<DimVector> view_strides(IntArrayRef sizes, IntArrayRef strides, IntArrayRef new_sizes) {
  DimVector ns(new_sizes.size(), 1);
  // An existing tensor's sizes: their product fits unless one of them is 0 (then it is 0), so
  // one pass that ignores a wrap and notes a zero gives it (this runs on every view).
  int64_t numel = 1;
  bool zero = false;
  for (int64_t s : sizes) {
    zero |= s == 0;
    (void)__builtin_mul_overflow(numel, s, &numel);
  }
  if (zero) numel = 0;
  if (numel == 0 || sizes.empty()) {
    if (numel == 0) return contiguous_strides(new_sizes);
    return contiguous_strides(new_sizes);
  }
  int64_t view_d = int64_t(new_sizes.size()) - 1;
  int64_t chunk_base_stride = strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = int64_t(sizes.size()) - 1; d >= 0; --d) {
    tensor_numel *= sizes[size_t(d)];
    if (d == 0 || (sizes[size_t(d - 1)] != 1 && strides[size_t(d - 1)] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_sizes[size_t(view_d)] == 1)) {
        ns[size_t(view_d)] = view_numel * chunk_base_stride;
        view_numel *= new_sizes[size_t(view_d)];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base_stride = strides[size_t(d - 1)];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return ns;
}

}  // namespace

bool Tensor::is_view() const { return impl_ && impl_->is_view(); }

Tensor Tensor::view(IntArrayRef sizes) const {
  check_defined(*this, "view", "self");
  const bool grad = needs_grad(*this);
  Tensor out = forward_once(grad, [&]() -> Tensor {
    DimVector shape = infer_size(sizes, numel(), "view");
    auto st = view_strides(this->sizes(), strides(), shape);
    WICK_CHECK(st.has_value(), ValueError, "view",
               "view size is not compatible with input tensor's size and stride (at least one dimension spans "
               "across two contiguous subspaces). Use .reshape(...) instead.");
    return view_of(*this, shape, *st, storage_offset());
  });
  if (grad) [[unlikely]] autograd::record_view(*this, out);
  return out;
}

Tensor Tensor::expand_as(const Tensor& other) const {
  check_defined(*this, "expand_as", "self");
  check_defined(other, "expand_as", "other");
  return as_op("expand_as", [&] { return expand(other.sizes()); });
}
Tensor Tensor::view_as(const Tensor& other) const {
  check_defined(*this, "view_as", "self");
  check_defined(other, "view_as", "other");
  return as_op("view_as", [&] { return view(other.sizes()); });
}

Tensor Tensor::reshape(IntArrayRef sizes) const {
  check_defined(*this, "reshape", "self");
  const bool grad = needs_grad(*this);
  Tensor out = forward_once(grad, [&]() -> Tensor {
    DimVector shape = infer_size(sizes, numel(), "reshape");
    if (auto st = view_strides(this->sizes(), strides(), shape))
      return view_of(*this, shape, *st, storage_offset());
    Tensor copy = clone(MemoryFormat::Contiguous).view(shape);
    copy.impl()->set_is_view(false);  // a copy, as PyTorch's reshape gives when no view can
    return copy;
  });
  if (grad) [[unlikely]] autograd::record_reshape(*this, out);
  return out;
}

Tensor Tensor::flatten(int64_t start, int64_t end) const {
  check_defined(*this, "flatten", "self");
  start = wrap_dim(start, dim(), "flatten");
  end = wrap_dim(end, dim(), "flatten");  // a 0-d tensor takes dims -1 and 0 only
  if (dim() == 0) return reshape({1});
  WICK_CHECK(start <= end, ValueError, "flatten", "start_dim cannot come after end_dim");
  DimVector shape;
  for (int64_t d = 0; d < start; ++d) shape.push_back(size(d));
  // The merged size; one that does not fit (dims of an empty tensor, its 0 elsewhere) raises.
  int64_t m = 1;
  bool overflow = false, zero = false;
  for (int64_t d = start; d <= end; ++d) {
    overflow |= __builtin_mul_overflow(m, size(d), &m);
    zero |= size(d) == 0;
  }
  if (zero) m = 0;
  WICK_CHECK(zero || !overflow, ValueError, "flatten", "the flattened size of dims ", start, " to ", end,
             " of ", sizes(), " does not fit in int64");
  shape.push_back(m);
  for (int64_t d = end + 1; d < dim(); ++d) shape.push_back(size(d));
  return reshape(shape);
}

Tensor Tensor::permute(IntArrayRef dims) const {
  check_defined(*this, "permute", "self");
  const bool grad = needs_grad(*this);
  Tensor out = forward_once(grad, [&]() -> Tensor {
    WICK_CHECK(int64_t(dims.size()) == dim(), ValueError, "permute",
               "number of dims don't match in permute (got ", dims.size(), ", tensor has ", dim(), ")");
    DimVector sz, st;
    std::vector<bool> seen(size_t(dim()), false);
    for (int64_t d : dims) {
      int64_t w = wrap_dim(d, dim(), "permute");
      WICK_CHECK(!seen[size_t(w)], ValueError, "permute", "repeated dim in permute");
      seen[size_t(w)] = true;
      sz.push_back(size(w));
      st.push_back(stride(w));
    }
    return view_of(*this, sz, st, storage_offset());
  });
  if (grad) [[unlikely]] autograd::record_permute(*this, out, dims);
  return out;
}

Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  check_defined(*this, "transpose", "self");
  const bool grad = needs_grad(*this);
  Tensor out = forward_once(grad, [&]() -> Tensor {
    if (dim() == 0) return *this;
    d0 = wrap_dim(d0, dim(), "transpose");
    d1 = wrap_dim(d1, dim(), "transpose");
    DimVector sz(sizes()), st(strides());
    std::swap(sz[size_t(d0)], sz[size_t(d1)]);
    std::swap(st[size_t(d0)], st[size_t(d1)]);
    return view_of(*this, sz, st, storage_offset());
  });
  if (grad) [[unlikely]] autograd::record_transpose(*this, out, d0, d1);
  return out;
}

Tensor Tensor::t() const {
  check_defined(*this, "t", "self");
  WICK_CHECK(dim() <= 2, ValueError, "t", "t() expects a tensor with <= 2 dimensions, but self is ", dim(),
             "D");
  const bool grad = needs_grad(*this);
  Tensor out = forward_once(grad, [&]() -> Tensor {
    // A view in every case, as PyTorch's: of fewer than 2 dims, the same layout.
    if (dim() < 2) return view_of(*this, sizes(), strides(), storage_offset());
    return transpose(0, 1);
  });
  if (grad) [[unlikely]] autograd::record_t(*this, out);  // TBackward0, as PyTorch records t() itself
  return out;
}

Tensor Tensor::unsqueeze(int64_t d) const {
  check_defined(*this, "unsqueeze", "self");
  const bool grad = needs_grad(*this);
  Tensor out = forward_once(grad, [&]() -> Tensor {
    d = wrap_dim(d, dim() + 1, "unsqueeze");
    DimVector sz(sizes()), st(strides());
    // size * stride fits in int64 for any tensor with elements (it is within its storage or 0);
    // an empty tensor may have any strides, and then the new dim's stride does not matter.
    int64_t s = 1;
    if (d < dim() && __builtin_mul_overflow(sz[size_t(d)], st[size_t(d)], &s)) s = 1;
    sz.insert(sz.begin() + d, 1);
    st.insert(st.begin() + d, s);
    return view_of(*this, sz, st, storage_offset());
  });
  if (grad) [[unlikely]] autograd::record_unsqueeze(*this, out);
  return out;
}

Tensor Tensor::squeeze() const {
  check_defined(*this, "squeeze", "self");
  const bool grad = needs_grad(*this);
  Tensor out = forward_once(grad, [&]() -> Tensor {
    DimVector sz, st;
    for (int64_t d = 0; d < dim(); ++d)
      if (size(d) != 1) {
        sz.push_back(size(d));
        st.push_back(stride(d));
      }
    return view_of(*this, sz, st, storage_offset());
  });
  if (grad) [[unlikely]] autograd::record_squeeze(*this, out);
  return out;
}

Tensor Tensor::squeeze(int64_t d) const {
  check_defined(*this, "squeeze", "self");
  const bool grad = needs_grad(*this);
  Tensor out = forward_once(grad, [&]() -> Tensor {
    d = wrap_dim(d, dim(), "squeeze");  // a 0-d tensor takes -1 and 0
    if (dim() == 0) return *this;
    if (size(d) != 1) return *this;
    DimVector sz(sizes()), st(strides());
    sz.erase(sz.begin() + d);
    st.erase(st.begin() + d);
    return view_of(*this, sz, st, storage_offset());
  });
  if (grad) [[unlikely]] autograd::record_squeeze(*this, out, d);
  return out;
}

namespace {

// PyTorch's in-place view ops: view (the op's view of self, computed without recording) gives
// self its geometry; with grad, record(self, view) first records the op's node with self's
// history as its input, and the node becomes self's history.
template <class View, class Record>
Tensor& view_in_place(Tensor& self, const char* op, View make, Record record) {
  check_defined(self, op, "self");
  const bool grad = needs_grad(self);
  if (grad) autograd::check_inplace_leaf(self, op);
  Tensor v;
  {
    NoGradGuard no_grad;
    v = as_op(op, make);
  }
  if (grad) [[unlikely]] record(static_cast<const Tensor&>(self), v);
  return autograd::adopt_view(self, v);
}

}  // namespace

Tensor& Tensor::unsqueeze_(int64_t d) {
  return view_in_place(
      *this, "unsqueeze_", [&] { return unsqueeze(d); },
      [](const Tensor& s, const Tensor& v) { autograd::record_unsqueeze(s, v, "UnsqueezeBackward1"); });
}

Tensor& Tensor::squeeze_() {
  return view_in_place(
      *this, "squeeze_", [&] { return squeeze(); },
      [](const Tensor& s, const Tensor& v) { autograd::record_squeeze(s, v, "SqueezeBackward3"); });
}

Tensor& Tensor::squeeze_(int64_t d) {
  return view_in_place(
      *this, "squeeze_", [&] { return squeeze(d); },
      [d](const Tensor& s, const Tensor& v) { autograd::record_squeeze(s, v, d, "SqueezeBackward4"); });
}

Tensor& Tensor::transpose_(int64_t d0, int64_t d1) {
  return view_in_place(
      *this, "transpose_", [&] { return transpose(d0, d1); }, [d0, d1](const Tensor& s, const Tensor& v) {
        autograd::record_transpose(s, v, d0, d1, "TransposeBackward1");
      });
}

Tensor& Tensor::t_() {
  return view_in_place(
      *this, "t_", [&] { return t(); },
      [](const Tensor& s, const Tensor& v) { autograd::record_t(s, v, "TBackward1"); });
}

Tensor Tensor::expand(IntArrayRef new_sizes) const {
  check_defined(*this, "expand", "self");
  const bool grad = needs_grad(*this);
  Tensor out = forward_once(grad, [&]() -> Tensor {
    WICK_CHECK(new_sizes.size() >= size_t(dim()), ValueError, "expand", "the number of sizes provided (",
               new_sizes.size(), ") must be greater or equal to the number of dimensions in the tensor (",
               dim(), ")");
    const size_t n = new_sizes.size(), off = n - size_t(dim());
    DimVector sz(n, 0), st(n, 0);
    for (size_t i = 0; i < n; ++i) {
      int64_t want = new_sizes[i];
      if (i < off) {
        WICK_CHECK(want >= 0, ValueError, "expand", "the expanded size of the tensor (", want,
                   ") isn't allowed in a leading, non-existing dimension ", i);
        sz[i] = want;
        st[i] = 0;
        continue;
      }
      int64_t have = size(int64_t(i - off));
      if (want == -1) want = have;
      WICK_CHECK(have == want || have == 1, ValueError, "expand", "the expanded size of the tensor (", want,
                 ") must match the existing size (", have, ") at non-singleton dimension ", i,
                 ".  Target sizes: ", new_sizes, ".  Tensor sizes: ", sizes());
      sz[i] = want;
      st[i] = have == want ? stride(int64_t(i - off)) : 0;
    }
    // Sizes the checks above let through that no tensor can have: a negative one in place of a
    // singleton dim, and sizes whose running product does not fit in int64 (even if a later
    // size is 0).
    int64_t numel = 1;
    bool overflow = false;
    for (int64_t s : sz) {
      WICK_CHECK(s >= 0, ValueError, "expand", "Trying to create tensor with negative dimension ", s, ": ",
                 IntArrayRef(sz));
      overflow |= __builtin_mul_overflow(numel, s, &numel);
    }
    WICK_CHECK(!overflow, ValueError, "expand", "numel: integer multiplication overflow (sizes ",
               IntArrayRef(sz), ")");
    return view_of(*this, sz, st, storage_offset());
  });
  if (grad) [[unlikely]] autograd::record_expand(*this, out);
  return out;
}

Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const {
  check_defined(*this, "narrow", "self");
  const bool grad = needs_grad(*this);
  Tensor out = forward_once(grad, [&]() -> Tensor {
    WICK_CHECK(dim() > 0, ValueError, "narrow", "narrow() cannot be applied to a 0-dim tensor.");
    WICK_CHECK(length >= 0, ValueError, "narrow", "narrow(): length must be non-negative.");
    d = wrap_dim(d, dim(), "narrow");
    int64_t n = size(d);
    if (start < 0) start += n;
    WICK_CHECK(start >= 0 && start <= n, IndexError, "narrow", "start (", start,
               ") is out of bounds for dimension ", d, " of size ", n);
    WICK_CHECK(length >= 0 && length <= n - start, IndexError, "narrow", "start (", start, ") + length (",
               length, ") exceeds dimension size (", n, ").");
    DimVector sz(sizes());
    sz[size_t(d)] = length;
    return view_of(*this, sz, strides(), offset_of(*this, start, d));
  });
  if (grad) [[unlikely]] autograd::record_narrow(*this, out, d, start, length);
  return out;
}

Tensor Tensor::unfold(int64_t dimension, int64_t size, int64_t step) const {
  check_defined(*this, "unfold", "self");
  const bool grad = needs_grad(*this);
  int64_t d = 0;
  Tensor out = forward_once(grad, [&]() -> Tensor {
    // A 0-dim tensor unfolds as a 1-element one (dimension 0 or -1).
    d = wrap_dim(dimension, std::max<int64_t>(dim(), 1), "unfold");
    const int64_t n = dim() == 0 ? 1 : this->size(d), st = dim() == 0 ? 1 : stride(d);
    WICK_CHECK(size >= 0, ValueError, "unfold", "size is ", size, " but must be >= 0");
    WICK_CHECK(size <= n, ValueError, "unfold", "maximum size for tensor at dimension ", d, " is ", n,
               " but size is ", size);
    WICK_CHECK(step > 0, ValueError, "unfold", "step is ", step, " but must be > 0");
    // A 0-dim tensor gives [size] (PyTorch's): no dim of windows.
    if (dim() == 0) return view_of(*this, DimVector{size}, DimVector{1}, storage_offset());
    DimVector sz(sizes()), strd(strides());
    sz[size_t(d)] = (n - size) / step + 1;
    strd[size_t(d)] = st * step;
    sz.push_back(size);
    strd.push_back(st);
    return view_of(*this, sz, strd, storage_offset());
  });
  if (grad) [[unlikely]] autograd::record_unfold(*this, out, d, size, step);
  return out;
}

Tensor Tensor::diagonal(int64_t offset, int64_t dim1, int64_t dim2) const {
  check_defined(*this, "diagonal", "self");
  const bool grad = needs_grad(*this);
  int64_t d1 = 0, d2 = 0;
  Tensor out = forward_once(grad, [&]() -> Tensor {
    d1 = wrap_dim(dim1, dim(), "diagonal");
    d2 = wrap_dim(dim2, dim(), "diagonal");
    WICK_CHECK(d1 != d2, ValueError, "diagonal", "diagonal dimensions cannot be identical ", dim1, ", ", dim2);
    const int64_t n1 = this->size(d1), n2 = this->size(d2);
    // Its length, 0 when the offset passes the plane's edge (any offset: no arithmetic wraps).
    int64_t len = 0;
    if (offset >= 0) len = offset < n2 ? std::min(n1, n2 - offset) : 0;
    else len = offset > -n1 ? std::min(n1 + offset, n2) : 0;
    int64_t off = storage_offset();
    if (len > 0) off = offset >= 0 ? offset_of(*this, offset, d2) : offset_of(*this, -offset, d1);
    DimVector sz, st;
    for (int64_t i = 0; i < dim(); ++i)
      if (i != d1 && i != d2) {
        sz.push_back(this->size(i));
        st.push_back(stride(i));
      }
    sz.push_back(len);
    st.push_back(stride(d1) + stride(d2));
    return view_of(*this, sz, st, off);
  });
  if (grad) [[unlikely]] autograd::record_diagonal(*this, out, offset, d1, d2);
  return out;
}
Tensor diagonal(const Tensor& t, int64_t offset, int64_t dim1, int64_t dim2) {
  check_defined(t, "diagonal", "self");
  return t.diagonal(offset, dim1, dim2);
}

Tensor Tensor::select(int64_t d, int64_t index) const {
  check_defined(*this, "select", "self");
  const bool grad = needs_grad(*this);
  Tensor out = forward_once(grad, [&]() -> Tensor {
    WICK_CHECK(dim() > 0, IndexError, "select", "select() cannot be applied to a 0-dim tensor.");
    d = wrap_dim(d, dim(), "select");
    int64_t n = size(d);
    WICK_CHECK(index >= -n && index < n, IndexError, "select", "index ", index,
               " is out of bounds for dimension ", d, " with size ", n);
    if (index < 0) index += n;
    DimVector sz(sizes()), st(strides());
    sz.erase(sz.begin() + d);
    st.erase(st.begin() + d);
    return view_of(*this, sz, st, offset_of(*this, index, d));
  });
  if (grad) [[unlikely]] autograd::record_select(*this, out, d, index);
  return out;
}

Tensor Tensor::slice(int64_t d, std::optional<int64_t> start, std::optional<int64_t> end,
                     int64_t step) const {
  check_defined(*this, "slice", "self");
  const bool grad = needs_grad(*this);
  Tensor out = forward_once(grad, [&]() -> Tensor {
    WICK_CHECK(dim() > 0, IndexError, "slice", "slice() cannot be applied to a 0-dim tensor.");
    WICK_CHECK(step > 0, ValueError, "slice", "slice step must be positive");
    d = wrap_dim(d, dim(), "slice");
    const int64_t n = size(d);
    int64_t s = start.value_or(0), e = end.value_or(n);
    if (s < 0) s += n;
    if (e < 0) e += n;
    s = std::clamp<int64_t>(s, 0, n);
    e = std::clamp<int64_t>(e, s, n);
    DimVector sz(sizes()), st(strides());
    const int64_t len = e - s;
    sz[size_t(d)] = len == 0 ? 0 : 1 + (len - 1) / step;  // no overflow for any step
    // stride * step fits whenever the result addresses two elements along d; when it does not
    // fit (an empty tensor's huge stride, a step past the end) the stride is never used.
    int64_t stepped = 0;
    if (!__builtin_mul_overflow(st[size_t(d)], step, &stepped)) st[size_t(d)] = stepped;
    return view_of(*this, sz, st, offset_of(*this, s, d));
  });
  if (grad) [[unlikely]] autograd::record_slice(*this, out, d, start, end, step);
  return out;
}

std::vector<Tensor> Tensor::split(int64_t split_size, int64_t d) const {
  check_defined(*this, "split", "self");
  WICK_CHECK(dim() > 0, ValueError, "split", "split expects at least a 1-dimensional tensor");
  WICK_CHECK(split_size >= 0, ValueError, "split",
             "split expects split_size be non-negative, but got split_size=", split_size);
  d = wrap_dim(d, dim(), "split");
  const int64_t n = size(d);
  WICK_CHECK(split_size > 0 || n == 0, ValueError, "split",
             "split_size can only be 0 if dimension size is 0, but got dimension size of ", n);
  std::vector<Tensor> out;
  if (n == 0) {
    out.push_back(*this);
    return out;
  }
  const bool grad = needs_grad(*this);
  {
    NoGradGuard no_grad;  // one node for all the pieces, below
    for (int64_t s = 0; s < n; s += split_size) out.push_back(narrow(d, s, std::min(split_size, n - s)));
  }
  if (grad) [[unlikely]] autograd::record_split(*this, out, d, "SplitBackward0");
  return out;
}

std::vector<Tensor> Tensor::split(IntArrayRef sizes_, int64_t d) const {
  check_defined(*this, "split", "self");
  d = wrap_dim(d, dim(), "split");
  // Each size non-negative and the sum without wrapping around.
  int64_t total = 0;
  bool wrapped = false;
  for (int64_t len : sizes_) {
    WICK_CHECK(
        len >= 0, ValueError, "split",
        "split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes=", sizes_);
    wrapped = wrapped || __builtin_add_overflow(total, len, &total);
  }
  WICK_CHECK(!wrapped && total == size(d), ValueError, "split",
             "split_with_sizes expects split_sizes to sum exactly to ", size(d),
             " (input tensor's size at dimension ", d, "), but got split_sizes=", sizes_);
  std::vector<Tensor> out;
  const bool grad = needs_grad(*this);
  {
    NoGradGuard no_grad;  // one node for all the pieces, below
    int64_t s = 0;
    for (int64_t len : sizes_) {
      out.push_back(narrow(d, s, len));
      s += len;
    }
  }
  if (grad) [[unlikely]] autograd::record_split(*this, out, d, "SplitWithSizesBackward0");
  return out;
}

std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t d) const {
  check_defined(*this, "chunk", "self");
  WICK_CHECK(dim() > 0, ValueError, "chunk", "chunk expects at least a 1-dimensional tensor");
  WICK_CHECK(chunks > 0, ValueError, "chunk", "chunk expects `chunks` to be greater than 0, got: ", chunks);
  d = wrap_dim(d, dim(), "chunk");
  int64_t n = size(d);
  int64_t each = n / chunks + (n % chunks != 0);  // ceil(n / chunks) without n + chunks wrapping
  if (each == 0) each = 1;
  return split(each, d);
}

std::vector<Tensor> Tensor::unbind(int64_t d) const {
  check_defined(*this, "unbind", "self");
  WICK_CHECK(dim() > 0, IndexError, "unbind", "Dimension specified as ", d, " but tensor has no dimensions");
  d = wrap_dim(d, dim(), "unbind");
  std::vector<Tensor> out;
  const bool grad = needs_grad(*this);
  {
    NoGradGuard no_grad;  // one node for all the pieces, below
    for (int64_t i = 0; i < size(d); ++i) out.push_back(select(d, i));
  }
  if (grad) [[unlikely]] autograd::record_unbind(*this, out, d);
  return out;
}

}  // namespace wick
