// cdist: the p-norm distance of every row of x1 to every row of x2, batched.
//
// The forward reduces the pairwise differences [*, P, R, M] over M (p = 0 counts the nonzero
// ones, inf takes the largest); for p = 2 with many rows it uses matrix products instead, as
// ATen's _euclidean_dist: |a|^2 - 2 a.b + |b|^2 from one matmul of [-2 a, |a|^2, 1] and
// [b, 1, |b|^2], which needs no [P, R, M] temporary. It records one node with ATen's formulas
// (_cdist_backward, _euclidean_dist_backward), written with ops so that they run on every
// device; a distance of 0 passes no gradient, where sqrt's derivative would give NaN.
// It lives in src/nn, beside pairwise_distance, because it records a node of its own
// (src/core may reach autograd only through its record hooks).
#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

#include "autograd/function.h"
#include "autograd/hooks.h"
#include "core/as_op.h"
#include "core/checks.h"
#include "wick/linalg_more.h"
#include "wick/ops.h"

namespace wick {
namespace {

// [*, P, R, M]: x1[..., i, :] - x2[..., j, :]
Tensor pair_diff(const Tensor& x1, const Tensor& x2) { return x1.unsqueeze(-2) - x2.unsqueeze(-3); }

Tensor euclidean_by_matmul(const Tensor& x1, const Tensor& x2) {
  Tensor n1 = (x1 * x1).sum({-1}, true), n2 = (x2 * x2).sum({-1}, true);
  Tensor a = cat({x1 * -2.0, n1, ones_like(n1)}, -1);
  Tensor b = cat({x2, ones_like(n2), n2}, -1);
  return matmul(a, b.transpose(-1, -2)).clamp(std::optional<Scalar>(0.0), std::optional<Scalar>()).sqrt();
}

// Gradients of x1 and x2 from g [*, P, R] (ATen's _cdist_backward, or for p = 2 its
// _euclidean_dist_backward, which needs no [*, P, R, M] temporary).
std::pair<Tensor, Tensor> cdist_grads(const Tensor& g, const Tensor& x1, const Tensor& x2, const Tensor& dist,
                                      double p) {
  if (p == 0) return {zeros_like(x1), zeros_like(x2)};
  if (p == 2) {
    Tensor ratio = where(dist == 0.0, 0.0, g / dist);
    return {x1 * ratio.sum({-1}, true) - matmul(ratio, x2),
            x2 * ratio.sum({-2}).unsqueeze(-1) - matmul(ratio.transpose(-1, -2), x1)};
  }
  Tensor diff = pair_diff(x1, x2), gg = g.unsqueeze(-1), dd = dist.unsqueeze(-1);
  Tensor each;  // d dist / d x1 times g, per pair and coordinate
  if (p == 1) {
    each = diff.sign() * gg;
  } else if (std::isinf(p)) {
    each = diff.sign() * (diff.abs() == dd).to(diff.dtype()) * gg;
  } else if (p < 2) {
    Tensor zero = dd == 0.0;
    if (p < 1) zero = zero.logical_or(diff == 0.0);
    each = where(zero, 0.0, diff.sign() * diff.abs().pow(p - 1) * gg / dd.pow(p - 1));
  } else {
    each = where(dd == 0.0, 0.0, diff * diff.abs().pow(p - 2) * gg / dd.pow(p - 1));
  }
  return {each.sum({-2}), -each.sum({-3})};
}

}  // namespace

Tensor cdist(const Tensor& x1, const Tensor& x2, double p, std::optional<int64_t> compute_mode) {
  constexpr const char* op = "cdist";
  detail::check_defined(x1, op, "x1");
  detail::check_defined(x2, op, "x2");
  WICK_CHECK(is_floating_point(x1.dtype()), TypeError, op,
             "cdist only supports floating-point dtypes, X1 got: ", x1.dtype());
  WICK_CHECK(is_floating_point(x2.dtype()), TypeError, op,
             "cdist only supports floating-point dtypes, X2 got: ", x2.dtype());
  WICK_CHECK(x1.dtype() == x2.dtype(), TypeError, op, "X1 and X2 must have the same dtype. X1: ", x1.dtype(),
             " X2: ", x2.dtype());
  WICK_CHECK(x1.device() == x2.device(), DeviceError, op,
             "X1 and X2 must be on the same device. X1: ", x1.device(), " X2: ", x2.device());
  WICK_CHECK(x1.dim() >= 2, ValueError, op, "cdist only supports at least 2D tensors, X1 got: ", x1.dim(),
             "D");
  WICK_CHECK(x2.dim() >= 2, ValueError, op, "cdist only supports at least 2D tensors, X2 got: ", x2.dim(),
             "D");
  WICK_CHECK(x1.size(-1) == x2.size(-1), ValueError, op,
             "X1 and X2 must have the same number of columns. X1: ", x1.size(-1), " X2: ", x2.size(-1));
  WICK_CHECK(p >= 0, ValueError, op, "cdist only supports non-negative p values");
  const int64_t mode = compute_mode.value_or(0);
  WICK_CHECK(mode >= 0 && mode <= 2, ValueError, op, "possible modes: 0, 1, 2, but was: ", mode);

  // the batch dims broadcast (the expand records its own node, which sums gradients back)
  const int64_t r1 = x1.size(-2), r2 = x2.size(-2), m = x1.size(-1);
  DimVector batch = detail::broadcast_shapes(x1.sizes().slice(0, size_t(x1.dim() - 2)),
                                             x2.sizes().slice(0, size_t(x2.dim() - 2)), op);
  DimVector s1 = batch, s2 = batch, out_shape = batch;
  for (int64_t v : {r1, m}) s1.push_back(v);
  for (int64_t v : {r2, m}) s2.push_back(v);
  for (int64_t v : {r1, r2}) out_shape.push_back(v);
  const Tensor a = x1.sizes() == IntArrayRef(s1) ? x1 : x1.expand(s1);
  const Tensor b = x2.sizes() == IntArrayRef(s2) ? x2 : x2.expand(s2);

  const bool by_matmul = p == 2 && m > 0 && (mode == 1 || (mode == 0 && (r1 > 25 || r2 > 25)));
  const bool grad = detail::needs_grad(a, b);
  Tensor out = detail::forward_once(grad, [&] {
    return detail::as_op(op, [&] {
      if (m == 0 || r1 == 0 || r2 == 0) return zeros(out_shape, a.options());
      return by_matmul ? euclidean_by_matmul(a, b) : wick::norm(pair_diff(a, b), p, {-1});
    });
  });
  if (grad) [[unlikely]]
    autograd::record(by_matmul ? "EuclideanDistBackward0" : "CdistBackward0", {a, b}, out, {a, b, out},
                     [p](autograd::BackwardContext& c) -> autograd::variable_list {
                       auto [g1, g2] = cdist_grads(c.grad(), c.saved(0), c.saved(1), c.saved(2), p);
                       return {c.needs(0) ? g1 : Tensor(), c.needs(1) ? g2 : Tensor()};
                     });
  return out;
}

}  // namespace wick
