// The CPU's sort, scatter and multinomial entries (core/kernel_table.h).
//
// sort: per row, an index array ordered by a comparator that puts NaN above everything and
// breaks ties by index, so std::sort (k == n) and std::partial_sort (topk) give the indices a
// stable sort gives; rows run on OpenMP threads. scatter: one pass checks the indices, a second
// writes or reduces, serially (repeated indices reduce in index order). multinomial: a running double sum
// per row and a binary search per sample, the arithmetic the CUDA kernel does, in its order.
#include <algorithm>
#include <numeric>
#include <type_traits>
#include <vector>

#include "core/op_math.h"
#include "cpu/kernels.h"
#include "cpu/loops.h"

namespace wick::detail::cpu {

namespace {

template <class T>
void sort_rows(const Tensor& indices, const Tensor& in, int64_t k, bool descending) {
  using M = opmath_t<T>;
  const int64_t rows = indices.size(0), n = in.size(1);
  const T* x = static_cast<const T*>(in.data_ptr());
  int64_t* out = static_cast<int64_t*>(indices.data_ptr());
  const int threads = threads_for(rows * n, rows);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const T* v = x + r * n;
    std::vector<int64_t> idx(static_cast<size_t>(n));
    std::iota(idx.begin(), idx.end(), int64_t(0));
    auto before = [v, descending](int64_t a, int64_t b) {
      const M va = M(v[a]), vb = M(v[b]);
      if constexpr (std::is_floating_point_v<M>) {
        const bool na = va != va, nb = vb != vb;
        if (na || nb) return na == nb ? a < b : (descending ? na : nb);
      }
      if (va != vb) return descending ? vb < va : va < vb;
      return a < b;
    };
    if (k == n) std::sort(idx.begin(), idx.end(), before);
    else std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), before);
    std::copy(idx.begin(), idx.begin() + k, out + r * k);
  }
}

// Calls f(out_offset, src_offset, index_offset) in elements for every element of index's shape.
template <class F>
void for_each_element(const Tensor& out, const Tensor& src, const Tensor& index, F&& f) {
  const int64_t nd = index.dim(), n = index.numel();
  if (n == 0) return;
  const IntArrayRef sz = index.sizes(), so = out.strides(), ss = src.strides(), si = index.strides();
  const int64_t inner = sz[size_t(nd - 1)];
  DimVector c(size_t(nd), 0);
  for (int64_t done = 0; done < n; done += inner) {
    int64_t po = 0, ps = 0, pi = 0;
    for (int64_t d = 0; d + 1 < nd; ++d) {
      po += c[size_t(d)] * so[size_t(d)];
      ps += c[size_t(d)] * ss[size_t(d)];
      pi += c[size_t(d)] * si[size_t(d)];
    }
    const int64_t to = so[size_t(nd - 1)], ts = ss[size_t(nd - 1)], ti = si[size_t(nd - 1)];
    for (int64_t j = 0; j < inner; ++j) f(po + j * to, ps + j * ts, pi + j * ti);
    for (int64_t d = nd - 2; d >= 0; --d) {
      if (++c[size_t(d)] < sz[size_t(d)]) break;
      c[size_t(d)] = 0;
    }
  }
}

// v reduced into dst by sop (NaN propagates through max and min, as PyTorch's amax/amin).
template <class T>
inline T reduce_one(ScatterOp sop, T dst, T v) {
  using M = opmath_t<T>;
  if constexpr (std::is_same_v<T, bool>) {
    switch (sop) {
      case ScatterOp::Add:
      case ScatterOp::Max: return dst || v;
      case ScatterOp::Prod:
      case ScatterOp::Min: return dst && v;
      default: return v;
    }
  } else {
    const M a = M(dst), b = M(v);
    switch (sop) {
      case ScatterOp::Add: return T(a + b);
      case ScatterOp::Prod: return T(a * b);
      case ScatterOp::Max:
        if constexpr (std::is_floating_point_v<M>)
          if (a != a || b != b) return a != a ? dst : v;
        return b > a ? v : dst;
      case ScatterOp::Min:
        if constexpr (std::is_floating_point_v<M>)
          if (a != a || b != b) return a != a ? dst : v;
        return b < a ? v : dst;
      default: return v;
    }
  }
}

template <class T, class I>
void scatter_typed(const Tensor& out, const Tensor& src, const Tensor& index, int64_t dim_stride, int64_t size,
                   ScatterOp sop, const char* op) {
  const I* ix = static_cast<const I*>(index.data_ptr());
  bool bad = false;
  int64_t bad_value = 0;
  for_each_element(out, src, index, [&](int64_t, int64_t, int64_t pi) {
    const int64_t v = int64_t(ix[pi]);
    if (!bad && (v < 0 || v >= size)) {
      bad = true;
      bad_value = v;
    }
  });
  WICK_CHECK(!bad, IndexError, op, "index ", bad_value, " is out of bounds for dimension with size ", size);
  T* o = static_cast<T*>(out.data_ptr());
  const T* s = static_cast<const T*>(src.data_ptr());
  if (sop == ScatterOp::Write) {
    for_each_element(out, src, index, [&](int64_t po, int64_t ps, int64_t pi) {
      o[po + int64_t(ix[pi]) * dim_stride] = s[ps];
    });
  } else {
    for_each_element(out, src, index, [&](int64_t po, int64_t ps, int64_t pi) {
      T& dst = o[po + int64_t(ix[pi]) * dim_stride];
      dst = reduce_one<T>(sop, dst, s[ps]);
    });
  }
}

template <class T>
void multinomial_typed(const Tensor& out, const Tensor& probs, const Tensor& uniforms) {
  const int64_t rows = probs.size(0), n = probs.size(1), s = out.size(1);
  const T* p = static_cast<const T*>(probs.data_ptr());
  const double* u = static_cast<const double*>(uniforms.data_ptr());
  int64_t* o = static_cast<int64_t*>(out.data_ptr());
  std::vector<double> cdf(static_cast<size_t>(n));
  for (int64_t r = 0; r < rows; ++r) {
    double acc = 0;
    int64_t last = 0;
    for (int64_t c = 0; c < n; ++c) {
      const double w = double(opmath_t<T>(p[r * n + c]));
      acc += w;
      cdf[size_t(c)] = acc;
      if (w > 0) last = c;
    }
    for (int64_t j = 0; j < s; ++j) {
      const double target = u[r * s + j] * acc;
      const int64_t c = std::upper_bound(cdf.begin(), cdf.end(), target) - cdf.begin();
      o[r * s + j] = c < n ? c : last;
    }
  }
}

}  // namespace

void sort(const Tensor& indices, const Tensor& in, int64_t k, bool descending) {
  if (indices.numel() == 0) return;
  WICK_DISPATCH_ALL(in.dtype(), "sort", [&]<class T>() { sort_rows<T>(indices, in, k, descending); });
}

void scatter(const Tensor& out, const Tensor& src, const Tensor& index, int64_t dim_stride, int64_t size,
             ScatterOp sop, const char* op) {
  if (index.numel() == 0) return;
  WICK_DISPATCH_ALL(out.dtype(), op, [&]<class T>() {
    if (index.dtype() == kInt32) scatter_typed<T, int32_t>(out, src, index, dim_stride, size, sop, op);
    else scatter_typed<T, int64_t>(out, src, index, dim_stride, size, sop, op);
  });
}

void multinomial(const Tensor& out, const Tensor& probs, const Tensor& uniforms) {
  if (out.numel() == 0) return;
  WICK_DISPATCH_FLOATING(probs.dtype(), "multinomial",
                         [&]<class T>() { multinomial_typed<T>(out, probs, uniforms); });
}

}  // namespace wick::detail::cpu
