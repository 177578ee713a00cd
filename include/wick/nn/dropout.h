// Dropout: in training, zeroes each element with probability p and scales the rest by
// 1 / (1 - p); in eval mode, the identity.
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

}  // namespace wick::nn
