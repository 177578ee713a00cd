// A small host tensor to a device without a wait (core/host_upload.h).
#include "core/host_upload.h"

namespace wick::detail {

Tensor to_device_async(const Tensor& host, Device device) {
  if (device.is_cpu()) return host;
  return host.pin_memory().to(device, /*non_blocking=*/true);
}

}  // namespace wick::detail
