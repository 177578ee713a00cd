// Linear, the activation layers, Flatten, Dropout, Dropout2d and Embedding.
#include <cmath>

#include "core/checks.h"
#include "core/tensor_ops.h"
#include "nn/repr.h"
#include "wick/autograd.h"
#include "wick/nn/activation.h"
#include "wick/nn/dropout.h"
#include "wick/nn/embedding.h"
#include "wick/nn/functional.h"
#include "wick/nn/init.h"
#include "wick/nn/linear.h"
#include "wick/ops.h"

namespace wick::nn {

namespace F = functional;
using detail::py_bool;
using detail::py_float;

// ---- Linear

LinearImpl::LinearImpl(const LinearOptions& options) : options(options) {
  WICK_CHECK(options.in_features() >= 0 && options.out_features() >= 0, ValueError, "Linear",
             "in_features and out_features must be non-negative");
  weight = register_parameter(
      "weight", wick::detail::empty_for({options.out_features(), options.in_features()}, {}, "Linear"));
  if (options.bias())
    bias = register_parameter("bias", wick::detail::empty_for({options.out_features()}, {}, "Linear"));
  reset_parameters();
}

void LinearImpl::reset_parameters() {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const int64_t fan_in = options.in_features();
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(double(fan_in)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
}

Tensor LinearImpl::forward(const Tensor& x) { return F::linear(x, weight, bias); }

std::string LinearImpl::extra_repr() const {
  return "in_features=" + std::to_string(options.in_features()) +
         ", out_features=" + std::to_string(options.out_features()) + ", bias=" + py_bool(bias.defined());
}

// ---- activations

Tensor ReLUImpl::forward(const Tensor& x) { return F::relu(x); }
std::string ReLUImpl::extra_repr() const { return options.inplace() ? "inplace=True" : ""; }
Tensor LeakyReLUImpl::forward(const Tensor& x) { return F::leaky_relu(x, options.negative_slope()); }
std::string LeakyReLUImpl::extra_repr() const {
  return "negative_slope=" + py_float(options.negative_slope()) + (options.inplace() ? ", inplace=True" : "");
}
Tensor GELUImpl::forward(const Tensor& x) { return F::gelu(x, approximate); }
std::string GELUImpl::extra_repr() const { return "approximate='" + approximate + "'"; }
Tensor SiLUImpl::forward(const Tensor& x) { return F::silu(x); }
Tensor SigmoidImpl::forward(const Tensor& x) { return F::sigmoid(x); }
Tensor TanhImpl::forward(const Tensor& x) { return F::tanh(x); }
Tensor SoftmaxImpl::forward(const Tensor& x) { return F::softmax(x, dim); }
std::string SoftmaxImpl::extra_repr() const { return "dim=" + std::to_string(dim); }
Tensor LogSoftmaxImpl::forward(const Tensor& x) { return F::log_softmax(x, dim); }
std::string LogSoftmaxImpl::extra_repr() const { return "dim=" + std::to_string(dim); }
Tensor FlattenImpl::forward(const Tensor& x) { return F::flatten(x, start_dim, end_dim); }
std::string FlattenImpl::extra_repr() const {
  return "start_dim=" + std::to_string(start_dim) + ", end_dim=" + std::to_string(end_dim);
}

// ---- Dropout

DropoutImpl::DropoutImpl(const DropoutOptions& options) : options(options) {
  WICK_CHECK(options.p() >= 0 && options.p() <= 1, ValueError, "Dropout",
             "dropout probability has to be between 0 and 1, but got ", options.p());
}
Tensor DropoutImpl::forward(const Tensor& x) { return F::dropout(x, options.p(), is_training()); }
std::string DropoutImpl::extra_repr() const {
  return "p=" + py_float(options.p()) + ", inplace=" + py_bool(options.inplace());
}

Dropout2dImpl::Dropout2dImpl(const Dropout2dOptions& options) : options(options) {
  WICK_CHECK(options.p() >= 0 && options.p() <= 1, ValueError, "Dropout2d",
             "dropout probability has to be between 0 and 1, but got ", options.p());
}
Tensor Dropout2dImpl::forward(const Tensor& x) { return F::dropout2d(x, options.p(), is_training()); }
std::string Dropout2dImpl::extra_repr() const {
  return "p=" + py_float(options.p()) + ", inplace=" + py_bool(options.inplace());
}

// ---- Embedding

namespace {
// padding_idx checked and made non-negative.
EmbeddingOptions checked_embedding_options(EmbeddingOptions options) {
  if (auto p = options.padding_idx()) {
    const int64_t n = options.num_embeddings();
    WICK_CHECK(*p >= -n && *p < n, ValueError, "Embedding", "Padding_idx must be within num_embeddings");
    if (*p < 0) options.padding_idx(*p + n);
  }
  return options;
}
}  // namespace

EmbeddingImpl::EmbeddingImpl(const EmbeddingOptions& options) : options(checked_embedding_options(options)) {
  weight = register_parameter(
      "weight",
      wick::detail::empty_for({options.num_embeddings(), options.embedding_dim()}, {}, "Embedding"));
  reset_parameters();
}

EmbeddingImpl::EmbeddingImpl(const EmbeddingOptions& options, const Tensor& weight, bool requires_grad)
    : options(checked_embedding_options(options)) {
  wick::detail::check_defined(weight, "Embedding", "_weight");
  WICK_CHECK(weight.dim() == 2 && weight.size(0) == options.num_embeddings() &&
                 weight.size(1) == options.embedding_dim(),
             ValueError, "Embedding", "Shape of weight does not match num_embeddings and embedding_dim");
  this->weight = register_parameter("weight", weight.detach(), requires_grad);
}

Embedding Embedding::from_pretrained(const Tensor& embeddings, const EmbeddingFromPretrainedOptions& options) {
  constexpr const char* op = "Embedding.from_pretrained";
  wick::detail::check_defined(embeddings, op, "embeddings");
  WICK_CHECK(embeddings.dim() == 2, ValueError, op, "Embeddings parameter is expected to be 2-dimensional");
  WICK_CHECK(!options.sparse(), NotImplementedError, op, "sparse gradients are not supported");
  EmbeddingOptions o(embeddings.size(0), embeddings.size(1));
  o.padding_idx(options.padding_idx()).max_norm(options.max_norm()).norm_type(options.norm_type());
  o.scale_grad_by_freq(options.scale_grad_by_freq());
  const bool trainable = !options.freeze();
  auto impl = std::make_shared<EmbeddingImpl>(o, embeddings, trainable);
  // A replica (DataParallel) gets a weight of its own, of the same dtype and trainability.
  const Dtype dtype = embeddings.dtype();
  impl->set_replicator([o, trainable, dtype] {
    auto m = std::make_shared<EmbeddingImpl>(o);
    if (is_floating_point(dtype)) m->to(dtype);
    m->weight.requires_grad_(trainable);
    return std::shared_ptr<Module>(m);
  });
  return Embedding(impl);
}

void EmbeddingImpl::reset_parameters() {
  init::normal_(weight);
  if (auto p = options.padding_idx()) {
    NoGradGuard g;
    weight[*p].fill_(0);
  }
}

Tensor EmbeddingImpl::forward(const Tensor& indices) {
  return F::embedding(indices, weight, options.padding_idx(), options.max_norm(), options.norm_type(),
                      options.scale_grad_by_freq(), options.sparse());
}

std::string EmbeddingImpl::extra_repr() const {
  std::string s = std::to_string(options.num_embeddings()) + ", " + std::to_string(options.embedding_dim());
  if (options.padding_idx()) s += ", padding_idx=" + std::to_string(*options.padding_idx());
  if (options.max_norm()) s += ", max_norm=" + py_float(*options.max_norm());
  if (options.norm_type() != 2.0) s += ", norm_type=" + py_float(options.norm_type());
  if (options.scale_grad_by_freq()) s += ", scale_grad_by_freq=True";
  if (options.sparse()) s += ", sparse=True";
  return s;
}

}  // namespace wick::nn
