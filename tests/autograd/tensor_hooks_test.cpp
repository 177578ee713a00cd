// Tensor::register_hook and remove_hook: hooks of leaves (before accumulation) and of non-leaves
// (on the summed gradient, before grad_fn runs and before retain_grad keeps it), replacing or
// only reading the gradient, their order, removal, autograd::grad, and errors. Values are
// hand-derived (float64).
#include <vector>

#include <gtest/gtest.h>

#include "../nn/nn_test_util.h"
#include "wick/wick.h"

using namespace wick;
using wick::testing::error_of;
using wick::testing::names;

namespace {

Tensor leaf(std::initializer_list<double> v) { return tensor(v, kFloat64).requires_grad_(); }
std::vector<double> vec(const Tensor& t) { return t.detach().cpu().to_vector<double>(); }

class TensorHooks : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override {
    if (GetParam().is_cuda() && !cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  }
  Tensor leaf_on(std::initializer_list<double> v) const {
    return tensor(v, kFloat64).to(GetParam()).requires_grad_();
  }
};

TEST_P(TensorHooks, LeafHookReplacesTheGradientBeforeAccumulation) {
  auto w = leaf_on({1, 2, 3});
  std::vector<std::vector<double>> seen;
  w.register_hook([&](const Tensor& g) {
    seen.push_back(vec(g));
    return g * 2;
  });
  (w * 3).sum().backward();
  EXPECT_EQ(vec(w.grad()), (std::vector<double>{6, 6, 6}));
  // the hook sees each pass's gradient, not the accumulated one
  (w * w).sum().backward();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], (std::vector<double>{3, 3, 3}));
  EXPECT_EQ(seen[1], (std::vector<double>{2, 4, 6}));
  EXPECT_EQ(vec(w.grad()), (std::vector<double>{10, 14, 18}));
}

TEST_P(TensorHooks, NonLeafHookRunsOnceOnTheSummedGradient) {
  auto w = leaf_on({1, 2});
  Tensor y = w * 2;  // y = [2, 4]
  int calls = 0;
  std::vector<double> seen;
  y.register_hook([&](Tensor g) {
    ++calls;
    seen = vec(g);
    return g * 10;
  });
  y.retain_grad();
  // z = sum(y * y) + sum(3 y): dz/dy = 2 y + 3 = [7, 11], summed over both uses
  ((y * y).sum() + (y * 3).sum()).backward();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(seen, (std::vector<double>{7, 11}));
  EXPECT_EQ(vec(y.grad()), (std::vector<double>{70, 110}));  // retain_grad sees the hooked value
  EXPECT_EQ(vec(w.grad()), (std::vector<double>{140, 220}));  // dy/dw = 2
}

TEST_P(TensorHooks, HooksRunInOrderAndVoidHooksOnlyRead) {
  auto w = leaf_on({1, 1});
  std::vector<double> read;
  w.register_hook([](const Tensor& g) { return g + 1; });
  w.register_hook([&](const Tensor& g) { read = vec(g); });  // void: keeps the gradient
  w.register_hook([](const Tensor& g) { return g * 2; });
  w.register_hook([](const Tensor&) { return Tensor(); });  // undefined: keeps it too
  (w * 4).sum().backward();
  EXPECT_EQ(read, (std::vector<double>{5, 5}));
  EXPECT_EQ(vec(w.grad()), (std::vector<double>{10, 10}));
}

TEST_P(TensorHooks, RemoveHook) {
  auto w = leaf_on({1, 2});
  int calls = 0;
  const unsigned h0 = w.register_hook([&](const Tensor& g) {
    ++calls;
    return g * 100;
  });
  const unsigned h1 = w.register_hook([](const Tensor& g) { return g + 1; });
  EXPECT_EQ(h0, 0u);
  EXPECT_EQ(h1, 1u);
  w.remove_hook(h0);
  w.sum().backward();
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(vec(w.grad()), (std::vector<double>{2, 2}));
  EXPECT_TRUE(names([&] { w.remove_hook(h0); }, "remove_hook"));  // removed already
  EXPECT_TRUE(names([&] { w.remove_hook(7); }, "remove_hook"));
  EXPECT_THROW(w.remove_hook(7), ValueError);
}

TEST_P(TensorHooks, LeafHookRegisteredAfterTheGraphWasBuilt) {
  auto w = leaf_on({1, 2});
  Tensor loss = (w * w).sum();  // the leaf's AccumulateGrad exists now
  w.register_hook([](const Tensor& g) { return -g; });
  loss.backward();
  EXPECT_EQ(vec(w.grad()), (std::vector<double>{-2, -4}));
}

TEST_P(TensorHooks, AutogradGradSeesHookedGradients) {
  auto x = leaf_on({1, 2});
  Tensor y = x * 3;
  y.register_hook([](const Tensor& g) { return g * 2; });
  x.register_hook([](const Tensor& g) { return g + 1; });
  auto g = autograd::grad({y.sum()}, {x});
  EXPECT_EQ(vec(g[0]), (std::vector<double>{7, 7}));  // (1 * 2) * 3 + 1
  EXPECT_FALSE(x.grad().defined());
}

TEST(TensorHooksErrors, Errors) {
  Tensor plain = tensor({1.0, 2.0}, kFloat64);
  EXPECT_TRUE(names([&] { plain.register_hook([](const Tensor& g) { return g; }); }, "register_hook"));
  EXPECT_THROW(plain.register_hook([](const Tensor& g) { return g; }), ValueError);
  EXPECT_TRUE(names([&] { plain.remove_hook(0); }, "remove_hook"));
  // a hook changing the gradient's shape
  auto w = leaf({1, 2});
  w.register_hook([](const Tensor& g) { return g.sum(); });
  EXPECT_TRUE(names([&] { w.sum().backward(); }, "register_hook")) << error_of([&] { w.sum().backward(); });
}

INSTANTIATE_TEST_SUITE_P(Devices, TensorHooks, ::testing::Values(Device(kCPU), Device(kCUDA, 0)),
                         [](const auto& info) { return info.param.is_cuda() ? "cuda" : "cpu"; });

}  // namespace
