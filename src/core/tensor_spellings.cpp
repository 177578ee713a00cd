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
