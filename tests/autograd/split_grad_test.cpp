// split, split with sizes, chunk and unbind record one node for all their pieces, named as
// PyTorch's (SplitBackward0, SplitWithSizesBackward0, UnbindBackward0): gradients against
// central differences, pieces without a gradient, the result's values against one built by
// hand, double backward, and writes through a piece of a leaf refused as for any view.
#include <gtest/gtest.h>

#include "gradcheck.h"
#include "wick/wick.h"

using namespace wick;
using wick::testing::gradcheck;
using wick::testing::gradgradcheck;
using wick::testing::rnd;
using T = std::vector<Tensor>;

namespace {

class SplitGrad : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override {
    if (GetParam().is_cuda() && !cuda::is_available()) GTEST_SKIP() << "no CUDA device";
    manual_seed(11);
  }
  Device dev() const { return GetParam(); }
};

TEST_P(SplitGrad, OneNodeForAllPiecesNamedAsPyTorch) {
  Tensor x = randn({6, 4}, dev()).requires_grad_();
  auto s = x.split(2, 0);
  ASSERT_EQ(s.size(), 3u);
  for (size_t i = 0; i < s.size(); ++i) {
    ASSERT_TRUE(s[i].grad_fn());
    EXPECT_EQ(s[i].grad_fn()->name(), "SplitBackward0");
    EXPECT_EQ(s[i].grad_fn().get(), s[0].grad_fn().get());
    EXPECT_EQ(s[i].output_nr(), int64_t(i));
    EXPECT_TRUE(s[i].is_view());
  }
  EXPECT_EQ(x.split(std::vector<int64_t>{1, 3}, 1)[1].grad_fn()->name(), "SplitWithSizesBackward0");
  EXPECT_EQ(x.chunk(2, 1)[0].grad_fn()->name(), "SplitBackward0");
  auto u = x.unbind(0);
  EXPECT_EQ(u[5].grad_fn()->name(), "UnbindBackward0");
  EXPECT_EQ(u[5].output_nr(), 5);
  // Without grad, nothing is recorded.
  {
    NoGradGuard g;
    EXPECT_FALSE(x.split(2, 0)[0].grad_fn());
  }
  Tensor c = randn({6, 4}, dev());
  EXPECT_FALSE(c.split(2, 0)[0].requires_grad());
}

TEST_P(SplitGrad, GradientsAgainstCentralDifferences) {
  gradcheck(
      [](const T& x) {
        auto s = x[0].split(2, 1);  // uneven: 2, 2, 1
        return s[0] * 2 + s[1] * s[0] + s[2].expand({3, 2});
      },
      {rnd({3, 5})}, dev());
  gradcheck(
      [](const T& x) {
        auto s = x[0].split(std::vector<int64_t>{1, 0, 3}, 0);  // an empty piece
        return s[2].sum(0, true) * s[0];
      },
      {rnd({4, 2})}, dev());
  gradcheck(
      [](const T& x) {
        auto u = x[0].transpose(0, 1).unbind(1);  // a non-contiguous input
        return u[0] * u[1] - u[2];
      },
      {rnd({3, 4})}, dev());
  gradcheck(
      [](const T& x) {
        auto c = x[0].chunk(3, -1);
        return c[2];  // the other pieces have no gradient
      },
      {rnd({2, 6})}, dev());
}

TEST_P(SplitGrad, ValuesOfTheJoinedGradient) {
  Tensor x = randn({5, 3}, TensorOptions(kFloat32).device(dev())).requires_grad_();
  auto s = x.split(2, 0);  // rows 0-1, 2-3, 4
  (s[0] * 3).sum().backward();
  (s[2] * s[2]).sum().backward();
  Tensor want = zeros({5, 3});
  want.narrow(0, 0, 2).fill_(3.0);
  want.narrow(0, 4, 1).copy_(x.detach().cpu().narrow(0, 4, 1) * 2);
  EXPECT_TRUE(allclose(x.grad().cpu(), want, 1e-6, 1e-6)) << x.grad();

  Tensor y = randn({2, 3, 4}, TensorOptions(kFloat64).device(dev())).requires_grad_();
  auto u = y.unbind(1);
  (u[1] * 5).sum().backward();
  Tensor wy = zeros({2, 3, 4}, kFloat64);
  wy.select(1, 1).fill_(5.0);
  EXPECT_TRUE(equal(y.grad().cpu(), wy));
}

TEST_P(SplitGrad, DoubleBackward) {
  gradgradcheck(
      [](const T& x) {
        auto s = x[0].split(2, 0);
        return s[0] * s[1] * s[1];
      },
      {rnd({4, 2})}, dev());
  gradgradcheck(
      [](const T& x) {
        auto u = x[0].unbind(0);
        return u[0] * u[1];
      },
      {rnd({2, 3})}, dev());
}

TEST_P(SplitGrad, WritingToAPieceIsRefusedUnderGrad) {
  auto expect_refused = [](const Tensor& piece, const std::string& what) {
    try {
      Tensor p = piece;
      p.mul_(2);
      FAIL() << "no error";
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).rfind("[mul_]", 0), 0u) << e.what();
    }
  };
  Tensor w = randn({4, 2}, dev()).requires_grad_();
  const Tensor before = w.detach().clone();
  expect_refused(w.split(2, 0)[1], "Output 1 of SplitBackward0 is a view and is being modified inplace");
  Tensor y = w * 1;
  expect_refused(y.split(std::vector<int64_t>{3, 1}, 0)[0],
                 "Output 0 of SplitWithSizesBackward0 is a view and is being modified inplace");
  expect_refused(y.unbind(1)[1], "Output 1 of UnbindBackward0 is a view");
  EXPECT_TRUE(equal(w.detach(), before));
  // Without grad the pieces are plain views, written through to the base.
  Tensor z = randn({4, 2}, dev());
  z.split(2, 0)[1].fill_(7);
  EXPECT_TRUE(equal(z.narrow(0, 2, 2).cpu(), full({2, 2}, 7.0)));
}

INSTANTIATE_TEST_SUITE_P(Devices, SplitGrad, ::testing::ValuesIn(wick::testing::test_devices()),
                         [](const auto& info) { return info.param.is_cuda() ? "cuda" : "cpu"; });

}  // namespace
