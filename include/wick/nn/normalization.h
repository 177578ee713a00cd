// BatchNorm1d/2d/3d, InstanceNorm1d/2d/3d, LayerNorm, RMSNorm and GroupNorm.
//
//   wick::nn::BatchNorm2d bn(8);         // running_mean, running_var, num_batches_tracked buffers
//   auto y = bn(x);                      // training: batch statistics; bn->eval(): running ones
//   wick::nn::LayerNorm ln(std::vector<int64_t>{16});
//   wick::nn::RMSNorm rms(std::vector<int64_t>{16});    // x * rsqrt(mean(x^2) + eps) * weight
//   wick::nn::GroupNorm gn(4, 32);                      // 4 groups of 8 channels
//   wick::nn::InstanceNorm2d in(8);                     // per sample and channel; no parameters
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
using BatchNorm3dOptions = BatchNormOptions;

// The parameters and buffers BatchNorm and InstanceNorm share (PyTorch's _NormBase): weight
// and bias (ones and zeros) when affine, running_mean, running_var and num_batches_tracked
// when tracking running statistics.
class NormBaseImpl : public Module {
 public:
  void reset_running_stats();
  void reset_parameters();
  Tensor weight, bias, running_mean, running_var, num_batches_tracked;

 protected:
  NormBaseImpl(const char* name, int64_t num_features, bool affine, bool track_running_stats);
};

// Shared by BatchNorm1d, BatchNorm2d and BatchNorm3d, which check the input's rank.
class BatchNormImplBase : public NormBaseImpl {
 public:
  BatchNormImplBase(const BatchNormOptions& options, const char* name);
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;

  BatchNormOptions options;

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

class BatchNorm3dImpl : public BatchNormImplBase {
 public:
  explicit BatchNorm3dImpl(int64_t num_features) : BatchNorm3dImpl(BatchNormOptions(num_features)) {}
  explicit BatchNorm3dImpl(const BatchNormOptions& options) : BatchNormImplBase(options, "BatchNorm3d") {}

 protected:
  void check_input(const Tensor& x) const override;
};
WICK_MODULE(BatchNorm3d);

// InstanceNorm's options: BatchNorm's, with affine and track_running_stats off by default.
struct InstanceNormOptions {
  InstanceNormOptions(int64_t num_features) : num_features_(num_features) {}
  WICK_ARG(int64_t, num_features);
  WICK_ARG(double, eps) = 1e-5;
  // None: the running statistics do not move (PyTorch 2's reading; 1.13 raised TypeError).
  WICK_ARG(std::optional<double>, momentum) = 0.1;
  WICK_ARG(bool, affine) = false;
  WICK_ARG(bool, track_running_stats) = false;
};
using InstanceNorm1dOptions = InstanceNormOptions;
using InstanceNorm2dOptions = InstanceNormOptions;
using InstanceNorm3dOptions = InstanceNormOptions;

// Shared by InstanceNorm1d/2d/3d: functional::instance_norm with the batch statistics in
// training or without running ones, else the running ones. Parameters and buffers as
// BatchNorm's (weight, bias; running_mean, running_var, num_batches_tracked, which InstanceNorm
// never counts up, as PyTorch's), so a PyTorch state_dict loads. An unbatched input (one dim
// less) is normalized as a batch of one.
class InstanceNormImplBase : public NormBaseImpl {
 public:
  InstanceNormImplBase(const InstanceNormOptions& options, const char* name, int64_t spatial_dims);
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;

  InstanceNormOptions options;

 private:
  int64_t spatial_dims_;
};

class InstanceNorm1dImpl : public InstanceNormImplBase {
 public:
  explicit InstanceNorm1dImpl(int64_t num_features) : InstanceNorm1dImpl(InstanceNormOptions(num_features)) {}
  explicit InstanceNorm1dImpl(const InstanceNormOptions& options)
      : InstanceNormImplBase(options, "InstanceNorm1d", 1) {}
};
WICK_MODULE(InstanceNorm1d);

class InstanceNorm2dImpl : public InstanceNormImplBase {
 public:
  explicit InstanceNorm2dImpl(int64_t num_features) : InstanceNorm2dImpl(InstanceNormOptions(num_features)) {}
  explicit InstanceNorm2dImpl(const InstanceNormOptions& options)
      : InstanceNormImplBase(options, "InstanceNorm2d", 2) {}
};
WICK_MODULE(InstanceNorm2d);

class InstanceNorm3dImpl : public InstanceNormImplBase {
 public:
  explicit InstanceNorm3dImpl(int64_t num_features) : InstanceNorm3dImpl(InstanceNormOptions(num_features)) {}
  explicit InstanceNorm3dImpl(const InstanceNormOptions& options)
      : InstanceNormImplBase(options, "InstanceNorm3d", 3) {}
};
WICK_MODULE(InstanceNorm3d);

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
