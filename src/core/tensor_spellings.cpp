// The Tensor methods PyTorch and LibTorch spell beyond the op list's forms: add/sub/mul/div of
// a Scalar, the in-place comparisons, all/any, data(), equal, and ATen's free transpose and size.
// Each is a composite of existing ops (no kernel of its own), named as the function called.
#include "core/as_op.h"
#include "core/checks.h"
#include "wick/ops.h"

namespace wick {

using detail::as_op;

Tensor Tensor::add(const Scalar& other, const Scalar& alpha) const { return wick::add(*this, other, alpha); }
Tensor Tensor::sub(const Scalar& other, const Scalar& alpha) const { return wick::sub(*this, other, alpha); }
Tensor Tensor::mul(const Scalar& other) const { return wick::mul(*this, other); }
Tensor Tensor::div(const Scalar& other) const { return wick::div(*this, other); }

// self.copy_(self op other): the result broadcasts to self's shape and is cast to its dtype.
#define WICK_X(Name, name, op, mirror)                                        \
  Tensor& Tensor::name##_(const Tensor& other) {                              \
    detail::check_defined(*this, #name "_", "self");                         \
    detail::check_defined(other, #name "_", "other");                        \
    return as_op(#name "_", [&]() -> Tensor& { return copy_(wick::name(*this, other)); }); \
  }                                                                           \
  Tensor& Tensor::name##_(const Scalar& other) {                              \
    detail::check_defined(*this, #name "_", "self");                         \
    return as_op(#name "_", [&]() -> Tensor& { return copy_(wick::name(*this, other)); }); \
  }
WICK_COMPARE_OPS(WICK_X)
#undef WICK_X

namespace {
// PyTorch's all/any give bool, or uint8 for a uint8 input.
Tensor as_result(const Tensor& t, Dtype input) { return input == kUInt8 ? t.to(kUInt8) : t; }
}  // namespace

// all: no element is zero (NaN is non-zero); any: some element is non-zero.
Tensor Tensor::all() const {
  detail::check_defined(*this, "all", "self");
  return as_result(eq(0).sum().eq(0), dtype());
}
Tensor Tensor::all(int64_t dim, bool keepdim) const {
  detail::check_defined(*this, "all", "self");
  return as_op("all", [&] { return as_result(eq(0).sum({dim}, keepdim).eq(0), dtype()); });
}
Tensor Tensor::any() const {
  detail::check_defined(*this, "any", "self");
  return as_result(ne(0).sum().ne(0), dtype());
}
Tensor Tensor::any(int64_t dim, bool keepdim) const {
  detail::check_defined(*this, "any", "self");
  return as_op("any", [&] { return as_result(ne(0).sum({dim}, keepdim).ne(0), dtype()); });
}

Tensor Tensor::data() const {
  detail::check_defined(*this, "data", "self");
  return detach();
}

// torch.equal as PyTorch's CUDA path computes it on either device: eq, then all.
bool equal(const Tensor& a, const Tensor& b) {
  detail::check_defined(a, "equal", "self");
  detail::check_defined(b, "equal", "other");
  WICK_CHECK(a.device() == b.device(), DeviceError, "equal",
             "Cannot compare two tensors on different devices. Got: ", a.device(), " and ", b.device());
  if (a.sizes() != b.sizes()) return false;
  if (a.numel() == 0) return true;
  return as_op("equal", [&] { return wick::eq(a, b).all().item<bool>(); });
}
bool Tensor::equal(const Tensor& other) const { return wick::equal(*this, other); }

Tensor transpose(const Tensor& t, int64_t d0, int64_t d1) {
  detail::check_defined(t, "transpose");
  return t.transpose(d0, d1);
}
Tensor _unsafe_view(const Tensor& t, IntArrayRef size) {
  detail::check_defined(t, "_unsafe_view", "self");
  return as_op("_unsafe_view", [&] { return t.view(size); });
}

int64_t size(const Tensor& t, int64_t dim) {
  detail::check_defined(t, "size");
  return t.size(dim);
}

Tensor& Tensor::operator=(const Tensor& src) && {
  copy_(src);
  return *this;
}

Tensor& Tensor::operator=(const Scalar& v) && {
  fill_(v);
  return *this;
}

}  // namespace wick

namespace wick {

Tensor t(const Tensor& t) {
  detail::check_defined(t, "t", "self");
  return t.t();
}
Tensor squeeze(const Tensor& t) {
  detail::check_defined(t, "squeeze", "self");
  return t.squeeze();
}
Tensor squeeze(const Tensor& t, int64_t dim) {
  detail::check_defined(t, "squeeze", "self");
  return t.squeeze(dim);
}
Tensor unsqueeze(const Tensor& t, int64_t dim) {
  detail::check_defined(t, "unsqueeze", "self");
  return t.unsqueeze(dim);
}
Tensor narrow(const Tensor& t, int64_t dim, int64_t start, int64_t length) {
  detail::check_defined(t, "narrow", "self");
  return t.narrow(dim, start, length);
}
Tensor select(const Tensor& t, int64_t dim, int64_t index) {
  detail::check_defined(t, "select", "self");
  return t.select(dim, index);
}
std::vector<Tensor> chunk(const Tensor& t, int64_t chunks, int64_t dim) {
  detail::check_defined(t, "chunk", "self");
  return t.chunk(chunks, dim);
}
std::vector<Tensor> split(const Tensor& t, int64_t split_size, int64_t dim) {
  detail::check_defined(t, "split", "self");
  return t.split(split_size, dim);
}
std::vector<Tensor> split(const Tensor& t, IntArrayRef split_sizes, int64_t dim) {
  detail::check_defined(t, "split", "self");
  return t.split(split_sizes, dim);
}

namespace {
// cat of the tensors, each reshaped by atleast (a view), along dim; op names the errors.
template <class F>
Tensor stack_at_least(const std::vector<Tensor>& tensors, const char* op, F&& atleast, int64_t dim) {
  WICK_CHECK(!tensors.empty(), ValueError, op, op, " expects a non-empty TensorList");
  std::vector<Tensor> parts;
  parts.reserve(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    detail::check_defined(tensors[i], op, "tensors");
    parts.push_back(atleast(tensors[i]));
  }
  return as_op(op, [&] { return cat(parts, dim); });
}
Tensor atleast_1d(const Tensor& t) { return t.dim() == 0 ? t.reshape({1}) : t; }
Tensor atleast_2d(const Tensor& t) {
  return t.dim() == 0 ? t.reshape({1, 1}) : t.dim() == 1 ? t.unsqueeze(0) : t;
}
Tensor atleast_3d(const Tensor& t) {
  if (t.dim() == 0) return t.reshape({1, 1, 1});
  if (t.dim() == 1) return t.unsqueeze(0).unsqueeze(2);
  return t.dim() == 2 ? t.unsqueeze(2) : t;
}
}  // namespace

Tensor hstack(const std::vector<Tensor>& tensors) {
  const bool one_d = !tensors.empty() && tensors[0].defined() && tensors[0].dim() <= 1;
  return stack_at_least(tensors, "hstack", atleast_1d, one_d ? 0 : 1);
}
Tensor vstack(const std::vector<Tensor>& tensors) { return stack_at_least(tensors, "vstack", atleast_2d, 0); }
Tensor row_stack(const std::vector<Tensor>& tensors) { return stack_at_least(tensors, "row_stack", atleast_2d, 0); }
Tensor dstack(const std::vector<Tensor>& tensors) { return stack_at_least(tensors, "dstack", atleast_3d, 2); }

namespace {
// a x b along dim d of their broadcast shape: a[(i+1)%3] b[(i+2)%3] - a[(i+2)%3] b[(i+1)%3].
Tensor cross_along(const Tensor& a, const Tensor& b, int64_t d) {
  const Tensor next = tensor(std::vector<int64_t>{1, 2, 0}, TensorOptions(kInt64).device(a.device()));
  const Tensor after = tensor(std::vector<int64_t>{2, 0, 1}, TensorOptions(kInt64).device(a.device()));
  return a.index_select(d, next) * b.index_select(d, after) - a.index_select(d, after) * b.index_select(d, next);
}
// The operands broadcast together, after linalg.cross's checks.
std::vector<Tensor> cross_operands(const Tensor& a, const Tensor& b, const char* op) {
  detail::check_defined(a, op, "self");
  detail::check_defined(b, op, "other");
  WICK_CHECK(a.device() == b.device(), DeviceError, op, "Expected all tensors to be on the same device, but found ",
             a.device(), " and ", b.device());
  WICK_CHECK(a.dtype() == b.dtype(), TypeError, op, "expected both inputs to have the same dtype, got ", a.dtype(),
             " and ", b.dtype());
  WICK_CHECK(a.dim() == b.dim(), ValueError, op, "inputs must have the same number of dimensions.");
  return as_op(op, [&] { return broadcast_tensors({a, b}); });
}
}  // namespace

Tensor linalg_cross(const Tensor& a, const Tensor& b, int64_t dim) {
  constexpr const char* kOp = "linalg_cross";
  const std::vector<Tensor> ab = cross_operands(a, b, kOp);
  const int64_t n = ab[0].dim();
  WICK_CHECK(dim >= -n && dim < n && n > 0, IndexError, kOp, "Dimension out of range (expected to be in range of [",
             -n, ", ", n - 1, "], but got ", dim, ")");
  const int64_t d = dim < 0 ? dim + n : dim;
  WICK_CHECK(a.size(d) == 3 && b.size(d) == 3, ValueError, kOp, "inputs dimension ", dim,
             " must have length 3. Got ", a.size(d), " and ", b.size(d));
  return as_op(kOp, [&] { return cross_along(ab[0], ab[1], d); });
}

Tensor cross(const Tensor& a, const Tensor& b, std::optional<int64_t> dim) {
  constexpr const char* kOp = "cross";
  if (dim) return as_op(kOp, [&] { return linalg_cross(a, b, *dim); });
  const std::vector<Tensor> ab = cross_operands(a, b, kOp);
  int64_t d = -1;
  for (int64_t i = 0; i < ab[0].dim() && d < 0; ++i)
    if (ab[0].size(i) == 3) d = i;
  WICK_CHECK(d >= 0, ValueError, kOp, "no dimension of size 3 in input");
  return as_op(kOp, [&] { return linalg_cross(a, b, d); });
}

}  // namespace wick
