// Datasets: indexable collections of {data, target} examples, as torch.utils.data.Dataset.
//
//   wick::data::TensorDataset ds(wick::randn({100, 3}), wick::randint(2, {100}));
//   auto [x, y] = ds.get(7);            // x: [3], y: a 0-dim int64 tensor
//   auto batch = ds.get_batch({0, 5});  // data [2, 3], target [2]
//
// A dataset of one's own derives from Dataset and defines size() and get(i); the DataLoader
// calls get from several threads at once, so get must not change shared state.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "wick/tensor.h"

namespace wick::data {

// One sample, or a batch of samples stacked along a new first dim: Example<> holds two tensors,
// as LibTorch's torch::data::Example<>; other types for data or target serve LibTorch-style
// datasets and transforms (the DataLoader takes Example<>).
template <class Data = Tensor, class Target = Tensor>
struct Example {
  using DataType = Data;
  using TargetType = Target;
  Data data;
  Target target;
};

namespace example {
// LibTorch's target type of an example that has none.
struct NoTarget {};
}  // namespace example

// An example of data alone (LibTorch's TensorExample, what datasets::TensorDataset yields).
template <class Data>
struct Example<Data, example::NoTarget> {
  using DataType = Data;
  using TargetType = example::NoTarget;
  Example() = default;
  Example(Data data) : data(std::move(data)) {}  // NOLINT(google-explicit-constructor)
  Data data;
};
using TensorExample = Example<Tensor, example::NoTarget>;

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  // The example at index (0 <= index < size()); thread-safe.
  virtual Example<> get(int64_t index) const = 0;
  // The examples at indices stacked along a new dim 0 (CPU tensors). The default calls get
  // for each index and copies the results into one tensor; datasets that hold their samples
  // in one tensor override it to copy rows directly.
  virtual Example<> get_batch(const std::vector<int64_t>& indices) const;
};

// Samples held in two tensors: example i is {data[i], target[i]}.
class TensorDataset : public Dataset {
 public:
  TensorDataset(Tensor data, Tensor target);
  int64_t size() const override { return data_.size(0); }
  Example<> get(int64_t index) const override;
  Example<> get_batch(const std::vector<int64_t>& indices) const override;
  const Tensor& data() const { return data_; }
  const Tensor& targets() const { return target_; }

 protected:
  TensorDataset() = default;
  // Checks and keeps the tensors (CPU, contiguous, same length); "op" names the dataset.
  void set_tensors(Tensor data, Tensor target, const char* op);

 private:
  Tensor data_;
  Tensor target_;
};

// Stacks same-shaped CPU tensors along a new dim 0 into one contiguous tensor.
Tensor stack_samples(const std::vector<Tensor>& samples, const char* op = "collate");

}  // namespace wick::data
