// ATen's forms of the losses (LibTorch's reduction enum and argument order) and
// constant_pad_nd, over the nn::functional ones (include/wick/nn/functional.h).
#include "core/as_op.h"
#include "core/checks.h"
#include "nn/reduction_string.h"
#include "wick/nn/functional.h"
#include "wick/ops.h"

namespace wick {

Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight, Reduction::Reduction reduction,
                int64_t ignore_index) {
  return nn::functional::nll_loss(input, target, weight, ignore_index, detail::reduction_string(reduction, "nll_loss"));
}
Tensor nll_loss2d(const Tensor& input, const Tensor& target, const Tensor& weight, Reduction::Reduction reduction,
                  int64_t ignore_index) {
  detail::check_defined(input, "nll_loss2d", "self");
  WICK_CHECK(input.dim() == 4, ValueError, "nll_loss2d",
             "only batches of spatial targets supported (4D tensors) but got input of size: ", input.sizes());
  detail::check_defined(target, "nll_loss2d", "target");
  WICK_CHECK(target.dim() == 3, ValueError, "nll_loss2d",
             "only batches of spatial targets supported (3D tensors) but got targets of size: ", target.sizes());
  return detail::as_op("nll_loss2d", [&] {
    return nn::functional::nll_loss(input, target, weight, ignore_index, detail::reduction_string(reduction, "nll_loss2d"));
  });
}
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction::Reduction reduction) {
  return nn::functional::mse_loss(input, target, detail::reduction_string(reduction, "mse_loss"));
}
Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction::Reduction reduction) {
  return nn::functional::l1_loss(input, target, detail::reduction_string(reduction, "l1_loss"));
}
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, Reduction::Reduction reduction, double beta) {
  return nn::functional::smooth_l1_loss(input, target, detail::reduction_string(reduction, "smooth_l1_loss"), beta);
}
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight,
                            Reduction::Reduction reduction) {
  return nn::functional::binary_cross_entropy(input, target, weight,
                                              detail::reduction_string(reduction, "binary_cross_entropy"));
}

Tensor constant_pad_nd(const Tensor& input, IntArrayRef pad, const Scalar& value) {
  return detail::as_op("constant_pad_nd", [&] {
    return nn::functional::pad(input, pad.vec(), "constant", value.to<double>());
  });
}

namespace {
// pad(input, padding, mode) over the last n dims, padding of 2 n values, named as op.
Tensor aten_pad(const Tensor& input, IntArrayRef padding, const char* mode, size_t n, const char* op) {
  return detail::as_op(op, [&] {
    WICK_CHECK(padding.size() == 2 * n, ValueError, op, "padding size is expected to be ", 2 * n, ", but got: ",
               padding.size());
    detail::check_defined(input, op, "self");
    WICK_CHECK(input.dim() == int64_t(n) + 1 || input.dim() == int64_t(n) + 2, ValueError, op, "Expected ", n + 1,
               "D or ", n + 2, "D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for "
               "input, but got: ", input.sizes());
    return nn::functional::pad(input, padding.vec(), mode);
  });
}
}  // namespace

Tensor reflection_pad1d(const Tensor& input, IntArrayRef p) { return aten_pad(input, p, "reflect", 1, "reflection_pad1d"); }
Tensor reflection_pad2d(const Tensor& input, IntArrayRef p) { return aten_pad(input, p, "reflect", 2, "reflection_pad2d"); }
Tensor reflection_pad3d(const Tensor& input, IntArrayRef p) { return aten_pad(input, p, "reflect", 3, "reflection_pad3d"); }
Tensor replication_pad1d(const Tensor& input, IntArrayRef p) {
  return aten_pad(input, p, "replicate", 1, "replication_pad1d");
}
Tensor replication_pad2d(const Tensor& input, IntArrayRef p) {
  return aten_pad(input, p, "replicate", 2, "replication_pad2d");
}
Tensor replication_pad3d(const Tensor& input, IntArrayRef p) {
  return aten_pad(input, p, "replicate", 3, "replication_pad3d");
}

}  // namespace wick

namespace wick {

Tensor kl_div(const Tensor& input, const Tensor& target, Reduction::Reduction reduction, bool log_target) {
  return detail::as_op("kl_div", [&] {
    return nn::functional::kl_div(input, target, detail::reduction_string(reduction, "kl_div"), log_target);
  });
}
Tensor huber_loss(const Tensor& input, const Tensor& target, Reduction::Reduction reduction, double delta) {
  return detail::as_op("huber_loss", [&] {
    return nn::functional::huber_loss(input, target, detail::reduction_string(reduction, "huber_loss"), delta);
  });
}
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const Tensor& weight,
                                        const Tensor& pos_weight, Reduction::Reduction reduction) {
  return detail::as_op("binary_cross_entropy_with_logits", [&] {
    return nn::functional::binary_cross_entropy_with_logits(
        input, target, weight, detail::reduction_string(reduction, "binary_cross_entropy_with_logits"), pos_weight);
  });
}
Tensor cross_entropy_loss(const Tensor& input, const Tensor& target, const Tensor& weight,
                          Reduction::Reduction reduction, int64_t ignore_index, double label_smoothing) {
  return detail::as_op("cross_entropy_loss", [&] {
    return nn::functional::cross_entropy(input, target, weight, ignore_index,
                                         detail::reduction_string(reduction, "cross_entropy_loss"), label_smoothing);
  });
}
Tensor log_sigmoid(const Tensor& input) {
  return detail::as_op("log_sigmoid", [&] { return nn::functional::logsigmoid(input); });
}
Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx, bool scale_grad_by_freq,
                 bool sparse) {
  return detail::as_op("embedding", [&] {
    return nn::functional::embedding(indices, weight,
                                     padding_idx < 0 ? std::nullopt : std::optional<int64_t>(padding_idx),
                                     std::nullopt, 2.0, scale_grad_by_freq, sparse);
  });
}
Tensor batch_norm(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                  const Tensor& running_var, bool training, double momentum, double eps, bool /*cudnn_enabled*/) {
  return detail::as_op("batch_norm", [&] {
    return nn::functional::batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps);
  });
}
Tensor frobenius_norm(const Tensor& input) {
  detail::check_defined(input, "frobenius_norm", "self");
  return detail::as_op("frobenius_norm", [&] { return wick::norm(input, 2); });
}
Tensor frobenius_norm(const Tensor& input, IntArrayRef dim, bool keepdim) {
  detail::check_defined(input, "frobenius_norm", "self");
  return detail::as_op("frobenius_norm", [&] { return wick::norm(input, 2, dim, keepdim); });
}

namespace {
// at::upsample_*2d: F::interpolate to output_size (two values) of a 4-D input, named as op.
Tensor upsample2d(const Tensor& input, IntArrayRef output_size, const char* mode, std::optional<bool> align_corners,
                  const char* op) {
  detail::check_defined(input, op, "self");
  WICK_CHECK(output_size.size() == 2, ValueError, op, "It is expected output_size equals to 2, but got size ",
             output_size.size());
  WICK_CHECK(input.dim() == 4, ValueError, op, "Non-empty 4D data tensor expected but got a tensor with sizes ",
             input.sizes());
  return detail::as_op(op, [&] { return nn::functional::interpolate(input, output_size, {}, mode, align_corners); });
}
}  // namespace

Tensor upsample_nearest2d(const Tensor& input, IntArrayRef output_size, std::optional<double>,
                          std::optional<double>) {
  return upsample2d(input, output_size, "nearest", std::nullopt, "upsample_nearest2d");
}
Tensor upsample_bilinear2d(const Tensor& input, IntArrayRef output_size, bool align_corners, std::optional<double>,
                           std::optional<double>) {
  return upsample2d(input, output_size, "bilinear", align_corners, "upsample_bilinear2d");
}

}  // namespace wick
