// LibTorch's MNIST (the MNIST file layout, mnist_format.cpp) and make_data_loader's size check.
#include "wick/data/datasets.h"

#include "core/as_op.h"
#include "core/checks.h"
#include "data/idx_internal.h"
#include "wick/ops.h"

namespace wick::data {

namespace datasets {

MNIST::MNIST(const std::string& root, Mode mode) : train_(mode == Mode::kTrain) {
  const std::string prefix = train_ ? "train" : "t10k";
  MnistFormat f;
  f.op = "MNIST";
  f.name = "MNIST";
  f.missing_hint = " (MNIST's four files train-images-idx3-ubyte, train-labels-idx1-ubyte, "
                   "t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte, plain or gzip'd, belong in the folder)";
  auto [x, y] = read_mnist_format(root, prefix + "-images-idx3-ubyte", prefix + "-labels-idx1-ubyte", f);
  images_ = std::move(x);
  targets_ = std::move(y);
}

Example<> MNIST::get(size_t index) {
  const auto n = size_t(images_.size(0));
  WICK_CHECK(index < n, IndexError, "MNIST", "index ", index, " is out of range for a dataset of ", n,
             " examples");
  return {images_.select(0, int64_t(index)), targets_.select(0, int64_t(index))};
}

optional<size_t> MNIST::size() const { return size_t(images_.size(0)); }

TensorDataset::TensorDataset(Tensor tensor) : tensor(std::move(tensor)) {
  wick::detail::check_defined(this->tensor, "TensorDataset", "tensor");
  WICK_CHECK(this->tensor.dim() > 0, ValueError, "TensorDataset",
             "the tensor needs a first dim to index examples along; got a 0-dim tensor");
}

TensorDataset::TensorDataset(const std::vector<Tensor>& tensors)
    : TensorDataset(wick::detail::as_op("TensorDataset", [&] { return wick::stack(tensors); })) {}

TensorExample TensorDataset::get(size_t index) {
  const auto n = size_t(tensor.size(0));
  WICK_CHECK(index < n, IndexError, "TensorDataset", "index ", index, " is out of range for a dataset of ", n,
             " examples");
  return {tensor.select(0, int64_t(index))};
}

}  // namespace datasets

namespace detail {

Tensor no_target(int64_t n) { return wick::empty({n, 0}, TensorOptions().dtype(kInt64)); }

int64_t loader_dataset_size(optional<size_t> size) {
  WICK_CHECK(size.has_value(), ValueError, "make_data_loader",
             "the dataset's size() is empty; wick's loader needs datasets of known size");
  WICK_CHECK(*size <= size_t(INT64_MAX), ValueError, "make_data_loader", "the dataset's size() ", *size,
             " is too large");
  return int64_t(*size);
}

}  // namespace detail

}  // namespace wick::data
