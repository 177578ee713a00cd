// Dropout: in training, zeroes each element with probability p and scales the rest by
// 1 / (1 - p); in eval mode, the identity. Dropout2d drops whole channels; AlphaDropout keeps
// SELU's zero mean and unit variance (functional::alpha_dropout).
//
//   wick::nn::Dropout drop(0.2);
//   auto y = drop(x);          // drop->eval(): y == x
#pragma once

#include "wick/nn/module.h"
#include "wick/nn/options.h"

namespace wick::nn {

struct DropoutOptions {
  DropoutOptions(double p = 0.5) : p_(p) {}
  WICK_ARG(double, p);
  WICK_ARG(bool, inplace) = false;
};

class DropoutImpl : public Module {
 public:
  explicit DropoutImpl(const DropoutOptions& options = {});
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  DropoutOptions options;
};
WICK_MODULE(Dropout);

using Dropout2dOptions = DropoutOptions;

// Dropout of whole channels of [N, C, H, W] (or [C, H, W]) inputs (functional::dropout2d).
class Dropout2dImpl : public Module {
 public:
  explicit Dropout2dImpl(const Dropout2dOptions& options = {});
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  Dropout2dOptions options;
};
WICK_MODULE(Dropout2d);

using AlphaDropoutOptions = DropoutOptions;

// functional::alpha_dropout in training, the identity in eval mode.
class AlphaDropoutImpl : public Module {
 public:
  explicit AlphaDropoutImpl(const AlphaDropoutOptions& options = {});
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  AlphaDropoutOptions options;
};
WICK_MODULE(AlphaDropout);

}  // namespace wick::nn
