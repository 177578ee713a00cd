// How coalesced collectives split their tensors: the one bucketing module of cuda::comm
// (broadcast_coalesced, reduce_add_coalesced, scatter), DataParallel (its replicas' parameters
// and gradients) and DistributedDataParallel (its gradient buckets and its first broadcast).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "wick/tensor.h"

namespace wick::detail {

// torch.cuda.comm's buckets: indices into tensors, buckets in the order of their first tensor,
// each of one dtype and at most buffer_size bytes (a larger tensor is a bucket of its own).
std::vector<std::vector<size_t>> bucket_indices(const std::vector<Tensor>& tensors, int64_t buffer_size);

// PyTorch's compute_bucket_assignment_by_size: tensors, in the order given, go into buckets by
// dtype and device; a bucket closes when its size in bytes reaches its limit, the first bucket of
// each dtype taking bucket_size_limits[0], the second [1], and so on (the last limit repeats).
// Returns each bucket's indices into tensors (ascending), buckets ordered by their first index.
// ValueError naming compute_bucket_assignment_by_size for no limits, a limit that is not
// positive, or an undefined tensor.
std::vector<std::vector<size_t>> compute_bucket_assignment_by_size(
    const std::vector<Tensor>& tensors, const std::vector<int64_t>& bucket_size_limits);

// The piece sizes of torch.chunk for size rows over n (cuda::comm::scatter without chunk
// sizes, DataParallel's scatter).
std::vector<int64_t> chunk_sizes(int64_t size, int64_t n);

}  // namespace wick::detail
