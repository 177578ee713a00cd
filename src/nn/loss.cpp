// The loss modules: options in, class weights registered as buffers (so to()/cuda() move them).
#include "wick/nn/loss.h"

#include "wick/nn/functional.h"

namespace wick::nn {

namespace F = functional;

CrossEntropyLossImpl::CrossEntropyLossImpl(const CrossEntropyLossOptions& options) : options(options) {
  if (options.weight().defined()) weight = register_buffer("weight", options.weight());
}

Tensor CrossEntropyLossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::cross_entropy(input, target, weight, options.ignore_index(), options.reduction(),
                          options.label_smoothing());
}

NLLLossImpl::NLLLossImpl(const NLLLossOptions& options) : options(options) {
  if (options.weight().defined()) weight = register_buffer("weight", options.weight());
}

Tensor NLLLossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::nll_loss(input, target, weight, options.ignore_index(), options.reduction());
}

Tensor MSELossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::mse_loss(input, target, options.reduction());
}

Tensor L1LossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::l1_loss(input, target, options.reduction());
}

BCEWithLogitsLossImpl::BCEWithLogitsLossImpl(const BCEWithLogitsLossOptions& options) : options(options) {
  if (options.weight().defined()) weight = register_buffer("weight", options.weight());
  if (options.pos_weight().defined()) pos_weight = register_buffer("pos_weight", options.pos_weight());
}

Tensor BCEWithLogitsLossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::binary_cross_entropy_with_logits(input, target, weight, options.reduction(), pos_weight);
}

BCELossImpl::BCELossImpl(const BCELossOptions& options) : options(options) {
  if (options.weight().defined()) weight = register_buffer("weight", options.weight());
}

Tensor BCELossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::binary_cross_entropy(input, target, weight, options.reduction());
}

SmoothL1LossImpl::SmoothL1LossImpl(const SmoothL1LossOptions& options) : options(options) {
  WICK_CHECK(options.beta() >= 0, ValueError, "SmoothL1Loss", "smooth_l1_loss does not support negative values for beta.");
}

Tensor SmoothL1LossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::smooth_l1_loss(input, target, options.reduction(), options.beta());
}

}  // namespace wick::nn
