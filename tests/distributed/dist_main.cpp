// main() of wick_dist_tests: every rank runs the same tests in the same order inside one
// default "mpi" process group (mpirun -np N, wick-launch, or a single process).
// WICK_TEST_DIST_TIMEOUT_MS sets the group's timeout (60 s by default).
#include <cstdlib>

#include <gtest/gtest.h>

#include "wick/distributed.h"

namespace {

class DistEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    wick::distributed::InitOptions o;
    const char* ms = std::getenv("WICK_TEST_DIST_TIMEOUT_MS");
    o.timeout = std::chrono::milliseconds(ms ? std::atol(ms) : 60000);
    wick::distributed::init_process_group("mpi", o);
  }
  void TearDown() override { wick::distributed::destroy_process_group(); }
};

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new DistEnvironment);
  return RUN_ALL_TESTS();
}
