// Helpers shared by the collective tests of every backend (wick_dist_tests).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "wick/distributed.h"
#include "wick/error.h"

namespace wick::dist_test {

// The backend the tests run on: WICK_TEST_BACKEND ("gloo", "mpi" or "nccl"), "mpi" by default.
inline std::string test_backend() {
  const char* b = std::getenv("WICK_TEST_BACKEND");
  return b && *b ? b : "mpi";
}

// The reduction op over ranks 0..w-1 of the value r + 1 + i + shift (rank r's element i).
inline double expected(distributed::ReduceOp op, int w, int64_t i, double shift = 0) {
  using distributed::ReduceOp;
  double acc = op == ReduceOp::PRODUCT ? 1 : op == ReduceOp::MIN ? 1e300 : op == ReduceOp::MAX ? -1e300 : 0;
  for (int r = 0; r < w; ++r) {
    double v = r + 1 + double(i) + shift;
    if (op == ReduceOp::SUM || op == ReduceOp::AVG) acc += v;
    if (op == ReduceOp::PRODUCT) acc *= v;
    if (op == ReduceOp::MIN) acc = std::min(acc, v);
    if (op == ReduceOp::MAX) acc = std::max(acc, v);
  }
  return op == ReduceOp::AVG ? acc / w : acc;
}

// f() must throw a wick::Error whose message starts with prefix.
template <class F>
void expect_error_prefix(F f, const std::string& prefix) {
  try {
    f();
    ADD_FAILURE() << "no error; expected " << prefix;
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind(prefix, 0), 0u) << e.what();
  }
}

}  // namespace wick::dist_test
