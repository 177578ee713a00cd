// nll_loss on the CPU (kernel_table.h's nll_loss_forward/backward): input [N, C, S], target
// [N, S]. Targets are checked in a first pass, so a bad one throws before anything is written.
// Reductions sum in double, in element order (the same result for any thread count); with
// logits, each row's log-sum-exp is computed on the fly (rows in parallel).
#include <algorithm>
#include <cmath>
#include <vector>

#include <omp.h>

#include "cpu/kernels.h"
#include "cpu/loops.h"
#include "cpu/vec_math.h"

namespace wick::detail::cpu {

namespace {

void check_targets(const int64_t* t, int64_t n, int64_t classes, int64_t ignore_index) {
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = t[i];
    if (v != ignore_index && (v < 0 || v >= classes)) [[unlikely]]
      raise<IndexError>("nll_loss", "Target ", v, " is out of bounds.");
  }
}

template <class T>
void nll_forward_typed(const Tensor& out, const Tensor& total_weight, const Tensor& input,
                       const Tensor& target, const Tensor& weight, int64_t ignore_index,
                       LossReduction reduction, bool logits) {
  using M = opmath_t<T>;
  const int64_t N = input.size(0), C = input.size(1), S = input.size(2), NS = N * S;
  const T* x = static_cast<const T*>(input.data_ptr());
  const int64_t* t = static_cast<const int64_t*>(target.data_ptr());
  const T* w = weight.defined() ? static_cast<const T*>(weight.data_ptr()) : nullptr;
  check_targets(t, NS, C, ignore_index);

  // -w[t] * log p[t] of element i (n, s) and w[t]; both 0 when ignored.
  auto element = [&](int64_t i, double& wt) -> double {
    const int64_t v = t[i];
    if (v == ignore_index) {
      wt = 0;
      return 0;
    }
    const int64_t n = i / S, s = i % S;
    const T* row = x + n * C * S + s;
    wt = w ? double(M(w[v])) : 1.0;
    double lp = double(M(row[v * S]));
    if (logits) {
      M mx = -INFINITY;
      for (int64_t c = 0; c < C; ++c) mx = mx < M(row[c * S]) ? M(row[c * S]) : mx;
      M se = 0;
      for (int64_t c = 0; c < C; ++c) se += std::exp(M(row[c * S]) - mx);
      lp = double(M(M(row[v * S]) - mx - std::log(se)));
    }
    return -wt * lp;
  };

  const int nt = threads_for(logits ? NS * C : NS, NS);
  if (reduction == LossReduction::None) {
    T* o = static_cast<T*>(out.data_ptr());
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
    for (int64_t i = 0; i < NS; ++i) {
      double wt;
      o[i] = T(M(element(i, wt)));
    }
    return;
  }
  std::vector<double> loss(static_cast<size_t>(NS)), wts(static_cast<size_t>(NS));
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
  for (int64_t i = 0; i < NS; ++i) loss[size_t(i)] = element(i, wts[size_t(i)]);
  double sum = 0, wsum = 0;
  for (int64_t i = 0; i < NS; ++i) {
    sum += loss[size_t(i)];
    wsum += wts[size_t(i)];
  }
  *static_cast<T*>(out.data_ptr()) = T(M(reduction == LossReduction::Mean ? sum / wsum : sum));
  *static_cast<T*>(total_weight.data_ptr()) = T(M(wsum));
}

template <class T>
void nll_backward_typed(const Tensor& grad_input, const Tensor& grad_out, const Tensor& target,
                        const Tensor& weight, const Tensor& total_weight, int64_t ignore_index,
                        LossReduction reduction) {
  using M = opmath_t<T>;
  const int64_t N = grad_input.size(0), C = grad_input.size(1), S = grad_input.size(2);
  const int64_t* t = static_cast<const int64_t*>(target.data_ptr());
  const T* w = weight.defined() ? static_cast<const T*>(weight.data_ptr()) : nullptr;
  const T* g = static_cast<const T*>(grad_out.data_ptr());
  T* gi = static_cast<T*>(grad_input.data_ptr());
  check_targets(t, N * S, C, ignore_index);
  M scale = reduction == LossReduction::None ? M(1) : M(g[0]);
  if (reduction == LossReduction::Mean) scale /= M(*static_cast<const T*>(total_weight.data_ptr()));
  const int nt = threads_for(N * C * S, N);
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    T* row = gi + n * C * S;
    for (int64_t k = 0; k < C * S; ++k) row[k] = T(0);
    for (int64_t s = 0; s < S; ++s) {
      const int64_t v = t[n * S + s];
      if (v == ignore_index) continue;
      const M gv = reduction == LossReduction::None ? M(g[n * S + s]) : scale;
      row[v * S + s] = T(-(w ? M(w[v]) : M(1)) * gv);
    }
  }
}

// One row's gradient: g[c] = a * (exp(x[c] - lse) - [c == t]).
template <class T, class M>
void ce_grad_row(T* g, const T* row, int64_t C, int64_t t, M a, M lse) {
  for (int64_t c = 0; c < C; ++c) g[c] = T(a * vexp(M(row[c]) - lse));
  g[t] = T(a * (vexp(M(row[t]) - lse) - M(1)));
}

// cross_entropy's rows (KernelTable::cross_entropy_rows): lse[n] = log sum_c exp(x[n, c]) and
// nll[n] = lse[n] - x[n, t[n]] (0 where ignored), in float from 16-bit x; with grad_input, the
// row's gradient for coef[n] while the row is in cache.
template <class T>
void ce_rows_typed(const Tensor& lse, const Tensor& nll, const Tensor& input, const Tensor& target,
                   int64_t ignore_index, const Tensor& grad_input, const Tensor& coef) {
  using M = opmath_t<T>;
  const int64_t N = input.size(0), C = input.size(1);
  const T* x = static_cast<const T*>(input.data_ptr());
  const int64_t* t = static_cast<const int64_t*>(target.data_ptr());
  check_targets(t, N, C, ignore_index);
  M* l = static_cast<M*>(lse.data_ptr());
  M* o = static_cast<M*>(nll.data_ptr());
  T* gi = grad_input.defined() ? static_cast<T*>(grad_input.data_ptr()) : nullptr;
  const M* k = gi ? static_cast<const M*>(coef.data_ptr()) : nullptr;
  const int nt = threads_for(N * C, N);
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    const T* row = x + n * C;
    M mx = -INFINITY;
    for (int64_t c = 0; c < C; ++c) mx = mx < M(row[c]) ? M(row[c]) : mx;
    M se = 0;
    for (int64_t c = 0; c < C; ++c) se += vexp(M(row[c]) - mx);
    const M v = mx + std::log(se);
    l[n] = v;
    o[n] = t[n] == ignore_index ? M(0) : v - M(row[t[n]]);
    if (!gi) continue;
    if (t[n] == ignore_index) std::fill(gi + n * C, gi + (n + 1) * C, T(0));
    else ce_grad_row(gi + n * C, row, C, t[n], k[n], v);
  }
}

// Its gradient: gi[n, c] = coef[n] * scale * (exp(x[n, c] - lse[n]) - [c == t[n]]), 0 on
// ignored rows; nothing when scale is 1 (the forward wrote it).
template <class T>
void ce_rows_backward_typed(const Tensor& grad_input, const Tensor& coef, const Tensor& scale, const Tensor& input,
                            const Tensor& lse, const Tensor& target, int64_t ignore_index) {
  using M = opmath_t<T>;
  const M s = scale.defined() ? *static_cast<const M*>(scale.data_ptr()) : M(1);
  if (scale.defined() && s == M(1)) return;
  const int64_t N = input.size(0), C = input.size(1);
  const T* x = static_cast<const T*>(input.data_ptr());
  const int64_t* t = static_cast<const int64_t*>(target.data_ptr());
  const M* l = static_cast<const M*>(lse.data_ptr());
  const M* k = static_cast<const M*>(coef.data_ptr());
  T* gi = static_cast<T*>(grad_input.data_ptr());
  check_targets(t, N, C, ignore_index);
  const int nt = threads_for(N * C, N);
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    if (t[n] == ignore_index) std::fill(gi + n * C, gi + (n + 1) * C, T(0));
    else ce_grad_row(gi + n * C, x + n * C, C, t[n], k[n] * s, l[n]);
  }
}

}  // namespace

void nll_loss_forward(const Tensor& out, const Tensor& total_weight, const Tensor& input,
                          const Tensor& target, const Tensor& weight, int64_t ignore_index,
                          LossReduction reduction, bool logits) {
  WICK_DISPATCH_FLOATING(input.dtype(), "nll_loss", [&]<class T>() {
    nll_forward_typed<T>(out, total_weight, input, target, weight, ignore_index, reduction, logits);
  });
}

void nll_loss_backward(const Tensor& grad_input, const Tensor& grad_out, const Tensor& target,
                           const Tensor& weight, const Tensor& total_weight, int64_t ignore_index,
                           LossReduction reduction) {
  WICK_DISPATCH_FLOATING(grad_input.dtype(), "nll_loss_backward", [&]<class T>() {
    nll_backward_typed<T>(grad_input, grad_out, target, weight, total_weight, ignore_index, reduction);
  });
}

void cross_entropy_rows(const Tensor& lse, const Tensor& nll, const Tensor& input, const Tensor& target,
                        int64_t ignore_index, const Tensor& grad_input, const Tensor& coef) {
  WICK_DISPATCH_FLOATING(input.dtype(), "cross_entropy", [&]<class T>() {
    ce_rows_typed<T>(lse, nll, input, target, ignore_index, grad_input, coef);
  });
}

void cross_entropy_rows_backward(const Tensor& grad_input, const Tensor& coef, const Tensor& scale,
                                 const Tensor& input, const Tensor& lse, const Tensor& target, int64_t ignore_index) {
  WICK_DISPATCH_FLOATING(input.dtype(), "cross_entropy_backward", [&]<class T>() {
    ce_rows_backward_typed<T>(grad_input, coef, scale, input, lse, target, ignore_index);
  });
}

}  // namespace wick::detail::cpu
