// Gradient destinations (autograd/meta.h): a leaf whose grad() is undefined may have its whole
// gradient written by the backward formula into a given tensor (DDP's bucket views), which then
// becomes its grad(). Values against the same model without a destination; on the CPU and,
// where there is one, the GPU (where linear's weight gradient GEMM writes into it directly).
// Gradients handed over (autograd::hand_over_grad_views): a formula's disjoint views of one flat
// gradient become the leaves' grad() themselves, not copies, while nothing else holds the flat
// gradient.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gradcheck.h"
#include "../nn/nn_test_util.h"
#include "autograd/function.h"
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

// out = sum(a) + sum(b) recorded with a formula that writes both gradients (2 * the incoming
// one, so that they differ from a plain sum's) into one flat tensor and returns a view of it per
// input; hand_over: whether it hands them over. keep: set to the flat gradient (a reference the
// formula leaves behind).
Tensor sum_by_flat_gradient(const Tensor& a, const Tensor& b, bool hand_over, Tensor* keep = nullptr) {
  Tensor out;
  {
    NoGradGuard g;
    out = a.sum() + b.sum();
  }
  const int64_t na = a.numel(), nb = b.numel();
  const std::vector<int64_t> sa = a.sizes().vec(), sb = b.sizes().vec();
  return autograd::record(
      "FlatGradientBackward", {a, b}, out, {}, [=](autograd::BackwardContext& c) -> autograd::variable_list {
        Tensor flat = c.grad().mul(2).expand({na + nb}).contiguous();
        autograd::variable_list r{flat.narrow(0, 0, na).view(sa), flat.narrow(0, na, nb).view(sb)};
        if (hand_over) autograd::hand_over_grad_views(flat, 2);
        if (keep) *keep = flat;
        return r;
      });
}

TEST(GradHandOver, ViewsBecomeTheGradients) {
  const auto opt = TensorOptions(kFloat64);
  Tensor a = randn({2, 3}, opt).requires_grad_(), b = randn({4}, opt).requires_grad_();
  sum_by_flat_gradient(a, b, true).backward();
  ASSERT_TRUE(a.grad().defined() && b.grad().defined());
  EXPECT_EQ(a.grad().impl()->storage().get(), b.grad().impl()->storage().get());
  EXPECT_EQ(static_cast<const double*>(b.grad().data_ptr()),
            static_cast<const double*>(a.grad().data_ptr()) + 6);
  wick::testing::expect_close(a.grad(), full({2, 3}, 2.0, opt), 0, 0, "a");
  wick::testing::expect_close(b.grad(), full({4}, 2.0, opt), 0, 0, "b");
  // each its own part: zeroing one leaves the other
  a.mutable_grad().zero_();
  wick::testing::expect_close(b.grad(), full({4}, 2.0, opt), 0, 0, "b after a's zero_");
  // a defined gradient accumulates in place, the other is taken again
  b.mutable_grad() = Tensor();
  const void* a_grad = a.grad().data_ptr();
  sum_by_flat_gradient(a, b, true).backward();
  EXPECT_EQ(a.grad().data_ptr(), a_grad);
  wick::testing::expect_close(a.grad(), full({2, 3}, 2.0, opt), 0, 0, "a accumulated");
  wick::testing::expect_close(b.grad(), full({4}, 2.0, opt), 0, 0, "b again");
}

TEST(GradHandOver, CopiedWithoutItOrWhenSomethingElseHoldsTheFlatGradient) {
  const auto opt = TensorOptions(kFloat64);
  Tensor a = randn({2, 3}, opt).requires_grad_(), b = randn({4}, opt).requires_grad_();
  sum_by_flat_gradient(a, b, false).backward();
  EXPECT_NE(a.grad().impl()->storage().get(), b.grad().impl()->storage().get());
  a.mutable_grad() = Tensor();
  b.mutable_grad() = Tensor();
  Tensor kept;
  sum_by_flat_gradient(a, b, true, &kept).backward();
  EXPECT_NE(a.grad().impl()->storage().get(), kept.impl()->storage().get());
  EXPECT_NE(b.grad().impl()->storage().get(), kept.impl()->storage().get());
  wick::testing::expect_close(a.grad(), full({2, 3}, 2.0, opt), 0, 0, "a");
  wick::testing::expect_close(b.grad(), full({4}, 2.0, opt), 0, 0, "b");
  // autograd::grad: the views themselves, nothing accumulated
  auto g = autograd::grad({sum_by_flat_gradient(a, b, true)}, {a, b});
  EXPECT_EQ(g[0].impl()->storage().get(), g[1].impl()->storage().get());
  wick::testing::expect_close(a.grad(), full({2, 3}, 2.0, opt), 0, 0, "a unchanged by grad");
}

}  // namespace
