// Bad numeric input: sizes whose arithmetic overflows, zero strides and dilations, values that
// do not fit the dtype, foreign exceptions and linspace with one step. Each failure must be the
// named wick::Error subclass, its message must start with the op the caller called (with
// PyTorch's wording where PyTorch has one) and the inputs must be unchanged.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "wick/wick.h"

using namespace wick;

namespace {

constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();

// Runs f, expects E whose message starts with "[op] " and contains text.
template <class E, class F>
void expect_error(F&& f, const std::string& op, const std::string& text = "") {
  try {
    f();
    ADD_FAILURE() << "no exception for [" << op << "]";
  } catch (const E& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("[" + op + "] ", 0), 0u) << what;
    EXPECT_NE(what.find(text), std::string::npos) << what;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type for [" << op << "]: " << e.what();
  }
}

// Same sizes and values (compared as float64, element by element).
bool same(const Tensor& a, const Tensor& b) {
  if (a.sizes() != b.sizes()) return false;
  Tensor x = a.to(kFloat64).reshape({-1}), y = b.to(kFloat64).reshape({-1});
  for (int64_t i = 0; i < x.numel(); ++i)
    if (x[i].item<double>() != y[i].item<double>()) return false;
  return true;
}

}  // namespace

TEST(BadInputSizes, FactoriesRejectOverflowingSizes) {
  expect_error<ValueError>([] { ones({kI64Max}); }, "ones", "Storage size calculation overflowed");
  expect_error<ValueError>([] { zeros({kI64Max, 2}); }, "zeros", "overflowed");
  expect_error<ValueError>([] { full({kI64Max / 2, 3}, 1.0); }, "full", "overflowed");
  expect_error<ValueError>([] { empty({int64_t(1) << 31, int64_t(1) << 31, 4}); }, "empty", "overflowed");
  expect_error<ValueError>([] { eye(int64_t(1) << 32); }, "eye", "overflowed");
  expect_error<ValueError>(
      [] {
        empty({-1, 3});
      },
      "empty", "Trying to create tensor with negative dimension -1");
  expect_error<ValueError>([] { ones({2, -5}); }, "ones", "negative dimension");
  // Possible sizes that no memory holds are the op's OutOfMemoryError.
  expect_error<OutOfMemoryError>([] { empty({int64_t(1) << 60}, kUInt8); }, "empty");
  // A zero anywhere makes the product zero, as in PyTorch.
  EXPECT_EQ(empty({0, kI64Max}).numel(), 0);
  EXPECT_EQ(empty({kI64Max, 0, kI64Max}).numel(), 0);
}

TEST(BadInputSizes, ModulesNameThemselves) {
  expect_error<ValueError>([] { nn::Linear(int64_t(1) << 62, 4); }, "Linear", "overflowed");
  expect_error<ValueError>([] { nn::Embedding(kI64Max, 3); }, "Embedding", "overflowed");
  expect_error<ValueError>([] { nn::Conv2d(nn::Conv2dOptions(1, int64_t(1) << 62, 4)); }, "Conv2d",
                           "overflowed");
}

TEST(BadInputSizes, NarrowPastTheEnd) {
  Tensor t = tensor<float>({1, 2, 3});
  expect_error<IndexError>([&] { t.narrow(0, 1, kI64Max); }, "narrow",
                           "start (1) + length (9223372036854775807) exceeds dimension size (3).");
  expect_error<IndexError>([&] { t.narrow(0, 3, 1); }, "narrow", "exceeds dimension size (3).");
  EXPECT_EQ(t.narrow(0, 1, 2).numel(), 2);
  EXPECT_EQ(t.narrow(0, 3, 0).numel(), 0);
  EXPECT_TRUE(same(t, tensor<float>({1, 2, 3})));
}

TEST(BadInputSizes, ArangeAndLinspaceCounts) {
  expect_error<ValueError>([] { arange(0.0, 1e300, 1.0); }, "arange", "invalid size, possible overflow?");
  expect_error<ValueError>([] { arange(int64_t(0), kI64Max, int64_t(1)); }, "arange", "invalid size");
  expect_error<ValueError>([] { linspace(0, 1, kI64Max); }, "linspace", "overflowed");
  expect_error<OutOfMemoryError>([] { linspace(0, 1, int64_t(1) << 58); }, "linspace");
  expect_error<OutOfMemoryError>([] { arange(int64_t(1) << 58); }, "arange");
}

TEST(BadInputSizes, LinspaceOneStepIsTheStart) {
  Tensor t = linspace(0, 1, 1, kFloat64);
  ASSERT_EQ(t.numel(), 1);
  EXPECT_EQ(t.item<double>(), 0.0);
  EXPECT_EQ(linspace(-3.5, 7, 1).item<float>(), -3.5f);
  EXPECT_EQ(linspace(0, 1, 0).numel(), 0);
  Tensor two = linspace(2, 4, 2, kFloat64);
  EXPECT_EQ(two[0].item<double>(), 2.0);
  EXPECT_EQ(two[1].item<double>(), 4.0);
}

TEST(BadInputShapeMath, ConvRejectsZeroStrideDilationKernel) {
  Tensor x = ones({1, 1, 5, 5});
  Tensor w = ones({1, 1, 3, 3});
  Tensor b;
  expect_error<ValueError>(
      [&] {
        nn::functional::conv2d(x, w, b, {0, 1});
      },
      "conv2d", "non-positive stride is not supported");
  expect_error<ValueError>(
      [&] {
        nn::functional::conv2d(x, w, b, {1, 1}, {0, 0}, {1, 0});
      },
      "conv2d", "dilation should be greater than zero");
  expect_error<ValueError>(
      [&] {
        nn::functional::conv2d(x, w, b, {1, 1}, {-1, 0});
      },
      "conv2d", "negative padding is not supported");
  expect_error<ValueError>(
      [&] {
        nn::functional::conv2d(x, ones({1, 1, 0, 3}), b);
      },
      "conv2d", "kernel size should be greater than zero");
  nn::Conv2d s0(nn::Conv2dOptions(1, 1, 3).stride(0));
  expect_error<ValueError>([&] { s0->forward(x); }, "conv2d", "non-positive stride is not supported");
  nn::Conv2d d0(nn::Conv2dOptions(1, 1, 3).dilation(0));
  expect_error<ValueError>([&] { d0->forward(x); }, "conv2d", "dilation should be greater than zero");
  EXPECT_TRUE(same(x, ones({1, 1, 5, 5})));
}

TEST(BadInputShapeMath, PoolingRejectsZeroStrideDilationKernel) {
  Tensor x = ones({1, 1, 4, 4});
  namespace F = nn::functional;
  expect_error<ValueError>(
      [&] {
        F::max_pool2d(x, {2, 2}, nn::functional::Pair{0, 1});
      },
      "max_pool2d", "stride should be greater than zero, but got dH: 0 dW: 1");
  expect_error<ValueError>(
      [&] {
        F::max_pool2d(x, {0, 2});
      },
      "max_pool2d", "kernel size should be greater than zero, but got kH: 0 kW: 2");
  expect_error<ValueError>(
      [&] {
        F::max_pool2d(x, {2, 2}, std::nullopt, {0, 0}, {0, 1});
      },
      "max_pool2d", "dilation should be greater than zero, but got dilationH: 0 dilationW: 1");
  expect_error<ValueError>(
      [&] {
        F::avg_pool2d(x, {2, 2}, nn::functional::Pair{1, 0});
      },
      "avg_pool2d", "stride should be greater than zero");
  EXPECT_TRUE(same(x, ones({1, 1, 4, 4})));
}

TEST(BadInputValues, FullAndFillCheckTheRange) {
  expect_error<ValueError>([] { full({2}, 300, kUInt8); }, "full",
                           "value cannot be converted to type uint8_t without overflow");
  expect_error<ValueError>([] { full({2}, -129, kInt8); }, "full", "int8_t without overflow");
  expect_error<ValueError>([] { full({2}, 1e10, kInt32); }, "full", "type int without overflow");
  expect_error<ValueError>([] { full({2}, std::nan(""), kInt64); }, "full", "int64_t without overflow");
  expect_error<ValueError>([] { full({2}, 70000, kFloat16); }, "full", "without overflow");
  expect_error<ValueError>([] { full({2}, 1e300, kFloat32); }, "full", "type float without overflow");
  // In range, and the two's complement wrap PyTorch allows for unsigned types.
  EXPECT_EQ(full({2}, -1, kUInt8)[0].item<int>(), 255);
  EXPECT_EQ(full({1}, 255, kUInt8).item<int>(), 255);
  EXPECT_TRUE(std::isinf(full({1}, INFINITY, kFloat32).item<float>()));
  EXPECT_TRUE(std::isnan(full({1}, NAN, kFloat16).item<float>()));

  Tensor t = tensor<int64_t>({1, 2, 3}).to(kInt16);
  expect_error<ValueError>([&] { t.fill_(40000); }, "fill_", "int16_t without overflow");
  expect_error<ValueError>([&] { t.fill_(INFINITY); }, "fill_", "without overflow");
  EXPECT_TRUE(same(t, tensor<int64_t>({1, 2, 3}).to(kInt16)));
  Tensor u = zeros({3}, kUInt8);
  expect_error<ValueError>([&] { u.fill_(256); }, "fill_", "uint8_t without overflow");
  EXPECT_TRUE(same(u, zeros({3}, kUInt8)));
}

TEST(BadInputValues, IntegralAddWithFloatingAlpha) {
  Tensor a = tensor<int64_t>({1, 2, 3});
  Tensor b = tensor<int64_t>({4, 5, 6});
  const char* msg = "For integral input tensors, argument alpha must not be a floating point number.";
  expect_error<ValueError>([&] { add(a, b, 2.5); }, "add", msg);
  expect_error<ValueError>([&] { sub(a, b, 0.5); }, "sub", msg);
  expect_error<ValueError>([&] { add(a, 1, 2.5); }, "add", msg);
  expect_error<ValueError>([&] { a.add_(b, 1.5); }, "add_", msg);
  expect_error<ValueError>([&] { a.sub_(2, 1.5); }, "sub_", msg);
  EXPECT_TRUE(same(a, tensor<int64_t>({1, 2, 3})));
  EXPECT_TRUE(same(b, tensor<int64_t>({4, 5, 6})));
  // An integral alpha is fine; a floating alpha with a floating result is fine.
  EXPECT_TRUE(same(add(a, b, 2), tensor<int64_t>({9, 12, 15})));
  EXPECT_TRUE(same(add(a.to(kFloat64), b, 0.5), tensor<double>({3, 4.5, 6})));
}

TEST(BadInputValues, ItemConversionChecked) {
  expect_error<ValueError>([] { (void)full({}, std::nan(""), kFloat64).item<int>(); }, "item",
                           "value cannot be converted to type int without overflow");
  expect_error<ValueError>([] { (void)full({}, 3e9, kFloat64).item<int>(); }, "item",
                           "type int without overflow");
  expect_error<ValueError>([] { (void)full({}, int64_t(1) << 40, kInt64).item<int>(); }, "item",
                           "type int without overflow");
  expect_error<ValueError>([] { (void)full({}, 300, kInt64).item<uint8_t>(); }, "item", "uint8_t");
  EXPECT_EQ(full({}, 2.75, kFloat64).item<int>(), 2);
  EXPECT_EQ(full({}, -7, kInt64).item<int>(), -7);
  EXPECT_TRUE(std::isnan(full({}, std::nan(""), kFloat64).item<float>()));
}

TEST(BadInputForeign, ContainerIndexOutOfRange) {
  nn::Sequential seq(nn::Linear(2, 3), nn::ReLU());
  expect_error<IndexError>([&] { (void)(*seq)[5]; }, "Sequential", "index 5 is out of range");
  expect_error<IndexError>([&] { (void)seq->ptr<nn::LinearImpl>(2); }, "Sequential",
                           "index 2 is out of range");
  EXPECT_NE((*seq)[1], nullptr);
  nn::ModuleList list(nn::Linear(2, 3));
  expect_error<IndexError>([&] { (void)(*list)[1]; }, "ModuleList", "index 1 is out of range");
  EXPECT_EQ(seq->size(), 2u);
}
