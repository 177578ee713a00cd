// WICK_CUDA_ALLOC_CONF=expandable_segments:True: the caching allocator's segments grow in place
// through the driver's virtual memory API. The setting is read once per process, so every
// check runs in a child process (this binary again, a DISABLED_ test) with the setting made,
// and the parent checks that child's result. Expected values follow the rules of
// ExpandableChain (src/cuda/caching_allocator.h): pages of 20 MiB for the large pool and
// 2 MiB for the small one (the H100's granularity, 2 MiB, divides both), mapped at the end of
// the block that needs them, unmapped by empty_cache where a free block covers whole pages.
#include <cstdint>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cuda/alloc_config.h"
#include "cuda_test_util.h"
#include "stat_delta.h"
#include "wick/wick.h"

using namespace wick;
using wick::test::child_value;
using wick::test::run_child;

namespace {

constexpr int64_t MiB = 1024 * 1024;
constexpr const char* kExpandable =
    "env -u WICK_NO_CUDA_MEMORY_CACHING WICK_CUDA_ALLOC_CONF=expandable_segments:True";
constexpr const char* kFixed = "env -u WICK_NO_CUDA_MEMORY_CACHING -u WICK_CUDA_ALLOC_CONF";

TensorOptions on_gpu(Dtype dt = kInt32) { return TensorOptions().dtype(dt).device(Device("cuda")); }

char* addr(const Tensor& t) { return static_cast<char*>(t.data_ptr()); }

using test::StatDelta;

// The int32 values first, first + 1, ... on the host.
Tensor host_pattern(int64_t n, int32_t first) {
  return arange(int64_t(first), int64_t(first) + n, 1, TensorOptions().dtype(kInt32));
}

// Whether the device tensor t (int32) holds first, first + 1, ...; says where it does not.
::testing::AssertionResult holds_pattern(const Tensor& t, int32_t first) {
  const std::vector<int32_t> got = t.cpu().to_vector<int32_t>();
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != first + int32_t(i))
      return ::testing::AssertionFailure()
             << "element " << i << " (byte " << i * 4 << ") is " << got[i] << ", not " << first + int32_t(i);
  return ::testing::AssertionSuccess();
}

// The statistics once nothing is live and the cache is empty, relative to d's start.
void expect_all_returned(const StatDelta& d) {
  EXPECT_EQ(cuda::memory_allocated(), 0);
  EXPECT_EQ(cuda::memory_reserved(), 0);
  for (const char* pool : {"all", "small_pool", "large_pool"}) {
    const std::string p = std::string(".") + pool + ".";
    EXPECT_EQ(d("allocated_bytes" + p + "current"), 0) << pool;
    EXPECT_EQ(d("reserved_bytes" + p + "current"), 0) << pool;
    EXPECT_EQ(d("segment" + p + "current"), 0) << pool;
    EXPECT_EQ(d("active" + p + "current"), 0) << pool;
    EXPECT_EQ(d("active_bytes" + p + "current"), 0) << pool;
    EXPECT_EQ(d("inactive_split" + p + "current"), 0) << pool;
    EXPECT_EQ(d("requested_bytes" + p + "current"), 0) << pool;
    EXPECT_EQ(d("allocation" + p + "allocated"), d("allocation" + p + "freed")) << pool;
    EXPECT_EQ(d("allocated_bytes" + p + "allocated"), d("allocated_bytes" + p + "freed")) << pool;
    EXPECT_EQ(d("reserved_bytes" + p + "allocated"), d("reserved_bytes" + p + "freed")) << pool;
    EXPECT_EQ(d("segment" + p + "allocated"), d("segment" + p + "freed")) << pool;
  }
  EXPECT_EQ(d("num_device_alloc"), d("num_device_free"));
  auto s = cuda::memory_stats();
  EXPECT_GE(s["allocated_bytes.all.peak"], s["allocated_bytes.all.current"]);
  EXPECT_GE(s["reserved_bytes.all.peak"], s["allocated_bytes.all.peak"]);
}

void require_expandable() {
  ASSERT_TRUE(detail::gpu::alloc_config().expandable_segments)
      << "run with WICK_CUDA_ALLOC_CONF=expandable_segments:True";
}

// A child's gtest run passed (and did not skip its one test).
void expect_child_passed(const test::ChildResult& r) {
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("[  PASSED  ] 1 test"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("[  SKIPPED ]"), std::string::npos) << r.output;
}

}  // namespace

// ---- the children

TEST(CudaExpandable, DISABLED_GrowsInPlace) {
  require_expandable();
  auto stream = cuda::Stream::create();  // a stream of its own: a new segment
  cuda::StreamGuard guard(stream);
  cuda::empty_cache();
  StatDelta d;
  // 30 MiB: two 20 MiB pages mapped, 10 MiB left free after the block.
  Tensor a = empty({30 * MiB / 4}, on_gpu());
  EXPECT_EQ(d("reserved_bytes.large_pool.current"), 40 * MiB);
  EXPECT_EQ(d("segment.all.current"), 1);
  EXPECT_EQ(d("num_device_alloc"), 2);
  // 25 MiB: the free 10 MiB grows by one page in place; b follows a.
  Tensor b = empty({25 * MiB / 4}, on_gpu());
  EXPECT_EQ(addr(b), addr(a) + 30 * MiB);
  EXPECT_EQ(d("reserved_bytes.all.current"), 60 * MiB);
  EXPECT_EQ(d("segment.all.current"), 1);
  EXPECT_EQ(d("num_device_alloc"), 3);
  // 100 MiB: 5 MiB free + 5 more pages; c spans the pages of [55, 155) MiB.
  Tensor c = empty({100 * MiB / 4}, on_gpu());
  EXPECT_EQ(addr(c), addr(a) + 55 * MiB);
  EXPECT_EQ(d("reserved_bytes.all.current"), 160 * MiB);
  EXPECT_EQ(d("segment.all.current"), 1);
  EXPECT_EQ(d("allocated_bytes.all.current"), 155 * MiB);
  EXPECT_EQ(cuda::memory_reserved() - cuda::memory_allocated(), 5 * MiB);
  // Values written through each tensor come back across every page boundary.
  a.copy_(host_pattern(a.numel(), 1));
  b.copy_(host_pattern(b.numel(), 100000000));
  c.copy_(host_pattern(c.numel(), 200000000));
  EXPECT_TRUE(holds_pattern(a, 1));
  EXPECT_TRUE(holds_pattern(b, 100000000));
  EXPECT_TRUE(holds_pattern(c, 200000000));
  // Kernels too: c + 1 (a new block, after c) and a reduction over b.
  Tensor c1 = c + 1;
  EXPECT_TRUE(holds_pattern(c1, 200000001));
  c1 = Tensor();
  const int64_t nb = b.numel();
  const int64_t want = nb * 100000000 + nb * (nb - 1) / 2;
  EXPECT_EQ(b.sum(kInt64).item<int64_t>(), want);
  cuda::synchronize();
  // a freed: empty_cache unmaps its whole page [0, 20) MiB; [20, 30) shares a page with b.
  a = Tensor();
  cuda::empty_cache();
  EXPECT_EQ(d("reserved_bytes.all.current"), 140 * MiB) << cuda::memory_summary();
  EXPECT_GT(d("num_device_free"), 0);
  EXPECT_TRUE(holds_pattern(b, 100000000));
  EXPECT_TRUE(holds_pattern(c, 200000000));
  // The unmapped page is mapped again for the next request that needs it.
  Tensor a2 = empty({20 * MiB / 4}, on_gpu());
  a2.copy_(host_pattern(a2.numel(), 7));
  EXPECT_TRUE(holds_pattern(a2, 7));
  EXPECT_TRUE(holds_pattern(b, 100000000));
  a2 = Tensor();
  b = Tensor();
  c = Tensor();
  EXPECT_EQ(d("allocated_bytes.all.current"), 0);
  EXPECT_GT(cuda::memory_reserved(), 0);
  const std::string summary = cuda::memory_summary();
  EXPECT_NE(summary.find("GPU reserved memory"), std::string::npos) << summary;
  cuda::empty_cache();
  expect_all_returned(d);
  EXPECT_GE(d("reserved_bytes.all.peak"), 160 * MiB);
}

TEST(CudaExpandable, DISABLED_ManySizesAndStreams) {
  require_expandable();
  cuda::empty_cache();
  StatDelta d;
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> pick_size(0, 5);
  const int64_t sizes[] = {1, 100, 4096, 300000, 3 * MiB / 4, 12 * MiB / 4};  // int32 elements
  auto s1 = cuda::Stream::create(), s2 = cuda::Stream::create();
  std::vector<std::pair<Tensor, int32_t>> live;
  for (int step = 0; step < 400; ++step) {
    cuda::StreamGuard guard(step % 2 ? s1 : s2);
    const int64_t n = sizes[pick_size(rng)];
    const int32_t v = step;
    Tensor t = full({n}, v, on_gpu());
    live.push_back({t + 1, v + 1});  // a kernel's result, in another block
    if (live.size() > 12) {
      // Free one from the middle: holes to merge and reuse.
      const size_t k = rng() % live.size();
      auto [old, want] = live[k];
      EXPECT_EQ(old.sum(kInt64).item<int64_t>(), int64_t(want) * old.numel()) << "step " << step;
      live.erase(live.begin() + std::ptrdiff_t(k));
    }
    if (step % 100 == 99) cuda::empty_cache();  // unmaps pages under free blocks while others live
  }
  for (auto& [t, want] : live) {
    const std::vector<int32_t> got = t.cpu().to_vector<int32_t>();
    for (int32_t g : got) ASSERT_EQ(g, want);
  }
  live.clear();
  cuda::synchronize();
  cuda::empty_cache();
  expect_all_returned(d);
  EXPECT_GT(d("segment.small_pool.allocated"), 0);
  EXPECT_GT(d("segment.large_pool.allocated"), 0);
}

// Run with and without expandable segments: a 1 GiB block freed and carved into 8 blocks of
// 100 MiB, every other one freed, then 600 MiB under a limit of 1100 MiB. Fixed segments: the
// 1 GiB segment still holds 4 live blocks, 1 GiB + 600 MiB is over the limit: out of memory.
// Expandable: the free blocks' whole pages are unmapped (400 MiB mapped) and 600 MiB more mapped.
TEST(CudaExpandable, DISABLED_FragmentationChild) {
  const bool expandable = detail::gpu::alloc_config().expandable_segments;
  auto stream = cuda::Stream::create();
  cuda::StreamGuard guard(stream);
  cuda::empty_cache();
  StatDelta d;
  const int64_t total = cuda::get_device_properties().total_memory;
  cuda::set_per_process_memory_fraction(double(1100 * MiB) / double(total));
  {
    Tensor big = empty({1024 * MiB / 4}, on_gpu());
    big = Tensor();
    std::vector<Tensor> parts;
    for (int i = 0; i < 8; ++i) {
      parts.push_back(empty({100 * MiB / 4}, on_gpu()));
      EXPECT_EQ(addr(parts[size_t(i)]), addr(parts[0]) + i * 100 * MiB)
          << "carved from the freed 1 GiB, in order";
      parts.back().fill_(i);
    }
    for (int i = 0; i < 8; i += 2) parts[size_t(i)] = Tensor();
    std::printf("RESERVED_BEFORE=%lld\n", (long long)cuda::memory_reserved());
    Tensor x;
    try {
      x = empty({600 * MiB / 4}, on_gpu());
      std::printf("OOM=0\n");
      std::printf("RESERVED_WITH_X=%lld\n", (long long)cuda::memory_reserved());
    } catch (const OutOfMemoryError& e) {
      std::printf("OOM=1\n");
      EXPECT_NE(std::string(e.what()).find("set_per_process_memory_fraction"), std::string::npos) << e.what();
    }
    std::printf("RETRIES=%lld\n", (long long)d("num_alloc_retries"));
    // The checks below may need memory of their own (reductions): no limit for them.
    cuda::set_per_process_memory_fraction(1.0);
    if (x.defined()) {
      x.fill_(42);
      EXPECT_EQ(x.sum(kInt64).item<int64_t>(), int64_t(42) * x.numel());
    }
    for (int i = 1; i < 8; i += 2)
      EXPECT_EQ(parts[size_t(i)].sum(kInt64).item<int64_t>(), int64_t(i) * (100 * MiB / 4));
  }
  cuda::synchronize();
  cuda::empty_cache();
  std::printf("RESERVED_END=%lld\n", (long long)cuda::memory_reserved());
  std::printf("EXPANDABLE=%d\n", expandable ? 1 : 0);
  expect_all_returned(d);
}

// ---- the parent tests

TEST(CudaExpandable, GrowsInPlaceAndEmptyCacheUnmaps) {
  WICK_REQUIRE_CUDA();
  expect_child_passed(run_child("CudaExpandable.DISABLED_GrowsInPlace", kExpandable));
}

TEST(CudaExpandable, ManySizesOnTwoStreams) {
  WICK_REQUIRE_CUDA();
  expect_child_passed(run_child("CudaExpandable.DISABLED_ManySizesAndStreams", kExpandable));
}

TEST(CudaExpandable, FragmentationOutOfMemoryOnlyWithFixedSegments) {
  WICK_REQUIRE_CUDA();
  if (cuda::mem_get_info().first < 3 * 1024 * MiB) GTEST_SKIP() << "needs 3 GiB of free GPU memory";
  auto fixed = run_child("CudaExpandable.DISABLED_FragmentationChild", kFixed);
  expect_child_passed(fixed);
  EXPECT_EQ(child_value(fixed.output, "EXPANDABLE"), "0") << fixed.output;
  EXPECT_EQ(child_value(fixed.output, "OOM"), "1") << fixed.output;
  EXPECT_EQ(child_value(fixed.output, "RESERVED_BEFORE"), std::to_string(1024 * MiB)) << fixed.output;
  auto grown = run_child("CudaExpandable.DISABLED_FragmentationChild", kExpandable);
  expect_child_passed(grown);
  EXPECT_EQ(child_value(grown.output, "EXPANDABLE"), "1") << grown.output;
  EXPECT_EQ(child_value(grown.output, "OOM"), "0") << grown.output;
  // 1 GiB mapped as 52 pages of 20 MiB; after the retry's unmapping, 400 MiB live + 600 MiB.
  EXPECT_EQ(child_value(grown.output, "RESERVED_BEFORE"), std::to_string(1040 * MiB)) << grown.output;
  EXPECT_EQ(child_value(grown.output, "RESERVED_WITH_X"), std::to_string(1000 * MiB)) << grown.output;
  EXPECT_EQ(child_value(grown.output, "RETRIES"), "1") << grown.output;
  EXPECT_EQ(child_value(grown.output, "RESERVED_END"), "0") << grown.output;
}

// Graphs' private pools keep fixed segments while the rest of the allocator grows segments.
TEST(CudaExpandable, GraphTestsPassWithExpandableSegments) {
  WICK_REQUIRE_CUDA();
  auto r = run_child("CudaGraph.*", kExpandable);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("[  PASSED  ]"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("[  FAILED  ]"), std::string::npos) << r.output;
}
