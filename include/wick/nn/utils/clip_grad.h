// nn::utils: gradient clipping, as torch.nn.utils.clip_grad_norm_ and clip_grad_value_ (the
// names and header of LibTorch's torch::nn::utils).
//
//   loss.backward();
//   wick::nn::utils::clip_grad_norm_(net->parameters(), 1.0);
//   opt.step();
#pragma once

#include <optional>
#include <vector>

#include "wick/tensor.h"

namespace wick::nn::utils {

// Scales the gradients of parameters in place so that their total norm_type-norm (the norm of
// the per-gradient norms; norm_type may be INFINITY) is at most max_norm, and returns that total
// norm before clipping as a 0-d tensor on the gradients' device (0 with no gradients).
// Parameters without a gradient are skipped. Nothing waits for the device unless
// error_if_nonfinite, which throws when the total norm is NaN or infinite (gradients left as
// they were). foreach (as PyTorch's: unset means true where it can): on CUDA, for norm_type 2
// and inf, the norm and the scaling of each device's and dtype's contiguous gradients are one
// multi-tensor pass each; false gives every gradient its own kernels (the same values up to
// rounding).
Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false, std::optional<bool> foreach = std::nullopt);
Tensor clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false, std::optional<bool> foreach = std::nullopt);
// Clamps every gradient of parameters to [-clip_value, clip_value] in place.
void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value,
                      std::optional<bool> foreach = std::nullopt);
void clip_grad_value_(const Tensor& parameter, double clip_value, std::optional<bool> foreach = std::nullopt);

}  // namespace wick::nn::utils
