// Activation layers: ReLU LeakyReLU GELU SiLU Sigmoid Tanh Softmax LogSoftmax ELU SELU CELU
// Softplus Hardtanh ReLU6 PReLU Mish Hardswish Hardsigmoid LogSigmoid Softsign Tanhshrink
// Threshold Softmax2d, and Flatten and Unflatten. Each takes LibTorch's options struct too
// (nn::ReLU(nn::ReLUOptions(true)), nn::Softmax(nn::SoftmaxOptions(1))); inplace gives the same
// values as out of place.
//
//   wick::nn::Sequential net(wick::nn::Linear(4, 8), wick::nn::GELU(), wick::nn::Linear(8, 2),
//                            wick::nn::Softmax(1));
#pragma once

#include <string>
#include <vector>

#include "wick/nn/module.h"
#include "wick/nn/options.h"

namespace wick::nn {

struct ReLUOptions {
  ReLUOptions(bool inplace = false) : inplace_(inplace) {}
  WICK_ARG(bool, inplace);
};

class ReLUImpl : public Module {
 public:
  explicit ReLUImpl(const ReLUOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  ReLUOptions options;
};
WICK_MODULE(ReLU);

struct LeakyReLUOptions {
  LeakyReLUOptions(double negative_slope = 0.01) : negative_slope_(negative_slope) {}
  WICK_ARG(double, negative_slope);
  WICK_ARG(bool, inplace) = false;
};

// x where x > 0, else negative_slope * x (functional::leaky_relu).
class LeakyReLUImpl : public Module {
 public:
  explicit LeakyReLUImpl(const LeakyReLUOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  LeakyReLUOptions options;
};
WICK_MODULE(LeakyReLU);

struct GELUOptions {
  WICK_ARG(std::string, approximate) = "none";
};

class GELUImpl : public Module {
 public:
  // approximate: "none" (the erf form) or "tanh".
  explicit GELUImpl(std::string approximate = "none") : approximate(std::move(approximate)) {}
  explicit GELUImpl(const GELUOptions& options) : approximate(options.approximate()) {}
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  std::string approximate;
};
WICK_MODULE(GELU);

class SiLUImpl : public Module {
 public:
  Tensor forward(const Tensor& x);
};
WICK_MODULE(SiLU);

class SigmoidImpl : public Module {
 public:
  Tensor forward(const Tensor& x);
};
WICK_MODULE(Sigmoid);

class TanhImpl : public Module {
 public:
  Tensor forward(const Tensor& x);
};
WICK_MODULE(Tanh);

struct SoftmaxOptions {
  SoftmaxOptions(int64_t dim) : dim_(dim) {}
  WICK_ARG(int64_t, dim);
};
using LogSoftmaxOptions = SoftmaxOptions;

class SoftmaxImpl : public Module {
 public:
  explicit SoftmaxImpl(int64_t dim) : dim(dim) {}
  explicit SoftmaxImpl(const SoftmaxOptions& options) : dim(options.dim()) {}
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  int64_t dim;
};
WICK_MODULE(Softmax);

class LogSoftmaxImpl : public Module {
 public:
  explicit LogSoftmaxImpl(int64_t dim) : dim(dim) {}
  explicit LogSoftmaxImpl(const SoftmaxOptions& options) : dim(options.dim()) {}
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  int64_t dim;
};
WICK_MODULE(LogSoftmax);

struct FlattenOptions {
  WICK_ARG(int64_t, start_dim) = 1;
  WICK_ARG(int64_t, end_dim) = -1;
};

// Flattens dims start_dim..end_dim (by default all but the batch dim).
class FlattenImpl : public Module {
 public:
  explicit FlattenImpl(int64_t start_dim = 1, int64_t end_dim = -1)
      : start_dim(start_dim), end_dim(end_dim) {}
  explicit FlattenImpl(const FlattenOptions& options) : start_dim(options.start_dim()), end_dim(options.end_dim()) {}
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  int64_t start_dim, end_dim;
};
WICK_MODULE(Flatten);

struct UnflattenOptions {
  UnflattenOptions(int64_t dim, std::vector<int64_t> sizes) : dim_(dim), sizes_(std::move(sizes)) {}
  WICK_ARG(int64_t, dim);
  WICK_ARG(std::vector<int64_t>, sizes);
};

// Splits dim into sizes (one may be -1), a view (wick::unflatten); Flatten's inverse.
class UnflattenImpl : public Module {
 public:
  UnflattenImpl(int64_t dim, std::vector<int64_t> sizes) : options(dim, std::move(sizes)) {}
  explicit UnflattenImpl(const UnflattenOptions& options) : options(options) {}
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  UnflattenOptions options;
};
WICK_MODULE(Unflatten);

// softmax over the channels (dim -3) of [N, C, H, W] or [C, H, W] input.
class Softmax2dImpl : public Module {
 public:
  Tensor forward(const Tensor& x);
};
WICK_MODULE(Softmax2d);

// ---- more activations (functional:: forms in wick/nn/functional.h, nodes named as PyTorch's)

struct ELUOptions {
  WICK_ARG(double, alpha) = 1.0;
  WICK_ARG(bool, inplace) = false;
};
// x where x > 0, else alpha (exp(x) - 1).
class ELUImpl : public Module {
 public:
  explicit ELUImpl(const ELUOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  ELUOptions options;
};
WICK_MODULE(ELU);

struct SELUOptions {
  SELUOptions(bool inplace = false) : inplace_(inplace) {}
  WICK_ARG(bool, inplace);
};
// scale * elu(x, alpha) with SELU's fixed constants.
class SELUImpl : public Module {
 public:
  explicit SELUImpl(const SELUOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  SELUOptions options;
};
WICK_MODULE(SELU);

struct CELUOptions {
  WICK_ARG(double, alpha) = 1.0;
  WICK_ARG(bool, inplace) = false;
};
// x where x > 0, else alpha (exp(x / alpha) - 1).
class CELUImpl : public Module {
 public:
  explicit CELUImpl(const CELUOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  CELUOptions options;
};
WICK_MODULE(CELU);

struct SoftplusOptions {
  WICK_ARG(double, beta) = 1.0;
  WICK_ARG(double, threshold) = 20.0;
};
// log(1 + exp(beta x)) / beta, x itself where beta x > threshold.
class SoftplusImpl : public Module {
 public:
  explicit SoftplusImpl(const SoftplusOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  SoftplusOptions options;
};
WICK_MODULE(Softplus);

struct HardtanhOptions {
  WICK_ARG(double, min_val) = -1.0;
  WICK_ARG(double, max_val) = 1.0;
  WICK_ARG(bool, inplace) = false;
};
// x clamped to [min_val, max_val].
class HardtanhImpl : public Module {
 public:
  explicit HardtanhImpl(const HardtanhOptions& options = {});
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  HardtanhOptions options;
};
WICK_MODULE(Hardtanh);

struct ReLU6Options {
  ReLU6Options(bool inplace = false) : inplace_(inplace) {}
  WICK_ARG(bool, inplace);
};
// x clamped to [0, 6].
class ReLU6Impl : public Module {
 public:
  explicit ReLU6Impl(const ReLU6Options& options = {}) : options(options) {}
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  ReLU6Options options;
};
WICK_MODULE(ReLU6);

struct PReLUOptions {
  WICK_ARG(int64_t, num_parameters) = 1;
  WICK_ARG(double, init) = 0.25;
};
// x where x > 0, else weight x: one learned slope, or one per channel (dim 1).
class PReLUImpl : public Module {
 public:
  explicit PReLUImpl(const PReLUOptions& options = {});
  Tensor forward(const Tensor& x);
  void reset_parameters();
  std::string extra_repr() const override;
  PReLUOptions options;
  Tensor weight;
};
WICK_MODULE(PReLU);

struct ThresholdOptions {
  ThresholdOptions(double threshold, double value) : threshold_(threshold), value_(value) {}
  WICK_ARG(double, threshold);
  WICK_ARG(double, value);
  WICK_ARG(bool, inplace) = false;
};
// x where x > threshold, else value.
class ThresholdImpl : public Module {
 public:
  ThresholdImpl(double threshold, double value) : options(threshold, value) {}
  explicit ThresholdImpl(const ThresholdOptions& options) : options(options) {}
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  ThresholdOptions options;
};
WICK_MODULE(Threshold);

// The activations without options.
#define WICK_DETAIL_PLAIN_ACTIVATION(Name)     \
  class Name##Impl : public Module {           \
   public:                                     \
    Tensor forward(const Tensor& x);           \
  };                                           \
  WICK_MODULE(Name)
WICK_DETAIL_PLAIN_ACTIVATION(Mish);         // x tanh(softplus(x))
WICK_DETAIL_PLAIN_ACTIVATION(Hardswish);    // x relu6(x + 3) / 6
WICK_DETAIL_PLAIN_ACTIVATION(Hardsigmoid);  // relu6(x + 3) / 6
WICK_DETAIL_PLAIN_ACTIVATION(LogSigmoid);   // log(sigmoid(x))
WICK_DETAIL_PLAIN_ACTIVATION(Softsign);     // x / (1 + |x|)
WICK_DETAIL_PLAIN_ACTIVATION(Tanhshrink);   // x - tanh(x)
#undef WICK_DETAIL_PLAIN_ACTIVATION

}  // namespace wick::nn
