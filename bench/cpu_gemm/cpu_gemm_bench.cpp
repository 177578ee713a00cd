// Float32 GEMM throughput of one CPU BLAS, built against exactly one of them (run.sh compiles
// this file once per library):
//   -DBENCH_OPENBLAS  cblas_sgemm of OpenBLAS (its OpenMP or pthread build, by the include/lib path)
//   -DBENCH_BLIS      cblas_sgemm of BLIS (its OpenMP or pthread build)
//   -DBENCH_DNNL      dnnl_sgemm of oneDNN (row-major)
// Usage: cpu_gemm_bench NAME THREADS [quick]
//   THREADS 0 leaves the library's own default; N sets N threads (OpenMP and the library's own
//   setter). Prints what the library says about itself, then one tab-separated line per case:
//   "row NAME THREADS CASE GFLOP/s" (median of repetitions, each on the same operands).
// Cases: squares 64..4096; the MLP's Linear(784, 128) at batch 64, forward and both backward
// products; each after an OpenMP region of the program's own (a wick op before the GEMM); and
// 512 batch items of 64x64x64 called one after another, and split over OpenMP threads with
// one thread per GEMM.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include <omp.h>

#if defined(BENCH_OPENBLAS)
#include <cblas.h>
#elif defined(BENCH_BLIS)
#include <blis.h>
#elif defined(BENCH_DNNL)
#include <oneapi/dnnl/dnnl.h>
#else
#error "define one of BENCH_OPENBLAS, BENCH_BLIS, BENCH_DNNL"
#endif

namespace {

// Wall clock; with BENCH_CLOCK=cpu the process's CPU time instead, which on a machine shared
// with other work measures a one-thread kernel without the time others' processes took.
const bool cpu_clock = [] {
  const char* e = std::getenv("BENCH_CLOCK");
  return e && std::strcmp(e, "cpu") == 0;
}();
void sgemm(bool ta, bool tb, long m, long n, long k, const float* a, long lda, const float* b, long ldb,
           float* c, long ldc) {
#if defined(BENCH_DNNL)
  dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
#else
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, int(m), int(n),
              int(k), 1.0f, a, int(lda), b, int(ldb), 0.0f, c, int(ldc));
#endif
}

void set_threads(int n) {
  if (n <= 0) return;
  omp_set_num_threads(n);
#if defined(BENCH_OPENBLAS)
  openblas_set_num_threads(n);
#elif defined(BENCH_BLIS)
  bli_thread_set_num_threads(n);
#endif
}

void describe(const char* name) {
  std::printf("info\t%s\tomp_get_max_threads=%d", name, omp_get_max_threads());
#if defined(BENCH_OPENBLAS)
  std::printf(" openblas_get_num_threads=%d openblas_get_parallel=%d core=%s config=\"%s\"",
              openblas_get_num_threads(), openblas_get_parallel(), openblas_get_corename(),
              openblas_get_config());
#elif defined(BENCH_BLIS)
  std::printf(" bli_thread_get_num_threads=%ld arch=%s version=%s", long(bli_thread_get_num_threads()),
              bli_arch_string(bli_arch_query_id()), bli_info_get_version_str());
#elif defined(BENCH_DNNL)
  const dnnl_version_t* v = dnnl_version();
  std::printf(" version=%d.%d.%d cpu_runtime=%u isa=%d", v->major, v->minor, v->patch, v->cpu_runtime,
              int(dnnl_get_effective_cpu_isa()));
#endif
  std::printf("%s\n", cpu_clock ? " clock=cpu" : "");
}

double now_s() {
  if (cpu_clock) {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Median seconds of one call of f, after warm-up, over enough repetitions to fill about
// budget seconds (at least 3, at most 200).
template <class F>
double median_s(F&& f, double budget) {
  f();
  double t0 = now_s();
  f();
  const double one = std::max(now_s() - t0, 1e-7);
  const int reps = int(std::clamp(budget / one, 3.0, 200.0));
  std::vector<double> ts;
  for (int r = 0; r < reps; ++r) {
    t0 = now_s();
    f();
    ts.push_back(now_s() - t0);
  }
  std::sort(ts.begin(), ts.end());
  return ts[ts.size() / 2];
}

std::vector<float> random_matrix(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(gen);
  return v;
}

// A wick-sized elementwise op through OpenMP, as wick's CPU kernels run one (src/cpu/loops.h).
void omp_region(std::vector<float>& x) {
  const long n = long(x.size());
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; ++i) x[size_t(i)] = x[size_t(i)] * 0.5f + 1.0f;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s NAME THREADS [quick]\n", argv[0]);
    return 2;
  }
  const std::string name = argv[1];
  const int threads = std::atoi(argv[2]);
  const bool quick = argc > 3 && std::strcmp(argv[3], "quick") == 0;
  const double budget = quick ? 0.3 : 1.0;
  set_threads(threads);
  describe(name.c_str());

  struct Case {
    std::string label;
    long m, n, k;
    bool ta, tb, after_omp;
  };
  std::vector<Case> cases;
  for (long s : {64L, 128L, 256L, 512L, 1024L, 2048L, 4096L})
    cases.push_back({"square " + std::to_string(s), s, s, s, false, false, false});
  // Linear(784, 128), batch 64: y = x W^T; dx = dy W; dW = dy^T x.
  cases.push_back({"mlp fwd 64x784 @ (128x784)^T", 64, 128, 784, false, true, false});
  cases.push_back({"mlp dx 64x128 @ 128x784", 64, 784, 128, false, false, false});
  cases.push_back({"mlp dW (64x128)^T @ 64x784", 128, 784, 64, true, false, false});
  cases.push_back({"mlp fwd, after an omp region", 64, 128, 784, false, true, true});
  cases.push_back({"square 1024, after an omp region", 1024, 1024, 1024, false, false, true});

  std::vector<float> scratch(size_t(1) << 20, 1.0f);
  for (const Case& c : cases) {
    const long ar = c.ta ? c.k : c.m, ac = c.ta ? c.m : c.k;
    const long br = c.tb ? c.n : c.k, bc = c.tb ? c.k : c.n;
    auto a = random_matrix(size_t(ar * ac), 1), b = random_matrix(size_t(br * bc), 2);
    std::vector<float> out(size_t(c.m * c.n));
    double s;
    if (c.after_omp) {
      // Only the GEMM is timed, each right after a parallel region of the program's own.
      std::vector<double> ts;
      for (int r = 0; r < (quick ? 21 : 61); ++r) {
        omp_region(scratch);
        const double t0 = now_s();
        sgemm(c.ta, c.tb, c.m, c.n, c.k, a.data(), ac, b.data(), bc, out.data(), c.n);
        ts.push_back(now_s() - t0);
      }
      std::sort(ts.begin() + 1, ts.end());
      s = ts[1 + (ts.size() - 1) / 2];
    } else {
      s = median_s([&] { sgemm(c.ta, c.tb, c.m, c.n, c.k, a.data(), ac, b.data(), bc, out.data(), c.n); },
                   budget * (c.m * c.n * c.k >= (1L << 33) ? 3 : 1));
    }
    std::printf("row\t%s\t%d\t%s\t%.1f\n", name.c_str(), threads, c.label.c_str(),
                2.0 * c.m * c.n * c.k / s / 1e9);
    std::fflush(stdout);
  }

  // Many small items: one call after another (the library parallelizes each, if it can), and
  // the items split over OpenMP threads (the library runs single-threaded inside a parallel
  // region: OpenMP builds see omp_in_parallel(); others are set to one thread for it).
  const long batch = 512, d = 64;
  auto a = random_matrix(size_t(batch * d * d), 3), b = random_matrix(size_t(batch * d * d), 4);
  std::vector<float> out(size_t(batch * d * d));
  auto item = [&](long i) {
    sgemm(false, false, d, d, d, a.data() + i * d * d, d, b.data() + i * d * d, d, out.data() + i * d * d, d);
  };
  const double flops = 2.0 * batch * d * d * d;
  double s = median_s(
      [&] {
        for (long i = 0; i < batch; ++i) item(i);
      },
      budget);
  std::printf("row\t%s\t%d\tbatch 512 of 64^3, one call after another\t%.1f\n", name.c_str(), threads,
              flops / s / 1e9);
  const int outer = omp_get_max_threads();
#if defined(BENCH_OPENBLAS) || defined(BENCH_BLIS)
  // The pthread builds would start their own threads inside each OpenMP thread.
  set_threads(1);
  omp_set_num_threads(outer);
#endif
  s = median_s(
      [&] {
#pragma omp parallel for schedule(static)
        for (long i = 0; i < batch; ++i) item(i);
      },
      budget);
  std::printf("row\t%s\t%d\tbatch 512 of 64^3, over omp threads\t%.1f\n", name.c_str(), threads,
              flops / s / 1e9);
  return 0;
}
