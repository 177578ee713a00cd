// wick-smi run as a program: without a driver (an NVML that can't be loaded), against a fake
// NVML with three GPUs and with none, and against the machine's own driver when it has one.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

struct SmiRun {
  int status = -1;
  std::string out, err;
};

// Runs wick-smi with args, NVML taken from nvml ("" leaves the environment as it is).
SmiRun run_smi(const std::string& args, const std::string& nvml) {
#ifdef WICK_SMI_PATH
  const std::string err_file =
      (std::filesystem::temp_directory_path() / ("wick_smi_err_" + std::to_string(getpid()))).string();
  std::string cmd = nvml.empty() ? "" : "WICK_NVML_LIBRARY='" + nvml + "' ";
  cmd += "'" WICK_SMI_PATH "' " + args + " 2>'" + err_file + "'";
  SmiRun r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  std::ifstream in(err_file);
  r.err.assign(std::istreambuf_iterator<char>(in), {});
  std::filesystem::remove(err_file);
  return r;
#else
  (void)args;
  (void)nvml;
  return {};
#endif
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

class WickSmi : public ::testing::Test {
 protected:
  void SetUp() override {
#ifndef WICK_SMI_PATH
    GTEST_SKIP() << "wick-smi is not built (WICK_BUILD_TOOLS=OFF)";
#endif
  }
};

TEST_F(WickSmi, NoDriver) {
  for (const char* args : {"", "--order free"}) {
    SmiRun r = run_smi(args, "/nonexistent/libnvidia-ml.so.1");
    EXPECT_EQ(r.status, 1) << args;
    EXPECT_EQ(r.out, "") << args;
    EXPECT_TRUE(
        has(r.err, "wick-smi: no NVIDIA driver found: /nonexistent/libnvidia-ml.so.1 could not be loaded"))
        << r.err;
    EXPECT_TRUE(has(r.err, "wick runs on the CPU")) << r.err;
  }
}

TEST_F(WickSmi, BadOption) {
  SmiRun r = run_smi("--order fastest", "/nonexistent/libnvidia-ml.so.1");
  EXPECT_NE(r.status, 0);
  EXPECT_TRUE(has(r.err, "--order")) << r.err;
}

#ifdef WICK_FAKE_NVML_PATH
TEST_F(WickSmi, FakeGpusTable) {
  SmiRun r = run_smi("", WICK_FAKE_NVML_PATH);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out, "NVIDIA driver 999.1, 3 GPUs")) << r.out;
  EXPECT_TRUE(has(r.out, "Fake GPU A")) << r.out;
  EXPECT_TRUE(has(r.out, "900MiB / 1000MiB")) << r.out;
  EXPECT_TRUE(has(r.out, "3500MiB")) << "GPU B's free memory\n" << r.out;
  EXPECT_TRUE(has(r.out, "90%")) << r.out;
  // The process on GPU 0: pid, compute, memory and name on one line.
  bool found = false;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);)
    found |= has(line, "4242") && has(line, " C ") && has(line, "800MiB") && has(line, "trainer");
  EXPECT_TRUE(found) << r.out;
}

TEST_F(WickSmi, FakeGpusByFreeMemory) {
  SmiRun r = run_smi("--order free", WICK_FAKE_NVML_PATH);
  ASSERT_EQ(r.status, 0) << r.err;
  // Free: A 100 MiB, B 3500 MiB, C 1900 MiB.
  EXPECT_TRUE(r.out.ends_with("\nCUDA_VISIBLE_DEVICES=1,2,0\n")) << r.out;
  EXPECT_LT(r.out.find("Fake GPU B"), r.out.find("Fake GPU C"));
  EXPECT_LT(r.out.find("Fake GPU C"), r.out.find("Fake GPU A"));
}

TEST_F(WickSmi, DriverWithoutGpus) {
  setenv("FAKE_NVML_GPUS", "0", 1);
  SmiRun r = run_smi("--order free", WICK_FAKE_NVML_PATH);
  unsetenv("FAKE_NVML_GPUS");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(has(r.err, "reports no GPU")) << r.err;
}
#endif

TEST_F(WickSmi, RealDriver) {
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    // This machine has no driver: wick-smi must say so, exactly as with a missing library.
    SmiRun r = run_smi("", "");
    EXPECT_EQ(r.status, 1);
    EXPECT_TRUE(has(r.err, "no NVIDIA driver found")) << r.err;
    return;
  }
  dlclose(lib);
  SmiRun r = run_smi("--order free", "");
  if (r.status == 1) GTEST_SKIP() << "the driver reports no GPU: " << r.err;
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out, "CUDA_VISIBLE_DEVICES=")) << r.out;
}
