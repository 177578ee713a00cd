// The pure planning parts of wick::cuda::comm (bucketing, chunk sizes), built with or
// without CUDA: DataParallel plans its buckets with them too.
#include <map>

#include "wick/cuda_comm.h"

namespace wick::cuda::comm::detail {

std::vector<std::vector<size_t>> bucket_indices(const std::vector<Tensor>& tensors, int64_t buffer_size) {
  // One open bucket per dtype; a bucket closes when the next tensor of its dtype would take
  // it past buffer_size. Buckets are listed in the order of their first tensor.
  std::vector<std::vector<size_t>> buckets;
  std::vector<int64_t> bytes;
  std::map<Dtype, size_t> open;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    const int64_t n = t.nbytes();
    auto it = open.find(t.dtype());
    if (it == open.end() || bytes[it->second] + n > buffer_size) {
      open[t.dtype()] = buckets.size();
      buckets.push_back({i});
      bytes.push_back(n);
    } else {
      buckets[it->second].push_back(i);
      bytes[it->second] += n;
    }
  }
  return buckets;
}

std::vector<int64_t> chunk_sizes(int64_t size, int64_t n) {
  if (n <= 0) return {};
  if (size == 0) return std::vector<int64_t>(size_t(n), 0);  // torch.chunk: n empty pieces
  const int64_t step = (size + n - 1) / n;
  std::vector<int64_t> out;
  for (int64_t off = 0; off < size; off += step) out.push_back(std::min(step, size - off));
  return out;
}

}  // namespace wick::cuda::comm::detail
