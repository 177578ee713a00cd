// Ops that LibTorch programs reach for and that wick composes from its other ops: square, the
// isnan/isinf/isfinite tests, isclose/allclose, maximum/minimum, count_nonzero,
// prod, roll, fliplr/flipud, flatten, type_as, dot/mv, diag, unbind, meshgrid, logspace, the
// random randperm/normal/bernoulli, and Tensor::print. They run on every device their parts run
// on. Those PyTorch records as one node (MaximumBackward0, ProdBackward0,
// RollBackward0) compute their result once under forward_once and record that node
// (autograd/hooks.h); the others show the nodes of the ops they are made of, as PyTorch's
// composites do (square is pow(t, 2): PowBackward0).
#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>
#include <string_view>
#include <vector>

#include "autograd/hooks.h"
#include "core/as_op.h"
#include "core/checks.h"
#include "core/tensor_ops.h"
#include "wick/autograd.h"
#include "wick/ops.h"
#include "wick/random.h"

namespace wick {

using namespace detail;

// ---- elementwise

Tensor square(const Tensor& t) {
  check_defined(t, "square", "self");
  return as_op("square", [&] { return wick::pow(t, 2); });
}
Tensor Tensor::square() const { return wick::square(*this); }
Tensor& Tensor::square_() {
  as_op("square_", [&] { pow_(2); });
  return *this;
}

namespace {

// The bool tensor of t's shape that f computes from a floating t; constant for other dtypes
// (an integer or bool holds no NaN and no infinity).
template <class F>
Tensor float_test(const Tensor& t, const char* name, bool integer_value, F&& f) {
  check_defined(t, name, "self");
  if (!is_floating_point(t.dtype())) return integer_value ? ones_like(t, kBool) : zeros_like(t, kBool);
  NoGradGuard no_grad;  // a test of values: the result is bool and never requires grad
  return as_op(name, [&] { return f(t); });
}

}  // namespace

Tensor isnan(const Tensor& t) {
  return float_test(t, "isnan", false, [](const Tensor& x) { return x != x; });
}
Tensor isinf(const Tensor& t) {
  return float_test(t, "isinf", false, [](const Tensor& x) { return x.abs() == INFINITY; });
}
// x - x is 0 for a finite x and NaN for an infinite or NaN one.
Tensor isfinite(const Tensor& t) {
  return float_test(t, "isfinite", true, [](const Tensor& x) { return (x - x) == 0; });
}
Tensor Tensor::isnan() const { return wick::isnan(*this); }
Tensor Tensor::isinf() const { return wick::isinf(*this); }
Tensor Tensor::isfinite() const { return wick::isfinite(*this); }

Tensor isclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  check_defined(a, "isclose", "self");
  check_defined(b, "isclose", "other");
  WICK_CHECK(a.dtype() == b.dtype(), TypeError, "isclose", a.dtype(), " did not match ", b.dtype());
  WICK_CHECK(rtol >= 0, ValueError, "isclose", "rtol must be greater than or equal to zero, but got ", rtol);
  WICK_CHECK(atol >= 0, ValueError, "isclose", "atol must be greater than or equal to zero, but got ", atol);
  NoGradGuard no_grad;
  return as_op("isclose", [&] {
    Tensor equal = a == b;
    if (a.dtype() == kBool) return equal;
    // Integers are compared in float64, where |a - b| cannot wrap.
    const bool fp = is_floating_point(a.dtype());
    Tensor x = fp ? a : a.to(kFloat64), y = fp ? b : b.to(kFloat64);
    Tensor close = wick::where(equal, true, (x - y).abs() <= y.abs() * rtol + atol);
    if (equal_nan && fp) close = wick::where(x != x, y != y, close);
    return close;
  });
}
bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  return as_op("allclose", [&] { return isclose(a, b, rtol, atol, equal_nan).all().item<bool>(); });
}
Tensor Tensor::isclose(const Tensor& other, double rtol, double atol, bool equal_nan) const {
  return wick::isclose(*this, other, rtol, atol, equal_nan);
}
bool Tensor::allclose(const Tensor& other, double rtol, double atol, bool equal_nan) const {
  return wick::allclose(*this, other, rtol, atol, equal_nan);
}

namespace {

// name: the op the user called (maximum, or its spelling max).
Tensor extremum(const Tensor& a, const Tensor& b, bool is_max, const char* name) {
  check_defined(a, name, "self");
  check_defined(b, name, "other");
  WICK_CHECK(a.dtype() != kBool || b.dtype() != kBool, TypeError, name, "\"", name, "\" not implemented for 'bool'");
  const bool grad = needs_grad(a, b);
  // clamp_min(a, b) is max(a, b) with NaN propagating, broadcast and promoted as maximum is.
  Tensor out = forward_once(grad, [&] { return as_op(name, [&] { return is_max ? clamp_min(a, b) : clamp_max(a, b); }); });
  if (grad) [[unlikely]] autograd::record_maximum(a, b, out, is_max);
  return out;
}

}  // namespace

Tensor maximum(const Tensor& a, const Tensor& b) { return extremum(a, b, true, "maximum"); }
Tensor minimum(const Tensor& a, const Tensor& b) { return extremum(a, b, false, "minimum"); }
Tensor Tensor::maximum(const Tensor& other) const { return wick::maximum(*this, other); }
Tensor max(const Tensor& a, const Tensor& b) { return extremum(a, b, true, "max"); }
Tensor min(const Tensor& a, const Tensor& b) { return extremum(a, b, false, "min"); }
Tensor Tensor::max(const Tensor& other) const { return wick::max(*this, other); }
Tensor Tensor::min(const Tensor& other) const { return wick::min(*this, other); }
Tensor Tensor::minimum(const Tensor& other) const { return wick::minimum(*this, other); }

Tensor reshape(const Tensor& t, IntArrayRef shape) { return t.reshape(shape); }

std::vector<Tensor> broadcast_tensors(const std::vector<Tensor>& tensors) {
  for (size_t i = 0; i < tensors.size(); ++i) check_defined(tensors[i], "broadcast_tensors", "tensors");
  DimVector shape;
  for (const Tensor& t : tensors) shape = broadcast_shapes(shape, t.sizes(), "broadcast_tensors");
  std::vector<Tensor> out;
  out.reserve(tensors.size());
  for (const Tensor& t : tensors) out.push_back(t.expand(shape));
  return out;
}

// ---- reductions

Tensor count_nonzero(const Tensor& t, IntArrayRef dims) {
  check_defined(t, "count_nonzero", "self");
  NoGradGuard no_grad;
  return as_op("count_nonzero", [&] { return (t != 0).sum(dims); });  // bool sums count in int64
}
Tensor Tensor::count_nonzero(IntArrayRef dims) const { return wick::count_nonzero(*this, dims); }

namespace {

// The product along d of t (at least 1-D), d kept as size 1; 1 for an empty d.
Tensor prod_along(const Tensor& t, int64_t d, std::optional<Dtype> dtype) {
  if (t.size(d) == 0) {
    std::vector<int64_t> shape(t.sizes().begin(), t.sizes().end());
    shape[size_t(d)] = 1;
    Dtype r = dtype ? *dtype : is_integral(t.dtype(), true) ? kInt64 : t.dtype();
    return ones(shape, TensorOptions(r).device(t.device()));
  }
  return cumprod(t, d, dtype).narrow(d, t.size(d) - 1, 1);
}

}  // namespace

Tensor prod(const Tensor& t, std::optional<Dtype> dtype) {
  check_defined(t, "prod", "self");
  const bool grad = needs_grad(t);
  Tensor out = forward_once(grad, [&] {
    return as_op("prod", [&] { return prod_along(t.reshape({-1}), 0, dtype).reshape({}); });
  });
  if (grad) [[unlikely]] autograd::record_prod(t, out, std::nullopt, false);
  return out;
}
Tensor prod(const Tensor& t, int64_t dim, bool keepdim, std::optional<Dtype> dtype) {
  check_defined(t, "prod", "self");
  const int64_t d = wrap_dim(dim, t.dim(), "prod");
  const bool grad = needs_grad(t);
  Tensor out = forward_once(grad, [&] {
    return as_op("prod", [&] {
      if (t.dim() == 0) return dtype ? t.to(*dtype) : is_integral(t.dtype(), true) ? t.to(kInt64) : t.clone();
      Tensor r = prod_along(t, d, dtype);
      return keepdim ? r : r.squeeze(d);
    });
  });
  if (grad) [[unlikely]] autograd::record_prod(t, out, t.dim() == 0 ? std::nullopt : std::optional<int64_t>(d), keepdim);
  return out;
}
Tensor Tensor::prod(std::optional<Dtype> dtype) const { return wick::prod(*this, dtype); }
Tensor Tensor::prod(int64_t dim, bool keepdim, std::optional<Dtype> dtype) const {
  return wick::prod(*this, dim, keepdim, dtype);
}

// ---- shape

namespace {

// t rolled by shifts[i] along ds[i] (ds wrapped): the two parts of each dim swapped.
Tensor roll_dims(const Tensor& t, IntArrayRef shifts, const std::vector<int64_t>& ds) {
  Tensor out = t;
  for (size_t i = 0; i < ds.size(); ++i) {
    const int64_t d = ds[i], n = t.size(d);
    if (n == 0) continue;
    const int64_t s = ((shifts[i] % n) + n) % n;
    if (s == 0) continue;
    out = cat({out.narrow(d, n - s, s), out.narrow(d, 0, n - s)}, d);
  }
  return out.is_same(t) ? t.clone() : out;
}

}  // namespace

Tensor roll(const Tensor& t, IntArrayRef shifts, IntArrayRef dims) {
  check_defined(t, "roll", "self");
  WICK_CHECK(!shifts.empty(), ValueError, "roll", "`shifts` required");
  WICK_CHECK(!dims.empty() || shifts.size() == 1, ValueError, "roll", "shifts and dimensions must align. shifts: ",
             shifts.size(), ", dims:", dims.size());
  WICK_CHECK(dims.empty() || dims.size() == shifts.size(), ValueError, "roll",
             "shifts and dimensions must align. shifts: ", shifts.size(), ", dims:", dims.size());
  std::vector<int64_t> ds;
  for (int64_t d : dims) ds.push_back(wrap_dim(d, t.dim(), "roll"));
  const std::vector<int64_t> sh(shifts.begin(), shifts.end());
  const bool grad = needs_grad(t);
  Tensor out = forward_once(grad, [&] {
    return as_op("roll", [&] {
      if (dims.empty()) return roll_dims(t.reshape({-1}), shifts, {0}).reshape(t.sizes());
      return roll_dims(t, shifts, ds);
    });
  });
  if (grad) [[unlikely]] autograd::record_roll(t, out, sh, std::vector<int64_t>(dims.begin(), dims.end()));
  return out;
}
Tensor Tensor::roll(IntArrayRef shifts, IntArrayRef dims) const { return wick::roll(*this, shifts, dims); }

Tensor fliplr(const Tensor& t) {
  check_defined(t, "fliplr", "self");
  WICK_CHECK(t.dim() >= 2, ValueError, "fliplr", "Input must be >= 2-d.");
  return as_op("fliplr", [&] { return flip(t, {1}); });
}
Tensor flipud(const Tensor& t) {
  check_defined(t, "flipud", "self");
  WICK_CHECK(t.dim() >= 1, ValueError, "flipud", "Input must be >= 1-d.");
  return as_op("flipud", [&] { return flip(t, {0}); });
}
Tensor Tensor::fliplr() const { return wick::fliplr(*this); }
Tensor Tensor::flipud() const { return wick::flipud(*this); }

Tensor flatten(const Tensor& t, int64_t start_dim, int64_t end_dim) {
  check_defined(t, "flatten", "self");
  return t.flatten(start_dim, end_dim);
}

Tensor Tensor::type_as(const Tensor& other) const {
  check_defined(other, "type_as", "other");
  return to(other.dtype());
}

std::vector<Tensor> unbind(const Tensor& t, int64_t dim) {
  check_defined(t, "unbind", "self");
  return t.unbind(dim);
}

// ---- linear algebra

Tensor dot(const Tensor& a, const Tensor& b) {
  check_defined(a, "dot", "self");
  check_defined(b, "dot", "tensor");
  WICK_CHECK(a.dim() == 1 && b.dim() == 1, ValueError, "dot", "1D tensors expected, but got ", a.dim(), "D and ",
             b.dim(), "D tensors");
  WICK_CHECK(a.dtype() == b.dtype(), TypeError, "dot", "dot : expected both vectors to have same dtype, but found ",
             a.dtype(), " and ", b.dtype());
  WICK_CHECK(a.numel() == b.numel(), ValueError, "dot", "inconsistent tensor size, expected tensor [", a.numel(),
             "] and src [", b.numel(), "] to have the same number of elements, but got ", a.numel(), " and ",
             b.numel(), " elements respectively");
  return as_op("dot", [&] { return matmul(a, b); });
}
Tensor mv(const Tensor& m, const Tensor& v) {
  check_defined(m, "mv", "self");
  check_defined(v, "mv", "vec");
  WICK_CHECK(m.dim() == 2 && v.dim() == 1, ValueError, "mv", "vector + matrix @ vector expected, got 1, ", m.dim(),
             ", ", v.dim());
  WICK_CHECK(m.size(1) == v.size(0), ValueError, "mv", "size mismatch, got input (", m.size(0), "), mat (",
             m.size(0), "x", m.size(1), "), vec (", v.size(0), ")");
  return as_op("mv", [&] { return matmul(m, v); });
}
Tensor Tensor::dot(const Tensor& other) const { return wick::dot(*this, other); }
Tensor Tensor::mv(const Tensor& vec) const { return wick::mv(*this, vec); }

Tensor trace(const Tensor& t) {
  check_defined(t, "trace", "self");
  WICK_CHECK(t.dim() == 2, ValueError, "trace", "expected a matrix, but got tensor with dim ", t.dim());
  Tensor out;
  {
    NoGradGuard no_grad;
    out = as_op("trace", [&] { return t.diagonal().sum(); });
  }
  if (needs_grad(t)) autograd::record_trace(t, out);
  return out;
}
Tensor Tensor::trace() const { return wick::trace(*this); }

Tensor diag(const Tensor& t, int64_t diagonal) {
  check_defined(t, "diag", "self");
  WICK_CHECK(t.dim() == 1 || t.dim() == 2, ValueError, "diag", "Supports 1D or 2D tensors. Got ", t.dim(), "D");
  // The offset's magnitude, kept where n + |diagonal| cannot wrap (a larger one selects nothing
  // from a matrix, and no vector's matrix is that large).
  const int64_t k = std::clamp<int64_t>(diagonal, -(int64_t(1) << 62), int64_t(1) << 62);
  if (t.dim() == 1) {
    int64_t m = 0;
    WICK_CHECK(!__builtin_add_overflow(t.size(0), k < 0 ? -k : k, &m) && k == diagonal, ValueError, "diag",
               "the matrix of a vector of ", t.size(0), " elements on diagonal ", diagonal, " is too large");
  }
  return as_op("diag", [&] {
    const TensorOptions o = TensorOptions(kInt64).device(t.device());
    const int64_t r0 = std::max<int64_t>(-k, 0), c0 = std::max<int64_t>(k, 0);
    if (t.dim() == 1) {
      const int64_t n = t.size(0), m = n + (k < 0 ? -k : k);
      Tensor j = arange(n, o);
      return zeros({m, m}, TensorOptions(t.dtype()).device(t.device()))
          .index_put({j + r0, j + c0}, t);
    }
    const int64_t len = std::max<int64_t>(0, std::min(t.size(0) - r0, t.size(1) - c0));
    Tensor j = arange(len, o);
    return t.index({j + r0, j + c0});
  });
}
Tensor Tensor::diag(int64_t diagonal) const { return wick::diag(*this, diagonal); }

std::vector<Tensor> meshgrid(const std::vector<Tensor>& tensors, std::string_view indexing) {
  WICK_CHECK(indexing == "ij" || indexing == "xy", ValueError, "meshgrid",
             "indexing must be one of \"xy\" or \"ij\", but received: ", indexing);
  WICK_CHECK(!tensors.empty(), ValueError, "meshgrid", "expects a non-empty TensorList");
  for (const Tensor& t : tensors) {
    check_defined(t, "meshgrid", "tensors");
    WICK_CHECK(t.dim() <= 1, ValueError, "meshgrid", "Expected 0D or 1D tensor in the tensor list but got: ",
               t.dim(), "D");
    WICK_CHECK(t.dtype() == tensors[0].dtype(), TypeError, "meshgrid",
               "expects all tensors to have the same dtype");
    WICK_CHECK(t.device() == tensors[0].device(), DeviceError, "meshgrid",
               "expects all tensors to have the same device");
  }
  // "xy" is "ij" of the inputs with the first two swapped, its first two results swapped back.
  const bool swap = indexing == "xy" && tensors.size() >= 2;
  std::vector<Tensor> in = tensors;
  if (swap) std::swap(in[0], in[1]);
  std::vector<int64_t> shape;
  for (const Tensor& t : in) shape.push_back(t.numel());
  std::vector<Tensor> out;
  for (size_t i = 0; i < in.size(); ++i) {
    std::vector<int64_t> view(in.size(), 1);
    view[i] = -1;
    out.push_back(in[i].reshape(view).expand(shape));
  }
  if (swap) std::swap(out[0], out[1]);
  return out;
}

Tensor logspace(double start, double end, int64_t steps, double base, TensorOptions o) {
  return as_op("logspace", [&] {
    Tensor e = linspace(start, end, steps, TensorOptions(kFloat64).device(o.device()));
    return wick::pow(base, e).to(o.dtype());  // the default dtype unless o names one
  });
}

// ---- random

Tensor randperm(int64_t n, TensorOptions o) {
  WICK_CHECK(n >= 0, ValueError, "randperm", "n must be non-negative, got", n);
  const Dtype dt = o.dtype_opt() ? *o.dtype_opt() : kInt64;
  // The largest n whose values 0 .. n-1 the dtype holds exactly (PyTorch's bounds).
  auto limit = [](Dtype d) -> int64_t {
    switch (d) {
      case kBool: return 0;
      case kUInt8: return int64_t(1) << 8;
      case kInt8: return int64_t(1) << 7;
      case kInt16: return int64_t(1) << 15;
      case kInt32: return int64_t(1) << 31;
      case kFloat16: return (int64_t(1) << 11) + 1;
      case kBFloat16: return (int64_t(1) << 8) + 1;
      case kFloat32: return (int64_t(1) << 24) + 1;
      case kFloat64: return (int64_t(1) << 53) + 1;
      default: return std::numeric_limits<int64_t>::max();
    }
  };
  WICK_CHECK(n <= limit(dt), ValueError, "randperm", "n is too large for result tensor type: '", dt, "'");
  return as_op("randperm", [&] {
    // float64 draws: two equal keys among n are about n^2 / 2^54 likely, and a tie still gives a
    // permutation (sort keeps the lower index first).
    Tensor keys = rand({n}, TensorOptions(kFloat64).device(o.device()));
    Tensor p = argsort(keys);
    return dt == kInt64 ? p : p.to(dt);
  });
}

Tensor normal(double mean, double std, IntArrayRef sizes, TensorOptions o) {
  WICK_CHECK(std >= 0, ValueError, "normal", "normal expects std >= 0.0, but found std ", std);
  return as_op("normal", [&] { return randn(sizes, o).mul_(std).add_(mean); });
}

namespace {

// normal's tensor forms: mean + std * N(0, 1), drawn in the result's shape.
Tensor normal_draw(const Tensor& mean, const Tensor& std, double mean_v, double std_v, const char* node) {
  const Tensor& like = mean.defined() ? mean : std;
  check_defined(like, "normal", mean.defined() ? "mean" : "std");
  WICK_CHECK(like.is_floating_point(), TypeError, "normal", "expected a floating point ",
             mean.defined() ? "mean" : "std", ", got ", like.dtype());
  if (mean.defined() && std.defined())
    WICK_CHECK(mean.device() == std.device(), ValueError, "normal",
               "Expected all tensors to be on the same device, but found at least two devices, ", mean.device(),
               " and ", std.device(), "!");
  DimVector shape = mean.defined() && std.defined() ? broadcast_shapes(mean.sizes(), std.sizes(), "normal")
                                                    : DimVector(like.sizes());
  if (std.defined() && std.numel() > 0) {
    NoGradGuard no_grad;
    WICK_CHECK(std.amin().item<double>() >= 0, ValueError, "normal",
               "normal expects all elements of std >= 0.0");
  } else if (!std.defined()) {
    WICK_CHECK(std_v >= 0, ValueError, "normal", "normal expects std >= 0.0, but found std ", std_v);
  }
  Tensor out;
  {
    NoGradGuard no_grad;
    out = as_op("normal", [&] {
      Tensor eps = randn(shape, like.options());
      Tensor scaled = std.defined() ? eps.mul_(std.detach()) : eps.mul_(std_v);
      return mean.defined() ? scaled.add_(mean.detach()) : scaled.add_(mean_v);
    });
  }
  if (mean.defined() && std.defined()) {
    if (needs_grad(mean, std)) autograd::record_zero_gradients(node, {mean, std}, out);
  } else if (needs_grad(like)) {
    autograd::record_zero_gradients(node, {like}, out);
  }
  return out;
}

}  // namespace

Tensor normal(const Tensor& mean, const Tensor& std) {
  check_defined(mean, "normal", "mean");
  check_defined(std, "normal", "std");
  return normal_draw(mean, std, 0, 0, "NormalBackward3");
}
Tensor normal(const Tensor& mean, double std) { return normal_draw(mean, Tensor(), 0, std, "NormalBackward1"); }
Tensor normal(double mean, const Tensor& std) { return normal_draw(Tensor(), std, mean, 0, "NormalBackward2"); }

namespace {

void check_probability(double p, const char* op) {
  WICK_CHECK(p >= 0 && p <= 1, ValueError, op, op, " expects p to be in [0, 1], but got p=", p);
}
void check_probabilities(const Tensor& p, const char* op) {
  WICK_CHECK(is_floating_point(p.dtype()), TypeError, op, "expected probabilities of a floating dtype, got ",
             p.dtype());
  if (p.numel() == 0) return;
  NoGradGuard no_grad;
  // Both bounds in one read back to the host (one synchronization on a GPU).
  const std::vector<double> r = stack({p.amin(), p.amax()}).to(kFloat64).cpu().to_vector<double>();
  WICK_CHECK(r[0] >= 0 && r[1] <= 1, ValueError, op, "Expected p_in >= 0 && p_in <= 1 to be true, but got false.");
}

}  // namespace

Tensor bernoulli(const Tensor& probs) {
  check_defined(probs, "bernoulli", "self");
  check_probabilities(probs, "bernoulli");
  NoGradGuard no_grad;  // a draw: no gradient flows to the probabilities
  return as_op("bernoulli", [&] { return (rand_like(probs, TensorOptions(kFloat64)) < probs).to(probs.dtype()); });
}
Tensor bernoulli(const Tensor& t, double p) {
  check_defined(t, "bernoulli", "self");
  check_probability(p, "bernoulli");
  NoGradGuard no_grad;
  return as_op("bernoulli", [&] {
    const Dtype dt = t.dtype();
    return (rand_like(t, TensorOptions(kFloat64)) < p).to(dt);
  });
}
Tensor Tensor::bernoulli() const { return wick::bernoulli(*this); }
Tensor Tensor::bernoulli(double p) const { return wick::bernoulli(*this, p); }
Tensor& Tensor::bernoulli_(double p) {
  check_defined(*this, "bernoulli_", "self");
  check_probability(p, "bernoulli_");
  Tensor draw = wick::bernoulli(*this, p);
  NoGradGuard no_grad;
  return copy_(draw);
}
Tensor& Tensor::bernoulli_(const Tensor& p) {
  check_defined(*this, "bernoulli_", "self");
  check_defined(p, "bernoulli_", "p");
  check_probabilities(p, "bernoulli_");
  Tensor draw;
  {
    NoGradGuard no_grad;
    draw = as_op("bernoulli_", [&] {
      return (rand_like(*this, TensorOptions(kFloat64)) < p.to(kFloat64)).to(dtype());
    });
  }
  NoGradGuard no_grad;
  return copy_(draw);
}

// ---- printing

std::string Tensor::toString() const {
  if (!defined()) return "UndefinedType";
  static constexpr const char* kNames[] = {"Bool",  "Byte",     "Char",  "Short", "Int",
                                           "Long",  "Half",     "BFloat16", "Float", "Double"};
  const auto index = size_t(dtype());
  return std::string(is_cuda() ? "CUDA" : "CPU") + (index < std::size(kNames) ? kNames[index] : "Unknown") + "Type";
}

std::ostream& operator<<(std::ostream& os, const DeprecatedTypeProperties& t) { return os << t.toString(); }

void Tensor::print() const {
  if (!defined()) {
    std::cerr << "[UndefinedTensor]" << std::endl;
    return;
  }
  std::cerr << "[" << toString() << " [";
  for (int64_t d = 0; d < dim(); ++d) std::cerr << (d ? ", " : "") << size(d);
  std::cerr << "]]" << std::endl;
}

}  // namespace wick
