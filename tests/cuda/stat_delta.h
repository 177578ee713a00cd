// memory_stats() relative to a starting point, for the CUDA allocator's tests.
#pragma once

#include <map>
#include <string>

#include <gtest/gtest.h>

#include "wick/wick.h"

namespace wick::test {

class StatDelta {
 public:
  StatDelta() : base_(cuda::memory_stats()) {}
  int64_t operator()(const std::string& key) const {
    auto now = cuda::memory_stats();
    EXPECT_TRUE(now.count(key)) << key;
    return now[key] - base_.at(key);
  }

 private:
  std::map<std::string, int64_t> base_;
};

}  // namespace wick::test
