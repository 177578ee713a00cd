// The loss functions of nn::functional, written with differentiable ops.
#include <cmath>

#include "wick/nn/functional.h"
#include "wick/ops.h"

namespace wick::nn::functional {

namespace {

Tensor reduce(const Tensor& loss, const std::string& reduction, const char* op) {
  if (reduction == "mean") return loss.mean();
  if (reduction == "sum") return loss.sum();
  WICK_CHECK(reduction == "none", ValueError, op, reduction, " is not a valid value for reduction");
  return loss;
}

void check_same_sizes(const Tensor& input, const Tensor& target, const char* op) {
  WICK_CHECK(input.sizes().equals(target.sizes()), ValueError, op, "Using a target size (", target.sizes(),
             ") that is different to the input size (", input.sizes(), ") is not supported.");
}

// The class weights shaped to broadcast against [N, C, d...] (class dim 1) or [C].
Tensor class_view(const Tensor& w, int64_t input_dim) {
  if (input_dim == 1) return w;
  DimVector shape(size_t(input_dim), 1);
  shape[1] = w.size(0);
  return w.view(shape);
}

}  // namespace

Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                const std::string& reduction) {
  WICK_CHECK(input.dim() >= 1, ValueError, "nll_loss", "input must have at least 1 dim");
  WICK_CHECK(target.dtype() == kInt64 || target.dtype() == kInt32, TypeError, "nll_loss",
             "expected scalar type Long but found ", target.dtype());
  const bool unbatched = input.dim() == 1;
  Tensor in = unbatched ? input.unsqueeze(0) : input;
  Tensor tg = unbatched ? target.reshape({1}) : target;
  WICK_CHECK(tg.dim() == in.dim() - 1 && tg.size(0) == in.size(0), ValueError, "nll_loss",
             "Expected input batch_size (", in.size(0), ") to match target batch_size (", tg.size(0), ").");
  const int64_t c = in.size(1);
  if (weight.defined())
    WICK_CHECK(weight.dim() == 1 && weight.size(0) == c, ValueError, "nll_loss",
               "weight tensor should be defined either for all ", c,
               " classes or no classes but got weight tensor of shape: ", weight.sizes());
  Tensor tg64 = tg.to(kInt64);
  Tensor valid = tg64 != ignore_index;
  Tensor safe = wick::where(valid, tg64, wick::zeros_like(tg64));
  Tensor picked = wick::gather(in, 1, safe.unsqueeze(1)).squeeze(1);
  Tensor w = weight.defined()
                 ? wick::index_select(weight.to(in.dtype()), 0, safe.reshape({-1})).view(safe.sizes())
                 : wick::ones_like(picked);
  w = w * valid.to(w.dtype());
  Tensor loss = -picked * w;
  if (reduction == "mean") return loss.sum() / w.sum();
  if (reduction == "none" && unbatched) return reduce(loss, reduction, "nll_loss").squeeze(0);
  return reduce(loss, reduction, "nll_loss");
}

Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                     const std::string& reduction, double label_smoothing) {
  WICK_CHECK(label_smoothing >= 0 && label_smoothing <= 1, ValueError, "cross_entropy",
             "label_smoothing must be between 0.0 and 1.0. Got: ", label_smoothing);
  const int64_t class_dim = input.dim() == 1 ? 0 : 1;
  const int64_t c = input.size(class_dim);
  Tensor logp = wick::log_softmax(input, class_dim);
  Tensor w = weight.defined() ? weight.to(logp.dtype()) : Tensor();

  if (target.is_floating_point()) {  // class probabilities
    check_same_sizes(input, target, "cross_entropy");
    Tensor t = label_smoothing > 0 ? target * (1 - label_smoothing) + label_smoothing / double(c) : target;
    Tensor prod = logp * t;
    if (w.defined()) prod = prod * class_view(w, input.dim());
    Tensor loss = -prod.sum({class_dim});
    if (reduction == "mean") return input.dim() == 1 ? loss : loss.sum() / double(input.numel() / c);
    return reduce(loss, reduction, "cross_entropy");
  }

  Tensor nll = nll_loss(logp, target, w, ignore_index, reduction);
  if (label_smoothing == 0) return nll;
  // PyTorch's smoothing term: -sum_c w_c log p_c per element, zero where ignored, normalized
  // like the NLL term under "mean".
  Tensor smooth =
      w.defined() ? -(logp * class_view(w, input.dim())).sum({class_dim}) : -logp.sum({class_dim});
  Tensor valid = (target != ignore_index);
  smooth = smooth * valid.to(smooth.dtype());
  Tensor ret;
  if (reduction == "mean") {
    Tensor tg64 = target.to(kInt64);
    Tensor denom =
        w.defined()
            ? (wick::index_select(w, 0, wick::where(valid, tg64, wick::zeros_like(tg64)).reshape({-1})) *
               valid.reshape({-1}).to(w.dtype()))
                  .sum()
            : valid.to(smooth.dtype()).sum();
    ret = smooth.sum() / denom;
  } else {
    ret = reduce(smooth, reduction, "cross_entropy");
  }
  return nll * (1 - label_smoothing) + ret * (label_smoothing / double(c));
}

Tensor mse_loss(const Tensor& input, const Tensor& target, const std::string& reduction) {
  check_same_sizes(input, target, "mse_loss");
  Tensor d = input - target;
  return reduce(d * d, reduction, "mse_loss");
}

Tensor l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction) {
  check_same_sizes(input, target, "l1_loss");
  return reduce((input - target).abs(), reduction, "l1_loss");
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const Tensor& weight,
                                        const std::string& reduction, const Tensor& pos_weight) {
  check_same_sizes(input, target, "binary_cross_entropy_with_logits");
  // Stable form: log(1 + e^-|x|) + max(-x, 0) = -log(sigmoid(x)).
  Tensor log_sig_neg = wick::log(wick::exp(-input.abs()) + 1.0) + wick::relu(-input);
  Tensor loss;
  if (pos_weight.defined()) {
    Tensor lw = (pos_weight - 1.0) * target + 1.0;
    loss = (1.0 - target) * input + lw * log_sig_neg;
  } else {
    loss = (1.0 - target) * input + log_sig_neg;
  }
  if (weight.defined()) loss = loss * weight;
  return reduce(loss, reduction, "binary_cross_entropy_with_logits");
}

}  // namespace wick::nn::functional
