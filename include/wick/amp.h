// Mixed precision: autocast regions and the gradient scaler, as torch.autocast and
// torch.amp.GradScaler.
//
//   {
//     wick::AutocastGuard autocast(wick::kCUDA, wick::kBFloat16);
//     auto loss = F::cross_entropy(model->forward(x), y);   // matmuls in bf16, the loss in float32
//   }
//   loss.backward();                                        // gradients reach the float32 weights
//
//   wick::amp::GradScaler scaler;                           // float16: scale the loss
//   scaler.scale(loss).backward();
//   scaler.step(optimizer);                                 // skipped when a gradient is inf/NaN
//   scaler.update();
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "wick/device.h"
#include "wick/dtype.h"
#include "wick/tensor.h"

namespace wick {

namespace optim {
class Optimizer;
}

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

namespace amp {

// Scales a loss so that float16 gradients do not underflow, and steps an optimizer only when
// its gradients are finite, adapting the scale as torch.amp.GradScaler: after an inf/NaN the
// scale is multiplied by backoff_factor, after growth_interval finite steps in a row by
// growth_factor. Disabled, every call passes through (scale(loss) is loss, step is
// optimizer.step()). Errors name the method called ("[GradScaler.step] ...", even when step
// unscales) and use PyTorch's words; a call that raises changes nothing.
class GradScaler {
 public:
  explicit GradScaler(double init_scale = 65536.0, double growth_factor = 2.0, double backoff_factor = 0.5,
                      int64_t growth_interval = 2000, bool enabled = true);

  // loss * scale (the scale lives as a float32 tensor on loss's device).
  Tensor scale(const Tensor& outputs);
  // Divides the gradients of optimizer's parameters by the scale in place and records whether
  // any is inf/NaN: one fused pass per device and dtype, the flag left on the device. Once per
  // optimizer between update() calls (a second call raises, as PyTorch).
  void unscale_(optim::Optimizer& optimizer);
  // Unscales if not done yet, then runs optimizer.step() unless a gradient was inf/NaN (the
  // only point where the flag is read on the host).
  void step(optim::Optimizer& optimizer);
  // Adjusts the scale from this step's flags (or sets it to new_scale) and resets the
  // per-optimizer state.
  void update(std::optional<double> new_scale = std::nullopt);

  double get_scale() const;
  double get_growth_factor() const { return growth_factor_; }
  double get_backoff_factor() const { return backoff_factor_; }
  int64_t get_growth_interval() const { return growth_interval_; }
  bool is_enabled() const { return enabled_; }

  // {"scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"}, as
  // PyTorch's state_dict (empty when disabled).
  std::map<std::string, double> state_dict() const;
  // Every field is checked before any is set (ValueError, nothing changed): scale finite and > 0
  // (also as a float32), growth_factor finite and > 1, backoff_factor in (0, 1), growth_interval
  // an integer >= 1, _growth_tracker an integer in [0, growth_interval).
  void load_state_dict(const std::map<std::string, double>& state);

 private:
  struct OptimizerState {
    bool unscaled = false, stepped = false;
    std::vector<Tensor> found_inf;  // one float32 flag per device touched
    std::optional<bool> found_read;  // their values, once step() has read them
  };
  // unscale_'s work, its errors naming op (the method the user called).
  void unscale_grads(optim::Optimizer& optimizer, OptimizerState& st, const char* op);

  double scale_host_, growth_factor_, backoff_factor_;  // scale_host_: the scale, float32-rounded
  int64_t growth_interval_;
  bool enabled_;
  Tensor scale_;                     // float32 0-d on the device of the first scaled loss
  int64_t growth_tracker_host_ = 0;  // finite steps in a row since the last change of scale
  std::map<const optim::Optimizer*, OptimizerState> per_optimizer_;
};

}  // namespace amp
}  // namespace wick
