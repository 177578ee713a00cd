// main() of wick_dist_tests: every rank runs the same tests in the same order inside one
// default process group (mpirun -np N, wick-launch, or a single process): "mpi", or the backend
// WICK_TEST_BACKEND names ("gloo": the same CPU tests without MPI; "nccl").
// WICK_TEST_DIST_TIMEOUT_MS sets the group's timeout (60 s by default).
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "dist_test_util.h"
#include "wick/distributed.h"

namespace {

// WICK_TEST_BACKEND=nccl runs the suites for CUDA tensors (names with "Nccl", and
// DistributedDataParallel's on the GPU), one GPU per process; mpi (the default) and gloo the
// others.
std::string backend() { return wick::dist_test::test_backend(); }

class DistEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    wick::distributed::InitOptions o;
    const char* ms = std::getenv("WICK_TEST_DIST_TIMEOUT_MS");
    o.timeout = std::chrono::milliseconds(ms ? std::atol(ms) : 60000);
    wick::distributed::init_process_group(backend(), o);
  }
  void TearDown() override { wick::distributed::destroy_process_group(); }
};

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (backend() == "nccl" && GTEST_FLAG_GET(filter) == "*")
    GTEST_FLAG_SET(filter, "*Nccl*:DistributedDataParallel*");
  ::testing::AddGlobalTestEnvironment(new DistEnvironment);
  return RUN_ALL_TESTS();
}
