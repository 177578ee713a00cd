// CosineSimilarity and PairwiseDistance: functional::cosine_similarity and pairwise_distance
// as modules of two inputs (printed CosineSimilarity() and PairwiseDistance(), as PyTorch's).
//
//   wick::nn::CosineSimilarity cos(wick::nn::CosineSimilarityOptions().dim(1));
//   auto s = cos(a, b);  // [N, D], [N, D] -> [N]
#pragma once

#include "wick/nn/module.h"
#include "wick/nn/options.h"

namespace wick::nn {

struct CosineSimilarityOptions {
  WICK_ARG(int64_t, dim) = 1;
  WICK_ARG(double, eps) = 1e-8;
};

class CosineSimilarityImpl : public Module {
 public:
  explicit CosineSimilarityImpl(const CosineSimilarityOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& x1, const Tensor& x2);
  CosineSimilarityOptions options;
};
WICK_MODULE(CosineSimilarity);

struct PairwiseDistanceOptions {
  WICK_ARG(double, p) = 2.0;
  WICK_ARG(double, eps) = 1e-6;
  WICK_ARG(bool, keepdim) = false;
};

class PairwiseDistanceImpl : public Module {
 public:
  explicit PairwiseDistanceImpl(const PairwiseDistanceOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& x1, const Tensor& x2);
  PairwiseDistanceOptions options;
};
WICK_MODULE(PairwiseDistance);

}  // namespace wick::nn
