// The checks of an op's arguments (core/checks.h).
#include "core/checks.h"

#include <iostream>
#include <optional>
#include <sstream>

#include "wick/ops.h"

namespace wick::detail {

void check_same_device(const Tensor& t, Device device, const char* op, const char* arg) {
  if (t.device() != device) [[unlikely]]
    raise<DeviceError>(op, "expected all tensors to be on the same device, but found at least two devices, ",
                       device, " and ", t.device(), " (argument '", arg, "' is on ", t.device(), ")");
}

int64_t wrap_dim(int64_t d, int64_t ndim, const char* op) {
  int64_t n = std::max<int64_t>(ndim, 1);  // a 0-d tensor accepts dims -1 and 0
  WICK_CHECK(d >= -n && d < n, IndexError, op, "Dimension out of range (expected to be in range of [", -n,
             ", ", n - 1, "], but got ", d, ")");
  return d < 0 ? d + n : d;
}

DimVector broadcast_shapes(IntArrayRef a, IntArrayRef b, const char* op) {
  size_t n = std::max(a.size(), b.size());
  DimVector out(n, 1);
  for (size_t i = 0; i < n; ++i) {
    int64_t sa = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t sb = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (sa != sb && sa != 1 && sb != 1) [[unlikely]]
      raise<ValueError>(op, "The size of tensor a (", sa, ") must match the size of tensor b (", sb,
                        ") at non-singleton dimension ", i);
    out[i] = sa == 1 ? sb : sa;
  }
  return out;
}

bool is_non_overlapping_and_dense(const Tensor& t) {
  const int64_t n = t.dim();
  if (n == 0 || t.numel() == 0) return true;  // an empty tensor has no element to overlap
  IntArrayRef sizes = t.sizes(), strides = t.strides();
  if (n == 1) return sizes[0] < 2 || strides[0] == 1;
  if (t.is_contiguous()) return true;
  // Dims by increasing stride, those of size < 2 last (they take no memory of their own): an
  // insertion sort, stable and without the temporary buffer std::stable_sort allocates.
  auto before = [&](int64_t a, int64_t b) {
    if (sizes[a] < 2) return false;
    if (sizes[b] < 2) return true;
    return strides[a] < strides[b];
  };
  DimVector perm(size_t(n), 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t j = i;
    for (; j > 0 && before(i, perm[size_t(j - 1)]); --j) perm[size_t(j)] = perm[size_t(j - 1)];
    perm[size_t(j)] = i;
  }
  int64_t expected = 1;
  for (int64_t d : perm) {
    if (sizes[d] < 2) return true;
    if (strides[d] != expected) return false;
    if (__builtin_mul_overflow(expected, sizes[d], &expected)) return false;
  }
  return true;
}

Overlap overlap_status(const Tensor& a, const Tensor& b) {
  if (a.is_same(b)) return Overlap::Full;
  if (a.numel() == 0 || b.numel() == 0) return Overlap::None;
  if (!is_non_overlapping_and_dense(a) || !is_non_overlapping_and_dense(b)) return Overlap::TooHard;
  if (a.device() != b.device()) return Overlap::None;
  // Dense tensors: each covers [begin, end) of its memory (storages that alias, as from_blob
  // over one buffer, are compared by address too).
  const auto* ab = static_cast<const char*>(a.impl()->data());
  const auto* bb = static_cast<const char*>(b.impl()->data());
  const auto* ae = ab + a.numel() * a.element_size();
  const auto* be = bb + b.numel() * b.element_size();
  if (ab == bb && ae == be) return a.strides().equals(b.strides()) ? Overlap::Full : Overlap::Partial;
  if (ab < be && bb < ae) return Overlap::Partial;
  return Overlap::None;
}

void check_no_internal_overlap(const Tensor& out, const char* op) {
  if (is_non_overlapping_and_dense(out)) return;
  for (int64_t d = 0; d < out.dim(); ++d)
    if (out.stride(d) == 0 && out.size(d) > 1) [[unlikely]]
      raise<ValueError>(op,
                        "unsupported operation: more than one element of the written-to tensor refers to a "
                        "single memory location. Please clone() the tensor before performing the operation.");
}

void check_no_partial_overlap(const Tensor& out, const Tensor& in, const char* op) {
  if (overlap_status(out, in) == Overlap::Partial) [[unlikely]]
    raise<ValueError>(op,
                      "unsupported operation: some elements of the input tensor and the written-to tensor "
                      "refer to a single memory location. Please clone() the tensor before performing the "
                      "operation.");
}

Dtype result_type(std::initializer_list<Tensor> tensors, const Scalar* scalar) {
  // PyTorch's three priority levels: dimensioned tensors, 0-d tensors, wrapped numbers.
  // A lower level only matters when its category (bool < int < float) is higher.
  std::optional<Dtype> dim_t, zero_t;
  for (const Tensor& t : tensors) {
    if (!t.defined()) continue;
    auto& slot = t.dim() > 0 ? dim_t : zero_t;
    slot = slot ? promote_types(*slot, t.dtype()) : t.dtype();
  }
  Dtype r;
  if (dim_t) {
    r = *dim_t;
    if (zero_t && promotion_category(*zero_t) > promotion_category(r)) r = promote_types(r, *zero_t);
  } else if (zero_t) {
    r = *zero_t;
  } else {
    r = scalar ? scalar->dtype() : get_default_dtype();
    return r;
  }
  if (scalar) {
    Dtype s = scalar->is_floating_point() ? get_default_dtype() : scalar->dtype();
    if (promotion_category(s) > promotion_category(r)) r = promotion_category(s) == 2 && !is_floating_point(r) ? get_default_dtype() : s;
  }
  return r;
}

}  // namespace wick::detail

// ---- the user-code checks of wick/error.h (WICK_INTERNAL_ASSERT, WICK_WARN)
namespace wick::detail {

void internal_assert_failed(const char* cond, const char* file, int line, const std::string& msg) {
  std::ostringstream os;
  os << "INTERNAL ASSERT FAILED at \"" << file << "\":" << line << ", please report a bug. "
     << (msg.empty() ? std::string("Expected ") + cond + " to be true, but got false." : msg);
  throw Error(os.str());
}

void warn(const std::string& msg, const char* func) {
  std::cerr << "Warning: " << msg << " (function " << func << ")\n";
}

}  // namespace wick::detail
