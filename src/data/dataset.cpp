// Dataset's default batch assembly, TensorDataset, and the stacking of samples into a batch.
#include "wick/data/dataset.h"

#include <cstring>

#include "wick/ops.h"

namespace wick::data {

namespace {

// A new contiguous tensor of rows[i] = src[indices[i]] along dim 0 (src contiguous, on the CPU).
Tensor gather_rows(const Tensor& src, const std::vector<int64_t>& indices, const char* op) {
  WICK_CHECK(src.dim() >= 1, ValueError, op, "expected a tensor with a dim 0 of examples");
  const int64_t n = src.size(0);
  DimVector sizes(src.sizes().begin(), src.sizes().end());
  sizes[0] = int64_t(indices.size());
  Tensor out = empty(sizes, src.dtype());
  const size_t row = size_t(n ? src.nbytes() / n : 0);
  const auto* from = static_cast<const char*>(src.data_ptr());
  auto* to = static_cast<char*>(out.data_ptr());
  for (size_t i = 0; i < indices.size(); ++i) {
    int64_t k = indices[i];
    WICK_CHECK(k >= 0 && k < n, IndexError, op, "index ", k, " is out of range for a dataset of ", n,
               " examples");
    std::memcpy(to + i * row, from + size_t(k) * row, row);
  }
  return out;
}

}  // namespace

Tensor stack_samples(const std::vector<Tensor>& samples, const char* op) {
  WICK_CHECK(!samples.empty(), ValueError, op, "no samples to stack");
  const Tensor& first = samples[0];
  WICK_CHECK(first.defined(), ValueError, op, "sample 0 is an undefined tensor");
  DimVector sizes;
  sizes.push_back(int64_t(samples.size()));
  for (int64_t s : first.sizes()) sizes.push_back(s);
  Tensor out = empty(sizes, first.dtype());
  const size_t bytes = size_t(first.nbytes());
  auto* to = static_cast<char*>(out.data_ptr());
  for (size_t i = 0; i < samples.size(); ++i) {
    const Tensor& s = samples[i];
    WICK_CHECK(s.defined(), ValueError, op, "sample ", i, " is an undefined tensor");
    WICK_CHECK(s.is_cpu(), DeviceError, op, "samples must be CPU tensors, but sample ", i, " is on ",
               s.device());
    WICK_CHECK(s.sizes().equals(first.sizes()), ValueError, op,
               "samples must have the same size, but sample ", i, " has size ", s.sizes(),
               " and sample 0 has size ", first.sizes());
    WICK_CHECK(s.dtype() == first.dtype(), TypeError, op, "samples must have the same dtype, but sample ", i,
               " is ", s.dtype(), " and sample 0 is ", first.dtype());
    Tensor c = s.contiguous();
    if (bytes) std::memcpy(to + i * bytes, c.data_ptr(), bytes);
  }
  return out;
}

Example<> Dataset::get_batch(const std::vector<int64_t>& indices) const {
  std::vector<Tensor> data, target;
  data.reserve(indices.size());
  target.reserve(indices.size());
  for (int64_t i : indices) {
    Example<> e = get(i);
    data.push_back(std::move(e.data));
    target.push_back(std::move(e.target));
  }
  return {stack_samples(data), stack_samples(target)};
}

TensorDataset::TensorDataset(Tensor data, Tensor target) {
  set_tensors(std::move(data), std::move(target), "TensorDataset");
}

void TensorDataset::set_tensors(Tensor data, Tensor target, const char* op) {
  WICK_CHECK(data.defined() && target.defined(), ValueError, op, "data and target must be defined tensors");
  WICK_CHECK(data.dim() >= 1 && target.dim() >= 1, ValueError, op,
             "data and target need a first dim to index (got sizes ", data.sizes(), " and ", target.sizes(),
             ")");
  WICK_CHECK(data.size(0) == target.size(0), ValueError, op, "size mismatch between tensors: data has ",
             data.size(0), " examples and target has ", target.size(0));
  WICK_CHECK(data.is_cpu() && target.is_cpu(), DeviceError, op, "data and target must be CPU tensors (got ",
             data.device(), " and ", target.device(), ")");
  data_ = data.contiguous();
  target_ = target.contiguous();
}

Example<> TensorDataset::get(int64_t index) const {
  WICK_CHECK(index >= 0 && index < size(), IndexError, "TensorDataset", "index ", index,
             " is out of range for a dataset of ", size(), " examples");
  return {data_.select(0, index), target_.select(0, index)};
}

Example<> TensorDataset::get_batch(const std::vector<int64_t>& indices) const {
  return {gather_rows(data_, indices, "TensorDataset"), gather_rows(target_, indices, "TensorDataset")};
}

}  // namespace wick::data
