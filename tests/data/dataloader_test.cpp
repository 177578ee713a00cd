// DataLoader: every sample exactly once per epoch (with and without shuffling, drop_last, several
// workers), batches in order, shuffling reproducible by seed and new each epoch, the prefetch
// bound, early exit without a hang, worker exceptions on the main thread, pinned batches.
#include "wick/data/dataloader.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <numeric>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "wick/wick.h"

using namespace wick;
using wick::data::DataLoader;
using wick::data::DataLoaderOptions;
using wick::data::Example;
using wick::data::TensorDataset;

namespace {

// n samples whose data row is {i, 2i} (float32) and target i (int64): each names itself.
TensorDataset numbered(int64_t n) {
  std::vector<float> d;
  std::vector<int64_t> t;
  for (int64_t i = 0; i < n; ++i) {
    d.push_back(float(i));
    d.push_back(float(2 * i));
    t.push_back(i);
  }
  Tensor data = empty({n, 2}, kFloat32), target = empty({n}, kInt64);
  std::copy(d.begin(), d.end(), data.data_ptr<float>());
  std::copy(t.begin(), t.end(), target.data_ptr<int64_t>());
  return TensorDataset(data, target);
}

// The targets of one epoch, batch by batch, checking that each data row matches its target.
std::vector<std::vector<int64_t>> run_epoch(DataLoader& loader) {
  std::vector<std::vector<int64_t>> batches;
  for (auto& batch : loader) {
    EXPECT_EQ(batch.data.dim(), 2);
    EXPECT_EQ(batch.data.size(0), batch.target.size(0));
    auto ids = batch.target.to_vector<int64_t>();
    auto rows = batch.data.to_vector<float>();
    for (size_t i = 0; i < ids.size(); ++i) {
      EXPECT_EQ(rows[2 * i], float(ids[i]));
      EXPECT_EQ(rows[2 * i + 1], float(2 * ids[i]));
    }
    batches.push_back(ids);
  }
  return batches;
}

std::vector<int64_t> flat(const std::vector<std::vector<int64_t>>& batches) {
  std::vector<int64_t> all;
  for (auto& b : batches) all.insert(all.end(), b.begin(), b.end());
  return all;
}

}  // namespace

TEST(DataLoader, SequentialEveryBatch) {
  for (int workers : {0, 1, 3}) {
    DataLoader loader(numbered(103), {.batch_size = 10, .num_workers = workers});
    EXPECT_EQ(loader.size(), 11);
    auto batches = run_epoch(loader);
    ASSERT_EQ(batches.size(), 11u) << workers << " workers";
    for (size_t b = 0; b < batches.size(); ++b) {
      std::vector<int64_t> want;
      for (int64_t i = int64_t(b) * 10; i < std::min<int64_t>(103, int64_t(b + 1) * 10); ++i)
        want.push_back(i);
      EXPECT_EQ(batches[b], want) << "batch " << b << ", " << workers << " workers";
    }
  }
}

TEST(DataLoader, ShuffleVisitsEverySampleOnce) {
  for (int workers : {0, 2}) {
    DataLoader loader(numbered(1000),
                      {.batch_size = 64, .shuffle = true, .num_workers = workers, .seed = 11});
    for (int epoch = 0; epoch < 2; ++epoch) {
      auto batches = run_epoch(loader);
      ASSERT_EQ(batches.size(), 16u);
      for (size_t b = 0; b + 1 < batches.size(); ++b) EXPECT_EQ(batches[b].size(), 64u);
      EXPECT_EQ(batches.back().size(), 1000u - 15 * 64);
      auto all = flat(batches);
      std::vector<int64_t> sorted = all;
      std::sort(sorted.begin(), sorted.end());
      std::vector<int64_t> want(1000);
      std::iota(want.begin(), want.end(), 0);
      EXPECT_EQ(sorted, want);
      EXPECT_NE(all, want) << "shuffled order equals the sequential one";
    }
  }
}

TEST(DataLoader, DropLast) {
  for (bool shuffle : {false, true}) {
    DataLoader loader(numbered(100),
                      {.batch_size = 32, .shuffle = shuffle, .num_workers = 2, .drop_last = true});
    EXPECT_EQ(loader.size(), 3);
    auto batches = run_epoch(loader);
    ASSERT_EQ(batches.size(), 3u);
    for (auto& b : batches) EXPECT_EQ(b.size(), 32u);
    auto all = flat(batches);
    EXPECT_EQ(std::set<int64_t>(all.begin(), all.end()).size(), 96u);
    if (!shuffle) {
      EXPECT_EQ(all.back(), 95);
    }
  }
  DataLoader tiny(numbered(5), {.batch_size = 8, .drop_last = true});
  EXPECT_EQ(tiny.size(), 0);
  EXPECT_TRUE(run_epoch(tiny).empty());
}

TEST(DataLoader, SeedReproducibleAndNewEachEpoch) {
  DataLoader a(numbered(200), {.batch_size = 50, .shuffle = true, .num_workers = 2, .seed = 42});
  DataLoader b(numbered(200), {.batch_size = 50, .shuffle = true, .seed = 42});
  DataLoader c(numbered(200), {.batch_size = 50, .shuffle = true, .seed = 43});
  auto a1 = flat(run_epoch(a)), a2 = flat(run_epoch(a));
  auto b1 = flat(run_epoch(b)), b2 = flat(run_epoch(b));
  auto c1 = flat(run_epoch(c));
  EXPECT_EQ(a1, b1);
  EXPECT_EQ(a2, b2);
  EXPECT_NE(a1, a2);
  EXPECT_NE(a1, c1);
  EXPECT_EQ(a.epoch(), 2u);
}

TEST(DataLoader, SetEpochResumesTheOrder) {
  DataLoader a(numbered(120), {.batch_size = 16, .shuffle = true, .num_workers = 1, .seed = 5});
  run_epoch(a);
  run_epoch(a);
  auto third = flat(run_epoch(a));
  DataLoader b(numbered(120), {.batch_size = 16, .shuffle = true, .seed = 5});
  b.set_epoch(2);
  EXPECT_EQ(flat(run_epoch(b)), third);
  EXPECT_EQ(b.epoch(), 3u);
}

TEST(DataLoader, ShuffleWithoutSeedFollowsManualSeed) {
  DataLoader loader(numbered(300), {.batch_size = 100, .shuffle = true});
  manual_seed(7);
  auto first = flat(run_epoch(loader));
  auto second = flat(run_epoch(loader));
  manual_seed(7);
  EXPECT_EQ(flat(run_epoch(loader)), first);
  EXPECT_EQ(flat(run_epoch(loader)), second);
  EXPECT_NE(first, second);
}

TEST(DataLoader, SampleOrderIsAPermutation) {
  for (uint64_t seed : {0ull, 1ull, 123456789ull}) {
    auto order = data::sample_order(257, true, seed);
    std::vector<int64_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    for (int64_t i = 0; i < 257; ++i) ASSERT_EQ(sorted[size_t(i)], i);
  }
  // Each index lands in each position about equally often over many seeds (Fisher-Yates is uniform).
  const int n = 5, trials = 20000;
  std::vector<int> first_is(n, 0);
  for (int s = 0; s < trials; ++s) ++first_is[size_t(data::sample_order(n, true, uint64_t(s))[0])];
  for (int k = 0; k < n; ++k) EXPECT_NEAR(first_is[size_t(k)], trials / n, 300) << "index " << k;
  auto seq = data::sample_order(4, false, 99);
  EXPECT_EQ(seq, (std::vector<int64_t>{0, 1, 2, 3}));
}

namespace {

// Slow, uneven batches; records how far workers run ahead of what the loop has taken.
class SlowDataset : public data::Dataset {
 public:
  explicit SlowDataset(int64_t n, std::atomic<int64_t>* taken = nullptr,
                       std::atomic<int64_t>* ahead = nullptr, int64_t batch = 1)
      : n_(n), taken_(taken), ahead_(ahead), batch_(batch) {}
  int64_t size() const override { return n_; }
  Example<> get(int64_t i) const override {
    // Later samples are faster, so with several workers they would finish first.
    std::this_thread::sleep_for(std::chrono::microseconds(50 * ((n_ - i) % 7)));
    return {full({3}, double(i)), full({}, i, kInt64)};
  }
  Example<> get_batch(const std::vector<int64_t>& indices) const override {
    if (taken_) {
      int64_t k = indices[0] / batch_;
      int64_t lead = k - taken_->load();
      int64_t prev = ahead_->load();
      while (lead > prev && !ahead_->compare_exchange_weak(prev, lead)) {}
    }
    return Dataset::get_batch(indices);
  }

 private:
  int64_t n_;
  std::atomic<int64_t>* taken_;
  std::atomic<int64_t>* ahead_;
  int64_t batch_;
};

}  // namespace

TEST(DataLoader, InOrderWithUnevenWorkers) {
  DataLoader loader(SlowDataset(120), {.batch_size = 4, .num_workers = 4, .prefetch_factor = 3});
  int64_t next = 0;
  for (auto& batch : loader) {
    EXPECT_EQ(batch.data.sizes().vec(), (std::vector<int64_t>{4, 3}));
    auto ids = batch.target.to_vector<int64_t>();
    auto rows = batch.data.to_vector<float>();
    for (size_t i = 0; i < ids.size(); ++i) {
      EXPECT_EQ(ids[i], next++);
      for (int c = 0; c < 3; ++c) EXPECT_EQ(rows[3 * i + size_t(c)], float(ids[i]));
    }
  }
  EXPECT_EQ(next, 120);
}

TEST(DataLoader, PrefetchIsBounded) {
  std::atomic<int64_t> taken{0}, ahead{0};
  const int workers = 3, prefetch = 2;
  auto ds = std::make_shared<SlowDataset>(400, &taken, &ahead, 2);
  DataLoader loader(ds, {.batch_size = 2, .num_workers = workers, .prefetch_factor = prefetch});
  for (auto& batch : loader) {
    (void)batch;
    std::this_thread::sleep_for(std::chrono::microseconds(200));  // a slow loop: workers get ahead
    ++taken;
  }
  // While the loop body holds batch j (this counter still at j), workers may start batches up
  // to j + workers * prefetch.
  EXPECT_LE(ahead.load(), workers * prefetch);
  EXPECT_GE(ahead.load(), 1);
}

TEST(DataLoader, EarlyBreakDoesNotHang) {
  auto ds = std::make_shared<SlowDataset>(10000);
  DataLoader loader(ds, {.batch_size = 8, .shuffle = true, .num_workers = 3, .prefetch_factor = 4});
  for (int epoch = 0; epoch < 3; ++epoch) {
    int seen = 0;
    for (auto& batch : loader) {
      EXPECT_EQ(batch.target.numel(), 8);
      if (++seen == 2) break;
    }
    EXPECT_EQ(seen, 2);
  }
  // An iterator dropped before its first increment.
  { auto it = loader.begin(); }
}

namespace {

class FailingDataset : public data::Dataset {
 public:
  int64_t size() const override { return 100; }
  Example<> get(int64_t i) const override {
    WICK_CHECK(i != 37, ValueError, "FailingDataset", "sample ", i, " is broken");
    return {full({2}, double(i)), full({}, i, kInt64)};
  }
};

}  // namespace

TEST(DataLoader, WorkerExceptionReachesTheLoop) {
  for (int workers : {0, 1, 3}) {
    DataLoader loader(FailingDataset(), {.batch_size = 10, .num_workers = workers});
    int64_t batches = 0;
    try {
      for (auto& batch : loader) {
        (void)batch;
        ++batches;
      }
      ADD_FAILURE() << "no exception with " << workers << " workers";
    } catch (const ValueError& e) {
      EXPECT_STREQ(e.what(), "[FailingDataset] sample 37 is broken");
    }
    EXPECT_EQ(batches, 3) << workers << " workers: batches before the broken one come out first";
  }
}

TEST(DataLoader, DefaultGetBatchStacksSamples) {
  FailingDataset ds;  // get works for every index but 37
  Example<> b = ds.get_batch({5, 0, 99});
  EXPECT_EQ(b.data.sizes().vec(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(b.target.sizes().vec(), (std::vector<int64_t>{3}));
  EXPECT_EQ(b.data.to_vector<double>(), (std::vector<double>{5, 5, 0, 0, 99, 99}));
  EXPECT_EQ(b.target.to_vector<int64_t>(), (std::vector<int64_t>{5, 0, 99}));
}

TEST(DataLoader, TensorDatasetChecks) {
  EXPECT_THROW(TensorDataset(zeros({3, 2}), zeros({4})), ValueError);
  auto ds = numbered(4);
  EXPECT_THROW(ds.get(4), IndexError);
  EXPECT_THROW(ds.get_batch({1, 9}), IndexError);
  auto [x, y] = ds.get(3);
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{3, 6}));
  EXPECT_EQ(y.item<int64_t>(), 3);
  EXPECT_THROW(DataLoader(numbered(4), {.batch_size = 0}), ValueError);
  EXPECT_THROW(DataLoader(numbered(4), {.num_workers = -1}), ValueError);
}

TEST(DataLoader, PinMemory) {
  DataLoader loader(numbered(20), {.batch_size = 8, .num_workers = 2, .pin_memory = true});
  auto batches = 0;
  for (auto& batch : loader) {
    // Pinned exactly when CUDA can pin; without it the loader warns and goes on.
    EXPECT_EQ(batch.data.is_pinned(), cuda::is_available());
    EXPECT_EQ(batch.target.is_pinned(), cuda::is_available());
    EXPECT_EQ(batch.data.size(1), 2);
    ++batches;
  }
  EXPECT_EQ(batches, 3);
  if (cuda::is_available()) {
    DataLoader gpu_loader(numbered(16), {.batch_size = 8, .pin_memory = true});
    for (auto& batch : gpu_loader) {
      Tensor on_gpu = batch.data.to(Device("cuda"), /*non_blocking=*/true);
      EXPECT_EQ(on_gpu.cpu().to_vector<float>(), batch.data.to_vector<float>());
    }
  }
}
