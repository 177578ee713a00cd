// Helpers of the CUDA runtime tests: running this test binary again as a child process with
// another environment, and asking the CUDA driver directly (through dlopen, so the tests need
// no CUDA headers) what wick did: which devices have a context, where a pointer lives.
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "wick/cuda.h"

namespace wick::test {

#define WICK_REQUIRE_CUDA() \
  if (!::wick::cuda::is_available()) GTEST_SKIP() << "no CUDA device"

#define WICK_REQUIRE_GPUS(n) \
  if (::wick::cuda::device_count() < (n)) GTEST_SKIP() << "needs " << (n) << " CUDA devices"

inline bool caching_disabled() {
  const char* v = std::getenv("WICK_NO_CUDA_MEMORY_CACHING");
  return v && std::string(v) == "1";
}

// A CUDA tool (compute-sanitizer, Nsight) is injected into this process.
inline bool cuda_tool_injected() {
  const char* v = std::getenv("CUDA_INJECTION64_PATH");
  return v && *v;
}

#define WICK_REQUIRE_CACHING() \
  if (::wick::test::caching_disabled()) GTEST_SKIP() << "WICK_NO_CUDA_MEMORY_CACHING=1"

struct ChildResult {
  int status = -1;     // exit status
  std::string output;  // stdout and stderr together
};

// Runs the DISABLED_ test `test` (Suite.DISABLED_Name) of this binary in a child process,
// the command prefixed by env (e.g. "CUDA_VISIBLE_DEVICES=1" or "env -u CUDA_VISIBLE_DEVICES").
inline ChildResult run_child(const std::string& test, const std::string& env) {
  // The child runs its one test whole: a sharded parent's shard variables would leave it none.
  std::string cmd = "env -u GTEST_TOTAL_SHARDS -u GTEST_SHARD_INDEX " + env + " /proc/" + std::to_string(getpid()) +
                    "/exe --gtest_also_run_disabled_tests --gtest_filter=" + test + " 2>&1";
  ChildResult r;
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) r.output.append(buf, n);
  int st = pclose(f);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

// The value printed by a child as "KEY=value" on a line of its own ("" when absent).
inline std::string child_value(const std::string& output, const std::string& key) {
  size_t pos = 0;
  const std::string tag = key + "=";
  while ((pos = output.find(tag, pos)) != std::string::npos) {
    if (pos == 0 || output[pos - 1] == '\n') {
      size_t end = output.find('\n', pos);
      return output.substr(pos + tag.size(), end == std::string::npos ? std::string::npos : end - pos - tag.size());
    }
    pos += tag.size();
  }
  return "";
}

// The CUDA driver API, the few calls the tests use.
class Driver {
 public:
  static Driver& get() {
    static Driver d;
    return d;
  }
  bool ok() const { return ok_; }
  // Whether device `ordinal` (a CUDA_VISIBLE_DEVICES-relative index) has an active primary context.
  bool has_context(int ordinal) {
    int dev = 0;
    unsigned flags = 0;
    int active = 0;
    if (device_get_(&dev, ordinal) != 0 || ctx_state_(dev, &flags, &active) != 0) return false;
    return active != 0;
  }
  // The device a device pointer was allocated on, or -1.
  int device_of(const void* p) {
    int ordinal = -1;
    constexpr int kDeviceOrdinal = 9;  // CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
    if (pointer_attr_(&ordinal, kDeviceOrdinal, reinterpret_cast<unsigned long long>(p)) != 0) return -1;
    return ordinal;
  }
  // The calling thread's current context (null when none or without a driver).
  void* current_context() {
    void* ctx = nullptr;
    if (!ok_ || !ctx_get_current_ || ctx_get_current_(&ctx) != 0) return nullptr;
    return ctx;
  }
  // Makes ctx current on the calling thread, behind the runtime's back.
  bool set_current_context(void* ctx) { return ok_ && ctx_set_current_ && ctx_set_current_(ctx) == 0; }
  // Device `ordinal`'s primary context (retained), or null.
  void* primary_context(int ordinal) {
    int dev = 0;
    void* ctx = nullptr;
    if (!ok_ || !primary_retain_ || device_get_(&dev, ordinal) != 0 || primary_retain_(&ctx, dev) != 0) return nullptr;
    return ctx;
  }

 private:
  Driver() {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return;
    auto init = reinterpret_cast<int (*)(unsigned)>(dlsym(lib, "cuInit"));
    device_get_ = reinterpret_cast<int (*)(int*, int)>(dlsym(lib, "cuDeviceGet"));
    ctx_state_ = reinterpret_cast<int (*)(int, unsigned*, int*)>(dlsym(lib, "cuDevicePrimaryCtxGetState"));
    pointer_attr_ = reinterpret_cast<int (*)(void*, int, unsigned long long)>(dlsym(lib, "cuPointerGetAttribute"));
    ctx_get_current_ = reinterpret_cast<int (*)(void**)>(dlsym(lib, "cuCtxGetCurrent"));
    ctx_set_current_ = reinterpret_cast<int (*)(void*)>(dlsym(lib, "cuCtxSetCurrent"));
    primary_retain_ = reinterpret_cast<int (*)(void**, int)>(dlsym(lib, "cuDevicePrimaryCtxRetain"));
    ok_ = init && device_get_ && ctx_state_ && pointer_attr_ && init(0) == 0;
  }
  bool ok_ = false;
  int (*device_get_)(int*, int) = nullptr;
  int (*ctx_state_)(int, unsigned*, int*) = nullptr;
  int (*pointer_attr_)(void*, int, unsigned long long) = nullptr;
  int (*ctx_get_current_)(void**) = nullptr;
  int (*ctx_set_current_)(void*) = nullptr;
  int (*primary_retain_)(void**, int) = nullptr;
};

}  // namespace wick::test
