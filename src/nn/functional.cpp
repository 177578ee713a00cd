// nn::functional: activations, linear, dropout, embedding and the normalizations, written
// with differentiable ops so that autograd records them as it records any op; embedding
// computes its lookup once and records its own node (EmbeddingBackward0), as core's ops do, and
// so do layer_norm and rms_norm (NativeLayerNormBackward0, FusedRmsNormBackward0) through the
// fused norm entries of the kernel table.
#include "wick/nn/functional.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "autograd/hooks.h"
#include "core/as_op.h"
#include "core/autocast.h"
#include "core/checks.h"
#include "core/cudnn_batch_norm.h"
#include "core/kernel_table.h"
#include "core/tensor_ops.h"
#include "wick/amp.h"
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
// PyTorch's embedding_renorm_: each row looked up (once, however often) whose norm exceeds
// max_norm is scaled by max_norm / (norm + 1e-7), in place and unrecorded.
void embedding_renorm(const Tensor& weight, const Tensor& flat, double max_norm, double norm_type) {
  NoGradGuard no_grad;
  Tensor idx = flat.to(Device(kCPU), kInt64).contiguous();
  const int64_t rows = weight.size(0);
  const int64_t* p = idx.data_ptr<int64_t>();
  std::vector<int64_t> unique(p, p + idx.numel());
  for (int64_t i : unique)
    WICK_CHECK(i >= -rows && i < rows, IndexError, "embedding", "index out of range in self");
  for (int64_t& i : unique)
    if (i < 0) i += rows;
  std::sort(unique.begin(), unique.end());
  unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
  if (unique.empty()) return;
  Tensor u = wick::from_blob(unique.data(), {int64_t(unique.size())}, TensorOptions(kInt64)).to(weight.device());
  Tensor norms = wick::index_select(weight, 0, u).norm(norm_type, {1}).to(Device(kCPU), kFloat64).contiguous();
  const double* n = norms.data_ptr<double>();
  for (size_t i = 0; i < unique.size(); ++i)
    if (n[i] > max_norm) Tensor(weight).select(0, unique[i]).mul_(max_norm / (n[i] + 1e-7));
}

Tensor embedding_impl(const Tensor& indices, const Tensor& weight, std::optional<int64_t> padding_idx,
                      std::optional<double> max_norm, double norm_type, bool scale_grad_by_freq, bool sparse) {
  wick::detail::check_defined(indices, "embedding", "indices");
  wick::detail::check_defined(weight, "embedding", "weight");
  WICK_CHECK(!sparse, NotImplementedError, "embedding", "sparse gradients are not supported");
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
  if (max_norm) embedding_renorm(weight, flat, *max_norm, norm_type);
  const bool grad = wick::detail::needs_grad(weight);
  Tensor out =
      wick::detail::forward_once(grad, [&] { return wick::index_select(weight, 0, flat).view(out_sizes); });
  if (grad) [[unlikely]] autograd::record_embedding(weight, flat, out, padding_idx, scale_grad_by_freq);
  return out;
}
}  // namespace

Tensor embedding(const Tensor& indices, const Tensor& weight, std::optional<int64_t> padding_idx,
                 std::optional<double> max_norm, double norm_type, bool scale_grad_by_freq, bool sparse) {
  return wick::detail::as_op("embedding", [&] {
    return embedding_impl(indices, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse);
  });
}

Tensor flatten(const Tensor& x, int64_t start_dim, int64_t end_dim) { return x.flatten(start_dim, end_dim); }

namespace {

// Whether the fused entries take these operands: a floating x, and each parameter of
// normalized_shape's shape on x's device of x's dtype (or float32 with a 16-bit x when mixed).
// Anything else takes the composed path, whose ops raise PyTorch's errors.
bool fusable(const Tensor& x, IntArrayRef shape, const Tensor& weight, const Tensor& bias, bool mixed) {
  if (!x.is_floating_point()) return false;
  for (const Tensor* p : {&weight, &bias})
    if (p->defined() && (p->device() != x.device() || p->dtype() != (mixed ? kFloat32 : x.dtype()) ||
                         !p->sizes().equals(shape)))
      return false;
  return true;
}

// layer_norm (rms false) or rms_norm over x's last k dims through the norm_forward entry, in one
// pass; with grad, the statistics are kept and one node recorded (docs/design.md, "Fused
// normalizations"). Without grad only y is allocated.
Tensor fused_norm(bool rms, const Tensor& x, int64_t k, const Tensor& weight, const Tensor& bias, double eps) {
  namespace d = wick::detail;
  int64_t n = 1;
  for (int64_t i = x.dim() - k; i < x.dim(); ++i) n *= x.size(i);
  int64_t m = 1;
  for (int64_t i = 0; i < x.dim() - k; ++i) m *= x.size(i);
  const bool grad = d::needs_grad(x, weight, bias);
  Tensor mean, rstd;
  Tensor y = d::forward_once(grad, [&] {
    Tensor out = empty(x.sizes(), x.options());
    if (grad) {
      const TensorOptions stats = x.options().dtype(x.dtype() == kFloat64 ? kFloat64 : kFloat32);
      if (!rms) mean = empty({m}, stats);
      rstd = empty({m}, stats);
    }
    if (m > 0 && n > 0) {
      const Tensor xc = x.contiguous();
      const Tensor w = weight.defined() ? weight.contiguous() : weight;
      const Tensor b = bias.defined() ? bias.contiguous() : bias;
      const char* name = rms ? "rms_norm" : "layer_norm";
      d::kernel<&d::KernelTable::norm_forward>(x.device(), name)(rms, out.view({m, n}), mean, rstd, xc.view({m, n}),
                                                                 w, b, eps);
    }  // else nothing to compute (the backward reads no statistics of empty rows)
    return out;
  });
  if (grad) [[unlikely]] autograd::record_norm_layer(rms, x, weight, bias, y, mean, rstd, k, eps);
  return y;
}

}  // namespace

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
    if (fusable(x, IntArrayRef(normalized_shape), weight, bias, mixed)) return fused_norm(false, x, k, weight, bias, eps);
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

std::pair<Tensor, Tensor> add_layer_norm(const Tensor& x, const Tensor& delta,
                                         const std::vector<int64_t>& normalized_shape, const Tensor& weight,
                                         const Tensor& bias, double eps, std::optional<Dtype> dtype) {
  namespace d = wick::detail;
  return d::as_op("add_layer_norm", [&]() -> std::pair<Tensor, Tensor> {
    d::check_defined(x, "add_layer_norm", "input");
    const Dtype sd = delta.defined() ? promote_types(x.dtype(), delta.dtype()) : x.dtype();
    Dtype yd = sd;
    if (dtype) {
      WICK_CHECK(is_floating_point(*dtype), TypeError, "add_layer_norm", "expected a floating dtype, got ", *dtype);
      yd = *dtype;
    } else if (sd == kFloat32 && is_autocast_enabled(x.device().type())) {
      yd = get_autocast_dtype(x.device().type());
    }
    const int64_t k = int64_t(normalized_shape.size());
    bool shaped = k >= 1 && x.dim() >= k;
    for (int64_t i = 0; shaped && i < k; ++i) shaped = x.size(x.dim() - k + i) == normalized_shape[size_t(i)];
    const bool fused =
        shaped && x.dtype() == kFloat32 && (yd == kFloat32 || yd == kBFloat16 || yd == kFloat16) &&
        d::backend(x.device()).add_norm_forward &&
        (!delta.defined() ||
         (delta.dtype() == yd && delta.device() == x.device() && delta.sizes().equals(x.sizes()))) &&
        fusable(x, IntArrayRef(normalized_shape), weight, bias, false);
    if (!fused) {
      const Tensor s = delta.defined() ? x + delta : x;
      Tensor y = layer_norm(s, normalized_shape, weight, bias, eps);
      if (y.dtype() != yd) y = y.to(yd);
      return {s, y};
    }
    int64_t n = 1;
    for (int64_t i = x.dim() - k; i < x.dim(); ++i) n *= x.size(i);
    const int64_t m = n ? x.numel() / n : 0;
    const bool grad = d::needs_grad(x, delta, weight, bias);
    const Tensor xc = x.contiguous();
    Tensor s = x, y, mean, rstd;
    d::forward_once(grad, [&] {
      if (delta.defined()) s = empty(x.sizes(), x.options());
      y = empty(x.sizes(), x.options().dtype(yd));
      if (grad) {
        mean = empty({m}, x.options());
        rstd = empty({m}, x.options());
      }
      if (m > 0 && n > 0) {
        const Tensor dc = delta.defined() ? delta.contiguous().view({m, n}) : Tensor();
        const Tensor w = weight.defined() ? weight.contiguous() : weight;
        const Tensor b = bias.defined() ? bias.contiguous() : bias;
        d::kernel<&d::KernelTable::add_norm_forward>(x.device(), "add_layer_norm")(
            false, delta.defined() ? s.view({m, n}) : Tensor(), y.view({m, n}), mean, rstd, xc.view({m, n}), dc,
            w, b, eps);
      }
      return 0;
    });
    if (grad) [[unlikely]]
      autograd::record_add_norm(false, x, delta, weight, bias, delta.defined() ? s : xc, y, mean, rstd, k, eps);
    return {s, y};
  });
}

Tensor rms_norm(const Tensor& x, const std::vector<int64_t>& normalized_shape, const Tensor& weight,
                std::optional<double> eps) {
  return wick::detail::as_op("rms_norm", [&]() -> Tensor {
    wick::detail::check_defined(x, "rms_norm", "input");
    const int64_t k = int64_t(normalized_shape.size());
    bool ok = k >= 1 && x.dim() >= k;
    for (int64_t i = 0; ok && i < k; ++i) ok = x.size(x.dim() - k + i) == normalized_shape[size_t(i)];
    WICK_CHECK(ok, ValueError, "rms_norm", "Given normalized_shape=", IntArrayRef(normalized_shape),
               ", expected input with shape [*, ", IntArrayRef(normalized_shape), "], but got input of size",
               x.sizes());
    WICK_CHECK(!weight.defined() || weight.sizes().equals(IntArrayRef(normalized_shape)), ValueError, "rms_norm",
               "Expected weight to be of same shape as normalized_shape, but got weight of shape ", weight.sizes(),
               " and normalized_shape = ", IntArrayRef(normalized_shape));
    WICK_CHECK(x.is_floating_point(), TypeError, "rms_norm", "\"rms_norm\" not implemented for '", x.dtype(), "'");
    // 16-bit floats compute in float32 (PyTorch's opmath type), whose epsilon is the default.
    const bool low = x.dtype() == kFloat16 || x.dtype() == kBFloat16;
    const double e = eps ? *eps
                         : (x.dtype() == kFloat64 ? std::numeric_limits<double>::epsilon()
                                                  : double(std::numeric_limits<float>::epsilon()));
    // One fused op when weight is absent or of x's dtype and device (PyTorch's _fused_rms_norm);
    // else composed, as PyTorch does then.
    if (fusable(x, IntArrayRef(normalized_shape), weight, Tensor(), false)) return fused_norm(true, x, k, weight, Tensor(), e);
    DimVector dims;
    for (int64_t d = x.dim() - k; d < x.dim(); ++d) dims.push_back(d);
    Tensor xf = low ? x.to(kFloat32) : x;
    Tensor y = xf * wick::rsqrt((xf * xf).mean(dims, true) + e);
    if (weight.defined()) y = y * weight;  // in the computation type, then back to x's
    return y.dtype() == x.dtype() ? y : y.to(x.dtype());
  });
}

Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight, const Tensor& bias, double eps) {
  return wick::detail::as_op("group_norm", [&]() -> Tensor {
    wick::detail::check_defined(x, "group_norm", "input");
    WICK_CHECK(x.dim() >= 2, ValueError, "group_norm", "Expected at least 2 dimensions for input tensor but received ",
               x.dim());
    WICK_CHECK(x.is_floating_point(), TypeError, "group_norm", "\"group_norm\" not implemented for '", x.dtype(),
               "'");
    const int64_t n = x.size(0), c = x.size(1);
    WICK_CHECK(num_groups > 0 && c % num_groups == 0, ValueError, "group_norm",
               "Expected number of channels in input to be divisible by num_groups, but got input of shape ",
               x.sizes(), " and num_groups=", num_groups);
    for (auto [t, what] : {std::pair{&weight, "weight"}, std::pair{&bias, "bias"}})
      WICK_CHECK(!t->defined() || (t->dim() == 1 && t->numel() == c), ValueError, "group_norm", "Expected ", what,
                 " to be a vector of size equal to the number of channels in input, but got ", what, " of shape ",
                 t->sizes(), " and input of shape ", x.sizes());
    // Each group's size spelled out: -1 would be ambiguous for an empty batch.
    int64_t group = c / num_groups;
    for (int64_t d = 2; d < x.dim(); ++d) group *= x.size(d);
    Tensor g = x.reshape({n, num_groups, group});
    Tensor xc = g - g.mean({2}, true);
    Tensor var = (xc * xc).mean({2}, true);
    Tensor y = (xc * wick::rsqrt(var + eps)).reshape(x.sizes());
    DimVector shape(size_t(x.dim()), 1);
    shape[1] = c;
    if (weight.defined()) y = y * weight.view(shape);
    if (bias.defined()) y = y + bias.view(shape);
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
      // On CUDA, cuDNN's batch normalization: one call forward and one backward (PyTorch's
      // CudnnBatchNormBackward0), where the ops below take some ten kernels each way.
      if (wick::detail::cudnn_batch_norm_takes(x, weight, bias, running_mean, running_var, eps)) {
        auto r = wick::detail::cuda_cudnn_batch_norm_forward(x, weight, bias, running_mean, running_var, momentum,
                                                             eps);
        for (const Tensor* t : {&running_mean, &running_var})
          if (t->defined()) wick::detail::bump_version(*t);
        autograd::record_batch_norm(x, weight, bias, r.y, r.save_mean, r.save_invstd, eps);
        return r.y;
      }
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
