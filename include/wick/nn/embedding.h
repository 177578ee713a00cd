// Embedding: a table of num_embeddings vectors of size embedding_dim, looked up by index.
//
//   wick::nn::Embedding emb(10, 3);                // weight [10, 3] ~ N(0, 1)
//   auto v = emb(wick::tensor({1, 4, 4}));         // [3, 3]
//   auto pre = wick::nn::Embedding::from_pretrained(table);   // table's rows, frozen
//
// EmbeddingBag: the sum, mean or max of each bag of looked-up rows, without the [*, dim] rows.
//
//   wick::nn::EmbeddingBag bag(wick::nn::EmbeddingBagOptions(10, 3).mode(wick::kSum));
//   auto s = bag(wick::tensor({1, 2, 4, 5, 4}), wick::tensor({0, 2}));   // [2, 3]: bags {1, 2}, {4, 5, 4}
#pragma once

#include <optional>
#include <string>

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
  // Each lookup's gradient divided by the number of lookups of its row in the batch.
  WICK_ARG(bool, scale_grad_by_freq) = false;
  // Accepted for LibTorch's spelling; true raises NotImplementedError (no sparse gradients).
  WICK_ARG(bool, sparse) = false;
};

class EmbeddingImpl : public Module {
 public:
  EmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim)
      : EmbeddingImpl(EmbeddingOptions(num_embeddings, embedding_dim)) {}
  explicit EmbeddingImpl(const EmbeddingOptions& options);
  // Python's Embedding(..., _weight=weight): weight [num_embeddings, embedding_dim] (ValueError
  // otherwise) becomes the parameter (detached: a new leaf sharing its storage), not initialized
  // (the padding row is left as it is); requires_grad as given.
  EmbeddingImpl(const EmbeddingOptions& options, const Tensor& weight, bool requires_grad = true);
  Tensor forward(const Tensor& indices);
  void reset_parameters();
  std::string extra_repr() const override;
  EmbeddingOptions options;
  Tensor weight;
};

// Embedding::from_pretrained's keyword arguments (LibTorch's EmbeddingFromPretrainedOptions).
// sparse is accepted for LibTorch's spelling; true raises NotImplementedError.
struct EmbeddingFromPretrainedOptions {
  WICK_ARG(bool, freeze) = true;
  WICK_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
  WICK_ARG(std::optional<double>, max_norm) = std::nullopt;
  WICK_ARG(double, norm_type) = 2.0;
  WICK_ARG(bool, scale_grad_by_freq) = false;
  WICK_ARG(bool, sparse) = false;
};

// The holder of EmbeddingImpl, as WICK_MODULE(Embedding) would make it, plus from_pretrained.
class Embedding : public ModuleHolder<EmbeddingImpl> {
 public:
  using ModuleHolder<EmbeddingImpl>::ModuleHolder;
  // torch.nn.Embedding.from_pretrained: an embedding whose weight is embeddings (2-D; shared
  // storage, not copied), requiring grad unless freeze.
  static Embedding from_pretrained(const Tensor& embeddings, const EmbeddingFromPretrainedOptions& options = {});
};

struct EmbeddingBagOptions {
  EmbeddingBagOptions(int64_t num_embeddings, int64_t embedding_dim)
      : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
  WICK_ARG(int64_t, num_embeddings);
  WICK_ARG(int64_t, embedding_dim);
  WICK_ARG(std::optional<double>, max_norm);
  WICK_ARG(double, norm_type) = 2.0;
  // Accepted for LibTorch's spelling; true raises NotImplementedError (no such gradients).
  WICK_ARG(bool, scale_grad_by_freq) = false;
  // "sum", "mean" or "max" (wick::kSum, kMean, kMax convert to these).
  WICK_ARG(std::string, mode) = "mean";
  // Accepted for LibTorch's spelling; true raises NotImplementedError (no sparse gradients).
  WICK_ARG(bool, sparse) = false;
  // offsets has B + 1 entries, the last the end of the last bag (CSR's layout).
  WICK_ARG(bool, include_last_offset) = false;
  // Entries equal to it are left out of their bag; the row is zero at init.
  WICK_ARG(std::optional<int64_t>, padding_idx);
};

class EmbeddingBagImpl : public Module {
 public:
  EmbeddingBagImpl(int64_t num_embeddings, int64_t embedding_dim)
      : EmbeddingBagImpl(EmbeddingBagOptions(num_embeddings, embedding_dim)) {}
  explicit EmbeddingBagImpl(const EmbeddingBagOptions& options);
  // Python's EmbeddingBag(..., _weight=weight): weight [num_embeddings, embedding_dim] becomes the
  // parameter (detached, sharing its storage), not initialized; requires_grad as given.
  EmbeddingBagImpl(const EmbeddingBagOptions& options, const Tensor& weight, bool requires_grad = true);
  // functional::embedding_bag of input (2-D bags, or 1-D with offsets) with this table.
  Tensor forward(const Tensor& input, const Tensor& offsets = {}, const Tensor& per_sample_weights = {});
  void reset_parameters();
  std::string extra_repr() const override;
  EmbeddingBagOptions options;
  Tensor weight;
};

// EmbeddingBag::from_pretrained's keyword arguments (LibTorch's EmbeddingBagFromPretrainedOptions).
struct EmbeddingBagFromPretrainedOptions {
  WICK_ARG(bool, freeze) = true;
  WICK_ARG(std::optional<double>, max_norm) = std::nullopt;
  WICK_ARG(double, norm_type) = 2.0;
  WICK_ARG(bool, scale_grad_by_freq) = false;
  WICK_ARG(std::string, mode) = "mean";
  WICK_ARG(bool, sparse) = false;
  WICK_ARG(bool, include_last_offset) = false;
  WICK_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
};

class EmbeddingBag : public ModuleHolder<EmbeddingBagImpl> {
 public:
  using ModuleHolder<EmbeddingBagImpl>::ModuleHolder;
  // torch.nn.EmbeddingBag.from_pretrained: a bag whose weight is embeddings (2-D; shared storage,
  // not copied), requiring grad unless freeze.
  static EmbeddingBag from_pretrained(const Tensor& embeddings, const EmbeddingBagFromPretrainedOptions& options = {});
};

}  // namespace wick::nn
