// The foundation's ops (+ - * / with tensors and scalars, in place, sum, mean, matmul)
// against float64 references computed with plain loops, for every dtype and for
// contiguous, transposed, sliced and broadcast inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "wick/wick.h"

using namespace wick;

namespace {

const Dtype kAll[] = {kBool, kUInt8, kInt8, kInt16, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64};

double tol(Dtype t) {
  switch (t) {
    case kFloat16: return 2e-3;
    case kBFloat16: return 1.6e-2;
    case kFloat32: return 2e-6;
    case kFloat64: return 1e-12;
    default: return 0;
  }
}

// Random values representable in dtype (small integers for integer types, bools for bool).
std::vector<double> random_values(Dtype t, int64_t n, std::mt19937& rng, bool nonzero = false) {
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& x : v) {
    if (t == kBool) x = double(rng() % 2);
    else if (t == kUInt8) x = double(rng() % 12);
    else if (is_integral(t)) x = double(int(rng() % 21) - 10);
    else x = std::uniform_real_distribution<double>(-4, 4)(rng);
    if (nonzero && x == 0) x = 1;
  }
  return v;
}

// A tensor of dtype holding v (rounded to dtype), and the rounded values.
Tensor make(const std::vector<double>& v, IntArrayRef sizes, Dtype t) {
  auto d = from_blob(const_cast<double*>(v.data()), sizes, kFloat64).clone();
  return d.to(t);
}

// A tensor with the given logical sizes laid out as `layout`: 0 contiguous, 1 transposed
// (last two dims swapped in memory), 2 sliced with step 2 in the first dim.
Tensor with_layout(const Tensor& c, int layout) {
  if (layout == 0 || c.dim() < 2) return c;
  if (layout == 1) return c.transpose(-1, -2).contiguous().transpose(-1, -2);
  std::vector<int64_t> big = c.sizes().vec();
  big[0] *= 2;
  auto b = zeros(big, c.dtype());
  auto s = b.slice(0, 0, std::nullopt, 2);
  s.copy_(c);
  return s;
}

void expect_close(const Tensor& got, const std::vector<double>& want, Dtype t, const std::string& what) {
  auto g = got.to_vector<double>();
  ASSERT_EQ(g.size(), want.size()) << what;
  for (size_t i = 0; i < g.size(); ++i) {
    double w = want[i];
    if (std::isnan(w) || std::isinf(w)) {
      EXPECT_TRUE(std::isnan(w) ? std::isnan(g[i]) : g[i] == w) << what << " at " << i << ": " << g[i] << " vs " << w;
      continue;
    }
    EXPECT_NEAR(g[i], w, tol(t) * std::max(1.0, std::fabs(w))) << what << " at " << i;
  }
}

// Reference of a broadcast binary op over row-major shapes.
std::vector<double> ref_binary(const std::vector<double>& a, IntArrayRef sa, const std::vector<double>& b, IntArrayRef sb,
                               IntArrayRef so, const std::function<double(double, double)>& f) {
  int64_t n = 1;
  for (auto s : so) n *= s;
  std::vector<double> out(static_cast<size_t>(n));
  const size_t nd = so.size();
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, ia = 0, ib = 0, ma = 1, mb = 1;
    for (size_t d = nd; d-- > 0;) {
      int64_t idx = rem % so[d];
      rem /= so[d];
      size_t da = d - (nd - sa.size()), db = d - (nd - sb.size());
      if (d >= nd - sa.size()) {
        ia += (sa[da] == 1 ? 0 : idx) * ma;
        ma *= sa[da];
      }
      if (d >= nd - sb.size()) {
        ib += (sb[db] == 1 ? 0 : idx) * mb;
        mb *= sb[db];
      }
    }
    out[size_t(i)] = f(a[size_t(ia)], b[size_t(ib)]);
  }
  return out;
}

// Rounds a reference result the way the op's output dtype stores it.
double store(double v, Dtype t) {
  switch (t) {
    case kBool: return v != 0;
    case kUInt8: return double(uint8_t(int64_t(v)));
    case kInt8: return double(int8_t(int64_t(v)));
    case kInt16: return double(int16_t(int64_t(v)));
    case kInt32: return double(int32_t(int64_t(v)));
    case kInt64: return double(int64_t(v));
    case kFloat16: return double(float(Half(float(v))));
    case kBFloat16: return double(float(BFloat16(float(v))));
    case kFloat32: return double(float(v));
    default: return v;
  }
}

struct BinCase {
  const char* name;
  std::function<Tensor(const Tensor&, const Tensor&)> op;
  std::function<double(double, double)> ref;
  bool true_div = false;
};

}  // namespace

TEST(Arith, BinaryOpsEveryDtypeLayoutAndBroadcast) {
  std::mt19937 rng(7);
  std::vector<BinCase> cases = {
      {"add", [](auto& a, auto& b) { return a + b; }, [](double a, double b) { return a + b; }},
      {"add_alpha", [](auto& a, auto& b) { return add(a, b, 2); }, [](double a, double b) { return a + 2 * b; }},
      {"sub", [](auto& a, auto& b) { return a - b; }, [](double a, double b) { return a - b; }},
      {"mul", [](auto& a, auto& b) { return a * b; }, [](double a, double b) { return a * b; }},
      {"div", [](auto& a, auto& b) { return a / b; }, [](double a, double b) { return a / b; }, true},
  };
  struct Shapes { std::vector<int64_t> a, b; };
  std::vector<Shapes> shapes = {{{3, 5}, {3, 5}}, {{4, 3, 5}, {5}}, {{3, 1}, {1, 6}}, {{}, {2, 3}}, {{0, 3}, {3}},
                                {{70000}, {70000}}};
  for (Dtype t : kAll) {
    for (auto& c : cases) {
      if (t == kBool && std::string(c.name).rfind("sub", 0) == 0) continue;  // an error, tested elsewhere
      if (t == kBool && std::string(c.name) == "add_alpha") continue;
      for (auto& s : shapes) {
        for (int layout : {0, 1, 2}) {
          auto va = random_values(t, [&] { int64_t n = 1; for (auto x : s.a) n *= x; return n; }(), rng);
          auto vb = random_values(t, [&] { int64_t n = 1; for (auto x : s.b) n *= x; return n; }(), rng, c.true_div);
          Tensor a = with_layout(make(va, s.a, t), layout), b = with_layout(make(vb, s.b, t), layout);
          // Reference on the values as stored in dtype.
          auto ra = make(va, s.a, t).to_vector<double>(), rb = make(vb, s.b, t).to_vector<double>();
          Tensor out = c.op(a, b);
          Dtype od = c.true_div && !is_floating_point(t) ? kFloat32 : t;
          ASSERT_EQ(out.dtype(), od) << c.name << " " << t;
          auto so = out.sizes();
          auto want = ref_binary(ra, s.a, rb, s.b, so, c.ref);
          for (auto& w : want) w = store(w, od);
          expect_close(out, want, od, std::string(c.name) + " " + std::string(name(t)) + " layout " + std::to_string(layout));
        }
      }
    }
  }
}

TEST(Arith, ScalarFormsAndPromotion) {
  auto i = tensor({1, 2, 3});
  EXPECT_EQ((i + 2).dtype(), kInt64);
  EXPECT_EQ((i + 2.5).dtype(), kFloat32);
  EXPECT_EQ((i + 2.5).to_vector<double>(), (std::vector<double>{3.5, 4.5, 5.5}));
  EXPECT_EQ((i / 2).to_vector<double>(), (std::vector<double>{0.5, 1, 1.5}));
  EXPECT_EQ((2 - i).to_vector<double>(), (std::vector<double>{1, 0, -1}));
  EXPECT_EQ((6 / i).to_vector<double>(), (std::vector<double>{6, 3, 2}));
  EXPECT_EQ((-i).to_vector<double>(), (std::vector<double>{-1, -2, -3}));
  auto h = ones({2}, kFloat16);
  EXPECT_EQ((h * 3.0).dtype(), kFloat16);  // a scalar doesn't promote within its category
  auto u8 = tensor({250}).to(kUInt8);
  EXPECT_EQ((u8 + 10).dtype(), kUInt8);
  EXPECT_EQ((u8 + 10).item<int64_t>(), 4);  // wraps as uint8 does
  EXPECT_EQ((tensor({true}) + 1).dtype(), kInt64);
  // 0-d tensors take part at a lower priority than dimensioned ones.
  auto f64_0d = tensor({2.0}, kFloat64).view(IntArrayRef{});
  EXPECT_EQ((ones({2}) * f64_0d).dtype(), kFloat32);
  EXPECT_EQ((i * f64_0d).dtype(), kFloat64);
  EXPECT_EQ((ones({2}, kFloat16) + ones({2}, kBFloat16)).dtype(), kFloat32);
}

// Python's modulo on integers: the divisor's sign, MIN % -1 is 0 (no trap), and an unsigned
// all-ones divisor (255 for uint8) is an ordinary divisor, not -1.
TEST(Arith, IntegerRemainderSignsAndAllOnesDivisor) {
  auto u8 = tensor({0, 7, 254, 255}).to(kUInt8);
  EXPECT_EQ(remainder(u8, 255).to_vector<int64_t>(), (std::vector<int64_t>{0, 7, 254, 0}));
  EXPECT_EQ(remainder(u8, tensor({255, 255, 255, 255}).to(kUInt8)).to_vector<int64_t>(),
            (std::vector<int64_t>{0, 7, 254, 0}));
  EXPECT_EQ(remainder(u8, 4).to_vector<int64_t>(), (std::vector<int64_t>{0, 3, 2, 3}));
  auto i8 = tensor({-128, -7, 7, 6}).to(kInt8);
  EXPECT_EQ(remainder(i8, -1).to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 0, 0}));
  EXPECT_EQ(remainder(i8, 3).to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 1, 0}));
  EXPECT_EQ(remainder(i8, -3).to_vector<int64_t>(), (std::vector<int64_t>{-2, -1, -2, 0}));
}

TEST(Arith, InPlaceFormsWriteIntoSelf) {
  auto a = arange(6).view({2, 3}).to(kFloat32);
  auto base = a.data_ptr();
  a.add_(tensor({1., 1., 1.}), 2).sub_(1).mul_(3).div_(tensor({{1.}, {2.}}));
  EXPECT_EQ(a.data_ptr(), base);
  EXPECT_EQ(a.to_vector<double>(), (std::vector<double>{3, 6, 9, 6, 7.5, 9}));
  auto h = ones({2}, kFloat16);
  h += ones({2});  // float32 computed, written back as float16
  EXPECT_EQ(h.dtype(), kFloat16);
  EXPECT_EQ(h.to_vector<double>(), (std::vector<double>{2, 2}));
  auto t = zeros({3, 2}).t();  // in place on a non-contiguous view
  t += arange(6).view({2, 3});
  EXPECT_EQ(t.to_vector<double>(), (std::vector<double>{0, 1, 2, 3, 4, 5}));
}

TEST(Reduce, SumAndMeanEveryDtypeAndDims) {
  std::mt19937 rng(3);
  std::vector<int64_t> shape = {3, 4, 5};
  for (Dtype t : kAll) {
    for (int layout : {0, 1, 2}) {
      auto v = random_values(t, 60, rng);
      Tensor x = with_layout(make(v, shape, t), layout);
      auto rv = make(v, shape, t).to_vector<double>();
      Dtype sd = is_integral(t, true) ? kInt64 : t;
      // All elements.
      double total = 0;
      for (double e : rv) total += e;
      expect_close(x.sum(), {store(total, sd)}, sd, "sum all");
      EXPECT_EQ(x.sum().dtype(), sd);
      if (is_floating_point(t)) expect_close(x.mean(), {store(total / 60, t)}, t, "mean all");
      // Over dims {0, 2} with and without keepdim, and over dim 1.
      std::vector<double> s02(4, 0), s1(15, 0);
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 4; ++j)
          for (int k = 0; k < 5; ++k) {
            double e = rv[size_t(i * 20 + j * 5 + k)];
            s02[size_t(j)] += e;
            s1[size_t(i * 5 + k)] += e;
          }
      std::vector<double> w02(s02), w1(s1);
      for (auto& e : w02) e = store(e, sd);
      for (auto& e : w1) e = store(e, sd);
      expect_close(x.sum({0, 2}), w02, sd, "sum {0,2}");
      EXPECT_EQ(x.sum({0, 2}, true).sizes().vec(), (std::vector<int64_t>{1, 4, 1}));
      expect_close(x.sum({-2}), w1, sd, "sum {-2}");
      if (is_floating_point(t)) {
        for (auto& e : s1) e = store(e / 4, t);
        expect_close(x.mean({1}), s1, t, "mean {1}");
      }
    }
  }
}

TEST(Reduce, AccuracyAndEdgeCases) {
  // float32 sums of many values stay accurate (pairwise summation).
  const int64_t n = 1 << 22;
  auto x = full({n}, 0.1f, kFloat32);
  EXPECT_NEAR(x.sum().item<double>(), double(0.1f) * double(n), 1e-6 * double(n) * 0.1);
  // float16 accumulates in float32: 4096 ones sum to 4096 (float16 alone would stop at 2048).
  EXPECT_EQ(ones({4096}, kFloat16).sum().item<double>(), 4096.0);
  EXPECT_EQ(empty({0}).sum().item<double>(), 0.0);
  EXPECT_TRUE(std::isnan(empty({0}).mean().item<double>()));
  EXPECT_EQ(tensor({true, true, false}).sum().item<int64_t>(), 2);
  EXPECT_EQ(ones({2, 3}).sum(IntArrayRef{}).item<double>(), 6.0);  // an empty dim list reduces all
  EXPECT_EQ(ones({2}, kInt32).sum(kFloat64).dtype(), kFloat64);
  EXPECT_THROW(ones({2, 3}).sum({0, 0}), ValueError);
  EXPECT_THROW(ones({2, 3}).sum({2}), IndexError);
}

TEST(Matmul, AgainstReferenceEveryDtypeAndShape) {
  std::mt19937 rng(11);
  struct Case { std::vector<int64_t> a, b; };
  std::vector<Case> cases = {{{3, 4}, {4, 5}}, {{4}, {4}}, {{4}, {4, 2}}, {{3, 4}, {4}}, {{2, 3, 4}, {4, 5}},
                             {{2, 1, 3, 4}, {3, 4, 2}}, {{5}, {2, 5, 3}}, {{3, 0}, {0, 2}}};
  for (Dtype t : {kUInt8, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64}) {
    for (auto& c : cases) {
      for (int layout : {0, 1}) {
        int64_t na = 1, nb = 1;
        for (auto s : c.a) na *= s;
        for (auto s : c.b) nb *= s;
        auto va = random_values(t, na, rng), vb = random_values(t, nb, rng);
        Tensor a = with_layout(make(va, c.a, t), layout), b = with_layout(make(vb, c.b, t), layout);
        Tensor out = matmul(a, b);
        // Reference: broadcast to 3-D batches in float64 with plain loops.
        Tensor A = make(va, c.a, t).to(kFloat64), B = make(vb, c.b, t).to(kFloat64);
        Tensor A2 = A.dim() == 1 ? A.unsqueeze(0) : A, B2 = B.dim() == 1 ? B.unsqueeze(1) : B;
        int64_t n = A2.size(-2), k = A2.size(-1), m = B2.size(-1);
        DimVector batch;
        {
          size_t nd = std::max(A2.dim(), B2.dim()) - 2;
          batch.resize(nd, 1);
          for (size_t i = 0; i < nd; ++i) {
            int64_t sa = i + A2.dim() - 2 >= nd ? A2.size(int64_t(i + A2.dim() - 2 - nd)) : 1;
            int64_t sb = i + B2.dim() - 2 >= nd ? B2.size(int64_t(i + B2.dim() - 2 - nd)) : 1;
            batch[i] = std::max(sa, sb);
          }
        }
        DimVector ea(batch), eb(batch);
        ea.push_back(n); ea.push_back(k); eb.push_back(k); eb.push_back(m);
        auto a3 = A2.expand(ea).contiguous().to_vector<double>(), b3 = B2.expand(eb).contiguous().to_vector<double>();
        int64_t nbat = 1;
        for (auto s : batch) nbat *= s;
        std::vector<double> want(size_t(nbat * n * m), 0);
        for (int64_t q = 0; q < nbat; ++q)
          for (int64_t i = 0; i < n; ++i)
            for (int64_t j = 0; j < m; ++j) {
              double s = 0;
              for (int64_t p = 0; p < k; ++p) s += a3[size_t(q * n * k + i * k + p)] * b3[size_t(q * k * m + p * m + j)];
              want[size_t(q * n * m + i * m + j)] = store(s, t);
            }
        ASSERT_EQ(out.numel(), int64_t(want.size()));
        double tl = t == kFloat16 ? 4e-3 : t == kBFloat16 ? 2e-2 : t == kFloat32 ? 1e-5 : 1e-12;
        auto got = out.to_vector<double>();
        for (size_t i = 0; i < got.size(); ++i)
          EXPECT_NEAR(got[i], want[i], tl * std::max(1.0, std::fabs(want[i]) + 4 * double(k)))
              << name(t) << " case " << &c - cases.data() << " layout " << layout;
      }
    }
  }
  EXPECT_EQ(matmul(ones({4}), ones({4})).dim(), 0);
  EXPECT_EQ(matmul(ones({2, 1, 3, 4}), ones({3, 4, 2})).sizes().vec(), (std::vector<int64_t>{2, 3, 3, 2}));
  EXPECT_THROW(matmul(ones({2, 3}), ones({2, 3}, kFloat64)), TypeError);
}
