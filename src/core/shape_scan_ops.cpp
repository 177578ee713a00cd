// The shape, scan and reduction ops of transformer code: tril/triu, cumsum/cumprod (the
// backends' scan family), logsumexp, var_mean/std_mean, norm("fro"), repeat,
// repeat_interleave, outer, lerp, baddbmm and einsum. Most are composites of existing ops, so
// they run on every device; those with a node of their own (TrilBackward0, CumsumBackward0,
// LogsumexpBackward0, RepeatBackward0, LerpBackward0/1, BaddbmmBackward0) compute their result
// once and record it (autograd/hooks.h).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <string>

#include "autograd/hooks.h"
#include "core/as_op.h"
#include "core/checks.h"
#include "core/dim_plan.h"
#include "core/kernel_table.h"
#include "core/scan.h"
#include "core/tensor_ops.h"
#include "wick/ops.h"

namespace wick {

using namespace detail;

// ---- tril / triu

namespace {

// True where (i, j) of the last two dims lies outside the kept triangle.
Tensor outside_triangle(const Tensor& t, int64_t diagonal, bool lower) {
  const TensorOptions o = TensorOptions(kInt64).device(t.device());
  Tensor offset = arange(t.size(-1), o).unsqueeze(0) - arange(t.size(-2), o).unsqueeze(1);  // j - i
  return lower ? offset > diagonal : offset < diagonal;
}

Tensor triangle(const Tensor& t, int64_t diagonal, bool lower) {
  const char* name = lower ? "tril" : "triu";
  check_defined(t, name, "self");
  WICK_CHECK(t.dim() >= 2, ValueError, name, "input tensor must have at least 2 dimensions");
  const bool grad = needs_grad(t);
  Tensor out = forward_once(grad, [&] { return masked_fill(t, outside_triangle(t, diagonal, lower), 0); });
  if (grad) [[unlikely]] {
    if (lower) autograd::record_tril(t, out, diagonal);
    else autograd::record_triu(t, out, diagonal);
  }
  return out;
}

Tensor& triangle_(Tensor& self, int64_t diagonal, bool lower) {
  const char* name = lower ? "tril_" : "triu_";
  check_defined(self, name, "self");
  WICK_CHECK(self.dim() >= 2, ValueError, name, "input tensor must have at least 2 dimensions");
  if (needs_grad(self)) [[unlikely]]
    return autograd::inplace(self, name, [&](const Tensor& t) { return triangle(t, diagonal, lower); });
  return self.masked_fill_(outside_triangle(self, diagonal, lower), 0);
}

}  // namespace

Tensor tril(const Tensor& t, int64_t diagonal) { return triangle(t, diagonal, true); }
Tensor triu(const Tensor& t, int64_t diagonal) { return triangle(t, diagonal, false); }
Tensor Tensor::tril(int64_t diagonal) const { return triangle(*this, diagonal, true); }
Tensor Tensor::triu(int64_t diagonal) const { return triangle(*this, diagonal, false); }
Tensor& Tensor::tril_(int64_t diagonal) { return triangle_(*this, diagonal, true); }
Tensor& Tensor::triu_(int64_t diagonal) { return triangle_(*this, diagonal, false); }

// ---- cumsum / cumprod

Tensor detail::cumulative(ScanOp op, const Tensor& t, int64_t dim, bool reverse, const char* name) {
  if (t.dtype() == kBool) return cumulative(op, t.to(kInt64), dim, reverse, name).to(kBool);
  DimPlan p = plan_along(t, dim, false, name, /*in_order=*/true);
  Tensor out = empty_for(t.sizes(), t.options(), name);
  if (out.numel() > 0)
    kernel<&KernelTable::scan>(t.device(), name)(op, out.view({p.outer, p.n, p.inner}), p.in, reverse);
  return out;
}

namespace {

Tensor scan_op(ScanOp op, const Tensor& t, int64_t dim, std::optional<Dtype> dtype, const char* name) {
  check_defined(t, name, "self");
  const Dtype out_dtype = dtype ? *dtype : (is_integral(t.dtype(), true) ? kInt64 : t.dtype());
  wrap_dim(dim, t.dim(), name);
  const bool grad = needs_grad(t);
  Tensor out = forward_once(grad, [&] {
    return cumulative(op, t.dtype() == out_dtype ? t : t.to(out_dtype), dim, false, name);
  });
  if (grad) [[unlikely]] {
    if (op == ScanOp::Sum) autograd::record_cumsum(t, out, dim);
    else autograd::record_cumprod(t, out, dim);
  }
  return out;
}

Tensor& scan_op_(Tensor& self, ScanOp op, int64_t dim, std::optional<Dtype> dtype, const char* name) {
  check_defined(self, name, "self");
  // In place, the result is self: a dtype other than self's is refused, as PyTorch does.
  WICK_CHECK(!dtype || *dtype == self.dtype(), TypeError, name,
             "provided dtype must match dtype of result in ", name, ". Got ", *dtype, " and ", self.dtype(),
             ".");
  if (needs_grad(self)) [[unlikely]]
    return autograd::inplace(self, name, [&](const Tensor& t) { return scan_op(op, t, dim, dtype, name); });
  Tensor r = scan_op(op, self, dim, dtype, name);
  return self.copy_(r);
}

}  // namespace

Tensor cumsum(const Tensor& t, int64_t dim, std::optional<Dtype> dtype) {
  return scan_op(ScanOp::Sum, t, dim, dtype, "cumsum");
}
Tensor cumprod(const Tensor& t, int64_t dim, std::optional<Dtype> dtype) {
  return scan_op(ScanOp::Prod, t, dim, dtype, "cumprod");
}
Tensor Tensor::cumsum(int64_t dim, std::optional<Dtype> dtype) const {
  return scan_op(ScanOp::Sum, *this, dim, dtype, "cumsum");
}
Tensor Tensor::cumprod(int64_t dim, std::optional<Dtype> dtype) const {
  return scan_op(ScanOp::Prod, *this, dim, dtype, "cumprod");
}
Tensor& Tensor::cumsum_(int64_t dim, std::optional<Dtype> dtype) {
  return scan_op_(*this, ScanOp::Sum, dim, dtype, "cumsum_");
}
Tensor& Tensor::cumprod_(int64_t dim, std::optional<Dtype> dtype) {
  return scan_op_(*this, ScanOp::Prod, dim, dtype, "cumprod_");
}

// ---- logsumexp, var_mean, std_mean, norm("fro")

namespace {

// The dims a reduction names, checked as the reduction would (out of range, repeated).
void check_reduce_dims(const Tensor& t, IntArrayRef dims, const char* op) {
  std::array<bool, 64> seen{};
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, t.dim(), op);
    if (w < 64) {
      WICK_CHECK(!seen[size_t(w)], ValueError, op, "dim ", w, " appears multiple times in the list of dims");
      seen[size_t(w)] = true;
    }
  }
}

Tensor logsumexp_impl(const Tensor& x, IntArrayRef dims, bool keepdim) {
  DimPlan p = plan_dims(x, dims, true, "logsumexp");
  if (p.n == 0 || x.numel() == 0) return x.exp().sum(dims, keepdim).log();  // -inf, PyTorch's value
  Tensor m = empty_for(p.out_sizes, x.options(), "logsumexp");
  kernel<&KernelTable::reduce>(x.device(), "logsumexp")(ReduceOp::Max, m, Tensor(), p.in, 0);
  // An infinite max is not subtracted: a row of -inf gives -inf, one holding +inf gives +inf.
  Tensor shift = masked_fill(m, m.abs() == INFINITY, 0);
  Tensor s = (x - shift).exp().sum(dims, keepdim);
  return s.log() + (keepdim ? shift : shift.view(s.sizes()));
}

}  // namespace

Tensor logsumexp(const Tensor& t, IntArrayRef dims, bool keepdim) {
  check_defined(t, "logsumexp", "self");
  check_reduce_dims(t, dims, "logsumexp");
  const Tensor x = is_floating_point(t.dtype()) ? t : t.to(get_default_dtype());
  const bool grad = needs_grad(x);
  Tensor out = forward_once(grad, [&] { return logsumexp_impl(x, dims, keepdim); });
  if (grad) [[unlikely]] autograd::record_logsumexp(x, out, dims, keepdim);
  return out;
}
Tensor Tensor::logsumexp(IntArrayRef dims, bool keepdim) const { return wick::logsumexp(*this, dims, keepdim); }

namespace {

std::tuple<Tensor, Tensor> moment_mean(bool is_std, const Tensor& t, IntArrayRef dims, double correction,
                                       bool keepdim) {
  const char* name = is_std ? "std_mean" : "var_mean";
  check_defined(t, name, "self");
  WICK_CHECK(is_floating_point(t.dtype()), TypeError, name,
             "std and var only support floating point and complex dtypes (got ", t.dtype(), ")");
  check_reduce_dims(t, dims, name);
  if (!is_std) {  // one VarMeanBackward0 node for both results, as PyTorch records
    const bool grad = needs_grad(t);
    std::tuple<Tensor, Tensor> r = forward_once(grad, [&] {
      return as_op(name, [&] {
        return std::make_tuple(wick::var(t, dims, correction, keepdim), wick::mean(t, dims, keepdim));
      });
    });
    if (grad) [[unlikely]]
      autograd::record_var_mean(t, std::get<0>(r), std::get<1>(r), dims, correction, keepdim);
    return r;
  }
  return as_op(name, [&] {
    Tensor m = wick::std(t, dims, correction, keepdim);
    return std::make_tuple(m, wick::mean(t, dims, keepdim));
  });
}

}  // namespace

std::tuple<Tensor, Tensor> var_mean(const Tensor& t, IntArrayRef dims, bool unbiased, bool keepdim) {
  return moment_mean(false, t, dims, unbiased ? 1.0 : 0.0, keepdim);
}
std::tuple<Tensor, Tensor> var_mean(const Tensor& t, IntArrayRef dims, double correction, bool keepdim) {
  return moment_mean(false, t, dims, correction, keepdim);
}
std::tuple<Tensor, Tensor> std_mean(const Tensor& t, IntArrayRef dims, bool unbiased, bool keepdim) {
  return moment_mean(true, t, dims, unbiased ? 1.0 : 0.0, keepdim);
}
std::tuple<Tensor, Tensor> std_mean(const Tensor& t, IntArrayRef dims, double correction, bool keepdim) {
  return moment_mean(true, t, dims, correction, keepdim);
}

Tensor norm(const Tensor& t, const char* p, IntArrayRef dims, bool keepdim) {
  check_defined(t, "norm", "self");
  // A literal 0 (norm(t, 0): the count of non-zeros) converts to a null pointer before it
  // converts to a Scalar, so it arrives here.
  if (p == nullptr) return norm(t, Scalar(0), dims, keepdim);
  if (std::strcmp(p, "nuc") == 0) raise<NotImplementedError>("norm", "the nuclear norm (p=\"nuc\") is not implemented");
  WICK_CHECK(std::strcmp(p, "fro") == 0, ValueError, "norm", "unsupported p \"", p,
             "\": expected a number, \"fro\" or \"nuc\"");
  WICK_CHECK(dims.size() <= 2, ValueError, "norm", "the Frobenius norm takes at most 2 dims, got ", dims.size());
  return norm(t, 2, dims, keepdim);
}
Tensor Tensor::norm(const char* p, IntArrayRef dims, bool keepdim) const { return wick::norm(*this, p, dims, keepdim); }

// ---- repeat, repeat_interleave

Tensor Tensor::repeat(IntArrayRef repeats) const {
  check_defined(*this, "repeat", "self");
  WICK_CHECK(int64_t(repeats.size()) >= dim(), ValueError, "repeat",
             "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
  for (int64_t r : repeats)
    WICK_CHECK(r >= 0, ValueError, "repeat", "Trying to create tensor with negative dimension ", r, ": ", repeats);
  {
    // The result's sizes and element count must fit int64 (checked here, before any view).
    const size_t lead = repeats.size() - size_t(dim());
    int64_t n = 1;
    bool overflow = false;
    for (size_t i = 0; i < repeats.size(); ++i) {
      int64_t out_size = 0;
      overflow |= __builtin_mul_overflow(repeats[i], i < lead ? 1 : size(int64_t(i - lead)), &out_size);
      overflow |= __builtin_mul_overflow(n, out_size, &n);
    }
    WICK_CHECK(!overflow, ValueError, "repeat", "the result of repeating sizes ", sizes(), " by ", repeats,
               " has more elements than int64 can count");
  }
  const Tensor& self = *this;
  const bool grad = needs_grad(self);
  Tensor out = forward_once(grad, [&] {
    // [1, .., 1, sizes] viewed as (1, s) pairs, expanded to (r, s), then packed: one copy.
    const size_t lead = repeats.size() - size_t(dim());
    DimVector pairs, expanded, result;
    for (size_t i = 0; i < repeats.size(); ++i) {
      const int64_t s = i < lead ? 1 : size(int64_t(i - lead));
      pairs.push_back(1);
      pairs.push_back(s);
      expanded.push_back(repeats[i]);
      expanded.push_back(s);
      result.push_back(repeats[i] * s);
    }
    Tensor e = self.reshape(pairs).expand(expanded);
    return (e.is_contiguous() ? e.clone(MemoryFormat::Contiguous) : e.contiguous()).view(result);
  });
  if (grad) [[unlikely]] autograd::record_repeat(self, out, repeats);
  return out;
}

namespace {

// The repeated indices of counts (int32/int64, 1-D): counts[i] copies of i, on device.
Tensor interleave_index(const Tensor& counts, Device device, const char* op) {
  WICK_CHECK(counts.dim() == 1, ValueError, op, "repeats must be 0-dim or 1-dim tensor");
  WICK_CHECK(counts.dtype() == kInt64 || counts.dtype() == kInt32, TypeError, op,
             "repeats has to be Long or Int tensor");
  std::vector<int64_t> c = counts.cpu().to_vector<int64_t>();
  int64_t total = 0;
  for (int64_t v : c) {
    WICK_CHECK(v >= 0, ValueError, op, "repeats can not be negative");
    total += v;
  }
  std::vector<int64_t> idx;
  idx.reserve(size_t(total));
  for (size_t i = 0; i < c.size(); ++i) idx.insert(idx.end(), size_t(c[i]), int64_t(i));
  Tensor host = empty({total}, TensorOptions(kInt64));
  if (total > 0) std::memcpy(host.data_ptr(), idx.data(), size_t(total) * sizeof(int64_t));
  return host.to(device);
}

}  // namespace

Tensor repeat_interleave(const Tensor& t, int64_t repeats, std::optional<int64_t> dim) {
  check_defined(t, "repeat_interleave", "self");
  WICK_CHECK(repeats >= 0, ValueError, "repeat_interleave", "repeats can not be negative");
  return as_op("repeat_interleave", [&] {
    Tensor x = dim ? t : t.reshape({-1});
    const int64_t d = dim ? wrap_dim(*dim, std::max<int64_t>(x.dim(), 1), "repeat_interleave") : 0;
    if (x.dim() == 0) x = x.reshape({1});
    if (repeats == 1) return x.clone(MemoryFormat::Contiguous);  // a new tensor, as for any count
    DimVector sizes(x.sizes().begin(), x.sizes().end());
    sizes.insert(sizes.begin() + d + 1, repeats);
    return x.unsqueeze(d + 1).expand(sizes).flatten(d, d + 1);
  });
}

Tensor repeat_interleave(const Tensor& t, const Tensor& repeats, std::optional<int64_t> dim) {
  check_defined(t, "repeat_interleave", "self");
  check_defined(repeats, "repeat_interleave", "repeats");
  Tensor x = dim ? t : t.reshape({-1});
  if (x.dim() == 0) x = x.reshape({1});
  const int64_t d = dim ? wrap_dim(*dim, x.dim(), "repeat_interleave") : 0;
  WICK_CHECK(repeats.dim() <= 1, ValueError, "repeat_interleave", "repeats must be 0-dim or 1-dim tensor");
  Tensor counts = repeats.reshape({-1});
  if (counts.numel() == 1 && x.size(d) != 1) counts = counts.expand({x.size(d)});
  WICK_CHECK(counts.size(0) == x.size(d), ValueError, "repeat_interleave",
             "repeats must have the same size as input along dim, but got repeats.size(0) = ", counts.size(0),
             " and input.size(", d, ") = ", x.size(d));
  Tensor index = interleave_index(counts, t.device(), "repeat_interleave");
  return as_op("repeat_interleave", [&] { return index_select(x, d, index); });
}

Tensor repeat_interleave(const Tensor& repeats) {
  check_defined(repeats, "repeat_interleave", "repeats");
  return interleave_index(repeats, repeats.device(), "repeat_interleave");
}

Tensor Tensor::repeat_interleave(int64_t repeats, std::optional<int64_t> dim) const {
  return wick::repeat_interleave(*this, repeats, dim);
}
Tensor Tensor::repeat_interleave(const Tensor& repeats, std::optional<int64_t> dim) const {
  return wick::repeat_interleave(*this, repeats, dim);
}

// ---- outer, lerp, baddbmm

namespace {

Tensor outer_as(const Tensor& a, const Tensor& b, const char* op) {
  check_defined(a, op, "self");
  check_defined(b, op, "vec2");
  WICK_CHECK(a.dim() == 1, ValueError, op, "Expected 1-D argument self, but got ", a.dim(), "-D");
  WICK_CHECK(b.dim() == 1, ValueError, op, "Expected 1-D argument vec2, but got ", b.dim(), "-D");
  return as_op(op, [&] { return a.unsqueeze(1) * b; });
}

void check_lerp(const Tensor& start, const Tensor& end, const Tensor* weight, const char* op) {
  check_defined(start, op, "self");
  check_defined(end, op, "end");
  WICK_CHECK(start.dtype() == end.dtype(), TypeError, op, "expected dtype ", start.dtype(),
             " for `end` but got dtype ", end.dtype());
  if (weight) {
    check_defined(*weight, op, "weight");
    WICK_CHECK(start.dtype() == weight->dtype(), TypeError, op, "expected dtype ", start.dtype(),
               " for `weight` but got dtype ", weight->dtype());
  }
  WICK_CHECK(is_floating_point(start.dtype()), TypeError, op, "\"lerp\" not implemented for '", start.dtype(), "'");
  check_same_device(end, start.device(), op, "end");
  if (weight) check_same_device(*weight, start.device(), op, "weight");
}

// PyTorch's two-sided formula: exact at both ends (weight 0 gives start, 1 gives end).
Tensor lerp_scalar(const Tensor& start, const Tensor& end, const Scalar& w) {
  const double wv = w.to<double>();
  Tensor diff = end - start;
  if (std::abs(wv) < 0.5) return start + diff * w;
  return end - diff * (1.0 - wv);
}

Tensor lerp_tensor(const Tensor& start, const Tensor& end, const Tensor& w) {
  Tensor diff = end - start;
  return where(w.abs() < 0.5, start + w * diff, end - diff * (1 - w));
}

}  // namespace

Tensor outer(const Tensor& a, const Tensor& b) { return outer_as(a, b, "outer"); }
Tensor ger(const Tensor& a, const Tensor& b) { return outer_as(a, b, "ger"); }
Tensor Tensor::outer(const Tensor& other) const { return outer_as(*this, other, "outer"); }
Tensor Tensor::ger(const Tensor& other) const { return outer_as(*this, other, "ger"); }

Tensor lerp(const Tensor& start, const Tensor& end, const Scalar& weight) {
  check_lerp(start, end, nullptr, "lerp");
  const bool grad = needs_grad(start, end);
  Tensor out = forward_once(grad, [&] { return as_op("lerp", [&] { return lerp_scalar(start, end, weight); }); });
  if (grad) [[unlikely]] autograd::record_lerp(start, end, nullptr, weight, out);
  return out;
}
Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight) {
  check_lerp(start, end, &weight, "lerp");
  const bool grad = needs_grad(start, end, weight);
  Tensor out = forward_once(grad, [&] { return as_op("lerp", [&] { return lerp_tensor(start, end, weight); }); });
  if (grad) [[unlikely]] autograd::record_lerp(start, end, &weight, 0, out);
  return out;
}
Tensor Tensor::lerp(const Tensor& end, const Scalar& weight) const { return wick::lerp(*this, end, weight); }
Tensor Tensor::lerp(const Tensor& end, const Tensor& weight) const { return wick::lerp(*this, end, weight); }

namespace {

template <class W>
Tensor& lerp_inplace(Tensor& self, const Tensor& end, const W& weight) {
  check_defined(self, "lerp_", "self");
  Tensor out;
  if constexpr (std::is_same_v<W, Tensor>) {
    check_lerp(self, end, &weight, "lerp_");
    if (needs_grad(self, end, weight)) [[unlikely]]
      return autograd::inplace(self, "lerp_", [&](const Tensor& t) { return wick::lerp(t, end, weight); });
    out = as_op("lerp_", [&] { return lerp_tensor(self, end, weight); });
  } else {
    check_lerp(self, end, nullptr, "lerp_");
    if (needs_grad(self, end)) [[unlikely]]
      return autograd::inplace(self, "lerp_", [&](const Tensor& t) { return wick::lerp(t, end, weight); });
    out = as_op("lerp_", [&] { return lerp_scalar(self, end, weight); });
  }
  WICK_CHECK(out.sizes().equals(self.sizes()), ValueError, "lerp_", "output with shape ", self.sizes(),
             " doesn't match the broadcast shape ", out.sizes());
  return self.copy_(out);
}

}  // namespace

Tensor& Tensor::lerp_(const Tensor& end, const Scalar& weight) { return lerp_inplace(*this, end, weight); }
Tensor& Tensor::lerp_(const Tensor& end, const Tensor& weight) { return lerp_inplace(*this, end, weight); }

Tensor baddbmm(const Tensor& input, const Tensor& batch1, const Tensor& batch2, const Scalar& beta,
               const Scalar& alpha) {
  check_defined(input, "baddbmm", "self");
  check_defined(batch1, "baddbmm", "batch1");
  check_defined(batch2, "baddbmm", "batch2");
  WICK_CHECK(batch1.dim() == 3, ValueError, "baddbmm", "batch1 must be a 3D tensor");
  WICK_CHECK(batch2.dim() == 3, ValueError, "baddbmm", "batch2 must be a 3D tensor");
  const int64_t bs = batch1.size(0), n = batch1.size(1), m = batch2.size(2);
  WICK_CHECK(input.dtype() == batch1.dtype(), TypeError, "baddbmm", "expected self and batch1 to have the same dtype, but got: ",
             input.dtype(), " != ", batch1.dtype());
  const std::array<int64_t, 3> res_sizes{bs, n, m};
  const IntArrayRef res(res_sizes.data(), 3);
  bool fits = input.dim() <= 3;
  for (int64_t i = 0; fits && i < input.dim(); ++i) {
    const int64_t s = input.size(input.dim() - 1 - i);
    fits = s == 1 || s == res[size_t(2 - i)];
  }
  WICK_CHECK(fits, ValueError, "baddbmm", "the input of sizes ", input.sizes(),
             " cannot be broadcast to the result's ", res);
  const bool grad = needs_grad(input, batch1, batch2);
  Tensor out = forward_once(grad, [&] {
    return as_op("baddbmm", [&]() -> Tensor {
      Tensor prod = bmm(batch1, batch2);
      if (alpha.to<double>() != 1) prod = prod * alpha;
      if (beta.to<double>() == 0) return prod;  // input unread: its nan and inf do not propagate
      return beta.to<double>() == 1 ? prod + input : prod + input * beta;
    });
  });
  if (grad) [[unlikely]] autograd::record_baddbmm(input, batch1, batch2, out, beta, alpha);
  return out;
}
Tensor Tensor::baddbmm(const Tensor& batch1, const Tensor& batch2, const Scalar& beta, const Scalar& alpha) const {
  return wick::baddbmm(*this, batch1, batch2, beta, alpha);
}

// ---- einsum: each operand's repeated letters taken on the diagonal and its own letters summed
// away, then operands contracted left to right with one bmm each; every piece records itself.

namespace {

constexpr int kLetters = 52;  // a-z, A-Z; the dims of "..." are labels kLetters + k

char label_char(int l) { return l < 26 ? char('a' + l) : l < kLetters ? char('A' + (l - 26)) : '.'; }

int letter_label(char c) {
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= 'A' && c <= 'Z') return 26 + (c - 'A');
  return -1;
}

// Parsed subscripts of one term: letters as labels, and where "..." stood (-1: absent).
struct Term {
  std::vector<int> labels;
  int ellipsis_at = -1;
};

Term parse_term(std::string_view s, const char* what) {
  Term t;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '.') {
      WICK_CHECK(s.substr(i, 3) == "...", ValueError, "einsum", "found '.' for ", what,
                 " that is not part of any ellipsis");
      WICK_CHECK(t.ellipsis_at < 0, ValueError, "einsum", "found more than one ellipsis (\"...\") for ", what);
      t.ellipsis_at = int(t.labels.size());
      i += 2;
      continue;
    }
    const int l = letter_label(s[i]);
    WICK_CHECK(l >= 0, ValueError, "einsum", "invalid subscript given at index ", i,
               " in the equation string, subscripts must be in [a-zA-Z]");
    t.labels.push_back(l);
  }
  return t;
}

// A tensor with one label per dim.
struct Operand {
  Tensor t;
  std::vector<int> labels;
};

Tensor einsum_impl(std::string_view equation, const std::vector<Tensor>& tensors) {
  std::string eq;
  for (char c : equation)
    if (c != ' ') eq.push_back(c);
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<Term> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(parse_term(std::string_view(lhs).substr(start, comma == std::string::npos ? std::string::npos : comma - start), "operand"));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  WICK_CHECK(!tensors.empty(), ValueError, "einsum", "must provide at least one operand");
  WICK_CHECK(terms.size() <= tensors.size(), ValueError, "einsum",
             "fewer operands were provided than specified in the equation");
  WICK_CHECK(terms.size() >= tensors.size(), ValueError, "einsum",
             "more operands were provided than specified in the equation");

  // Labels per dim, the dims of "..." right-aligned across operands (they broadcast).
  int64_t ell = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    check_defined(tensors[i], "einsum", "operands");
    const int64_t letters = int64_t(terms[i].labels.size()), nd = tensors[i].dim();
    if (terms[i].ellipsis_at < 0) {
      WICK_CHECK(nd == letters, ValueError, "einsum", "the number of subscripts in the equation (", letters,
                 ") does not match the number of dimensions (", nd, ") for operand ", i, " and no ellipsis was given");
    } else {
      WICK_CHECK(nd >= letters, ValueError, "einsum", "the number of subscripts in the equation (", letters,
                 ") is more than the number of dimensions (", nd, ") for operand ", i);
      ell = std::max(ell, nd - letters);
    }
  }
  std::vector<Operand> ops;
  std::array<int, kLetters> uses{};
  for (size_t i = 0; i < terms.size(); ++i) {
    Operand o{tensors[i], {}};
    const Term& tm = terms[i];
    const int64_t e = tensors[i].dim() - int64_t(tm.labels.size());
    for (size_t k = 0; k <= tm.labels.size(); ++k) {
      if (int(k) == tm.ellipsis_at)
        for (int64_t j = 0; j < e; ++j) o.labels.push_back(int(kLetters + ell - e + j));
      if (k < tm.labels.size()) o.labels.push_back(tm.labels[k]);
    }
    for (int l : tm.labels) ++uses[size_t(l)];
    ops.push_back(std::move(o));
  }
  // The output's labels: as written, or "..." then the letters used once, in ASCII order.
  std::vector<int> out_labels;
  bool any_ellipsis = false;
  for (const Term& tm : terms) any_ellipsis |= tm.ellipsis_at >= 0;
  if (arrow != std::string::npos) {
    Term o = parse_term(std::string_view(eq).substr(arrow + 2), "the output");
    std::array<bool, kLetters> seen{};
    for (size_t k = 0; k <= o.labels.size(); ++k) {
      if (int(k) == o.ellipsis_at)
        for (int64_t j = 0; j < ell; ++j) out_labels.push_back(int(kLetters + j));
      if (k == o.labels.size()) break;
      const int l = o.labels[k];
      WICK_CHECK(!seen[size_t(l)], ValueError, "einsum", "output subscript ", label_char(l),
                 " appears more than once in the output");
      WICK_CHECK(uses[size_t(l)] > 0, ValueError, "einsum", "output subscript ", label_char(l),
                 " does not appear in the equation for any input operand");
      seen[size_t(l)] = true;
      out_labels.push_back(l);
    }
  } else {
    if (any_ellipsis)
      for (int64_t j = 0; j < ell; ++j) out_labels.push_back(int(kLetters + j));
    for (int l = 26; l < kLetters; ++l)  // ASCII: upper case before lower case
      if (uses[size_t(l)] == 1) out_labels.push_back(l);
    for (int l = 0; l < 26; ++l)
      if (uses[size_t(l)] == 1) out_labels.push_back(l);
  }
  auto in_output = [&](int l) { return std::find(out_labels.begin(), out_labels.end(), l) != out_labels.end(); };

  // Sizes per label must agree across operands, or be 1 (broadcast).
  std::vector<int64_t> label_size(size_t(kLetters + ell), -1);
  for (size_t i = 0; i < ops.size(); ++i)
    for (size_t k = 0; k < ops[i].labels.size(); ++k) {
      const int l = ops[i].labels[k];
      const int64_t s = ops[i].t.size(int64_t(k));
      int64_t& have = label_size[size_t(l)];
      WICK_CHECK(have < 0 || have == s || have == 1 || s == 1, ValueError, "einsum", "operands do not broadcast: subscript ",
                 label_char(l), " has size ", s, " for operand ", i,
                 " which does not broadcast with previously seen size ", have);
      if (have < 0 || have == 1) have = s;
    }

  // Repeated letters within an operand: take the diagonal (times an identity, summed).
  for (Operand& o : ops) {
    for (size_t p = 0; p < o.labels.size(); ++p)
      for (size_t q = p + 1; q < o.labels.size();) {
        if (o.labels[q] != o.labels[p]) {
          ++q;
          continue;
        }
        const int64_t n = o.t.size(int64_t(p));
        WICK_CHECK(o.t.size(int64_t(q)) == n, ValueError, "einsum", "subscript ",
                   label_char(o.labels[p]),
                   " is repeated for operand but the sizes don't match, ", o.t.size(int64_t(q)), " != ", n);
        DimVector es(size_t(o.t.dim()), 1);
        es[p] = n;
        es[q] = n;
        o.t = (o.t * eye(n, o.t.options()).view(es)).sum({int64_t(q)});
        o.labels.erase(o.labels.begin() + int64_t(q));
      }
  }

  // Contract left to right.
  auto used_after = [&](int l, size_t i) {
    if (in_output(l)) return true;
    for (size_t j = i + 1; j < ops.size(); ++j)
      if (std::find(ops[j].labels.begin(), ops[j].labels.end(), l) != ops[j].labels.end()) return true;
    return false;
  };
  auto sum_unused = [&](Operand& o, size_t i, const Operand* other) {
    DimVector dims;
    std::vector<int> keep;
    for (size_t k = 0; k < o.labels.size(); ++k) {
      const int l = o.labels[k];
      const bool in_other = other && std::find(other->labels.begin(), other->labels.end(), l) != other->labels.end();
      if (!in_other && !used_after(l, i)) dims.push_back(int64_t(k));
      else keep.push_back(l);
    }
    if (!dims.empty()) {
      o.t = o.t.sum(dims);
      o.labels = keep;
    }
  };
  Operand r = ops[0];
  sum_unused(r, 0, ops.size() > 1 ? &ops[1] : nullptr);
  for (size_t i = 1; i < ops.size(); ++i) {
    Operand o = ops[i];
    sum_unused(o, i, &r);
    std::vector<int> batch, r_only, contracted, o_only;
    for (int l : r.labels) {
      const bool both = std::find(o.labels.begin(), o.labels.end(), l) != o.labels.end();
      if (!both) r_only.push_back(l);
      else if (used_after(l, i)) batch.push_back(l);
      else contracted.push_back(l);
    }
    for (int l : o.labels)
      if (std::find(r.labels.begin(), r.labels.end(), l) == r.labels.end()) o_only.push_back(l);
    auto arrange = [](const Operand& x, const std::vector<int>& a, const std::vector<int>& b,
                      const std::vector<int>& c) {
      DimVector perm;
      for (const auto* group : {&a, &b, &c})
        for (int l : *group) {
          const auto at = std::find(x.labels.begin(), x.labels.end(), l) - x.labels.begin();
          perm.push_back(int64_t(at));
        }
      return x.t.permute(perm);
    };
    auto prod_of = [&](const std::vector<int>& ls) {
      int64_t p = 1;
      for (int l : ls) p *= label_size[size_t(l)];
      return p;
    };
    auto full_sizes = [&](const std::vector<int>& a, const std::vector<int>& b, const std::vector<int>& c) {
      DimVector s;
      for (const auto* group : {&a, &b, &c})
        for (int l : *group) s.push_back(label_size[size_t(l)]);
      return s;
    };
    const int64_t B = prod_of(batch), M = prod_of(r_only), K = prod_of(contracted), N = prod_of(o_only);
    Tensor a = arrange(r, batch, r_only, contracted).expand(full_sizes(batch, r_only, contracted)).reshape({B, M, K});
    Tensor b = arrange(o, batch, contracted, o_only).expand(full_sizes(batch, contracted, o_only)).reshape({B, K, N});
    if (a.dtype() != b.dtype()) {
      const Dtype d = promote_types(a.dtype(), b.dtype());
      a = a.to(d);
      b = b.to(d);
    }
    Tensor c = bmm(a, b).view(full_sizes(batch, r_only, o_only));
    std::vector<int> labels(batch);
    labels.insert(labels.end(), r_only.begin(), r_only.end());
    labels.insert(labels.end(), o_only.begin(), o_only.end());
    r = Operand{c, labels};
  }
  // Into the output's order (a label of size 1 everywhere but the output's broadcast dims is kept).
  DimVector perm;
  for (int l : out_labels) {
    const auto at = std::find(r.labels.begin(), r.labels.end(), l);
    if (at == r.labels.end()) {  // a "..." dim that no operand had: size 1
      r.t = r.t.unsqueeze(r.t.dim());
      r.labels.push_back(l);
      perm.push_back(r.t.dim() - 1);
    } else {
      perm.push_back(int64_t(at - r.labels.begin()));
    }
  }
  return r.t.permute(perm);
}

}  // namespace

Tensor einsum(std::string_view equation, const std::vector<Tensor>& tensors) {
  return as_op("einsum", [&] { return einsum_impl(equation, tensors); });
}

}  // namespace wick
