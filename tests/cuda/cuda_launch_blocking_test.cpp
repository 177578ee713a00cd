// CUDA_LAUNCH_BLOCKING=1: a kernel that faults is reported by the op that launched it.
// The fault poisons the CUDA context, so it runs in a child process.
#include <gtest/gtest.h>

#include <string>

#include "cuda_test_util.h"
#include "wick/wick.h"

using namespace wick;
using wick::test::child_value;
using wick::test::run_child;

// fill_ on memory that does not exist (a device pointer made up), then a synchronize.
TEST(CudaLaunchBlocking, DISABLED_ChildBadFill) {
  auto bogus = from_blob(reinterpret_cast<void*>(uintptr_t(0x10000)), {1 << 20},
                         TensorOptions(kFloat32).device(Device("cuda")));
  std::string where = "none";
  try {
    bogus.fill_(1.0);
    where = "after fill_";
    cuda::synchronize();
  } catch (const Error& e) {
    std::printf("ERROR=%s\n", e.what());
  }
  std::printf("REACHED=%s\n", where.c_str());
}

TEST(CudaLaunchBlocking, SubprocessNamesTheFailingOp) {
  WICK_REQUIRE_CUDA();
  auto r = run_child("CudaLaunchBlocking.DISABLED_ChildBadFill", "CUDA_LAUNCH_BLOCKING=1");
  const std::string err = child_value(r.output, "ERROR");
  EXPECT_EQ(err.rfind("[fill_] CUDA error: ", 0), 0u) << r.output;
  EXPECT_NE(err.find("cudaErrorIllegalAddress"), std::string::npos) << r.output;
  EXPECT_EQ(child_value(r.output, "REACHED"), "none") << r.output;
  // Without it, the launch returns and the fault surfaces later, with a hint to set it.
  r = run_child("CudaLaunchBlocking.DISABLED_ChildBadFill", "env -u CUDA_LAUNCH_BLOCKING");
  EXPECT_NE(child_value(r.output, "ERROR").find("cudaErrorIllegalAddress"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("run with CUDA_LAUNCH_BLOCKING=1 to see the op that failed"), std::string::npos)
      << r.output;
}
