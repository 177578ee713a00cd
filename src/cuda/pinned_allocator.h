// The pinned (page-locked) host allocator behind pin_memory() and pinned_memory(true).
#pragma once

#include <cuda_runtime_api.h>

#include "wick/detail/storage.h"

namespace wick::detail::gpu {

// Work queued on (device, stream) reads or writes the pinned block behind p: the block is not
// handed out again before that work completes. False when p is not from pinned_allocator().
bool pinned_record_stream(const DataPtr& p, int device, cudaStream_t stream);

// True when p is in a block of pinned_allocator() (no CUDA call).
bool is_cached_pinned_ptr(const void* p);

}  // namespace wick::detail::gpu
