// amp::GradScaler, as torch.amp.GradScaler. The scale lives on the loss's device (a float32
// 0-d tensor, mirrored on the host, where update() computes it: a value the host knows needs no
// read-back). unscale_ runs KernelTable's unscale_check once per device and dtype: one
// multi-tensor pass that divides the gradients and raises a device-side flag on inf/NaN; step()
// is the only place that reads a flag back (docs/design.md, "Mixed precision").
#include <cmath>
#include <map>
#include <tuple>
#include <utility>

#include "core/as_op.h"
#include "core/kernel_table.h"
#include "core/tensor_ops.h"
#include "wick/amp.h"
#include "wick/autograd.h"
#include "wick/ops.h"
#include "wick/optim/optimizer.h"

namespace wick::amp {

GradScaler::GradScaler(double init_scale, double growth_factor, double backoff_factor,
                       int64_t growth_interval, bool enabled)
    : scale_host_(float(init_scale)), growth_factor_(growth_factor), backoff_factor_(backoff_factor),
      growth_interval_(growth_interval), enabled_(enabled) {
  // PyTorch asserts the two factors' ranges; a scale or factor that is not a finite positive
  // float32 would make every step inf/NaN or zero, so it is refused too.
  WICK_CHECK(std::isfinite(init_scale) && init_scale > 0 && std::isfinite(float(init_scale)), ValueError,
             "GradScaler", "init_scale must be a finite positive float32 value, got ", init_scale);
  WICK_CHECK(growth_factor > 1.0 && std::isfinite(growth_factor), ValueError, "GradScaler",
             "The growth factor must be > 1.0 (and finite), got ", growth_factor);
  WICK_CHECK(backoff_factor < 1.0 && backoff_factor > 0, ValueError, "GradScaler",
             "The backoff factor must be < 1.0 (and > 0), got ", backoff_factor);
  WICK_CHECK(growth_interval > 0, ValueError, "GradScaler", "growth_interval must be a positive integer, got ",
             growth_interval);
}

Tensor GradScaler::scale(const Tensor& outputs) {
  if (!enabled_) return outputs;
  WICK_CHECK(outputs.defined(), ValueError, "GradScaler.scale", "outputs must be a defined tensor");
  if (!scale_.defined()) {
    scale_ = full({}, scale_host_, TensorOptions(kFloat32).device(outputs.device()));
  }
  return outputs * (scale_.device() == outputs.device() ? scale_ : scale_.to(outputs.device(), true));
}


namespace {
// PyTorch's _check_scale_growth_tracker, for the method named.
void check_scale(const Tensor& scale, const char* op, const char* method) {
  WICK_CHECK(scale.defined(), ValueError, op, "Attempted ", method,
             " but _scale is None.  This may indicate your script did not use "
             "scaler.scale(loss or outputs) earlier in the iteration.");
}
}  // namespace

void GradScaler::unscale_(optim::Optimizer& optimizer) {
  if (!enabled_) return;
  const char* op = "GradScaler.unscale_";
  check_scale(scale_, op, "unscale_");
  // Looked up, not inserted, until the call succeeds: a failed call leaves no state behind.
  auto it = per_optimizer_.find(&optimizer);
  if (it != per_optimizer_.end()) {
    // As PyTorch: a stepped optimizer (unscaled too) hears about the step.
    WICK_CHECK(!it->second.stepped, ValueError, op, "unscale_() is being called after step().");
    WICK_CHECK(!it->second.unscaled, ValueError, op,
               "unscale_() has already been called on this optimizer since the last update().");
  }
  OptimizerState st;
  unscale_grads(optimizer, st, op);
  per_optimizer_[&optimizer] = std::move(st);
}

void GradScaler::unscale_grads(optim::Optimizer& optimizer, OptimizerState& st, const char* op) {
  // The gradients by device and dtype; a float16 gradient is refused, as PyTorch (its
  // parameters should be float32, the float16 copies autocast's).
  std::map<std::tuple<int, int, int>, std::vector<Tensor>> lists;  // (device type, index, dtype)
  std::vector<std::pair<Tensor, Tensor>> copied_back;              // (gradient, contiguous copy)
  for (const auto& group : optimizer.param_groups())
    for (const Tensor& p : group.params()) {
      if (!p.defined() || !p.grad().defined()) continue;
      const Tensor& g = p.grad();
      WICK_CHECK(g.dtype() != kFloat16, ValueError, op, "Attempting to unscale FP16 gradients.");
      WICK_CHECK(is_floating_point(g.dtype()), TypeError, op, "expected floating gradients, got ", g.dtype());
      Tensor c = g;
      if (!g.is_contiguous()) {
        c = g.contiguous();
        copied_back.emplace_back(g, c);
      }
      lists[{int(g.device().type()), g.device().index(), int(g.dtype())}].push_back(c);
    }
  // 1 / scale rounded to float32, as PyTorch's scale.double().reciprocal().float().
  const float inv = float(1.0 / double(scale_host_));
  std::map<std::pair<int, int>, Tensor> found;  // by (device type, index)
  NoGradGuard no_grad;
  for (auto& [key, grads] : lists) {
    const Device d = grads[0].device();
    Tensor& f = found[{std::get<0>(key), std::get<1>(key)}];
    if (!f.defined()) f = zeros({}, TensorOptions(kFloat32).device(d));
    Tensor inv_t = full({}, inv, TensorOptions(kFloat32).device(d));
    detail::kernel<&detail::KernelTable::unscale_check>(d, op)(grads, f, inv_t);
  }
  for (auto& [g, c] : copied_back) g.copy_(c);
  // One flag per device that holds a gradient, none when no parameter has one: PyTorch's
  // per-device dict is filled as gradients are met, so step() then raises "No inf checks were
  // recorded for this optimizer." (and update() without another stepped optimizer, its own).
  st.found_inf.clear();
  for (auto& [d, f] : found) st.found_inf.push_back(f);
  st.unscaled = true;
}

void GradScaler::step(optim::Optimizer& optimizer) {
  if (!enabled_) {
    optimizer.step();
    return;
  }
  const char* op = "GradScaler.step";
  check_scale(scale_, op, "step");
  auto it = per_optimizer_.find(&optimizer);
  WICK_CHECK(it == per_optimizer_.end() || !it->second.stepped, ValueError, op,
             "step() has already been called since the last update().");
  OptimizerState st = it != per_optimizer_.end() ? it->second : OptimizerState{};
  if (!st.unscaled) {
    unscale_grads(optimizer, st, op);
    // Unscaled gradients stay unscaled (as in PyTorch): record it even if the step fails.
    per_optimizer_[&optimizer] = st;
  }
  WICK_CHECK(!st.found_inf.empty(), ValueError, op, "No inf checks were recorded for this optimizer.");
  double total = 0;
  for (const Tensor& f : st.found_inf) total += f.item<double>();  // the one read-back
  st.found_read = total != 0;
  // The optimizer's errors name the call made, this one.
  if (total == 0) detail::as_op(op, [&] { optimizer.step(); });
  st.stepped = true;
  per_optimizer_[&optimizer] = std::move(st);
}

void GradScaler::update(std::optional<double> new_scale) {
  if (!enabled_) return;
  const char* op = "GradScaler.update";
  check_scale(scale_, op, "update");
  const double before = scale_host_;
  if (new_scale) {
    WICK_CHECK(std::isfinite(*new_scale) && *new_scale > 0 && std::isfinite(float(*new_scale)), ValueError, op,
               "new_scale must be a finite positive float32 value, got ", *new_scale);
    scale_host_ = float(*new_scale);
  } else {
    bool any = false, recorded = false;
    for (auto& [o, st] : per_optimizer_) {
      if (st.found_inf.empty()) continue;
      recorded = true;
      // Known since step(): reading the flags again would wait for the optimizer's kernels.
      if (st.found_read) any |= *st.found_read;
      else
        for (const Tensor& f : st.found_inf) any |= f.item<double>() != 0;
    }
    WICK_CHECK(recorded, ValueError, op, "No inf checks were recorded prior to update.");
    // PyTorch's _amp_update_scale_, in float32.
    if (any) {
      scale_host_ = float(scale_host_ * float(backoff_factor_));
      growth_tracker_host_ = 0;
    } else if (++growth_tracker_host_ == growth_interval_) {
      const float grown = float(scale_host_ * float(growth_factor_));
      if (std::isfinite(grown)) scale_host_ = grown;
      growth_tracker_host_ = 0;
    }
  }
  if (scale_host_ != before) scale_.fill_(scale_host_);  // no launch while the scale holds
  per_optimizer_.clear();
}

double GradScaler::get_scale() const { return enabled_ ? double(scale_host_) : 1.0; }

std::map<std::string, double> GradScaler::state_dict() const {
  if (!enabled_) return {};
  return {{"scale", get_scale()},
          {"growth_factor", growth_factor_},
          {"backoff_factor", backoff_factor_},
          {"growth_interval", double(growth_interval_)},
          {"_growth_tracker", double(growth_tracker_host_)}};
}

void GradScaler::load_state_dict(const std::map<std::string, double>& state) {
  if (!enabled_) return;
  const char* op = "GradScaler.load_state_dict";
  WICK_CHECK(!state.empty(), ValueError, op,
             "The source state dict is empty, possibly because it was saved from a disabled instance of "
             "GradScaler.");
  for (const char* k : {"scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"})
    WICK_CHECK(state.count(k), ValueError, op, "missing key '", k, "'");
  // Every field is checked before any is set.
  const double scale = state.at("scale"), growth = state.at("growth_factor"),
               backoff = state.at("backoff_factor"), interval = state.at("growth_interval"),
               tracker = state.at("_growth_tracker");
  WICK_CHECK(std::isfinite(scale) && scale > 0 && std::isfinite(float(scale)) && float(scale) > 0, ValueError, op,
             "'scale' must be a finite positive float32 value, got ", scale);
  WICK_CHECK(std::isfinite(growth) && growth > 1.0, ValueError, op,
             "'growth_factor' must be finite and > 1.0, got ", growth);
  WICK_CHECK(backoff > 0 && backoff < 1.0, ValueError, op, "'backoff_factor' must be in (0, 1), got ", backoff);
  // 2^63 is the first double past int64's range.
  WICK_CHECK(std::isfinite(interval) && interval == std::floor(interval) && interval >= 1 && interval < 0x1p63,
             ValueError, op, "'growth_interval' must be a positive integer, got ", interval);
  WICK_CHECK(std::isfinite(tracker) && tracker == std::floor(tracker) && tracker >= 0 && tracker < interval,
             ValueError, op, "'_growth_tracker' must be an integer in [0, growth_interval) = [0, ",
             int64_t(interval), "), got ", tracker);
  if (scale_.defined()) scale_.fill_(float(scale));  // the one step that may fail (a device error)
  scale_host_ = float(scale);
  growth_factor_ = growth;
  backoff_factor_ = backoff;
  growth_interval_ = int64_t(interval);
  growth_tracker_host_ = int64_t(tracker);
}

}  // namespace wick::amp
