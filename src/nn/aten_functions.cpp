// ATen's forms of the losses (LibTorch's reduction enum and argument order) and
// constant_pad_nd, over the nn::functional ones (include/wick/nn/functional.h).
#include "core/as_op.h"
#include "core/checks.h"
#include "nn/reduction_string.h"
#include "wick/nn/functional.h"

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
