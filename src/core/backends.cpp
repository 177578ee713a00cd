// The float32 matmul precision setting (include/wick/backends.h). It lives in core, not in
// src/cuda, so that a CPU-only build has the same API (the CPU GEMM ignores it, as PyTorch's).
#include "wick/backends.h"

#include <atomic>

#include "wick/error.h"

namespace wick {

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

namespace detail {
int float32_matmul_precision_level() { return g_level.load(std::memory_order_relaxed); }
}  // namespace detail

}  // namespace wick
