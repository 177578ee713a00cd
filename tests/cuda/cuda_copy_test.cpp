// Copies (docs/design.md, "Pinned memory and copies"): every direction with pageable and
// pinned host memory, sizes on both sides
// of the staged path, non_blocking semantics, pinned blocks not reused under a pending copy,
// copies between GPUs, and host access to CUDA memory.
#include <gtest/gtest.h>

#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "wick/wick.h"

using namespace wick;

namespace {

std::vector<float> random_floats(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-100, 100);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = dist(rng);
  return v;
}

Tensor host_tensor(const std::vector<float>& v) {
  return from_blob(const_cast<float*>(v.data()), {int64_t(v.size())}, kFloat32).clone();
}

// "" when equal, else how many elements differ and the first of them.
std::string mismatch(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return "size " + std::to_string(got.size()) + " vs " + std::to_string(want.size());
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i] && bad++ == 0) first = i;
  if (bad == 0) return "";
  return std::to_string(bad) + " of " + std::to_string(got.size()) + " differ, first at " + std::to_string(first) +
         ": " + std::to_string(got[first]) + " vs " + std::to_string(want[first]);
}

}  // namespace

TEST(CudaCopy, RoundTripsEveryDirection) {
  WICK_REQUIRE_CUDA();
  // Below, at and above the 4 MiB where pageable copies switch to staging, and not a
  // multiple of the 8 MiB staging chunk.
  for (int64_t n : {int64_t(1), int64_t(1000), int64_t(1) << 20, (int64_t(5) << 20) + 7}) {
    auto values = random_floats(n, unsigned(n));
    auto src = host_tensor(values);
    // pageable -> GPU -> pageable
    auto gpu = src.to("cuda");
    EXPECT_TRUE(gpu.is_cuda());
    EXPECT_EQ(gpu.cpu().to_vector<float>(), values) << n;
    // pinned -> GPU (non_blocking) -> pinned (non_blocking)
    auto pinned = src.pin_memory();
    EXPECT_TRUE(pinned.is_pinned());
    EXPECT_FALSE(src.is_pinned());
    auto gpu2 = pinned.to(Device("cuda"), /*non_blocking=*/true);
    auto back = empty({n}, TensorOptions(kFloat32).pinned_memory(true));
    back.copy_(gpu2, /*non_blocking=*/true);
    cuda::synchronize();
    EXPECT_EQ(back.to_vector<float>(), values) << n;
    // GPU -> GPU on one device
    auto gpu3 = empty({n}, Device("cuda"));
    gpu3.copy_(gpu2);
    EXPECT_EQ(gpu3.cpu().to_vector<float>(), values) << n;
  }
  // A view of a pinned tensor is pinned too, and copies from its offset.
  auto values = random_floats(4096, 7);
  auto pinned = host_tensor(values).pin_memory();
  auto part = pinned.narrow(0, 100, 1000);
  EXPECT_TRUE(part.is_pinned());
  auto expect = std::vector<float>(values.begin() + 100, values.begin() + 1100);
  EXPECT_EQ(part.to("cuda").cpu().to_vector<float>(), expect);
  // Casts and layouts around the move.
  auto d = from_blob(values.data(), {64, 64}, kFloat32).to(kFloat64);
  auto t = d.t().to(Device("cuda"), kFloat16).cpu();
  auto ref = d.t().to(kFloat16);
  EXPECT_EQ(t.to_vector<float>(), ref.to_vector<float>());
  EXPECT_EQ(t.dtype(), kFloat16);
}

TEST(CudaCopy, NonBlockingFromPinnedReturnsBeforeTheCopyEnds) {
  WICK_REQUIRE_CUDA();
  const int64_t n = int64_t(64) << 20;  // 256 MiB: ~5 ms over PCIe
  auto values = random_floats(n, 3);
  auto pinned = host_tensor(values).pin_memory();
  auto gpu = empty({n}, Device("cuda"));
  gpu.copy_(pinned, /*non_blocking=*/true);
  cuda::Event queued;
  queued.record();
  EXPECT_FALSE(queued.query()) << "the copy had already finished when copy_ returned";
  cuda::synchronize();
  EXPECT_EQ(gpu.cpu().to_vector<float>(), values);
  // From pageable memory the same call is synchronous: nothing is left in flight.
  auto pageable = host_tensor(values);
  gpu.copy_(pageable, /*non_blocking=*/true);
  EXPECT_TRUE(cuda::current_stream().query());
}

TEST(CudaCopy, PinnedBlockIsNotReusedWhileACopyUsesIt) {
  WICK_REQUIRE_CUDA();
  const int64_t n = int64_t(32) << 20;
  auto gpu = empty({n}, Device("cuda"));
  auto p = empty({n}, TensorOptions(kFloat32).pinned_memory(true)).fill_(1.5);
  void* first = p.data_ptr();
  gpu.copy_(p, /*non_blocking=*/true);
  p = Tensor();  // freed while the copy is still running
  auto q = empty({n}, TensorOptions(kFloat32).pinned_memory(true));
  EXPECT_NE(q.data_ptr(), first);
  cuda::synchronize();
  q = Tensor();
  auto r = empty({n}, TensorOptions(kFloat32).pinned_memory(true));
  EXPECT_EQ(r.data_ptr(), first);  // now it is free again
  auto v = gpu.cpu().to_vector<float>();
  EXPECT_EQ(std::count(v.begin(), v.end(), 1.5f), n);
}

TEST(CudaCopy, BetweenGpus) {
  WICK_REQUIRE_CUDA();
  WICK_REQUIRE_GPUS(2);
  for (int64_t n : {int64_t(1000), (int64_t(3) << 20) + 1}) {
    auto values = random_floats(n, 11);
    auto on0 = host_tensor(values).to("cuda:0");
    EXPECT_EQ(mismatch(on0.cpu().to_vector<float>(), values), "") << n << " cpu -> cuda:0";
    auto on1 = on0.to("cuda:1");
    EXPECT_EQ(on1.device(), Device(kCUDA, 1));
    EXPECT_EQ(test::Driver::get().ok() ? test::Driver::get().device_of(on1.data_ptr()) : 1, 1);
    EXPECT_EQ(mismatch(on1.cpu().to_vector<float>(), values), "") << n << " cuda:0 -> cuda:1";
    auto again = on1.to("cuda:0");
    EXPECT_EQ(mismatch(again.cpu().to_vector<float>(), values), "") << n << " cuda:1 -> cuda:0";
    // With a cast: float16 on cuda:1 from float32 on cuda:0.
    auto h = on0.to(Device("cuda:1"), kFloat16);
    EXPECT_EQ(mismatch(h.cpu().to_vector<float>(), host_tensor(values).to(kFloat16).to_vector<float>()), "")
        << n << " cuda:0 float32 -> cuda:1 float16";
    // The same after a full synchronize: tells a missing ordering from a wrong copy.
    cuda::synchronize(0);
    cuda::synchronize(1);
    EXPECT_EQ(mismatch(on1.cpu().to_vector<float>(), values), "") << n << " cuda:1 after synchronize";
  }
  // Ordered against the destination's stream: a side stream on cuda:1 that is current there.
  auto s1 = cuda::Stream::create(1);
  auto values = random_floats(1 << 20, 5);
  auto src = host_tensor(values).to("cuda:0");
  Tensor dst;
  {
    cuda::StreamGuard g(s1);
    dst = empty({1 << 20}, Device("cuda:1"));
    dst.copy_(src);
    dst.add_(1);  // on s1, after the copy
  }
  cuda::synchronize(1);
  auto got = dst.cpu().to_vector<float>();
  for (size_t i = 0; i < values.size(); ++i) ASSERT_EQ(got[i], values[i] + 1) << i;
}

TEST(CudaCopy, HostAccessItemAndPrinting) {
  WICK_REQUIRE_CUDA();
  auto t = full({2, 2}, 1.5, Device("cuda"));
  try {
    t.to_vector<float>();
    FAIL() << "no error";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("can't access a cuda:" + std::to_string(cuda::current_device()) +
                                         " tensor from the host; copy it with .cpu() first"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW((t.accessor<float, 2>()), DeviceError);
  EXPECT_EQ(t[1][0].item<float>(), 1.5f);
  std::ostringstream os;
  os << t;
  EXPECT_NE(os.str().find("device='cuda:" + std::to_string(cuda::current_device()) + "'"), std::string::npos)
      << os.str();
  EXPECT_NE(os.str().find("1.5000"), std::string::npos) << os.str();
}
