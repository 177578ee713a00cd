// Matrix products on the CPU. float32 through the GEMM that WICK_CPU_BLAS chose at configure
// time (cmake/WickDependencies.cmake; docs/design.md, "CPU GEMM"): oneDNN's dnnl_sgemm (the
// default), or cblas_sgemm of OpenBLAS (OpenMP or pthread build) or BLIS; float64 through
// cblas_dgemm of OpenBLAS or BLIS. float16/bfloat16 are widened to float32 for the same sgemm;
// other dtypes go through a blocked loop that accumulates in opmath (float for 16-bit floats), as
// PyTorch's CPU fallback does. Batches of small products run one product per OpenMP thread.
#include <atomic>
#include <vector>

#include <omp.h>

#if defined(WICK_CPU_BLAS_BLIS)
#include <blis.h>
#else
#include <cblas.h>
#endif
#if defined(WICK_CPU_BLAS_DNNL)
#include <oneapi/dnnl/dnnl.h>
#endif

#include "cpu/kernels.h"
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

#if defined(WICK_CPU_BLAS_BLIS)
using blas_int = f77_int;
#else
using blas_int = blasint;
#endif

// Whether the library runs one thread when called inside an OpenMP parallel region (its own
// threads are OpenMP's, and nested regions are inactive), so that splitting a batch over
// OpenMP threads gives one GEMM per thread. The pthread build of OpenBLAS has a thread pool of
// its own; it is called from one thread at a time.
#if defined(WICK_CPU_BLAS_OPENBLAS_PTHREAD)
constexpr bool kSplitBatch = false;
#else
constexpr bool kSplitBatch = true;
#endif

// The library's thread count follows OpenMP's (OMP_NUM_THREADS or, unset, one per CPU), the
// count wick's own kernels use. OpenBLAS's OpenMP build and oneDNN read omp_get_max_threads()
// at every call; BLIS starts with one thread unless told, and OpenBLAS's pthread build counts
// the CPUs itself: both are set once, here.
void init_threads() {
#if defined(WICK_CPU_BLAS_BLIS) || defined(WICK_CPU_BLAS_OPENBLAS_PTHREAD)
  static const bool once = [] {
#if defined(WICK_CPU_BLAS_BLIS)
    bli_thread_set_num_threads(omp_get_max_threads());
#else
    openblas_set_num_threads(omp_get_max_threads());
#endif
    return true;
  }();
  (void)once;
#endif
}

// One row-major product C = alpha op(A) op(B) + beta C; false where the library refused it.
bool gemm1(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
#if defined(WICK_CPU_BLAS_DNNL)
  return dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) ==
         dnnl_success;
#else
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, blas_int(m),
              blas_int(n), blas_int(k), alpha, a, blas_int(lda), b, blas_int(ldb), beta, c, blas_int(ldc));
  return true;
#endif
}

bool gemm1(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
           const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, blas_int(m),
              blas_int(n), blas_int(k), alpha, a, blas_int(lda), b, blas_int(ldb), beta, c, blas_int(ldc));
  return true;
}

// A batch item's product is small enough (in multiply-adds) that one thread per item beats
// every thread on each item: below this the library's threads mostly wait for each other.
constexpr int64_t kSmallItem = int64_t(1) << 21;

template <class T>
void blas_gemm(const GemmArgs& g) {
  const T* A = static_cast<const T*>(g.a.data_ptr());
  const T* B = static_cast<const T*>(g.b.data_ptr());
  T* C = static_cast<T*>(g.c.data_ptr());
  init_threads();
  auto item = [&](int64_t bi) {
    T* c = C + bi * g.stride_c;
    if (g.k == 0) {  // op(A) op(B) is zeros: C = beta C (beta 0 writes zeros, as PyTorch does)
      for (int64_t i = 0; i < g.m; ++i)
        for (int64_t j = 0; j < g.n; ++j)
          c[i * g.ldc + j] = g.beta == 0 ? T(0) : T(g.beta) * c[i * g.ldc + j];
      return true;
    }
    return gemm1(g.trans_a, g.trans_b, g.m, g.n, g.k, T(g.alpha), A + bi * g.stride_a, g.lda,
                 B + bi * g.stride_b, g.ldb, T(g.beta), c, g.ldc);
  };
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  const int64_t macs = g.m * g.n * g.k;
  const bool split = kSplitBatch && g.batch > 1 && threads > 1 && g.stride_c != 0 &&
                     g.batch * macs > kParallelGrain && (g.batch >= threads || macs <= kSmallItem);
  std::atomic<bool> ok{true};
  if (split) {
#pragma omp parallel for schedule(static)
    for (int64_t bi = 0; bi < g.batch; ++bi)
      if (!item(bi)) ok = false;
  } else {
    for (int64_t bi = 0; bi < g.batch && ok; ++bi)
      if (!item(bi)) ok = false;
  }
  if (!ok)
    raise<Error>("matmul", "the CPU GEMM library refused a ", g.m, "x", g.k, " @ ", g.k, "x", g.n,
                 " product");
}

// 16-bit floats: each batch item's operands widened to contiguous float32 matrices, one
// float32 GEMM, the result rounded once. Same arithmetic as the loop above (products and sums in
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
    if (!gemm1(false, false, g.m, g.n, g.k, float(g.alpha), a.data(), std::max<int64_t>(g.k, 1), b.data(),
               std::max<int64_t>(g.n, 1), beta0 ? 0.0f : float(g.beta), c.data(), std::max<int64_t>(g.n, 1)))
      raise<Error>("matmul", "the CPU GEMM library refused a product");
#pragma omp parallel for if (big)
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) cb[i * g.ldc + j] = T(c[size_t(i * g.n + j)]);
  }
}

}  // namespace

void gemm(const GemmArgs& g) {
  if (g.m == 0 || g.n == 0 || g.batch == 0) return;
  switch (g.c.dtype()) {
    case kFloat32:
      return blas_gemm<float>(g);
    case kFloat64:
      return blas_gemm<double>(g);
    case kFloat16:
      return g.k == 0 ? naive_gemm<Half>(g) : widened_gemm<Half>(g);
    case kBFloat16:
      return g.k == 0 ? naive_gemm<BFloat16>(g) : widened_gemm<BFloat16>(g);
    case kBool:
      raise<TypeError>("matmul", "\"addmm\" not implemented for 'bool'");
    default:
      WICK_DISPATCH_NUMERIC(g.c.dtype(), "matmul", [&]<class T>() { naive_gemm<T>(g); });
  }
}

}  // namespace wick::detail::cpu
