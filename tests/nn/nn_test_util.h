// Helpers shared by the nn and optim tests.
#pragma once

#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "wick/wick.h"

namespace wick::testing {

inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Whether f raises a wick::Error whose message starts "[op] ".
inline bool names(const std::function<void()>& f, const std::string& op) {
  return error_of(f).rfind("[" + op + "] ", 0) == 0;
}

// m as PyTorch's print(m) shows it.
inline std::string repr(const nn::Module& m) {
  std::ostringstream os;
  os << m;
  return os.str();
}

// Elementwise |got - want| <= atol + rtol |want| (both read as double on the host).
inline void expect_close(const Tensor& got, const Tensor& want, double atol = 1e-5, double rtol = 1e-5,
                         const std::string& what = "") {
  ASSERT_EQ(got.sizes().vec(), want.sizes().vec()) << what;
  auto g = got.detach().cpu().to_vector<double>(), w = want.detach().cpu().to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i)
    EXPECT_NEAR(g[i], w[i], atol + rtol * std::abs(w[i])) << what << " element " << i;
}

inline void expect_close(const Tensor& got, const std::vector<double>& want, double atol = 1e-5,
                         const std::string& what = "") {
  auto g = got.detach().cpu().to_vector<double>();
  ASSERT_EQ(g.size(), want.size()) << what;
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], want[i], atol) << what << " element " << i;
}

// The fixture of the suites that run each test on the CPU and on CUDA (skipped without a
// device): the generator is seeded with Seed before each test. Instantiate a suite with
// WICK_INSTANTIATE_ON_DEVICES.
template <uint64_t Seed>
class OnEachDevice : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override {
    if (GetParam().is_cuda() && !cuda::is_available()) GTEST_SKIP() << "no CUDA device";
    manual_seed(Seed);
  }
  Device dev() const { return GetParam(); }
};

inline std::string device_test_name(const ::testing::TestParamInfo<Device>& info) {
  return info.param.is_cpu() ? "cpu" : "cuda";
}

}  // namespace wick::testing

// The suite's tests as Devices/<suite>.<test>/cpu and .../cuda.
#define WICK_INSTANTIATE_ON_DEVICES(suite)                                                               \
  INSTANTIATE_TEST_SUITE_P(                                                                              \
      Devices, suite, ::testing::Values(::wick::Device(::wick::kCPU), ::wick::Device(::wick::kCUDA, 0)), \
      ::wick::testing::device_test_name)
