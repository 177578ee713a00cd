// Gradient destinations (autograd/meta.h): a leaf whose grad() is undefined may have its whole
// gradient written by the backward formula into a given tensor (DDP's bucket views), which then
// becomes its grad(). Values against the same model without a destination; on the CPU and,
// where there is one, the GPU (where linear's weight gradient GEMM writes into it directly).
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gradcheck.h"
#include "../nn/nn_test_util.h"
#include "autograd/meta.h"
#include "wick/wick.h"

using namespace wick;

namespace {

using wick::testing::test_devices;

// Values in float64, whatever the dtypes compared.
void expect_equal(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_TRUE(got.defined()) << what;
  wick::testing::expect_close(got.to(kFloat64), want.to(kFloat64), 1e-5, 1e-5, what);
}

TEST(GradDestination, LinearWeightGradientLandsInTheDestination) {
  for (Device dev : test_devices()) {
    for (Dtype dt : {kFloat32, kFloat64}) {
      SCOPED_TRACE(dev.str() + (dt == kFloat32 ? " float32" : " float64"));
      manual_seed(3);
      nn::Linear ref(7, 5), lin(7, 5);
      ref->to(dev, dt);
      lin->to(dev, dt);
      {
        NoGradGuard g;
        lin->weight.copy_(ref->weight);
        lin->bias.copy_(ref->bias);
      }
      // The destination: a view in the middle of a larger flat buffer, as a bucket's.
      Tensor flat = full({3 + 35 + 4}, -1.0, TensorOptions(dt).device(dev));
      Tensor dst = flat.narrow(0, 3, 35).view({5, 7});
      autograd::set_grad_destination(lin->weight, dst);
      const Tensor x = randn({4, 7}, TensorOptions(dt).device(dev));
      for (int step = 0; step < 2; ++step) {
        ref->zero_grad();
        lin->zero_grad();  // undefined gradients: the destination is written afresh
        ref(x * double(step + 1)).pow(2).sum().backward();
        lin(x * double(step + 1)).pow(2).sum().backward();
        EXPECT_EQ(lin->weight.grad().data_ptr(), dst.data_ptr());
        EXPECT_TRUE(lin->weight.grad().is_contiguous());
        expect_equal(lin->weight.grad(), ref->weight.grad(), "weight grad");
        expect_equal(lin->bias.grad(), ref->bias.grad(), "bias grad");
        expect_equal(dst, ref->weight.grad(), "the destination");
        // The rest of the flat buffer is untouched.
        EXPECT_EQ(flat.narrow(0, 0, 3).cpu().to(kFloat64).sum().item<double>(), -3.0);
        EXPECT_EQ(flat.narrow(0, 38, 4).cpu().to(kFloat64).sum().item<double>(), -4.0);
      }
      // A defined gradient accumulates (the destination is not written over).
      ref(x).sum().backward();
      lin(x).sum().backward();
      expect_equal(lin->weight.grad(), ref->weight.grad(), "accumulated weight grad");
      // Removed: new memory again.
      autograd::set_grad_destination(lin->weight, Tensor());
      lin->zero_grad();
      lin(x).sum().backward();
      EXPECT_NE(lin->weight.grad().data_ptr(), dst.data_ptr());
    }
  }
}

// One weight on two paths: each formula sees grad() undefined, but only the first takes the
// destination; the engine sums both into it.
TEST(GradDestination, TwoPathsToOneLeafAddUp) {
  for (Device dev : test_devices()) {
    SCOPED_TRACE(dev.str());
    manual_seed(4);
    const auto opt = TensorOptions(kFloat64).device(dev);
    Tensor w_ref = randn({3, 6}, opt).requires_grad_();
    Tensor w = w_ref.detach().clone().requires_grad_();
    Tensor b_ref = zeros({3}, opt).requires_grad_(), b = zeros({3}, opt).requires_grad_();
    const Tensor x1 = randn({2, 6}, opt), x2 = randn({2, 6}, opt);
    Tensor dst = zeros({3, 6}, opt);
    autograd::set_grad_destination(w, dst);
    (nn::functional::linear(x1, w_ref, b_ref) * 2 + nn::functional::linear(x2, w_ref, b_ref)).sum().backward();
    (nn::functional::linear(x1, w, b) * 2 + nn::functional::linear(x2, w, b)).sum().backward();
    expect_equal(w.grad(), w_ref.grad(), "weight grad over two paths");
    expect_equal(b.grad(), b_ref.grad(), "bias grad over two paths");
    // Whether or not the sum landed in the destination, a second pass with grad() undefined
    // must be able to take it again.
    w.mutable_grad() = Tensor();
    nn::functional::linear(x1, w, b).sum().backward();
    EXPECT_EQ(w.grad().data_ptr(), dst.data_ptr());
    expect_equal(w.grad(), x1.sum(0).unsqueeze(0).expand({3, 6}), "one path");
  }
}

// autograd::grad returns gradients without touching grad(): they must be new tensors, never
// the destination (which a later backward would write over), and the destination stays
// available to the next backward.
TEST(GradDestination, AutogradGradDoesNotUseIt) {
  for (Device dev : test_devices()) {
    SCOPED_TRACE(dev.str());
    manual_seed(5);
    const auto opt = TensorOptions(kFloat64).device(dev);
    Tensor w = randn({3, 6}, opt).requires_grad_();
    Tensor b = zeros({3}, opt).requires_grad_();
    const Tensor x = randn({2, 6}, opt);
    Tensor dst = zeros({3, 6}, opt);
    autograd::set_grad_destination(w, dst);
    auto g = autograd::grad({nn::functional::linear(x, w, b).sum()}, {w, b});
    ASSERT_EQ(g.size(), 2u);
    EXPECT_NE(g[0].data_ptr(), dst.data_ptr());
    EXPECT_FALSE(w.grad().defined());
    EXPECT_EQ(dst.abs().sum().item<double>(), 0.0);
    expect_equal(g[0], x.sum(0).unsqueeze(0).expand({3, 6}), "autograd::grad's weight gradient");
    nn::functional::linear(x, w, b).sum().backward();
    EXPECT_EQ(w.grad().data_ptr(), dst.data_ptr());
    expect_equal(w.grad(), g[0], "backward's weight gradient");
  }
}

}  // namespace
