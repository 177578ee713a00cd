// More composites LibTorch programs call: median (through sort), round to decimal places,
// index_fill (a masked fill along one dim), masked_scatter (a gather of source by the running
// count of the mask) and Tensor::type(dtype). Each computes its result once under forward_once
// and records PyTorch's node for it (MedianBackward0/1, RoundBackward1, IndexFillBackward0/1,
// MaskedScatterBackward0: autograd/hooks.h), so that autograd shows the op called, not its
// parts. They run on every device their parts run on.
#include <cmath>
#include <cstdint>
#include <tuple>

#include "autograd/hooks.h"
#include "core/as_op.h"
#include "core/checks.h"
#include "core/tensor_ops.h"
#include "wick/autograd.h"
#include "wick/ops.h"

namespace wick {

using namespace detail;

// ---- median

namespace {

void check_median_dtype(const Tensor& t) {
  WICK_CHECK(t.dtype() != kBool, TypeError, "median", "\"median\" not implemented for '", t.dtype(), "'");
}

// The rank each slice of t along d takes its median from: (n - 1) / 2, or the first NaN (NaN
// sorts last, and the sort keeps equal elements in order) where the slice holds one. keepdim
// shape, int64.
Tensor median_rank(const Tensor& t, int64_t d) {
  const int64_t n = t.size(d);
  DimVector one(t.sizes());
  one[size_t(d)] = 1;
  Tensor rank = wick::full(one, (n - 1) / 2, t.options().dtype(kInt64));
  if (!is_floating_point(t.dtype())) return rank;
  Tensor nans = t.isnan().sum({d}, true);
  return wick::where(nans > 0, n - nans, rank);
}

}  // namespace

Tensor median(const Tensor& t) {
  check_defined(t, "median", "self");
  check_median_dtype(t);
  WICK_CHECK(t.numel() > 0 || is_floating_point(t.dtype()), IndexError, "median",
             "median() input tensor cannot be empty");
  const bool grad = needs_grad(t);
  Tensor out = forward_once(grad, [&] {
    return as_op("median", [&] {
      if (t.numel() == 0) return wick::full({}, NAN, t.options());
      Tensor flat = std::get<0>(wick::sort(t.reshape({-1})));
      return flat.gather(0, median_rank(flat, 0)).reshape({});
    });
  });
  if (grad) [[unlikely]] autograd::record_median(t, out);
  return out;
}

std::tuple<Tensor, Tensor> median(const Tensor& t, int64_t dim, bool keepdim) {
  check_defined(t, "median", "self");
  check_median_dtype(t);
  const int64_t d = wrap_dim(dim, t.dim(), "median");
  WICK_CHECK(t.dim() == 0 || t.size(d) > 0, IndexError, "median", "median(): Expected reduction dim ", d,
             " to have non-zero size.");
  const bool grad = needs_grad(t);
  auto [values, indices] = forward_once(grad, [&] {
    return as_op("median", [&]() -> std::tuple<Tensor, Tensor> {
      if (t.dim() == 0) return {t.clone(), wick::zeros({}, t.options().dtype(kInt64))};
      auto [sorted, order] = wick::sort(t, d);
      Tensor rank = median_rank(t, d);
      Tensor v = sorted.gather(d, rank), i = order.gather(d, rank);
      if (!keepdim) return {v.squeeze(d), i.squeeze(d)};
      return {v, i};
    });
  });
  if (grad) [[unlikely]] autograd::record_median(t, values, indices, d, keepdim);
  return {values, indices};
}

Tensor Tensor::median() const { return wick::median(*this); }
std::tuple<Tensor, Tensor> Tensor::median(int64_t dim, bool keepdim) const {
  return wick::median(*this, dim, keepdim);
}

// ---- round to decimal places

Tensor round(const Tensor& t, int64_t decimals) {
  check_defined(t, "round", "self");
  WICK_CHECK(is_floating_point(t.dtype()), TypeError, "round", "\"round\" not implemented for '", t.dtype(), "'");
  // As PyTorch: x * 10^d rounded then divided for d >= 0, x / 10^-d rounded then multiplied
  // for d < 0, in the op's compute type (float for 16-bit floats). A power of ten past the
  // type's range is infinite and the result NaN, as PyTorch's.
  const bool grad = needs_grad(t);
  Tensor out = forward_once(grad, [&] {
    return as_op("round", [&] {
      const bool narrow = t.dtype() == kFloat16 || t.dtype() == kBFloat16;
      Tensor x = narrow ? t.to(kFloat32) : t;
      const double ten = std::pow(10.0, double(decimals < 0 ? -decimals : decimals));
      const Scalar scale = x.dtype() == kFloat32 ? Scalar(double(float(ten))) : Scalar(ten);
      Tensor r = decimals >= 0 ? wick::round(x * scale) / scale : wick::round(x / scale) * scale;
      return narrow ? r.to(t.dtype()) : r;
    });
  });
  if (grad) [[unlikely]] autograd::record_round_decimals(t, out);
  return out;
}

Tensor Tensor::round(int64_t decimals) const { return wick::round(*this, decimals); }

Tensor& Tensor::round_(int64_t decimals) {
  check_defined(*this, "round_", "self");
  if (needs_grad(*this)) [[unlikely]]
    return autograd::inplace(*this, "round_", [&](const Tensor& t) { return wick::round(t, decimals); });
  Tensor r = as_op("round_", [&] { return wick::round(*this, decimals); });
  copy_(r);
  return *this;
}

// ---- index_fill

namespace {

// The bool mask of index_fill: true at t's slices index[i] along d, shaped to broadcast
// against t (size n at d, 1 elsewhere; 0-d for a 0-d t). Checks index as PyTorch does.
Tensor index_fill_mask(const Tensor& t, int64_t dim, const Tensor& index, const char* op) {
  check_defined(t, op, "self");
  check_defined(index, op, "index");
  const int64_t d = wrap_dim(dim, t.dim(), op);
  WICK_CHECK(index.dtype() == kInt64, IndexError, op, "index_fill_(): Expected dtype int64 for index.");
  WICK_CHECK(index.dim() <= 1, ValueError, op, "Index has to be a vector/scalar");
  check_same_device(index, t.device(), op, "index");
  const int64_t n = t.dim() == 0 ? 1 : t.size(d);
  if (index.numel() > 0) {
    Tensor bounds = wick::stack({index.min(), index.max()}).cpu();
    const int64_t lo = bounds[0].item<int64_t>(), hi = bounds[1].item<int64_t>();
    const int64_t bad = lo < -n ? lo : hi;
    WICK_CHECK(lo >= -n && hi < n, IndexError, op, "index ", bad, " is out of bounds for dimension ", d,
               " with size ", n);
  }
  Tensor mask = wick::zeros({n}, t.options().dtype(kBool));
  NoGradGuard no_grad;
  mask.index_put_({index.reshape({-1})}, true);
  if (t.dim() == 0) return mask.reshape({});
  DimVector shape(size_t(t.dim()), 1);
  shape[size_t(d)] = n;
  return mask.reshape(shape);
}

void check_fill_value(const Tensor& value, const char* op) {
  check_defined(value, op, "value");
  WICK_CHECK(value.dim() == 0, ValueError, op,
             "index_fill_ only supports a 0-dimensional value tensor, but got tensor with ", value.dim(),
             " dimension(s).");
}

}  // namespace

Tensor index_fill(const Tensor& t, int64_t dim, const Tensor& index, const Scalar& value) {
  Tensor mask = index_fill_mask(t, dim, index, "index_fill");
  const bool grad = needs_grad(t);
  Tensor out = forward_once(grad, [&] { return as_op("index_fill", [&] { return t.masked_fill(mask, value); }); });
  if (grad) [[unlikely]] autograd::record_index_fill(t, mask, nullptr, out);
  return out;
}

Tensor index_fill(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& value) {
  Tensor mask = index_fill_mask(t, dim, index, "index_fill");
  check_fill_value(value, "index_fill");
  const bool grad = needs_grad(t, value);
  Tensor out = forward_once(grad, [&] { return as_op("index_fill", [&] { return t.masked_fill(mask, value); }); });
  if (grad) [[unlikely]] autograd::record_index_fill(t, mask, &value, out);
  return out;
}

Tensor Tensor::index_fill(int64_t dim, const Tensor& index, const Scalar& value) const {
  return wick::index_fill(*this, dim, index, value);
}
Tensor Tensor::index_fill(int64_t dim, const Tensor& index, const Tensor& value) const {
  return wick::index_fill(*this, dim, index, value);
}

Tensor& Tensor::index_fill_(int64_t dim, const Tensor& index, const Scalar& value) {
  Tensor mask = index_fill_mask(*this, dim, index, "index_fill_");
  if (needs_grad(*this)) [[unlikely]]
    return autograd::inplace(*this, "index_fill_", [&](const Tensor& t) { return wick::index_fill(t, dim, index, value); });
  as_op("index_fill_", [&] { masked_fill_(mask, value); });
  return *this;
}
Tensor& Tensor::index_fill_(int64_t dim, const Tensor& index, const Tensor& value) {
  Tensor mask = index_fill_mask(*this, dim, index, "index_fill_");
  check_fill_value(value, "index_fill_");
  if (needs_grad(*this, value)) [[unlikely]]
    return autograd::inplace(*this, "index_fill_", [&](const Tensor& t) { return wick::index_fill(t, dim, index, value); });
  as_op("index_fill_", [&] { masked_fill_(mask, value); });
  return *this;
}

// ---- masked_scatter

namespace {

// Checks the operands; returns the broadcast shape of t and mask.
DimVector check_masked_scatter(const Tensor& t, const Tensor& mask, const Tensor& source, const char* op) {
  check_defined(t, op, "self");
  check_defined(mask, op, "mask");
  check_defined(source, op, "source");
  WICK_CHECK(mask.dtype() == kBool, TypeError, op, "masked_scatter_ only supports boolean masks, but got mask with dtype ",
             mask.dtype());
  WICK_CHECK(source.dtype() == t.dtype(), TypeError, op,
             "masked_scatter: expected self and source to have same dtypes but got ", t.dtype(), " and ",
             source.dtype());
  check_same_device(mask, t.device(), op, "mask");
  check_same_device(source, t.device(), op, "source");
  return broadcast_shapes(t.sizes(), mask.sizes(), op);
}

// t where mask is false, source's elements in order where it is true (t and mask of shape).
Tensor masked_scatter_values(const Tensor& t, const Tensor& mask, const Tensor& source, IntArrayRef shape,
                             const char* op) {
  Tensor m = mask.expand(shape), self = t.expand(shape);
  const int64_t count = m.sum().item<int64_t>();
  WICK_CHECK(count <= source.numel(), ValueError, op, "Number of elements of source < number of ones in mask");
  if (count == 0) return self.clone();
  // The place in source of each true element: the running count of the mask, less one.
  Tensor place = (wick::cumsum(m.reshape({-1}), 0) - 1).clamp_min(0);
  Tensor taken = source.reshape({-1}).index_select(0, place).reshape(shape);
  return wick::where(m, taken, self);
}

}  // namespace

Tensor masked_scatter(const Tensor& t, const Tensor& mask, const Tensor& source) {
  const DimVector shape = check_masked_scatter(t, mask, source, "masked_scatter");
  const bool grad = needs_grad(t, source);
  Tensor out = forward_once(grad, [&] {
    return as_op("masked_scatter", [&] { return masked_scatter_values(t, mask, source, shape, "masked_scatter"); });
  });
  if (grad) [[unlikely]] autograd::record_masked_scatter(t, mask.expand(shape), source, out);
  return out;
}

Tensor Tensor::masked_scatter(const Tensor& mask, const Tensor& source) const {
  return wick::masked_scatter(*this, mask, source);
}

Tensor& Tensor::masked_scatter_(const Tensor& mask, const Tensor& source) {
  const DimVector shape = check_masked_scatter(*this, mask, source, "masked_scatter_");
  WICK_CHECK(IntArrayRef(shape) == sizes(), ValueError, "masked_scatter_", "the mask of shape ", mask.sizes(),
             " does not broadcast to self's shape ", sizes());
  if (needs_grad(*this, source)) [[unlikely]]
    return autograd::inplace(*this, "masked_scatter_",
                             [&](const Tensor& t) { return wick::masked_scatter(t, mask, source); });
  Tensor r = as_op("masked_scatter_", [&] { return masked_scatter_values(*this, mask, source, shape, "masked_scatter_"); });
  copy_(r);
  return *this;
}

// ---- LibTorch's spelling of a cast

Tensor Tensor::type(Dtype dtype) const {
  check_defined(*this, "type", "self");
  return to(dtype);
}

}  // namespace wick
