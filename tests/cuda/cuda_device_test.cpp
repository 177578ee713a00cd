// Devices: availability (also without a GPU), properties, invalid ordinals, the current device
// and DeviceGuard, CUDA_VISIBLE_DEVICES (in child processes), lazy contexts, NVML ordering.
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "wick/wick.h"

using namespace wick;
using wick::test::child_value;
using wick::test::run_child;

namespace {

// What every CUDA entry point must do when there is no usable GPU: report it, not crash.
void check_unavailable() {
  EXPECT_FALSE(cuda::is_available());
  EXPECT_EQ(cuda::device_count(), 0);
  auto expect_device_error = [](auto&& f, const std::string& op) {
    try {
      f();
      ADD_FAILURE() << op << " did not throw";
    } catch (const DeviceError& e) {
      std::string m = e.what();
      EXPECT_EQ(m.rfind("[" + op + "]", 0), 0u) << m;
      EXPECT_TRUE(m.find("built without CUDA") != std::string::npos ||
                  m.find("no CUDA device is available") != std::string::npos)
          << m;
    }
  };
  expect_device_error([] { cuda::current_device(); }, "current_device");
  expect_device_error([] { cuda::set_device(0); }, "set_device");
  expect_device_error([] { cuda::synchronize(); }, "synchronize");
  expect_device_error([] { cuda::Stream::create(); }, "Stream::create");
  expect_device_error([] { cuda::memory_allocated(); }, "memory_allocated");
  expect_device_error([] { cuda::DeviceGuard g(0); }, "DeviceGuard");
  EXPECT_THROW(empty({2}, Device("cuda")), DeviceError);
  EXPECT_THROW(ones({2}).to(Device("cuda:0")), DeviceError);
  EXPECT_THROW(ones({2}).pin_memory(), DeviceError);
  EXPECT_FALSE(ones({2}).is_pinned());
  EXPECT_NO_THROW(cuda::empty_cache());  // nothing cached: nothing to do, as in PyTorch
  EXPECT_NO_THROW(cuda::manual_seed_all(1));
}

std::string visible_env() {
  const char* v = std::getenv("CUDA_VISIBLE_DEVICES");
  return v ? v : "";
}

// The entry of the parent's CUDA_VISIBLE_DEVICES naming its cuda:i (or just i when unset).
std::string physical_name(int i) {
  const char* v = std::getenv("CUDA_VISIBLE_DEVICES");
  if (!v) return std::to_string(i);
  std::stringstream ss(v);
  std::string item;
  for (int k = 0; std::getline(ss, item, ','); ++k)
    if (k == i) return item;
  return std::to_string(i);
}

}  // namespace

TEST(CudaAvailability, WithoutAGpuCudaThrowsDeviceError) {
  if (cuda::is_available()) GTEST_SKIP() << "a GPU is present; CudaAvailability.SubprocessHiddenGpus covers this";
  check_unavailable();
}

TEST(CudaAvailability, DISABLED_ChildUnavailable) { check_unavailable(); }

// With every GPU hidden, the CUDA build behaves as on a machine without one.
TEST(CudaAvailability, SubprocessHiddenGpus) {
  WICK_REQUIRE_CUDA();
  for (const char* env : {"CUDA_VISIBLE_DEVICES=", "CUDA_VISIBLE_DEVICES=-1"}) {
    auto r = run_child("CudaAvailability.DISABLED_ChildUnavailable", env);
    EXPECT_EQ(r.status, 0) << env << "\n" << r.output;
    EXPECT_NE(r.output.find("[  PASSED  ] 1 test"), std::string::npos) << r.output;
  }
}

TEST(CudaDevice, Properties) {
  WICK_REQUIRE_CUDA();
  const std::regex uuid("GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");
  const std::regex pci("[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\\.0");
  std::set<std::string> uuids, pcis;
  for (int d = 0; d < cuda::device_count(); ++d) {
    auto p = cuda::get_device_properties(d);
    EXPECT_FALSE(p.name.empty());
    EXPECT_EQ(cuda::get_device_name(d), p.name);
    EXPECT_TRUE(std::regex_match(p.uuid, uuid)) << p.uuid;
    EXPECT_TRUE(std::regex_match(p.pci_bus_id, pci)) << p.pci_bus_id;
    EXPECT_GT(p.multi_processor_count, 0);
    EXPECT_GE(p.major, 1);
    auto [free_b, total_b] = cuda::mem_get_info(d);
    EXPECT_GT(free_b, 0);
    EXPECT_LE(free_b, total_b);
    EXPECT_NEAR(double(total_b), double(p.total_memory), 0.02 * double(p.total_memory));
    uuids.insert(p.uuid);
    pcis.insert(p.pci_bus_id);
  }
  EXPECT_EQ(int(uuids.size()), cuda::device_count());
  EXPECT_EQ(int(pcis.size()), cuda::device_count());
  // "cuda" without an index is the current device.
  EXPECT_EQ(cuda::get_device_properties().uuid, cuda::get_device_properties(cuda::current_device()).uuid);
}

TEST(CudaDevice, InvalidOrdinalSaysWhatIsVisible) {
  WICK_REQUIRE_CUDA();
  const int n = cuda::device_count();
  auto check = [&](auto&& f, const std::string& op) {
    try {
      f();
      ADD_FAILURE() << op << " did not throw";
    } catch (const DeviceError& e) {
      std::string m = e.what();
      EXPECT_EQ(m.rfind("[" + op + "]", 0), 0u) << m;
      EXPECT_NE(m.find("cuda:" + std::to_string(n)), std::string::npos) << m;
      EXPECT_NE(m.find(std::to_string(n) + (n == 1 ? " CUDA device is visible" : " CUDA devices are visible")),
                std::string::npos)
          << m;
      EXPECT_NE(m.find("CUDA_VISIBLE_DEVICES"), std::string::npos) << m;
      if (std::getenv("CUDA_VISIBLE_DEVICES")) {
        EXPECT_NE(m.find("'" + visible_env() + "'"), std::string::npos) << m;
      }
    }
  };
  check([&] { cuda::set_device(n); }, "set_device");
  check([&] { cuda::get_device_properties(n); }, "get_device_properties");
  check([&] { cuda::mem_get_info(n); }, "mem_get_info");
  check([&] { cuda::DeviceGuard g(n); }, "DeviceGuard");
  check([&] { empty({3}, Device(kCUDA, n)); }, "empty");
  check([&] { ones({3}).to(Device(kCUDA, n)); }, "to");
}

TEST(CudaDevice, TensorsLandOnTheCurrentDevice) {
  WICK_REQUIRE_CUDA();
  auto& drv = wick::test::Driver::get();
  const int n = cuda::device_count();
  cuda::set_device(0);
  for (int d = 0; d < n; ++d) {
    {
      cuda::DeviceGuard g(d);
      EXPECT_EQ(cuda::current_device(), d);
      auto a = empty({16}, Device("cuda"));
      auto b = ones({16}).to("cuda");
      auto c = ones({16}).cuda();
      for (const Tensor* t : {&a, &b, &c}) {
        EXPECT_EQ(t->device(), Device(kCUDA, d));
        if (drv.ok()) {
          EXPECT_EQ(drv.device_of(t->data_ptr()), d);
        }
      }
      EXPECT_EQ(b.cpu().to_vector<float>(), std::vector<float>(16, 1.f));
    }
    EXPECT_EQ(cuda::current_device(), 0);
  }
  if (n < 2) return;
  cuda::set_device(1);
  EXPECT_EQ(cuda::current_device(), 1);
  auto t = full({4}, 2.5, Device("cuda"));
  EXPECT_EQ(t.device(), Device(kCUDA, 1));
  if (drv.ok()) {
    EXPECT_EQ(drv.device_of(t.data_ptr()), 1);
  }
  {
    cuda::DeviceGuard g(Device("cuda:0"));
    EXPECT_EQ(cuda::current_device(), 0);
    {
      cuda::DeviceGuard inner(1);
      EXPECT_EQ(empty({1}, Device("cuda")).device(), Device(kCUDA, 1));
    }
    EXPECT_EQ(cuda::current_device(), 0);
  }
  EXPECT_EQ(cuda::current_device(), 1);
  // Explicit indices ignore the current device.
  EXPECT_EQ(t.to(Device("cuda:0")).device(), Device(kCUDA, 0));
  cuda::set_device(0);
}

// wick remembers the device of the context it last saw current; a context made current by
// code beside wick (here the driver's cuCtxSetCurrent) must be seen at once, by the current
// device, by tensors made on "cuda" and by ops.
TEST(CudaDevice, ContextSwitchedBehindWicksBack) {
  WICK_REQUIRE_CUDA();
  if (cuda::device_count() < 2) GTEST_SKIP() << "needs two GPUs";
  auto& drv = wick::test::Driver::get();
  if (!drv.ok()) GTEST_SKIP() << "libcuda.so.1 not loadable";
  cuda::set_device(0);
  auto a = full({8}, 1.5, Device("cuda"));
  ASSERT_EQ(a.device(), Device(kCUDA, 0));
  void* ctx0 = drv.current_context();
  void* ctx1 = drv.primary_context(1);
  ASSERT_NE(ctx0, nullptr);
  ASSERT_NE(ctx1, nullptr);
  for (int round = 0; round < 3; ++round) {
    ASSERT_TRUE(drv.set_current_context(ctx1));
    EXPECT_EQ(cuda::current_device(), 1);
    auto b = full({8}, 2.0, Device("cuda"));
    EXPECT_EQ(b.device(), Device(kCUDA, 1));
    EXPECT_EQ(drv.device_of(b.data_ptr()), 1);
    auto c = b * 3.0;  // an op on cuda:1 while cuda:1's context is current
    EXPECT_EQ(c.cpu().to_vector<float>(), std::vector<float>(8, 6.f));
    auto d = a + 1.0;  // an op on cuda:0: its device scope switches and restores
    EXPECT_EQ(d.cpu().to_vector<float>(), std::vector<float>(8, 2.5f));
    EXPECT_EQ(cuda::current_device(), 1);
    ASSERT_TRUE(drv.set_current_context(ctx0));
    EXPECT_EQ(cuda::current_device(), 0);
    auto e = empty({8}, Device("cuda"));
    EXPECT_EQ(e.device(), Device(kCUDA, 0));
    EXPECT_EQ(drv.device_of(e.data_ptr()), 0);
  }
}

// ---- CUDA_VISIBLE_DEVICES, in child processes (the driver reads it once per process)

TEST(CudaDevice, DISABLED_ChildPrintDevices) {
  std::printf("COUNT=%d\n", cuda::device_count());
  for (int d = 0; d < cuda::device_count(); ++d)
    std::printf("PCI%d=%s\n", d, cuda::get_device_properties(d).pci_bus_id.c_str());
}

TEST(CudaDevice, SubprocessVisibleDevicesRemaps) {
  WICK_REQUIRE_CUDA();
  const int n = cuda::device_count();
  for (int i = 0; i < n; ++i) {
    auto r = run_child("CudaDevice.DISABLED_ChildPrintDevices", "CUDA_VISIBLE_DEVICES=" + physical_name(i));
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(child_value(r.output, "COUNT"), "1") << r.output;
    EXPECT_EQ(child_value(r.output, "PCI0"), cuda::get_device_properties(i).pci_bus_id) << r.output;
  }
  // By UUID, as nvidia-smi prints it.
  auto r = run_child("CudaDevice.DISABLED_ChildPrintDevices",
                     "CUDA_VISIBLE_DEVICES=" + cuda::get_device_properties(n - 1).uuid);
  EXPECT_EQ(child_value(r.output, "PCI0"), cuda::get_device_properties(n - 1).pci_bus_id) << r.output;
  if (n >= 2) {  // a reversed pair: cuda:0 is the parent's cuda:1
    r = run_child("CudaDevice.DISABLED_ChildPrintDevices",
                  "CUDA_VISIBLE_DEVICES=" + physical_name(1) + "," + physical_name(0));
    EXPECT_EQ(child_value(r.output, "COUNT"), "2") << r.output;
    EXPECT_EQ(child_value(r.output, "PCI0"), cuda::get_device_properties(1).pci_bus_id) << r.output;
    EXPECT_EQ(child_value(r.output, "PCI1"), cuda::get_device_properties(0).pci_bus_id) << r.output;
  }
}

// setenv before the first CUDA call counts; after it, a one-time warning says it does not.
TEST(CudaDevice, DISABLED_ChildSetenv) {
  const char* target = std::getenv("WICK_TEST_VISIBLE");
  ASSERT_NE(target, nullptr);
  setenv("CUDA_VISIBLE_DEVICES", target, 1);
  std::printf("COUNT=%d\n", cuda::device_count());
  std::printf("PCI0=%s\n", cuda::get_device_properties(0).pci_bus_id.c_str());
  std::fflush(stdout);
  setenv("CUDA_VISIBLE_DEVICES", "", 1);
  std::printf("COUNT_AFTER=%d\n", cuda::device_count());
  std::fflush(stdout);
  cuda::is_available();
  cuda::device_count();
}

TEST(CudaDevice, SubprocessSetenvBeforeFirstUse) {
  WICK_REQUIRE_CUDA();
  const int last = cuda::device_count() - 1;
  auto r = run_child("CudaDevice.DISABLED_ChildSetenv",
                     "env -u CUDA_VISIBLE_DEVICES WICK_TEST_VISIBLE=" + physical_name(last));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(child_value(r.output, "COUNT"), "1") << r.output;
  EXPECT_EQ(child_value(r.output, "PCI0"), cuda::get_device_properties(last).pci_bus_id) << r.output;
  EXPECT_EQ(child_value(r.output, "COUNT_AFTER"), "1") << r.output;
  const std::string warning = "the change has no effect";
  size_t first = r.output.find(warning);
  EXPECT_NE(first, std::string::npos) << r.output;
  EXPECT_EQ(r.output.find(warning, first + 1), std::string::npos) << "warned more than once:\n" << r.output;
}

// Queries make no context; a tensor on cuda:k makes one on k only.
TEST(CudaDevice, DISABLED_ChildContexts) {
  auto& drv = wick::test::Driver::get();
  ASSERT_TRUE(drv.ok());
  const int n = cuda::device_count();
  for (int d = 0; d < n; ++d) {
    cuda::get_device_properties(d);
    cuda::get_device_name(d);
  }
  cuda::current_device();
  cuda::current_stream();
  try {
    cuda::devices_by_free_memory();
  } catch (const DeviceError&) {
  }
  int contexts = 0;
  for (int d = 0; d < n; ++d) contexts += drv.has_context(d);
  std::printf("AFTER_QUERIES=%d\n", contexts);
  const int k = n - 1;
  {
    cuda::DeviceGuard g(k);
    auto t = full({8}, 1.0, Device("cuda"));
    std::printf("VALUE=%g\n", t[3].item<double>());
  }
  std::printf("CURRENT=%d\n", cuda::current_device());
  std::string with;
  for (int d = 0; d < n; ++d)
    if (drv.has_context(d)) with += std::to_string(d) + ";";
  std::printf("WITH_CONTEXT=%s\n", with.c_str());
}

TEST(CudaDevice, SubprocessNoContextOnUnusedDevices) {
  WICK_REQUIRE_CUDA();
  if (!wick::test::Driver::get().ok()) GTEST_SKIP() << "libcuda.so.1 not loadable";
  auto r = run_child("CudaDevice.DISABLED_ChildContexts", "");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(child_value(r.output, "AFTER_QUERIES"), "0") << r.output;
  EXPECT_EQ(child_value(r.output, "VALUE"), "1") << r.output;
  EXPECT_EQ(child_value(r.output, "CURRENT"), "0") << r.output;
  // Only the device that was used, even after the guard went back to cuda:0.
  EXPECT_EQ(child_value(r.output, "WITH_CONTEXT"), std::to_string(cuda::device_count() - 1) + ";") << r.output;
}

TEST(CudaDevice, DevicesByFreeMemory) {
  WICK_REQUIRE_CUDA();
  std::vector<int> order;
  try {
    order = cuda::devices_by_free_memory();
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("NVML"), std::string::npos) << e.what();
    GTEST_SKIP() << "no NVML: " << e.what();
  }
  std::vector<int> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) EXPECT_EQ(sorted[i], int(i));  // a permutation of the GPUs
  EXPECT_GE(int(order.size()), cuda::device_count());
  if (std::getenv("CUDA_VISIBLE_DEVICES") || cuda::device_count() < 2) return;
  // Take most of cuda:0's free memory: it must come last.
  auto [free0, total0] = cuda::mem_get_info(0);
  auto [free1, total1] = cuda::mem_get_info(1);
  int64_t take = free0 - free1 / 2;
  if (take <= 0) GTEST_SKIP() << "cuda:1 has too little free memory";
  auto hog = empty({take / 4}, TensorOptions(kFloat32).device("cuda:0"));
  order = cuda::devices_by_free_memory();
  EXPECT_NE(order.front(), 0);
  EXPECT_EQ(order.back(), 0);
}

// A process that only ever uses cuda:1 (a second rank's): nested device scopes inside a copy
// (the staging buffers' pinned memory, their events) must keep cuda:1 current; the pending
// switch back to the never-used cuda:0 once made them record cuda:1's events on cuda:0's
// stream ("invalid resource handle").
TEST(CudaDevice, DISABLED_ChildOnlySecondDevice) {
  try {
    const Tensor host = arange(300 * 600, TensorOptions(kFloat32)).view({300, 600});  // 720 KB: staged
    Tensor a = host.to(Device("cuda:1"));
    Tensor b = (a * 2).cpu();
    Tensor c = randn({512, 512}).to(Device("cuda:1")).cpu();
    std::printf("SUM=%.1f\n", b.to(kFloat64).sum().item<double>());
    std::printf("SHAPE=%lld\n", (long long)c.numel());
  } catch (const Error& e) {
    std::printf("ERROR=%s\n", e.what());
  }
}

TEST(CudaDevice, SubprocessUsingOnlyTheSecondDevice) {
  WICK_REQUIRE_CUDA();
  if (std::getenv("CUDA_VISIBLE_DEVICES") || cuda::device_count() < 2) GTEST_SKIP() << "needs two GPUs";
  auto r = wick::test::run_child("CudaDevice.DISABLED_ChildOnlySecondDevice", "env");
  // 2 * sum(0 .. 179999) = 179999 * 180000
  EXPECT_EQ(child_value(r.output, "SUM"), "32399820000.0") << r.output;
  EXPECT_EQ(child_value(r.output, "SHAPE"), "262144") << r.output;
  EXPECT_EQ(child_value(r.output, "ERROR"), "") << r.output;
}
