// Mixed precision: autocast regions, as torch.autocast.
//
//   {
//     wick::AutocastGuard autocast(wick::kCUDA, wick::kBFloat16);
//     auto loss = F::cross_entropy(model->forward(x), y);   // matmuls in bf16, the loss in float32
//   }
//   loss.backward();                                        // gradients reach the float32 weights
#pragma once

#include <optional>
#include <string>

#include "wick/device.h"
#include "wick/dtype.h"
#include "wick/tensor.h"

namespace wick {

// Inside its scope, on this thread, ops on device type `device` follow PyTorch's autocast
// lists: matmul, mm, bmm, addmm, linear and conv2d run in `dtype`; the ops of the float32 list
// (softmax, exp, sum, the losses, layer_norm, ... on CUDA; the losses on CPU) run in float32;
// cat and stack (CPU) take the widest input type; every other op runs in its inputs' types.
// Only float32/float16/bfloat16 tensors are cast (float64 and integers never), and each cast
// is a recorded op (ToCopyBackward0), so gradients reach float32 parameters. dtype: kFloat16
// or kBFloat16 (ValueError otherwise). enabled = false switches autocast off for the scope.
// Guards nest, each restoring the state it found; casts of weights (leaves that require
// grad) are made once and reused until the outermost guard of the thread ends.
class AutocastGuard {
 public:
  explicit AutocastGuard(DeviceType device, std::optional<Dtype> dtype = std::nullopt, bool enabled = true,
                         bool cache_enabled = true);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  DeviceType device_;
  bool prev_enabled_, prev_cache_enabled_;
  Dtype prev_dtype_;
};

// The state of this thread, as torch.is_autocast_enabled(device_type) and
// torch.get_autocast_dtype(device_type) (defaults: float16 on CUDA, bfloat16 on CPU).
bool is_autocast_enabled(DeviceType device);
Dtype get_autocast_dtype(DeviceType device);
// Drops this thread's cached casts of weights (the outermost AutocastGuard does it on exit).
void clear_autocast_cache();

}  // namespace wick
