// batch_norm's fused CUDA path in training mode: cuDNN's batch normalization
// (cudnnBatchNormalizationForwardTraining and cudnnBatchNormalizationBackward), as PyTorch's
// CUDA batch norm runs it. nn::functional::batch_norm asks cudnn_batch_norm_takes, then runs the
// forward once and records one node, CudnnBatchNormBackward0 (autograd/hooks.h).
#pragma once

#include <array>

#include "wick/tensor.h"

namespace wick::detail {

// Whether cuDNN takes batch_norm(x, ...) in training mode: a build with cuDNN, a contiguous
// CUDA x of float32, float16 or bfloat16 with at least 2 dims and sizes within cuDNN's int,
// and weight, bias, running_mean and running_var each undefined or a contiguous float32 [C] on
// x's device (running_mean and running_var both or neither). Anything else runs by ops.
bool cudnn_batch_norm_takes(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                            const Tensor& running_var, double eps);

struct CudnnBatchNormForward {
  Tensor y;                       // like x
  Tensor save_mean, save_invstd;  // float32 [C]: the batch's mean and 1 / sqrt(var + eps)
};

// The forward on a problem cudnn_batch_norm_takes: y = (x - mean) invstd weight + bias over
// every dim but 1, the running statistics (when defined) moved toward the batch's mean and
// unbiased variance by momentum, in place. An undefined weight or bias counts as ones or zeros.
CudnnBatchNormForward cuda_cudnn_batch_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                                    const Tensor& running_mean, const Tensor& running_var,
                                                    double momentum, double eps);

// {dx, dweight, dbias} (dweight and dbias float32 [C]) from dy (contiguous, x's sizes and dtype)
// and what the forward saved.
std::array<Tensor, 3> cuda_cudnn_batch_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                                                     const Tensor& save_mean, const Tensor& save_invstd,
                                                     double eps);

// The CUDA side's part of cudnn_batch_norm_takes: whether the build has cuDNN.
bool cuda_cudnn_batch_norm_built();

}  // namespace wick::detail
