// Samplers: the indices a DataLoader visits in an epoch, as torch.utils.data.Sampler, and
// DistributedSampler, which gives each process of a distributed run its own share of a dataset.
// wick::data::samplers holds LibTorch's names (make_data_loader<samplers::SequentialSampler>).
//
//   wick::distributed::init_process_group("mpi");
//   auto sampler = std::make_shared<wick::data::DistributedSampler>(train);  // world size, rank
//   wick::data::DataLoader loader(train, {.batch_size = 64, .sampler = sampler});
//   for (int epoch = 0; epoch < epochs; ++epoch) {
//     sampler->set_epoch(epoch);           // else every epoch has the same order
//     for (auto& batch : loader) { ... }   // this rank's size() samples, in the sampler's order
//   }
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "wick/data/dataset.h"

namespace wick::data {

// The order of one epoch. DataLoader calls indices() once as each epoch starts (on the thread
// running the loop), and size() for its length.
class Sampler {
 public:
  virtual ~Sampler() = default;
  // The dataset indices of the current epoch, in the order they are to be visited.
  virtual std::vector<int64_t> indices() const = 0;
  // How many indices() gives (len(sampler)).
  virtual int64_t size() const = 0;
};

struct DistributedSamplerOptions {
  // The processes sharing the dataset, and this one's index among them: by default the world
  // size and rank of wick::distributed's default group (ValueError when it is not initialized).
  std::optional<int> num_replicas = std::nullopt;
  std::optional<int> rank = std::nullopt;
  // A new random order each epoch (the same on every rank for the same seed and epoch).
  bool shuffle = true;
  // Must be the same on every rank.
  uint64_t seed = 0;
  // Drop the tail that does not divide evenly among the replicas; else the order is padded with
  // its first indices until it does.
  bool drop_last = false;
};

// Each of num_replicas processes gets a disjoint share of the dataset (disjoint up to the
// padding), of the same length num_samples. The epoch's order (a permutation of 0..n-1 drawn
// from seed + epoch, or 0..n-1 without shuffle) is cut or padded to total_size indices, and
// rank takes every num_replicas-th one starting at its rank: order[rank : total_size :
// num_replicas], as torch.utils.data.distributed.DistributedSampler.
class DistributedSampler : public Sampler {
 public:
  explicit DistributedSampler(int64_t dataset_size, DistributedSamplerOptions options = {});
  explicit DistributedSampler(const Dataset& dataset, DistributedSamplerOptions options = {})
      : DistributedSampler(dataset.size(), options) {}

  std::vector<int64_t> indices() const override;
  // num_samples: ceil(n / num_replicas), or floor with drop_last.
  int64_t size() const override { return num_samples_; }
  // The epoch whose order indices() gives; call it before each epoch.
  void set_epoch(uint64_t epoch) { epoch_ = epoch; }
  uint64_t epoch() const { return epoch_; }

  int num_replicas() const { return num_replicas_; }
  int rank() const { return rank_; }
  int64_t dataset_size() const { return dataset_size_; }
  // num_samples * num_replicas.
  int64_t total_size() const { return total_size_; }
  const DistributedSamplerOptions& options() const { return options_; }

 private:
  int64_t dataset_size_;
  DistributedSamplerOptions options_;
  int num_replicas_ = 1, rank_ = 0;
  int64_t num_samples_ = 0, total_size_ = 0;
  uint64_t epoch_ = 0;
};

// 0, 1, ..., n - 1 (torch.utils.data.SequentialSampler).
class SequentialSampler : public Sampler {
 public:
  explicit SequentialSampler(int64_t size);
  explicit SequentialSampler(const Dataset& dataset) : SequentialSampler(dataset.size()) {}
  std::vector<int64_t> indices() const override;
  int64_t size() const override { return size_; }

 private:
  int64_t size_;
};

// A new permutation of 0..n-1 for each epoch, drawn from wick's CPU generator (so
// wick::manual_seed makes it reproducible), as torch.utils.data.RandomSampler without replacement.
class RandomSampler : public Sampler {
 public:
  explicit RandomSampler(int64_t size);
  explicit RandomSampler(const Dataset& dataset) : RandomSampler(dataset.size()) {}
  std::vector<int64_t> indices() const override;
  int64_t size() const override { return size_; }

 private:
  int64_t size_;
};

// LibTorch's distributed samplers: replica `rank` of `num_replicas` takes the contiguous chunk
// [rank * m, (rank + 1) * m) of 0..n-1, m = ceil(n / num_replicas) with allow_duplicates (the
// order padded by repeating its start) or floor(n / num_replicas) without. The random one
// shuffles its chunk with seed `epoch` (set_epoch), the sequential one keeps it in order.
// (PyTorch's DistributedSampler above interleaves the replicas over one permutation instead.)
class DistributedChunkSampler : public Sampler {
 public:
  DistributedChunkSampler(int64_t size, int64_t num_replicas, int64_t rank, bool allow_duplicates,
                          bool shuffle, const char* op);
  std::vector<int64_t> indices() const override;
  int64_t size() const override { return local_size_; }
  void set_epoch(uint64_t epoch) { epoch_ = epoch; }
  uint64_t epoch() const { return epoch_; }
  int64_t num_replicas() const { return num_replicas_; }
  int64_t rank() const { return rank_; }

 private:
  int64_t size_, num_replicas_, rank_, local_size_;
  bool shuffle_;
  uint64_t epoch_ = 0;
};

namespace samplers {
// LibTorch's spellings (docs/porting.md).
using SequentialSampler = data::SequentialSampler;
using RandomSampler = data::RandomSampler;

class DistributedRandomSampler : public DistributedChunkSampler {
 public:
  explicit DistributedRandomSampler(int64_t size, int64_t num_replicas = 1, int64_t rank = 0,
                                    bool allow_duplicates = true)
      : DistributedChunkSampler(size, num_replicas, rank, allow_duplicates, true, "DistributedRandomSampler") {}
};

class DistributedSequentialSampler : public DistributedChunkSampler {
 public:
  explicit DistributedSequentialSampler(int64_t size, int64_t num_replicas = 1, int64_t rank = 0,
                                        bool allow_duplicates = true)
      : DistributedChunkSampler(size, num_replicas, rank, allow_duplicates, false,
                                "DistributedSequentialSampler") {}
};
}  // namespace samplers

}  // namespace wick::data
