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

struct AdaptiveAvgPool2dOptions {
  AdaptiveAvgPool2dOptions(functional::Pair output_size) : output_size_(output_size) {}
  WICK_ARG(functional::Pair, output_size);
};

class AdaptiveAvgPool2dImpl : public Module {
 public:
  explicit AdaptiveAvgPool2dImpl(functional::Pair output_size) : output_size(output_size) {}
  explicit AdaptiveAvgPool2dImpl(const AdaptiveAvgPool2dOptions& options) : output_size(options.output_size()) {}
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  functional::Pair output_size;
};
WICK_MODULE(AdaptiveAvgPool2d);

// The 1-D poolings over [N, C, L] (or [C, L]).
struct MaxPool1dOptions {
  MaxPool1dOptions(int64_t kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}
  WICK_ARG(int64_t, kernel_size);
  WICK_ARG(int64_t, stride);
  WICK_ARG(int64_t, padding) = 0;
  WICK_ARG(int64_t, dilation) = 1;
  WICK_ARG(bool, ceil_mode) = false;
};

class MaxPool1dImpl : public Module {
 public:
  explicit MaxPool1dImpl(const MaxPool1dOptions& options) : options(options) {}
  explicit MaxPool1dImpl(int64_t kernel_size) : options(kernel_size) {}
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  MaxPool1dOptions options;
};
WICK_MODULE(MaxPool1d);

struct AvgPool1dOptions {
  AvgPool1dOptions(int64_t kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}
  WICK_ARG(int64_t, kernel_size);
  WICK_ARG(int64_t, stride);
  WICK_ARG(int64_t, padding) = 0;
  WICK_ARG(bool, ceil_mode) = false;
  WICK_ARG(bool, count_include_pad) = true;
};

class AvgPool1dImpl : public Module {
 public:
  explicit AvgPool1dImpl(const AvgPool1dOptions& options) : options(options) {}
  explicit AvgPool1dImpl(int64_t kernel_size) : options(kernel_size) {}
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  AvgPool1dOptions options;
};
WICK_MODULE(AvgPool1d);

struct AdaptiveAvgPool1dOptions {
  AdaptiveAvgPool1dOptions(int64_t output_size) : output_size_(output_size) {}
  WICK_ARG(int64_t, output_size);
};

class AdaptiveAvgPool1dImpl : public Module {
 public:
  explicit AdaptiveAvgPool1dImpl(int64_t output_size) : output_size(output_size) {}
  explicit AdaptiveAvgPool1dImpl(const AdaptiveAvgPool1dOptions& options) : output_size(options.output_size()) {}
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  int64_t output_size;
};
WICK_MODULE(AdaptiveAvgPool1d);

}  // namespace wick::nn
