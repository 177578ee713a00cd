// The float32 matmul precision setting and the CPU thread count (include/wick/backends.h).
// They live in core, not in src/cuda or src/cpu, so that every build has the same API (the CPU
// GEMM ignores the precision, as PyTorch's does).
#include "core/backend_settings.h"
#include "wick/backends.h"
#include "wick/cuda.h"

#include <atomic>
#include <string>
#include <cstdlib>

#include <omp.h>

#include "wick/error.h"

namespace wick {

bool backends::cudnn::is_available() {
#ifdef WICK_HAVE_CUDNN
  return true;
#else
  return false;
#endif
}

// Here rather than in src/cuda or src/no_cuda: one definition for both builds.
bool cuda::cudnn_is_available() { return cuda::is_available() && backends::cudnn::is_available(); }

namespace {
std::atomic<int> g_level{0};
constexpr const char* kNames[] = {"highest", "high", "medium"};
}  // namespace

void set_float32_matmul_precision(std::string_view precision) {
  for (int i = 0; i < 3; ++i) {
    if (precision == kNames[i]) {
      g_level.store(i, std::memory_order_relaxed);
      return;
    }
  }
  detail::raise<ValueError>("set_float32_matmul_precision", "Invalid precision '", std::string(precision),
                            "'; expected one of 'highest', 'high', 'medium'");
}

std::string get_float32_matmul_precision() { return kNames[g_level.load(std::memory_order_relaxed)]; }

// OpenBLAS's own setting, where the BLAS linked is OpenBLAS: a weak reference, null when the
// symbol is absent, so that another BLAS links too.
extern "C" void openblas_set_num_threads(int) __attribute__((weak));

namespace {
// 0 until set_num_threads is called: OpenMP's default then applies. The kernels read this
// global rather than OpenMP's per-thread setting, so that a count set on one thread holds for
// ops run from any other (a data-loading thread, say), as PyTorch's setting does.
std::atomic<int> g_threads{0};
}  // namespace

void set_num_threads(int n) {
  WICK_CHECK(n > 0, ValueError, "set_num_threads", "Expected a positive number of threads, but got ", n);
  g_threads.store(n, std::memory_order_relaxed);
  omp_set_num_threads(n);  // the calling thread's own OpenMP regions (user code) follow it too
  if (openblas_set_num_threads) openblas_set_num_threads(n);
}

int get_num_threads() { return detail::cpu_num_threads(); }

namespace detail {
int float32_matmul_precision_level() { return g_level.load(std::memory_order_relaxed); }

bool new_cuda_kernels() {
  static const bool on = [] {
    const char* v = std::getenv("WICK_NEW_CUDA_KERNELS");
    return v && std::string(v) == "1";
  }();
  return on;
}

int cpu_num_threads() {
  const int n = g_threads.load(std::memory_order_relaxed);
  return n > 0 ? n : omp_get_max_threads();
}
}  // namespace detail

}  // namespace wick
