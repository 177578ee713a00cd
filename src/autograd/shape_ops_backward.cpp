// Backward formulas of tril/triu, cumsum/cumprod, logsumexp, repeat, lerp and baddbmm,
// recorded by core's ops after their forward (hooks.h, core/shape_scan_ops.cpp).
#include <algorithm>

#include "autograd/function.h"
#include "autograd/hooks.h"
#include "core/checks.h"
#include "core/scan.h"
#include "wick/ops.h"

namespace wick::autograd {

using wick::detail::ScanOp;

// ---- tril / triu: the same triangle of the gradient

void record_tril(const Tensor& t, const Tensor& out, int64_t diagonal) {
  record("TrilBackward0", {t}, out, {}, [diagonal](BackwardContext& c) -> variable_list {
    return {wick::tril(c.grad(), diagonal)};
  });
}

void record_triu(const Tensor& t, const Tensor& out, int64_t diagonal) {
  record("TriuBackward0", {t}, out, {}, [diagonal](BackwardContext& c) -> variable_list {
    return {wick::triu(c.grad(), diagonal)};
  });
}

// ---- cumsum / cumprod

namespace {

Tensor reverse_cumsum(const Tensor& g, int64_t dim) {
  // recording (create_graph): the sum from each position to the end, in ops that record
  if (creating_graph()) return g.sum({dim}, /*keepdim=*/true) - wick::cumsum(g, dim) + g;
  return wick::detail::cumulative(ScanOp::Sum, g, dim, true, "cumsum_backward");
}

// d/dx[k] of sum_j g[j] * prod_{i <= j} x[i], zeros in x allowed. With z the first zero of the
// row: for k < z, sum_{k <= j < z} g[j] out[j] / x[k]; for k = z, sum_{j >= z} g[j] times the
// product up to j without x[z]; for k > z every term holds x[z] = 0.
Tensor cumprod_backward(const Tensor& g, const Tensor& x, const Tensor& out, int64_t dim) {
  if (x.numel() == 0) return wick::zeros_like(x);
  Tensor is_zero = x == 0;
  Tensor zeros_so_far = wick::detail::cumulative(ScanOp::Sum, is_zero.to(kInt64), dim, false, "cumprod_backward");
  Tensor before = zeros_so_far == 0;
  Tensor at_first = wick::where(is_zero, zeros_so_far == 1, Scalar(false));
  Tensor a = reverse_cumsum(wick::where(before, g * out, Scalar(0)), dim) / wick::where(before, x, Scalar(1));
  Tensor out_without = wick::detail::cumulative(ScanOp::Prod, wick::where(at_first, Scalar(1), x), dim, false,
                                                "cumprod_backward");
  Tensor b = reverse_cumsum(wick::where(zeros_so_far >= 1, g * out_without, Scalar(0)), dim);
  return wick::where(before, a, wick::where(at_first, b, Scalar(0)));
}

}  // namespace

void record_cumsum(const Tensor& t, const Tensor& out, int64_t dim) {
  const int64_t d = wick::detail::wrap_dim(dim, t.dim(), "cumsum");
  record("CumsumBackward0", {t}, out, {}, [d](BackwardContext& c) -> variable_list {
    return {reverse_cumsum(c.grad(), d)};
  });
}

void record_cumprod(const Tensor& t, const Tensor& out, int64_t dim) {
  const int64_t d = wick::detail::wrap_dim(dim, t.dim(), "cumprod");
  const bool cast = t.dtype() != out.dtype();
  record("CumprodBackward0", {t}, out, {t, out}, [d, cast](BackwardContext& c) -> variable_list {
    check_no_double_backward(c);  // its zero handling runs scans that do not record
    Tensor out = c.saved(1);
    Tensor x = cast ? c.saved(0).to(out.dtype()) : c.saved(0);
    return {cumprod_backward(c.grad(), x, out, d)};
  });
}

// ---- logsumexp: the gradient weighted by softmax over the reduced dims

void record_logsumexp(const Tensor& t, const Tensor& out, IntArrayRef dims, bool keepdim) {
  DimVector red;
  if (dims.empty())
    for (int64_t d = 0; d < t.dim(); ++d) red.push_back(d);
  else
    for (int64_t d : dims) red.push_back(wick::detail::wrap_dim(d, t.dim(), "logsumexp"));
  std::sort(red.begin(), red.end());
  record("LogsumexpBackward0", {t}, out, {t, out}, [red, keepdim](BackwardContext& c) -> variable_list {
    Tensor x = c.saved(0), y = c.saved(1), g = c.grad();
    if (!keepdim && x.dim() > 0)
      for (int64_t d : red) {
        y = y.unsqueeze(d);
        g = g.unsqueeze(d);
      }
    return {g * (x - y).exp()};
  });
}

// ---- repeat: the gradient summed over the copies

void record_repeat(const Tensor& t, const Tensor& out, IntArrayRef repeats) {
  DimVector pairs, copy_dims;
  const size_t lead = repeats.size() - size_t(t.dim());
  for (size_t i = 0; i < repeats.size(); ++i) {
    pairs.push_back(repeats[i]);
    pairs.push_back(i < lead ? 1 : t.size(int64_t(i - lead)));
    copy_dims.push_back(int64_t(2 * i));
  }
  DimVector sizes(t.sizes().begin(), t.sizes().end());
  record("RepeatBackward0", {t}, out, {}, [pairs, copy_dims, sizes](BackwardContext& c) -> variable_list {
    Tensor g = c.grad().reshape(pairs);
    if (!copy_dims.empty()) g = g.sum(copy_dims);
    return {g.reshape(sizes)};
  });
}

void record_roll(const Tensor& t, const Tensor& out, const std::vector<int64_t>& shifts,
                 const std::vector<int64_t>& dims) {
  std::vector<int64_t> back;
  for (int64_t s : shifts) back.push_back(-s);
  record("RollBackward0", {t}, out, {}, [back, dims](BackwardContext& c) -> variable_list {
    return {wick::roll(c.grad(), back, dims)};
  });
}

// ---- lerp: start + weight * (end - start)

void record_lerp(const Tensor& start, const Tensor& end, const Tensor* weight, const Scalar& w, const Tensor& out) {
  if (!weight) {
    const double wv = w.to<double>();
    record("LerpBackward0", {start, end}, out, {}, [wv](BackwardContext& c) -> variable_list {
      const Tensor& g = c.grad();
      return {c.needs(0) ? g * (1.0 - wv) : Tensor(), c.needs(1) ? g * wv : Tensor()};
    });
    return;
  }
  record("LerpBackward1", {start, end, *weight}, out, {start, end, *weight},
         [](BackwardContext& c) -> variable_list {
           const Tensor& g = c.grad();
           Tensor wt = c.saved(2);
           return {c.needs(0) ? g * (1 - wt) : Tensor(), c.needs(1) ? g * wt : Tensor(),
                   c.needs(2) ? g * (c.saved(1) - c.saved(0)) : Tensor()};
         });
}

// ---- baddbmm: beta * input + alpha * batch1 @ batch2

void record_baddbmm(const Tensor& input, const Tensor& b1, const Tensor& b2, const Tensor& out, const Scalar& beta,
                    const Scalar& alpha) {
  record("BaddbmmBackward0", {input, b1, b2}, out, {b1, b2}, [beta, alpha](BackwardContext& c) -> variable_list {
    const Tensor& g = c.grad();
    Tensor ga = alpha.to<double>() == 1 ? g : g * alpha;
    return {c.needs(0) ? g * beta : Tensor(), c.needs(1) ? wick::bmm(ga, c.saved(1).transpose(1, 2)) : Tensor(),
            c.needs(2) ? wick::bmm(c.saved(0).transpose(1, 2), ga) : Tensor()};
  });
}

}  // namespace wick::autograd
