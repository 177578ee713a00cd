// How coalesced collectives split their tensors (core/comm_plan.h), built with or without CUDA.
#include "core/comm_plan.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "wick/error.h"

namespace wick::detail {

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

std::vector<std::vector<size_t>> compute_bucket_assignment_by_size(
    const std::vector<Tensor>& tensors, const std::vector<int64_t>& bucket_size_limits) {
  WICK_CHECK(!bucket_size_limits.empty(), ValueError, "compute_bucket_assignment_by_size",
             "bucket_size_limits is empty");
  for (int64_t l : bucket_size_limits)
    WICK_CHECK(l > 0, ValueError, "compute_bucket_assignment_by_size",
               "bucket size limits must be positive, got ", l);
  struct Accumulator {
    std::vector<size_t> indices;
    int64_t bytes = 0;
    size_t limit = 0;  // index into bucket_size_limits
  };
  std::map<std::tuple<int, int, int>, Accumulator> open;  // by (dtype, device type, device index)
  std::vector<std::vector<size_t>> result;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    WICK_CHECK(t.defined(), ValueError, "compute_bucket_assignment_by_size", "tensor ", i, " is undefined");
    Accumulator& a = open[{int(t.dtype()), int(t.device().type()), int(t.device().index())}];
    a.indices.push_back(i);
    a.bytes += t.nbytes();
    if (a.bytes >= bucket_size_limits[std::min(a.limit, bucket_size_limits.size() - 1)]) {
      result.push_back(std::move(a.indices));
      a.indices.clear();
      a.bytes = 0;
      ++a.limit;
    }
  }
  for (auto& [key, a] : open)
    if (!a.indices.empty()) result.push_back(std::move(a.indices));
  std::sort(result.begin(), result.end(),
            [](const std::vector<size_t>& a, const std::vector<size_t>& b) { return a.front() < b.front(); });
  return result;
}

std::vector<int64_t> chunk_sizes(int64_t size, int64_t n) {
  if (n <= 0) return {};
  if (size == 0) return std::vector<int64_t>(size_t(n), 0);  // torch.chunk: n empty pieces
  const int64_t step = (size + n - 1) / n;
  std::vector<int64_t> out;
  for (int64_t off = 0; off < size; off += step) out.push_back(std::min(step, size - off));
  return out;
}

}  // namespace wick::detail
