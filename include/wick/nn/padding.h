// The 2-D padding layers: ZeroPad2d, ConstantPad2d, ReflectionPad2d and ReplicationPad2d, each
// functional::pad of the last two dims with (left, right, top, bottom), one number for all four
// or four numbers, as LibTorch's ExpandingArray<4>.
//
//   wick::nn::ZeroPad2d pad(wick::nn::ZeroPad2dOptions({1, 1, 2, 0}));
//   auto y = pad(x);  // [N, C, H, W] -> [N, C, H + 2, W + 2]; printed ZeroPad2d((1, 1, 2, 0))
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "wick/nn/module.h"
#include "wick/nn/options.h"

namespace wick::nn {

namespace detail {
// (left, right, top, bottom) from four values (ValueError naming op otherwise).
std::vector<int64_t> padding4(std::vector<int64_t> values, const char* op);
}  // namespace detail

// padding: one value for all four sides, or (left, right, top, bottom).
#define WICK_DETAIL_PAD2D_OPTIONS(Name)                                                       \
  struct Name {                                                                               \
    Name(int64_t padding) : padding_{padding, padding, padding, padding} {}                   \
    Name(std::initializer_list<int64_t> padding)                                              \
        : padding_(detail::padding4(std::vector<int64_t>(padding), #Name)) {}                 \
    Name(const std::vector<int64_t>& padding) : padding_(detail::padding4(padding, #Name)) {} \
    WICK_ARG(std::vector<int64_t>, padding);                                                  \
  }
WICK_DETAIL_PAD2D_OPTIONS(ZeroPad2dOptions);
WICK_DETAIL_PAD2D_OPTIONS(ReflectionPad2dOptions);
WICK_DETAIL_PAD2D_OPTIONS(ReplicationPad2dOptions);
#undef WICK_DETAIL_PAD2D_OPTIONS

struct ConstantPad2dOptions {
  ConstantPad2dOptions(int64_t padding, double value)
      : padding_{padding, padding, padding, padding}, value_(value) {}
  ConstantPad2dOptions(std::initializer_list<int64_t> padding, double value)
      : padding_(detail::padding4(std::vector<int64_t>(padding), "ConstantPad2dOptions")), value_(value) {}
  ConstantPad2dOptions(const std::vector<int64_t>& padding, double value)
      : padding_(detail::padding4(padding, "ConstantPad2dOptions")), value_(value) {}
  WICK_ARG(std::vector<int64_t>, padding);
  WICK_ARG(double, value);
};

// Pads with zeros (negative padding crops); printed ZeroPad2d((l, r, t, b)).
class ZeroPad2dImpl : public Module {
 public:
  explicit ZeroPad2dImpl(const ZeroPad2dOptions& options);
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  ZeroPad2dOptions options;
};
WICK_MODULE(ZeroPad2d);

// Pads with value; printed ConstantPad2d(padding=(l, r, t, b), value=v).
class ConstantPad2dImpl : public Module {
 public:
  ConstantPad2dImpl(int64_t padding, double value)
      : ConstantPad2dImpl(ConstantPad2dOptions(padding, value)) {}
  ConstantPad2dImpl(const std::vector<int64_t>& padding, double value)
      : ConstantPad2dImpl(ConstantPad2dOptions(padding, value)) {}
  explicit ConstantPad2dImpl(const ConstantPad2dOptions& options);
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  ConstantPad2dOptions options;
};
WICK_MODULE(ConstantPad2d);

// Mirrors the input about its edges (each pad less than the dim's size), on [C, H, W] or
// [N, C, H, W]; printed ReflectionPad2d((l, r, t, b)).
class ReflectionPad2dImpl : public Module {
 public:
  explicit ReflectionPad2dImpl(const ReflectionPad2dOptions& options);
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  ReflectionPad2dOptions options;
};
WICK_MODULE(ReflectionPad2d);

// Repeats the edge values, on [C, H, W] or [N, C, H, W]; printed ReplicationPad2d((l, r, t, b)).
class ReplicationPad2dImpl : public Module {
 public:
  explicit ReplicationPad2dImpl(const ReplicationPad2dOptions& options);
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  ReplicationPad2dOptions options;
};
WICK_MODULE(ReplicationPad2d);

}  // namespace wick::nn
