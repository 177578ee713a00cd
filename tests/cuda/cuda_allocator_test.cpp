// The caching allocator: statistics after scripted sequences (expected values derived from the
// rules in docs/design.md, "The caching allocator": 512 B rounding, 2 MiB small segments up to
// 1 MiB, 20 MiB segments below
// 10 MiB, 2 MiB rounding above), splitting and merging, per-stream reuse, record_stream,
// empty_cache, out-of-memory with its message and recovery, the memory fraction, and the
// environment settings (in child processes).
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/cuda_hooks.h"
#include "cuda_test_util.h"
#include "stat_delta.h"
#include "wick/detail/storage.h"
#include "wick/wick.h"

using namespace wick;
using detail::DataPtr;
using wick::test::child_value;
using wick::test::run_child;

namespace {

constexpr int64_t KiB = 1024, MiB = 1024 * 1024;

DataPtr alloc(int64_t n) { return detail::cuda_allocator(cuda::current_device())->allocate(size_t(n)); }

char* addr(const DataPtr& p) { return static_cast<char*>(p.get()); }

using test::StatDelta;

// A fresh side stream, so that no block cached by another test can serve these requests.
struct FreshStream {
  FreshStream() : stream(cuda::Stream::create()), guard(stream) { cuda::empty_cache(); }
  cuda::Stream stream;
  cuda::StreamGuard guard;
};

}  // namespace

TEST(CudaAllocator, ExactStatsAfterScriptedSequence) {
  WICK_REQUIRE_CUDA();
  WICK_REQUIRE_CACHING();
  FreshStream fs;
  cuda::reset_peak_memory_stats();
  StatDelta d;
  // 1000 B -> 1024 B block of a new 2 MiB small segment; the rest stays free as a split block.
  auto a = alloc(1000);
  EXPECT_EQ(d("allocated_bytes.all.current"), 1024);
  EXPECT_EQ(d("allocated_bytes.small_pool.current"), 1024);
  EXPECT_EQ(d("requested_bytes.all.current"), 1000);
  EXPECT_EQ(d("reserved_bytes.all.current"), 2 * MiB);
  EXPECT_EQ(d("segment.small_pool.current"), 1);
  EXPECT_EQ(d("inactive_split.all.current"), 1);
  EXPECT_EQ(d("inactive_split_bytes.all.current"), 2 * MiB - 1024);
  // 15 MiB -> its own 16 MiB segment; 1 MiB left is not worth a split, so the block is 16 MiB.
  auto c = alloc(15 * MiB);
  // 3 MiB -> a new 20 MiB segment, split (17 MiB left > 1 MiB).
  auto b = alloc(3 * MiB);
  // 18 MiB + 1 -> 18 MiB + 512, too big for the 17 MiB left: a new 20 MiB segment, split.
  auto e = alloc(18 * MiB + 1);
  const int64_t e_size = 18 * MiB + 512;
  const int64_t peak = 1024 + 16 * MiB + 3 * MiB + e_size;
  EXPECT_EQ(d("allocated_bytes.all.current"), peak);
  EXPECT_EQ(d("allocated_bytes.large_pool.current"), peak - 1024);
  EXPECT_EQ(d("requested_bytes.all.current"), 1000 + 15 * MiB + 3 * MiB + 18 * MiB + 1);
  EXPECT_EQ(d("reserved_bytes.all.current"), 2 * MiB + 16 * MiB + 20 * MiB + 20 * MiB);
  EXPECT_EQ(d("reserved_bytes.large_pool.current"), 56 * MiB);
  EXPECT_EQ(d("segment.all.current"), 4);
  EXPECT_EQ(d("num_device_alloc"), 4);
  EXPECT_EQ(d("allocation.all.current"), 4);
  EXPECT_EQ(d("active_bytes.all.current"), peak);
  EXPECT_EQ(d("inactive_split.all.current"), 3);
  EXPECT_EQ(d("inactive_split_bytes.large_pool.current"), 17 * MiB + (20 * MiB - e_size));
  // Freeing b merges it with its free remainder: a whole 20 MiB segment, cached.
  b.reset();
  EXPECT_EQ(d("allocated_bytes.all.current"), peak - 3 * MiB);
  EXPECT_EQ(d("allocated_bytes.all.freed"), 3 * MiB);
  EXPECT_EQ(d("reserved_bytes.all.current"), 58 * MiB);
  EXPECT_EQ(d("inactive_split.all.current"), 2);
  EXPECT_EQ(d("inactive_split_bytes.large_pool.current"), 20 * MiB - e_size);
  // 5 MiB reuses that segment (no new cudaMalloc).
  auto f = alloc(5 * MiB);
  EXPECT_EQ(d("num_device_alloc"), 4);
  EXPECT_EQ(d("reserved_bytes.all.current"), 58 * MiB);
  EXPECT_EQ(d("allocated_bytes.all.peak"), peak + 2 * MiB);
  EXPECT_EQ(d("allocated_bytes.all.allocated"), peak + 5 * MiB);
  EXPECT_EQ(cuda::max_memory_allocated(), cuda::memory_allocated());
  // empty_cache frees whole unused segments only: c's (16 MiB) once c is gone.
  c.reset();
  cuda::empty_cache();
  EXPECT_EQ(d("reserved_bytes.all.current"), 42 * MiB);
  EXPECT_EQ(d("num_device_free"), 1);
  a.reset();
  e.reset();
  f.reset();
  cuda::empty_cache();
  EXPECT_EQ(d("reserved_bytes.all.current"), 0);
  EXPECT_EQ(d("allocated_bytes.all.current"), 0);
  EXPECT_EQ(d("requested_bytes.all.current"), 0);
  EXPECT_EQ(d("inactive_split.all.current"), 0);
  EXPECT_EQ(d("segment.all.current"), 0);
  EXPECT_EQ(d("reserved_bytes.all.peak"), 58 * MiB);
  cuda::reset_peak_memory_stats();
  EXPECT_EQ(cuda::max_memory_allocated(), cuda::memory_allocated());
  EXPECT_EQ(cuda::max_memory_reserved(), cuda::memory_reserved());
  EXPECT_EQ(cuda::memory_cached(), cuda::memory_reserved());
}

TEST(CudaAllocator, SplitAndMerge) {
  WICK_REQUIRE_CUDA();
  WICK_REQUIRE_CACHING();
  FreshStream fs;
  StatDelta d;
  auto a = alloc(512 * KiB), b = alloc(512 * KiB), c = alloc(512 * KiB);
  // Consecutive pieces of one 2 MiB segment.
  EXPECT_EQ(addr(b), addr(a) + 512 * KiB);
  EXPECT_EQ(addr(c), addr(b) + 512 * KiB);
  EXPECT_EQ(d("segment.all.current"), 1);
  char* base = addr(a);
  b.reset();  // free between two allocated blocks: nothing to merge with
  EXPECT_EQ(d("inactive_split.small_pool.current"), 2);
  EXPECT_EQ(d("inactive_split_bytes.small_pool.current"), 1024 * KiB);
  a.reset();  // merges with b
  EXPECT_EQ(d("inactive_split.small_pool.current"), 2);
  EXPECT_EQ(d("inactive_split_bytes.small_pool.current"), 1536 * KiB);
  // A 1 MiB request now fits the merged a+b exactly (best fit), at the segment's start.
  auto ab = alloc(1024 * KiB);
  EXPECT_EQ(addr(ab), base);
  ab.reset();
  c.reset();  // merges everything back into one whole segment
  EXPECT_EQ(d("inactive_split.small_pool.current"), 0);
  EXPECT_EQ(d("inactive_split_bytes.small_pool.current"), 0);
  auto whole = alloc(1024 * KiB);
  EXPECT_EQ(addr(whole), base);
  EXPECT_EQ(d("segment.all.current"), 1);
  // The large pool splits too: 3 MiB then 4 MiB come from one 20 MiB segment.
  auto x = alloc(3 * MiB), y = alloc(4 * MiB);
  EXPECT_EQ(addr(y), addr(x) + 3 * MiB);
  EXPECT_EQ(d("segment.large_pool.current"), 1);
}

TEST(CudaAllocator, BlocksStayWithTheirStream) {
  WICK_REQUIRE_CUDA();
  WICK_REQUIRE_CACHING();
  cuda::empty_cache();
  auto s1 = cuda::Stream::create(), s2 = cuda::Stream::create();
  char* first;
  {
    cuda::StreamGuard g(s1);
    auto p = alloc(64 * KiB);
    first = addr(p);
  }
  {
    cuda::StreamGuard g(s1);  // the fast path: the cached block comes straight back
    EXPECT_EQ(addr(alloc(64 * KiB)), first);
  }
  StatDelta d;
  {
    cuda::StreamGuard g(s2);  // another stream never gets it while it could still be in use
    auto p = alloc(64 * KiB);
    EXPECT_NE(addr(p), first);
    EXPECT_EQ(d("segment.all.current"), 1);
  }
}

// A freed small block is parked (docs/design.md, "The caching allocator") and handed straight
// back to the next request of its rounded size on its stream.
TEST(CudaAllocator, FreedSmallBlockIsReusedBySameSizeOnSameStream) {
  WICK_REQUIRE_CUDA();
  WICK_REQUIRE_CACHING();
  FreshStream fs;
  StatDelta d;
  auto t = empty({1}, Device("cuda"));
  void* p = t.data_ptr();
  t = Tensor();
  for (int i = 0; i < 3; ++i) {
    auto u = empty({100}, Device("cuda"));  // 400 B: rounded to 512 B as well
    EXPECT_EQ(u.data_ptr(), p) << i;
  }
  EXPECT_EQ(d("num_device_alloc"), 1);
  EXPECT_EQ(d("segment.small_pool.current"), 1);
  EXPECT_EQ(d("allocation.all.current"), 0);
  EXPECT_EQ(d("active.all.current"), 0);
  EXPECT_EQ(d("active.all.allocated"), 4);
  EXPECT_EQ(d("active.all.freed"), 4);
  // a + b on one-element tensors: each result takes the block of the one before.
  auto a = full({1}, 2.0, Device("cuda")), b = full({1}, 3.0, Device("cuda"));
  void* first = nullptr;
  for (int i = 0; i < 4; ++i) {
    auto c = a + b;
    if (i == 0) first = c.data_ptr();
    EXPECT_EQ(c.data_ptr(), first) << i;
    EXPECT_EQ(c.cpu().to_vector<float>(), std::vector<float>{5.f});
  }
  EXPECT_EQ(d("num_device_alloc"), 1);
}

TEST(CudaAllocator, FreedSmallBlockIsNotReusedByAnotherStream) {
  WICK_REQUIRE_CUDA();
  WICK_REQUIRE_CACHING();
  FreshStream fs;
  auto other = cuda::Stream::create();
  StatDelta d;
  auto t = empty({1}, Device("cuda"));
  void* p = t.data_ptr();
  t = Tensor();
  {
    cuda::StreamGuard g(other);
    auto u = empty({1}, Device("cuda"));
    EXPECT_NE(u.data_ptr(), p);
  }
  EXPECT_EQ(d("segment.small_pool.current"), 2);
  auto v = empty({1}, Device("cuda"));  // back on the first stream: its block again
  EXPECT_EQ(v.data_ptr(), p);
  {
    cuda::StreamGuard g(other);  // and the other stream's block stays its own
    auto u = empty({1}, Device("cuda"));
    EXPECT_NE(u.data_ptr(), p);
  }
  EXPECT_EQ(d("segment.small_pool.current"), 2);
}

// The statistics of a mix of small sizes, freed and reused: what the pool alone gives (the
// blocks held back for reuse are put back before the statistics are read).
TEST(CudaAllocator, SmallBlockStatsAfterFreeAndReuse) {
  WICK_REQUIRE_CUDA();
  WICK_REQUIRE_CACHING();
  FreshStream fs;
  cuda::reset_peak_memory_stats();
  StatDelta d;
  // Rounded: 512, 512, 1024, 1024, 4096, 100352, 1 MiB, one after the other in a new 2 MiB
  // segment; the rest (2 MiB - 1156096 B) stays free.
  const int64_t req[] = {1, 512, 513, 1000, 4096, 100000, MiB};
  const int64_t rounded[] = {512, 512, 1024, 1024, 4096, 100352, MiB};
  std::vector<DataPtr> p;
  for (int64_t n : req) p.push_back(alloc(n));
  for (size_t i = 1; i < p.size(); ++i) EXPECT_EQ(addr(p[i]) - addr(p[i - 1]), rounded[i - 1]) << i;
  const int64_t rest = 2 * MiB - 1156096;
  EXPECT_EQ(d("segment.small_pool.current"), 1);
  EXPECT_EQ(d("inactive_split.small_pool.current"), 1);
  EXPECT_EQ(d("inactive_split_bytes.small_pool.current"), rest);
  char* third = addr(p[3]);
  for (size_t i : {1, 3, 5}) p[i].reset();  // each between two allocated blocks: three free pieces
  EXPECT_EQ(d("allocation.small_pool.current"), 4);
  EXPECT_EQ(d("active.small_pool.current"), 4);
  EXPECT_EQ(d("allocated_bytes.small_pool.current"), 512 + 1024 + 4096 + MiB);
  EXPECT_EQ(d("active_bytes.small_pool.current"), 512 + 1024 + 4096 + MiB);
  EXPECT_EQ(d("requested_bytes.small_pool.current"), 1 + 513 + 4096 + MiB);
  EXPECT_EQ(d("inactive_split.small_pool.current"), 4);
  EXPECT_EQ(d("inactive_split_bytes.small_pool.current"), 512 + 1024 + 100352 + rest);
  EXPECT_EQ(d("active.all.allocated"), 7);
  EXPECT_EQ(d("active.all.freed"), 3);
  EXPECT_EQ(d("active.all.peak"), 7);
  EXPECT_EQ(d("allocated_bytes.all.peak"), 1156096);
  // 1000 B: the best fit is the freed 1024 B block.
  auto q = alloc(1000);
  EXPECT_EQ(addr(q), third);
  EXPECT_EQ(d("allocation.small_pool.current"), 5);
  EXPECT_EQ(d("active_bytes.small_pool.current"), 512 + 2 * 1024 + 4096 + MiB);
  EXPECT_EQ(d("requested_bytes.small_pool.current"), 1 + 513 + 1000 + 4096 + MiB);
  EXPECT_EQ(d("inactive_split.small_pool.current"), 3);
  EXPECT_EQ(d("inactive_split_bytes.small_pool.current"), 512 + 100352 + rest);
  EXPECT_EQ(d("active.all.allocated"), 8);
  EXPECT_EQ(d("num_device_alloc"), 1);
  // Everything freed: the segment is one free block again (nothing split), then goes back.
  q.reset();
  for (auto& x : p) x.reset();
  EXPECT_EQ(d("allocation.all.current"), 0);
  EXPECT_EQ(d("active.all.current"), 0);
  EXPECT_EQ(d("active_bytes.all.current"), 0);
  EXPECT_EQ(d("requested_bytes.all.current"), 0);
  EXPECT_EQ(d("inactive_split.all.current"), 0);
  EXPECT_EQ(d("inactive_split_bytes.all.current"), 0);
  EXPECT_EQ(d("active.all.freed"), 8);
  EXPECT_EQ(d("reserved_bytes.small_pool.current"), 2 * MiB);
  cuda::empty_cache();
  EXPECT_EQ(d("reserved_bytes.all.current"), 0);
  EXPECT_EQ(d("segment.all.current"), 0);
  EXPECT_EQ(d("num_device_free"), 1);
}

// More freed small blocks than are held back for reuse, on two streams: the counts stay those
// of the pool, and empty_cache gives every segment back.
TEST(CudaAllocator, ManyFreedSmallBlocksMergeBack) {
  WICK_REQUIRE_CUDA();
  WICK_REQUIRE_CACHING();
  FreshStream fs;
  auto other = cuda::Stream::create();
  StatDelta d;
  std::vector<DataPtr> p;
  for (int i = 0; i < 40; ++i) {
    cuda::StreamGuard g(i % 2 ? other : fs.stream);
    p.push_back(alloc(512 * (i % 5 + 1)));  // 512 B to 2560 B, all multiples of 512
  }
  EXPECT_EQ(d("segment.small_pool.current"), 2);
  EXPECT_EQ(d("inactive_split.small_pool.current"), 2);
  for (size_t i = 0; i < p.size(); ++i)  // 20 of them, on both streams: more than are held back
    if (i % 4 < 2) p[i].reset();
  for (int i = 0; i < 10; ++i) {  // reuse of some, in between
    cuda::StreamGuard g(i % 2 ? other : fs.stream);
    p.push_back(alloc(512 * (i % 3 + 1)));
  }
  for (auto& x : p) x.reset();
  EXPECT_EQ(d("allocation.all.current"), 0);
  EXPECT_EQ(d("active.all.current"), 0);
  EXPECT_EQ(d("active_bytes.all.current"), 0);
  EXPECT_EQ(d("inactive_split.all.current"), 0);
  EXPECT_EQ(d("inactive_split_bytes.all.current"), 0);
  EXPECT_EQ(d("active.all.allocated"), 50);
  EXPECT_EQ(d("active.all.freed"), 50);
  EXPECT_EQ(d("segment.small_pool.current"), 2);
  EXPECT_EQ(d("reserved_bytes.small_pool.current"), 4 * MiB);
  cuda::empty_cache();
  EXPECT_EQ(d("reserved_bytes.all.current"), 0);
  EXPECT_EQ(d("num_device_free"), 2);
}

TEST(CudaAllocator, RecordStreamKeepsMemoryUntilTheStreamIsDone) {
  WICK_REQUIRE_CUDA();
  WICK_REQUIRE_CACHING();
  cuda::empty_cache();
  auto side = cuda::Stream::create();
  const int64_t n = 262144;  // 1 MiB of floats: half a small segment
  auto x = empty({n}, Device("cuda"));
  char* px = static_cast<char*>(x.data_ptr());
  // Without record_stream the freed block is reused at once.
  x = Tensor();
  x = empty({n}, Device("cuda"));
  EXPECT_EQ(static_cast<char*>(x.data_ptr()), px);
  (x * 2).fill_(0);  // loads both kernels now: a first launch can take longer than the work below
  cuda::synchronize();
  {
    cuda::StreamGuard g(side);
    side.wait_stream(cuda::default_stream());
    auto y = x * 2;  // x used on side
    auto big = empty({int64_t(64) << 20}, Device("cuda"));
    for (int i = 0; i < 60; ++i) big.fill_(i);  // keeps `side` busy for about 5 ms
    x.record_stream(side);
    big.record_stream(side);  // allocated on side: nothing to wait for
  }
  x = Tensor();
  auto z = empty({n}, Device("cuda"));  // side is still busy: x's block must not come back
  EXPECT_NE(static_cast<char*>(z.data_ptr()), px);
  EXPECT_EQ(cuda::memory_stats()["active.all.current"] - cuda::memory_stats()["allocation.all.current"], 1)
      << "x waits for side's event";
  side.synchronize();
  auto w = empty({n}, Device("cuda"));  // now it may
  EXPECT_EQ(static_cast<char*>(w.data_ptr()), px);
}

TEST(CudaAllocator, EmptyCacheReturnsMemoryToTheDriver) {
  WICK_REQUIRE_CUDA();
  cuda::empty_cache();
  const int64_t reserved0 = cuda::memory_reserved();
  auto t = empty({256 * MiB / 4}, Device("cuda"));
  const int64_t free_with = cuda::mem_get_info().first;
  t = Tensor();
  EXPECT_EQ(cuda::memory_reserved() - reserved0, test::caching_disabled() ? 0 : 256 * MiB);
  cuda::empty_cache();
  EXPECT_EQ(cuda::memory_reserved(), reserved0);
  // A tool injected into the CUDA runtime (compute-sanitizer's racecheck) may keep freed device
  // memory for itself: the driver's count of free memory then says nothing about wick.
  if (test::cuda_tool_injected()) GTEST_SKIP() << "CUDA_INJECTION64_PATH is set: the driver's free memory is the tool's";
  EXPECT_GE(cuda::mem_get_info().first - free_with, 256 * MiB);
}

TEST(CudaAllocator, OutOfMemoryIsReportedAndRecoverable) {
  WICK_REQUIRE_CUDA();
  auto keep = full({1000}, 7.0, Device("cuda"));
  const int64_t total = cuda::get_device_properties().total_memory;
  const auto before = cuda::memory_stats();
  try {
    auto t = empty({total / 2}, Device("cuda"));  // 2x the GPU, as float32
    FAIL() << "no OutOfMemoryError";
  } catch (const OutOfMemoryError& e) {
    std::string m = e.what();
    // The message names the op the user called.
    EXPECT_EQ(m.rfind("[empty] CUDA out of memory. Tried to allocate ", 0), 0u) << m;
    EXPECT_NE(m.find("GPU " + std::to_string(cuda::current_device()) + " has a total capacity of"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("is allocated by wick"), std::string::npos) << m;
    EXPECT_NE(m.find("is reserved by wick but unallocated"), std::string::npos) << m;
    EXPECT_NE(m.find("GiB"), std::string::npos) << m;
  }
  EXPECT_EQ(cuda::memory_stats()["num_ooms"] - before.at("num_ooms"), 1);
  // The program goes on: old tensors are intact, new ones work.
  auto more = full({1000}, 2.0, Device("cuda"));
  auto sum = (keep + more).cpu().to_vector<float>();
  EXPECT_EQ(sum, std::vector<float>(1000, 9.f));
}

TEST(CudaAllocator, FreesTheCacheAndRetriesBeforeFailing) {
  WICK_REQUIRE_CUDA();
  WICK_REQUIRE_CACHING();
  cuda::empty_cache();
  auto s1 = cuda::Stream::create(), s2 = cuda::Stream::create();
  const int64_t free0 = cuda::mem_get_info().first;
  const int64_t chunk = (free0 / 5) / (2 * MiB) * (2 * MiB);
  {
    cuda::StreamGuard g(s1);
    std::vector<DataPtr> hold;
    for (int i = 0; i < 4; ++i) hold.push_back(alloc(chunk));
  }  // freed: 4/5 of the free memory now sits cached on s1
  StatDelta d;
  {
    cuda::StreamGuard g(s2);  // s2 can't use s1's blocks, and the GPU can't fit 2 more chunks
    auto p = alloc(2 * chunk);
    EXPECT_NE(p.get(), nullptr);
  }
  EXPECT_EQ(d("num_alloc_retries"), 1);
  EXPECT_EQ(d("num_ooms"), 0);
  EXPECT_EQ(d("num_device_free"), 4);
  cuda::empty_cache();
}

TEST(CudaAllocator, MemoryFractionLimitsThisProcess) {
  WICK_REQUIRE_CUDA();
  cuda::empty_cache();
  const int64_t total = cuda::get_device_properties().total_memory;
  const int64_t allowed = cuda::memory_reserved() + 64 * MiB;
  cuda::set_per_process_memory_fraction(double(allowed) / double(total));
  try {
    auto t = empty({128 * MiB / 4}, Device("cuda"));
    ADD_FAILURE() << "no OutOfMemoryError";
  } catch (const OutOfMemoryError& e) {
    EXPECT_NE(std::string(e.what()).find("set_per_process_memory_fraction"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(empty({32 * MiB / 4}, Device("cuda")));
  cuda::set_per_process_memory_fraction(1.0);
  EXPECT_NO_THROW(empty({128 * MiB / 4}, Device("cuda")));
  EXPECT_THROW(cuda::set_per_process_memory_fraction(1.5), ValueError);
}

TEST(CudaAllocator, StatKeysAndSummary) {
  WICK_REQUIRE_CUDA();
  auto t = empty({1000}, Device("cuda"));
  auto s = cuda::memory_stats();
  for (const char* stat : {"allocation", "segment", "active", "inactive_split", "allocated_bytes",
                           "reserved_bytes", "active_bytes", "inactive_split_bytes", "requested_bytes"})
    for (const char* pool : {"all", "small_pool", "large_pool"})
      for (const char* f : {"current", "peak", "allocated", "freed"})
        EXPECT_TRUE(s.count(std::string(stat) + "." + pool + "." + f)) << stat << "." << pool << "." << f;
  for (const char* k :
       {"num_alloc_retries", "num_ooms", "num_sync_all_streams", "num_device_alloc", "num_device_free",
        "max_split_size", "oversize_allocations.current", "oversize_segments.peak"})
    EXPECT_TRUE(s.count(k)) << k;
  EXPECT_EQ(s["allocated_bytes.all.current"], cuda::memory_allocated());
  EXPECT_EQ(s["reserved_bytes.all.current"], cuda::memory_reserved());
  EXPECT_GE(cuda::memory_allocated(), 4000);
  const std::string summary = cuda::memory_summary();
  for (const char* part : {"CUDA memory summary, device ID", "Allocated memory", "GPU reserved memory",
                           "Non-releasable memory", "Allocations", "cudaMalloc retries", "Cur Usage"})
    EXPECT_NE(summary.find(part), std::string::npos) << part << "\n" << summary;
  // Every line of the table has the same width.
  size_t width = summary.find('\n');
  for (size_t pos = 0; pos < summary.size();) {
    size_t end = summary.find('\n', pos);
    EXPECT_EQ(end - pos, width) << summary.substr(pos, end - pos);
    pos = end + 1;
  }
}

// ---- the environment, in child processes (read once per process)

TEST(CudaAllocator, DISABLED_ChildConfig) {
  try {
    auto big = empty({60 * MiB / 4}, Device("cuda"));
    big = Tensor();
    auto small = empty({30 * MiB / 4}, Device("cuda"));  // must not take the 60 MiB block
    auto s = cuda::memory_stats();
    std::printf("RESERVED=%lld\n", (long long)s["reserved_bytes.all.current"]);
    std::printf("MAX_SPLIT=%lld\n", (long long)s["max_split_size"]);
    std::printf("OVERSIZE_SEGMENTS=%lld\n", (long long)s["oversize_segments.current"]);
    small = Tensor();
    std::printf("RESERVED_AFTER_FREE=%lld\n", (long long)cuda::memory_reserved());
  } catch (const Error& e) {
    std::printf("ERROR=%s\n", e.what());
  }
}

TEST(CudaAllocator, SubprocessAllocConf) {
  WICK_REQUIRE_CUDA();
  auto r = run_child("CudaAllocator.DISABLED_ChildConfig",
                     "env -u WICK_NO_CUDA_MEMORY_CACHING "
                     "WICK_CUDA_ALLOC_CONF=max_split_size_mb:40,garbage_collection_threshold:0.6");
  EXPECT_EQ(child_value(r.output, "MAX_SPLIT"), std::to_string(40 * MiB)) << r.output;
  EXPECT_EQ(child_value(r.output, "RESERVED"), std::to_string(60 * MiB + 30 * MiB)) << r.output;
  EXPECT_EQ(child_value(r.output, "OVERSIZE_SEGMENTS"), "1") << r.output;
  // Without the setting the 60 MiB block is split for the 30 MiB request.
  r = run_child("CudaAllocator.DISABLED_ChildConfig",
                "env -u WICK_NO_CUDA_MEMORY_CACHING -u WICK_CUDA_ALLOC_CONF");
  EXPECT_EQ(child_value(r.output, "RESERVED"), std::to_string(60 * MiB)) << r.output;
  EXPECT_EQ(child_value(r.output, "RESERVED_AFTER_FREE"), std::to_string(60 * MiB)) << r.output;
  // No caching: memory goes back to the driver as soon as it is freed.
  r = run_child("CudaAllocator.DISABLED_ChildConfig", "WICK_NO_CUDA_MEMORY_CACHING=1");
  EXPECT_EQ(child_value(r.output, "RESERVED"), std::to_string(30 * MiB)) << r.output;
  EXPECT_EQ(child_value(r.output, "RESERVED_AFTER_FREE"), "0") << r.output;
  r = run_child("CudaAllocator.DISABLED_ChildConfig", "WICK_CUDA_ALLOC_CONF=max_split_size:40");
  EXPECT_NE(child_value(r.output, "ERROR").find("[WICK_CUDA_ALLOC_CONF] unknown key 'max_split_size'"),
            std::string::npos)
      << r.output;
  // Expandable segments (tests/cuda/cuda_expandable_test.cpp has more): 60 MiB are three pages
  // of 20 MiB; the 30 MiB request is split from the freed 60 MiB block.
  r = run_child("CudaAllocator.DISABLED_ChildConfig",
                "env -u WICK_NO_CUDA_MEMORY_CACHING WICK_CUDA_ALLOC_CONF=expandable_segments:True");
  EXPECT_EQ(child_value(r.output, "RESERVED"), std::to_string(60 * MiB)) << r.output;
  EXPECT_EQ(child_value(r.output, "RESERVED_AFTER_FREE"), std::to_string(60 * MiB)) << r.output;
  EXPECT_EQ(r.output.find("ERROR="), std::string::npos) << r.output;
}
