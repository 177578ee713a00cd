// MaxPool2d, AvgPool2d, AdaptiveAvgPool2d and AdaptiveMaxPool2d over [N, C, H, W] (or [C, H, W]),
// and their 1-D forms over [N, C, L] (or [C, L]).
//
//   wick::nn::MaxPool2d pool(2);                       // kernel 2, stride 2
//   wick::nn::AdaptiveAvgPool2d gap(1);                // global average: [N, C, 1, 1]
//   wick::nn::AdaptiveMaxPool2d amp(wick::nn::AdaptiveMaxPool2dOptions({2, 3}));
//   auto [values, indices] = amp->forward_with_indices(x);   // indices into each H * W plane
#pragma once

#include <optional>
#include <tuple>

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

// Adaptive max pooling: the maximum of each of output_size windows (as adaptive_avg_pool2d's
// windows, which overlap where the sizes do not divide). forward gives the maxima;
// forward_with_indices also their indices into each input plane, as LibTorch's (Python's
// return_indices=True).
struct AdaptiveMaxPool2dOptions {
  AdaptiveMaxPool2dOptions(functional::Pair output_size) : output_size_(output_size) {}
  WICK_ARG(functional::Pair, output_size);
};

class AdaptiveMaxPool2dImpl : public Module {
 public:
  explicit AdaptiveMaxPool2dImpl(functional::Pair output_size) : options(output_size) {}
  explicit AdaptiveMaxPool2dImpl(const AdaptiveMaxPool2dOptions& options) : options(options) {}
  Tensor forward(const Tensor& x);
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& x);
  std::string extra_repr() const override;
  AdaptiveMaxPool2dOptions options;
};
WICK_MODULE(AdaptiveMaxPool2d);

struct AdaptiveMaxPool1dOptions {
  AdaptiveMaxPool1dOptions(int64_t output_size) : output_size_(output_size) {}
  WICK_ARG(int64_t, output_size);
};

class AdaptiveMaxPool1dImpl : public Module {
 public:
  explicit AdaptiveMaxPool1dImpl(int64_t output_size) : options(output_size) {}
  explicit AdaptiveMaxPool1dImpl(const AdaptiveMaxPool1dOptions& options) : options(options) {}
  Tensor forward(const Tensor& x);
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& x);
  std::string extra_repr() const override;
  AdaptiveMaxPool1dOptions options;
};
WICK_MODULE(AdaptiveMaxPool1d);

}  // namespace wick::nn
