// Reductions over the middle dim of a contiguous [outer, n, inner] input on the CPU, the one
// reduce family: sum and mean, max/min (with indices), argmax/argmin, var/std and norm. Core
// plans every reduction in this shape (src/core/dim_plan.h), so the input is copied only
// when its layout leaves no other way.
//
// Sums are pairwise (blocked, error O(log n) rather than O(n)) along rows (inner == 1) and
// along columns (inner > 1: a block of adjacent columns is summed row by row into a small
// array, so the innermost loop walks unit-stride memory), in float for 16-bit floats and
// float32, double for float64, int64 for integers and bool.
//
// The other ops split work in columns: one task reduces n values for a block of up to kBlock
// adjacent columns (inner > 1) or one contiguous row (inner == 1). When there are fewer tasks
// than the threads the size calls for (loops.h's threads_for), the rows are cut among the
// threads instead and the partial states merged in order (first index still wins); sums do
// the same. Such a split changes the order of a sum's additions, so its float result may
// differ in rounding with the thread count; max, min and their indices never do.
//
// Accumulation of var and norm: 16-bit floats in float, float32 and float64 in double
// (PyTorch's CPU acc_type). Var is two passes (mean, then squared deviations): exact enough
// in double and simpler to merge than Welford's update.
//
// no-trapping-math lets GCC vectorize the NaN-propagating selects (see unary.cpp).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include <omp.h>

#include "cpu/kernels.h"
#include "cpu/loops.h"

namespace wick::detail::cpu {

namespace {

constexpr int64_t kBlock = 64;

template <class T>
struct AccOf {
  using type = double;
};
template <>
struct AccOf<Half> {
  using type = float;
};
template <>
struct AccOf<BFloat16> {
  using type = float;
};
template <class T>
using acc_t = typename AccOf<T>::type;

template <class M>
bool is_nan(M v) {
  if constexpr (std::is_floating_point_v<M>) return v != v;
  else return false;
}

// ---- sum and mean

// Sums of integers and bools accumulate in int64, floats by the OpMath rule (as PyTorch).
template <class T>
struct SumAcc {
  using type = std::conditional_t<std::is_integral_v<T>, int64_t, opmath_t<T>>;
};

constexpr int64_t kPairwise = 128;  // lengths summed straight through

template <class Acc, class T>
Acc pairwise_sum(const T* p, int64_t n) {
  if (n <= kPairwise) {
    Acc lanes[8] = {};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
      for (int j = 0; j < 8; ++j) lanes[j] += Acc(p[i + j]);
    Acc s = 0;
    for (; i < n; ++i) s += Acc(p[i]);
    return s + ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) +
           ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
  }
  int64_t half = (n / 2 + kPairwise - 1) / kPairwise * kPairwise;
  return pairwise_sum<Acc>(p, half) + pairwise_sum<Acc>(p + half, n - half);
}

// out[j] = sum of p[r * stride + j] over rows r in [0, n), for j < jn <= kBlock; pairwise
// over the rows, as pairwise_sum is along one.
template <class Acc, class T>
void pairwise_column_sums(const T* p, int64_t n, int64_t stride, int64_t jn, Acc* out) {
  if (n <= kPairwise) {
    Acc s[kBlock] = {};
    for (int64_t r = 0; r < n; ++r) {
      const T* row = p + r * stride;
      for (int64_t j = 0; j < jn; ++j) s[j] += Acc(row[j]);
    }
    for (int64_t j = 0; j < jn; ++j) out[j] = s[j];
    return;
  }
  const int64_t half = (n / 2 + kPairwise - 1) / kPairwise * kPairwise;
  Acc rest[kBlock];
  pairwise_column_sums(p, half, stride, jn, out);
  pairwise_column_sums(p + half * stride, n - half, stride, jn, rest);
  for (int64_t j = 0; j < jn; ++j) out[j] += rest[j];
}

template <class T>
void sum_reduce(bool mean, const Tensor& values, const Tensor& in) {
  using Acc = typename SumAcc<T>::type;
  const int64_t outer = in.size(0), n = in.size(1), inner = in.size(2);
  const T* src = static_cast<const T*>(in.data_ptr());
  T* dst = static_cast<T*>(values.data_ptr());
  auto finish = [&](Acc s) {
    if (!mean) return convert<T>(s);
    if constexpr (std::is_floating_point_v<Acc>) return convert<T>(n ? s / Acc(n) : Acc(NAN));
    else return convert<T>(n ? s / Acc(n) : Acc(0));
  };
  if (n == 0) {  // an empty sum (the input has no data to point into): 0, or NaN for a mean
    for (int64_t c = 0; c < outer * inner; ++c) dst[c] = finish(Acc(0));
    return;
  }
  const int nt = threads_for(outer * n * inner);
  if (inner == 1) {
    if (outer < nt) {
      // Fewer long rows than threads: each thread sums its piece of every row, then each
      // row's partial sums are added in order.
      std::vector<Acc> part(size_t(nt * outer), Acc(0));
#pragma omp parallel num_threads(nt)
      {
        const int t = omp_get_thread_num(), k = omp_get_num_threads();
        const int64_t b = n * t / k, e = n * (t + 1) / k;
        for (int64_t o = 0; o < outer; ++o)
          part[size_t(t * outer + o)] = pairwise_sum<Acc>(src + o * n + b, e - b);
      }
      for (int64_t o = 0; o < outer; ++o) {
        Acc s = part[size_t(o)];
        for (int t = 1; t < nt; ++t) s += part[size_t(t * outer + o)];
        dst[o] = finish(s);
      }
      return;
    }
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
    for (int64_t o = 0; o < outer; ++o) dst[o] = finish(pairwise_sum<Acc>(src + o * n, n));
    return;
  }
  const int64_t blocks = (inner + kBlock - 1) / kBlock, tasks = outer * blocks;
  if (tasks < nt) {
    // Few column blocks over long columns: each thread sums a range of rows of every column,
    // then the partial sums are added in row order.
    const int64_t cols = outer * inner;
    std::vector<Acc> part(size_t(nt * cols), Acc(0));
#pragma omp parallel num_threads(nt)
    {
      const int t = omp_get_thread_num(), k = omp_get_num_threads();
      const int64_t r0 = n * t / k, r1 = n * (t + 1) / k;
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t j0 = 0; j0 < inner; j0 += kBlock)
          pairwise_column_sums(src + (o * n + r0) * inner + j0, r1 - r0, inner, std::min(kBlock, inner - j0),
                               part.data() + t * cols + o * inner + j0);
    }
    for (int64_t c = 0; c < cols; ++c) {
      Acc s = part[size_t(c)];
      for (int t = 1; t < nt; ++t) s += part[size_t(t * cols + c)];
      dst[c] = finish(s);
    }
    return;
  }
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
  for (int64_t t = 0; t < tasks; ++t) {
    const int64_t o = t / blocks, j0 = (t % blocks) * kBlock, jn = std::min(kBlock, inner - j0);
    Acc s[kBlock];
    pairwise_column_sums(src + o * n * inner + j0, n, inner, jn, s);
    for (int64_t j = 0; j < jn; ++j) dst[o * inner + j0 + j] = finish(s[j]);
  }
}

// ---- max, min, argmax, argmin, var, std, norm

// Folds f(x, column) into an accumulator with combine (sums, NaN-propagating max/min of |x|).
template <class A, class F, class C>
struct FoldPolicy {
  using State = A;
  static constexpr bool kAssociative = true;
  A identity;
  F f;
  C combine;
  State init() const { return identity; }
  template <class M>
  void add(State& s, M x, int64_t, int64_t col) const {
    s = combine(s, f(A(x), col));
  }
  void merge(State& a, const State& b) const { a = combine(a, b); }
};
template <class A, class F, class C>
FoldPolicy<A, F, C> fold(A identity, F f, C combine) {
  return {identity, f, combine};
}

// The running best value and its index; better(x, best) says x replaces best.
template <class M, class Better>
struct SelectPolicy {
  struct State {
    M v;
    int64_t i;
  };
  static constexpr bool kAssociative = false;
  Better better;
  State init() const { return {M(0), -1}; }
  void add(State& s, M x, int64_t r, int64_t) const {
    if (s.i < 0 || better(x, s.v)) s = {x, r};
  }
  // b covers later rows than a: it wins only when strictly better.
  void merge(State& a, const State& b) const {
    if (b.i >= 0 && (a.i < 0 || better(b.v, a.v))) a = b;
  }
};

template <class T>
class ColumnReducer {
 public:
  explicit ColumnReducer(const Tensor& in)
      : p_(static_cast<const T*>(in.data_ptr())), outer_(in.size(0)), n_(in.size(1)), inner_(in.size(2)) {}

  // emit(column, state) for every column o * inner + j.
  template <class P, class Emit>
  void run(const P& pol, const Emit& emit) const {
    const int64_t blocks = inner_ == 1 ? 1 : (inner_ + kBlock - 1) / kBlock;
    const int64_t tasks = outer_ * blocks;
    const int nt = threads_for(outer_ * n_ * inner_);
    if (tasks < nt) return run_split(pol, emit, nt);
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
    for (int64_t t = 0; t < tasks; ++t) {
      const int64_t o = t / blocks, j0 = (t % blocks) * kBlock, jn = std::min(kBlock, inner_ - j0);
      typename P::State s[kBlock];
      for (int64_t j = 0; j < jn; ++j) s[j] = pol.init();
      add_rows(pol, o, j0, jn, 0, n_, s);
      for (int64_t j = 0; j < jn; ++j) emit(o * inner_ + j0 + j, s[j]);
    }
  }

 private:
  using M = opmath_t<T>;

  // Adds rows [r0, r1) of columns j0 .. j0 + jn of outer slice o into s.
  template <class P>
  void add_rows(const P& pol, int64_t o, int64_t j0, int64_t jn, int64_t r0, int64_t r1,
                typename P::State* s) const {
    if (r0 >= r1) return;  // no rows (an empty input has no data to point into)
    const T* base = p_ + o * n_ * inner_ + j0;
    const int64_t col = o * inner_ + j0;
    if (inner_ == 1) {
      if constexpr (P::kAssociative) {  // four lanes break the dependency chain
        typename P::State l[4] = {pol.init(), pol.init(), pol.init(), pol.init()};
        int64_t r = r0;
        for (; r + 4 <= r1; r += 4)
          for (int k = 0; k < 4; ++k) pol.add(l[k], M(base[r + k]), r + k, col);
        for (; r < r1; ++r) pol.add(l[0], M(base[r]), r, col);
        pol.merge(l[0], l[1]);
        pol.merge(l[2], l[3]);
        pol.merge(l[0], l[2]);
        pol.merge(s[0], l[0]);
      } else {
        for (int64_t r = r0; r < r1; ++r) pol.add(s[0], M(base[r]), r, col);
      }
      return;
    }
    for (int64_t r = r0; r < r1; ++r) {
      const T* row = base + r * inner_;
      for (int64_t j = 0; j < jn; ++j) pol.add(s[j], M(row[j]), r, col + j);
    }
  }

  // Few columns, long rows: each thread reduces a range of rows for every column, then the
  // partial states are merged in row order.
  template <class P, class Emit>
  void run_split(const P& pol, const Emit& emit, int nt) const {
    using S = typename P::State;
    const int64_t cols = outer_ * inner_;
    std::unique_ptr<S[]> part(new S[size_t(nt * cols)]);  // not vector: S may be bool
    for (int64_t i = 0; i < nt * cols; ++i) part[size_t(i)] = pol.init();
#pragma omp parallel num_threads(nt)
    {
      const int t = omp_get_thread_num(), k = omp_get_num_threads();
      const int64_t r0 = n_ * t / k, r1 = n_ * (t + 1) / k;
      S* mine = part.get() + t * cols;
      for (int64_t o = 0; o < outer_; ++o)
        for (int64_t j0 = 0; j0 < inner_; j0 += kBlock)
          add_rows(pol, o, j0, std::min(kBlock, inner_ - j0), r0, r1, mine + o * inner_ + j0);
    }
    for (int64_t c = 0; c < cols; ++c) {
      S s = part[size_t(c)];
      for (int t = 1; t < nt; ++t) pol.merge(s, part[size_t(t * cols + c)]);
      emit(c, s);
    }
  }

  const T* p_;
  int64_t outer_, n_, inner_;
};

template <class T>
void select_reduce(ReduceOp op, const Tensor& values, const Tensor& indices, const Tensor& in) {
  using M = opmath_t<T>;
  ColumnReducer<T> red(in);
  T* val = values.defined() ? static_cast<T*>(values.data_ptr()) : nullptr;
  int64_t* idx = indices.defined() ? static_cast<int64_t*>(indices.data_ptr()) : nullptr;
  auto emit = [&](int64_t c, const auto& s) {
    if (val) val[c] = T(s.v);
    if (idx) idx[c] = s.i;
  };
  // NaN beats any number (the first NaN stays), as PyTorch's max/min/argmax propagate it.
  const bool is_max = op == ReduceOp::Max || op == ReduceOp::ArgMax;
  // Contiguous rows (inner == 1) and values-only reductions first fold the values, which
  // vectorizes; rows then find the first position holding their result (the row is hot in
  // cache). Column blocks with indices keep a (value, index) state per column.
  if (!idx || in.size(2) == 1) {
    std::vector<M> best(idx ? size_t(in.size(0)) : 0);
    auto put = [&](int64_t c, M v) {
      if (idx) best[size_t(c)] = v;
      else val[c] = T(v);
    };
    auto id = [](M x, int64_t) { return x; };
    using L = std::numeric_limits<M>;
    const M lo = L::has_infinity ? -L::infinity() : L::lowest(),
            hi = L::has_infinity ? L::infinity() : L::max();
    if (is_max) red.run(fold(lo, id, [](M a, M b) { return is_nan(a) || b < a ? a : b; }), put);
    else red.run(fold(hi, id, [](M a, M b) { return is_nan(a) || a < b ? a : b; }), put);
    if (!idx) return;
    const int64_t outer = in.size(0), n = in.size(1);
    const T* p = static_cast<const T*>(in.data_ptr());
    const int nt = threads_for(outer * n, outer);
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
    for (int64_t o = 0; o < outer; ++o) {
      const M b = best[size_t(o)];
      const T* row = p + o * n;
      int64_t r = 0;
      if (is_nan(b)) {
        while (r < n - 1 && !is_nan(M(row[r]))) ++r;
      } else {
        while (r < n - 1 && !(M(row[r]) == b)) ++r;
      }
      idx[o] = r;
      if (val) val[o] = T(b);
    }
    return;
  }
  if (is_max) {
    auto better = [](M x, M b) { return is_nan(x) ? !is_nan(b) : x > b; };
    red.run(SelectPolicy<M, decltype(better)>{better}, emit);
  } else {
    auto better = [](M x, M b) { return is_nan(x) ? !is_nan(b) : x < b; };
    red.run(SelectPolicy<M, decltype(better)>{better}, emit);
  }
}

template <class T>
void var_reduce(const Tensor& values, const Tensor& in, double correction, bool take_sqrt) {
  using A = acc_t<T>;
  ColumnReducer<T> red(in);
  T* out = static_cast<T*>(values.data_ptr());
  const A n = A(in.size(1));
  std::vector<A> mean(size_t(values.numel()));
  auto plus = [](A a, A b) { return a + b; };
  red.run(fold(
              A(0), [](A x, int64_t) { return x; }, plus),
          [&](int64_t c, A s) { mean[size_t(c)] = s / n; });
  const A denom = std::max(n - A(correction), A(0));  // 0: inf or nan, as PyTorch
  const A* mu = mean.data();
  red.run(fold(
              A(0),
              [mu](A x, int64_t c) {
                A d = x - mu[c];
                return d * d;
              },
              plus),
          [&](int64_t c, A s) { out[c] = T(take_sqrt ? std::sqrt(s / denom) : s / denom); });
}

template <class T>
void norm_reduce(const Tensor& values, const Tensor& in, double p) {
  using A = acc_t<T>;
  ColumnReducer<T> red(in);
  T* out = static_cast<T*>(values.data_ptr());
  auto plus = [](A a, A b) { return a + b; };
  auto abs = [](A x, int64_t) { return std::abs(x); };
  auto put = [out](int64_t c, A s) { out[c] = T(s); };
  if (p == 2) {
    red.run(fold(
                A(0), [](A x, int64_t) { return x * x; }, plus),
            [out](int64_t c, A s) { out[c] = T(std::sqrt(s)); });
  } else if (p == 1) {
    red.run(fold(A(0), abs, plus), put);
  } else if (p == 0) {
    red.run(fold(
                A(0), [](A x, int64_t) { return A(x != A(0)); }, plus),
            put);
  } else if (std::isinf(p)) {
    auto mx = [](A a, A b) { return is_nan(a) || a > b ? a : b; };
    auto mn = [](A a, A b) { return is_nan(a) || a < b ? a : b; };
    if (p > 0) red.run(fold(A(0), abs, mx), put);
    else red.run(fold(A(INFINITY), abs, mn), put);
  } else {
    const A pa = A(p), inv = A(1) / pa;
    red.run(fold(
                A(0), [pa](A x, int64_t) { return std::pow(std::abs(x), pa); }, plus),
            [out, inv](int64_t c, A s) { out[c] = T(std::pow(s, inv)); });
  }
}

}  // namespace

void reduce(ReduceOp op, const Tensor& values, const Tensor& indices, const Tensor& in, double arg) {
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Mean:
      return WICK_DISPATCH_ALL(in.dtype(), op_name(op),
                               [&]<class T>() { sum_reduce<T>(op == ReduceOp::Mean, values, in); });
    case ReduceOp::Max:
    case ReduceOp::Min:
    case ReduceOp::ArgMax:
    case ReduceOp::ArgMin:
      return WICK_DISPATCH_ALL(in.dtype(), op_name(op),
                               [&]<class T>() { select_reduce<T>(op, values, indices, in); });
    case ReduceOp::Var:
    case ReduceOp::Std:
      return WICK_DISPATCH_FLOATING(in.dtype(), op_name(op),
                                    [&]<class T>() { var_reduce<T>(values, in, arg, op == ReduceOp::Std); });
    case ReduceOp::Norm:
      return WICK_DISPATCH_FLOATING(in.dtype(), op_name(op), [&]<class T>() { norm_reduce<T>(values, in, arg); });
  }
}

}  // namespace wick::detail::cpu
