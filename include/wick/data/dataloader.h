// Batches of a dataset, assembled ahead of the training loop by worker threads.
//
//   wick::data::FashionMNIST train(wick::data::FashionMNIST::kDefaultRoot, true);
//   wick::data::DataLoader loader(train, {.batch_size = 64, .shuffle = true, .num_workers = 2,
//                                         .pin_memory = true});
//   for (auto& batch : loader) {              // one epoch; each range-for starts a new one
//     auto x = batch.data.to(dev, /*non_blocking=*/true);   // [64, 1, 28, 28]
//     auto y = batch.target.to(dev, /*non_blocking=*/true); // [64]
//   }
//
// Workers are threads, not processes: a dataset's get/get_batch runs concurrently in them.
// Batches come out in sampler order whatever the number of workers; options.sampler gives the
// order of one's own (DistributedSampler: this process's share of the dataset). Leaving the loop early
// (break, exception) stops the workers; an exception thrown in a worker is rethrown by the
// loop on the main thread.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include "wick/data/dataset.h"
#include "wick/data/sampler.h"

namespace wick::data {

struct DataLoaderOptions;

namespace detail {
// A DataLoaderOptions field that reads and assigns as its value (`o.batch_size`,
// `{.batch_size = 64}`) and also answers LibTorch's chained setter `o.batch_size(64)` and getter
// `o.batch_size()`, which share the field's name. The setter finds its DataLoaderOptions from
// the field's offset (the struct is standard-layout).
template <class T, int Field>
struct LoaderOption {
  T value;
  LoaderOption(T v = T()) : value(std::move(v)) {}  // implicit, as the plain field's type was
  operator const T&() const { return value; }
  LoaderOption& operator=(T v) {
    value = std::move(v);
    return *this;
  }
  const T& operator()() const { return value; }
  DataLoaderOptions& operator()(T v);
};
}  // namespace detail

// PyTorch's DataLoader arguments, set by name ({.batch_size = 64, .shuffle = true}), or with
// LibTorch's chained setters (DataLoaderOptions().batch_size(64).workers(2); DataLoaderOptions(64)
// sets the batch size). LibTorch's spellings are aliases of the fields (docs/porting.md).
struct DataLoaderOptions {
  detail::LoaderOption<int64_t, 0> batch_size = 1;
  // A new random order each epoch.
  bool shuffle = false;
  // The indices of each epoch, in order (a DistributedSampler, or one's own Sampler); then
  // shuffle must be false. The loader calls sampler->indices() as each epoch starts.
  std::shared_ptr<Sampler> sampler = nullptr;
  // 0 assembles each batch in the loop's own thread when it is needed.
  int num_workers = 0;
  // Batches in page-locked memory, for asynchronous copies to a GPU. Without CUDA this warns
  // once and gives ordinary batches, as PyTorch does.
  bool pin_memory = false;
  // Drop the last batch when it is smaller than batch_size.
  detail::LoaderOption<bool, 1> drop_last = false;
  // Batches each worker may have ready or in progress ahead of the loop.
  int prefetch_factor = 2;
  // Seed of the shuffling. Without one, each epoch draws its seed from wick's CPU generator
  // (as PyTorch's RandomSampler does), so wick::manual_seed makes the order reproducible.
  std::optional<uint64_t> seed = std::nullopt;
  // Batches come out in sampler order; false lets a batch that is ready go first while an
  // earlier one is still being built (workers > 0).
  bool in_order = true;
  // LibTorch's bound on the batches ready or in progress ahead of the loop, all workers
  // together; unset, it is num_workers * prefetch_factor (LibTorch's default, 2 * workers).
  detail::LoaderOption<std::optional<int64_t>, 2> max_jobs{};

  // LibTorch's names for num_workers and in_order.
  DataLoaderOptions& workers(int64_t n) {
    num_workers = int(std::clamp<int64_t>(n, -1, std::numeric_limits<int>::max()));  // the loader checks
    return *this;
  }
  int64_t workers() const { return num_workers; }
  DataLoaderOptions& enforce_ordering(bool b) {
    in_order = b;
    return *this;
  }
  bool enforce_ordering() const { return in_order; }
};

namespace detail {
template <class T, int Field>
DataLoaderOptions& LoaderOption<T, Field>::operator()(T v) {
  static_assert(std::is_standard_layout_v<DataLoaderOptions>);
  constexpr size_t offset = Field == 0   ? offsetof(DataLoaderOptions, batch_size)
                            : Field == 1 ? offsetof(DataLoaderOptions, drop_last)
                                         : offsetof(DataLoaderOptions, max_jobs);
  value = std::move(v);
  return *reinterpret_cast<DataLoaderOptions*>(reinterpret_cast<char*>(this) - offset);
}
}  // namespace detail

namespace detail {
class EpochRun;
}

class DataLoader {
 public:
  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Example<>;
    using difference_type = std::ptrdiff_t;
    using pointer = Example<>*;
    using reference = Example<>&;

    Iterator() = default;
    Example<>& operator*() const { return run_current(); }
    Example<>* operator->() const { return &run_current(); }
    Iterator& operator++();
    // Equal to end() once the epoch has no more batches.
    bool operator==(const Iterator& o) const { return done() == o.done(); }

   private:
    friend class DataLoader;
    explicit Iterator(std::shared_ptr<detail::EpochRun> run) : run_(std::move(run)) {}
    bool done() const;
    Example<>& run_current() const;
    std::shared_ptr<detail::EpochRun> run_;
  };

  // Keeps a copy of the dataset (datasets holding tensors are cheap to copy: the tensors are
  // shared); pass a shared_ptr to share one that isn't.
  template <class D>
  requires std::derived_from<D, Dataset> DataLoader(D dataset, DataLoaderOptions options = {})
      : DataLoader(std::shared_ptr<const Dataset>(std::make_shared<D>(std::move(dataset))), options) {}
  DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options = {});

  // Starts an epoch: a new order when shuffling (the sampler's indices() when there is one), and
  // workers that fill the queue.
  Iterator begin();
  Iterator end() const { return Iterator(); }
  // Batches per epoch (len(loader)), of the sampler's size() samples when there is a sampler.
  int64_t size() const;
  // Epochs started so far.
  uint64_t epoch() const { return epoch_; }
  // Makes the next epoch number e (0-based); with a seed, its order is the one epoch e of a fresh
  // loader has, so a resumed run sees the batches an uninterrupted one would (set_epoch of
  // PyTorch's DistributedSampler). A sampler's order is the sampler's own business (its
  // set_epoch).
  void set_epoch(uint64_t e) { epoch_ = e; }
  const Dataset& dataset() const { return *dataset_; }
  const DataLoaderOptions& options() const { return options_; }

 private:
  std::shared_ptr<const Dataset> dataset_;
  DataLoaderOptions options_;
  bool pin_ = false;
  uint64_t epoch_ = 0;
};

// The indices of one epoch in the order a loader visits them: 0..n-1, or a permutation
// determined by seed (Fisher-Yates with a SplitMix64 stream).
std::vector<int64_t> sample_order(int64_t n, bool shuffle, uint64_t seed);

}  // namespace wick::data
