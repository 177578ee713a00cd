// ZeroRedundancyOptimizer without a process group (its runs over many processes are in
// tests/distributed/zero_test.cpp).
#include <string>

#include <gtest/gtest.h>

#include "wick/distributed.h"
#include "wick/distributed/zero.h"
#include "wick/optim.h"
#include "wick/wick.h"

using namespace wick;

TEST(ZeroRedundancyOptimizer, NeedsAProcessGroup) {
  ASSERT_FALSE(distributed::is_initialized());
  Tensor p = zeros({3}, kFloat64).requires_grad_();
  try {
    distributed::optim::ZeroRedundancyOptimizer opt(
        {p}, distributed::optim::optimizer_class<optim::AdamW>(optim::AdamWOptions(1e-3)));
    FAIL() << "no error";
  } catch (const DistributedError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[ZeroRedundancyOptimizer] Default process group has not been initialized", 0),
              0u)
        << e.what();
  }
}
