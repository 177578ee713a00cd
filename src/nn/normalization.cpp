// BatchNorm1d/2d (running statistics as buffers), LayerNorm, RMSNorm and GroupNorm.
#include "wick/nn/normalization.h"

#include "core/tensor_ops.h"
#include "nn/repr.h"
#include "wick/autograd.h"
#include "wick/nn/functional.h"
#include "wick/nn/init.h"
#include "wick/ops.h"

namespace wick::nn {

using detail::py_bool;
using detail::py_float;

NormBaseImpl::NormBaseImpl(const char* name, int64_t c, bool affine, bool track_running_stats) : Module(name) {
  WICK_CHECK(c >= 0, ValueError, name, "num_features must be non-negative, got ", c);
  if (affine) {
    weight = register_parameter("weight", wick::detail::empty_for({c}, {}, name));
    bias = register_parameter("bias", wick::detail::empty_for({c}, {}, name));
  }
  if (track_running_stats) {
    running_mean = register_buffer("running_mean", wick::zeros({c}));
    running_var = register_buffer("running_var", wick::ones({c}));
    num_batches_tracked = register_buffer("num_batches_tracked", wick::zeros({}, kInt64));
  }
  reset_parameters();
}

void NormBaseImpl::reset_running_stats() {
  if (!running_mean.defined()) return;
  NoGradGuard g;
  running_mean.zero_();
  running_var.fill_(1);
  num_batches_tracked.zero_();
}

void NormBaseImpl::reset_parameters() {
  reset_running_stats();
  if (weight.defined()) {
    init::ones_(weight);
    init::zeros_(bias);
  }
}

BatchNormImplBase::BatchNormImplBase(const BatchNormOptions& options, const char* name)
    : NormBaseImpl(name, options.num_features(), options.affine(), options.track_running_stats()), options(options) {}

Tensor BatchNormImplBase::forward(const Tensor& x) {
  WICK_CHECK(x.defined(), ValueError, "batch_norm",
             "expected a defined tensor for argument 'input' but got an undefined one (Tensor())");
  check_input(x);
  WICK_CHECK(x.size(1) == options.num_features(), ValueError, name().c_str(), "expected ",
             options.num_features(), " channels (dim 1) but got input of size ", x.sizes());
  double momentum = options.momentum().value_or(0.0);
  const bool track = is_training() && options.track_running_stats();
  // Without a momentum, a cumulative average: batch k weighs 1 / k.
  if (track && !options.momentum()) momentum = 1.0 / double(num_batches_tracked.item<int64_t>() + 1);
  // Batch statistics in training, or when no running ones are kept; the running ones are
  // updated in training and used in evaluation.
  const bool use_batch_stats = is_training() || !options.track_running_stats();
  Tensor y = functional::batch_norm(x, running_mean, running_var, weight, bias, use_batch_stats, momentum,
                                    options.eps());
  // Counted once the batch went through: a forward that raises leaves the module as it was.
  if (track) {
    NoGradGuard g;
    num_batches_tracked.add_(1);
  }
  return y;
}

std::string BatchNormImplBase::extra_repr() const {
  std::string m = options.momentum() ? py_float(*options.momentum()) : "None";
  return std::to_string(options.num_features()) + ", eps=" + py_float(options.eps()) + ", momentum=" + m +
         ", affine=" + py_bool(options.affine()) +
         ", track_running_stats=" + py_bool(options.track_running_stats());
}

void BatchNorm1dImpl::check_input(const Tensor& x) const {
  WICK_CHECK(x.dim() == 2 || x.dim() == 3, ValueError, "BatchNorm1d", "expected 2D or 3D input (got ",
             x.dim(), "D input)");
}

void BatchNorm2dImpl::check_input(const Tensor& x) const {
  WICK_CHECK(x.dim() == 4, ValueError, "BatchNorm2d", "expected 4D input (got ", x.dim(), "D input)");
}

LayerNormImpl::LayerNormImpl(const LayerNormOptions& options) : options(options) {
  if (options.elementwise_affine()) {
    weight =
        register_parameter("weight", wick::detail::empty_for(options.normalized_shape(), {}, "LayerNorm"));
    if (options.bias())
      bias = register_parameter("bias", wick::detail::empty_for(options.normalized_shape(), {}, "LayerNorm"));
  }
  reset_parameters();
}

void LayerNormImpl::reset_parameters() {
  if (weight.defined()) init::ones_(weight);
  if (bias.defined()) init::zeros_(bias);
}

Tensor LayerNormImpl::forward(const Tensor& x) {
  return functional::layer_norm(x, options.normalized_shape(), weight, bias, options.eps());
}

std::string LayerNormImpl::extra_repr() const {
  return detail::py_tuple(options.normalized_shape()) + ", eps=" + py_float(options.eps()) +
         ", elementwise_affine=" + py_bool(options.elementwise_affine());
}

RMSNormImpl::RMSNormImpl(const RMSNormOptions& options) : options(options) {
  if (options.elementwise_affine())
    weight = register_parameter("weight", wick::detail::empty_for(options.normalized_shape(), {}, "RMSNorm"));
  reset_parameters();
}

void RMSNormImpl::reset_parameters() {
  if (weight.defined()) init::ones_(weight);
}

Tensor RMSNormImpl::forward(const Tensor& x) {
  return functional::rms_norm(x, options.normalized_shape(), weight, options.eps());
}

std::string RMSNormImpl::extra_repr() const {
  return detail::py_tuple(options.normalized_shape()) +
         ", eps=" + (options.eps() ? py_float(*options.eps()) : std::string("None")) +
         ", elementwise_affine=" + py_bool(options.elementwise_affine());
}

GroupNormImpl::GroupNormImpl(const GroupNormOptions& options) : options(options) {
  WICK_CHECK(options.num_groups() > 0 && options.num_channels() % options.num_groups() == 0, ValueError,
             "GroupNorm", "num_channels must be divisible by num_groups");
  if (options.affine()) {
    weight = register_parameter("weight", wick::detail::empty_for({options.num_channels()}, {}, "GroupNorm"));
    bias = register_parameter("bias", wick::detail::empty_for({options.num_channels()}, {}, "GroupNorm"));
  }
  reset_parameters();
}

void GroupNormImpl::reset_parameters() {
  if (weight.defined()) init::ones_(weight);
  if (bias.defined()) init::zeros_(bias);
}

Tensor GroupNormImpl::forward(const Tensor& x) {
  return functional::group_norm(x, options.num_groups(), weight, bias, options.eps());
}

std::string GroupNormImpl::extra_repr() const {
  return std::to_string(options.num_groups()) + ", " + std::to_string(options.num_channels()) +
         ", eps=" + py_float(options.eps()) + ", affine=" + py_bool(options.affine());
}

}  // namespace wick::nn
