// nn::functional: activations, linear, dropout, embedding and the normalizations, written
// with differentiable ops so that autograd records them as it records any op; embedding
// computes its lookup once and records its own node (EmbeddingBackward0), as core's ops do.
#include "wick/nn/functional.h"

#include "autograd/hooks.h"
#include "core/as_op.h"
#include "core/autocast.h"
#include "core/checks.h"
#include "core/tensor_ops.h"
#include "wick/autograd.h"
#include "wick/ops.h"
#include "wick/random.h"

namespace wick::nn::functional {

namespace autocast = wick::detail::autocast;

Tensor relu(const Tensor& x) { return wick::relu(x); }
Tensor gelu(const Tensor& x, const std::string& approximate) { return wick::gelu(x, approximate); }
Tensor silu(const Tensor& x) { return wick::silu(x); }
Tensor sigmoid(const Tensor& x) { return wick::sigmoid(x); }
Tensor tanh(const Tensor& x) { return wick::tanh(x); }
Tensor softmax(const Tensor& x, int64_t dim) { return wick::softmax(x, dim); }
Tensor log_softmax(const Tensor& x, int64_t dim) { return wick::log_softmax(x, dim); }

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  wick::detail::check_defined(x, "linear", "self");
  return wick::linear(x, weight, bias);
}

Tensor dropout(const Tensor& x, double p, bool training) {
  wick::detail::check_defined(x, "dropout", "self");
  WICK_CHECK(p >= 0 && p <= 1, ValueError, "dropout",
             "dropout probability has to be between 0 and 1, but got ", p);
  if (!training || p == 0) return x;
  if (p == 1) return x * 0;
  // PyTorch scales the kept elements in the input's dtype: an integer or bool input raises.
  WICK_CHECK(x.is_floating_point(), TypeError, "dropout", "result type ", get_default_dtype(),
             " can't be cast to the desired output type ", x.dtype());
  // Keep with probability 1 - p; the kept elements are scaled so the expectation is x.
  Tensor keep = (rand_like(x, TensorOptions(x.is_floating_point() ? x.dtype() : get_default_dtype())) >= p)
                    .to(x.dtype());
  return x * (keep * (1.0 / (1.0 - p)));
}

namespace {
Tensor embedding_impl(const Tensor& indices, const Tensor& weight, std::optional<int64_t> padding_idx) {
  wick::detail::check_defined(indices, "embedding", "indices");
  wick::detail::check_defined(weight, "embedding", "weight");
  WICK_CHECK(indices.dtype() == kInt64 || indices.dtype() == kInt32, TypeError, "embedding",
             "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, "
             "Int; but got ",
             indices.dtype(), " instead");
  WICK_CHECK(weight.dim() == 2, ValueError, "embedding", "'weight' must be 2-D");
  const int64_t rows = weight.size(0);
  if (padding_idx) {
    WICK_CHECK(*padding_idx >= -rows && *padding_idx < rows, ValueError, "embedding",
               "Padding_idx must be within num_embeddings");
    if (*padding_idx < 0) *padding_idx += rows;
  }
  DimVector out_sizes(indices.sizes());
  out_sizes.push_back(weight.size(1));
  Tensor flat = indices.reshape({-1});
  const bool grad = wick::detail::needs_grad(weight);
  Tensor out =
      wick::detail::forward_once(grad, [&] { return wick::index_select(weight, 0, flat).view(out_sizes); });
  if (grad) [[unlikely]] autograd::record_embedding(weight, flat, out, padding_idx);
  return out;
}
}  // namespace

Tensor embedding(const Tensor& indices, const Tensor& weight, std::optional<int64_t> padding_idx) {
  return wick::detail::as_op("embedding", [&] { return embedding_impl(indices, weight, padding_idx); });
}

Tensor flatten(const Tensor& x, int64_t start_dim, int64_t end_dim) { return x.flatten(start_dim, end_dim); }

Tensor layer_norm(const Tensor& x, const std::vector<int64_t>& normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps) {
  if (autocast::active()) [[unlikely]]
    return autocast::run(
        autocast::Policy::Fp32, autocast::Policy::None, "layer_norm",
        [&](const Tensor& i, const Tensor& w, const Tensor& b) {
          return layer_norm(i, normalized_shape, w, b, eps);
        },
        x, weight, bias);
  return wick::detail::as_op("layer_norm", [&]() -> Tensor {
    wick::detail::check_defined(x, "layer_norm", "self");
    const int64_t k = int64_t(normalized_shape.size());
    bool ok = k >= 1 && x.dim() >= k;
    for (int64_t i = 0; ok && i < k; ++i) ok = x.size(x.dim() - k + i) == normalized_shape[size_t(i)];
    WICK_CHECK(ok, ValueError, "layer_norm", "Given normalized_shape=", IntArrayRef(normalized_shape),
               ", expected input with shape [*, ", IntArrayRef(normalized_shape), "], but got input of size",
               x.sizes());
    // A float16/bfloat16 x with float32 parameters (PyTorch's mixed type) gives x's type; the
    // parameters must then all be float32.
    const bool low = x.dtype() == kFloat16 || x.dtype() == kBFloat16;
    const bool mixed = low && ((weight.defined() && weight.dtype() == kFloat32) ||
                               (bias.defined() && bias.dtype() == kFloat32));
    if (mixed)
      WICK_CHECK(
          (!weight.defined() || weight.dtype() == kFloat32) && (!bias.defined() || bias.dtype() == kFloat32),
          TypeError, "layer_norm", "mixed dtype (CPU): expect parameter to have scalar type of Float");
    DimVector dims;
    for (int64_t d = x.dim() - k; d < x.dim(); ++d) dims.push_back(d);
    Tensor mean = x.mean(dims, true);
    Tensor xc = x - mean;
    Tensor var = (xc * xc).mean(dims, true);
    Tensor y = xc * wick::rsqrt(var + eps);
    if (weight.defined()) y = y * (mixed ? weight.to(x.dtype()) : weight);
    if (bias.defined()) y = y + (mixed ? bias.to(x.dtype()) : bias);
    return y;
  });
}

Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, bool training, double momentum, double eps) {
  // On no autocast list: the statistics' pieces run in x's type.
  if (autocast::active()) [[unlikely]]
    return autocast::run(
        autocast::Policy::None, autocast::Policy::None, "batch_norm",
        [&](const Tensor& i) {
          return batch_norm(i, running_mean, running_var, weight, bias, training, momentum, eps);
        },
        x);
  return wick::detail::as_op("batch_norm", [&]() -> Tensor {
    wick::detail::check_defined(x, "batch_norm", "self");
    WICK_CHECK(x.dim() >= 2, ValueError, "batch_norm", "expected at least 2D input (got ", x.dim(),
               "D input)");
    WICK_CHECK(is_floating_point(x.dtype()), TypeError, "batch_norm", "\"batch_norm\" not implemented for '",
               x.dtype(), "'");
    const int64_t c = x.size(1);
    // Every per-channel tensor checked before the running statistics are written.
    for (auto [t, what] : {std::pair{&running_mean, "running_mean"}, std::pair{&running_var, "running_var"},
                           std::pair{&weight, "weight"}, std::pair{&bias, "bias"}})
      WICK_CHECK(!t->defined() || t->numel() == c, ValueError, "batch_norm", what, " should contain ", c,
                 " elements not ", t->numel());
    DimVector dims, shape(size_t(x.dim()), 1);
    shape[1] = c;
    for (int64_t d = 0; d < x.dim(); ++d)
      if (d != 1) dims.push_back(d);
    const int64_t n = x.numel() / std::max<int64_t>(c, 1);
    // A float16/bfloat16 x with float32 statistics or parameters (PyTorch's mixed type) gives
    // x's type.
    const bool low = x.dtype() == kFloat16 || x.dtype() == kBFloat16;
    auto as_x = [&](const Tensor& t) {
      return low && t.defined() && t.dtype() != x.dtype() ? t.to(x.dtype()) : t;
    };
    Tensor y;
    if (training) {
      WICK_CHECK(n > 1, ValueError, "batch_norm",
                 "Expected more than 1 value per channel when training, got input size ", x.sizes());
      Tensor mean = x.mean(dims, true);
      Tensor xc = x - mean;
      Tensor var = (xc * xc).mean(dims, true);
      y = xc * wick::rsqrt(var + eps);
      if (running_mean.defined()) {
        NoGradGuard g;
        Tensor rm = running_mean, rv = running_var;
        rm.mul_(1 - momentum).add_(mean.detach().view({c}).to(rm.dtype()), momentum);
        // The running variance is the unbiased one (n / (n - 1)).
        rv.mul_(1 - momentum)
            .add_(var.detach().view({c}).to(rv.dtype()), momentum * double(n) / double(n - 1));
      }
    } else {
      WICK_CHECK(running_mean.defined() && running_var.defined(), ValueError, "batch_norm",
                 "running_mean and running_var must be defined in evaluation mode");
      y = (x - as_x(running_mean).view(shape)) * wick::rsqrt(as_x(running_var).view(shape) + eps);
    }
    if (weight.defined()) y = y * as_x(weight).view(shape);
    if (bias.defined()) y = y + as_x(bias).view(shape);
    return y;
  });
}

}  // namespace wick::nn::functional
