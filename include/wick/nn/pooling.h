// MaxPool2d, AvgPool2d and AdaptiveAvgPool2d over [N, C, H, W] (or [C, H, W]).
//
//   wick::nn::MaxPool2d pool(2);                       // kernel 2, stride 2
//   wick::nn::AdaptiveAvgPool2d gap(1);                // global average: [N, C, 1, 1]
#pragma once

#include <optional>

#include "wick/nn/functional.h"
#include "wick/nn/module.h"
#include "wick/nn/options.h"

namespace wick::nn {

struct MaxPool2dOptions {
  MaxPool2dOptions(functional::Pair kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}
  WICK_ARG(functional::Pair, kernel_size);
  WICK_ARG(functional::Pair, stride);
  WICK_ARG(functional::Pair, padding) = 0;
  WICK_ARG(functional::Pair, dilation) = 1;
  WICK_ARG(bool, ceil_mode) = false;
};

class MaxPool2dImpl : public Module {
 public:
  explicit MaxPool2dImpl(const MaxPool2dOptions& options) : options(options) {}
  explicit MaxPool2dImpl(functional::Pair kernel_size) : options(kernel_size) {}
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  MaxPool2dOptions options;
};
WICK_MODULE(MaxPool2d);

struct AvgPool2dOptions {
  AvgPool2dOptions(functional::Pair kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}
  WICK_ARG(functional::Pair, kernel_size);
  WICK_ARG(functional::Pair, stride);
  WICK_ARG(functional::Pair, padding) = 0;
  WICK_ARG(bool, ceil_mode) = false;
  WICK_ARG(bool, count_include_pad) = true;
};

class AvgPool2dImpl : public Module {
 public:
  explicit AvgPool2dImpl(const AvgPool2dOptions& options) : options(options) {}
  explicit AvgPool2dImpl(functional::Pair kernel_size) : options(kernel_size) {}
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  AvgPool2dOptions options;
};
WICK_MODULE(AvgPool2d);

class AdaptiveAvgPool2dImpl : public Module {
 public:
  explicit AdaptiveAvgPool2dImpl(functional::Pair output_size) : output_size(output_size) {}
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  functional::Pair output_size;
};
WICK_MODULE(AdaptiveAvgPool2d);

}  // namespace wick::nn
