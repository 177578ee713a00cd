// The loss the optimizer tests step on, sum(c * p^2) from p = kP0, with its gradient 2 c p
// written out in float64 for the hand-computed update rules.
#pragma once

#include <vector>

#include <gtest/gtest.h>

namespace wick::testing {

inline const std::vector<double> kP0{0.5, -1.5, 2.0, 0.25};
inline const std::vector<double> kC{1.0, 0.5, 2.0, 3.0};

inline std::vector<double> grad_of(const std::vector<double>& p) {
  std::vector<double> g(p.size());
  for (size_t i = 0; i < p.size(); ++i) g[i] = 2 * kC[i] * p[i];
  return g;
}

inline void expect_vec(const std::vector<double>& got, const std::vector<double>& want, double tol = 1e-12) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

}  // namespace wick::testing
