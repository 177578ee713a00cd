// Matrix products on the CPU: float32/float64 through OpenBLAS's cblas_?gemm, one call per
// batch item; float16/bfloat16 widened to float32 for cblas_sgemm; other dtypes through a blocked loop that
// accumulates in opmath (float for 16-bit floats), as PyTorch's CPU fallback does.
#include <vector>

#include <cblas.h>

#include "cpu/cpu_kernels.h"
#include "cpu/loops.h"

namespace wick::detail::cpu {

namespace {

template <class T>
void naive_gemm(const GemmArgs& g) {
  using M = std::conditional_t<std::is_integral_v<T>, T, opmath_t<T>>;
  const T* A = static_cast<const T*>(g.a.data_ptr());
  const T* B = static_cast<const T*>(g.b.data_ptr());
  T* C = static_cast<T*>(g.c.data_ptr());
  const M alpha = M(g.alpha), beta = M(g.beta);
#pragma omp parallel for collapse(2) if (g.batch * g.m * g.n * g.k > kParallelGrain)
  for (int64_t bi = 0; bi < g.batch; ++bi)
    for (int64_t i = 0; i < g.m; ++i) {
      const T* a = A + bi * g.stride_a;
      const T* b = B + bi * g.stride_b;
      T* c = C + bi * g.stride_c + i * g.ldc;
      for (int64_t j = 0; j < g.n; ++j) {
        M acc = 0;
        for (int64_t p = 0; p < g.k; ++p) {
          M av = M(g.trans_a ? a[p * g.lda + i] : a[i * g.lda + p]);
          M bv = M(g.trans_b ? b[j * g.ldb + p] : b[p * g.ldb + j]);
          acc += av * bv;
        }
        c[j] = T(beta == M(0) ? alpha * acc : alpha * acc + beta * M(c[j]));
      }
    }
}

template <class T, class F>
void blas_gemm(const GemmArgs& g, F gemm) {
  const T* A = static_cast<const T*>(g.a.data_ptr());
  const T* B = static_cast<const T*>(g.b.data_ptr());
  T* C = static_cast<T*>(g.c.data_ptr());
  for (int64_t bi = 0; bi < g.batch; ++bi)
    gemm(CblasRowMajor, g.trans_a ? CblasTrans : CblasNoTrans, g.trans_b ? CblasTrans : CblasNoTrans,
         blasint(g.m), blasint(g.n), blasint(g.k), T(g.alpha), A + bi * g.stride_a, blasint(g.lda),
         B + bi * g.stride_b, blasint(g.ldb), T(g.beta), C + bi * g.stride_c, blasint(g.ldc));
}

// 16-bit floats: each batch item's operands widened to contiguous float32 matrices, one
// cblas_sgemm, the result rounded once. Same arithmetic as the loop above (products and sums in
// float), at BLAS speed: autocast's float16/bfloat16 matmuls run here.
template <class T>
void widened_gemm(const GemmArgs& g) {
  const T* A = static_cast<const T*>(g.a.data_ptr());
  const T* B = static_cast<const T*>(g.b.data_ptr());
  T* C = static_cast<T*>(g.c.data_ptr());
  std::vector<float> a(size_t(g.m * g.k)), b(size_t(g.k * g.n)), c(size_t(g.m * g.n));
  const bool big = g.m * g.n * g.k > kParallelGrain;
  for (int64_t bi = 0; bi < g.batch; ++bi) {
    const T* ab = A + bi * g.stride_a;
    const T* bb = B + bi * g.stride_b;
    T* cb = C + bi * g.stride_c;
#pragma omp parallel for if (big)
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t p = 0; p < g.k; ++p)
        a[size_t(i * g.k + p)] = float(g.trans_a ? ab[p * g.lda + i] : ab[i * g.lda + p]);
#pragma omp parallel for if (big)
    for (int64_t p = 0; p < g.k; ++p)
      for (int64_t j = 0; j < g.n; ++j)
        b[size_t(p * g.n + j)] = float(g.trans_b ? bb[j * g.ldb + p] : bb[p * g.ldb + j]);
    const bool beta0 = g.beta == 0;
    if (!beta0)
      for (int64_t i = 0; i < g.m; ++i)
        for (int64_t j = 0; j < g.n; ++j) c[size_t(i * g.n + j)] = float(cb[i * g.ldc + j]);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, blasint(g.m), blasint(g.n), blasint(g.k),
                float(g.alpha), a.data(), blasint(std::max<int64_t>(g.k, 1)), b.data(),
                blasint(std::max<int64_t>(g.n, 1)), beta0 ? 0.0f : float(g.beta), c.data(),
                blasint(std::max<int64_t>(g.n, 1)));
#pragma omp parallel for if (big)
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) cb[i * g.ldc + j] = T(c[size_t(i * g.n + j)]);
  }
}

}  // namespace

void cpu_gemm(const GemmArgs& g) {
  if (g.m == 0 || g.n == 0 || g.batch == 0) return;
  switch (g.c.dtype()) {
    case kFloat32: return blas_gemm<float>(g, cblas_sgemm);
    case kFloat64: return blas_gemm<double>(g, cblas_dgemm);
    case kFloat16:
      return g.k == 0 ? naive_gemm<Half>(g) : widened_gemm<Half>(g);
    case kBFloat16:
      return g.k == 0 ? naive_gemm<BFloat16>(g) : widened_gemm<BFloat16>(g);
    case kBool: raise<TypeError>("matmul", "\"addmm\" not implemented for 'bool'");
    default:
      WICK_DISPATCH_NUMERIC(g.c.dtype(), "matmul", [&]<class T>() { naive_gemm<T>(g); });
  }
}

}  // namespace wick::detail::cpu
