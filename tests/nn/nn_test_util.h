// Helpers shared by the nn and optim tests.
#pragma once

#include <functional>
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

}  // namespace wick::testing
