// Helpers of the table-driven op test: host tensors of float64 values, random inputs from a
// fixed-seed std::mt19937, tensors laid out in each layout under test, float64 references
// computed with plain loops, and comparison with a tolerance per dtype.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "wick/wick.h"

namespace wick::test {

using Shape = std::vector<int64_t>;

inline const std::vector<Dtype> kAllDtypes = {kBool,  kUInt8,   kInt8,     kInt16,   kInt32,
                                              kInt64, kFloat16, kBFloat16, kFloat32, kFloat64};
inline const std::vector<Dtype> kFloatDtypes = {kFloat16, kBFloat16, kFloat32, kFloat64};
inline const std::vector<Dtype> kNumericDtypes = {kUInt8,   kInt8,     kInt16,   kInt32,  kInt64,
                                                  kFloat16, kBFloat16, kFloat32, kFloat64};

inline int64_t numel_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t x : s) n *= x;
  return n;
}

inline std::string str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

// Values in row-major order with their shape.
struct Host {
  Shape sizes;
  std::vector<double> v;
  double at(const Shape& idx) const {
    int64_t off = 0;
    for (size_t d = 0; d < sizes.size(); ++d) off = off * sizes[d] + idx[d];
    return v[size_t(off)];
  }
};

// v as the dtype stores it: 16-bit floats and float32 round to nearest even, integers wrap.
inline double store(double v, Dtype t) {
  if (std::isnan(v)) return is_floating_point(t) ? v : 0;
  switch (t) {
    case kBool:
      return v != 0;
    case kUInt8:
      return double(uint8_t(int64_t(v)));
    case kInt8:
      return double(int8_t(int64_t(v)));
    case kInt16:
      return double(int16_t(int64_t(v)));
    case kInt32:
      return double(int32_t(int64_t(v)));
    case kInt64:
      return double(int64_t(v));
    case kFloat16:
      return double(float(Half(float(v))));
    case kBFloat16:
      return double(float(BFloat16(float(v))));
    case kFloat32:
      return double(float(v));
    default:
      return v;
  }
}

// What values an input takes.
enum class Domain {
  Any,       // integers in [-10, 10] ([0, 11] for uint8), floats in [-4, 4]
  Positive,  // > 0
  NonZero,   // integers != 0, floats with |x| >= 0.25
  Small,     // integers in [0, 3], floats in [-2, 2] (exponents)
  Bool,      // a bool tensor whatever the op's dtype (masks, conditions)
  Unit,      // integers in [-1, 1], floats in [-0.95, 0.95] (atanh, erfinv)
  AboveOne,  // integers in [1, 10], floats in [1, 5] (acosh)
};

inline double random_value(Dtype t, Domain d, std::mt19937& rng) {
  if (d == Domain::Bool || t == kBool) return double(rng() % 2);
  if (is_integral(t)) {
    if (d == Domain::Small) return double(rng() % 4);
    int64_t lo = t == kUInt8 ? 0 : -10, hi = t == kUInt8 ? 11 : 10;
    if (d == Domain::Positive || d == Domain::AboveOne) lo = 1;
    if (d == Domain::Unit) lo = t == kUInt8 ? 0 : -1, hi = 1;
    for (;;) {
      int64_t x = lo + int64_t(rng() % uint64_t(hi - lo + 1));
      if (d != Domain::NonZero || x != 0) return double(x);
    }
  }
  double lo = -4, hi = 4;
  if (d == Domain::Positive) lo = 0.05;
  if (d == Domain::Small) lo = -2, hi = 2;
  if (d == Domain::Unit) lo = -0.95, hi = 0.95;
  if (d == Domain::AboveOne) lo = 1, hi = 5;
  for (;;) {
    double x = store(std::uniform_real_distribution<double>(lo, hi)(rng), t);
    if (d != Domain::NonZero || std::fabs(x) >= 0.25) return x;
  }
}

inline Host random_host(const Shape& s, Dtype t, Domain d, std::mt19937& rng) {
  Host h{s, std::vector<double>(size_t(numel_of(s)))};
  for (auto& x : h.v) x = random_value(t, d, rng);
  return h;
}

// How an input is laid out in memory.
enum class Layout { Contiguous, Transposed, Sliced, Broadcast, Scalar, Empty };
inline const std::vector<Layout> kAllLayouts = {Layout::Contiguous, Layout::Transposed, Layout::Sliced,
                                                Layout::Broadcast,  Layout::Scalar,     Layout::Empty};
inline const char* layout_name(Layout l) {
  switch (l) {
    case Layout::Contiguous:
      return "contiguous";
    case Layout::Transposed:
      return "transposed";
    case Layout::Sliced:
      return "sliced";
    case Layout::Broadcast:
      return "broadcast";
    case Layout::Scalar:
      return "0-d";
    case Layout::Empty:
      return "empty";
  }
  return "?";
}

// A contiguous tensor of dtype on device holding h's values (exact: they are representable).
inline Tensor to_tensor(const Host& h, Dtype t, Device device) {
  std::vector<double> v(h.v);
  Tensor d = from_blob(v.data(), h.sizes, kFloat64).clone();
  return d.to(device, t);
}

// h's values in a tensor whose memory follows layout: Transposed stores the last two dims
// swapped, Sliced is a view with step 2 in dim 0 and an offset in the last dim. Other
// layouts are contiguous here (broadcast views are made by expand()).
inline Tensor with_layout(const Host& h, Dtype t, Device device, Layout l) {
  Tensor c = to_tensor(h, t, device);
  if (l == Layout::Transposed && c.dim() >= 2) return c.transpose(-1, -2).contiguous().transpose(-1, -2);
  if (l == Layout::Sliced && c.dim() >= 1) {
    Shape big(h.sizes);
    big[0] = big[0] * 2;
    big.back() += 1;
    Tensor b = full(big, 7, TensorOptions(t).device(device));
    Tensor s = b.slice(0, 0, std::nullopt, 2).narrow(-1, 1, h.sizes.back());
    s.copy_(c);
    return s;
  }
  return c;
}

// h broadcast to shape (numpy rules), row-major.
inline Host expand_host(const Host& h, const Shape& shape) {
  Host out{shape, std::vector<double>(size_t(numel_of(shape)))};
  const size_t nd = shape.size(), off = nd - h.sizes.size();
  Shape idx(nd, 0), src(h.sizes.size(), 0);
  for (size_t i = 0; i < out.v.size(); ++i) {
    int64_t rem = int64_t(i);
    for (size_t d = nd; d-- > 0;) {
      idx[d] = rem % shape[d];
      rem /= shape[d];
    }
    for (size_t d = 0; d < src.size(); ++d) src[d] = h.sizes[d] == 1 ? 0 : idx[d + off];
    out.v[i] = h.at(src);
  }
  return out;
}

inline Shape broadcast_shape(const std::vector<Shape>& shapes) {
  size_t nd = 0;
  for (auto& s : shapes) nd = std::max(nd, s.size());
  Shape out(nd, 1);
  for (auto& s : shapes)
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = out[nd - s.size() + i];
      if (s[i] != 1) o = s[i];
    }
  return out;
}

// Relative tolerance of results in dtype (also the absolute one below magnitude 1).
inline double tolerance(Dtype t) {
  switch (t) {
    case kFloat16:
      return 1e-2;
    case kBFloat16:
      return 2e-2;
    case kFloat32:
      return 1e-5;
    case kFloat64:
      return 1e-12;
    default:
      return 0;
  }
}

// Checks dtype, sizes and every value of got (any device) against want.
inline void expect_matches(const Tensor& got, const Host& want, Dtype dtype, const std::string& what,
                           double tol_scale = 1) {
  ASSERT_EQ(got.dtype(), dtype) << what;
  ASSERT_EQ(str(got.sizes().vec()), str(want.sizes)) << what;
  std::vector<double> g = got.cpu().to_vector<double>();
  ASSERT_EQ(g.size(), want.v.size()) << what;
  const double tol = tolerance(dtype) * tol_scale;
  int failures = 0;
  for (size_t i = 0; i < g.size() && failures < 5; ++i) {
    const double w = store(want.v[i], dtype);
    bool ok;
    if (std::isnan(w)) ok = std::isnan(g[i]);
    else if (std::isinf(w)) ok = g[i] == w;
    else ok = std::fabs(g[i] - w) <= tol * std::max(1.0, std::fabs(w));
    if (!ok) ++failures;
    EXPECT_TRUE(ok) << what << " at " << i << ": got " << g[i] << ", want " << w;
  }
}

// Runs f and checks it throws E with a message starting "[op]".
template <class E, class F>
void expect_error(F&& f, const std::string& op, const std::string& what) {
  try {
    f();
    ADD_FAILURE() << what << ": no error thrown";
  } catch (const E& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[" + op + "]", 0), 0u) << what << ": " << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": wrong error type: " << e.what();
  }
}

// The devices the table runs on: a new backend adds itself here.
inline bool device_available(const std::string& d) { return d == "cpu" || cuda::is_available(); }

// The fixture of the table, parameterized by device ("cpu", "cuda"); instantiated once, in
// ops_table_test.cpp.
class OpsTable : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!device_available(GetParam())) GTEST_SKIP() << GetParam() << " is not available here";
    device_ = Device(GetParam());
  }
  std::string what(const std::string& op, Dtype t, Layout l, const std::string& more = "") const {
    return op + " " + std::string(name(t)) + " " + layout_name(l) + " on " + GetParam() + more;
  }
  Device device_;
  std::mt19937 rng_{20261122};
};

}  // namespace wick::test
