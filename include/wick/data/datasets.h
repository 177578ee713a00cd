// LibTorch's dataset classes and make_data_loader, on wick's one DataLoader.
//
//   auto train = wick::data::datasets::MNIST(root)  // train-images-idx3-ubyte etc. in root
//                    .map(wick::data::transforms::Normalize<>(0.1307, 0.3081))
//                    .map(wick::data::transforms::Stack<>());
//   auto loader = wick::data::make_data_loader<wick::data::samplers::SequentialSampler>(
//       std::move(train), wick::data::DataLoaderOptions().batch_size(64).workers(2));
//   for (auto& batch : *loader) { ... }  // batch.data [64, 1, 28, 28], batch.target [64]
//
//   class Mine : public wick::data::datasets::Dataset<Mine> {  // a dataset of one's own
//     wick::data::Example<> get(size_t index) override;
//     wick::optional<size_t> size() const override;
//   };
//
// A dataset's batch is what get_batch returns for a list of indices: by default a vector of
// examples; map(transform) makes a MapDataset whose batches are the transform's output. The
// loader needs batches that are one Example<> (end the chain with transforms::Stack<>()); it
// calls get_batch from its worker threads concurrently, on one dataset shared by the workers.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "wick/data/dataloader.h"
#include "wick/data/dataset.h"
#include "wick/data/sampler.h"
#include "wick/data/transforms.h"

namespace wick {
// LibTorch's c10::optional, which datasets' size() returns.
using std::nullopt;
using std::optional;
}  // namespace wick

namespace wick::data::datasets {

template <class Source, class AppliedTransform>
class MapDataset;

// A dataset that answers a whole batch request at once.
template <class Self, class Batch = std::vector<Example<>>, class BatchRequest = std::span<const size_t>>
class BatchDataset {
 public:
  using SelfType = Self;
  using BatchType = Batch;
  using BatchRequestType = BatchRequest;
  static constexpr bool is_stateful = false;

  virtual ~BatchDataset() = default;
  virtual Batch get_batch(BatchRequest request) = 0;
  // The batch of example index alone (LibTorch's get_batch(0): its ArrayRef<size_t> request
  // takes a single index).
  Batch get_batch(size_t index)
  requires std::is_same_v<BatchRequest, std::span<const size_t>>
  {
    return get_batch(BatchRequest(&index, 1));
  }
  // The number of examples (LibTorch's datasets without a size are streams, which wick's loader
  // does not serve).
  virtual optional<size_t> size() const = 0;

  // This dataset with a transform applied to each of its batches.
  template <class TransformType>
  MapDataset<Self, TransformType> map(TransformType transform) & {
    return MapDataset<Self, TransformType>(static_cast<Self&>(*this), std::move(transform));
  }
  template <class TransformType>
  MapDataset<Self, TransformType> map(TransformType transform) && {
    return MapDataset<Self, TransformType>(std::move(static_cast<Self&>(*this)), std::move(transform));
  }
};

// A dataset of single examples: get(i); a batch is the vector of its examples.
template <class Self, class SingleExample = Example<>>
class Dataset : public BatchDataset<Self, std::vector<SingleExample>> {
 public:
  using ExampleType = SingleExample;
  using BatchDataset<Self, std::vector<SingleExample>>::get_batch;
  virtual ExampleType get(size_t index) = 0;
  std::vector<ExampleType> get_batch(std::span<const size_t> indices) override {
    std::vector<ExampleType> batch;
    batch.reserve(indices.size());
    for (size_t i : indices) batch.push_back(get(i));
    return batch;
  }
};

// A source dataset whose batches go through a transform's apply_batch.
template <class Source, class AppliedTransform>
class MapDataset : public BatchDataset<MapDataset<Source, AppliedTransform>,
                                       typename AppliedTransform::OutputBatchType,
                                       typename Source::BatchRequestType> {
  static_assert(std::is_same_v<typename Source::BatchType, typename AppliedTransform::InputBatchType>,
                "map: the transform's input batch type is not the dataset's batch type (Stack<> "
                "must come after the per-example transforms)");

 public:
  using DatasetType = Source;
  using TransformType = AppliedTransform;
  using BatchRequestType = typename Source::BatchRequestType;
  using OutputBatchType = typename AppliedTransform::OutputBatchType;

  using BatchDataset<MapDataset<Source, AppliedTransform>, typename AppliedTransform::OutputBatchType,
                     typename Source::BatchRequestType>::get_batch;

  MapDataset(Source dataset, AppliedTransform transform)
      : dataset_(std::move(dataset)), transform_(std::move(transform)) {}
  OutputBatchType get_batch(BatchRequestType request) override {
    return transform_.apply_batch(dataset_.get_batch(std::move(request)));
  }
  optional<size_t> size() const override { return dataset_.size(); }
  const Source& dataset() const noexcept { return dataset_; }
  const AppliedTransform& transform() const noexcept { return transform_; }

 private:
  Source dataset_;
  AppliedTransform transform_;
};

// The MNIST files (train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte,
// t10k-labels-idx1-ubyte, each plain or ".gz") from root: images float32 [1, 28, 28] in [0, 1],
// targets int64, as LibTorch's MNIST. ValueError "[MNIST] ..." for missing or corrupt files.
class MNIST : public Dataset<MNIST> {
 public:
  enum class Mode { kTrain, kTest };
  explicit MNIST(const std::string& root, Mode mode = Mode::kTrain);
  Example<> get(size_t index) override;
  optional<size_t> size() const override;
  bool is_train() const noexcept { return train_; }
  // All images [N, 1, 28, 28] and targets [N].
  const Tensor& images() const { return images_; }
  const Tensor& targets() const { return targets_; }

 private:
  Tensor images_, targets_;
  bool train_;
};

// The rows of one tensor as data-only examples (LibTorch's TensorDataset; data::TensorDataset
// is Python's, of data and targets). ValueError "[TensorDataset] ..." for a 0-dim tensor.
class TensorDataset : public Dataset<TensorDataset, TensorExample> {
 public:
  explicit TensorDataset(const std::vector<Tensor>& tensors);  // stacked along a new dim 0
  explicit TensorDataset(Tensor tensor);
  TensorExample get(size_t index) override;
  optional<size_t> size() const override { return size_t(tensor.size(0)); }

  Tensor tensor;
};

}  // namespace wick::data::datasets

namespace wick::data {

namespace detail {

// The target of a batch of n data-only examples: int64 [n, 0].
Tensor no_target(int64_t n);

// A LibTorch-style dataset whose batches are Examples, seen as a wick::data::Dataset: the
// DataLoader asks it for batches of indices, as it asks any dataset.
template <class D>
class BatchDatasetAdapter final : public data::Dataset {
 public:
  BatchDatasetAdapter(D dataset, int64_t size) : dataset_(std::move(dataset)), size_(size) {}
  int64_t size() const override { return size_; }
  Example<> get(int64_t index) const override {
    Example<> b = get_batch({index});
    return {b.data.select(0, 0), b.target.select(0, 0)};
  }
  Example<> get_batch(const std::vector<int64_t>& indices) const override {
    const std::vector<size_t> request(indices.begin(), indices.end());
    if constexpr (std::is_same_v<typename D::BatchType, TensorExample>) {
      // Data alone: the target is an empty [B, 0] tensor, which no LibTorch program reads.
      TensorExample b = dataset_.get_batch(typename D::BatchRequestType(request));
      return {b.data, no_target(b.data.dim() > 0 ? b.data.size(0) : 0)};
    } else {
      return dataset_.get_batch(typename D::BatchRequestType(request));
    }
  }

 private:
  // LibTorch's get_batch is not const; the loader's contract (concurrent calls that change no
  // shared state) is the same as for wick's own datasets.
  mutable D dataset_;
  int64_t size_;
};

// The size of a LibTorch-style dataset, or ValueError "[make_data_loader] ...".
int64_t loader_dataset_size(optional<size_t> size);

template <class D>
std::shared_ptr<const data::Dataset> loader_dataset(D&& dataset) {
  using T = std::remove_cvref_t<D>;
  if constexpr (std::is_base_of_v<data::Dataset, T>) {
    return std::make_shared<T>(std::forward<D>(dataset));
  } else {
    static_assert(std::is_same_v<typename T::BatchType, Example<>> ||
                      std::is_same_v<typename T::BatchType, TensorExample>,
                  "make_data_loader: the dataset's batches must be Examples; end its map chain with "
                  ".map(wick::data::transforms::Stack<>())");
    const int64_t n = loader_dataset_size(dataset.size());
    return std::make_shared<BatchDatasetAdapter<T>>(std::forward<D>(dataset), n);
  }
}

template <class D>
int64_t dataset_size(const D& dataset) {
  if constexpr (std::is_base_of_v<data::Dataset, D>)
    return dataset.size();
  else
    return loader_dataset_size(dataset.size());
}

}  // namespace detail

// LibTorch's loader: a DataLoader over dataset, visiting the sampler's indices each epoch
// (options.shuffle and options.sampler are replaced by the sampler).
template <class D, class S>
requires std::derived_from<S, Sampler>
std::unique_ptr<DataLoader> make_data_loader(D dataset, S sampler, DataLoaderOptions options) {
  options.shuffle = false;
  options.sampler = std::make_shared<S>(std::move(sampler));
  return std::make_unique<DataLoader>(detail::loader_dataset(std::move(dataset)), std::move(options));
}

template <class D, class S>
requires std::derived_from<S, Sampler>
std::unique_ptr<DataLoader> make_data_loader(D dataset, S sampler, int64_t batch_size) {
  return make_data_loader(std::move(dataset), std::move(sampler), DataLoaderOptions{batch_size});
}

// With a sampler of type S made from the dataset's size (LibTorch's default: RandomSampler).
template <class S = samplers::RandomSampler, class D>
requires std::derived_from<S, Sampler>
std::unique_ptr<DataLoader> make_data_loader(D dataset, DataLoaderOptions options = DataLoaderOptions()) {
  S sampler(detail::dataset_size(dataset));
  return make_data_loader(std::move(dataset), std::move(sampler), std::move(options));
}

template <class S = samplers::RandomSampler, class D>
requires std::derived_from<S, Sampler>
std::unique_ptr<DataLoader> make_data_loader(D dataset, int64_t batch_size) {
  return make_data_loader<S>(std::move(dataset), DataLoaderOptions{batch_size});
}

}  // namespace wick::data
