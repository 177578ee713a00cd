// conv2d's autograd: one ConvolutionBackward0 node over (input, weight, bias), recorded only
// when one of them requires grad and grad mode is on, with gradients worked out by hand.
#include <gtest/gtest.h>

#include "nn_test_util.h"
#include "wick/wick.h"

using namespace wick;
namespace F = wick::nn::functional;
using wick::testing::expect_close;

namespace {

// x [1, 1, 3, 3] of 1..9, w [2, 1, 2, 2], b [2]: each output is a 2x2 window sum weighted by w.
struct Problem {
  Tensor x = arange(1, 10, 1, TensorOptions(kFloat32)).view({1, 1, 3, 3});
  Tensor w = tensor({1.f, 0.f, 0.f, 1.f, 0.5f, -1.f, 2.f, 0.f}).view({2, 1, 2, 2});
  Tensor b = tensor({10.f, -10.f});
};

TEST(Conv2dAutograd, RecordsOnlyWhenAnInputRequiresGrad) {
  {
    Problem p;
    Tensor y = F::conv2d(p.x, p.w, p.b);
    EXPECT_FALSE(y.requires_grad());
    EXPECT_EQ(y.grad_fn(), nullptr);
    // by hand: channel 0 = x[i][j] + x[i+1][j+1] + 10, channel 1 = 0.5 x[i][j] - x[i][j+1] + 2 x[i+1][j] - 10
    expect_close(y.view({8}), std::vector<double>{16, 18, 22, 24, -3.5, -2, 1, 2.5}, 0);
  }
  for (int which = 0; which < 3; ++which) {
    SCOPED_TRACE(::testing::Message() << "input " << which << " requires grad");
    Problem p;
    Tensor* inputs[] = {&p.x, &p.w, &p.b};
    inputs[which]->requires_grad_();
    Tensor y = F::conv2d(p.x, p.w, p.b);
    ASSERT_NE(y.grad_fn(), nullptr);
    EXPECT_EQ(y.grad_fn()->name(), "ConvolutionBackward0");
    EXPECT_EQ(y.grad_fn()->num_inputs(), 3u);
    for (size_t i = 0; i < 3; ++i) EXPECT_EQ(y.grad_fn()->needs_input_grad(i), int(i) == which) << i;
    {
      NoGradGuard g;
      Tensor z = F::conv2d(p.x, p.w, p.b);
      EXPECT_FALSE(z.requires_grad());
      EXPECT_EQ(z.grad_fn(), nullptr);
    }
  }
  // Without a bias the node keeps its three inputs; the bias has no edge.
  Problem p;
  p.w.requires_grad_();
  Tensor y = F::conv2d(p.x, p.w);
  ASSERT_NE(y.grad_fn(), nullptr);
  EXPECT_EQ(y.grad_fn()->name(), "ConvolutionBackward0");
  EXPECT_FALSE(y.grad_fn()->needs_input_grad(2));
}

TEST(Conv2dAutograd, GradientsByHand) {
  Problem p;
  p.x.requires_grad_();
  p.w.requires_grad_();
  p.b.requires_grad_();
  F::conv2d(p.x, p.w, p.b).sum().backward();
  // dx[i][j] = sum over the windows covering (i, j) of w at that offset, summed over channels:
  // the channels' summed kernel is [[1.5, -1], [2, 1]].
  expect_close(p.x.grad().view({9}), std::vector<double>{1.5, 0.5, -1, 3.5, 3.5, 0, 2, 3, 1}, 0);
  // dw[o][0][u][v] = sum of the 2x2 block of x starting at (u, v): 12, 16, 24, 28 for both o.
  expect_close(p.w.grad().view({8}), std::vector<double>{12, 16, 24, 28, 12, 16, 24, 28}, 0);
  expect_close(p.b.grad(), std::vector<double>{4, 4}, 0);
}

// Only x requires grad: the weight and the bias get no gradient.
TEST(Conv2dAutograd, OnlyTheWantedGradient) {
  Problem p;
  p.x.requires_grad_();
  F::conv2d(p.x, p.w, p.b).sum().backward();
  EXPECT_TRUE(p.x.grad().defined());
  EXPECT_FALSE(p.w.grad().defined());
  EXPECT_FALSE(p.b.grad().defined());
}

}  // namespace
