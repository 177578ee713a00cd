// More layers, as modules and as nn::functional: Hardshrink Softmin GLU Dropout1d Dropout3d
// LocalResponseNorm ChannelShuffle. Each takes LibTorch's options struct and prints as PyTorch's.
//
//   wick::nn::Sequential net(wick::nn::Conv2d(3, 8, 3), wick::nn::ChannelShuffle(2),
//                            wick::nn::LocalResponseNorm(3), wick::nn::GLU(1));
#pragma once

#include <optional>
#include <string>

#include "wick/nn/dropout.h"
#include "wick/nn/functional.h"
#include "wick/nn/module.h"
#include "wick/nn/options.h"
#include "wick/tensor.h"

namespace wick::nn {

struct HardshrinkOptions {
  HardshrinkOptions(double lambda = 0.5) : lambda_(lambda) {}
  WICK_ARG(double, lambda);
};

struct SoftminOptions {
  SoftminOptions(int64_t dim) : dim_(dim) {}
  WICK_ARG(int64_t, dim);
};

struct GLUOptions {
  GLUOptions(int64_t dim = -1) : dim_(dim) {}
  WICK_ARG(int64_t, dim);
};

using Dropout1dOptions = DropoutOptions;
using Dropout3dOptions = DropoutOptions;

struct LocalResponseNormOptions {
  LocalResponseNormOptions(int64_t size) : size_(size) {}
  WICK_ARG(int64_t, size);
  WICK_ARG(double, alpha) = 1e-4;
  WICK_ARG(double, beta) = 0.75;
  WICK_ARG(double, k) = 1.0;
};

struct ChannelShuffleOptions {
  ChannelShuffleOptions(int64_t groups) : groups_(groups) {}
  WICK_ARG(int64_t, groups);
};

namespace functional {

// x where |x| > lambda, else 0.
Tensor hardshrink(const Tensor& x, double lambda = 0.5);
using HardshrinkFuncOptions = HardshrinkOptions;
inline Tensor hardshrink(const Tensor& x, const HardshrinkFuncOptions& o) { return hardshrink(x, o.lambda()); }

// softmax(-x, dim), computed in dtype when given.
Tensor softmin(const Tensor& x, int64_t dim, std::optional<Dtype> dtype = std::nullopt);
struct SoftminFuncOptions {
  SoftminFuncOptions(int64_t dim) : dim_(dim) {}
  WICK_ARG(int64_t, dim);
  WICK_ARG(std::optional<Dtype>, dtype) = std::nullopt;
};
inline Tensor softmin(const Tensor& x, const SoftminFuncOptions& o) { return softmin(x, o.dim(), o.dtype()); }

// a * sigmoid(b), a and b the two halves of x along dim (whose size must be even).
Tensor glu(const Tensor& x, int64_t dim = -1);
using GLUFuncOptions = GLUOptions;
inline Tensor glu(const Tensor& x, const GLUFuncOptions& o) { return glu(x, o.dim()); }

// Channel dropout of [N, C, L] or [C, L] inputs (dropout1d) and of [N, C, D, H, W] or
// [C, D, H, W] ones (dropout3d): one draw per channel, kept ones scaled by 1 / (1 - p).
Tensor dropout1d(const Tensor& x, double p = 0.5, bool training = true);
Tensor dropout3d(const Tensor& x, double p = 0.5, bool training = true);
using Dropout1dFuncOptions = DropoutFuncOptions;
using Dropout3dFuncOptions = DropoutFuncOptions;
inline Tensor dropout1d(const Tensor& x, const Dropout1dFuncOptions& o) { return dropout1d(x, o.p(), o.training()); }
inline Tensor dropout3d(const Tensor& x, const Dropout3dFuncOptions& o) { return dropout3d(x, o.p(), o.training()); }

// x / (k + alpha / size * sum of x^2 over the size channels around each one)^beta, over the
// channels (dim 1) of an input of 3 or more dims; the window is zero-padded.
Tensor local_response_norm(const Tensor& x, int64_t size, double alpha = 1e-4, double beta = 0.75, double k = 1.0);
struct LocalResponseNormFuncOptions {
  LocalResponseNormFuncOptions(int64_t size) : size_(size) {}
  WICK_ARG(int64_t, size);
  WICK_ARG(double, alpha) = 1e-4;
  WICK_ARG(double, beta) = 0.75;
  WICK_ARG(double, k) = 1.0;
};
inline Tensor local_response_norm(const Tensor& x, const LocalResponseNormFuncOptions& o) {
  return local_response_norm(x, o.size(), o.alpha(), o.beta(), o.k());
}

// The channels (dim 1) of [N, C, *] split into groups and interleaved: [N, g, C/g, *]
// transposed to [N, C/g, g, *].
Tensor channel_shuffle(const Tensor& x, int64_t groups);

}  // namespace functional

}  // namespace wick::nn

// ATen's functions of these names in namespace wick, as LibTorch's torch::hardshrink,
// torch::glu and torch::channel_shuffle.
namespace wick {
using nn::functional::channel_shuffle;
using nn::functional::glu;
using nn::functional::hardshrink;
}  // namespace wick

namespace wick::nn {

// Printed Hardshrink(0.5), as PyTorch's.
class HardshrinkImpl : public Module {
 public:
  explicit HardshrinkImpl(const HardshrinkOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  HardshrinkOptions options;
};
WICK_MODULE(Hardshrink);

class SoftminImpl : public Module {
 public:
  explicit SoftminImpl(int64_t dim) : options(dim) {}
  explicit SoftminImpl(const SoftminOptions& options) : options(options) {}
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  SoftminOptions options;
};
WICK_MODULE(Softmin);

class GLUImpl : public Module {
 public:
  explicit GLUImpl(const GLUOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  GLUOptions options;
};
WICK_MODULE(GLU);

class Dropout1dImpl : public Module {
 public:
  explicit Dropout1dImpl(const Dropout1dOptions& options = {});
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  Dropout1dOptions options;
};
WICK_MODULE(Dropout1d);

class Dropout3dImpl : public Module {
 public:
  explicit Dropout3dImpl(const Dropout3dOptions& options = {});
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  Dropout3dOptions options;
};
WICK_MODULE(Dropout3d);

// Printed LocalResponseNorm(2, alpha=0.0001, beta=0.75, k=1.0), as PyTorch's.
class LocalResponseNormImpl : public Module {
 public:
  explicit LocalResponseNormImpl(const LocalResponseNormOptions& options) : options(options) {}
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  LocalResponseNormOptions options;
};
WICK_MODULE(LocalResponseNorm);

class ChannelShuffleImpl : public Module {
 public:
  explicit ChannelShuffleImpl(const ChannelShuffleOptions& options) : options(options) {}
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  ChannelShuffleOptions options;
};
WICK_MODULE(ChannelShuffle);

}  // namespace wick::nn
