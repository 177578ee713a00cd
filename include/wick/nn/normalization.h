// BatchNorm1d, BatchNorm2d, LayerNorm, RMSNorm and GroupNorm.
//
//   wick::nn::BatchNorm2d bn(8);         // running_mean, running_var, num_batches_tracked buffers
//   auto y = bn(x);                      // training: batch statistics; bn->eval(): running ones
//   wick::nn::LayerNorm ln(std::vector<int64_t>{16});
//   wick::nn::RMSNorm rms(std::vector<int64_t>{16});    // x * rsqrt(mean(x^2) + eps) * weight
//   wick::nn::GroupNorm gn(4, 32);                      // 4 groups of 8 channels
#pragma once

#include <optional>
#include <vector>

#include "wick/nn/module.h"
#include "wick/nn/options.h"

namespace wick::nn {

struct BatchNormOptions {
  BatchNormOptions(int64_t num_features) : num_features_(num_features) {}
  WICK_ARG(int64_t, num_features);
  WICK_ARG(double, eps) = 1e-5;
  // None: a cumulative moving average (running stats weigh every batch alike).
  WICK_ARG(std::optional<double>, momentum) = 0.1;
  WICK_ARG(bool, affine) = true;
  WICK_ARG(bool, track_running_stats) = true;
};
// LibTorch's names of the same options.
using BatchNorm1dOptions = BatchNormOptions;
using BatchNorm2dOptions = BatchNormOptions;

// Shared by BatchNorm1d and BatchNorm2d; dims is the input rank accepted besides 2 (1d).
class BatchNormImplBase : public Module {
 public:
  BatchNormImplBase(const BatchNormOptions& options, const char* name);
  Tensor forward(const Tensor& x);
  void reset_running_stats();
  void reset_parameters();
  std::string extra_repr() const override;

  BatchNormOptions options;
  Tensor weight, bias, running_mean, running_var, num_batches_tracked;

 protected:
  virtual void check_input(const Tensor& x) const = 0;
};

class BatchNorm1dImpl : public BatchNormImplBase {
 public:
  explicit BatchNorm1dImpl(int64_t num_features) : BatchNorm1dImpl(BatchNormOptions(num_features)) {}
  explicit BatchNorm1dImpl(const BatchNormOptions& options) : BatchNormImplBase(options, "BatchNorm1d") {}

 protected:
  void check_input(const Tensor& x) const override;
};
WICK_MODULE(BatchNorm1d);

class BatchNorm2dImpl : public BatchNormImplBase {
 public:
  explicit BatchNorm2dImpl(int64_t num_features) : BatchNorm2dImpl(BatchNormOptions(num_features)) {}
  explicit BatchNorm2dImpl(const BatchNormOptions& options) : BatchNormImplBase(options, "BatchNorm2d") {}

 protected:
  void check_input(const Tensor& x) const override;
};
WICK_MODULE(BatchNorm2d);

struct LayerNormOptions {
  LayerNormOptions(std::vector<int64_t> normalized_shape) : normalized_shape_(std::move(normalized_shape)) {}
  WICK_ARG(std::vector<int64_t>, normalized_shape);
  WICK_ARG(double, eps) = 1e-5;
  WICK_ARG(bool, elementwise_affine) = true;
  WICK_ARG(bool, bias) = true;
};

class LayerNormImpl : public Module {
 public:
  explicit LayerNormImpl(std::vector<int64_t> normalized_shape)
      : LayerNormImpl(LayerNormOptions(std::move(normalized_shape))) {}
  explicit LayerNormImpl(const LayerNormOptions& options);
  Tensor forward(const Tensor& x);
  void reset_parameters();
  std::string extra_repr() const override;
  LayerNormOptions options;
  Tensor weight, bias;
};
WICK_MODULE(LayerNorm);

struct RMSNormOptions {
  RMSNormOptions(std::vector<int64_t> normalized_shape) : normalized_shape_(std::move(normalized_shape)) {}
  WICK_ARG(std::vector<int64_t>, normalized_shape);
  // Unset: the machine epsilon of the input's computation type (float32 for 16-bit floats).
  WICK_ARG(std::optional<double>, eps);
  WICK_ARG(bool, elementwise_affine) = true;
};

class RMSNormImpl : public Module {
 public:
  explicit RMSNormImpl(std::vector<int64_t> normalized_shape)
      : RMSNormImpl(RMSNormOptions(std::move(normalized_shape))) {}
  explicit RMSNormImpl(const RMSNormOptions& options);
  Tensor forward(const Tensor& x);
  void reset_parameters();
  std::string extra_repr() const override;
  RMSNormOptions options;
  Tensor weight;
};
WICK_MODULE(RMSNorm);

struct GroupNormOptions {
  GroupNormOptions(int64_t num_groups, int64_t num_channels) : num_groups_(num_groups), num_channels_(num_channels) {}
  WICK_ARG(int64_t, num_groups);
  WICK_ARG(int64_t, num_channels);
  WICK_ARG(double, eps) = 1e-5;
  WICK_ARG(bool, affine) = true;
};

// Normalizes [N, C, *] over each group of C / num_groups channels (and all of *).
class GroupNormImpl : public Module {
 public:
  GroupNormImpl(int64_t num_groups, int64_t num_channels)
      : GroupNormImpl(GroupNormOptions(num_groups, num_channels)) {}
  explicit GroupNormImpl(const GroupNormOptions& options);
  Tensor forward(const Tensor& x);
  void reset_parameters();
  std::string extra_repr() const override;
  GroupNormOptions options;
  Tensor weight, bias;
};
WICK_MODULE(GroupNorm);

}  // namespace wick::nn
