// More losses, as modules and as nn::functional: MarginRankingLoss TripletMarginLoss
// CosineEmbeddingLoss PoissonNLLLoss GaussianNLLLoss HingeEmbeddingLoss SoftMarginLoss
// MultiLabelSoftMarginLoss. Each takes LibTorch's options struct (reduction "mean", "sum" or
// "none", or wick::kMean, kSum, kNone) and prints as PyTorch's, "MarginRankingLoss()".
//
//   wick::nn::TripletMarginLoss loss(wick::nn::TripletMarginLossOptions().margin(0.5).swap(true));
//   auto l = loss(anchor, positive, negative);
//   namespace F = wick::nn::functional;
//   auto h = F::hinge_embedding_loss(x, y, F::HingeEmbeddingLossFuncOptions().margin(2.0));
#pragma once

#include <string>

#include "wick/enums.h"
#include "wick/nn/module.h"
#include "wick/nn/options.h"
#include "wick/tensor.h"

namespace wick::nn {

struct MarginRankingLossOptions {
  WICK_ARG(double, margin) = 0.0;
  WICK_ARG(std::string, reduction) = "mean";
};

struct TripletMarginLossOptions {
  WICK_ARG(double, margin) = 1.0;
  WICK_ARG(double, p) = 2.0;
  WICK_ARG(double, eps) = 1e-6;
  WICK_ARG(bool, swap) = false;
  WICK_ARG(std::string, reduction) = "mean";
};

struct CosineEmbeddingLossOptions {
  WICK_ARG(double, margin) = 0.0;
  WICK_ARG(std::string, reduction) = "mean";
};

struct PoissonNLLLossOptions {
  WICK_ARG(bool, log_input) = true;
  WICK_ARG(bool, full) = false;
  WICK_ARG(double, eps) = 1e-8;
  WICK_ARG(std::string, reduction) = "mean";
};

struct GaussianNLLLossOptions {
  WICK_ARG(bool, full) = false;
  WICK_ARG(double, eps) = 1e-6;
  WICK_ARG(std::string, reduction) = "mean";
};

struct HingeEmbeddingLossOptions {
  WICK_ARG(double, margin) = 1.0;
  WICK_ARG(std::string, reduction) = "mean";
};

struct SoftMarginLossOptions {
  // SoftMarginLossOptions(wick::kSum): the enum spellings convert to their strings
  SoftMarginLossOptions(std::string reduction = "mean") : reduction_(std::move(reduction)) {}
  WICK_ARG(std::string, reduction);
};

struct MultiLabelSoftMarginLossOptions {
  WICK_ARG(Tensor, weight);
  WICK_ARG(std::string, reduction) = "mean";
};

namespace functional {

using MarginRankingLossFuncOptions = MarginRankingLossOptions;
using TripletMarginLossFuncOptions = TripletMarginLossOptions;
using CosineEmbeddingLossFuncOptions = CosineEmbeddingLossOptions;
using PoissonNLLLossFuncOptions = PoissonNLLLossOptions;
using GaussianNLLLossFuncOptions = GaussianNLLLossOptions;
using HingeEmbeddingLossFuncOptions = HingeEmbeddingLossOptions;
using SoftMarginLossFuncOptions = SoftMarginLossOptions;
using MultilabelSoftMarginLossFuncOptions = MultiLabelSoftMarginLossOptions;

// max(0, -target (input1 - input2) + margin), the three of the same number of dims, broadcast.
Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target, double margin = 0.0,
                           const std::string& reduction = "mean");
inline Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                                  const MarginRankingLossFuncOptions& o) {
  return margin_ranking_loss(input1, input2, target, o.margin(), o.reduction());
}

// max(0, margin + d(anchor, positive) - d(anchor, negative)), d pairwise_distance(p, eps) over
// the last dim; swap: d(anchor, negative) replaced by d(positive, negative) where smaller.
Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                           double margin = 1.0, double p = 2.0, double eps = 1e-6, bool swap = false,
                           const std::string& reduction = "mean");
inline Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                                  const TripletMarginLossFuncOptions& o) {
  return triplet_margin_loss(anchor, positive, negative, o.margin(), o.p(), o.eps(), o.swap(), o.reduction());
}

// 1 - cos(x1, x2) where target is 1, max(0, cos(x1, x2) - margin) where it is -1, 0 elsewhere;
// inputs [N, D] with target [N], or [D] with a 0-d target.
Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target, double margin = 0.0,
                             const std::string& reduction = "mean");
inline Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                                    const CosineEmbeddingLossFuncOptions& o) {
  return cosine_embedding_loss(input1, input2, target, o.margin(), o.reduction());
}

// exp(input) - target input (log_input), else input - target log(input + eps); full adds
// Stirling's target log(target) - target + log(2 pi target) / 2 where target > 1.
Tensor poisson_nll_loss(const Tensor& input, const Tensor& target, bool log_input = true, bool full = false,
                        double eps = 1e-8, const std::string& reduction = "mean");
inline Tensor poisson_nll_loss(const Tensor& input, const Tensor& target, const PoissonNLLLossFuncOptions& o) {
  return poisson_nll_loss(input, target, o.log_input(), o.full(), o.eps(), o.reduction());
}

// (log(max(var, eps)) + (input - target)^2 / max(var, eps)) / 2 (plus log(2 pi) / 2 with full);
// var shaped as input, as input without its last dim, or as input with a last dim of 1. The
// clamp is not differentiated (the gradient reaches var as if unclamped, as PyTorch's).
Tensor gaussian_nll_loss(const Tensor& input, const Tensor& target, const Tensor& var, bool full = false,
                         double eps = 1e-6, const std::string& reduction = "mean");
inline Tensor gaussian_nll_loss(const Tensor& input, const Tensor& target, const Tensor& var,
                                const GaussianNLLLossFuncOptions& o) {
  return gaussian_nll_loss(input, target, var, o.full(), o.eps(), o.reduction());
}

// input where target is not -1, plus max(0, margin - input) where target is not 1.
Tensor hinge_embedding_loss(const Tensor& input, const Tensor& target, double margin = 1.0,
                            const std::string& reduction = "mean");
inline Tensor hinge_embedding_loss(const Tensor& input, const Tensor& target, const HingeEmbeddingLossFuncOptions& o) {
  return hinge_embedding_loss(input, target, o.margin(), o.reduction());
}

// log(1 + exp(-target input)).
Tensor soft_margin_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean");
inline Tensor soft_margin_loss(const Tensor& input, const Tensor& target, const SoftMarginLossFuncOptions& o) {
  return soft_margin_loss(input, target, o.reduction());
}

// -(target logsigmoid(input) + (1 - target) logsigmoid(-input)), times weight, averaged over
// the last (class) dim: one value per sample before the reduction.
Tensor multilabel_soft_margin_loss(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                                   const std::string& reduction = "mean");
inline Tensor multilabel_soft_margin_loss(const Tensor& input, const Tensor& target,
                                          const MultilabelSoftMarginLossFuncOptions& o) {
  return multilabel_soft_margin_loss(input, target, o.weight(), o.reduction());
}

}  // namespace functional

}  // namespace wick::nn

// ATen's functions of these names in namespace wick, as LibTorch's torch::margin_ranking_loss
// ...: the nn::functional ones, whose reduction is also taken as LibTorch's enum
// (wick::Reduction::Sum) in ATen's argument order.
namespace wick {
using nn::functional::cosine_embedding_loss;
using nn::functional::hinge_embedding_loss;
using nn::functional::margin_ranking_loss;
using nn::functional::poisson_nll_loss;
using nn::functional::soft_margin_loss;
using nn::functional::triplet_margin_loss;
Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target, double margin,
                           Reduction::Reduction reduction);
Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative, double margin,
                           double p, double eps, bool swap, Reduction::Reduction reduction);
Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target, double margin,
                             Reduction::Reduction reduction);
Tensor poisson_nll_loss(const Tensor& input, const Tensor& target, bool log_input, bool full, double eps,
                        Reduction::Reduction reduction);
Tensor hinge_embedding_loss(const Tensor& input, const Tensor& target, double margin, Reduction::Reduction reduction);
Tensor soft_margin_loss(const Tensor& input, const Tensor& target, Reduction::Reduction reduction);
}  // namespace wick

namespace wick::nn {

class MarginRankingLossImpl : public Module {
 public:
  explicit MarginRankingLossImpl(const MarginRankingLossOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input1, const Tensor& input2, const Tensor& target);
  MarginRankingLossOptions options;
};
WICK_MODULE(MarginRankingLoss);

class TripletMarginLossImpl : public Module {
 public:
  explicit TripletMarginLossImpl(const TripletMarginLossOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& anchor, const Tensor& positive, const Tensor& negative);
  TripletMarginLossOptions options;
};
WICK_MODULE(TripletMarginLoss);

class CosineEmbeddingLossImpl : public Module {
 public:
  explicit CosineEmbeddingLossImpl(const CosineEmbeddingLossOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input1, const Tensor& input2, const Tensor& target);
  CosineEmbeddingLossOptions options;
};
WICK_MODULE(CosineEmbeddingLoss);

class PoissonNLLLossImpl : public Module {
 public:
  explicit PoissonNLLLossImpl(const PoissonNLLLossOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& log_input, const Tensor& target);
  PoissonNLLLossOptions options;
};
WICK_MODULE(PoissonNLLLoss);

class GaussianNLLLossImpl : public Module {
 public:
  explicit GaussianNLLLossImpl(const GaussianNLLLossOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input, const Tensor& target, const Tensor& var);
  GaussianNLLLossOptions options;
};
WICK_MODULE(GaussianNLLLoss);

class HingeEmbeddingLossImpl : public Module {
 public:
  explicit HingeEmbeddingLossImpl(const HingeEmbeddingLossOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input, const Tensor& target);
  HingeEmbeddingLossOptions options;
};
WICK_MODULE(HingeEmbeddingLoss);

class SoftMarginLossImpl : public Module {
 public:
  explicit SoftMarginLossImpl(const SoftMarginLossOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input, const Tensor& target);
  SoftMarginLossOptions options;
};
WICK_MODULE(SoftMarginLoss);

// The class weights, when given, are a registered buffer (to()/cuda() move them).
class MultiLabelSoftMarginLossImpl : public Module {
 public:
  explicit MultiLabelSoftMarginLossImpl(const MultiLabelSoftMarginLossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target);
  MultiLabelSoftMarginLossOptions options;
  Tensor weight;
};
WICK_MODULE(MultiLabelSoftMarginLoss);

}  // namespace wick::nn
