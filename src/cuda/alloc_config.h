// Settings of the caching allocator, read once from the environment:
//   WICK_CUDA_ALLOC_CONF="max_split_size_mb:256,garbage_collection_threshold:0.8,expandable_segments:True"
//   WICK_NO_CUDA_MEMORY_CACHING=1   plain cudaMalloc/cudaFree (for compute-sanitizer runs)
#pragma once

#include <cstddef>
#include <cstdint>

namespace wick::detail::gpu {

struct AllocConfig {
  // Blocks at least this large are never split, and only serve requests of about their size.
  size_t max_split_size = SIZE_MAX;
  // With a memory fraction set: above this share of it, old cached segments are given back.
  double garbage_collection_threshold = 0;
  // One growing virtual-memory segment per (stream, pool) instead of cudaMalloc'd segments
  // (ExpandableSegment in expandable_segment.h, ExpandableChain in caching_allocator.h).
  bool expandable_segments = false;
  bool caching = true;
};

// Parsed on first use; a malformed WICK_CUDA_ALLOC_CONF throws ValueError naming the key.
const AllocConfig& alloc_config();

}  // namespace wick::detail::gpu
