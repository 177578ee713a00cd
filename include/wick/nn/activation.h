// Activation layers: ReLU LeakyReLU GELU SiLU Sigmoid Tanh Softmax LogSoftmax, and Flatten.
//
//   wick::nn::Sequential net(wick::nn::Linear(4, 8), wick::nn::GELU(), wick::nn::Linear(8, 2),
//                            wick::nn::Softmax(1));
#pragma once

#include <string>

#include "wick/nn/module.h"
#include "wick/nn/options.h"

namespace wick::nn {

class ReLUImpl : public Module {
 public:
  Tensor forward(const Tensor& x);
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

class GELUImpl : public Module {
 public:
  // approximate: "none" (the erf form) or "tanh".
  explicit GELUImpl(std::string approximate = "none") : approximate(std::move(approximate)) {}
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

class SoftmaxImpl : public Module {
 public:
  explicit SoftmaxImpl(int64_t dim) : dim(dim) {}
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  int64_t dim;
};
WICK_MODULE(Softmax);

class LogSoftmaxImpl : public Module {
 public:
  explicit LogSoftmaxImpl(int64_t dim) : dim(dim) {}
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  int64_t dim;
};
WICK_MODULE(LogSoftmax);

// Flattens dims start_dim..end_dim (by default all but the batch dim).
class FlattenImpl : public Module {
 public:
  explicit FlattenImpl(int64_t start_dim = 1, int64_t end_dim = -1)
      : start_dim(start_dim), end_dim(end_dim) {}
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  int64_t start_dim, end_dim;
};
WICK_MODULE(Flatten);

}  // namespace wick::nn
