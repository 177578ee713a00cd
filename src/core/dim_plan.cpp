// The planner of dim_plan.h.
#include "core/dim_plan.h"

#include <algorithm>
#include <vector>

#include "core/checks.h"
#include "core/tensor_ops.h"
#include "wick/error.h"

namespace wick::detail {

namespace {

// red[d]: whether dim d is reduced; dims empty means all of them.
std::vector<bool> reduced_dims(const Tensor& t, IntArrayRef dims, const char* op) {
  const int64_t nd = t.dim();
  // A 0-dim tensor has one nameable dim (0 or -1), checked for repeats as any other.
  std::vector<bool> red(size_t(std::max<int64_t>(nd, 1)), dims.empty());
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, nd, op);
    WICK_CHECK(!red[size_t(w)], ValueError, op, "dim ", w, " appears multiple times in the list of dims");
    red[size_t(w)] = true;
  }
  return red;
}

DimPlan plan(const Tensor& t, const std::vector<bool>& red, bool keepdim, bool in_order, const char* op) {
  const int64_t nd = t.dim();
  DimPlan p;
  // An empty tensor's sizes may multiply past int64 (a 0 beside huge dims). Where the product of
  // its non-zero sizes fits, every product below does too; otherwise it is planned apart.
  bool huge = false;
  if (t.numel() == 0) [[unlikely]] {
    int64_t prod = 1;
    for (int64_t d = 0; d < nd; ++d)
      if (t.size(d) != 0) huge |= __builtin_mul_overflow(prod, t.size(d), &prod);
  }
  if (huge) [[unlikely]] {
    // Nothing to read: [kept elements, n, 1]; the result's element count must fit.
    // The reduced count stays exact where it fits (an empty reduced dim has no identity for
    // max and the like); where it does not, a kept dim is 0 and nothing is computed.
    DimVector kept_sizes;
    bool wraps = false;
    for (int64_t d = 0; d < nd; ++d) {
      if (red[size_t(d)]) wraps |= __builtin_mul_overflow(p.n, t.size(d), &p.n);
      else kept_sizes.push_back(t.size(d));
      if (!red[size_t(d)] || keepdim) p.out_sizes.push_back(red[size_t(d)] ? 1 : t.size(d));
    }
    p.outer = checked_numel(kept_sizes, op);
    if (wraps) p.n = INT64_MAX;
    p.in = t.view({p.outer, p.n, 1});
    return p;
  }
  DimVector kept, reduced;  // dims in order
  for (int64_t d = 0; d < nd; ++d) {
    if (red[size_t(d)]) {
      reduced.push_back(d);
      p.n *= t.size(d);
      if (keepdim) p.out_sizes.push_back(1);
    } else {
      kept.push_back(d);
      p.out_sizes.push_back(t.size(d));
    }
  }
  int64_t kept_numel = 1;
  for (int64_t d : kept) kept_numel *= t.size(d);

  // 1. Contiguous, and no kept dim of size > 1 between reduced ones: [before, n, after].
  if (t.is_contiguous()) {
    int64_t lo = nd, hi = -1;
    for (int64_t d : reduced)
      if (t.size(d) != 1) lo = std::min(lo, d), hi = std::max(hi, d);
    bool adjacent = true;
    for (int64_t d : kept)
      if (d > lo && d < hi && t.size(d) != 1) adjacent = false;
    if (adjacent) {
      for (int64_t d : kept) (d < lo ? p.outer : p.inner) *= t.size(d);
      p.in = t.view({p.outer, p.n, p.inner});
      return p;
    }
  }
  p.mode = PlanMode::Copy;
  if (in_order) {
    // Only a single dim is planned in order: [dims before it, n, dims after it].
    const int64_t d = reduced.empty() ? 0 : reduced.front();
    for (int64_t k : kept) (k < d ? p.outer : p.inner) *= t.size(k);
    p.in = t.contiguous().view({p.outer, p.n, p.inner});
    return p;
  }
  // 2. t permuted to (kept, reduced) or (reduced, kept) is contiguous: a view.
  for (const bool kept_first : {true, false}) {
    DimVector perm(kept_first ? kept : reduced);
    for (int64_t d : kept_first ? reduced : kept) perm.push_back(d);
    Tensor permuted = t.permute(perm);
    if (!permuted.is_contiguous()) continue;
    p.mode = PlanMode::View;
    (kept_first ? p.outer : p.inner) = kept_numel;
    p.in = permuted.view({p.outer, p.n, p.inner});
    return p;
  }
  // 3. Otherwise a copy in the (kept, reduced) order.
  DimVector perm(kept);
  for (int64_t d : reduced) perm.push_back(d);
  p.outer = kept_numel;
  p.in = t.permute(perm).contiguous().view({p.outer, p.n, 1});
  return p;
}

}  // namespace

DimPlan plan_dims(const Tensor& t, IntArrayRef dims, bool keepdim, const char* op) {
  return plan(t, reduced_dims(t, dims, op), keepdim, false, op);
}

DimPlan plan_along(const Tensor& t, int64_t dim, bool keepdim, const char* op, bool in_order) {
  std::vector<bool> red(size_t(std::max<int64_t>(t.dim(), 1)), false);
  red[size_t(wrap_dim(dim, t.dim(), op))] = true;
  return plan(t, red, keepdim, in_order, op);
}

}  // namespace wick::detail
