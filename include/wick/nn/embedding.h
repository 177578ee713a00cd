// Embedding: a table of num_embeddings vectors of size embedding_dim, looked up by index.
//
//   wick::nn::Embedding emb(10, 3);                // weight [10, 3] ~ N(0, 1)
//   auto v = emb(wick::tensor({1, 4, 4}));         // [3, 3]
#pragma once

#include <optional>

#include "wick/nn/module.h"
#include "wick/nn/options.h"

namespace wick::nn {

struct EmbeddingOptions {
  EmbeddingOptions(int64_t num_embeddings, int64_t embedding_dim)
      : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
  WICK_ARG(int64_t, num_embeddings);
  WICK_ARG(int64_t, embedding_dim);
  // This row is zero at init and gets no gradient.
  WICK_ARG(std::optional<int64_t>, padding_idx);
  // Looked-up rows with a norm_type-norm above max_norm are scaled down to it in place.
  WICK_ARG(std::optional<double>, max_norm);
  WICK_ARG(double, norm_type) = 2.0;
};

class EmbeddingImpl : public Module {
 public:
  EmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim)
      : EmbeddingImpl(EmbeddingOptions(num_embeddings, embedding_dim)) {}
  explicit EmbeddingImpl(const EmbeddingOptions& options);
  Tensor forward(const Tensor& indices);
  void reset_parameters();
  std::string extra_repr() const override;
  EmbeddingOptions options;
  Tensor weight;
};
WICK_MODULE(Embedding);

}  // namespace wick::nn
