// ATen's forms of the losses (LibTorch's reduction enum and argument order) and
// constant_pad_nd, over the nn::functional ones (include/wick/nn/functional.h).
#include "core/as_op.h"
#include "wick/nn/functional.h"

namespace wick {

namespace {
// The string of Python's API for ATen's reduction value, or ValueError "[op] ..." as Python's
// _Reduction words it.
std::string reduction_string(Reduction::Reduction r, const char* op) {
  switch (r) {
    case Reduction::None: return "none";
    case Reduction::Mean: return "mean";
    case Reduction::Sum: return "sum";
  }
  detail::raise<ValueError>(op, int64_t(r), " is not a valid value for reduction");
}
}  // namespace

Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight, Reduction::Reduction reduction,
                int64_t ignore_index) {
  return nn::functional::nll_loss(input, target, weight, ignore_index, reduction_string(reduction, "nll_loss"));
}
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction::Reduction reduction) {
  return nn::functional::mse_loss(input, target, reduction_string(reduction, "mse_loss"));
}
Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction::Reduction reduction) {
  return nn::functional::l1_loss(input, target, reduction_string(reduction, "l1_loss"));
}
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, Reduction::Reduction reduction, double beta) {
  return nn::functional::smooth_l1_loss(input, target, reduction_string(reduction, "smooth_l1_loss"), beta);
}
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight,
                            Reduction::Reduction reduction) {
  return nn::functional::binary_cross_entropy(input, target, weight,
                                              reduction_string(reduction, "binary_cross_entropy"));
}

Tensor constant_pad_nd(const Tensor& input, IntArrayRef pad, const Scalar& value) {
  return detail::as_op("constant_pad_nd", [&] {
    return nn::functional::pad(input, pad.vec(), "constant", value.to<double>());
  });
}

}  // namespace wick
