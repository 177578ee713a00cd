// hardshrink, softmin, glu, dropout1d, dropout3d, local_response_norm and channel_shuffle, and
// their modules. hardshrink records one HardshrinkBackward0 as PyTorch; the others are composed
// of differentiable ops as PyTorch writes them.
#include <vector>

#include "autograd/elementwise_node.h"
#include "autograd/hooks.h"
#include "core/as_op.h"
#include "core/checks.h"
#include "nn/repr.h"
#include "wick/autograd.h"
#include "wick/nn/activation_more.h"
#include "wick/nn/functional.h"
#include "wick/ops.h"

namespace wick::nn {

namespace functional {

using wick::detail::as_op;

Tensor hardshrink(const Tensor& x, double lambda) {
  constexpr const char* op = "hardshrink";
  wick::detail::check_defined(x, op, "self");
  WICK_CHECK(x.is_floating_point(), TypeError, op, "\"hardshrink_", x.device().is_cuda() ? "cuda" : "cpu",
             "\" not implemented for '", x.dtype(), "'");
  const bool grad = wick::detail::needs_grad(x);
  Tensor y;
  {
    std::optional<NoGradGuard> off;
    if (grad) off.emplace();
    // |x| <= lambda is false for NaN: NaN passes, as PyTorch's.
    y = as_op(op, [&] { return wick::where(x.abs() <= lambda, 0, x); });
  }
  if (grad) [[unlikely]]
    autograd::record_elementwise("HardshrinkBackward0", x, y,
                                 [lambda](const Tensor& v) { return 1 - (v.abs() <= lambda).to(v.dtype()); });
  return y;
}

Tensor softmin(const Tensor& x, int64_t dim, std::optional<Dtype> dtype) {
  constexpr const char* op = "softmin";
  wick::detail::check_defined(x, op, "input");
  return as_op(op, [&] { return wick::softmax(-x, dim, dtype); });
}

Tensor glu(const Tensor& x, int64_t dim) {
  constexpr const char* op = "glu";
  wick::detail::check_defined(x, op, "self");
  WICK_CHECK(x.dim() > 0, ValueError, op, "glu does not support scalars because halving size must be even");
  const int64_t d = wick::detail::wrap_dim(dim, x.dim(), op);
  const int64_t n = x.size(d);
  WICK_CHECK(n % 2 == 0, ValueError, op, "Halving dimension must be even, but dimension ", d, " is size ", n);
  WICK_CHECK(x.is_floating_point(), TypeError, op, "\"glu_", x.device().is_cuda() ? "cuda" : "cpu",
             "\" not implemented for '", x.dtype(), "'");
  return as_op(op, [&] { return x.narrow(d, 0, n / 2) * x.narrow(d, n / 2, n / 2).sigmoid(); });
}

namespace {

void check_probability(double p, const char* op) {
  WICK_CHECK(p >= 0 && p <= 1, ValueError, op, "dropout probability has to be between 0 and 1, but got ", p);
}

// Channel dropout of a batched input ([N, C, ...]) or an unbatched one (given a batch dim of 1).
Tensor feature_dropout(const Tensor& x, double p, bool training, bool batched, const char* op) {
  return as_op(op, [&] {
    Tensor in = batched ? x : x.unsqueeze(0);
    Tensor out = dropout2d(in, p, training);
    return batched ? out : out.squeeze(0);
  });
}

}  // namespace

Tensor dropout1d(const Tensor& x, double p, bool training) {
  constexpr const char* op = "dropout1d";
  wick::detail::check_defined(x, op, "input");
  check_probability(p, op);
  WICK_CHECK(x.dim() == 2 || x.dim() == 3, ValueError, op, "dropout1d: Expected 2D or 3D input, but received a ",
             x.dim(),
             "D input. Note that dropout1d exists to provide channel-wise dropout on inputs with 1 spatial "
             "dimension, a channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).");
  return feature_dropout(x, p, training, x.dim() == 3, op);
}

Tensor dropout3d(const Tensor& x, double p, bool training) {
  constexpr const char* op = "dropout3d";
  wick::detail::check_defined(x, op, "input");
  check_probability(p, op);
  if (x.dim() != 4 && x.dim() != 5)
    wick::detail::warn(wick::str("dropout3d: Received a ", x.dim(),
                                 "-D input to dropout3d, which is deprecated and will result in an error in a "
                                 "future release. To retain the behavior and silence this warning, please use "
                                 "dropout instead. Note that dropout3d exists to provide channel-wise dropout on "
                                 "inputs with 3 spatial dimensions, a channel dimension, and an optional batch "
                                 "dimension (i.e. 4D or 5D inputs)."),
                       op);
  return feature_dropout(x, p, training, x.dim() == 5, op);
}

Tensor local_response_norm(const Tensor& x, int64_t size, double alpha, double beta, double k) {
  constexpr const char* op = "local_response_norm";
  wick::detail::check_defined(x, op, "input");
  WICK_CHECK(x.dim() >= 3, ValueError, op, "Expected 3D or higher dimensionality input (got ", x.dim(),
             " dimensions)");
  if (x.numel() == 0) return x;
  // PyTorch averages the squares over the window with avg_pool2d (3-d inputs) or avg_pool3d.
  if (x.dim() == 3)
    WICK_CHECK(size > 0, ValueError, op, "kernel size should be greater than zero, but got kH: ", size, " kW: 1");
  else
    WICK_CHECK(size > 0, ValueError, op, "kernel size should be greater than zero, but got kT: ", size,
               " kH: 1 kW: 1");
  return as_op(op, [&] {
    const int64_t c = x.size(1), front = size / 2, back = (size - 1) / 2;
    Tensor sq = x * x;
    std::vector<Tensor> parts;
    auto zero_channels = [&](int64_t n) {
      DimVector shape(sq.sizes().begin(), sq.sizes().end());
      shape[1] = n;
      return wick::zeros(shape, TensorOptions(sq.dtype()).device(sq.device()));
    };
    if (front > 0) parts.push_back(zero_channels(front));
    parts.push_back(sq);
    if (back > 0) parts.push_back(zero_channels(back));
    Tensor padded = parts.size() == 1 ? sq : wick::cat(parts, 1);
    // The zero-padded window of channel i is padded channels [i, i + size) (front + back is
    // size - 1: every window lies inside).
    Tensor sum = padded.narrow(1, 0, c);
    for (int64_t j = 1; j < size; ++j) sum = sum + padded.narrow(1, j, c);
    Tensor div = ((sum / double(size)) * alpha + k).pow(beta);
    return x / div;
  });
}

Tensor channel_shuffle(const Tensor& x, int64_t groups) {
  constexpr const char* op = "channel_shuffle";
  wick::detail::check_defined(x, op, "self");
  WICK_CHECK(x.dim() > 2, ValueError, op,
             "channel_shuffle expects input to have at least 3 dimensions, but got input with ", x.dim(),
             " dimension(s)");
  WICK_CHECK(groups > 0, ValueError, op, "Number of groups to divide channels in must be positive. Value of groups:",
             groups);
  const int64_t c = x.size(1);
  WICK_CHECK(c % groups == 0, ValueError, op, "Number of channels must be divisible by groups. Got ", c,
             " channels and ", groups, " groups.");
  return as_op(op, [&] {
    int64_t rest = 1;
    for (int64_t d = 2; d < x.dim(); ++d) rest *= x.size(d);
    return x.reshape({x.size(0), groups, c / groups, rest}).transpose(1, 2).contiguous().reshape(x.sizes());
  });
}

}  // namespace functional

namespace F = functional;
using detail::py_bool;
using detail::py_float;

Tensor HardshrinkImpl::forward(const Tensor& x) { return F::hardshrink(x, options.lambda()); }
std::string HardshrinkImpl::extra_repr() const { return py_float(options.lambda()); }

Tensor SoftminImpl::forward(const Tensor& x) { return F::softmin(x, options.dim()); }
std::string SoftminImpl::extra_repr() const { return "dim=" + std::to_string(options.dim()); }

Tensor GLUImpl::forward(const Tensor& x) { return F::glu(x, options.dim()); }
std::string GLUImpl::extra_repr() const { return "dim=" + std::to_string(options.dim()); }

Dropout1dImpl::Dropout1dImpl(const Dropout1dOptions& options) : options(options) {
  F::check_probability(options.p(), "Dropout1d");
}
Tensor Dropout1dImpl::forward(const Tensor& x) { return F::dropout1d(x, options.p(), is_training()); }
std::string Dropout1dImpl::extra_repr() const {
  return "p=" + py_float(options.p()) + ", inplace=" + py_bool(options.inplace());
}

Dropout3dImpl::Dropout3dImpl(const Dropout3dOptions& options) : options(options) {
  F::check_probability(options.p(), "Dropout3d");
}
Tensor Dropout3dImpl::forward(const Tensor& x) { return F::dropout3d(x, options.p(), is_training()); }
std::string Dropout3dImpl::extra_repr() const {
  return "p=" + py_float(options.p()) + ", inplace=" + py_bool(options.inplace());
}

Tensor LocalResponseNormImpl::forward(const Tensor& x) {
  return F::local_response_norm(x, options.size(), options.alpha(), options.beta(), options.k());
}
std::string LocalResponseNormImpl::extra_repr() const {
  return std::to_string(options.size()) + ", alpha=" + py_float(options.alpha()) + ", beta=" +
         py_float(options.beta()) + ", k=" + py_float(options.k());
}

Tensor ChannelShuffleImpl::forward(const Tensor& x) { return F::channel_shuffle(x, options.groups()); }
std::string ChannelShuffleImpl::extra_repr() const { return "groups=" + std::to_string(options.groups()); }

}  // namespace wick::nn
