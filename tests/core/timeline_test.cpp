// The step's timeline (src/core/timeline.h) with host marks: off unless WICK_TIMELINE=1 when a
// timeline is made, nothing recorded before begin(), marks in the order made with host times
// that do not go back, begin() dropping earlier marks, take() returning them and stopping.
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/timeline.h"

namespace wick {
namespace {

std::vector<std::string> phases(const std::vector<detail::TimelineMark>& marks) {
  std::vector<std::string> out;
  for (const auto& m : marks) out.push_back(m.phase);
  return out;
}

TEST(Timeline, OffWithoutTheVariable) {
  unsetenv("WICK_TIMELINE");
  detail::Timeline t;
  EXPECT_FALSE(t.enabled());
  t.begin();
  t.mark("a");
  EXPECT_TRUE(t.marks().empty());
  setenv("WICK_TIMELINE", "0", 1);
  detail::Timeline zero;
  EXPECT_FALSE(zero.enabled());
  unsetenv("WICK_TIMELINE");
}

TEST(Timeline, HostMarksBetweenBeginAndTake) {
  setenv("WICK_TIMELINE", "1", 1);
  detail::Timeline t;
  unsetenv("WICK_TIMELINE");  // read when the timeline was made
  ASSERT_TRUE(t.enabled());
  t.mark("before.begin");
  EXPECT_TRUE(t.marks().empty());
  t.begin();
  t.mark("forward.begin");
  t.mark("bucket[0].launch");
  t.mark("backward.end");
  auto marks = t.marks();
  EXPECT_EQ(phases(marks), (std::vector<std::string>{"forward.begin", "bucket[0].launch", "backward.end"}));
  for (size_t i = 0; i < marks.size(); ++i) {
    EXPECT_EQ(marks[i].device, -1);
    EXPECT_EQ(marks[i].gpu_ms, 0.0);
    EXPECT_GE(marks[i].host_ms, 0.0);
    if (i > 0) {
      EXPECT_LE(marks[i - 1].host_ms, marks[i].host_ms);
    }
  }
  EXPECT_EQ(phases(t.marks()), phases(marks));  // marks() keeps them
  t.begin();  // a new step drops the last one's
  t.mark("next");
  EXPECT_EQ(phases(t.take()), (std::vector<std::string>{"next"}));
  t.mark("after.take");  // nothing until the next begin()
  EXPECT_TRUE(t.marks().empty());
}

}  // namespace
}  // namespace wick
