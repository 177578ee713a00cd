// Reusable CUDA events (timing disabled) per device, for the runtime's own ordering: stream
// waits, record_stream and pinned-memory reuse. Creating an event costs a driver call; these
// are made once and recycled.
#pragma once

#include <cuda_runtime_api.h>

namespace wick::detail::gpu {

// An event of device d, ready to record. The caller holds d's CudaDeviceScope or any device.
cudaEvent_t acquire_event(int d);
// Gives it back (it may still be pending: the next record simply replaces what it tracks).
void release_event(int d, cudaEvent_t e);

}  // namespace wick::detail::gpu
