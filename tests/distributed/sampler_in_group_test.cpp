// DistributedSampler inside a process group: num_replicas and rank default to the group's, and
// the ranks' shares, gathered, are the epoch's order padded as by hand: one permutation shared
// by every rank, every index once (plus the padding).
#include <algorithm>
#include <vector>

#include <gtest/gtest.h>

#include "wick/data/sampler.h"
#include "wick/distributed.h"
#include "wick/ops.h"

namespace {

namespace dist = wick::distributed;
using wick::Tensor;
using wick::data::DistributedSampler;

// Every rank's indices, gathered.
std::vector<std::vector<int64_t>> gather(const std::vector<int64_t>& mine) {
  Tensor t = wick::empty({int64_t(mine.size())}, wick::kInt64);
  std::copy(mine.begin(), mine.end(), t.data_ptr<int64_t>());
  std::vector<Tensor> all;
  for (int r = 0; r < dist::get_world_size(); ++r)
    all.push_back(wick::empty({int64_t(mine.size())}, wick::kInt64));
  dist::all_gather(all, t);
  std::vector<std::vector<int64_t>> out;
  for (const Tensor& a : all) out.push_back(a.to_vector<int64_t>());
  return out;
}

}  // namespace

TEST(DistDistributedSampler, DefaultsToTheGroupAndSharesCoverTheDataset) {
  const int world = dist::get_world_size(), rank = dist::get_rank();
  const int64_t n = 10;
  DistributedSampler sampler(n);  // shuffle, seed 0
  EXPECT_EQ(sampler.num_replicas(), world);
  EXPECT_EQ(sampler.rank(), rank);
  const int64_t per_rank = (n + world - 1) / world;
  EXPECT_EQ(sampler.size(), per_rank);
  for (uint64_t epoch : {0, 1}) {
    sampler.set_epoch(epoch);
    const auto shares = gather(sampler.indices());
    // Position k of the padded order came from rank k % world.
    std::vector<int64_t> order;
    for (int64_t k = 0; k < per_rank * world; ++k)
      order.push_back(shares[size_t(k % world)][size_t(k / world)]);
    std::vector<int64_t> head(order.begin(), order.begin() + n);
    std::sort(head.begin(), head.end());
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(head[size_t(i)], i) << "epoch " << epoch;
    for (int64_t k = n; k < int64_t(order.size()); ++k) EXPECT_EQ(order[size_t(k)], order[size_t(k - n)]);
    // Each rank's order is what a sampler given the same values explicitly draws.
    DistributedSampler same(n, {.num_replicas = world, .rank = rank});
    same.set_epoch(epoch);
    EXPECT_EQ(same.indices(), sampler.indices());
  }
}
