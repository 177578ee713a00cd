// What renamed LibTorch programs call that has no other test: torch.flip, ATen's loss functions
// in namespace wick (LibTorch's argument order and reduction enum), the nn::functional ones
// under their ATen names, constant_pad_nd, IntArrayRef::slice, Scalar's toFloat ...,
// nn::Functional and a dataset's get_batch(index).
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "../autograd/gradcheck.h"
#include "../nn/nn_test_util.h"
#include "wick/wick.h"

using namespace wick;
using wick::testing::error_of;
using wick::testing::expect_close;
namespace F = wick::nn::functional;

namespace {

// flip's reference: element [i, j, k] of x [A, B, C] read from the mirrored position along
// each flipped dim, by index arithmetic on the host.
std::vector<double> flipped_3d(const Tensor& x, std::vector<bool> flip_dim) {
  const int64_t A = x.size(0), B = x.size(1), C = x.size(2);
  std::vector<double> v;
  for (int64_t i = 0; i < A; ++i)
    for (int64_t j = 0; j < B; ++j)
      for (int64_t k = 0; k < C; ++k) {
        const int64_t si = flip_dim[0] ? A - 1 - i : i, sj = flip_dim[1] ? B - 1 - j : j,
                      sk = flip_dim[2] ? C - 1 - k : k;
        v.push_back(x[si][sj][sk].item<double>());
      }
  return v;
}

class Flip : public wick::testing::OnEachDevice<34> {};

TEST_P(Flip, ReversesTheGivenDimsOfAnyLayout) {
  Tensor x = randn({3, 4, 5}, TensorOptions(kFloat64)).to(dev());
  Tensor y = x.flip({0, -1});
  ASSERT_EQ(y.sizes().vec(), (std::vector<int64_t>{3, 4, 5}));
  EXPECT_EQ(y.cpu().to_vector<double>(), flipped_3d(x.cpu(), {true, false, true}));
  EXPECT_EQ(wick::flip(x, {1}).cpu().to_vector<double>(), flipped_3d(x.cpu(), {false, true, false}));
  // a non-contiguous view
  Tensor v = x.transpose(0, 2);  // [5, 4, 3]
  EXPECT_EQ(v.flip({1, 2}).cpu().to_vector<double>(), flipped_3d(v.cpu().contiguous(), {false, true, true}));
  // no dims: a copy of its own
  Tensor c = x.flip({});
  EXPECT_EQ(c.cpu().to_vector<double>(), x.cpu().to_vector<double>());
  EXPECT_NE(c.data_ptr(), x.data_ptr());
}

TEST_P(Flip, EveryDtype) {
  Tensor i = arange(6, TensorOptions(kInt64).device(dev())).view({2, 3});
  EXPECT_EQ(i.flip({1}).cpu().to_vector<int64_t>(), (std::vector<int64_t>{2, 1, 0, 5, 4, 3}));
  EXPECT_EQ(i.flip({0, 1}).cpu().to_vector<int64_t>(), (std::vector<int64_t>{5, 4, 3, 2, 1, 0}));
  Tensor f = i.to(kFloat32);
  EXPECT_EQ(f.flip({0}).dtype(), kFloat32);
  EXPECT_EQ(f.flip({0}).cpu().to_vector<float>(), (std::vector<float>{3, 4, 5, 0, 1, 2}));
  Tensor b = i.eq(0);
  EXPECT_EQ(b.flip({1}).dtype(), kBool);
  EXPECT_EQ(b.flip({1}).to(kInt64).cpu().to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 1, 0, 0, 0}));
  Tensor h = i.to(kFloat16).flip({1});
  EXPECT_EQ(h.dtype(), kFloat16);
  EXPECT_EQ(h.to(kFloat32).cpu().to_vector<float>(), (std::vector<float>{2, 1, 0, 5, 4, 3}));
}

TEST_P(Flip, MatchesTheCpu) {
  Tensor x = randn({4, 6}, TensorOptions(kFloat32));
  EXPECT_EQ(x.to(dev()).flip({0, 1}).cpu().to_vector<float>(), x.flip({0, 1}).to_vector<float>());
}

TEST_P(Flip, Gradient) {
  Tensor x = randn({3, 4}, TensorOptions(kFloat64)).requires_grad_();
  wick::testing::gradcheck([](const std::vector<Tensor>& in) { return in[0].flip({0, 1}) * in[0]; }, {x}, dev());
  wick::testing::gradcheck([](const std::vector<Tensor>& in) { return in[0].flip({1}); }, {x}, dev());
}

TEST_P(Flip, Errors) {
  Tensor x = zeros({2, 3}, TensorOptions().device(dev()));
  EXPECT_EQ(error_of([&] { x.flip({0, -2}); }), "[flip] dim 0 appears multiple times in the list of dims");
  EXPECT_THROW(x.flip({0, -2}), ValueError);
  EXPECT_THROW(x.flip({2}), IndexError);
  EXPECT_EQ(error_of([&] { x.flip({2}); }).rfind("[flip] Dimension out of range", 0), 0u) << error_of([&] { x.flip({2}); });
}

WICK_INSTANTIATE_ON_DEVICES(Flip);

// log_softmax of fixed logits, and the log-probabilities read back as doubles.
Tensor fixed_log_probs() {
  return log_softmax(
      tensor({0.5, -1.0, 2.0, 0.25, 1.5, 0.0, -0.5, 3.0, -2.0, 1.0, 0.75, 0.0}, TensorOptions(kFloat64)).view({3, 4}), 1);
}

TEST(AtenLosses, NllLossInLibTorchsArgumentOrder) {
  Tensor lp = fixed_log_probs();
  Tensor target = tensor({0, 3, 1});
  auto at = [&](int64_t i, int64_t j) { return lp[i][j].item<double>(); };
  const double a = -at(0, 0), b = -at(1, 3), c = -at(2, 1);
  EXPECT_NEAR(wick::nll_loss(lp, target).item<double>(), (a + b + c) / 3, 1e-12);
  // reduction before ignore_index, as at::nll_loss
  EXPECT_NEAR(wick::nll_loss(lp, target, {}, Reduction::Sum, 1).item<double>(), a + b, 1e-12);
  EXPECT_NEAR(wick::nll_loss(lp, target, {}, Reduction::Mean, 3).item<double>(), (a + c) / 2, 1e-12);
  expect_close(wick::nll_loss(lp, target, {}, Reduction::None), std::vector<double>{a, b, c}, 1e-12);
  // Python's order is still there: ignore_index before the reduction string
  EXPECT_NEAR(wick::nll_loss(lp, target, {}, 1).item<double>(), (a + b) / 2, 1e-12);
  EXPECT_NEAR(F::nll_loss(lp, target, {}, 1, "sum").item<double>(), a + b, 1e-12);
  // a class weight
  Tensor w = tensor({1.0, 2.0, 3.0, 4.0}, TensorOptions(kFloat64));
  EXPECT_NEAR(wick::nll_loss(lp, target, w, Reduction::Sum).item<double>(), a * 1 + b * 4 + c * 2, 1e-12);
}

TEST(AtenLosses, ReductionEnum) {
  const TensorOptions f64(kFloat64);
  Tensor x = tensor({1.0, -2.0, 0.25, 4.0}, f64), y = tensor({0.5, 1.0, 0.25, 2.5}, f64);
  const std::vector<double> d{0.5, -3.0, 0.0, 1.5};
  double sq = 0, ab = 0, sm = 0;
  for (double v : d) {
    sq += v * v;
    ab += std::abs(v);
    sm += std::abs(v) < 0.5 ? 0.5 * v * v / 0.5 : std::abs(v) - 0.25;  // beta 0.5
  }
  EXPECT_NEAR(wick::mse_loss(x, y).item<double>(), sq / 4, 1e-12);
  EXPECT_NEAR(wick::mse_loss(x, y, Reduction::Sum).item<double>(), sq, 1e-12);
  expect_close(wick::mse_loss(x, y, Reduction::None), std::vector<double>{0.25, 9.0, 0.0, 2.25}, 1e-12);
  EXPECT_NEAR(wick::l1_loss(x, y, Reduction::Mean).item<double>(), ab / 4, 1e-12);
  EXPECT_NEAR(wick::smooth_l1_loss(x, y, Reduction::Sum, 0.5).item<double>(), sm, 1e-12);
  Tensor p = tensor({0.25, 0.5, 0.875}, f64), t = tensor({0.0, 1.0, 1.0}, f64);
  const double bce = -(std::log(0.75) + std::log(0.5) + std::log(0.875));
  EXPECT_NEAR(wick::binary_cross_entropy(p, t).item<double>(), bce / 3, 1e-12);
  EXPECT_NEAR(wick::binary_cross_entropy(p, t, {}, Reduction::Sum).item<double>(), bce, 1e-12);
  // the gradient flows as through the Python forms
  Tensor xg = x.detach().requires_grad_();
  wick::mse_loss(xg, y, Reduction::Sum).backward();
  expect_close(xg.grad(), std::vector<double>{1.0, -6.0, 0.0, 3.0}, 1e-12);
  // an enum value ATen does not have
  EXPECT_EQ(error_of([&] { wick::mse_loss(x, y, static_cast<Reduction::Reduction>(7)); }),
            "[mse_loss] 7 is not a valid value for reduction");
  EXPECT_THROW(wick::nll_loss(fixed_log_probs(), tensor({0, 1, 2}), {},
                              static_cast<Reduction::Reduction>(-1)),
               ValueError);
}

TEST(AtenFunctions, LayersUnderTheirAtenNames) {
  Tensor x = arange(16, TensorOptions(kFloat64)).view({1, 1, 4, 4});
  expect_close(wick::max_pool2d(x, 2), std::vector<double>{5, 7, 13, 15}, 0);
  expect_close(wick::avg_pool2d(x, 2), std::vector<double>{2.5, 4.5, 10.5, 12.5}, 1e-12);
  expect_close(wick::adaptive_avg_pool2d(x, 1), std::vector<double>{7.5}, 1e-12);
  // each 2x2 window's sum: 16 i + 4 j + 10
  std::vector<double> sums;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) sums.push_back(16 * i + 4 * j + 10);
  expect_close(wick::conv2d(x, ones({1, 1, 2, 2}, TensorOptions(kFloat64))), sums, 1e-12);
  Tensor v = tensor({-2.0, 0.5, 3.0}, TensorOptions(kFloat64));
  EXPECT_EQ(wick::dropout(v, 0.0, true).to_vector<double>(), v.to_vector<double>());
  EXPECT_EQ(wick::dropout(v, 0.5, false).to_vector<double>(), v.to_vector<double>());
  EXPECT_EQ(wick::dropout(v, 1.0, true).to_vector<double>(), (std::vector<double>{0, 0, 0}));
  expect_close(wick::leaky_relu(v, 0.25), std::vector<double>{-0.5, 0.5, 3.0}, 1e-12);
}

TEST(AtenFunctions, ConstantPadNd) {
  Tensor x = arange(4).view({2, 2});
  Tensor y = wick::constant_pad_nd(x, {1, 0, 0, 1}, 9);
  EXPECT_EQ(y.dtype(), kInt64);
  ASSERT_EQ(y.sizes().vec(), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(y.to_vector<int64_t>(), (std::vector<int64_t>{9, 0, 1, 9, 2, 3, 9, 9, 9}));
  Tensor z = wick::constant_pad_nd(x.to(kFloat32), {1, 1});
  EXPECT_EQ(z.to_vector<float>(), (std::vector<float>{0, 0, 1, 0, 0, 2, 3, 0}));
  EXPECT_EQ(error_of([&] { wick::constant_pad_nd(x, {1}); }), "[constant_pad_nd] Padding length must be divisible by 2");
}

TEST(IntArrayRefSlice, AsLibTorchsArrayRef) {
  const std::vector<int64_t> s{2, 3, 4, 5};
  IntArrayRef r(s);
  EXPECT_EQ(r.front(), 2);
  EXPECT_EQ(r.slice(1).vec(), (std::vector<int64_t>{3, 4, 5}));
  EXPECT_EQ(r.slice(1, 2).vec(), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(r.slice(3, 5).vec(), (std::vector<int64_t>{5}));
  EXPECT_TRUE(r.slice(4).empty());
  EXPECT_TRUE(r.slice(9).empty());
  Tensor t = zeros({2, 3, 4});
  int64_t n = 1;
  for (int64_t d : t.sizes().slice(1)) n *= d;
  EXPECT_EQ(n, 12);
}

TEST(ScalarConversions, LibTorchsToFloatAndFriends) {
  EXPECT_EQ(Scalar(2.5).toFloat(), 2.5f);
  EXPECT_EQ(Scalar(2.5).toDouble(), 2.5);
  EXPECT_EQ(Scalar(int64_t(7)).toLong(), 7);
  EXPECT_EQ(Scalar(-3).toInt(), -3);
  EXPECT_EQ(Scalar(int64_t(0)).toBool(), false);
  EXPECT_EQ(Scalar(true).toBool(), true);
  EXPECT_EQ(tensor({1.5, 2.0}).sum().item().toFloat(), 3.5f);
  EXPECT_EQ(tensor({4, 5}).sum().item().toLong(), 9);
  EXPECT_EQ(error_of([] { Scalar(1e300).toFloat(); }),
            "[toFloat] value cannot be converted to type float without overflow");
  EXPECT_EQ(error_of([] { Scalar(int64_t(1) << 40).toInt(); }),
            "[toInt] value cannot be converted to type int without overflow");
}

TEST(FunctionalModule, RunsItsFunctionInASequential) {
  nn::Linear lin(2, 2);
  {
    NoGradGuard g;
    lin->weight.copy_(tensor({1.0f, -1.0f, 2.0f, 0.5f}).view({2, 2}));
    lin->bias.copy_(tensor({0.0f, -4.0f}));
  }
  nn::Sequential seq{lin, nn::Functional(wick::relu)};
  nn::Sequential leaky{lin, nn::Functional(wick::leaky_relu, 0.25)};
  Tensor x = tensor({1.0f, 2.0f, 3.0f, -1.0f}).view({2, 2});
  // lin(x) = [[-1, -1], [4, 1.5]]
  expect_close(seq->forward(x), std::vector<double>{0, 0, 4, 1.5}, 1e-6);
  expect_close(leaky->forward(x), std::vector<double>{-0.25, -0.25, 4, 1.5}, 1e-6);
  EXPECT_EQ(seq->parameters().size(), 2u);
  nn::Functional f(wick::sigmoid);
  EXPECT_TRUE(f->parameters().empty());
  expect_close(f(tensor({0.0})), std::vector<double>{0.5}, 1e-7);
}

struct Counting : data::datasets::Dataset<Counting> {
  data::Example<> get(size_t i) override { return {full({2}, double(i)), full({}, double(10 * i))}; }
  optional<size_t> size() const override { return 5; }
};

TEST(DatasetGetBatch, OneIndexAsLibTorchsArrayRef) {
  Counting ds;
  auto one = ds.get_batch(3);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].data.to_vector<float>(), (std::vector<float>{3, 3}));
  auto stacked = Counting().map(data::transforms::Stack<>());
  data::Example<> b = stacked.get_batch(2);
  EXPECT_EQ(b.data.sizes().vec(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(b.data.to_vector<float>(), (std::vector<float>{2, 2}));
  EXPECT_EQ(b.target.to_vector<float>(), (std::vector<float>{20}));
  // a list of indices still works
  std::vector<size_t> idx{4, 0};
  EXPECT_EQ(stacked.get_batch(idx).target.to_vector<float>(), (std::vector<float>{40, 0}));
}

}  // namespace
