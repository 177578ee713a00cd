// Losses as modules: CrossEntropyLoss NLLLoss MSELoss L1Loss BCEWithLogitsLoss BCELoss SmoothL1Loss
// HuberLoss KLDivLoss.
//
//   wick::nn::CrossEntropyLoss criterion(
//       wick::nn::CrossEntropyLossOptions().weight(wick::tensor({1., 3.})).label_smoothing(0.1));
//   criterion->cuda();                      // the class weights are a buffer: they move too
//   auto loss = criterion(logits, target);  // logits [N, C], target int64 [N]
#pragma once

#include <string>

#include "wick/nn/module.h"
#include "wick/nn/options.h"

namespace wick::nn {

// "mean", "sum" or "none".
struct CrossEntropyLossOptions {
  WICK_ARG(Tensor, weight);
  WICK_ARG(int64_t, ignore_index) = -100;
  WICK_ARG(std::string, reduction) = "mean";
  WICK_ARG(double, label_smoothing) = 0.0;
};

class CrossEntropyLossImpl : public Module {
 public:
  explicit CrossEntropyLossImpl(const CrossEntropyLossOptions& options = {});
  // input [N, C] (or [N, C, d...], or [C]) logits; target class indices [N] (int64 or uint8) or class
  // probabilities shaped like input.
  Tensor forward(const Tensor& input, const Tensor& target);
  CrossEntropyLossOptions options;
  Tensor weight;  // the registered buffer (undefined without class weights)
};
WICK_MODULE(CrossEntropyLoss);

struct NLLLossOptions {
  WICK_ARG(Tensor, weight);
  WICK_ARG(int64_t, ignore_index) = -100;
  WICK_ARG(std::string, reduction) = "mean";
};

class NLLLossImpl : public Module {
 public:
  explicit NLLLossImpl(const NLLLossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target);
  NLLLossOptions options;
  Tensor weight;
};
WICK_MODULE(NLLLoss);

struct MSELossOptions {
  MSELossOptions(std::string reduction = "mean") : reduction_(std::move(reduction)) {}
  WICK_ARG(std::string, reduction);
};

class MSELossImpl : public Module {
 public:
  explicit MSELossImpl(const MSELossOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input, const Tensor& target);
  MSELossOptions options;
};
WICK_MODULE(MSELoss);

using L1LossOptions = MSELossOptions;

class L1LossImpl : public Module {
 public:
  explicit L1LossImpl(const L1LossOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input, const Tensor& target);
  L1LossOptions options;
};
WICK_MODULE(L1Loss);

struct BCEWithLogitsLossOptions {
  WICK_ARG(Tensor, weight);
  WICK_ARG(std::string, reduction) = "mean";
  WICK_ARG(Tensor, pos_weight);
};

class BCEWithLogitsLossImpl : public Module {
 public:
  explicit BCEWithLogitsLossImpl(const BCEWithLogitsLossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target);
  BCEWithLogitsLossOptions options;
  Tensor weight, pos_weight;  // registered buffers when given
};
WICK_MODULE(BCEWithLogitsLoss);

struct BCELossOptions {
  WICK_ARG(Tensor, weight);
  WICK_ARG(std::string, reduction) = "mean";
};

// Binary cross entropy of probabilities (functional::binary_cross_entropy).
class BCELossImpl : public Module {
 public:
  explicit BCELossImpl(const BCELossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target);
  BCELossOptions options;
  Tensor weight;  // the registered buffer when given
};
WICK_MODULE(BCELoss);

struct SmoothL1LossOptions {
  WICK_ARG(std::string, reduction) = "mean";
  WICK_ARG(double, beta) = 1.0;
};

// functional::smooth_l1_loss.
class SmoothL1LossImpl : public Module {
 public:
  explicit SmoothL1LossImpl(const SmoothL1LossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target);
  SmoothL1LossOptions options;
};
WICK_MODULE(SmoothL1Loss);

struct HuberLossOptions {
  // HuberLossOptions(wick::kSum): the enum spellings convert to their strings
  HuberLossOptions(std::string reduction = "mean") : reduction_(std::move(reduction)) {}
  WICK_ARG(std::string, reduction);
  WICK_ARG(double, delta) = 1.0;
};

// functional::huber_loss; printed HuberLoss(), as PyTorch's.
class HuberLossImpl : public Module {
 public:
  explicit HuberLossImpl(const HuberLossOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input, const Tensor& target);
  HuberLossOptions options;
};
WICK_MODULE(HuberLoss);

struct KLDivLossOptions {
  // KLDivLossOptions(wick::kBatchMean): "mean", "batchmean", "sum" or "none"
  KLDivLossOptions(std::string reduction = "mean") : reduction_(std::move(reduction)) {}
  WICK_ARG(std::string, reduction);
  WICK_ARG(bool, log_target) = false;
};

// functional::kl_div of log-probabilities input; printed KLDivLoss(), as PyTorch's.
class KLDivLossImpl : public Module {
 public:
  explicit KLDivLossImpl(const KLDivLossOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input, const Tensor& target);
  KLDivLossOptions options;
};
WICK_MODULE(KLDivLoss);

}  // namespace wick::nn
