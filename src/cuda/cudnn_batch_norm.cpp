// batch_norm in training mode on CUDA through cuDNN's batch normalization (core/cudnn_batch_norm.h):
// cudnnBatchNormalizationForwardTraining and cudnnBatchNormalizationBackward, one call each, on
// the current stream of x's device, as PyTorch's CUDA batch norm does. Built only with cuDNN
// (WICK_HAVE_CUDNN); without it cuda_cudnn_batch_norm_built() is false and batch_norm runs by ops.
//
// x is described as 4-D: [N, C] as [N, C, 1, 1] in per-activation mode (statistics over N),
// [N, C, H, W] as itself and any other [N, C, *] as [N, C, prod(*), 1] in spatial mode
// (statistics over every dim but C): the same statistics, as the packed layout is the same.
// The per-channel tensors (weight, bias, running statistics, saved mean and inverse standard
// deviation) are float32 [C] for every x dtype: cuDNN's derived descriptor for float16 and
// bfloat16 data is float.
#include "core/cudnn_batch_norm.h"

#ifdef WICK_HAVE_CUDNN

#include <array>
#include <cstdint>
#include <mutex>

#include <cudnn.h>

#include "cuda/cuda_check.h"
#include "cuda/cudnn_common.h"
#include "cuda/runtime.h"
#include "cuda/tool_marks.h"
#include "wick/error.h"
#include "wick/ops.h"

namespace wick::detail {

namespace {

constexpr const char* kOp = "batch_norm";

// The x descriptor and the per-channel one derived from it, for one call.
struct Descriptors {
  cudnnTensorDescriptor_t x = nullptr, channel = nullptr;
  cudnnBatchNormMode_t mode = CUDNN_BATCHNORM_SPATIAL;
  explicit Descriptors(const Tensor& t) {
    int64_t s[4] = {t.size(0), t.size(1), 1, 1};
    if (t.dim() == 4) s[2] = t.size(2), s[3] = t.size(3);
    else
      for (int64_t d = 2; d < t.dim(); ++d) s[2] *= t.size(d);
    mode = t.dim() == 2 ? CUDNN_BATCHNORM_PER_ACTIVATION : CUDNN_BATCHNORM_SPATIAL;
    WICK_CUDNN_OP_CHECK(kOp, cudnnCreateTensorDescriptor(&x));
    WICK_CUDNN_OP_CHECK(kOp, cudnnCreateTensorDescriptor(&channel));
    WICK_CUDNN_OP_CHECK(kOp, cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, gpu::cudnn_data_type(t.dtype()),
                                                         int(s[0]), int(s[1]), int(s[2]), int(s[3])));
    WICK_CUDNN_OP_CHECK(kOp, cudnnDeriveBNTensorDescriptor(channel, x, mode));
  }
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;
  ~Descriptors() {
    if (x) cudnnDestroyTensorDescriptor(x);
    if (channel) cudnnDestroyTensorDescriptor(channel);
  }
};

// t, or a float32 [c] of v on device when t is undefined (an absent weight or bias).
Tensor or_filled(const Tensor& t, int64_t c, double v, Device device) {
  return t.defined() ? t : wick::full({c}, v, TensorOptions(kFloat32).device(device));
}

// call(handle, descriptors) under the device handle's lock, on x's device's current stream,
// then the written tensors marked initialized for compute-sanitizer.
template <class F>
void run(const Tensor& x, std::initializer_list<Tensor> written, F&& call) {
  const int dev = x.device().index();
  const Descriptors d(x);
  gpu::CudnnHandle& h = gpu::cudnn_handle(dev, kOp);
  const cudaStream_t stream = gpu::current_cuda_stream(dev);
  {
    std::lock_guard<std::mutex> lock(h.mu);
    WICK_CUDNN_OP_CHECK(kOp, cudnnSetStream(h.handle, stream));
    WICK_CUDNN_OP_CHECK(kOp, call(h.handle, d));
  }
  WICK_CUDA_AFTER_LAUNCH(kOp, stream);
  for (const Tensor& t : written)
    if (t.defined() && t.numel() > 0)
      gpu::mark_initialized(t.data_ptr(), size_t(t.numel() * t.element_size()), stream);
}

constexpr float kOne = 1, kZero = 0;

}  // namespace

bool cuda_cudnn_batch_norm_built() { return true; }

CudnnBatchNormForward cuda_cudnn_batch_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                                    const Tensor& running_mean, const Tensor& running_var,
                                                    double momentum, double eps) {
  const Device device = x.device();
  const int dev = device.index();
  const int64_t c = x.size(1);
  CudaDeviceScope scope(dev);
  const Tensor w = or_filled(weight, c, 1, device), b = or_filled(bias, c, 0, device);
  const TensorOptions stats = TensorOptions(kFloat32).device(device);
  CudnnBatchNormForward r{wick::empty(x.sizes(), x.options()), wick::empty({c}, stats), wick::empty({c}, stats)};
  run(x, {r.y, r.save_mean, r.save_invstd, running_mean, running_var}, [&](cudnnHandle_t h, const Descriptors& d) {
    return cudnnBatchNormalizationForwardTraining(
        h, d.mode, &kOne, &kZero, d.x, x.data_ptr(), d.x, r.y.data_ptr(), d.channel, w.data_ptr(), b.data_ptr(),
        momentum, running_mean.defined() ? running_mean.data_ptr() : nullptr,
        running_var.defined() ? running_var.data_ptr() : nullptr, eps, r.save_mean.data_ptr(),
        r.save_invstd.data_ptr());
  });
  return r;
}

std::array<Tensor, 3> cuda_cudnn_batch_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                                                     const Tensor& save_mean, const Tensor& save_invstd,
                                                     double eps) {
  const Device device = x.device();
  const int dev = device.index();
  const int64_t c = x.size(1);
  CudaDeviceScope scope(dev);
  const Tensor w = or_filled(weight, c, 1, device);
  const TensorOptions stats = TensorOptions(kFloat32).device(device);
  std::array<Tensor, 3> g{wick::empty(x.sizes(), x.options()), wick::empty({c}, stats), wick::empty({c}, stats)};
  run(x, {g[0], g[1], g[2]}, [&](cudnnHandle_t h, const Descriptors& d) {
    return cudnnBatchNormalizationBackward(h, d.mode, &kOne, &kZero, &kOne, &kZero, d.x, x.data_ptr(), d.x,
                                           dy.data_ptr(), d.x, g[0].data_ptr(), d.channel, w.data_ptr(),
                                           g[1].data_ptr(), g[2].data_ptr(), eps, save_mean.data_ptr(),
                                           save_invstd.data_ptr());
  });
  return g;
}

}  // namespace wick::detail

#else  // no cuDNN: batch_norm runs by ops

#include "wick/error.h"

namespace wick::detail {

bool cuda_cudnn_batch_norm_built() { return false; }

CudnnBatchNormForward cuda_cudnn_batch_norm_forward(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                                    const Tensor&, double, double) {
  raise<DeviceError>("batch_norm", "wick was built without cuDNN");
}

std::array<Tensor, 3> cuda_cudnn_batch_norm_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                                     const Tensor&, double) {
  raise<DeviceError>("batch_norm", "wick was built without cuDNN");
}

}  // namespace wick::detail

#endif  // WICK_HAVE_CUDNN
