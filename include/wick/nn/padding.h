// The padding layers: ZeroPad, ConstantPad, ReflectionPad and ReplicationPad in 1-D, 2-D and
// 3-D, each functional::pad of the last one, two or three dims with (left, right), (left, right,
// top, bottom) or (left, right, top, bottom, front, back): one number for every side or one per
// side, as LibTorch's ExpandingArray<2>, <4> and <6>.
//
//   wick::nn::ZeroPad2d pad(wick::nn::ZeroPad2dOptions({1, 1, 2, 0}));
//   auto y = pad(x);  // [N, C, H, W] -> [N, C, H + 2, W + 2]; printed ZeroPad2d((1, 1, 2, 0))
//   wick::nn::ReflectionPad1d mirror(2);   // [N, C, L] -> [N, C, L + 4]; printed ReflectionPad1d((2, 2))
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
// n (2 or 6) values from one value or n values (ValueError naming op otherwise).
std::vector<int64_t> padding_n(std::vector<int64_t> values, size_t n, const char* op);
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

// ---- 1-D (last dim: left, right) and 3-D (last three dims: left, right, top, bottom, front,
// back) forms of the layers above; reflect and replicate take [C, L] or [N, C, L] (1-D),
// [C, D, H, W] or [N, C, D, H, W] (3-D).

// padding: one value for every side, or n values (2: left, right; 6: left, right, top,
// bottom, front, back).
#define WICK_DETAIL_PADN_OPTIONS(Name, n)                                                         \
  struct Name {                                                                                   \
    Name(int64_t padding) : padding_(size_t(n), padding) {}                                       \
    Name(std::initializer_list<int64_t> padding)                                                  \
        : padding_(detail::padding_n(std::vector<int64_t>(padding), n, #Name)) {}                 \
    Name(const std::vector<int64_t>& padding) : padding_(detail::padding_n(padding, n, #Name)) {} \
    WICK_ARG(std::vector<int64_t>, padding);                                                      \
  }
WICK_DETAIL_PADN_OPTIONS(ZeroPad1dOptions, 2);
WICK_DETAIL_PADN_OPTIONS(ReflectionPad1dOptions, 2);
WICK_DETAIL_PADN_OPTIONS(ReplicationPad1dOptions, 2);
WICK_DETAIL_PADN_OPTIONS(ZeroPad3dOptions, 6);
WICK_DETAIL_PADN_OPTIONS(ReflectionPad3dOptions, 6);
WICK_DETAIL_PADN_OPTIONS(ReplicationPad3dOptions, 6);
#undef WICK_DETAIL_PADN_OPTIONS

#define WICK_DETAIL_CONSTANT_PADN_OPTIONS(Name, n)                                                              \
  struct Name {                                                                                                 \
    Name(int64_t padding, double value) : padding_(size_t(n), padding), value_(value) {}                        \
    Name(std::initializer_list<int64_t> padding, double value)                                                  \
        : padding_(detail::padding_n(std::vector<int64_t>(padding), n, #Name)), value_(value) {}                \
    Name(const std::vector<int64_t>& padding, double value)                                                     \
        : padding_(detail::padding_n(padding, n, #Name)), value_(value) {}                                      \
    WICK_ARG(std::vector<int64_t>, padding);                                                                    \
    WICK_ARG(double, value);                                                                                    \
  }
WICK_DETAIL_CONSTANT_PADN_OPTIONS(ConstantPad1dOptions, 2);
WICK_DETAIL_CONSTANT_PADN_OPTIONS(ConstantPad3dOptions, 6);
#undef WICK_DETAIL_CONSTANT_PADN_OPTIONS

// One layer: its options and forward; printed Name((l, r, ...)).
#define WICK_DETAIL_PAD_LAYER(Name)                       \
  class Name##Impl : public Module {                      \
   public:                                                \
    explicit Name##Impl(const Name##Options& options);    \
    Tensor forward(const Tensor& x);                      \
    std::string extra_repr() const override;              \
    Name##Options options;                                \
  };                                                      \
  WICK_MODULE(Name)
// Pads with zeros (negative padding crops).
WICK_DETAIL_PAD_LAYER(ZeroPad1d);
WICK_DETAIL_PAD_LAYER(ZeroPad3d);
// Mirrors the input about its edges (each pad less than the dim's size).
WICK_DETAIL_PAD_LAYER(ReflectionPad1d);
WICK_DETAIL_PAD_LAYER(ReflectionPad3d);
// Repeats the edge values.
WICK_DETAIL_PAD_LAYER(ReplicationPad1d);
WICK_DETAIL_PAD_LAYER(ReplicationPad3d);
#undef WICK_DETAIL_PAD_LAYER

// Pads with value; printed ConstantPad1d(padding=(l, r), value=v).
#define WICK_DETAIL_CONSTANT_PAD_LAYER(Name)                                                                       \
  class Name##Impl : public Module {                                                                               \
   public:                                                                                                         \
    Name##Impl(int64_t padding, double value) : Name##Impl(Name##Options(padding, value)) {}                       \
    Name##Impl(const std::vector<int64_t>& padding, double value) : Name##Impl(Name##Options(padding, value)) {}   \
    explicit Name##Impl(const Name##Options& options);                                                             \
    Tensor forward(const Tensor& x);                                                                               \
    std::string extra_repr() const override;                                                                       \
    Name##Options options;                                                                                         \
  };                                                                                                               \
  WICK_MODULE(Name)
WICK_DETAIL_CONSTANT_PAD_LAYER(ConstantPad1d);
WICK_DETAIL_CONSTANT_PAD_LAYER(ConstantPad3d);
#undef WICK_DETAIL_CONSTANT_PAD_LAYER

}  // namespace wick::nn
