// In-place ops under autograd: each records its out-of-place op's node (PyTorch's name for the
// in-place form), gives the gradients the out-of-place op gives, bumps the version counter
// once, and a saved tensor changed in place afterwards fails backward as in PyTorch.
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gradcheck.h"
#include "../nn/nn_test_util.h"
#include "wick/wick.h"

namespace {

using namespace wick;
using wick::testing::rnd;

using wick::testing::error_of;

void expect_same(const Tensor& got, const Tensor& want, double tol = 1e-12) {
  ASSERT_TRUE(got.defined());
  ASSERT_EQ(got.sizes(), want.sizes());
  auto g = got.to(kFloat64).to_vector<double>(), w = want.to(kFloat64).to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], w[i], tol) << "at " << i;
}

void expect_values(const Tensor& got, const std::vector<double>& want, double tol = 1e-12) {
  ASSERT_TRUE(got.defined());
  auto g = got.to(kFloat64).to_vector<double>();
  ASSERT_EQ(g.size(), want.size());
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], want[i], tol) << "at " << i;
}

// d sum(w * f(x, o)) for the in-place form (f_ on a non-leaf copy of x) and the out-of-place
// one, both in float64: the gradients of x and o must agree, and so must the values.
void expect_matches_out_of_place(const std::function<void(Tensor&, const Tensor&)>& inplace_op,
                                 const std::function<Tensor(const Tensor&, const Tensor&)>& op,
                                 const std::string& node) {
  SCOPED_TRACE(node);
  Tensor x0 = randn({2, 3}, kFloat64), o0 = randn({2, 3}, kFloat64) + 3, w = randn({2, 3}, kFloat64);
  Tensor x1 = x0.clone().requires_grad_(), o1 = o0.clone().requires_grad_();
  Tensor y = x1 * 1;
  const uint32_t v = y._version();
  inplace_op(y, o1);
  EXPECT_EQ(y._version(), v + 1);
  ASSERT_TRUE(y.grad_fn());
  EXPECT_EQ(y.grad_fn()->name(), node);
  (y * w).sum().backward();

  Tensor x2 = x0.clone().requires_grad_(), o2 = o0.clone().requires_grad_();
  Tensor r = op(x2, o2);
  (r * w).sum().backward();
  expect_same(y, r);
  expect_same(x1.grad(), x2.grad());
  if (o2.grad().defined()) expect_same(o1.grad(), o2.grad());
  else EXPECT_FALSE(o1.grad().defined());
}

TEST(Inplace, GradientsMatchOutOfPlace) {
  using T = const Tensor&;
  expect_matches_out_of_place([](Tensor& y, T o) { y.add_(o, 2); }, [](T x, T o) { return add(x, o, 2); },
                              "AddBackward0");
  expect_matches_out_of_place([](Tensor& y, T) { y.add_(1.5); }, [](T x, T) { return x + 1.5; },
                              "AddBackward1");
  expect_matches_out_of_place([](Tensor& y, T o) { y.sub_(o, 3); }, [](T x, T o) { return sub(x, o, 3); },
                              "SubBackward0");
  expect_matches_out_of_place([](Tensor& y, T) { y.sub_(2); }, [](T x, T) { return x - 2; }, "SubBackward1");
  expect_matches_out_of_place([](Tensor& y, T o) { y.mul_(o); }, [](T x, T o) { return x * o; },
                              "MulBackward0");
  expect_matches_out_of_place([](Tensor& y, T) { y.mul_(-2); }, [](T x, T) { return x * -2; },
                              "MulBackward1");
  expect_matches_out_of_place([](Tensor& y, T o) { y.div_(o); }, [](T x, T o) { return x / o; },
                              "DivBackward0");
  expect_matches_out_of_place([](Tensor& y, T) { y.div_(4); }, [](T x, T) { return x / 4; }, "DivBackward1");
  expect_matches_out_of_place([](Tensor& y, T) { y.exp_(); }, [](T x, T) { return exp(x); }, "ExpBackward0");
  expect_matches_out_of_place([](Tensor& y, T) { y.abs_(); }, [](T x, T) { return abs(x); }, "AbsBackward0");
  expect_matches_out_of_place([](Tensor& y, T) { y.clamp_min_(0.1); },
                              [](T x, T) { return clamp_min(x, 0.1); }, "ClampMinBackward0");
  expect_matches_out_of_place([](Tensor& y, T) { y.clamp_max_(0.1); },
                              [](T x, T) { return clamp_max(x, 0.1); }, "ClampMaxBackward0");
  expect_matches_out_of_place([](Tensor& y, T) { y.clamp_(-0.5, 0.5); },
                              [](T x, T) { return clamp(x, -0.5, 0.5); }, "ClampBackward1");
  expect_matches_out_of_place([](Tensor& y, T o) { y.masked_fill_(o > 3, 7); },
                              [](T x, T o) { return masked_fill(x, o > 3, 7); }, "MaskedFillBackward0");
  // Self used as both operands: the saved copy of self is its value before the op.
  expect_matches_out_of_place([](Tensor& y, T) { y.mul_(y); }, [](T x, T) { return x * x; }, "MulBackward0");
  expect_matches_out_of_place([](Tensor& y, T o) { y.div_(y + o); }, [](T x, T o) { return x / (x + o); },
                              "DivBackward0");
}

TEST(Inplace, CopyFillZeroGiveSelfNoGradient) {
  // By hand: after copy_, fill_ or zero_ the old value of y (= 2x) no longer matters.
  auto x = rnd({3}), s = rnd({3});
  auto y = x * 2;
  y.copy_(s);
  EXPECT_EQ(y.grad_fn()->name(), "CopyBackwards");
  (y * 3).sum().backward();
  expect_values(x.grad(), {0, 0, 0});
  expect_values(s.grad(), {3, 3, 3});
  expect_same(y, s.detach());

  // copy_ from a broadcast source of another dtype: the gradient is summed and cast back.
  auto f = randn({3}, kFloat32).requires_grad_();
  auto z = zeros({2, 3}, kFloat64);
  z.copy_(f);
  z.sum().backward();
  EXPECT_EQ(f.grad().dtype(), kFloat32);
  expect_values(f.grad(), {2, 2, 2});

  auto x2 = rnd({2});
  auto y2 = x2 * 2;
  y2.fill_(5);
  EXPECT_EQ(y2.grad_fn()->name(), "FillBackward2");
  expect_values(y2, {5, 5});
  (y2 * x2).sum().backward();  // d/dx2 of 5 * x2 (the fill cut 2 * x2 off)
  expect_values(x2.grad(), {5, 5});

  auto x3 = rnd({2});
  auto y3 = x3 * 2;
  y3.zero_();
  EXPECT_EQ(y3.grad_fn()->name(), "ZeroBackward0");
  expect_values(y3, {0, 0});
  (y3 + x3).sum().backward();
  expect_values(x3.grad(), {1, 1});
}

TEST(Inplace, ChainOnNonLeafByHand) {
  // y = ((x * 3 + 1) / 2 - 1) * x  =>  dy/dx = 1.5x + (3x + 1) / 2 - 1 = 3x - 0.5
  auto x = rnd({4});
  auto y = x * 1;
  y.mul_(3).add_(1).div_(2).sub_(1).mul_(x);
  y.sum().backward();
  auto xv = x.detach().to_vector<double>();
  std::vector<double> want;
  for (double v : xv) want.push_back(3 * v - 0.5);
  expect_values(x.grad(), want, 1e-12);
}

TEST(Inplace, ModifiedSavedInputFailsBackward) {
  auto x = rnd({2, 3});
  auto y = x * 1;
  auto z = y * x;  // saves y
  y.add_(1);
  std::string e = error_of([&] { z.sum().backward(); });
  EXPECT_EQ(
      e.rfind("[backward] one of the variables needed for gradient computation has been modified by an "
              "inplace operation: [DoubleTensor [2, 3]], which is output 0 of MulBackward1, is at version 1; "
              "expected version 0 instead.",
              0),
      0u)
      << e;
}

TEST(Inplace, ModifiedSavedResultFailsBackward) {
  // exp_ saves its result, which is y itself: a later in-place write to y breaks its backward
  // (PyTorch: "output 0 of ExpBackward0, is at version 2; expected version 1").
  auto x = rnd({3});
  auto y = x * 1;
  y.exp_();
  y.mul_(2);
  std::string e = error_of([&] { y.sum().backward(); });
  EXPECT_NE(e.find("which is output 0 of ExpBackward0, is at version 2; expected version 1 instead."),
            std::string::npos)
      << e;
  // relu_ then sigmoid_ fails the same way; an op that saves nothing of its result does not.
  auto y2 = x * 1;
  y2.relu_().sigmoid_();
  EXPECT_NE(error_of([&] { y2.sum().backward(); }).find("output 0 of ReluBackward0"), std::string::npos);
  auto y3 = x * 1;
  y3.exp_();
  auto z3 = y3 * 1;
  z3.neg_().add_(1);
  z3.sum().backward();
  auto xv = x.detach().to_vector<double>();
  expect_values(x.grad(), {-std::exp(xv[0]), -std::exp(xv[1]), -std::exp(xv[2])}, 1e-12);
}

TEST(Inplace, FailedCallChangesNothing) {
  auto x = rnd({3});
  auto y = x * 1;
  auto before = y.detach().clone();
  const uint32_t v = y._version();
  auto fn = y.grad_fn();
  std::string e = error_of([&] { y.add_(rnd({2, 3})); });
  EXPECT_EQ(e, "[add_] output with shape [3] doesn't match the broadcast shape [2, 3]");
  EXPECT_EQ(y._version(), v);
  EXPECT_EQ(y.grad_fn(), fn);
  expect_same(y, before);
  // In-place on a leaf that requires grad: refused before anything is written.
  EXPECT_NE(error_of([&] { x.fill_(1); }).find("[fill_] a leaf Variable that requires grad"),
            std::string::npos);
  EXPECT_NE(error_of([&] { x.zero_(); }).find("[zero_] a leaf Variable that requires grad"),
            std::string::npos);
  EXPECT_NE(error_of([&] { x.copy_(y); }).find("[copy_] a leaf Variable that requires grad"),
            std::string::npos);
}

TEST(Inplace, MixedDtypesKeepSelfsDtype) {
  auto a = randn({3}, kFloat32).requires_grad_();
  auto b = rnd({3});
  auto y = a * 1;
  y.mul_(b);  // float32 self, float64 other: self stays float32
  EXPECT_EQ(y.dtype(), kFloat32);
  y.sum().backward();
  EXPECT_EQ(a.grad().dtype(), kFloat32);
  EXPECT_EQ(b.grad().dtype(), kFloat64);
  expect_same(a.grad(), b.detach(), 1e-6);
  expect_same(b.grad(), a.detach(), 1e-6);
}

TEST(Inplace, WithoutGradModeNothingIsRecorded) {
  auto x = rnd({3});
  auto y = x * 1;
  auto fn = y.grad_fn();
  {
    NoGradGuard g;
    y.mul_(2).zero_();
  }
  EXPECT_EQ(y.grad_fn(), fn);
  expect_values(y, {0, 0, 0});
}

TEST(Inplace, PoolingRecordsItsNodes) {
  namespace F = nn::functional;
  auto x = rnd({1, 1, 4, 4});
  EXPECT_EQ(F::max_pool2d(x, 2).grad_fn()->name(), "MaxPool2DWithIndicesBackward0");
  EXPECT_EQ(F::avg_pool2d(x, 2).grad_fn()->name(), "AvgPool2DBackward0");
  {
    NoGradGuard g;
    EXPECT_FALSE(F::max_pool2d(x, 2).requires_grad());
    EXPECT_FALSE(F::avg_pool2d(x, 2).requires_grad());
  }
  // By hand: avg over 2x2 windows gives each input a quarter of its window's gradient.
  F::avg_pool2d(x, 2).sum().backward();
  expect_values(x.grad(), std::vector<double>(16, 0.25));
}

}  // namespace
