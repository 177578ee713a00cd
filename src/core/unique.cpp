// unique and unique_consecutive (and LibTorch's spellings _unique, _unique2, unique_dim,
// unique_dim_consecutive), composed of other ops: no kernel of their own, so every backend runs
// them as it runs sort, cumsum, scatter and nonzero.
//
// Every form ends in the same step, over n elements (or slices) in some order: a bool mask
// is_new marks where a run of equal neighbours starts (NaN != NaN, so each NaN starts a run).
// The runs' first indices are nonzero(is_new) (the one read back to the host: the number of
// values), each element's run is cumsum(is_new) - 1, a run's count the distance to the next start.
//   - unique_consecutive reads the runs of t itself; a slice starts a run where any of its
//     elements differs from the slice before.
//   - unique without dim reads the runs of the flattened t sorted (stable); inverse goes back to
//     t's order through the sort's permutation.
//   - unique with dim ranks the slices, the rows of an [n, w] matrix (dim moved first). Each of
//     the w columns is replaced by its dense rank among the n rows (one sort of all columns at
//     once), then neighbouring columns are paired, rank_a * n + rank_b ordering as the pair
//     does, and ranked again: the columns halve each round, and after ceil(log2 w) rounds one
//     key is left, ordering the slices lexicographically (sorting by one column at a time, the
//     obvious alternative, takes w sorts where this takes ceil(log2 w) + 1). The key's sorted
//     runs are the unique slices.
// Nothing is differentiable (as in PyTorch): everything runs under no-grad.
#include <algorithm>

#include "core/as_op.h"
#include "core/checks.h"
#include "wick/autograd.h"
#include "wick/ops.h"

namespace wick {

using namespace detail;

namespace {

using Result = std::tuple<Tensor, Tensor, Tensor>;

TensorOptions longs_on(const Tensor& t) { return TensorOptions(kInt64).device(t.device()); }

// Where a run of equal neighbours starts along dim 0 of v (1-D, or 2-D: rows compared whole).
Tensor run_starts(const Tensor& v) {
  const int64_t n = v.size(0);
  Tensor differs = v.slice(0, 1) != v.slice(0, 0, n - 1);
  if (v.dim() > 1) differs = differs.any(1);
  return cat({ones({1}, TensorOptions(kBool).device(v.device())), differs});
}

// The runs that is_new (1-D bool, not empty, is_new[0] true) starts: each run's first index,
// each element's run (inverse, when asked) and each run's length (counts, when asked; else empty).
struct Runs {
  Tensor firsts, inverse, counts;
};
Runs runs_of(const Tensor& is_new, bool return_inverse, bool return_counts) {
  const TensorOptions longs = longs_on(is_new);
  const int64_t n = is_new.size(0);
  Runs r;
  r.firsts = nonzero(is_new).reshape({-1});
  r.inverse = return_inverse ? cumsum(is_new, 0) - 1 : empty({0}, longs);
  r.counts = return_counts ? cat({r.firsts.slice(0, 1), full({1}, n, longs)}) - r.firsts : empty({0}, longs);
  return r;
}

// The runs of v's values in sorted order (v 1-D, not empty): firsts index v's own order (a
// stable sort, so a run's first element is its first in v), inverse is in v's order.
Runs sorted_runs(const Tensor& v, bool return_inverse, bool return_counts) {
  auto [sorted, perm] = sort(v, 0, false, true);
  Runs r = runs_of(run_starts(sorted), return_inverse, return_counts);
  r.firsts = perm.index_select(0, r.firsts);
  if (return_inverse) r.inverse = scatter(r.inverse, 0, perm, r.inverse);
  return r;
}

// The dense rank of each key along dim 1 of keys [c, n] (int64): equal keys share a rank, the
// ranks keep the keys' order, each NaN has a rank of its own.
Tensor dense_ranks(const Tensor& keys) {
  const int64_t n = keys.size(1);
  auto [sorted, perm] = sort(keys, 1, false, true);
  Tensor differs = sorted.slice(1, 1) != sorted.slice(1, 0, n - 1);
  Tensor is_new = cat({ones({keys.size(0), 1}, TensorOptions(kBool).device(keys.device())), differs}, 1);
  Tensor ranks = cumsum(is_new, 1) - 1;
  return scatter(ranks, 1, perm, ranks);
}

// t's values (or slices along dim) with nothing in them: no runs.
Result empty_result(const Tensor& t, IntArrayRef values_sizes, IntArrayRef inverse_sizes,
                    bool return_inverse) {
  const TensorOptions longs = longs_on(t);
  Tensor inverse = return_inverse ? empty(inverse_sizes, longs) : empty({0}, longs);
  return {empty(values_sizes, t.options()), inverse, empty({0}, longs)};
}

// The checks of a dim given (PyTorch's words): the dim wrapped; t.size(dim) may be 0 when no
// other size is.
int64_t checked_unique_dim(const Tensor& t, int64_t dim, const char* op) {
  WICK_CHECK(t.dim() > 0, IndexError, op, "Dimension specified as ", dim, " but tensor has no dimensions");
  const int64_t d = wrap_dim(dim, t.dim(), op);
  const auto zero_sizes = std::count(t.sizes().begin(), t.sizes().end(), int64_t(0));
  if (t.size(d) == 0) {
    WICK_CHECK(zero_sizes == 1, ValueError, op,
               "Number of zero sized dimensions is more than one, so unique cannot be applied");
  } else {
    WICK_CHECK(zero_sizes == 0, ValueError, op,
               "There are 0 sized dimensions, and they aren't selected, so unique cannot be applied");
  }
  return d;
}

// t's slices along d as the rows of an [n, w] matrix (torch.moveaxis(t, d, 0), flattened after
// dim 0): the order in which PyTorch compares two slices.
Tensor slice_rows(const Tensor& t, int64_t d) {
  DimVector order{d};
  for (int64_t i = 0; i < t.dim(); ++i)
    if (i != d) order.push_back(i);
  return t.permute(order).reshape({t.size(d), -1});
}

Result unique_impl(const Tensor& t, bool return_inverse, bool return_counts, std::optional<int64_t> dim,
                   const char* op) {
  return as_op(op, [&]() -> Result {
    check_defined(t, op, "self");
    NoGradGuard no_grad;
    if (!dim) {
      if (t.numel() == 0) return empty_result(t, {0}, t.sizes(), return_inverse);
      Tensor flat = t.reshape({-1});
      Runs r = sorted_runs(flat, return_inverse, return_counts);
      if (return_inverse) r.inverse = r.inverse.view(t.sizes());
      return {flat.index_select(0, r.firsts), r.inverse, r.counts};
    }
    const int64_t d = checked_unique_dim(t, *dim, op);
    const int64_t n = t.size(d);
    if (n == 0) return empty_result(t, t.sizes(), {0}, false);
    // rank_a * n + rank_b < n * n must fit int64.
    WICK_CHECK(n <= int64_t(3037000499), ValueError, op, "more than 3037000499 slices along dim ", *dim);
    Tensor keys = slice_rows(t, d).t();  // [w, n]: column j of every slice
    while (keys.size(0) > 1) {
      Tensor ranks = dense_ranks(keys);
      if (ranks.size(0) % 2 == 1) ranks = cat({ranks, zeros({1, n}, longs_on(t))});
      ranks = ranks.reshape({ranks.size(0) / 2, 2, n});
      keys = ranks.select(1, 0) * n + ranks.select(1, 1);
    }
    Runs r = sorted_runs(keys.select(0, 0), return_inverse, return_counts);
    return {t.index_select(d, r.firsts), r.inverse, r.counts};
  });
}

Result unique_consecutive_impl(const Tensor& t, bool return_inverse, bool return_counts,
                               std::optional<int64_t> dim, const char* op) {
  return as_op(op, [&]() -> Result {
    check_defined(t, op, "self");
    NoGradGuard no_grad;
    if (!dim) {
      if (t.numel() == 0) return empty_result(t, {0}, t.sizes(), return_inverse);
      Tensor flat = t.reshape({-1});
      Runs r = runs_of(run_starts(flat), return_inverse, return_counts);
      if (return_inverse) r.inverse = r.inverse.view(t.sizes());
      return {flat.index_select(0, r.firsts), r.inverse, r.counts};
    }
    const int64_t d = checked_unique_dim(t, *dim, op);
    if (t.size(d) == 0) return empty_result(t, t.sizes(), {0}, false);
    Runs r = runs_of(run_starts(slice_rows(t, d)), return_inverse, return_counts);
    return {t.index_select(d, r.firsts), r.inverse, r.counts};
  });
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor> unique(const Tensor& t, bool sorted, bool return_inverse,
                                          bool return_counts, std::optional<int64_t> dim) {
  (void)sorted;  // the values always come sorted (PyTorch leaves the order of sorted = false open)
  return unique_impl(t, return_inverse, return_counts, dim, "unique");
}

std::tuple<Tensor, Tensor, Tensor> unique_consecutive(const Tensor& t, bool return_inverse,
                                                      bool return_counts, std::optional<int64_t> dim) {
  return unique_consecutive_impl(t, return_inverse, return_counts, dim, "unique_consecutive");
}

std::tuple<Tensor, Tensor> _unique(const Tensor& t, bool sorted, bool return_inverse) {
  (void)sorted;
  auto [values, inverse, counts] = unique_impl(t, return_inverse, false, std::nullopt, "_unique");
  return {values, inverse};
}

std::tuple<Tensor, Tensor, Tensor> _unique2(const Tensor& t, bool sorted, bool return_inverse,
                                            bool return_counts) {
  (void)sorted;
  return unique_impl(t, return_inverse, return_counts, std::nullopt, "_unique2");
}

std::tuple<Tensor, Tensor, Tensor> unique_dim(const Tensor& t, int64_t dim, bool sorted, bool return_inverse,
                                              bool return_counts) {
  (void)sorted;
  return unique_impl(t, return_inverse, return_counts, dim, "unique_dim");
}

std::tuple<Tensor, Tensor, Tensor> unique_dim_consecutive(const Tensor& t, int64_t dim, bool return_inverse,
                                                          bool return_counts) {
  return unique_consecutive_impl(t, return_inverse, return_counts, dim, "unique_dim_consecutive");
}

}  // namespace wick
