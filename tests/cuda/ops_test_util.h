// Helpers of the CUDA op tests (ops_*_test.cpp): random CPU tensors of any dtype, layouts
// that move the data pointer off 16-byte alignment, and comparisons of a CUDA result with a
// CPU reference, element by element or by relative norm.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "wick/wick.h"

namespace wick::test {

// Uniform values in [lo, hi) (integers: rounded down), made on the CPU in float64 and cast.
inline Tensor random_cpu(IntArrayRef sizes, Dtype t, std::mt19937& rng, double lo = -1, double hi = 1) {
  int64_t n = 1;
  for (auto s : sizes) n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  std::uniform_real_distribution<double> u(lo, hi);
  for (auto& x : v) x = is_integral(t, true) ? std::floor(u(rng)) : u(rng);
  return from_blob(v.data(), sizes, kFloat64).clone().to(t);
}

// The same values on the device, starting `shift` elements into a larger buffer (shift 1: the
// pointer is off 16-byte alignment, which sends kernels down their unaligned paths).
inline Tensor on_cuda(const Tensor& cpu, int64_t shift = 0) {
  if (shift == 0) return cpu.to("cuda");
  auto flat = zeros({cpu.numel() + shift}, TensorOptions(cpu.dtype()).device("cuda"));
  auto view = flat.narrow(0, shift, cpu.numel()).view(cpu.sizes());
  view.copy_(cpu);
  return view;
}

inline std::vector<double> values(const Tensor& t) { return t.cpu().to(kFloat64).contiguous().to_vector<double>(); }

// |got - want| <= tol * max(1, |want|) element by element; nan must match nan.
inline void expect_close(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  ASSERT_EQ(got.sizes().vec(), want.sizes().vec()) << what;
  const auto g = values(got), w = values(want);
  int failures = 0;
  for (size_t i = 0; i < g.size() && failures < 5; ++i) {
    bool ok;
    if (std::isnan(w[i])) ok = std::isnan(g[i]);
    else if (std::isinf(w[i])) ok = g[i] == w[i];
    else ok = std::abs(g[i] - w[i]) <= tol * std::max(1.0, std::abs(w[i]));
    if (!ok) {
      ++failures;
      ADD_FAILURE() << what << " at " << i << ": got " << g[i] << ", want " << w[i];
    }
  }
}

// Exact equality of values (and dtype, shape).
inline void expect_equal(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  expect_close(got, want, 0, what);
}

// ||got - want|| / ||want|| in float64.
inline double rel_error(const Tensor& got, const Tensor& want) {
  const auto g = values(got), w = values(want);
  double num = 0, den = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    num += (g[i] - w[i]) * (g[i] - w[i]);
    den += w[i] * w[i];
  }
  return std::sqrt(num / std::max(den, 1e-300));
}

inline std::string dt(Dtype t) { return std::string(name(t)); }

inline std::string str(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

}  // namespace wick::test
