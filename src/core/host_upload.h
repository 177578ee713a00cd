// A small tensor built on the host, moved to a device without waiting for it.
#pragma once

#include "wick/tensor.h"

namespace wick::detail {

// host on device: itself on the CPU; on a GPU, copied through pinned memory and queued on the
// device's current stream (the pinned block is not reused before the copy ends). A copy from
// pageable memory waits for the stream, so an op that builds its indices on the host would
// leave the GPU idle until the host caught up, on every call. Like any copy from the host, it
// is refused while the stream captures a graph.
Tensor to_device_async(const Tensor& host, Device device);

}  // namespace wick::detail
