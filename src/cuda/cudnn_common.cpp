// One cuDNN handle per device and the dtype mapping, for the cuDNN paths (cudnn_common.h).
#include "cuda/cudnn_common.h"

#ifdef WICK_HAVE_CUDNN

#include <array>

#include "cuda/runtime.h"
#include "wick/error.h"

namespace wick::detail::gpu {

CudnnHandle& cudnn_handle(int device, const char* op) {
  static std::array<CudnnHandle, kMaxCudaDevices> handles;
  CudnnHandle& d = handles[size_t(device)];
  std::call_once(d.once, [&] {
    CudaDeviceScope scope(device);
    RelaxedCaptureMode relaxed;
    WICK_CUDNN_OP_CHECK(op, cudnnCreate(&d.handle));
  });
  return d;
}

void cudnn_fail(const char* op, cudnnStatus_t status, const char* expr, const char* file, int line) {
  raise<DeviceError>(op, "cuDNN error: ", cudnnGetErrorString(status), " (", file, ":", line, ": ", expr, ")");
}

cudnnDataType_t cudnn_data_type(Dtype dt) {
  switch (dt) {
    case kFloat16:
      return CUDNN_DATA_HALF;
    case kBFloat16:
      return CUDNN_DATA_BFLOAT16;
    case kFloat64:
      return CUDNN_DATA_DOUBLE;
    default:
      return CUDNN_DATA_FLOAT;
  }
}

}  // namespace wick::detail::gpu

#endif  // WICK_HAVE_CUDNN
