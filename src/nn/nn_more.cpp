// normalize, cosine_similarity, pairwise_distance, kl_div, huber_loss, pixel_shuffle,
// pixel_unshuffle, alpha_dropout and unflatten, the modules built on them (CosineSimilarity,
// PairwiseDistance, HuberLoss, KLDivLoss, the 2-D padding layers, PixelShuffle,
// PixelUnshuffle, Unflatten, Softmax2d, AlphaDropout) and nn::utils::parameters_to_vector /
// vector_to_parameters. Everything is composed of other ops and shows their nodes, as PyTorch's
// composite functions do, except the three PyTorch records as one node: huber_loss
// (HuberLossBackward0), pixel_shuffle (PixelShuffleBackward0) and pixel_unshuffle
// (PixelUnshuffleBackward0), computed once and recorded with formulas made of ops (so that they
// record under create_graph).
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "autograd/function.h"
#include "autograd/hooks.h"
#include "core/as_op.h"
#include "core/autocast.h"
#include "core/checks.h"
#include "core/loss.h"
#include "nn/repr.h"
#include "wick/autograd.h"
#include "wick/nn/activation.h"
#include "wick/nn/distance.h"
#include "wick/nn/dropout.h"
#include "wick/nn/functional.h"
#include "wick/nn/loss.h"
#include "wick/nn/padding.h"
#include "wick/nn/pixelshuffle.h"
#include "wick/nn/utils/convert_parameters.h"
#include "wick/ops.h"
#include "wick/random.h"

namespace wick {

Tensor unflatten(const Tensor& input, int64_t dim, IntArrayRef sizes) {
  constexpr const char* op = "unflatten";
  wick::detail::check_defined(input, op, "self");
  const int64_t d = wick::detail::wrap_dim(dim, input.dim(), op);
  WICK_CHECK(!sizes.empty(), ValueError, op, "unflatten: sizes must be non-empty");
  const int64_t n = input.size(d);
  // One size may be -1 (inferred), as in a view's shape; PyTorch's messages: a product that
  // does not match is worded for unflatten, the shape's other faults keep view's wording.
  const auto unexpected = [&](const auto&... what) {
    wick::detail::raise<ValueError>(op, "unflatten got an unexpected error:\n", what...);
  };
  int64_t known = 1, inferred = -1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1) {
      if (inferred >= 0) unexpected("only one dimension can be inferred");
      inferred = int64_t(i);
    } else if (sizes[i] < 0) {
      unexpected("invalid shape dimension ", sizes[i]);
    } else {
      known *= sizes[i];
    }
  }
  if (inferred >= 0 && known == 0)
    unexpected("cannot reshape tensor of 0 elements into shape ", sizes,
               " because the unspecified dimension size -1 can be any value and is ambiguous");
  const bool ok = inferred < 0 ? known == n : n % known == 0;
  WICK_CHECK(ok, ValueError, op, "unflatten: Provided sizes ", sizes,
             " don't multiply up to the size of dim ", d, " (", n, ") in the input tensor");
  DimVector shape;
  for (int64_t i = 0; i < d; ++i) shape.push_back(input.size(i));
  for (size_t i = 0; i < sizes.size(); ++i) shape.push_back(int64_t(i) == inferred ? n / known : sizes[i]);
  for (int64_t i = d + 1; i < input.dim(); ++i) shape.push_back(input.size(i));
  return wick::detail::as_op(op, [&] { return input.view(shape); });
}

}  // namespace wick

namespace wick::nn {

namespace functional {

using wick::detail::as_op;
namespace autocast = wick::detail::autocast;

Tensor normalize(const Tensor& x, double p, int64_t dim, double eps) {
  constexpr const char* op = "normalize";
  wick::detail::check_defined(x, op, "input");
  return as_op(op, [&] { return x / x.norm(p, {dim}, true).clamp_min(eps).expand_as(x); });
}

Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, int64_t dim, double eps) {
  constexpr const char* op = "cosine_similarity";
  wick::detail::check_defined(x1, op, "x1");
  wick::detail::check_defined(x2, op, "x2");
  // PyTorch's autocast lists: float32 on CUDA; on the CPU its ops follow their own policies
  if (autocast::active()) [[unlikely]]
    return autocast::run(
        autocast::Policy::Fp32, autocast::Policy::None, op,
        [&](const Tensor& a, const Tensor& b) { return cosine_similarity(a, b, dim, eps); }, x1, x2);
  const Dtype common = wick::detail::result_type({x1, x2});
  WICK_CHECK(is_floating_point(common), TypeError, op,
             "expected common dtype to be floating point, yet common dtype is ", common);
  return as_op(op, [&] {
    // integer (and bool) inputs are cast to the common dtype; floating ones promote in the ops
    Tensor a = x1.is_floating_point() ? x1 : x1.to(common);
    Tensor b = x2.is_floating_point() ? x2 : x2.to(common);
    if (!a.sizes().equals(b.sizes())) {
      const DimVector shape = wick::detail::broadcast_shapes(a.sizes(), b.sizes(), op);
      a = a.expand(shape);
      b = b.expand(shape);
    }
    // Each input divided by its norm first (|result| <= 1). As PyTorch, the norms are clamped
    // in place without recording: the gradient flows through them as if unclamped.
    Tensor na = a.norm(2, {dim}, true).clone();
    Tensor nb = b.norm(2, {dim}, true).clone();
    {
      NoGradGuard off;
      na.clamp_min_(eps);
      nb.clamp_min_(eps);
    }
    return ((a / na) * (b / nb)).sum({dim});
  });
}

Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, double p, double eps, bool keepdim) {
  constexpr const char* op = "pairwise_distance";
  wick::detail::check_defined(x1, op, "x1");
  wick::detail::check_defined(x2, op, "x2");
  const int64_t innermost = std::max(x1.dim(), x2.dim()) - 1;
  return as_op(op, [&] { return wick::norm(x1 - x2 + eps, p, {innermost}, keepdim); });
}

Tensor kl_div(const Tensor& input, const Tensor& target, const std::string& reduction, bool log_target) {
  constexpr const char* op = "kl_div";
  wick::detail::check_defined(input, op, "input");
  wick::detail::check_defined(target, op, "target");
  if (autocast::active()) [[unlikely]]
    return autocast::run(
        autocast::Policy::Fp32, autocast::Policy::Fp32, op,
        [&](const Tensor& i, const Tensor& t) { return kl_div(i, t, reduction, log_target); }, input, target);
  WICK_CHECK(reduction == "mean" || reduction == "batchmean" || reduction == "sum" || reduction == "none",
             ValueError, op, reduction, " is not a valid value for reduction");
  WICK_CHECK(input.is_floating_point() && target.is_floating_point(), TypeError, op,
             "kl_div: Integral inputs not supported.");
  return as_op(op, [&] {
    Tensor pointwise;
    if (log_target) {
      pointwise = target.exp() * (target - input);
    } else {
      // xlogy(target, target): 0 where target is 0 (its gradient there 0, not NaN)
      Tensor zero = target == 0;
      Tensor safe = wick::where(zero, 1.0, target);
      pointwise = wick::where(zero, 0.0, target * safe.log()) - target * input;
    }
    if (reduction == "none") return pointwise;
    if (reduction == "mean") return pointwise.mean();
    if (reduction == "sum" || input.dim() == 0) return pointwise.sum();
    // batchmean: Python divides by input.size(0), a number it passes as a tensor (DivBackward0)
    Tensor total = pointwise.sum();
    return total / wick::full({}, double(input.size(0)), total.options());
  });
}

Tensor huber_loss(const Tensor& input, const Tensor& target, const std::string& reduction, double delta) {
  constexpr const char* op = "huber_loss";
  wick::detail::check_defined(input, op, "self");
  wick::detail::check_defined(target, op, "target");
  if (autocast::active()) [[unlikely]]
    return autocast::run(
        autocast::Policy::Fp32, autocast::Policy::Fp32, op,
        [&](const Tensor& i, const Tensor& t) { return huber_loss(i, t, reduction, delta); }, input, target);
  // PyTorch broadcasts input and target (each expanded: ExpandBackward0 sums the gradient back).
  Tensor in = input, tg = target;
  if (!input.sizes().equals(target.sizes())) {
    const DimVector shape = wick::detail::broadcast_shapes(input.sizes(), target.sizes(), op);
    in = input.expand(shape);
    tg = target.expand(shape);
  }
  const wick::detail::LossReduction r = wick::detail::loss_reduction(reduction, op);
  WICK_CHECK(delta > 0, ValueError, op, "huber_loss does not support non-positive values for delta.");
  const Dtype dtype = wick::detail::result_type({in, tg});
  WICK_CHECK(is_floating_point(dtype), TypeError, op, "\"huber_loss\" not implemented for '", dtype, "'");
  const bool grad = wick::detail::needs_grad(in, tg);
  Tensor out = wick::detail::forward_once(grad, [&] {
    return as_op(op, [&] {
      Tensor z = (in - tg).abs();
      Tensor loss = wick::where(z < delta, z * z * 0.5, (z - 0.5 * delta) * delta);
      if (r == wick::detail::LossReduction::Mean) return loss.mean();
      if (r == wick::detail::LossReduction::Sum) return loss.sum();
      return loss;
    });
  });
  if (grad) [[unlikely]] {
    const double scale = r == wick::detail::LossReduction::Mean ? 1.0 / double(in.numel()) : 1.0;
    autograd::record(
        "HuberLossBackward0", {in, tg}, out, {in, tg},
        [delta, scale](autograd::BackwardContext& c) -> autograd::variable_list {
          const Tensor x = c.saved(0), y = c.saved(1);
          // d loss / d input: the difference clamped to [-delta, delta]
          Tensor g =
              wick::clamp(x - y, std::optional<Scalar>(-delta), std::optional<Scalar>(delta)) * c.grad();
          if (scale != 1.0) g = g * scale;
          return {c.needs(0) ? g.to(x.dtype()) : Tensor(), c.needs(1) ? (-g).to(y.dtype()) : Tensor()};
        });
  }
  return out;
}

namespace {

// The shapes of pixel_shuffle (and, read backwards, pixel_unshuffle): x's batch dims, then
// the split [C, r, r, H, W] and the permutation to [C, H, r, W, r].
DimVector batch_dims(const Tensor& x) { return DimVector(x.sizes().begin(), x.sizes().end() - 3); }

Tensor rearranged(const Tensor& x, const DimVector& split, const std::vector<int64_t>& tail_perm,
                  const DimVector& final_shape, const char* op) {
  const int64_t nb = x.dim() - 3;
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < nb; ++i) perm.push_back(i);
  for (int64_t p : tail_perm) perm.push_back(nb + p);
  return as_op(
      op, [&] { return x.reshape(split).permute(perm).clone(MemoryFormat::Contiguous).view(final_shape); });
}

}  // namespace

Tensor pixel_shuffle(const Tensor& x, int64_t upscale_factor) {
  constexpr const char* op = "pixel_shuffle";
  wick::detail::check_defined(x, op, "self");
  WICK_CHECK(x.dim() >= 3, ValueError, op,
             "pixel_shuffle expects input to have at least 3 dimensions, but got input with ", x.dim(),
             " dimension(s)");
  const int64_t r = upscale_factor;
  WICK_CHECK(r > 0, ValueError, op, "pixel_shuffle expects a positive upscale_factor, but got ", r);
  const int64_t c = x.size(-3), h = x.size(-2), w = x.size(-1);
  int64_t rr = 0;  // r * r; a square that wraps divides nothing
  const bool wraps = __builtin_mul_overflow(r, r, &rr);
  WICK_CHECK(!wraps && c % rr == 0, ValueError, op,
             "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
             "upscale_factor, "
             "but input.size(-3)=",
             c, " is not divisible by ", wraps ? std::to_string(r) + "^2" : std::to_string(rr));
  int64_t hr = 0, wr = 0;
  WICK_CHECK(!__builtin_mul_overflow(h, r, &hr) && !__builtin_mul_overflow(w, r, &wr), ValueError, op,
             "pixel_shuffle: the output's height or width, ", h, " or ", w, " times ", r, ", overflows int64");
  DimVector split = batch_dims(x), final_shape = batch_dims(x);
  for (int64_t s : {c / rr, r, r, h, w}) split.push_back(s);
  for (int64_t s : {c / rr, hr, wr}) final_shape.push_back(s);
  const bool grad = wick::detail::needs_grad(x);
  Tensor out = wick::detail::forward_once(grad, [&] {
    return rearranged(x, split, {0, 3, 1, 4, 2}, final_shape, op);
  });
  if (grad) [[unlikely]]
    autograd::record("PixelShuffleBackward0", {x}, out, {},
                     [r](autograd::BackwardContext& ctx) -> autograd::variable_list {
                       return {pixel_unshuffle(ctx.grad(), r)};
                     });
  return out;
}

Tensor pixel_unshuffle(const Tensor& x, int64_t downscale_factor) {
  constexpr const char* op = "pixel_unshuffle";
  wick::detail::check_defined(x, op, "self");
  WICK_CHECK(x.dim() >= 3, ValueError, op,
             "pixel_unshuffle expects input to have at least 3 dimensions, but got input with ", x.dim(),
             " dimension(s)");
  const int64_t r = downscale_factor;
  WICK_CHECK(r > 0, ValueError, op, "pixel_unshuffle expects a positive downscale_factor, but got ", r);
  const int64_t c = x.size(-3), h = x.size(-2), w = x.size(-1);
  WICK_CHECK(h % r == 0, ValueError, op,
             "pixel_unshuffle expects height to be divisible by downscale_factor, but input.size(-2)=", h,
             " is not divisible by ", r);
  WICK_CHECK(w % r == 0, ValueError, op,
             "pixel_unshuffle expects width to be divisible by downscale_factor, but input.size(-1)=", w,
             " is not divisible by ", r);
  int64_t channels = 0;  // c r^2, which must not wrap (r may exceed an empty height and width)
  WICK_CHECK(!__builtin_mul_overflow(r, r, &channels) && !__builtin_mul_overflow(c, channels, &channels), ValueError,
             op, "pixel_unshuffle: the output's channels, ", c, " times the square of ", r, ", overflow int64");
  DimVector split = batch_dims(x), final_shape = batch_dims(x);
  for (int64_t s : {c, h / r, r, w / r, r}) split.push_back(s);
  for (int64_t s : {channels, h / r, w / r}) final_shape.push_back(s);
  const bool grad = wick::detail::needs_grad(x);
  Tensor out = wick::detail::forward_once(grad, [&] {
    return rearranged(x, split, {0, 2, 4, 1, 3}, final_shape, op);
  });
  if (grad) [[unlikely]]
    autograd::record("PixelUnshuffleBackward0", {x}, out, {},
                     [r](autograd::BackwardContext& ctx) -> autograd::variable_list {
                       return {pixel_shuffle(ctx.grad(), r)};
                     });
  return out;
}

Tensor alpha_dropout(const Tensor& x, double p, bool training) {
  constexpr const char* op = "alpha_dropout";
  wick::detail::check_defined(x, op, "input");
  WICK_CHECK(p >= 0 && p <= 1, ValueError, op, "dropout probability has to be between 0 and 1, but got ", p);
  if (p == 0 || !training || x.numel() == 0) return x;
  if (p == 1) return as_op(op, [&] { return x * wick::zeros({}, x.options()); });
  WICK_CHECK(x.is_floating_point(), TypeError, op, "\"alpha_dropout\" not implemented for '", x.dtype(), "'");
  return as_op(op, [&] {
    // PyTorch's noise: keep ~ Bernoulli(1 - p) in x's dtype, then x (a keep) + b with
    // b = (keep - 1) alpha a + alpha a p: kept elements become a x + alpha a p, dropped ones
    // alpha a (p - 1), the saturation value of SELU scaled back to zero mean, unit variance.
    constexpr double alpha = 1.7580993408473766;
    const double a = 1.0 / std::sqrt((alpha * alpha * p + 1) * (1 - p));
    Tensor keep = (wick::rand(x.sizes(), x.options()) >= p).to(x.dtype());
    Tensor b = (keep - 1.0) * (alpha * a) + alpha * a * p;
    return x * (keep * a) + b;
  });
}

}  // namespace functional

namespace F = functional;
using detail::py_bool;
using detail::py_float;
using detail::py_tuple;

// ---- distances and losses

Tensor CosineSimilarityImpl::forward(const Tensor& x1, const Tensor& x2) {
  return F::cosine_similarity(x1, x2, options.dim(), options.eps());
}
Tensor PairwiseDistanceImpl::forward(const Tensor& x1, const Tensor& x2) {
  return F::pairwise_distance(x1, x2, options.p(), options.eps(), options.keepdim());
}
Tensor HuberLossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::huber_loss(input, target, options.reduction(), options.delta());
}
Tensor KLDivLossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::kl_div(input, target, options.reduction(), options.log_target());
}

// ---- padding

std::vector<int64_t> detail::padding4(std::vector<int64_t> values, const char* op) {
  if (values.size() == 1) values.assign(4, values[0]);
  WICK_CHECK(values.size() == 4, ValueError, op,
             "expected 1 or 4 padding values (left, right, top, bottom), got ", values.size());
  return values;
}

ZeroPad2dImpl::ZeroPad2dImpl(const ZeroPad2dOptions& options) : options(options) {
  this->options.padding(detail::padding4(options.padding(), "ZeroPad2d"));
}
Tensor ZeroPad2dImpl::forward(const Tensor& x) { return F::pad(x, options.padding(), "constant", 0.0); }
std::string ZeroPad2dImpl::extra_repr() const { return py_tuple(options.padding()); }

ConstantPad2dImpl::ConstantPad2dImpl(const ConstantPad2dOptions& options) : options(options) {
  this->options.padding(detail::padding4(options.padding(), "ConstantPad2d"));
}
Tensor ConstantPad2dImpl::forward(const Tensor& x) {
  return F::pad(x, options.padding(), "constant", options.value());
}
std::string ConstantPad2dImpl::extra_repr() const {
  return "padding=" + py_tuple(options.padding()) + ", value=" + py_float(options.value());
}

ReflectionPad2dImpl::ReflectionPad2dImpl(const ReflectionPad2dOptions& options) : options(options) {
  this->options.padding(detail::padding4(options.padding(), "ReflectionPad2d"));
}
Tensor ReflectionPad2dImpl::forward(const Tensor& x) { return F::pad(x, options.padding(), "reflect"); }
std::string ReflectionPad2dImpl::extra_repr() const { return py_tuple(options.padding()); }

ReplicationPad2dImpl::ReplicationPad2dImpl(const ReplicationPad2dOptions& options) : options(options) {
  this->options.padding(detail::padding4(options.padding(), "ReplicationPad2d"));
}
Tensor ReplicationPad2dImpl::forward(const Tensor& x) { return F::pad(x, options.padding(), "replicate"); }
std::string ReplicationPad2dImpl::extra_repr() const { return py_tuple(options.padding()); }

// ---- pixel shuffling, Unflatten, Softmax2d, AlphaDropout

Tensor PixelShuffleImpl::forward(const Tensor& x) { return F::pixel_shuffle(x, options.upscale_factor()); }
std::string PixelShuffleImpl::extra_repr() const {
  return "upscale_factor=" + std::to_string(options.upscale_factor());
}
Tensor PixelUnshuffleImpl::forward(const Tensor& x) {
  return F::pixel_unshuffle(x, options.downscale_factor());
}
std::string PixelUnshuffleImpl::extra_repr() const {
  return "downscale_factor=" + std::to_string(options.downscale_factor());
}

Tensor UnflattenImpl::forward(const Tensor& x) { return wick::unflatten(x, options.dim(), options.sizes()); }
std::string UnflattenImpl::extra_repr() const {
  return "dim=" + std::to_string(options.dim()) + ", unflattened_size=" + py_tuple(options.sizes());
}

Tensor Softmax2dImpl::forward(const Tensor& x) {
  wick::detail::check_defined(x, "Softmax2d", "input");
  WICK_CHECK(x.dim() == 3 || x.dim() == 4, ValueError, "Softmax2d",
             "Softmax2d: expected input to be 3D or 4D, got ", x.dim(), "D instead");
  return F::softmax(x, -3);
}

AlphaDropoutImpl::AlphaDropoutImpl(const AlphaDropoutOptions& options) : options(options) {
  WICK_CHECK(options.p() >= 0 && options.p() <= 1, ValueError, "AlphaDropout",
             "dropout probability has to be between 0 and 1, but got ", options.p());
}
Tensor AlphaDropoutImpl::forward(const Tensor& x) { return F::alpha_dropout(x, options.p(), is_training()); }
std::string AlphaDropoutImpl::extra_repr() const {
  return "p=" + py_float(options.p()) + ", inplace=" + py_bool(options.inplace());
}

// ---- nn::utils

namespace utils {

namespace {
// PyTorch's _check_param_device: every parameter on the first one's device.
void check_one_device(const std::vector<Tensor>& parameters, const char* op) {
  for (const Tensor& p : parameters) {
    wick::detail::check_defined(p, op, "parameters");
    WICK_CHECK(p.device() == parameters.front().device(), TypeError, op,
               "Found two parameters on different devices, this is currently not supported.");
  }
}
}  // namespace

Tensor parameters_to_vector(const std::vector<Tensor>& parameters) {
  constexpr const char* op = "parameters_to_vector";
  check_one_device(parameters, op);
  return wick::detail::as_op(op, [&] {
    std::vector<Tensor> flat;
    flat.reserve(parameters.size());
    for (const Tensor& p : parameters) flat.push_back(p.view({-1}));
    return wick::cat(flat);
  });
}

void vector_to_parameters(const Tensor& vec, const std::vector<Tensor>& parameters) {
  constexpr const char* op = "vector_to_parameters";
  wick::detail::check_defined(vec, op, "vec");
  WICK_CHECK(vec.dim() == 1, ValueError, op, "expected a 1-D vec, got one of sizes ", vec.sizes());
  check_one_device(parameters, op);
  int64_t total = 0;
  for (const Tensor& p : parameters) total += p.numel();
  WICK_CHECK(vec.numel() >= total, ValueError, op, "vec holds ", vec.numel(),
             " elements, but the parameters hold ", total);
  NoGradGuard no_grad;
  int64_t at = 0;
  for (const Tensor& p : parameters) {
    const int64_t n = p.numel();
    Tensor target = p.detach();  // the parameter's storage
    wick::detail::as_op(op, [&] { target.copy_(vec.narrow(0, at, n).reshape(p.sizes())); });
    at += n;
  }
}

}  // namespace utils

}  // namespace wick::nn
