// The logical ops (logical_and/or/xor/not) and the bitwise ops (bitwise_and/or/xor/not, the
// shifts, & | ^ ~ &= |= ^=): values against loops over int64/double on the host, every dtype
// each op takes, broadcast and non-contiguous operands, PyTorch's promotion and shift rules,
// the errors PyTorch raises, on every device present.
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "../nn/nn_test_util.h"
#include "wick/wick.h"

using namespace wick;
using wick::testing::error_of;
using wick::testing::names;

namespace {

std::vector<double> values(const Tensor& t) { return t.cpu().to(kFloat64).contiguous().to_vector<double>(); }

const std::vector<Dtype> kIntegral = {kBool, kUInt8, kInt8, kInt16, kInt32, kInt64};
const std::vector<Dtype> kAll = {kBool,    kUInt8,    kInt8,    kInt16,   kInt32,
                                 kInt64,   kFloat16,  kBFloat16, kFloat32, kFloat64};

int bits(Dtype d) {
  switch (d) {
    case kBool: return 1;
    case kUInt8:
    case kInt8: return 8;
    case kInt16: return 16;
    case kInt32: return 32;
    default: return 64;
  }
}

// v wrapped into dtype d's range, as a two's-complement store of d would keep it.
int64_t wrap(int64_t v, Dtype d) {
  if (d == kBool) return v != 0;
  if (d == kInt64) return v;
  const int n = bits(d);
  const uint64_t mask = (uint64_t(1) << n) - 1;
  uint64_t u = uint64_t(v) & mask;
  if (d != kUInt8 && (u >> (n - 1))) return int64_t(u | ~mask);  // signed: sign-extend
  return int64_t(u);
}

class LogicalBitwise : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override {
    if (GetParam().is_cuda() && !cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  }
  Device dev() const { return GetParam(); }
  // Small integers with zeros among them, in dtype d on the device, shaped as sizes.
  Tensor make(std::vector<int64_t> sizes, Dtype d, unsigned seed, int lo = -3, int hi = 3) const {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> u(lo, hi);
    int64_t n = 1;
    for (auto s : sizes) n *= s;
    std::vector<double> v(n);
    for (auto& x : v) x = d == kBool ? double(u(rng) > 0) : (d == kUInt8 ? double(std::abs(u(rng))) : u(rng));
    return tensor(v, TensorOptions(kFloat64)).reshape(sizes).to(dev(), d);
  }
};

// ---- logical ops

// a [3, 4] (transposed view of [4, 3]: not contiguous) op b [4] (broadcast), for every pair of dtypes.
TEST_P(LogicalBitwise, LogicalOpsOfEveryDtypeBroadcastAndNonContiguous) {
  using F = std::function<bool(bool, bool)>;
  const std::vector<std::pair<std::function<Tensor(const Tensor&, const Tensor&)>, F>> ops = {
      {[](const Tensor& a, const Tensor& b) { return logical_and(a, b); }, [](bool x, bool y) { return x && y; }},
      {[](const Tensor& a, const Tensor& b) { return a.logical_or(b); }, [](bool x, bool y) { return x || y; }},
      {[](const Tensor& a, const Tensor& b) { return logical_xor(a, b); }, [](bool x, bool y) { return x != y; }},
  };
  for (Dtype da : kAll) {
    for (Dtype db : {kBool, kInt32, kFloat32, da}) {
      Tensor a = make({4, 3}, da, 1).t();
      Tensor b = make({4}, db, 2);
      ASSERT_FALSE(a.is_contiguous());
      auto va = values(a), vb = values(b);
      for (auto& [op, ref] : ops) {
        Tensor r = op(a, b);
        EXPECT_EQ(r.dtype(), kBool);
        EXPECT_EQ(r.sizes().vec(), (std::vector<int64_t>{3, 4}));
        auto vr = values(r);
        for (int i = 0; i < 3; ++i)
          for (int j = 0; j < 4; ++j)
            EXPECT_EQ(vr[i * 4 + j], double(ref(va[i * 4 + j] != 0, vb[j] != 0))) << da << " " << db;
      }
    }
  }
}

TEST_P(LogicalBitwise, LogicalNotAndNan) {
  const double nan = std::nan("");
  Tensor x = tensor({0.0, -0.0, 1.5, nan, -2.0}, TensorOptions(kFloat64)).to(dev(), kFloat32);
  EXPECT_EQ(values(logical_not(x)), (std::vector<double>{1, 1, 0, 0, 0}));
  EXPECT_EQ(logical_not(x).dtype(), kBool);
  // NaN is true, -0.0 false
  Tensor one = ones({5}, TensorOptions(kFloat32).device(dev()));
  EXPECT_EQ(values(x.logical_and(one)), (std::vector<double>{0, 0, 1, 1, 1}));
  for (Dtype d : kAll) {
    Tensor t = make({2, 5}, d, 3).t();
    auto v = values(t), r = values(t.logical_not());
    for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(r[i], double(v[i] == 0)) << d;
  }
}

TEST_P(LogicalBitwise, LogicalInPlaceKeepsTheDtype) {
  Tensor a = make({2, 3}, kFloat32, 4), b = make({3}, kInt64, 5);
  auto va = values(a), vb = values(b);
  Tensor& r = a.logical_or_(b);
  EXPECT_TRUE(r.is_same(a));
  EXPECT_EQ(a.dtype(), kFloat32);
  auto vr = values(a);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_EQ(vr[i * 3 + j], double(va[i * 3 + j] != 0 || vb[j] != 0));
  Tensor c = make({4}, kInt16, 6);
  auto vc = values(c);
  c.logical_not_();
  EXPECT_EQ(c.dtype(), kInt16);
  for (size_t i = 0; i < vc.size(); ++i) EXPECT_EQ(values(c)[i], double(vc[i] == 0));
  // The broadcast shape must be self's.
  Tensor small = make({3}, kInt32, 7), big = make({2, 3}, kInt32, 8);
  EXPECT_TRUE(names([&] { small.logical_and_(big); }, "logical_and_")) << error_of([&] { small.logical_and_(big); });
}

TEST_P(LogicalBitwise, LogicalResultsDoNotRequireGrad) {
  Tensor w = make({3}, kFloat32, 9).requires_grad_();
  EXPECT_FALSE(logical_and(w, w).requires_grad());
  EXPECT_FALSE(logical_not(w).requires_grad());
  EXPECT_TRUE(names([&] { w.logical_not_(); }, "logical_not_"));  // a leaf that requires grad
}

// ---- bitwise ops

// A reference of a op b for the values of dtype d (x, y already in d's range).
int64_t bitwise_ref(const std::string& op, int64_t x, int64_t y, Dtype d) {
  if (op == "and") return wrap(x & y, d);
  if (op == "or") return wrap(x | y, d);
  if (op == "xor") return wrap(x ^ y, d);
  const int n = bits(d);
  const bool is_signed = d != kUInt8;
  // PyTorch: a count below 0 (read as signed) or at least the width shifts everything out.
  const int64_t count = wrap(y, d == kUInt8 ? kInt8 : d);
  if (op == "lshift") {
    if (count < 0 || count >= n) return 0;
    return wrap(int64_t(uint64_t(x) << count), d);
  }
  // rshift: an arithmetic shift, by at most width - 1 for signed dtypes
  if (count < 0 || count >= n - (is_signed ? 1 : 0)) return is_signed ? (x < 0 ? -1 : 0) : 0;
  return x >> count;
}

TEST_P(LogicalBitwise, BitwiseOpsOfEveryIntegralDtype) {
  const std::vector<std::pair<std::string, std::function<Tensor(const Tensor&, const Tensor&)>>> ops = {
      {"and", [](const Tensor& a, const Tensor& b) { return a & b; }},
      {"or", [](const Tensor& a, const Tensor& b) { return bitwise_or(a, b); }},
      {"xor", [](const Tensor& a, const Tensor& b) { return a.bitwise_xor(b); }},
      {"lshift", [](const Tensor& a, const Tensor& b) { return bitwise_left_shift(a, b); }},
      {"rshift", [](const Tensor& a, const Tensor& b) { return a.bitwise_right_shift(b); }},
  };
  for (Dtype d : kIntegral) {
    Tensor a = make({5, 3}, d, 10, -100, 100).t();  // non-contiguous [3, 5]
    Tensor b = make({5}, d, 11, -2, bits(d) + 2);     // broadcast, shift counts out of range too
    auto va = values(a), vb = values(b);
    for (auto& [name, op] : ops) {
      if (d == kBool && (name == "lshift" || name == "rshift")) continue;
      Tensor r = op(a, b);
      EXPECT_EQ(r.dtype(), d);
      auto vr = values(r);
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 5; ++j)
          EXPECT_EQ(vr[i * 5 + j], double(bitwise_ref(name, int64_t(va[i * 5 + j]), int64_t(vb[j]), d)))
              << name << " " << d << " " << va[i * 5 + j] << " " << vb[j];
    }
    Tensor n = ~a;
    auto vn = values(n);
    for (size_t i = 0; i < va.size(); ++i)
      EXPECT_EQ(vn[i], d == kBool ? double(va[i] == 0) : double(wrap(~int64_t(va[i]), d))) << d;
  }
}

TEST_P(LogicalBitwise, ShiftsAtTheEdges) {
  // int8: -128 >> 9 is the sign's fill, 1 << 8 and 1 << -1 are 0, 64 << 1 wraps to -128.
  Tensor a = tensor({-128, -128, 1, 1, 64, 5}, TensorOptions(kInt64)).to(dev(), kInt8);
  Tensor b = tensor({9, 3, 8, -1, 1, 0}, TensorOptions(kInt64)).to(dev(), kInt8);
  EXPECT_EQ(values(bitwise_right_shift(a, b)), (std::vector<double>{-1, -16, 0, 0, 32, 5}));
  EXPECT_EQ(values(bitwise_left_shift(a, b)), (std::vector<double>{0, 0, 0, 0, -128, 5}));
  // uint8: 200 >> 8 is 0; int64 by 63 and 64.
  Tensor u = tensor({200}, TensorOptions(kInt64)).to(dev(), kUInt8);
  EXPECT_EQ(values(u.bitwise_right_shift(8)), (std::vector<double>{0}));
  EXPECT_EQ(values(u.bitwise_right_shift(3)), (std::vector<double>{25}));
  Tensor l = tensor({int64_t(-5)}, TensorOptions(kInt64)).to(dev());
  EXPECT_EQ(l.bitwise_right_shift(63).item<int64_t>(), -1);
  EXPECT_EQ(l.bitwise_right_shift(64).item<int64_t>(), -1);
  EXPECT_EQ(l.bitwise_left_shift(64).item<int64_t>(), 0);
  // scalar on the left: 1 << t, 256 >> t
  Tensor t = tensor({0, 3, 7}, TensorOptions(kInt32)).to(dev());
  EXPECT_EQ(values(bitwise_left_shift(1, t)), (std::vector<double>{1, 8, 128}));
  EXPECT_EQ(values(bitwise_right_shift(256, t)), (std::vector<double>{256, 32, 2}));
  EXPECT_EQ(bitwise_left_shift(1, t).dtype(), kInt32);
}

TEST_P(LogicalBitwise, ScalarsPromotionAndOperators) {
  Tensor u = tensor({12, 10, 255}, TensorOptions(kInt64)).to(dev(), kUInt8);
  EXPECT_EQ((u & 6).dtype(), kUInt8);  // an integer scalar keeps the tensor's dtype
  EXPECT_EQ(values(u & 6), (std::vector<double>{4, 2, 6}));
  EXPECT_EQ(values(6 | u), (std::vector<double>{14, 14, 255}));
  EXPECT_EQ(values(u ^ 255), (std::vector<double>{243, 245, 0}));
  EXPECT_EQ(values(bitwise_xor(3, u)), (std::vector<double>{15, 9, 252}));
  Tensor i8 = tensor({-1, 2, 3}, TensorOptions(kInt64)).to(dev(), kInt8);
  Tensor i64 = tensor({int64_t(1) << 40, int64_t(3), int64_t(1)}, TensorOptions(kInt64)).to(dev());
  Tensor r = i8 & i64;  // int8 & int64: int64, -1 sign-extended
  EXPECT_EQ(r.dtype(), kInt64);
  EXPECT_EQ(values(r), (std::vector<double>{double(int64_t(1) << 40), 2, 1}));
  // bool: stays bool with bool operands, an integer scalar makes it int64
  Tensor m = tensor({1, 0, 1}, TensorOptions(kInt64)).to(dev(), kBool);
  Tensor n = tensor({1, 1, 0}, TensorOptions(kInt64)).to(dev(), kBool);
  EXPECT_EQ((m & n).dtype(), kBool);
  EXPECT_EQ(values(m & n), (std::vector<double>{1, 0, 0}));
  EXPECT_EQ(values(m | n), (std::vector<double>{1, 1, 1}));
  EXPECT_EQ(values(m ^ n), (std::vector<double>{0, 1, 1}));
  EXPECT_EQ(values(~m), (std::vector<double>{0, 1, 0}));
  EXPECT_EQ((m & true).dtype(), kBool);
  EXPECT_EQ((m & 1).dtype(), kInt64);
  // a 0-d int64 tensor does not widen a dimensioned uint8 one
  Tensor z = tensor({7}, TensorOptions(kInt64)).to(dev()).reshape({});
  EXPECT_EQ((u & z).dtype(), kUInt8);
  // results never require grad
  EXPECT_FALSE((m & n).requires_grad());
}

TEST_P(LogicalBitwise, InPlaceAndCompoundAssignment) {
  Tensor a = tensor({12, 10, 7}, TensorOptions(kInt64)).to(dev(), kInt32);
  Tensor b = tensor({10, 6, 1}, TensorOptions(kInt64)).to(dev(), kInt64);
  Tensor& r = (a &= b);
  EXPECT_TRUE(r.is_same(a));
  EXPECT_EQ(a.dtype(), kInt32);  // int64 result cast into self
  EXPECT_EQ(values(a), (std::vector<double>{8, 2, 1}));
  a |= 16;
  EXPECT_EQ(values(a), (std::vector<double>{24, 18, 17}));
  a ^= b;
  EXPECT_EQ(values(a), (std::vector<double>{18, 20, 16}));
  a.bitwise_left_shift_(1);
  EXPECT_EQ(values(a), (std::vector<double>{36, 40, 32}));
  a.bitwise_right_shift_(b.to(kInt32).clamp_max(2));
  EXPECT_EQ(values(a), (std::vector<double>{9, 10, 16}));
  a.bitwise_not_();
  EXPECT_EQ(values(a), (std::vector<double>{-10, -11, -17}));
  // on a non-contiguous view: only its elements change
  Tensor base = zeros({3, 2}, TensorOptions(kInt16).device(dev()));
  Tensor col = base.select(1, 1);
  col |= 5;
  EXPECT_EQ(values(base), (std::vector<double>{0, 5, 0, 5, 0, 5}));
  // version counter
  const auto v = base._version();
  base.bitwise_xor_(1);
  EXPECT_GT(base._version(), v);
}

TEST_P(LogicalBitwise, Errors) {
  Tensor f = ones({3}, TensorOptions(kFloat32).device(dev()));
  Tensor i = ones({3}, TensorOptions(kInt32).device(dev()));
  Tensor m = ones({3}, TensorOptions(kBool).device(dev()));
  auto expect_type_error = [](const std::function<void()>& fn, const std::string& op) {
    EXPECT_TRUE(names(fn, op)) << error_of(fn);
    EXPECT_THROW(fn(), TypeError) << op;
  };
  expect_type_error([&] { (void)(f & i); }, "bitwise_and");
  expect_type_error([&] { (void)(i | 1.5); }, "bitwise_or");
  expect_type_error([&] { (void)bitwise_xor(f, f); }, "bitwise_xor");
  expect_type_error([&] { (void)~f; }, "bitwise_not");
  expect_type_error([&] { (void)bitwise_left_shift(m, m); }, "bitwise_left_shift");
  expect_type_error([&] { (void)m.bitwise_right_shift(true); }, "bitwise_right_shift");
  // an integer operand promotes bool to int64, which shifts
  EXPECT_EQ(m.bitwise_left_shift(1).dtype(), kInt64);
  EXPECT_EQ(values(m.bitwise_left_shift(2)), (std::vector<double>{4, 4, 4}));
  expect_type_error([&] { i.bitwise_and_(f); }, "bitwise_and_");
  expect_type_error([&] { m &= i; }, "bitwise_and_");  // an int32 result can't go into bool
  Tensor big = ones({2, 3}, TensorOptions(kInt32).device(dev()));
  EXPECT_TRUE(names([&] { i.bitwise_or_(big); }, "bitwise_or_"));
  EXPECT_TRUE(names([&] { (void)(Tensor() & i); }, "bitwise_and"));
  EXPECT_TRUE(names([&] { (void)logical_xor(i, Tensor()); }, "logical_xor"));
  if (dev().is_cuda()) {
    Tensor c = ones({3}, TensorOptions(kInt32));
    EXPECT_TRUE(names([&] { (void)(c & i); }, "bitwise_and")) << error_of([&] { (void)(c & i); });
    EXPECT_TRUE(names([&] { (void)logical_or(c, i); }, "logical_or"));
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, LogicalBitwise, ::testing::Values(Device(kCPU), Device(kCUDA, 0)),
                         [](const auto& info) { return info.param.is_cuda() ? "cuda" : "cpu"; });

}  // namespace
