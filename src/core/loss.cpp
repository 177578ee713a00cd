// The fused losses (core/loss.h): argument checks as PyTorch's, then the device's nll_loss
// entries or the pointwise family's loss ops; with grad, each op's result is computed once and
// then recorded (autograd/hooks.h).
#include "core/loss.h"

#include <cstdlib>

#include "autograd/hooks.h"
#include "core/backend_settings.h"
#include "core/tensor_iter.h"
#include "core/tensor_ops.h"
#include "wick/ops.h"

namespace wick::detail {

LossReduction loss_reduction(const std::string& reduction, const char* op) {
  if (reduction == "mean") return LossReduction::Mean;
  if (reduction == "sum") return LossReduction::Sum;
  WICK_CHECK(reduction == "none", ValueError, op, reduction, " is not a valid value for reduction");
  return LossReduction::None;
}

Tensor loss_pointwise(PointwiseOp op, std::initializer_list<Tensor> inputs, const char* name) {
  const Dtype compute = result_type(inputs);
  WICK_CHECK(is_floating_point(compute), TypeError, name, "\"", name, "\" not implemented for '", compute,
             "'");
  IterConfig cfg;
  cfg.op = name;
  cfg.compute_dtype = compute;
  auto it = TensorIter::build({}, inputs, cfg);
  kernel<&KernelTable::pointwise>(it.device(), name)(op, it);
  it.finish();
  return it.result();
}

Tensor threshold_backward(const Tensor& grad, const Tensor& result) {
  IterConfig cfg;
  cfg.op = "threshold_backward";
  cfg.compute_dtype = grad.dtype();
  auto it = TensorIter::build({}, {grad, result}, cfg);
  kernel<&KernelTable::pointwise>(it.device(), "threshold_backward")(PointwiseOp::ThresholdBackward, it);
  it.finish();
  return it.result();
}

namespace {

constexpr const char* kNll = "nll_loss";

// [N, C, S] of an nll_loss input: a 1-D input is one sample, dims past the class dim flatten.
struct NllShape {
  int64_t n, c, s;
};

NllShape nll_shape(IntArrayRef sizes) {
  if (sizes.size() == 1) return {1, sizes[0], 1};
  const int64_t s = checked_numel(IntArrayRef(sizes.data() + 2, sizes.size() - 2), "nll_loss");
  return {sizes[0], sizes[1], s};
}

void check_nll(const Tensor& input, const Tensor& target, const Tensor& weight) {
  check_defined(input, kNll, "input");
  check_defined(target, kNll, "target");
  WICK_CHECK(input.dim() >= 1, ValueError, kNll, "Expected 1 or more dimensions (got 0)");
  // PyTorch's nll_loss takes int64 and uint8 class indices (both go to the kernels as int64);
  // int32 targets raise "expected scalar type Long but found Int".
  WICK_CHECK(target.dtype() == kInt64 || target.dtype() == kUInt8, TypeError, kNll,
             "expected scalar type Long but found ", target.dtype());
  WICK_CHECK(is_floating_point(input.dtype()), TypeError, kNll, "\"", kNll, "\" not implemented for '",
             input.dtype(), "'");
  check_same_device(target, input.device(), kNll, "target");
  if (input.dim() == 1) {
    WICK_CHECK(target.dim() <= 1, ValueError, kNll,
               "0D or 1D target tensor expected, multi-target not supported");
    WICK_CHECK(target.dim() == 0, ValueError, kNll, "size mismatch (got input: ", input.sizes(),
               ", target: ", target.sizes(), ")");
  } else {
    const int64_t tn = target.dim() == 0 ? 1 : target.size(0);
    WICK_CHECK(input.size(0) == tn, ValueError, kNll, "Expected input batch_size (", input.size(0),
               ") to match target batch_size (", tn, ").");
    if (input.dim() == 2) {
      WICK_CHECK(target.dim() == 1, ValueError, kNll,
                 "0D or 1D target tensor expected, multi-target not supported");
    } else {
      DimVector want{input.size(0)};
      for (int64_t d = 2; d < input.dim(); ++d) want.push_back(input.size(d));
      WICK_CHECK(target.sizes().equals(IntArrayRef(want)), ValueError, kNll, "Expected target size ",
                 IntArrayRef(want), ", got ", target.sizes());
    }
  }
  if (weight.defined()) {
    const int64_t c = input.dim() == 1 ? input.size(0) : input.size(1);
    check_same_device(weight, input.device(), kNll, "weight");
    WICK_CHECK(weight.dim() == 1 && weight.size(0) == c, ValueError, kNll,
               "weight tensor should be defined either for all ", c,
               " classes or no classes but got weight tensor of shape: ", weight.sizes());
    WICK_CHECK(is_floating_point(weight.dtype()), TypeError, kNll, "expected scalar type ", input.dtype(),
               " but found ", weight.dtype(), " (weight)");
  }
}

Tensor target_for_kernel(const Tensor& target, const NllShape& sh) {
  return target.to(kInt64).contiguous().view({sh.n, sh.s});
}

Tensor weight_for_kernel(const Tensor& weight, Dtype dtype) {
  return weight.defined() ? weight.to(dtype).contiguous() : Tensor();
}

}  // namespace

NllResult nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                   LossReduction reduction, bool logits) {
  check_nll(input, target, weight);
  const bool grad = !logits && needs_grad(input);
  NllResult r = forward_once(grad, [&] {
    const NllShape sh = nll_shape(input.sizes());
    Tensor in = input.contiguous().view({sh.n, sh.c, sh.s});
    Tensor out = reduction == LossReduction::None ? empty(target.sizes(), input.options())
                                                  : empty({}, input.options());
    Tensor total = empty({}, input.options());
    kernel<&KernelTable::nll_loss_forward>(input.device(), kNll)(
        out, total, in, target_for_kernel(target, sh), weight_for_kernel(weight, input.dtype()), ignore_index,
        reduction, logits);
    return NllResult{out, total};
  });
  if (grad) [[unlikely]] {
    auto [loss, total] =
        autograd::record_nll_loss(input, target, weight, ignore_index, reduction, r.loss, r.total_weight);
    return {loss, total};
  }
  return r;
}

bool log_softmax_nll_loss_applies(const Tensor& input) {
  static const bool enabled = [] {
    const char* v = std::getenv("WICK_CE_FUSED");
    return !(v && std::string(v) == "0");
  }();
  constexpr int64_t kMaxClasses = 1024, kMaxElements = 65536;
  if (!enabled || !input.defined() || !input.is_cuda() || input.dim() != 2 || !is_floating_point(input.dtype()))
    return false;
  const int64_t n = input.size(0), c = input.size(1);
  return n >= 1 && c >= 1 && c <= kMaxClasses && n <= kMaxElements / c;
}

LogSoftmaxNllResult log_softmax_nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight,
                                         int64_t ignore_index, LossReduction reduction) {
  check_nll(input, target, weight);
  WICK_CHECK(input.dim() == 2, ValueError, kNll, "log_softmax_nll_loss takes a 2-D input, got ", input.dim(),
             "-D");
  auto entry = kernel<&KernelTable::log_softmax_nll_loss_forward>(input.device(), kNll);
  const NllShape sh = nll_shape(input.sizes());
  Tensor in = input.contiguous();
  Tensor logp = empty(input.sizes(), input.options());
  Tensor out =
      reduction == LossReduction::None ? empty(target.sizes(), input.options()) : empty({}, input.options());
  Tensor total = empty({}, input.options());
  entry(logp, out, total, in, target_for_kernel(target, sh), weight_for_kernel(weight, input.dtype()),
        ignore_index, reduction);
  return {logp, out, total};
}

bool cross_entropy_rows_applies(const Tensor& input, const Tensor& target, const Tensor& weight,
                                double label_smoothing, bool under_autocast) {
  if (label_smoothing != 0 || !input.defined() || !target.defined() || input.dim() != 2) return false;
  if (input.dtype() != kBFloat16 && input.dtype() != kFloat16) return false;
  if (input.size(1) < 1 || target.dtype() != kInt64 || target.dim() != 1 || target.size(0) != input.size(0) ||
      target.device() != input.device())
    return false;
  if (weight.defined() &&
      (weight.dim() != 1 || weight.size(0) != input.size(1) || weight.device() != input.device() ||
       weight.requires_grad() || (under_autocast ? !weight.is_floating_point() : weight.dtype() != input.dtype())))
    return false;
  return !log_softmax_nll_loss_applies(input);
}

CrossEntropyRowsResult cross_entropy_rows(const Tensor& input, const Tensor& target, const Tensor& weight,
                                          int64_t ignore_index, LossReduction reduction, Dtype out_dtype,
                                          bool write_grad) {
  constexpr const char* kOp = "cross_entropy";
  Tensor x = input.contiguous(), t = target.contiguous();
  const int64_t n = x.size(0), c = x.size(1);
  const TensorOptions f32 = x.options().dtype(kFloat32);
  Tensor lse = empty({n}, f32), nll = empty({n}, f32);
  // The weights first: the gradient written with the rows needs them (and the mean's total).
  Tensor valid = t != ignore_index;
  Tensor w = weight.defined()
                 ? weight.to(kFloat32).index_select(0, wick::where(valid, t, 0).clamp(0, c - 1)) * valid
                 : valid.to(kFloat32);
  Tensor total = w.sum();
  Tensor grad, coef;
  // On CUDA behind WICK_NEW_CUDA_KERNELS until the kernel has passed its tests on a GPU
  // (docs/design.md, "Kernels not yet run on a GPU").
  if (write_grad && reduction != LossReduction::None && (!x.is_cuda() || new_cuda_kernels())) {
    coef = (reduction == LossReduction::Mean ? w / total : w).contiguous();
    grad = empty(x.sizes(), x.options());
  }
  kernel<&KernelTable::cross_entropy_rows>(x.device(), kOp)(lse, nll, x, t, ignore_index, grad, coef);
  Tensor per_row = nll * w;
  Tensor loss = reduction == LossReduction::None ? per_row
                : reduction == LossReduction::Sum ? per_row.sum()
                                                  : per_row.sum() / total;
  if (loss.dtype() != out_dtype) loss = loss.to(out_dtype);
  return {loss, lse, w, total, t, grad, coef};
}

Tensor cross_entropy_rows_backward(const Tensor& grad, const Tensor& input, const Tensor& lse, const Tensor& target,
                                   const Tensor& weights, const Tensor& total_weight, int64_t ignore_index,
                                   LossReduction reduction) {
  Tensor g = grad.to(kFloat32);
  Tensor coef = (weights * (reduction == LossReduction::Mean ? g / total_weight : g)).contiguous();
  Tensor x = input.contiguous();
  Tensor gi = empty(x.sizes(), x.options());
  kernel<&KernelTable::cross_entropy_rows_backward>(x.device(), "cross_entropy_backward")(gi, coef, Tensor(), x, lse,
                                                                                         target, ignore_index);
  return gi;
}

Tensor cross_entropy_rows_backward_into(const Tensor& precomputed, const Tensor& coef, const Tensor& grad,
                                        const Tensor& input, const Tensor& lse, const Tensor& target,
                                        int64_t ignore_index) {
  Tensor scale = grad.to(kFloat32).contiguous();
  kernel<&KernelTable::cross_entropy_rows_backward>(input.device(), "cross_entropy_backward")(
      precomputed, coef, scale, input.contiguous(), lse, target, ignore_index);
  return precomputed;
}

Tensor log_softmax_nll_loss_backward(const Tensor& grad, const Tensor& logp, const Tensor& target,
                                     const Tensor& weight, const Tensor& total_weight, int64_t ignore_index,
                                     LossReduction reduction) {
  Tensor gi = empty(logp.sizes(), logp.options());
  // target and weight as nll_loss_backward hands them (no copy when they already are).
  Tensor t = target.dtype() == kInt64 && target.is_contiguous() ? target : target.to(kInt64).contiguous();
  kernel<&KernelTable::log_softmax_nll_loss_backward>(logp.device(), "cross_entropy_backward")(
      gi, grad, logp.contiguous(), t, weight_for_kernel(weight, logp.dtype()), total_weight, ignore_index,
      reduction);
  return gi;
}

Tensor nll_loss_backward(const Tensor& grad, IntArrayRef input_sizes, const Tensor& target,
                         const Tensor& weight, const Tensor& total_weight, int64_t ignore_index,
                         LossReduction reduction) {
  const NllShape sh = nll_shape(input_sizes);
  Tensor gi = empty(input_sizes, grad.options());
  kernel<&KernelTable::nll_loss_backward>(grad.device(), "nll_loss_backward")(
      gi.view({sh.n, sh.c, sh.s}), grad.contiguous(), target_for_kernel(target, sh),
      weight_for_kernel(weight, grad.dtype()), total_weight, ignore_index, reduction);
  return gi;
}

namespace {

Tensor reduce_loss(const Tensor& loss, LossReduction reduction) {
  if (reduction == LossReduction::Mean) return loss.mean();
  if (reduction == LossReduction::Sum) return loss.sum();
  return loss;
}

Tensor bce_with_logits_impl(const Tensor& input, const Tensor& target, const Tensor& weight,
                            const Tensor& pos_weight, LossReduction reduction);

}  // namespace

Tensor mse_loss(const Tensor& input, const Tensor& target, LossReduction reduction) {
  const bool grad = needs_grad(input, target);
  Tensor out = forward_once(grad, [&] {
    return reduce_loss(loss_pointwise(PointwiseOp::MseLoss, {input, target}, "mse_loss"), reduction);
  });
  if (grad) [[unlikely]] autograd::record_mse_loss(input, target, out, reduction);
  return out;
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const Tensor& weight,
                                        const Tensor& pos_weight, LossReduction reduction) {
  const bool grad = needs_grad(input, target);
  Tensor out =
      forward_once(grad, [&] { return bce_with_logits_impl(input, target, weight, pos_weight, reduction); });
  if (grad) [[unlikely]]
    autograd::record_binary_cross_entropy_with_logits(input, target, weight, pos_weight, out, reduction);
  return out;
}

namespace {

Tensor bce_with_logits_impl(const Tensor& input, const Tensor& target, const Tensor& weight,
                            const Tensor& pos_weight, LossReduction reduction) {
  const char* name = "binary_cross_entropy_with_logits";
  Tensor loss = pos_weight.defined()
                    ? loss_pointwise(PointwiseOp::BceLogitsPosWeight, {input, target, pos_weight}, name)
                    : loss_pointwise(PointwiseOp::BceLogits, {input, target}, name);
  // PyTorch computes (1 - target) * input - log_sigmoid(input) in place in (1 - target): the
  // loss has a floating target's dtype (a float32 target with float64 logits gives float32).
  auto as_target = [&](const Tensor& l) {
    return is_floating_point(target.dtype()) && l.dtype() != target.dtype() ? l.to(target.dtype()) : l;
  };
  loss = as_target(loss);
  if (weight.defined()) loss = as_target(loss * weight);
  return reduce_loss(loss, reduction);
}

}  // namespace

}  // namespace wick::detail
