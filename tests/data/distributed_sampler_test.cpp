// DistributedSampler: index lists worked out by hand (padding, drop_last, fewer samples than
// replicas), shards disjoint and covering, the order shared by all ranks and new each epoch,
// its errors; and a DataLoader driven by a sampler yielding exactly the sampler's rows.
#include <algorithm>
#include <numeric>
#include <set>

#include <gtest/gtest.h>

#include "wick/data/dataloader.h"
#include "wick/data/sampler.h"
#include "wick/wick.h"

using namespace wick;
using wick::data::DataLoader;
using wick::data::DistributedSampler;
using wick::data::DistributedSamplerOptions;
using wick::data::TensorDataset;
using V = std::vector<int64_t>;

namespace {

DistributedSamplerOptions opts(int replicas, int rank, bool shuffle = false, bool drop_last = false,
                               uint64_t seed = 0) {
  return {.num_replicas = replicas, .rank = rank, .shuffle = shuffle, .seed = seed, .drop_last = drop_last};
}

// Every rank's indices for one epoch.
std::vector<V> shards(int64_t n, int replicas, bool shuffle, bool drop_last, uint64_t seed, uint64_t epoch) {
  std::vector<V> out;
  for (int r = 0; r < replicas; ++r) {
    DistributedSampler s(n, opts(replicas, r, shuffle, drop_last, seed));
    s.set_epoch(epoch);
    out.push_back(s.indices());
  }
  return out;
}

// The epoch's padded order put back together: position k came from rank k % replicas.
V interleave(const std::vector<V>& parts) {
  V all;
  for (size_t k = 0; k < parts[0].size(); ++k)
    for (const V& p : parts) all.push_back(p[k]);
  return all;
}

bool is_permutation_of_range(V v) {
  std::sort(v.begin(), v.end());
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] != int64_t(i)) return false;
  return true;
}

// Row i: data {i, 10 i} (float32), target i.
TensorDataset numbered(int64_t n) {
  Tensor data = empty({n, 2}, kFloat32), target = empty({n}, kInt64);
  for (int64_t i = 0; i < n; ++i) {
    data.data_ptr<float>()[2 * i] = float(i);
    data.data_ptr<float>()[2 * i + 1] = float(10 * i);
    target.data_ptr<int64_t>()[i] = i;
  }
  return TensorDataset(data, target);
}

}  // namespace

TEST(DistributedSampler, TenOverThreePadsFromTheStart) {
  // 0..9 padded to 12 with 0, 1; rank r takes positions r, r + 3, r + 6, r + 9.
  const std::vector<V> expected = {{0, 3, 6, 9}, {1, 4, 7, 0}, {2, 5, 8, 1}};
  for (int r = 0; r < 3; ++r) {
    DistributedSampler s(10, opts(3, r));
    EXPECT_EQ(s.indices(), expected[size_t(r)]) << "rank " << r;
    EXPECT_EQ(s.size(), 4);
    EXPECT_EQ(s.total_size(), 12);
    EXPECT_EQ(s.num_replicas(), 3);
    EXPECT_EQ(s.rank(), r);
  }
}

TEST(DistributedSampler, DropLastCutsTheTail) {
  const std::vector<V> expected = {{0, 3, 6}, {1, 4, 7}, {2, 5, 8}};  // 9 dropped
  for (int r = 0; r < 3; ++r) {
    DistributedSampler s(10, opts(3, r, false, /*drop_last=*/true));
    EXPECT_EQ(s.indices(), expected[size_t(r)]) << "rank " << r;
    EXPECT_EQ(s.size(), 3);
    EXPECT_EQ(s.total_size(), 9);
  }
  // Evenly divisible: nothing to drop or pad.
  EXPECT_EQ(DistributedSampler(6, opts(2, 1, false, true)).indices(), (V{1, 3, 5}));
  EXPECT_EQ(DistributedSampler(6, opts(2, 1)).indices(), (V{1, 3, 5}));
}

TEST(DistributedSampler, FewerSamplesThanReplicas) {
  // 0, 1 repeated to 5: 0 1 0 1 0.
  EXPECT_EQ(shards(2, 5, false, false, 0, 0), (std::vector<V>{{0}, {1}, {0}, {1}, {0}}));
  // drop_last leaves nothing; an empty dataset gives nothing either way.
  DistributedSampler dropped(2, opts(5, 4, false, true));
  EXPECT_EQ(dropped.size(), 0);
  EXPECT_EQ(dropped.indices(), V{});
  EXPECT_EQ(DistributedSampler(0, opts(3, 1)).indices(), V{});
  EXPECT_EQ(DistributedSampler(0, opts(3, 1, true)).size(), 0);
  // One replica without shuffling is the identity.
  EXPECT_EQ(DistributedSampler(4, opts(1, 0)).indices(), (V{0, 1, 2, 3}));
}

TEST(DistributedSampler, ShardsAreDisjointAndCover) {
  for (bool drop_last : {false, true}) {
    const auto parts = shards(12, 3, /*shuffle=*/true, drop_last, 7, 2);
    std::set<int64_t> seen;
    for (const V& p : parts) {
      EXPECT_EQ(p.size(), 4u);
      for (int64_t i : p) EXPECT_TRUE(seen.insert(i).second) << "index " << i << " is in two shards";
    }
    EXPECT_EQ(seen.size(), 12u);
  }
  // With padding: the first n positions are a permutation, the rest repeat its start.
  for (uint64_t epoch : {0, 1, 5}) {
    const V all = interleave(shards(10, 3, true, false, 3, epoch));
    ASSERT_EQ(all.size(), 12u);
    EXPECT_TRUE(is_permutation_of_range(V(all.begin(), all.begin() + 10)));
    EXPECT_EQ(all[10], all[0]);
    EXPECT_EQ(all[11], all[1]);
  }
  // drop_last: 9 distinct indices of the 10.
  const V kept = interleave(shards(10, 3, true, true, 3, 0));
  EXPECT_EQ(std::set<int64_t>(kept.begin(), kept.end()).size(), 9u);
}

TEST(DistributedSampler, EpochAndSeedChooseTheOrder) {
  const int64_t n = 1000;
  DistributedSampler a(n, opts(4, 2, true)), b(n, opts(4, 2, true));
  const V first = a.indices();
  EXPECT_EQ(a.indices(), first);  // indices() alone does not move to another epoch
  EXPECT_EQ(b.indices(), first);  // another sampler (another process) with the same seed
  a.set_epoch(1);
  EXPECT_EQ(a.epoch(), 1u);
  const V second = a.indices();
  EXPECT_NE(second, first);
  b.set_epoch(1);
  EXPECT_EQ(b.indices(), second);
  a.set_epoch(0);
  EXPECT_EQ(a.indices(), first);
  EXPECT_NE(DistributedSampler(n, opts(4, 2, true, false, /*seed=*/1)).indices(), first);
  // Shuffled, yet every index of the epoch once across ranks.
  EXPECT_TRUE(is_permutation_of_range(interleave(shards(n, 4, true, false, 0, 3))));
  // Without shuffle the epoch changes nothing.
  DistributedSampler plain(10, opts(3, 0));
  plain.set_epoch(9);
  EXPECT_EQ(plain.indices(), (V{0, 3, 6, 9}));
}

TEST(DistributedSampler, Errors) {
  auto message = [](auto&& make) -> std::string {
    try {
      make();
    } catch (const ValueError& e) {
      return e.what();
    }
    return "no ValueError";
  };
  EXPECT_EQ(message([] { DistributedSampler(10, opts(3, 3)); }),
            "[DistributedSampler] Invalid rank 3, rank should be in the interval [0, 2]");
  EXPECT_EQ(message([] { DistributedSampler(10, opts(3, -1)); }),
            "[DistributedSampler] Invalid rank -1, rank should be in the interval [0, 2]");
  EXPECT_EQ(message([] { DistributedSampler(10, opts(0, 0)); }),
            "[DistributedSampler] num_replicas should be a positive integer, but got 0");
  EXPECT_EQ(message([] { DistributedSampler(-1, opts(1, 0)); }),
            "[DistributedSampler] the dataset size must be non-negative, got -1");
  // Without a process group, both must be given.
  EXPECT_TRUE(
      message([] { DistributedSampler(10); }).starts_with("[DistributedSampler] num_replicas and rank"));
  EXPECT_TRUE(message([] {
                DistributedSampler(10, {.num_replicas = 2});
              }).starts_with("[DistributedSampler] num_replicas and rank"));
}

TEST(DistributedSampler, FromADataset) {
  DistributedSampler s(numbered(7), opts(2, 1));
  EXPECT_EQ(s.dataset_size(), 7);
  EXPECT_EQ(s.indices(), (V{1, 3, 5, 0}));
}

TEST(DistributedSamplerLoader, YieldsTheSamplersRowsInOrder) {
  const TensorDataset ds = numbered(10);
  for (int workers : {0, 2}) {
    auto sampler = std::make_shared<DistributedSampler>(ds, opts(3, 1, /*shuffle=*/true, false, 5));
    DataLoader loader(ds, {.batch_size = 3, .sampler = sampler, .num_workers = workers});
    EXPECT_EQ(loader.size(), 2);  // 4 samples
    for (uint64_t epoch : {0, 1}) {
      sampler->set_epoch(epoch);
      const V expected = sampler->indices();
      V got;
      std::vector<int64_t> batch_sizes;
      for (auto& batch : loader) {
        const auto ids = batch.target.to_vector<int64_t>();
        const auto rows = batch.data.to_vector<float>();
        for (size_t i = 0; i < ids.size(); ++i) {
          EXPECT_EQ(rows[2 * i], float(ids[i]));
          EXPECT_EQ(rows[2 * i + 1], float(10 * ids[i]));
        }
        got.insert(got.end(), ids.begin(), ids.end());
        batch_sizes.push_back(int64_t(ids.size()));
      }
      EXPECT_EQ(got, expected) << "workers " << workers << ", epoch " << epoch;
      EXPECT_EQ(batch_sizes, (V{3, 1}));
    }
  }
  // By hand, without shuffling: rank 1 of 3 is 1 4 7 0; drop_last drops the short batch.
  auto plain = std::make_shared<DistributedSampler>(ds, opts(3, 1));
  DataLoader loader(ds, {.batch_size = 3, .sampler = plain, .drop_last = true});
  EXPECT_EQ(loader.size(), 1);
  V got;
  for (auto& batch : loader) {
    const auto ids = batch.target.to_vector<int64_t>();
    got.insert(got.end(), ids.begin(), ids.end());
  }
  EXPECT_EQ(got, (V{1, 4, 7}));
}

namespace {

// A sampler giving a fixed list.
class ListSampler : public wick::data::Sampler {
 public:
  explicit ListSampler(V v) : v_(std::move(v)) {}
  V indices() const override { return v_; }
  int64_t size() const override { return int64_t(v_.size()); }

 private:
  V v_;
};

}  // namespace

TEST(DistributedSamplerLoader, SamplerErrors) {
  const TensorDataset ds = numbered(10);
  auto sampler = std::make_shared<DistributedSampler>(ds, opts(2, 0));
  try {
    DataLoader loader(ds, {.batch_size = 4, .shuffle = true, .sampler = sampler});
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(), "[DataLoader] sampler option is mutually exclusive with shuffle");
  }
  // Indices outside the dataset: an error, and the epoch does not advance.
  DataLoader bad(ds, {.batch_size = 4, .sampler = std::make_shared<ListSampler>(V{2, 10})});
  try {
    (void)bad.begin();
    ADD_FAILURE() << "no error";
  } catch (const IndexError& e) {
    EXPECT_STREQ(e.what(), "[DataLoader] the sampler gave index 10, out of range for a dataset of size 10");
  }
  EXPECT_EQ(bad.epoch(), 0u);
  // A sampler of one's own: its order, repeats included.
  DataLoader own(ds, {.batch_size = 2, .sampler = std::make_shared<ListSampler>(V{9, 9, 0})});
  V got;
  for (auto& batch : own) {
    const auto ids = batch.target.to_vector<int64_t>();
    got.insert(got.end(), ids.begin(), ids.end());
  }
  EXPECT_EQ(got, (V{9, 9, 0}));
  EXPECT_EQ(own.epoch(), 1u);
}
