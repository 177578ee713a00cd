// The elementwise ops' short path for their most common call (inputs contiguous, of one dtype,
// shape and device, a new output or in place on the first input; small CPU ops of + - * / run
// by the backend's flat kernel without a plan) against references computed here in float64
// from the inputs' values, and against the same op on non-contiguous copies of the inputs
// (which take the general path): same values, dtype, shape and strides. Calls just
// outside the short path (mixed dtypes, 0-d operands, broadcast, views, empty tensors,
// requires_grad, overlapping in-place operands, errors) keep PyTorch's results. And the small
// blocks behind tiny tensors: many alive at once, made and freed on several threads.
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "wick/wick.h"

namespace wick {
namespace {

using Values = std::vector<double>;
using Shape = std::vector<int64_t>;

Values values(const Tensor& t) { return t.to(kFloat64).contiguous().to_vector<double>(); }

int64_t numel_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t x : s) n *= x;
  return n;
}

// v (float64) as a contiguous tensor of dtype and shape.
Tensor make(const Values& v, const Shape& shape, Dtype dtype) {
  return from_blob(const_cast<double*>(v.data()), shape, kFloat64).to(dtype, false, true);
}

// The same values in a non-contiguous tensor of the same shape (every other element of a wider
// buffer); a tensor of one element is contiguous whatever its strides, so it is returned as is.
Tensor strided_copy(const Tensor& t) {
  if (t.numel() <= 1) return t;
  Shape wide(t.sizes().begin(), t.sizes().end());
  wide.push_back(2);
  Tensor view = zeros(wide, t.dtype()).select(-1, 0);
  view.copy_(t);
  EXPECT_FALSE(view.is_contiguous());
  return view;
}

// Contiguous strides of shape (what a new output has).
Shape contiguous_strides_of(const Shape& shape) {
  Shape st(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) st[i - 1] = st[i] * std::max<int64_t>(shape[i], 1);
  return st;
}

// x rounded to dtype, as float64 (the exact result of a correctly rounded op in that dtype).
double round_to(double x, Dtype dtype) { return make({x}, {1}, dtype).to(kFloat64).item<double>(); }

// Small integers valid in every dtype: a in [9, 13], b in [1, 9], so that a - b >= 0 and
// a * b <= 117 fit uint8 and int8.
Values ints(size_t n, int lo, int hi, std::mt19937& rng) {
  Values v(n);
  for (auto& x : v) x = double(lo + int(rng() % unsigned(hi - lo + 1)));
  return v;
}

void expect_same(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.sizes().vec(), want.sizes().vec()) << what;
  const Values g = values(got), w = values(want);
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i])) {
      EXPECT_TRUE(std::isnan(g[i])) << what << " at " << i;
    } else {
      ASSERT_EQ(g[i], w[i]) << what << " at " << i;
    }
  }
}

void expect_values(const Tensor& got, const Values& want, Dtype dtype, double tol, const std::string& what) {
  ASSERT_EQ(got.dtype(), dtype) << what;
  const Values g = values(got);
  ASSERT_EQ(g.size(), want.size()) << what;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(want[i]) || std::isinf(want[i])) {
      EXPECT_TRUE(std::isnan(want[i]) ? std::isnan(g[i]) : g[i] == want[i])
          << what << " at " << i << ": got " << g[i] << ", want " << want[i];
      continue;
    }
    ASSERT_LE(std::abs(g[i] - want[i]), tol * std::max(1.0, std::abs(want[i])))
        << what << " at " << i << ": got " << g[i] << ", want " << want[i];
  }
}

// Sizes on both sides of the CPU's flat kernel limit (4096 elements) and of its single-thread
// limit (32768).
const std::vector<Shape> kShapes = {{1},       {},        {7},    {3, 5}, {2, 1, 4}, {1, 1}, {257},
                                    {4, 1, 1}, {2, 3, 4}, {1000}, {4096}, {64, 64},  {4097}, {40000}};
const std::vector<Dtype> kNumeric = {kUInt8,   kInt8,     kInt16,   kInt32,  kInt64,
                                     kFloat16, kBFloat16, kFloat32, kFloat64};

struct BinaryCase {
  const char* name;
  std::function<Tensor(const Tensor&, const Tensor&)> op;
  std::function<double(double, double)> ref;
};

const std::vector<BinaryCase> kBinary = {
    {"add", [](const Tensor& a, const Tensor& b) { return a + b; }, [](double a, double b) { return a + b; }},
    {"sub", [](const Tensor& a, const Tensor& b) { return a - b; }, [](double a, double b) { return a - b; }},
    {"mul", [](const Tensor& a, const Tensor& b) { return a * b; }, [](double a, double b) { return a * b; }},
    {"add alpha", [](const Tensor& a, const Tensor& b) { return add(a, b, 3); },
     [](double a, double b) { return a + 3 * b; }},
    {"sub alpha", [](const Tensor& a, const Tensor& b) { return sub(a + a, b, 2); },
     [](double a, double b) { return 2 * a - 2 * b; }},
};

TEST(FlatPath, BinaryMatchesReferenceAndGeneralPath) {
  std::mt19937 rng(7);
  for (Dtype dtype : kNumeric) {
    for (const Shape& shape : kShapes) {
      const size_t n = size_t(numel_of(shape));
      const Values av = ints(n, 9, 13, rng), bv = ints(n, 1, 9, rng);
      const Tensor a = make(av, shape, dtype), b = make(bv, shape, dtype);
      for (const auto& c : kBinary) {
        const std::string what =
            std::string(c.name) + " " + std::string(name(dtype)) + " numel " + std::to_string(n);
        const Tensor r = c.op(a, b);
        Values want(n);
        for (size_t i = 0; i < n; ++i) want[i] = c.ref(av[i], bv[i]);
        expect_values(r, want, dtype, 0, what);  // small integers: exact in every dtype
        EXPECT_EQ(r.sizes().vec(), shape) << what;
        EXPECT_EQ(r.strides().vec(), contiguous_strides_of(shape)) << what;
        EXPECT_NE(r.data_ptr(), a.data_ptr()) << what;
        EXPECT_NE(r.data_ptr(), b.data_ptr()) << what;
        expect_same(r, c.op(strided_copy(a), strided_copy(b)), what + " vs general path");
        expect_same(r, c.op(strided_copy(a), b), what + " vs general path (a strided)");
      }
    }
  }
}

TEST(FlatPath, FloatingOpsRoundAsTheGeneralPath) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> u(-3, 3);
  for (Dtype dtype : {kFloat16, kBFloat16, kFloat32, kFloat64}) {
    for (const Shape& shape : kShapes) {
      const size_t n = size_t(numel_of(shape));
      Values av(n), bv(n);
      for (size_t i = 0; i < n; ++i) {
        av[i] = u(rng);
        bv[i] = u(rng);
        if (std::abs(bv[i]) < 0.1) bv[i] = 0.5;
      }
      // The inputs as stored in dtype: references start from the rounded values.
      const Tensor a = make(av, shape, dtype), b = make(bv, shape, dtype);
      const Values ar = values(a), br = values(b);
      const std::string what = std::string(name(dtype)) + " numel " + std::to_string(n);
      // float32 and float64 ops are correctly rounded; 16-bit ones compute in float and round
      // once more to their dtype.
      const double tol = dtype == kFloat64 ? 0 : dtype == kFloat32 ? 0 : dtype == kFloat16 ? 1e-3 : 8e-3;
      Values sum(n), prod(n), quot(n);
      for (size_t i = 0; i < n; ++i) {
        sum[i] = ar[i] + br[i];
        prod[i] = ar[i] * br[i];
        quot[i] = ar[i] / br[i];
        if (dtype == kFloat32) {
          sum[i] = round_to(sum[i], dtype);
          prod[i] = round_to(prod[i], dtype);
          quot[i] = round_to(quot[i], dtype);
        }
      }
      expect_values(a + b, sum, dtype, tol, "add " + what);
      expect_values(a * b, prod, dtype, tol, "mul " + what);
      expect_values(a / b, quot, dtype, tol, "div " + what);
      expect_same(a + b, strided_copy(a) + strided_copy(b), "add vs general " + what);
      expect_same(a - b, strided_copy(a) - strided_copy(b), "sub vs general " + what);
      expect_same(a * b, strided_copy(a) * strided_copy(b), "mul vs general " + what);
      expect_same(a / b, strided_copy(a) / strided_copy(b), "div vs general " + what);
      expect_same(add(a, b, 0.5), add(strided_copy(a), strided_copy(b), 0.5), "add alpha vs general " + what);
      expect_same(a + 1.25, strided_copy(a) + 1.25, "add scalar vs general " + what);
      expect_same(a * 3, strided_copy(a) * 3, "mul scalar vs general " + what);
      expect_same(neg(a), neg(strided_copy(a)), "neg vs general " + what);
      expect_same(exp(a), exp(strided_copy(a)), "exp vs general " + what);
      expect_same(abs(a), abs(strided_copy(a)), "abs vs general " + what);
      expect_same(a < b, strided_copy(a) < strided_copy(b), "lt vs general " + what);
      expect_same(a == a, strided_copy(a) == strided_copy(a), "eq vs general " + what);
      expect_same(a > 0.5, strided_copy(a) > 0.5, "gt scalar vs general " + what);
    }
  }
}

TEST(FlatPath, BoolArithmetic) {
  const Tensor a = make({1, 0, 1, 0}, {4}, kBool), b = make({1, 1, 0, 0}, {4}, kBool);
  expect_values(a + b, {1, 1, 1, 0}, kBool, 0, "bool add");  // logical or, in bool
  expect_values(a * b, {1, 0, 0, 0}, kBool, 0, "bool mul");
  expect_values(a / b, {1, 0, INFINITY, NAN}, kFloat32, 0, "bool div");  // true division in float
  EXPECT_THROW(a - b, TypeError);
  try {
    (void)(a - b);
  } catch (const TypeError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[sub] ", 0), 0u) << e.what();
  }
}

TEST(FlatPath, IntegerDivisionGivesTheDefaultFloat) {
  const Tensor a = make({7, -7, 1}, {3}, kInt32), b = make({2, 2, 3}, {3}, kInt32);
  expect_values(a / b, {3.5, -3.5, double(1.0f / 3.0f)}, kFloat32, 0, "int div");
  set_default_dtype(kFloat64);
  expect_values(a / b, {3.5, -3.5, 1.0 / 3.0}, kFloat64, 0, "int div, float64 default");
  set_default_dtype(kFloat32);
  // Integer tensors and scalars: the wrapped number's category decides.
  expect_values(a + 2, {9, -5, 3}, kInt32, 0, "int + int scalar");
  expect_values(a + 0.5, {7.5, -6.5, 1.5}, kFloat32, 0, "int + float scalar");
  expect_values(make({1, 0}, {2}, kBool) + 1, {2, 1}, kInt64, 0, "bool + int scalar");
  expect_values(make({1, 2}, {2}, kFloat16) + 1.5, {2.5, 3.5}, kFloat16, 0, "half + float scalar");
  expect_values(exp(make({0, 1}, {2}, kInt64)), {1, double(std::exp(1.0f))}, kFloat32, 0, "exp of int64");
}

TEST(FlatPath, MixedDtypesPromote) {
  const Tensor f = make({1.5, 2.5}, {2}, kFloat32), d = make({0.25, 0.5}, {2}, kFloat64);
  const Tensor i = make({3, 4}, {2}, kInt32), h = make({1, 2}, {2}, kFloat16);
  expect_values(f + d, {1.75, 3.0}, kFloat64, 0, "float32 + float64");
  expect_values(i * f, {4.5, 10.0}, kFloat32, 0, "int32 * float32");
  expect_values(h + i, {4, 6}, kFloat16, 0, "float16 + int32");
  expect_values(i - make({1, 1}, {2}, kInt64), {2, 3}, kInt64, 0, "int32 - int64");
  expect_values(make({200, 100}, {2}, kUInt8) + make({-1, 1}, {2}, kInt8), {199, 101}, kInt16, 0,
                "uint8 + int8");
}

TEST(FlatPath, ZeroDimOperands) {
  // Two 0-d tensors of one dtype: a 0-d result of that dtype.
  const Tensor x = full({}, 2.5), y = full({}, 0.5);
  const Tensor r = x * y;
  EXPECT_EQ(r.dim(), 0);
  expect_values(r, {1.25}, kFloat32, 0, "0-d * 0-d");
  // A 0-d operand does not promote a dimensioned one of the same category, but broadcasts.
  const Tensor h = make({1, 2, 3}, {3}, kFloat16);
  const Tensor d0 = full({}, 0.5, kFloat64);
  expect_values(h + d0, {1.5, 2.5, 3.5}, kFloat16, 0, "float16 [3] + float64 0-d");
  expect_values(d0 + h, {1.5, 2.5, 3.5}, kFloat16, 0, "float64 0-d + float16 [3]");
  // A higher category does, to the 0-d operand's dtype (a wrapped number would give the
  // default float instead).
  expect_values(make({1, 2}, {2}, kInt32) + full({}, 0.5, kFloat64), {1.5, 2.5}, kFloat64, 0,
                "int32 [2] + float64 0-d");
  expect_values(make({1, 2}, {2}, kInt32) + 0.5, {1.5, 2.5}, kFloat32, 0, "int32 [2] + 0.5");
  // Same dtype, 0-d against [1]: broadcast to [1].
  const Tensor one = make({4}, {1}, kFloat32);
  const Tensor s = one - x;
  EXPECT_EQ(s.sizes().vec(), Shape({1}));
  expect_values(s, {1.5}, kFloat32, 0, "[1] - 0-d");
}

TEST(FlatPath, BroadcastAndViews) {
  const Tensor col = make({1, 2, 3}, {3, 1}, kFloat32), row = make({10, 20, 30, 40}, {1, 4}, kFloat32);
  const Tensor r = col + row;
  EXPECT_EQ(r.sizes().vec(), Shape({3, 4}));
  Values want;
  for (double c : {1, 2, 3})
    for (double w : {10, 20, 30, 40}) want.push_back(c + w);
  expect_values(r, want, kFloat32, 0, "broadcast");
  // Transposed views (non-contiguous) and an expanded one.
  const Tensor m = make({1, 2, 3, 4, 5, 6}, {2, 3}, kFloat64);
  expect_values(m.t() * m.t(), {1, 16, 4, 25, 9, 36}, kFloat64, 0, "transposed");
  expect_values(m - make({1, 2, 3}, {3}, kFloat64).expand({2, 3}), {0, 0, 0, 3, 3, 3}, kFloat64, 0,
                "expanded");
  // Contiguous views off the start of their storage, and with odd strides on size-1 dims.
  const Tensor base = make({0, 1, 2, 3, 4, 5, 6}, {7}, kFloat32);
  expect_values(base.narrow(0, 1, 3) + base.narrow(0, 4, 3), {5, 7, 9}, kFloat32, 0, "narrowed");
  const Tensor u = make({1, 2, 3}, {3}, kFloat32).unsqueeze(0).unsqueeze(2);
  const Tensor v = make({5, 6, 7}, {3, 1}, kFloat32).t().unsqueeze(2);  // strides {1, 1, ...}
  ASSERT_TRUE(v.is_contiguous());
  ASSERT_EQ(v.stride(0), 1);
  const Tensor uv = u * v;
  EXPECT_EQ(uv.strides().vec(), Shape({3, 1, 1}));
  expect_values(uv, {5, 12, 21}, kFloat32, 0, "size-1 dims with odd strides");
}

TEST(FlatPath, EmptyTensors) {
  for (const Shape& shape : std::vector<Shape>{{0}, {2, 0}, {0, 3}}) {
    const Tensor a = zeros(shape), b = ones(shape);
    const Tensor r = a + b;
    EXPECT_EQ(r.sizes().vec(), shape);
    EXPECT_EQ(r.numel(), 0);
    EXPECT_EQ(r.dtype(), kFloat32);
    EXPECT_EQ((a * 2).numel(), 0);
    EXPECT_EQ(neg(a).numel(), 0);
    EXPECT_EQ((a < b).dtype(), kBool);
  }
  const Tensor e = zeros({0}, kInt64);
  EXPECT_EQ((e / e).dtype(), kFloat32);
  Tensor f = zeros({0});
  f += ones({0});
  EXPECT_EQ(f.numel(), 0);
}

TEST(FlatPath, RequiresGradRecordsTheOp) {
  const Tensor a = make({1, 2, 3}, {3}, kFloat32).requires_grad_(), b = make({4, 5, 6}, {3}, kFloat32);
  const Tensor r = a * b;
  ASSERT_NE(r.grad_fn(), nullptr);
  EXPECT_EQ(r.grad_fn()->name(), "MulBackward0");
  EXPECT_TRUE(r.requires_grad());
  (r + a).sum().backward();
  expect_values(a.grad(), {5, 6, 7}, kFloat32, 0, "d(a*b + a)/da");
  const Tensor s = b + a;
  ASSERT_NE(s.grad_fn(), nullptr);
  EXPECT_EQ(s.grad_fn()->name(), "AddBackward0");
  EXPECT_EQ(exp(a).grad_fn()->name(), "ExpBackward0");
  {
    NoGradGuard guard;
    const Tensor q = a * b;
    EXPECT_EQ(q.grad_fn(), nullptr);
    EXPECT_FALSE(q.requires_grad());
    expect_values(q, {4, 10, 18}, kFloat32, 0, "no_grad mul");
  }
}

TEST(FlatPath, InPlace) {
  Tensor a = make({1, 2, 3, 4}, {4}, kFloat32);
  const Tensor b = make({10, 20, 30, 40}, {4}, kFloat32);
  const void* data = a.data_ptr();
  const auto v0 = a._version();
  a += b;
  EXPECT_EQ(a.data_ptr(), data);
  EXPECT_EQ(a._version(), v0 + 1);
  expect_values(a, {11, 22, 33, 44}, kFloat32, 0, "+=");
  a.mul_(b);
  expect_values(a, {110, 440, 990, 1760}, kFloat32, 0, "mul_");
  a.sub_(b, 2);
  expect_values(a, {90, 400, 930, 1680}, kFloat32, 0, "sub_ alpha");
  a.div_(b);
  expect_values(a, {9, 20, 31, 42}, kFloat32, 0, "div_");
  // Aliases: the same tensor twice is allowed.
  a += a;
  expect_values(a, {18, 40, 62, 84}, kFloat32, 0, "a += a");
  // A view sharing part of a's memory is refused, naming the in-place op; a is unchanged.
  Tensor base = make({1, 2, 3, 4, 5}, {5}, kFloat32);
  Tensor lo = base.narrow(0, 0, 4);
  const Tensor hi = base.narrow(0, 1, 4);
  try {
    lo.add_(hi);
    ADD_FAILURE() << "partial overlap accepted";
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[add_] unsupported operation", 0), 0u) << e.what();
  }
  expect_values(base, {1, 2, 3, 4, 5}, kFloat32, 0, "after the refused add_");
  // In place with a wider input dtype: the result is cast back into a's dtype.
  Tensor i = make({1, 2}, {2}, kInt32);
  i += make({3, 4}, {2}, kInt32);
  expect_values(i, {4, 6}, kInt32, 0, "int +=");
  Tensor fl = make({1, 2}, {2}, kFloat32);
  fl += make({0.5, 0.25}, {2}, kFloat64);
  expect_values(fl, {1.5, 2.25}, kFloat32, 0, "float32 += float64");
  EXPECT_THROW(i += make({0.5, 0.5}, {2}, kFloat32), TypeError);  // float can't be cast to int32
  // In place on a non-contiguous view.
  Tensor m = make({1, 2, 3, 4}, {2, 2}, kFloat32);
  Tensor mt = m.t();
  mt += make({10, 20, 30, 40}, {2, 2}, kFloat32);
  expect_values(m, {11, 32, 23, 44}, kFloat32, 0, "+= on a transposed view");
}

TEST(FlatPath, BadInputRaises) {
  const Tensor a = make({1, 2}, {2}, kInt64), b = make({3, 4}, {2}, kInt64);
  try {
    (void)add(a, b, 0.5);
    ADD_FAILURE() << "float alpha accepted for int64";
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[add] For integral input tensors", 0), 0u) << e.what();
  }
  EXPECT_THROW((void)(a + Tensor()), ValueError);
  EXPECT_THROW((void)(Tensor() * a), ValueError);
  EXPECT_THROW((void)neg(Tensor()), ValueError);
  EXPECT_THROW((void)neg(make({1}, {1}, kBool)), TypeError);
  try {
    (void)(a + make({1, 2, 3}, {3}, kInt64));
    ADD_FAILURE() << "mismatched shapes accepted";
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[add] The size of tensor a (2)", 0), 0u) << e.what();
  }
}

TEST(FlatPath, ManySmallTensorsAlive) {
  // Sizes on both sides of the single-block limit for small storages, all alive at once:
  // every result keeps its own values and its data is 64-byte aligned.
  std::vector<Tensor> kept;
  std::vector<Values> want;
  for (int rep = 0; rep < 3; ++rep) {
    for (int64_t n = 1; n <= 300; n += 7) {
      for (Dtype dtype : {kFloat32, kFloat64, kInt8, kFloat16}) {
        Values av(static_cast<size_t>(n)), bv(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) {
          av[size_t(i)] = double((i + rep) % 11);
          bv[size_t(i)] = double((i * 3 + n) % 7);
        }
        const Tensor r = make(av, {n}, dtype) + make(bv, {n}, dtype);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(r.data_ptr()) % 64, 0u);
        Values w(static_cast<size_t>(n));
        for (size_t i = 0; i < w.size(); ++i) w[i] = av[i] + bv[i];
        kept.push_back(r);
        want.push_back(w);
      }
    }
    if (rep == 1) {  // free half of them, so that later tensors reuse their blocks
      for (size_t i = 0; i < kept.size(); i += 2) kept[i] = Tensor();
    }
  }
  for (size_t i = 0; i < kept.size(); ++i)
    if (kept[i].defined()) expect_values(kept[i], want[i], kept[i].dtype(), 0, "kept " + std::to_string(i));
}

TEST(FlatPath, ThreadsMakeAndFreeSmallTensors) {
  // Tensors made on one thread and freed on another, while every thread runs small ops.
  constexpr int kThreads = 4, kIters = 2000;
  std::vector<std::vector<Tensor>> handoff(kThreads);
  std::vector<int> bad(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &handoff, &bad] {
      const Tensor a = full({3}, double(t + 1)), b = full({3}, 2.0);
      for (int i = 0; i < kIters; ++i) {
        Tensor r = a * b + a;  // 3 (t + 1)
        r -= b;
        if (values(r) != Values(3, 3.0 * (t + 1) - 2)) ++bad[size_t(t)];
        if (i % 4 == 0) handoff[size_t(t)].push_back(r);
      }
    });
  }
  for (auto& th : threads) th.join();
  threads.clear();
  // Each thread frees another's tensors.
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &handoff] {
      auto& v = handoff[size_t((t + 1) % kThreads)];
      for (auto& x : v) x = Tensor();
      const Tensor z = full({2}, 1.0) + full({2}, 1.0);
      (void)z;
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(bad[size_t(t)], 0) << "thread " << t;
}

}  // namespace
}  // namespace wick
