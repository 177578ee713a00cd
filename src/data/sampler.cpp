#include "wick/data/sampler.h"

#include "core/host_memory.h"
#include "wick/data/dataloader.h"
#include "wick/distributed.h"
#include "wick/error.h"
#include "wick/ops.h"
#include "wick/random.h"

namespace wick::data {

namespace {

constexpr const char* kOp = "DistributedSampler";

uint64_t splitmix64(uint64_t state) {
  uint64_t z = state + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

DistributedSampler::DistributedSampler(int64_t dataset_size, DistributedSamplerOptions options)
    : dataset_size_(dataset_size), options_(options) {
  WICK_CHECK(dataset_size >= 0, ValueError, kOp, "the dataset size must be non-negative, got ", dataset_size);
  if (!options_.num_replicas || !options_.rank) {
    WICK_CHECK(distributed::is_initialized(), ValueError, kOp,
               "num_replicas and rank must be given when wick::distributed is not initialized (call "
               "init_process_group first, or pass both)");
  }
  num_replicas_ = options_.num_replicas ? *options_.num_replicas : distributed::get_world_size();
  rank_ = options_.rank ? *options_.rank : distributed::get_rank();
  WICK_CHECK(num_replicas_ >= 1, ValueError, kOp, "num_replicas should be a positive integer, but got ",
             num_replicas_);
  WICK_CHECK(rank_ >= 0 && rank_ < num_replicas_, ValueError, kOp, "Invalid rank ", rank_,
             ", rank should be in the interval [0, ", num_replicas_ - 1, "]");
  const int64_t r = num_replicas_;
  num_samples_ = options_.drop_last ? dataset_size_ / r : dataset_size_ / r + (dataset_size_ % r != 0);
  // Saturates rather than overflows near INT64_MAX (no epoch that large fits in memory, which
  // indices() says).
  if (__builtin_mul_overflow(num_samples_, r, &total_size_)) total_size_ = INT64_MAX;
}

std::vector<int64_t> DistributedSampler::indices() const {
  // Every rank draws the same order for the same seed and epoch.
  std::vector<int64_t> order, out;
  try {
    order = sample_order(dataset_size_, options_.shuffle, splitmix64(options_.seed + epoch_));
    wick::detail::check_host_request(num_samples_, sizeof(int64_t), kOp);
    out.reserve(size_t(num_samples_));
  } catch (const std::exception&) {  // bad_alloc, length_error, sample_order's OutOfMemoryError
    wick::detail::raise<OutOfMemoryError>("DistributedSampler", "cannot hold the ", dataset_size_,
                                          " indices of an epoch in host memory");
  }
  // Position k of the padded (or cut) order is order[k mod n]: padding repeats the order from
  // its start, as many times as needed when there are fewer samples than replicas.
  for (int64_t j = 0, k = rank_; j < num_samples_; ++j, k += num_replicas_)
    out.push_back(order[size_t(k % dataset_size_)]);
  return out;
}

SequentialSampler::SequentialSampler(int64_t size) : size_(size) {
  WICK_CHECK(size >= 0, ValueError, "SequentialSampler", "the dataset size must be non-negative, got ", size);
}

std::vector<int64_t> SequentialSampler::indices() const { return sample_order(size_, false, 0); }

RandomSampler::RandomSampler(int64_t size) : size_(size) {
  WICK_CHECK(size > 0, ValueError, "RandomSampler",
             "num_samples should be a positive integer value, but got num_samples=", size);
}

std::vector<int64_t> RandomSampler::indices() const {
  // The seed comes from wick's CPU generator, as DataLoader's shuffle draws it.
  const auto seed = uint64_t(randint(0, int64_t(1) << 53, {1}).item<int64_t>());
  return sample_order(size_, true, seed);
}

DistributedChunkSampler::DistributedChunkSampler(int64_t size, int64_t num_replicas, int64_t rank,
                                                 bool allow_duplicates, bool shuffle, const char* op)
    : size_(size), num_replicas_(num_replicas), rank_(rank), shuffle_(shuffle) {
  WICK_CHECK(size >= 0, ValueError, op, "the dataset size must be non-negative, got ", size);
  WICK_CHECK(num_replicas >= 1, ValueError, op, "num_replicas should be a positive integer, but got ",
             num_replicas);
  WICK_CHECK(rank >= 0 && rank < num_replicas, ValueError, op, "Invalid rank ", rank,
             ", rank should be in the interval [0, ", num_replicas - 1, "]");
  local_size_ = allow_duplicates ? size / num_replicas + (size % num_replicas != 0) : size / num_replicas;
}

std::vector<int64_t> DistributedChunkSampler::indices() const {
  // Position p of the padded order 0..n-1, 0, 1, ... holds p mod n; this replica's chunk starts at
  // rank * local_size. Shuffled, the chunk is visited in a permutation drawn from the epoch.
  std::vector<int64_t> order = sample_order(local_size_, shuffle_, splitmix64(epoch_));
  for (int64_t& p : order) p = (rank_ * local_size_ + p) % size_;
  return order;
}

}  // namespace wick::data
