// The composites of src/core/composite_ops.cpp (isnan/isinf/isfinite, isclose/allclose,
// count_nonzero, prod, roll, fliplr/flipud, flatten, type_as, maximum/minimum and amax/amin at
// ties): values against references computed here with plain loops over float64 (or by hand),
// on every device present, with non-contiguous inputs, and the errors PyTorch raises.
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "op_reference.h"
#include "wick/wick.h"

using namespace wick;
using namespace wick::test;

namespace {

const double kNan = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

std::vector<double> values(const Tensor& t) { return t.cpu().to(kFloat64).contiguous().to_vector<double>(); }

class CompositeOps : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override {
    if (GetParam().is_cuda() && !cuda::is_available()) GTEST_SKIP() << "no CUDA device";
    manual_seed(5);
  }
  Device dev() const { return GetParam(); }
  Tensor on(std::vector<double> v, Dtype dt = kFloat32) const {
    return tensor(v, TensorOptions(kFloat64)).to(dev(), dt);
  }
};

TEST_P(CompositeOps, NanInfFiniteTests) {
  const std::vector<double> v{1.5, kNan, kInf, -kInf, 0.0, -2.0};
  for (Dtype dt : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    Tensor x = on(v, dt);
    Tensor n = isnan(x), i = x.isinf(), f = isfinite(x);
    EXPECT_EQ(n.dtype(), kBool);
    EXPECT_EQ(values(n), (std::vector<double>{0, 1, 0, 0, 0, 0}));
    EXPECT_EQ(values(i), (std::vector<double>{0, 0, 1, 1, 0, 0}));
    EXPECT_EQ(values(f), (std::vector<double>{1, 0, 0, 0, 1, 1}));
  }
  // Integers hold neither NaN nor infinity; a strided view reads its own elements.
  Tensor k = tensor(std::vector<int64_t>{3, -1, 0, 7}).to(dev()).reshape({2, 2}).t();
  EXPECT_EQ(values(isnan(k)), (std::vector<double>{0, 0, 0, 0}));
  EXPECT_EQ(values(k.isfinite()), (std::vector<double>{1, 1, 1, 1}));
  Tensor x = on({kNan, 1, kInf, 2}).reshape({2, 2}).t();
  EXPECT_EQ(values(isnan(x)), (std::vector<double>{1, 0, 0, 0}));
  EXPECT_EQ(values(isinf(x)), (std::vector<double>{0, 1, 0, 0}));
  // The result never requires grad.
  Tensor g = on({1, 2}).requires_grad_();
  EXPECT_FALSE(isfinite(g).requires_grad());
}

TEST_P(CompositeOps, IscloseAgainstTheFormula) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(-2, 2);
  std::vector<double> a(40), b(40);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = u(rng);
    // Half the pairs within a hair of each other, on either side of the tolerance.
    b[i] = i % 2 ? a[i] * (1 + (i % 4 == 1 ? 5e-6 : 2e-5)) : u(rng);
  }
  a.insert(a.end(), {kInf, kInf, kNan, kNan, 1.0, 0.0});
  b.insert(b.end(), {kInf, -kInf, kNan, 1.0, kNan, 1e-9});
  for (bool equal_nan : {false, true}) {
    Tensor r = isclose(on(a, kFloat64), on(b, kFloat64), 1e-5, 1e-8, equal_nan);
    std::vector<double> got = values(r);
    for (size_t i = 0; i < a.size(); ++i) {
      bool want = a[i] == b[i] || std::fabs(a[i] - b[i]) <= 1e-8 + 1e-5 * std::fabs(b[i]);
      if (std::isnan(a[i]) || std::isnan(b[i])) want = equal_nan && std::isnan(a[i]) && std::isnan(b[i]);
      EXPECT_EQ(got[i], double(want)) << i << ": " << a[i] << " vs " << b[i] << " equal_nan " << equal_nan;
    }
  }
  // Broadcasting, a transposed operand, the method form and allclose.
  Tensor m = on({1, 2, 3, 4}).reshape({2, 2});
  EXPECT_EQ(values(m.t().isclose(on({1, 3}).reshape({1, 2}))), (std::vector<double>{1, 1, 0, 0}));
  EXPECT_TRUE(allclose(m, m + 1e-7));
  EXPECT_FALSE(m.allclose(m + 1e-3));
  EXPECT_TRUE(allclose(m, m + 1e-3, 0, 1e-2));
  // Integers compare exactly.
  Tensor k = tensor(std::vector<int64_t>{5, 6}).to(dev());
  EXPECT_EQ(values(isclose(k, tensor(std::vector<int64_t>{5, 7}).to(dev()))), (std::vector<double>{1, 0}));
  // PyTorch's errors.
  EXPECT_THROW(isclose(m, m.to(kFloat64)), TypeError);
  EXPECT_THROW(isclose(m, m, -1.0), ValueError);
  EXPECT_THROW(allclose(m, m, 1e-5, -1.0), ValueError);
  try {
    isclose(m, m, -1.0);
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[isclose]", 0), 0u) << e.what();
  }
}

TEST_P(CompositeOps, CountNonzero) {
  Tensor x = on({0, 1, 2, 0, 0, 3}, kFloat32).reshape({2, 3});
  EXPECT_EQ(count_nonzero(x).item<int64_t>(), 3);
  EXPECT_EQ(count_nonzero(x).dtype(), kInt64);
  EXPECT_EQ(values(x.count_nonzero(0)), (std::vector<double>{0, 1, 2}));
  EXPECT_EQ(values(count_nonzero(x.t(), {0})), (std::vector<double>{2, 1}));
  EXPECT_EQ(values(count_nonzero(x, {0, 1})), (std::vector<double>{3}));
  EXPECT_EQ(count_nonzero(tensor(std::vector<bool>{true, false, true}).to(dev())).item<int64_t>(), 2);
  EXPECT_THROW(count_nonzero(x, 2), IndexError);
}

TEST_P(CompositeOps, ProdValuesDtypesAndEmpty) {
  std::mt19937 rng(7);
  for (Dtype dt : {kFloat32, kFloat64, kInt32, kInt64, kBFloat16}) {
    Host h = random_host({3, 4, 2}, dt, Domain::Small, rng);
    for (Layout l : {Layout::Contiguous, Layout::Transposed}) {
      Tensor t = with_layout(h, dt, dev(), l);
      std::vector<double> v = values(t);  // row-major values of t as laid out
      const Dtype want = is_integral(dt, true) ? kInt64 : dt;
      const double tol = dt == kBFloat16 ? 5e-2 : 1e-5;
      double all = 1;
      for (double x : v) all *= x;
      Tensor p = prod(t);
      EXPECT_EQ(p.dtype(), want);
      EXPECT_NEAR(p.item<double>(), all, tol * std::max(1.0, std::fabs(all))) << dt;
      // Along dim 1, with and without keepdim.
      const int64_t d0 = t.size(0), d1 = t.size(1), d2 = t.size(2);
      std::vector<double> ref(size_t(d0 * d2), 1);
      for (int64_t i = 0; i < d0; ++i)
        for (int64_t j = 0; j < d1; ++j)
          for (int64_t k = 0; k < d2; ++k) ref[size_t(i * d2 + k)] *= v[size_t((i * d1 + j) * d2 + k)];
      Tensor pd = t.prod(1);
      EXPECT_EQ(pd.sizes().vec(), (Shape{d0, d2}));
      std::vector<double> got = values(pd);
      for (size_t i = 0; i < ref.size(); ++i) EXPECT_NEAR(got[i], ref[i], tol * std::max(1.0, std::fabs(ref[i])));
      EXPECT_EQ(prod(t, -2, true).sizes().vec(), (Shape{d0, 1, d2}));
    }
  }
  // dtype casts first; an empty product is 1; bool gives int64.
  Tensor b = tensor(std::vector<bool>{true, true, false}).to(dev());
  EXPECT_EQ(prod(b).dtype(), kInt64);
  EXPECT_EQ(prod(b).item<int64_t>(), 0);
  EXPECT_EQ(prod(on({2, 3}), kFloat64).dtype(), kFloat64);
  EXPECT_EQ(prod(zeros({0}, TensorOptions().device(dev()))).item<double>(), 1.0);
  Tensor e = prod(zeros({2, 0}, TensorOptions().device(dev())), 1);
  EXPECT_EQ(values(e), (std::vector<double>{1, 1}));
  EXPECT_THROW(prod(on({1, 2}), 1), IndexError);
}

TEST_P(CompositeOps, RollFlipFlattenTypeAs) {
  Tensor x = arange(12, TensorOptions(kFloat32).device(dev())).reshape({3, 4});
  auto at = [](const std::vector<double>& v, int64_t i, int64_t j) { return v[size_t(i * 4 + j)]; };
  const std::vector<double> xv = values(x);
  for (int64_t s0 : {-4, -1, 0, 1, 5})
    for (int64_t s1 : {-3, 2, 9}) {
      std::vector<double> got = values(roll(x, {s0, s1}, {0, 1}));
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 4; ++j) {
          const int64_t si = (((i - s0) % 3) + 3) % 3, sj = (((j - s1) % 4) + 4) % 4;
          EXPECT_EQ(at(got, i, j), at(xv, si, sj)) << s0 << " " << s1;
        }
    }
  // Without dims: the flattened tensor rolls, the shape stays.
  Tensor r = x.roll(3);
  EXPECT_EQ(r.sizes().vec(), (Shape{3, 4}));
  std::vector<double> rv = values(r);
  for (int64_t i = 0; i < 12; ++i) EXPECT_EQ(rv[size_t(i)], double((i - 3 + 12) % 12));
  // A transposed input, a negative dim.
  std::vector<double> tv = values(roll(x.t(), 1, -1));  // [4, 3]
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(tv[size_t(i * 3 + j)], at(xv, (j + 2) % 3, i));
  EXPECT_THROW(roll(x, {1, 2}, {0}), ValueError);
  EXPECT_THROW(roll(x, {1, 2}), ValueError);
  EXPECT_THROW(roll(x, 1, 2), IndexError);

  std::vector<double> lr = values(fliplr(x)), ud = values(x.flipud());
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j) {
      EXPECT_EQ(at(lr, i, j), at(xv, i, 3 - j));
      EXPECT_EQ(at(ud, i, j), at(xv, 2 - i, j));
    }
  EXPECT_THROW(fliplr(x.reshape({12})), ValueError);
  EXPECT_THROW(flipud(x.sum()), ValueError);

  Tensor f = flatten(x.reshape({3, 2, 2}), 1);
  EXPECT_EQ(f.sizes().vec(), (Shape{3, 4}));
  EXPECT_EQ(flatten(x).sizes().vec(), (Shape{12}));
  EXPECT_EQ(values(f), xv);

  Tensor k = tensor(std::vector<int64_t>{1, 2}).to(dev());
  EXPECT_EQ(x.type_as(k).dtype(), kInt64);
  EXPECT_EQ(k.type_as(x).dtype(), kFloat32);
  EXPECT_EQ(values(k.type_as(x)), (std::vector<double>{1, 2}));
}

TEST_P(CompositeOps, MaximumMinimumAmaxAtTiesAndNan) {
  Tensor a = on({1, 5, kNan, 2}), b = on({3, 5, 0, kNan});
  std::vector<double> mx = values(maximum(a, b)), mn = values(minimum(a, b));
  EXPECT_EQ(mx[0], 3);
  EXPECT_EQ(mx[1], 5);
  EXPECT_TRUE(std::isnan(mx[2]) && std::isnan(mx[3]));
  EXPECT_EQ(mn[0], 1);
  EXPECT_TRUE(std::isnan(mn[2]) && std::isnan(mn[3]));
  // Promotion and broadcasting.
  Tensor k = tensor(std::vector<int64_t>{2}).to(dev());
  EXPECT_EQ(maximum(k, on({1.5, 2.5})).dtype(), kFloat32);
  EXPECT_EQ(values(maximum(k, on({1.5, 2.5}))), (std::vector<double>{2, 2.5}));
  EXPECT_THROW(maximum(on({1, 2}), on({1, 2, 3})), ValueError);
  Tensor tb = tensor(std::vector<bool>{true}).to(dev());
  EXPECT_THROW(maximum(tb, tb), TypeError);
  // Equal operands share the gradient in halves (PyTorch's rule).
  Tensor p = on({1, 4, 2}, kFloat64).requires_grad_(), q = on({3, 4, 1}, kFloat64).requires_grad_();
  maximum(p, q).sum().backward();
  EXPECT_EQ(values(p.grad()), (std::vector<double>{0, 0.5, 1}));
  EXPECT_EQ(values(q.grad()), (std::vector<double>{1, 0.5, 0}));
  EXPECT_EQ(maximum(p, q).grad_fn()->name(), "MaximumBackward0");
  EXPECT_EQ(minimum(p, q).grad_fn()->name(), "MinimumBackward0");
  // amax's gradient is shared by the elements equal to the max.
  Tensor t = on({3, 1, 3, 2, 2, 0}, kFloat64).reshape({2, 3}).requires_grad_();
  Tensor m = amax(t, 1);
  EXPECT_EQ(values(m), (std::vector<double>{3, 2}));
  m.sum().backward();
  EXPECT_EQ(values(t.grad()), (std::vector<double>{0.5, 0, 0.5, 0.5, 0.5, 0}));
  EXPECT_EQ(m.grad_fn()->name(), "AmaxBackward0");
  EXPECT_EQ(t.amin().grad_fn()->name(), "AminBackward0");
  EXPECT_EQ(values(amax(on({1, kNan, 3}))).size(), 1u);
  EXPECT_TRUE(std::isnan(amax(on({1, kNan, 3})).item<double>()));
  EXPECT_THROW(amax(on({1, 2}), {0, 0}), ValueError);
  EXPECT_THROW(amax(zeros({0}, TensorOptions().device(dev()))), ValueError);  // as max() of an empty tensor
  EXPECT_THROW(amax(zeros({2, 0}, TensorOptions().device(dev())), 1), IndexError);
  EXPECT_EQ(amax(zeros({2, 0}, TensorOptions().device(dev())), 0).sizes().vec(), (Shape{0}));
}

TEST_P(CompositeOps, UnaryRoundingEdges) {
  // Round half to even, -0.0 and NaN kept; sign of NaN is 0, of bool is itself.
  Tensor x = on({0.5, 1.5, 2.5, -0.5, -1.5, -2.7, 2.7, kNan});
  std::vector<double> r = values(round(x));
  EXPECT_EQ(r[0], 0);
  EXPECT_EQ(r[1], 2);
  EXPECT_EQ(r[2], 2);
  EXPECT_EQ(r[3], 0);
  EXPECT_TRUE(std::signbit(r[3]));
  EXPECT_EQ(r[4], -2);
  EXPECT_EQ(r[5], -3);
  EXPECT_TRUE(std::isnan(r[7]));
  EXPECT_EQ(values(floor(x))[5], -3);
  EXPECT_EQ(values(ceil(x))[5], -2);
  EXPECT_EQ(values(trunc(x))[5], -2);
  EXPECT_NEAR(values(frac(x))[5], -0.7, 1e-6);
  EXPECT_EQ(values(sign(x))[7], 0);
  EXPECT_EQ(values(sign(x))[5], -1);
  Tensor b = tensor(std::vector<bool>{true, false}).to(dev());
  EXPECT_EQ(sign(b).dtype(), kBool);
  EXPECT_EQ(values(sign(b)), (std::vector<double>{1, 0}));
  EXPECT_THROW(floor(b), TypeError);
  EXPECT_THROW(frac(tensor(std::vector<int64_t>{1}).to(dev())), TypeError);
  // Integers are their own floor, ceil, round and trunc.
  Tensor k = tensor(std::vector<int64_t>{-3, 4}).to(dev());
  EXPECT_EQ(round(k).dtype(), kInt64);
  EXPECT_EQ(values(k.ceil()), (std::vector<double>{-3, 4}));
  EXPECT_EQ(values(k.sign()), (std::vector<double>{-1, 1}));
  EXPECT_NEAR(values(reciprocal(k))[0], -1.0 / 3, 1e-7);
  EXPECT_EQ(values(reciprocal(k))[1], 0.25);
  EXPECT_EQ(reciprocal(k).dtype(), kFloat32);
  EXPECT_EQ(values(square(tensor(std::vector<bool>{true, false}).to(dev()))), (std::vector<double>{1, 0}));
  EXPECT_EQ(square(tensor(std::vector<bool>{true}).to(dev())).dtype(), kInt64);
}

TEST_P(CompositeOps, DotMvDiagMeshgridLogspace) {
  Tensor a = on({1, 2, 3}), b = on({4, -5, 6});
  EXPECT_FLOAT_EQ(dot(a, b).item<float>(), 4 - 10 + 18);
  EXPECT_FLOAT_EQ(a.dot(b.flip({0})).item<float>(), 6 - 10 + 12);
  EXPECT_THROW(dot(a, on({1, 2})), ValueError);
  EXPECT_THROW(dot(a, b.to(kFloat64)), TypeError);
  EXPECT_THROW(dot(a.reshape({1, 3}), b), ValueError);
  Tensor m = on({1, 2, 3, 4, 5, 6}).reshape({2, 3});
  EXPECT_EQ(values(mv(m, a)), (std::vector<double>{14, 32}));
  EXPECT_EQ(values(m.t().mv(on({1, -1}))), (std::vector<double>{-3, -3, -3}));
  EXPECT_THROW(mv(m, on({1, 2})), ValueError);

  // diag of a vector: an (n + |k|)^2 matrix; of a matrix: its k-th diagonal.
  for (int64_t k : {-2, -1, 0, 1, 3}) {
    Tensor d = diag(a, k);
    const int64_t n = 3 + std::abs(k);
    ASSERT_EQ(d.sizes().vec(), (Shape{n, n}));
    std::vector<double> dv = values(d);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const int64_t idx = k >= 0 ? i : j;
        const double want = j - i == k ? double(idx + 1) : 0.0;
        EXPECT_EQ(dv[size_t(i * n + j)], want) << k << " " << i << " " << j;
      }
  }
  Tensor sq = arange(12, TensorOptions(kFloat32).device(dev())).reshape({3, 4});
  EXPECT_EQ(values(diag(sq)), (std::vector<double>{0, 5, 10}));
  EXPECT_EQ(values(sq.diag(1)), (std::vector<double>{1, 6, 11}));
  EXPECT_EQ(values(sq.diag(-1)), (std::vector<double>{4, 9}));
  EXPECT_EQ(values(diag(sq.t(), 2)), (std::vector<double>{8}));
  EXPECT_EQ(diag(sq, 5).numel(), 0);
  EXPECT_THROW(diag(sq.reshape({3, 2, 2})), ValueError);
  // Offsets at the ends of int64: nothing selected from a matrix; a vector's matrix too large.
  const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(diag(sq, hi).numel(), 0);
  EXPECT_EQ(diag(sq, lo).numel(), 0);
  EXPECT_THROW(diag(a, lo), ValueError);
  EXPECT_THROW(diag(a, hi), ValueError);
  EXPECT_THROW(diag(a, int64_t(1) << 40), Error);

  auto g = meshgrid({a, on({7, 8})}, "ij");
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[0].sizes().vec(), (Shape{3, 2}));
  EXPECT_EQ(values(g[0]), (std::vector<double>{1, 1, 2, 2, 3, 3}));
  EXPECT_EQ(values(g[1]), (std::vector<double>{7, 8, 7, 8, 7, 8}));
  auto x = meshgrid({a, on({7, 8})}, "xy");
  EXPECT_EQ(x[0].sizes().vec(), (Shape{2, 3}));
  EXPECT_EQ(values(x[0]), (std::vector<double>{1, 2, 3, 1, 2, 3}));
  EXPECT_EQ(values(x[1]), (std::vector<double>{7, 7, 7, 8, 8, 8}));
  EXPECT_THROW(meshgrid({a, m}), ValueError);
  EXPECT_THROW(meshgrid({a}, "ji"), ValueError);

  EXPECT_EQ(logspace(0, 1, 2).dtype(), get_default_dtype());
  std::vector<double> ls = values(logspace(0, 2, 3, 10.0, TensorOptions().device(dev())));
  EXPECT_NEAR(ls[0], 1, 1e-5);
  EXPECT_NEAR(ls[1], 10, 1e-4);
  EXPECT_NEAR(ls[2], 100, 1e-3);
  EXPECT_EQ(logspace(0, 3, 4, 2.0, TensorOptions(kFloat64)).to_vector<double>(), (std::vector<double>{1, 2, 4, 8}));
  auto u = unbind(m, 1);
  ASSERT_EQ(u.size(), 3u);
  EXPECT_EQ(values(u[2]), (std::vector<double>{3, 6}));
}

TEST_P(CompositeOps, RandpermNormalBernoulli) {
  for (int64_t n : {0, 1, 7, 1000}) {
    manual_seed(11);
    Tensor p = randperm(n, TensorOptions().device(dev()));
    EXPECT_EQ(p.dtype(), kInt64);
    EXPECT_EQ(p.device(), dev());
    std::vector<int64_t> v = p.cpu().to_vector<int64_t>();
    std::vector<int64_t> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(sorted[size_t(i)], i);
    // The same permutation on the CPU for the same seed.
    manual_seed(11);
    EXPECT_EQ(randperm(n).to_vector<int64_t>(), v);
  }
  manual_seed(3);
  Tensor a = randperm(50, TensorOptions().device(dev())), b = randperm(50, TensorOptions().device(dev()));
  EXPECT_FALSE(equal(a, b));
  EXPECT_EQ(randperm(5, TensorOptions(kInt32)).dtype(), kInt32);
  EXPECT_THROW(randperm(-1), ValueError);
  // The dtype must hold n - 1 exactly.
  EXPECT_EQ(randperm(200, TensorOptions(kInt16)).to(kInt64).sum().item<int64_t>(), 199 * 200 / 2);
  EXPECT_EQ(randperm(256, TensorOptions(kUInt8)).numel(), 256);
  EXPECT_THROW(randperm(129, TensorOptions(kInt8)), ValueError);
  EXPECT_THROW(randperm(2050, TensorOptions(kFloat16)), ValueError);
  EXPECT_THROW(randperm(2, TensorOptions(kBool)), ValueError);

  Tensor z = normal(2.0, 0.5, {20000}, TensorOptions().device(dev()));
  EXPECT_NEAR(z.mean().item<double>(), 2.0, 0.02);
  EXPECT_NEAR(z.std().item<double>(), 0.5, 0.02);
  EXPECT_THROW(normal(0, -1, {2}), ValueError);

  Tensor probs = on({0.0, 1.0, 0.25}).repeat({4000, 1});
  Tensor d = bernoulli(probs);
  EXPECT_EQ(d.dtype(), kFloat32);
  std::vector<double> col = values(d.mean({0}));
  EXPECT_EQ(col[0], 0);
  EXPECT_EQ(col[1], 1);
  EXPECT_NEAR(col[2], 0.25, 0.03);
  EXPECT_NEAR(probs.bernoulli(0.75).mean().item<double>(), 0.75, 0.02);
  Tensor t = zeros({10000}, TensorOptions(kFloat64).device(dev()));
  t.bernoulli_(0.1);
  EXPECT_NEAR(t.mean().item<double>(), 0.1, 0.015);
  t.bernoulli_(on({1.0}, kFloat64));
  EXPECT_EQ(t.mean().item<double>(), 1.0);
  EXPECT_THROW(bernoulli(on({1.5})), ValueError);
  EXPECT_THROW(t.bernoulli_(-0.1), ValueError);
  EXPECT_THROW(bernoulli(t, 2.0), ValueError);
}

TEST(CompositeOpsPrint, LibTorchsTypeAndSizesOnStderr) {
  ::testing::internal::CaptureStderr();
  zeros({2, 3}).print();
  zeros({4}, kInt64).print();
  zeros({}, kBFloat16).print();
  Tensor().print();
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "[CPUFloatType [2, 3]]\n[CPULongType [4]]\n[CPUBFloat16Type []]\n[UndefinedTensor]\n");
}

INSTANTIATE_TEST_SUITE_P(Devices, CompositeOps, ::testing::Values(Device(kCPU), Device(kCUDA, 0)),
                         [](const auto& info) { return info.param.is_cuda() ? "cuda" : "cpu"; });

}  // namespace
