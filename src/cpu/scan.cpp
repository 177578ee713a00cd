// Cumulative sums and products on the CPU along the middle dim of contiguous [outer, n, inner]
// tensors (KernelTable::scan). inner == 1: each row is one sequential pass; inner > 1: a row
// of inner adjacent columns is carried at once, so the innermost loop walks contiguous memory.
// Outer slices are split among threads. 16-bit floats accumulate in float, float32 and float64
// in double, integers in their own dtype (wrapping as PyTorch's do).
#include <algorithm>
#include <vector>

#include <omp.h>

#include "core/op_math.h"
#include "cpu/kernels.h"
#include "cpu/loops.h"

namespace wick::detail::cpu {

namespace {

template <class T>
using scan_acc_t = std::conditional_t<std::is_floating_point_v<T> || std::is_same_v<T, Half> ||
                                          std::is_same_v<T, BFloat16>,
                                      std::conditional_t<sizeof(T) == 2, float, double>, T>;

template <class T>
void scan_typed(ScanOp op, const Tensor& out, const Tensor& in, bool reverse) {
  using M = scan_acc_t<T>;
  const int64_t outer = in.size(0), n = in.size(1), inner = in.size(2);
  const T* x = static_cast<const T*>(in.data_ptr());
  T* y = static_cast<T*>(out.data_ptr());
  const bool prod = op == ScanOp::Prod;
  const M identity = prod ? M(1) : M(0);
  const int nt = threads_for(outer * n * inner, outer);
#pragma omp parallel num_threads(nt) if (nt > 1)
  {
    std::vector<M> acc(static_cast<size_t>(inner));
#pragma omp for schedule(static)
    for (int64_t o = 0; o < outer; ++o) {
      const T* xo = x + o * n * inner;
      T* yo = y + o * n * inner;
      std::fill(acc.begin(), acc.end(), identity);
      for (int64_t s = 0; s < n; ++s) {
        const int64_t i = reverse ? n - 1 - s : s;
        const T* xr = xo + i * inner;
        T* yr = yo + i * inner;
        if (prod) {
          for (int64_t j = 0; j < inner; ++j) {
            acc[size_t(j)] = M(acc[size_t(j)] * M(xr[j]));
            yr[j] = T(acc[size_t(j)]);
          }
        } else {
          for (int64_t j = 0; j < inner; ++j) {
            acc[size_t(j)] = M(acc[size_t(j)] + M(xr[j]));
            yr[j] = T(acc[size_t(j)]);
          }
        }
      }
    }
  }
}

}  // namespace

void scan(ScanOp op, const Tensor& out, const Tensor& in, bool reverse) {
  if (in.numel() == 0) return;
  const char* name = op == ScanOp::Prod ? "cumprod" : "cumsum";
  WICK_DISPATCH_NUMERIC(in.dtype(), name, [&]<class T>() { scan_typed<T>(op, out, in, reverse); });
}

}  // namespace wick::detail::cpu
