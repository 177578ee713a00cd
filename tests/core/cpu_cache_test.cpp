// The CPU allocator's cache of large blocks: a freed large block comes back for the next
// request of its size class, live blocks never share memory, values written are read back,
// the cached bytes stay under the limit, empty_cpu_cache() and a zero limit release
// everything, and concurrent use from several std::threads keeps every tensor's own values.
// The cache is turned on by each test (it is off by default under AddressSanitizer).
#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/backend_settings.h"
#include "wick/wick.h"

namespace wick {
namespace {

constexpr size_t kMiB = size_t(1) << 20;

// Sets a cache limit for one test and puts the previous one back.
class CacheScope {
 public:
  explicit CacheScope(size_t limit) : saved_(detail::cpu_cache_limit()) {
    empty_cpu_cache();
    detail::set_cpu_cache_limit(limit);
  }
  ~CacheScope() {
    empty_cpu_cache();
    detail::set_cpu_cache_limit(saved_);
  }

 private:
  size_t saved_;
};

const int64_t k4MiBFloats = int64_t(kMiB);  // 4 MiB of float32

TEST(CpuCache, FreedLargeBlockIsReused) {
  CacheScope scope(256 * kMiB);
  void* first;
  {
    auto t = empty({k4MiBFloats});
    first = t.data_ptr();
  }
  EXPECT_EQ(detail::cpu_cached_bytes(), 4 * kMiB);
  auto again = empty({k4MiBFloats});
  EXPECT_EQ(again.data_ptr(), first);
  EXPECT_EQ(detail::cpu_cached_bytes(), 0u);
  // A request a little smaller falls in the same size class and gets the block too.
  void* p = again.data_ptr();
  again = Tensor();
  auto smaller = empty({k4MiBFloats - 1000});
  EXPECT_EQ(smaller.data_ptr(), p);
}

TEST(CpuCache, SmallBlocksAreNotCached) {
  CacheScope scope(256 * kMiB);
  { auto t = empty({1000}); }
  { auto t = empty({int64_t(kMiB / 4) - 16}); }  // just under 1 MiB
  EXPECT_EQ(detail::cpu_cached_bytes(), 0u);
}

TEST(CpuCache, LiveBlocksNeverAliasAndKeepTheirValues) {
  CacheScope scope(256 * kMiB);
  std::vector<Tensor> live;
  std::vector<float> want;
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 6; ++i) {
      live.push_back(full({k4MiBFloats}, double(round * 10 + i)));
      want.push_back(float(round * 10 + i));
    }
    // Every live tensor has its own memory and its own values.
    std::set<void*> now;
    for (const auto& t : live) EXPECT_TRUE(now.insert(t.data_ptr()).second);
    for (size_t i = 0; i < live.size(); ++i) {
      const float* p = live[i].data_ptr<float>();
      EXPECT_EQ(p[0], want[i]);
      EXPECT_EQ(p[k4MiBFloats - 1], want[i]);
    }
    live.resize(live.size() / 2);  // free the later half: its blocks are reused next round
    want.resize(live.size());
  }
  // An out-of-place op whose output reuses a freed block computes the right values.
  auto a = full({k4MiBFloats}, 1.5), b = full({k4MiBFloats}, 2.0);
  for (int i = 0; i < 3; ++i) {
    auto c = a + b;
    EXPECT_EQ(c.data_ptr<float>()[0], 3.5f);
    EXPECT_EQ(c.data_ptr<float>()[k4MiBFloats - 1], 3.5f);
    EXPECT_NE(c.data_ptr(), a.data_ptr());
    EXPECT_NE(c.data_ptr(), b.data_ptr());
  }
}

TEST(CpuCache, LimitIsRespectedAndEmptyCacheReleases) {
  CacheScope scope(10 * kMiB);
  { auto a = empty({k4MiBFloats}), b = empty({k4MiBFloats}), c = empty({k4MiBFloats}); }
  // Three 4 MiB blocks freed; at most two fit under 10 MiB.
  EXPECT_EQ(detail::cpu_cached_bytes(), 8 * kMiB);
  { auto big = empty({int64_t(4 * kMiB)}); }  // 16 MiB: over the limit, not kept
  EXPECT_EQ(detail::cpu_cached_bytes(), 8 * kMiB);
  empty_cpu_cache();
  EXPECT_EQ(detail::cpu_cached_bytes(), 0u);
  { auto a = empty({k4MiBFloats}); }
  EXPECT_EQ(detail::cpu_cached_bytes(), 4 * kMiB);
  detail::set_cpu_cache_limit(0);  // off: what was cached goes, nothing more is kept
  EXPECT_EQ(detail::cpu_cached_bytes(), 0u);
  { auto a = empty({k4MiBFloats}); }
  EXPECT_EQ(detail::cpu_cached_bytes(), 0u);
}

TEST(CpuCache, ConcurrentThreadsKeepTheirOwnValues) {
  CacheScope scope(64 * kMiB);
  std::atomic<int> bad{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&, t] {
      for (int i = 0; i < 40; ++i) {
        const int64_t n = k4MiBFloats / 4 + (i % 3) * 100000;  // three size classes
        auto x = full({n}, double(t * 1000 + i));
        auto y = x + 1.0;  // a second large block from the cache while x is alive
        const float want = float(t * 1000 + i);
        if (x.data_ptr() == y.data_ptr()) ++bad;
        const float* px = x.data_ptr<float>();
        const float* py = y.data_ptr<float>();
        for (int64_t k = 0; k < n; k += 4099)
          if (px[k] != want || py[k] != want + 1) ++bad;
        if (px[n - 1] != want || py[n - 1] != want + 1) ++bad;
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_LE(detail::cpu_cached_bytes(), 64 * kMiB);
}

}  // namespace
}  // namespace wick
