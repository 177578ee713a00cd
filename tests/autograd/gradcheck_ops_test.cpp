// Gradient checks (central differences, float64) for the elementwise math, softmax, max/min,
// var/std/norm, indexing and joining ops, bmm and addmm; CPU and, when present, cuda:0.
#include <cmath>

#include <gtest/gtest.h>

#include "gradcheck.h"
#include "wick/wick.h"

using namespace wick;
using wick::testing::gradcheck;
using wick::testing::rnd;
using T = std::vector<Tensor>;

namespace {

class GradcheckOps : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override {
    if (GetParam().is_cuda() && !cuda::is_available()) GTEST_SKIP() << "no CUDA device";
    manual_seed(99);
  }
  Device dev() const { return GetParam(); }
};

// Positive inputs for log, sqrt, rsqrt and pow.
Tensor pos(IntArrayRef sizes) { return (rnd(sizes, false).abs() + 0.5).requires_grad_(); }
// Inputs away from 0 for functions with a kink there (abs, relu, clamp bounds).
Tensor away(IntArrayRef sizes) {
  Tensor r = rnd(sizes, false);
  return (r + (r > 0).to(kFloat64) * 0.2 - (r <= 0).to(kFloat64) * 0.2).requires_grad_();
}

TEST_P(GradcheckOps, Unary) {
  gradcheck([](const T& x) { return neg(x[0]); }, {rnd({2, 3})}, dev());
  gradcheck([](const T& x) { return -x[0]; }, {rnd({2, 3})}, dev());
  gradcheck([](const T& x) { return abs(x[0]); }, {away({2, 3})}, dev());
  gradcheck([](const T& x) { return exp(x[0]); }, {rnd({2, 3})}, dev());
  gradcheck([](const T& x) { return expm1(x[0]); }, {rnd({2, 3})}, dev());
  gradcheck([](const T& x) { return log(x[0]); }, {pos({2, 3})}, dev());
  gradcheck([](const T& x) { return sqrt(x[0]); }, {pos({2, 3})}, dev());
  gradcheck([](const T& x) { return rsqrt(x[0]); }, {pos({2, 3})}, dev());
  gradcheck([](const T& x) { return sin(x[0]); }, {rnd({2, 3})}, dev());
  gradcheck([](const T& x) { return cos(x[0]); }, {rnd({2, 3})}, dev());
  gradcheck([](const T& x) { return tanh(x[0]); }, {rnd({2, 3})}, dev());
  gradcheck([](const T& x) { return sigmoid(x[0]); }, {rnd({2, 3})}, dev());
  gradcheck([](const T& x) { return relu(x[0]); }, {away({2, 3})}, dev());
  gradcheck([](const T& x) { return gelu(x[0]); }, {rnd({2, 3})}, dev());
  gradcheck([](const T& x) { return gelu(x[0], "tanh"); }, {rnd({2, 3})}, dev());
  gradcheck([](const T& x) { return silu(x[0]); }, {rnd({2, 3})}, dev());
  gradcheck([](const T& x) { return x[0].relu() * x[0].sigmoid(); }, {away({4})}, dev());
}

// Inputs away from the integers, where floor, ceil, round, trunc and frac jump.
Tensor off_integers(IntArrayRef sizes) {
  Tensor r = rnd(sizes, false) * 3;
  return (r - r.floor()).clamp(0.1, 0.9).add(r.floor()).requires_grad_();
}

TEST_P(GradcheckOps, RoundingLogsReciprocalSquare) {
  for (auto f : {&wick::floor, &wick::ceil, &wick::round, &wick::trunc, &wick::frac, &wick::sign})
    gradcheck([f](const T& x) { return f(x[0]); }, {off_integers({2, 3})}, dev());
  gradcheck([](const T& x) { return tan(x[0]); }, {rnd({2, 3})}, dev());
  gradcheck([](const T& x) { return asin(x[0] * 0.3); }, {rnd({2, 3})}, dev());
  gradcheck([](const T& x) { return acos(x[0] * 0.3); }, {rnd({2, 3})}, dev());
  gradcheck([](const T& x) { return atan(x[0]); }, {rnd({2, 3})}, dev());
  gradcheck([](const T& x) { return sinh(x[0]); }, {rnd({2, 3})}, dev());
  gradcheck([](const T& x) { return cosh(x[0]); }, {rnd({2, 3})}, dev());
  gradcheck([](const T& x) { return erf(x[0]); }, {rnd({2, 3})}, dev());
  wick::testing::gradgradcheck([](const T& x) { return erf(x[0]); }, {rnd({3})}, dev());
  gradcheck([](const T& x) { return log2(x[0]); }, {pos({2, 3})}, dev());
  gradcheck([](const T& x) { return log10(x[0]); }, {pos({2, 3})}, dev());
  gradcheck([](const T& x) { return log1p(x[0]); }, {pos({2, 3})}, dev());
  gradcheck([](const T& x) { return reciprocal(x[0]); }, {away({2, 3})}, dev());
  gradcheck([](const T& x) { return square(x[0]); }, {rnd({2, 3})}, dev());
  gradcheck([](const T& x) { return x[0].clone().log1p_(); }, {pos({3})}, dev());
  // Second derivatives through the recorded formulas.
  wick::testing::gradgradcheck([](const T& x) { return log2(x[0]); }, {pos({3})}, dev());
  wick::testing::gradgradcheck([](const T& x) { return reciprocal(x[0]); }, {away({3})}, dev());
}

TEST_P(GradcheckOps, MaximumAmaxProdRoll) {
  gradcheck([](const T& x) { return maximum(x[0], x[1]); }, {rnd({2, 3}), rnd({3})}, dev());
  gradcheck([](const T& x) { return minimum(x[0], x[1]); }, {rnd({2, 1}), rnd({2, 3})}, dev());
  gradcheck([](const T& x) { return amax(x[0], {0, 2}); }, {rnd({2, 3, 4})}, dev());
  gradcheck([](const T& x) { return amin(x[0], 1, true); }, {rnd({2, 3, 4})}, dev());
  gradcheck([](const T& x) { return amax(x[0]); }, {rnd({5})}, dev());
  gradcheck([](const T& x) { return prod(x[0]); }, {rnd({2, 3})}, dev());
  gradcheck([](const T& x) { return prod(x[0], 1); }, {rnd({2, 3, 2})}, dev());
  gradcheck([](const T& x) { return x[0].prod(0, true); }, {rnd({3, 2})}, dev());
  // A zero among the factors: the gradient there is the product of the others.
  Tensor z = rnd({2, 4}, false);
  z.index_put_({0, 1}, 0.0);
  gradcheck([](const T& x) { return prod(x[0], 1); }, {z.requires_grad_()}, dev());
  wick::testing::gradgradcheck([](const T& x) { return prod(x[0], 1); }, {rnd({2, 3})}, dev());
  gradcheck([](const T& x) { return roll(x[0], {1, -2}, {0, 1}); }, {rnd({3, 4})}, dev());
  gradcheck([](const T& x) { return x[0].roll(2); }, {rnd({2, 3})}, dev());
}

TEST(AutogradNames, RoundingCompositeNodes) {
  auto x = wick::testing::rnd({2, 3});
  EXPECT_EQ(sign(x).grad_fn()->name(), "SignBackward0");
  EXPECT_EQ(tan(x).grad_fn()->name(), "TanBackward0");
  EXPECT_EQ(x.asin().grad_fn()->name(), "AsinBackward0");
  EXPECT_EQ(acos(x).grad_fn()->name(), "AcosBackward0");
  EXPECT_EQ(atan(x).grad_fn()->name(), "AtanBackward0");
  EXPECT_EQ(sinh(x).grad_fn()->name(), "SinhBackward0");
  EXPECT_EQ(cosh(x).grad_fn()->name(), "CoshBackward0");
  EXPECT_EQ(erf(x).grad_fn()->name(), "ErfBackward0");
  EXPECT_EQ(floor(x).grad_fn()->name(), "FloorBackward0");
  EXPECT_EQ(x.ceil().grad_fn()->name(), "CeilBackward0");
  EXPECT_EQ(round(x).grad_fn()->name(), "RoundBackward0");
  EXPECT_EQ(trunc(x).grad_fn()->name(), "TruncBackward0");
  EXPECT_EQ(frac(x).grad_fn()->name(), "FracBackward0");
  EXPECT_EQ(log2(x).grad_fn()->name(), "Log2Backward0");
  EXPECT_EQ(log10(x).grad_fn()->name(), "Log10Backward0");
  EXPECT_EQ(log1p(x).grad_fn()->name(), "Log1PBackward0");
  EXPECT_EQ(reciprocal(x).grad_fn()->name(), "ReciprocalBackward0");
  EXPECT_EQ(square(x).grad_fn()->name(), "PowBackward0");
  EXPECT_EQ(prod(x).grad_fn()->name(), "ProdBackward0");
  EXPECT_EQ(prod(x, 1).grad_fn()->name(), "ProdBackward1");
  EXPECT_EQ(roll(x, 1).grad_fn()->name(), "RollBackward0");
  EXPECT_EQ(amax(x, 1).grad_fn()->name(), "AmaxBackward0");
  // Piecewise-constant ops pass zeros back.
  floor(x).sum().backward();
  EXPECT_EQ(x.grad().abs().sum().item<double>(), 0.0);
}

TEST_P(GradcheckOps, PowRemainderClamp) {
  gradcheck([](const T& x) { return pow(x[0], 3); }, {rnd({2, 3})}, dev());
  gradcheck([](const T& x) { return pow(x[0], -1.5); }, {pos({2, 3})}, dev());
  gradcheck([](const T& x) { return pow(x[0], 0); }, {rnd({3})}, dev());
  gradcheck([](const T& x) { return pow(x[0], x[1]); }, {pos({2, 3}), rnd({2, 3})}, dev());
  gradcheck([](const T& x) { return pow(2.5, x[0]); }, {rnd({3})}, dev());
  gradcheck([](const T& x) { return remainder(x[0], 0.7); }, {rnd({3})}, dev());
  gradcheck([](const T& x) { return remainder(x[0], x[1]); }, {rnd({3}), pos({3})}, dev());
  gradcheck([](const T& x) { return clamp(x[0], -0.5, 0.5); }, {away({3, 3})}, dev());
  gradcheck([](const T& x) { return clamp_min(x[0], 0.1); }, {away({3, 3})}, dev());
  gradcheck([](const T& x) { return clamp_max(x[0], -0.1); }, {away({3, 3})}, dev());
  // Tensor bounds: each gets the gradient where it was taken.
  auto x = tensor({-2., -0.5, 0.3, 1.0, 2.5}, kFloat64).requires_grad_();
  auto lo = tensor({-1., -1., -1., 1.5, 0.}, kFloat64).requires_grad_();
  auto hi = tensor({1., 1., 0., 1.2, 2.}, kFloat64).requires_grad_();
  gradcheck([](const T& v) { return clamp(v[0], v[1], v[2]); }, {x, lo, hi}, dev());
  gradcheck([](const T& v) { return clamp_min(v[0], v[1]); }, {x, lo}, dev());
}

// Inputs away from the multiples of m (where fmod and the rounding divisions jump).
Tensor off_multiples(IntArrayRef sizes, double m) {
  Tensor r = rnd(sizes, false) * 3 / m;
  return ((r - r.floor()).clamp(0.1, 0.9).add(r.floor()) * m).requires_grad_();
}

TEST_P(GradcheckOps, FmodAndRoundingDivision) {
  gradcheck([](const T& x) { return fmod(x[0], 0.7); }, {off_multiples({3}, 0.7)}, dev());
  gradcheck([](const T& x) { return x[0].fmod(-1.3); }, {off_multiples({2, 3}, 1.3)}, dev());
  // d/dother = -trunc(self / other), negative quotients among them; other broadcast.
  Tensor a = tensor({-7.3, -2.2, 3.9, 6.6, -0.4, 1.1}, kFloat64).reshape({2, 3}).requires_grad_();
  Tensor b = tensor({2.1, -1.7, 0.9}, kFloat64).requires_grad_();
  gradcheck([](const T& x) { return fmod(x[0], x[1]); }, {a, b}, dev());
  gradcheck([](const T& x) { return x[0].clone().fmod_(x[1]); }, {a, b}, dev());
  // With a rounding mode the quotient is piecewise constant: zero gradients, as PyTorch's.
  gradcheck([](const T& x) { return div(x[0], x[1], "trunc"); }, {a, b}, dev());
  gradcheck([](const T& x) { return x[0].div(x[1], "floor"); }, {a, b}, dev());
  gradcheck([](const T& x) { return div(x[0], 0.7, "floor"); }, {off_multiples({3}, 0.7)}, dev());
  gradcheck([](const T& x) { return x[0].div(-0.7, "trunc"); }, {off_multiples({3}, 0.7)}, dev());
  gradcheck([](const T& x) { return x[0].clone().div_(0.7, "floor"); }, {off_multiples({3}, 0.7)}, dev());
  // No rounding mode: true division and its gradients.
  gradcheck([](const T& x) { return div(x[0], x[1], std::nullopt); }, {a, b}, dev());
}

TEST_P(GradcheckOps, FloorDivideHasNoDerivative) {
  // PyTorch's floor_divide records a node without a formula: the result requires grad, and
  // backward through it raises.
  for (bool scalar : {false, true}) {
    Tensor x = tensor({-7., 5., 3.5}, kFloat64).to(dev()).requires_grad_();
    Tensor y = scalar ? floor_divide(x, 2) : floor_divide(x, full({3}, 2.0, TensorOptions(kFloat64).device(dev())));
    ASSERT_TRUE(y.requires_grad());
    EXPECT_EQ(y.grad_fn()->name(), "NotImplemented");
    EXPECT_EQ(y.detach().cpu().to_vector<double>(), (std::vector<double>{-4, 2, 1}));
    try {
      y.sum().backward();
      FAIL() << "expected an error";
    } catch (const NotImplementedError& e) {
      EXPECT_EQ(std::string(e.what()), "[floor_divide] derivative for floor_divide is not implemented");
    }
  }
  Tensor x = tensor({1.5, -2.5}, kFloat64).requires_grad_();
  Tensor y = x * 1;
  y.floor_divide_(2);
  EXPECT_EQ(y.grad_fn()->name(), "NotImplemented");
  EXPECT_THROW(y.sum().backward(), NotImplementedError);
}

TEST_P(GradcheckOps, LgammaDigammaPolygamma) {
  // Positive inputs, and negative ones between the poles (the reflection's side).
  Tensor neg = tensor({-2.7, -1.4, -0.6, -3.2}, kFloat64).requires_grad_();
  for (const Tensor& x : {pos({2, 3}), neg}) {
    gradcheck([](const T& v) { return lgamma(v[0]); }, {x}, dev());
    gradcheck([](const T& v) { return v[0].digamma(); }, {x}, dev());
    gradcheck([](const T& v) { return polygamma(1, v[0]); }, {x}, dev());
    gradcheck([](const T& v) { return v[0].polygamma(2); }, {x}, dev());
    gradcheck([](const T& v) { return polygamma(0, v[0]); }, {x}, dev());
  }
  gradcheck([](const T& v) { return v[0].clone().lgamma_(); }, {pos({3})}, dev());
  gradcheck([](const T& v) { return v[0].clone().digamma_(); }, {pos({3})}, dev());
  gradcheck([](const T& v) { return v[0].clone().polygamma_(3); }, {pos({3})}, dev());
  // Second derivatives: lgamma'' = polygamma(1), digamma'' = polygamma(2).
  wick::testing::gradgradcheck([](const T& v) { return lgamma(v[0]); }, {pos({3})}, dev());
  wick::testing::gradgradcheck([](const T& v) { return digamma(v[0]); }, {pos({3})}, dev());
  wick::testing::gradgradcheck([](const T& v) { return polygamma(2, v[0]); }, {pos({3})}, dev());
}

TEST_P(GradcheckOps, SoftmaxAndReductions) {
  gradcheck([](const T& x) { return softmax(x[0], 1); }, {rnd({3, 4})}, dev());
  gradcheck([](const T& x) { return softmax(x[0], 0); }, {rnd({3, 4})}, dev());
  gradcheck([](const T& x) { return log_softmax(x[0], -1); }, {rnd({2, 3, 4})}, dev());
  gradcheck([](const T& x) { return log_softmax(x[0], 1); }, {rnd({2, 3, 4})}, dev());
  gradcheck([](const T& x) { return max(x[0]); }, {rnd({3, 4})}, dev());
  gradcheck([](const T& x) { return min(x[0]); }, {rnd({3, 4})}, dev());
  gradcheck([](const T& x) { return std::get<0>(max(x[0], 1)); }, {rnd({3, 4})}, dev());
  gradcheck([](const T& x) { return std::get<0>(min(x[0], 0, true)); }, {rnd({3, 4})}, dev());
  gradcheck([](const T& x) { return std::get<0>(x[0].max(-1, true)); }, {rnd({2, 3, 4})}, dev());
  gradcheck([](const T& x) { return var(x[0]); }, {rnd({3, 4})}, dev());
  gradcheck([](const T& x) { return var(x[0], {1}, false, true); }, {rnd({3, 4})}, dev());
  gradcheck([](const T& x) { return var(x[0], {0, 2}, 2.0); }, {rnd({3, 2, 4})}, dev());
  gradcheck([](const T& x) { return wick::std(x[0]); }, {rnd({3, 4})}, dev());
  gradcheck([](const T& x) { return wick::std(x[0], {1}, true, true); }, {rnd({3, 4})}, dev());
  gradcheck([](const T& x) { return norm(x[0]); }, {rnd({3, 4})}, dev());
  gradcheck([](const T& x) { return norm(x[0], 1, {1}); }, {away({3, 4})}, dev());
  gradcheck([](const T& x) { return norm(x[0], 3, {0}, true); }, {away({3, 4})}, dev());
  gradcheck([](const T& x) { return norm(x[0], INFINITY, {1}); }, {rnd({3, 4})}, dev());
}

TEST_P(GradcheckOps, IndexingAndJoining) {
  auto idx = tensor({2, 0, 2, 1});
  gradcheck([idx](const T& x) { return index_select(x[0], 0, idx.to(x[0].device())); }, {rnd({3, 2})}, dev());
  gradcheck([idx](const T& x) { return index_select(x[0], 1, idx.to(x[0].device())); }, {rnd({2, 3, 2})},
            dev());
  auto gidx = tensor({{0, 2}, {1, 1}, {2, 0}});
  gradcheck([gidx](const T& x) { return gather(x[0], 1, gidx.to(x[0].device())); }, {rnd({3, 3})}, dev());
  gradcheck([gidx](const T& x) { return gather(x[0], 0, gidx.to(x[0].device())); }, {rnd({4, 2})}, dev());
  gradcheck([](const T& x) { return cat({x[0], x[1], x[0]}, 1); }, {rnd({2, 2}), rnd({2, 3})}, dev());
  gradcheck([](const T& x) { return cat({x[0], x[1]}, 0); }, {rnd({1, 3}), rnd({2, 3}, false)}, dev());
  gradcheck([](const T& x) { return stack({x[0], x[1]}, 1); }, {rnd({2, 3}), rnd({2, 3})}, dev());
  gradcheck([](const T& x) { return where(x[0] > 0, x[0], x[1]); }, {away({3, 3}), rnd({3, 3})}, dev());
  gradcheck([](const T& x) { return where(x[0] > 0, x[0], 2.0); }, {away({3})}, dev());
  gradcheck([](const T& x) { return where(x[0] > 0, -1.0, x[1]); }, {rnd({3}, false), rnd({3})}, dev());
  gradcheck([](const T& x) { return masked_fill(x[0], x[0] < 0, 0.5); }, {away({2, 3})}, dev());
  gradcheck([](const T& x) { return masked_fill(x[0], x[0] < 0, x[1]); }, {away({2, 3}), rnd({})}, dev());
}

TEST_P(GradcheckOps, BatchedProducts) {
  gradcheck([](const T& x) { return bmm(x[0], x[1]); }, {rnd({2, 2, 3}), rnd({2, 3, 4})}, dev());
  gradcheck([](const T& x) { return addmm(x[0], x[1], x[2]); }, {rnd({4}), rnd({2, 3}), rnd({3, 4})}, dev());
  gradcheck([](const T& x) { return addmm(x[0], x[1], x[2], 0.5, -2); },
            {rnd({2, 4}), rnd({2, 3}), rnd({3, 4})}, dev());
  gradcheck([](const T& x) { return linear(x[0], x[1], x[2]); }, {rnd({2, 3}), rnd({4, 3}), rnd({4})}, dev());
  gradcheck([](const T& x) { return linear(x[0], x[1]); }, {rnd({2, 2, 3}), rnd({4, 3})}, dev());
  gradcheck([](const T& x) { return linear(x[0], x[1], x[2]); }, {rnd({3}), rnd({4, 3}), rnd({4})}, dev());
}

// Products of transposed operands (linear's w.t()): the gradients are right, and a transposed
// operand's gradient is laid out as the operand, so that a weight's .grad is contiguous.
TEST_P(GradcheckOps, TransposedOperands) {
  auto t = [](const Tensor& x) { return x.t(); };
  gradcheck([&](const T& x) { return mm(t(x[0]), t(x[1])); }, {rnd({3, 2}), rnd({4, 3})}, dev());
  gradcheck([&](const T& x) { return matmul(x[0], t(x[1])); }, {rnd({2, 3}), rnd({4, 3})}, dev());
  gradcheck([&](const T& x) { return addmm(x[0], t(x[1]), t(x[2]), 0.5, 3); },
            {rnd({2, 4}), rnd({3, 2}), rnd({4, 3})}, dev());
  Tensor w = rnd({5, 3}, false).to(dev()).requires_grad_();
  Tensor x = rnd({4, 3}, false).to(dev()).requires_grad_();
  Tensor b = rnd({5}, false).to(dev()).requires_grad_();
  Tensor g = rnd({4, 5}, false).to(dev());
  for (int form = 0; form < 3; ++form) {
    w.mutable_grad() = Tensor();
    x.mutable_grad() = Tensor();
    Tensor y = form == 0 ? linear(x, w, b) : form == 1 ? linear(x, w) : mm(x, w.t());
    y.backward(g);
    EXPECT_TRUE(w.grad().is_contiguous()) << form;
    EXPECT_LT((w.grad() - mm(g.t(), x.detach())).abs().max().item<double>(), 1e-12) << form;
    EXPECT_LT((x.grad() - mm(g, w.detach())).abs().max().item<double>(), 1e-12) << form;
  }
}

TEST_P(GradcheckOps, InplaceForms) {
  gradcheck(
      [](const T& x) {
        auto y = x[0] * 1;
        y.exp_();
        return y;
      },
      {rnd({3})}, dev());
  gradcheck(
      [](const T& x) {
        auto y = x[0] + 0;
        y.log_().sqrt_();
        return y * x[0];
      },
      {(pos({3}) + 1).detach().requires_grad_()}, dev());
  gradcheck(
      [](const T& x) {
        // relu_ and sigmoid_ save their result: another in-place op on it would fail backward
        // (as in PyTorch), so each works on a copy.
        auto y = x[0] * 2;
        y.relu_();
        auto z = y * 1;
        z.sigmoid_();
        auto w = z * 1;
        w.tanh_();
        return w;
      },
      {away({2, 2})}, dev());
  gradcheck(
      [](const T& x) {
        auto y = x[0] * 1;
        y.pow_(3).neg_().abs_();
        return y;
      },
      {away({4})}, dev());
  gradcheck(
      [](const T& x) {
        auto y = x[0] * 1;
        y.pow_(x[1]);
        return y;
      },
      {pos({3}), rnd({3})}, dev());
  gradcheck(
      [](const T& x) {
        auto y = x[0] * 1;
        y.clamp_(-0.5, 0.5);
        return y;
      },
      {away({3, 2})}, dev());
  gradcheck(
      [](const T& x) {
        auto y = x[0] * 1;
        y.masked_fill_(x[0] < 0, x[1]);
        return y;
      },
      {away({2, 3}), rnd({})}, dev());
  // A tensor without grad takes the history of what it is filled from.
  gradcheck(
      [](const T& x) {
        auto y = zeros_like(x[0]);
        y.masked_fill_(x[0] > 0, x[1]);
        return y;
      },
      {rnd({2, 3}, false), rnd({})}, dev());
}

TEST(AutogradNames, InplaceFormsRecordTheirOp) {
  auto x = wick::testing::rnd({3});
  auto y = x * 1;
  y.exp_();
  EXPECT_EQ(y.grad_fn()->name(), "ExpBackward0");
  y.relu_();
  EXPECT_EQ(y.grad_fn()->name(), "ReluBackward0");
  try {
    x.relu_();
    FAIL() << "expected an error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "a leaf Variable that requires grad is being used in an in-place operation"),
              std::string::npos);
  }
}

TEST(AutogradNames, OpsNameTheirNodesAsPyTorch) {
  auto x = wick::testing::rnd({2, 3});
  EXPECT_EQ(relu(x).grad_fn()->name(), "ReluBackward0");
  EXPECT_EQ(exp(x).grad_fn()->name(), "ExpBackward0");
  EXPECT_EQ(expm1(x).grad_fn()->name(), "Expm1Backward0");
  EXPECT_EQ((-x).grad_fn()->name(), "NegBackward0");
  EXPECT_EQ(log_softmax(x, 1).grad_fn()->name(), "LogSoftmaxBackward0");
  EXPECT_EQ(softmax(x, 1).grad_fn()->name(), "SoftmaxBackward0");
  EXPECT_EQ(std::get<0>(x.max(1)).grad_fn()->name(), "MaxBackward0");
  EXPECT_EQ(cat({x, x}).grad_fn()->name(), "CatBackward0");
  EXPECT_EQ(gather(x, 1, tensor({{0}, {1}})).grad_fn()->name(), "GatherBackward0");
  auto w = wick::testing::rnd({4, 3}), b = wick::testing::rnd({4});
  EXPECT_EQ(linear(x, w, b).grad_fn()->name(), "AddmmBackward0");
  EXPECT_EQ(addmm(b, x, w.t()).grad_fn()->name(), "AddmmBackward0");
  // A saved output changed in place is caught, naming the node that made it.
  auto y = exp(x);
  {
    NoGradGuard g;
    y.add_(1);
  }
  try {
    y.sum().backward();
    FAIL() << "expected an error";
  } catch (const ValueError& e) {
    EXPECT_NE(
        std::string(e.what()).find("which is output 0 of ExpBackward0, is at version 1; expected version 0"),
        std::string::npos)
        << e.what();
  }
}

TEST(AutogradNames, FmodRoundingDivisionAndGammaNodes) {
  auto x = wick::testing::rnd({2, 3});
  auto y = wick::testing::rnd({3});
  EXPECT_EQ(fmod(x, 2).grad_fn()->name(), "FmodBackward0");
  EXPECT_EQ(x.fmod(y).grad_fn()->name(), "FmodBackward1");
  EXPECT_EQ(div(x, y, "trunc").grad_fn()->name(), "DivBackward2");
  EXPECT_EQ(x.div(y, "floor").grad_fn()->name(), "DivBackward2");
  EXPECT_EQ(div(x, 2, "floor").grad_fn()->name(), "DivBackward3");
  EXPECT_EQ(x.div(2.5, "trunc").grad_fn()->name(), "DivBackward3");
  EXPECT_EQ(div(x, y, std::nullopt).grad_fn()->name(), "DivBackward0");
  EXPECT_EQ(floor_divide(x, y).grad_fn()->name(), "NotImplemented");
  EXPECT_EQ(lgamma(x).grad_fn()->name(), "LgammaBackward0");
  EXPECT_EQ(x.digamma().grad_fn()->name(), "DigammaBackward0");
  EXPECT_EQ(polygamma(2, x).grad_fn()->name(), "PolygammaBackward0");
  EXPECT_EQ(x.polygamma(0).grad_fn()->name(), "PolygammaBackward0");
  auto z = x * 1;
  z.fmod_(3);
  EXPECT_EQ(z.grad_fn()->name(), "FmodBackward0");
  z.div_(y, "floor");
  EXPECT_EQ(z.grad_fn()->name(), "DivBackward2");
  z.lgamma_();
  EXPECT_EQ(z.grad_fn()->name(), "LgammaBackward0");
  z.polygamma_(1);
  EXPECT_EQ(z.grad_fn()->name(), "PolygammaBackward0");
}

INSTANTIATE_TEST_SUITE_P(Devices, GradcheckOps, ::testing::Values(Device(kCPU), Device(kCUDA, 0)),
                         [](const auto& info) {
                           return info.param.is_cpu() ? std::string("cpu") : std::string("cuda");
                         });

}  // namespace
