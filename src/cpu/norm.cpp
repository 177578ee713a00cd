// LayerNorm and RMSNorm on the CPU: the norm_forward and norm_backward entries
// (core/kernel_table.h) over the rows of a contiguous [m, n] tensor.
//
// Rows are split among threads (threads_for). A row is read twice by the forward (the mean,
// then the centred sum of squares: two passes, exact where a one-pass sum of squares cancels)
// and once more to write y, the row staying in the first-level cache; the sums keep kLanes
// partial sums so that the loops vectorize. The backward's input gradient takes the row's two
// sums (of g and of g xhat) then writes dx; dweight and dbias are summed per thread over its
// rows into a partial row of n values, and the partial rows added in thread order afterwards,
// so the result does not depend on timing. Arithmetic in float for 16-bit floats and float32,
// double for float64.
#include <cmath>
#include <vector>

#include <omp.h>

#include "cpu/kernels.h"
#include "cpu/loops.h"

namespace wick::detail::cpu {

namespace {

constexpr int64_t kLanes = 16;

// The sum of f(i) for i in [0, n), in kLanes partial sums.
template <class M, class F>
[[gnu::always_inline]] inline M lane_sum(int64_t n, F f) {
  M acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int64_t k = 0; k < kLanes; ++k) acc[k] += f(i + k);
  M s = 0;
  for (; i < n; ++i) s += f(i);
  for (int64_t k = 0; k < kLanes; ++k) s += acc[k];
  return s;
}

// Runs body(r0, r1) over [0, rows) split among nt threads, piece k to thread k.
template <class F>
void for_rows(int64_t rows, int nt, F body) {
  if (nt == 1) return body(0, rows, 0);
#pragma omp parallel num_threads(nt)
  {
    const int64_t k = omp_get_thread_num(), t = omp_get_num_threads();
    body(rows * k / t, rows * (k + 1) / t, int(k));
  }
}

template <class T, class W>
void forward_typed(bool rms, const Tensor& yt, const Tensor& meant, const Tensor& rstdt, const Tensor& xt,
                   const Tensor& wt, const Tensor& bt, double eps) {
  using M = opmath_t<T>;
  const int64_t m = xt.size(0), n = xt.size(1);
  const T* x = static_cast<const T*>(xt.data_ptr());
  T* y = static_cast<T*>(yt.data_ptr());
  const W* w = wt.defined() ? static_cast<const W*>(wt.data_ptr()) : nullptr;
  const W* b = bt.defined() ? static_cast<const W*>(bt.data_ptr()) : nullptr;
  M* mean = meant.defined() ? static_cast<M*>(meant.data_ptr()) : nullptr;
  M* rstd = rstdt.defined() ? static_cast<M*>(rstdt.data_ptr()) : nullptr;
  const M e = M(eps), inv_n = M(1) / M(n);
  for_rows(m, threads_for(m * n, m), [&](int64_t r0, int64_t r1, int) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* xr = x + r * n;
      T* yr = y + r * n;
      const M mu = rms ? M(0) : lane_sum<M>(n, [xr](int64_t i) { return M(xr[i]); }) * inv_n;
      const M var = lane_sum<M>(n, [xr, mu](int64_t i) {
                      const M d = M(xr[i]) - mu;
                      return d * d;
                    }) * inv_n;
      const M rs = M(1) / std::sqrt(var + e);
      if (mean) mean[r] = mu;
      if (rstd) rstd[r] = rs;
      if (w && b) {
        for (int64_t i = 0; i < n; ++i) yr[i] = T((M(xr[i]) - mu) * rs * M(w[i]) + M(b[i]));
      } else if (w) {
        for (int64_t i = 0; i < n; ++i) yr[i] = T((M(xr[i]) - mu) * rs * M(w[i]));
      } else if (b) {
        for (int64_t i = 0; i < n; ++i) yr[i] = T((M(xr[i]) - mu) * rs + M(b[i]));
      } else {
        for (int64_t i = 0; i < n; ++i) yr[i] = T((M(xr[i]) - mu) * rs);
      }
    }
  });
}

template <class T, class W, bool HasW>
void backward_rows(bool rms, const T* dy, const T* x, const opmath_t<T>* mean, const opmath_t<T>* rstd, const W* w,
                   T* dx, opmath_t<T>* pw, opmath_t<T>* pb, int64_t n, int64_t r0, int64_t r1) {
  using M = opmath_t<T>;
  const M inv_n = M(1) / M(n);
  for (int64_t r = r0; r < r1; ++r) {
    const T* g = dy + r * n;
    const T* xr = x + r * n;
    const M mu = rms ? M(0) : mean[r], rs = rstd[r];
    auto gw = [g, w](int64_t i) {
      if constexpr (HasW) return M(g[i]) * M(w[i]);
      else return M(g[i]);
    };
    if (dx) {
      T* o = dx + r * n;
      const M a = rms ? M(0) : lane_sum<M>(n, gw) * inv_n;
      const M c = lane_sum<M>(n, [&](int64_t i) { return gw(i) * ((M(xr[i]) - mu) * rs); }) * inv_n;
      for (int64_t i = 0; i < n; ++i) o[i] = T(rs * (gw(i) - a - (M(xr[i]) - mu) * rs * c));
    }
    if (pw)
      for (int64_t i = 0; i < n; ++i) pw[i] += M(g[i]) * ((M(xr[i]) - mu) * rs);
    if (pb)
      for (int64_t i = 0; i < n; ++i) pb[i] += M(g[i]);
  }
}

template <class T, class W>
void backward_typed(bool rms, const Tensor& dxt, const Tensor& dwt, const Tensor& dbt, const Tensor& dyt,
                    const Tensor& xt, const Tensor& meant, const Tensor& rstdt, const Tensor& wt) {
  using M = opmath_t<T>;
  const int64_t m = xt.size(0), n = xt.size(1);
  const T* dy = static_cast<const T*>(dyt.data_ptr());
  const T* x = static_cast<const T*>(xt.data_ptr());
  const M* mean = meant.defined() ? static_cast<const M*>(meant.data_ptr()) : nullptr;
  const M* rstd = static_cast<const M*>(rstdt.data_ptr());
  const W* w = wt.defined() ? static_cast<const W*>(wt.data_ptr()) : nullptr;
  T* dx = dxt.defined() ? static_cast<T*>(dxt.data_ptr()) : nullptr;
  const int nt = threads_for(m * n, m);
  // Partial rows of dweight and dbias, one pair per thread.
  std::vector<M> pw(dwt.defined() ? size_t(nt * n) : 0), pb(dbt.defined() ? size_t(nt * n) : 0);
  for_rows(m, nt, [&](int64_t r0, int64_t r1, int k) {
    M* pwk = pw.empty() ? nullptr : pw.data() + k * n;
    M* pbk = pb.empty() ? nullptr : pb.data() + k * n;
    if (w) backward_rows<T, W, true>(rms, dy, x, mean, rstd, w, dx, pwk, pbk, n, r0, r1);
    else backward_rows<T, W, false>(rms, dy, x, mean, rstd, w, dx, pwk, pbk, n, r0, r1);
  });
  auto total = [&](const std::vector<M>& p, const Tensor& out) {
    W* o = static_cast<W*>(out.data_ptr());
    for (int64_t i = 0; i < n; ++i) {
      M s = 0;
      for (int k = 0; k < nt; ++k) s += p[size_t(k * n + i)];
      o[i] = W(s);
    }
  };
  if (dwt.defined()) total(pw, dwt);
  if (dbt.defined()) total(pb, dbt);
}

// body<T, W>() for x's dtype T and the parameters' W (T, or float for a 16-bit x with float32
// parameters).
template <class F>
void dispatch(const Tensor& x, const Tensor& param, const char* op, F body) {
  WICK_DISPATCH_FLOATING(x.dtype(), op, [&]<class T>() {
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      if (param.defined() && param.dtype() == kFloat32) return body.template operator()<T, float>();
    }
    body.template operator()<T, T>();
  });
}

}  // namespace

void norm_forward(bool rms, const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x,
                  const Tensor& weight, const Tensor& bias, double eps) {
  const char* op = rms ? "rms_norm" : "layer_norm";
  dispatch(x, weight.defined() ? weight : bias, op,
           [&]<class T, class W>() { forward_typed<T, W>(rms, y, mean, rstd, x, weight, bias, eps); });
}

void norm_backward(bool rms, const Tensor& dx, const Tensor& dweight, const Tensor& dbias, const Tensor& dy,
                   const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& weight) {
  const char* op = rms ? "rms_norm_backward" : "layer_norm_backward";
  const Tensor& param = weight.defined() ? weight : dweight.defined() ? dweight : dbias;
  dispatch(x, param, op, [&]<class T, class W>() {
    backward_typed<T, W>(rms, dx, dweight, dbias, dy, x, mean, rstd, weight);
  });
}

}  // namespace wick::detail::cpu
