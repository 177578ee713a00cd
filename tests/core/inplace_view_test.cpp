// The in-place view methods unsqueeze_, squeeze_, transpose_ and t_: self's new sizes and
// strides are those of the out-of-place view, the storage is the same, gradients flow through
// the node PyTorch records (UnsqueezeBackward1 ...), and the errors are PyTorch's.
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../nn/nn_test_util.h"
#include "wick/wick.h"

using namespace wick;
using wick::testing::error_of;
using wick::testing::expect_close;

namespace {

class InplaceView : public wick::testing::OnEachDevice<73> {};

// self.op_() leaves self with the geometry of self.op() and the same data.
template <class Out, class In>
void expect_same_as_view(Tensor self, Out out_of_place, In in_place) {
  const Tensor before = self;  // another handle on the same tensor
  const Tensor want = out_of_place(self);
  const void* data = self.data_ptr();
  const auto version = self._version();
  Tensor& r = in_place(self);
  EXPECT_TRUE(r.is_same(self));
  EXPECT_TRUE(before.is_same(self));
  EXPECT_EQ(self.sizes().vec(), want.sizes().vec());
  EXPECT_EQ(self.strides().vec(), want.strides().vec());
  EXPECT_EQ(self.storage_offset(), want.storage_offset());
  EXPECT_EQ(self.data_ptr(), data);
  EXPECT_EQ(self.is_contiguous(), want.is_contiguous());
  EXPECT_GT(self._version(), version);
  EXPECT_EQ(self.cpu().to_vector<double>(), want.cpu().to_vector<double>());
}

TEST_P(InplaceView, EachOpGivesSelfTheViewsGeometry) {
  Tensor x = randn({2, 1, 3}, TensorOptions(kFloat64)).to(dev());
  expect_same_as_view(x.clone(), [](const Tensor& t) { return t.unsqueeze(0); },
                      [](Tensor& t) -> Tensor& { return t.unsqueeze_(0); });
  expect_same_as_view(x.clone(), [](const Tensor& t) { return t.unsqueeze(-1); },
                      [](Tensor& t) -> Tensor& { return t.unsqueeze_(-1); });
  expect_same_as_view(x.clone(), [](const Tensor& t) { return t.squeeze(); },
                      [](Tensor& t) -> Tensor& { return t.squeeze_(); });
  expect_same_as_view(x.clone(), [](const Tensor& t) { return t.squeeze(1); },
                      [](Tensor& t) -> Tensor& { return t.squeeze_(1); });
  expect_same_as_view(x.clone(), [](const Tensor& t) { return t.squeeze(0); },  // size 2: unchanged
                      [](Tensor& t) -> Tensor& { return t.squeeze_(0); });
  expect_same_as_view(x.clone(), [](const Tensor& t) { return t.transpose(0, 2); },
                      [](Tensor& t) -> Tensor& { return t.transpose_(0, 2); });
  Tensor m = randn({3, 4}, TensorOptions(kFloat64)).to(dev());
  expect_same_as_view(m.clone(), [](const Tensor& t) { return t.t(); }, [](Tensor& t) -> Tensor& { return t.t_(); });
  // A view stays a view of the same storage; an expanded tensor keeps its zero strides.
  Tensor base = randn({4, 5}).to(dev());
  Tensor v = base.narrow(1, 1, 3);
  v.unsqueeze_(0);
  EXPECT_EQ(v.sizes().vec(), (std::vector<int64_t>{1, 4, 3}));
  EXPECT_TRUE(v.is_view());
  v.fill_(7);
  EXPECT_EQ(base.select(1, 2).cpu().to_vector<float>(), std::vector<float>(4, 7.f));
  Tensor e = randn({3}).to(dev()).expand({2, 3});
  e.unsqueeze_(0);
  EXPECT_EQ(e.strides().vec(), (std::vector<int64_t>{0, 0, 1}));
  // With grad too: the op writes no element, so repeated ones are no reason to refuse it.
  Tensor leaf = randn({3}, TensorOptions(kFloat64)).to(dev()).requires_grad_();
  Tensor g = (leaf * 1).expand({2, 3});
  g.unsqueeze_(0);
  EXPECT_EQ(g.sizes().vec(), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(g.grad_fn()->name(), "UnsqueezeBackward1");
  g.sum().backward();
  EXPECT_EQ(leaf.grad().cpu().to_vector<double>(), std::vector<double>(3, 2.0));
}

TEST_P(InplaceView, GradientsFlowThroughPyTorchsNodes) {
  struct C {
    const char* node;
    std::function<Tensor&(Tensor&)> op;
  };
  const std::vector<C> cases{
      {"UnsqueezeBackward1", [](Tensor& t) -> Tensor& { return t.unsqueeze_(0); }},
      {"TransposeBackward1", [](Tensor& t) -> Tensor& { return t.transpose_(0, 1); }},
      {"TBackward1", [](Tensor& t) -> Tensor& { return t.t_(); }},
      {"SqueezeBackward3", [](Tensor& t) -> Tensor& { return t.squeeze_(); }},
      {"SqueezeBackward4", [](Tensor& t) -> Tensor& { return t.squeeze_(1); }},
  };
  for (const C& c : cases) {
    SCOPED_TRACE(c.node);
    const bool squeezes = std::string(c.node).rfind("Squeeze", 0) == 0;
    Tensor a = randn({2, 3}, TensorOptions(kFloat64)).to(dev()).requires_grad_();
    Tensor y = a * 2;
    if (squeezes) y = y.unsqueeze(1);  // [2, 1, 3]
    c.op(y);
    ASSERT_TRUE(y.grad_fn());
    EXPECT_EQ(y.grad_fn()->name(), c.node);
    Tensor u = randn(y.sizes(), TensorOptions(kFloat64)).to(dev());
    (y * u).sum().backward();
    // Where each element of a lands: the same op on a tensor holding 0 ... 5.
    Tensor probe = arange(6, TensorOptions(kFloat64)).reshape({2, 3}).to(dev());
    if (squeezes) probe = probe.unsqueeze(1);
    c.op(probe);
    ASSERT_EQ(probe.sizes().vec(), y.sizes().vec());
    const auto where = probe.contiguous().cpu().to_vector<double>();
    const auto uv = u.contiguous().cpu().to_vector<double>();
    std::vector<double> want(6, 0.0);
    for (size_t i = 0; i < where.size(); ++i) want[size_t(where[i])] += 2 * uv[i];
    expect_close(a.grad(), want, 1e-12);
  }
}

TEST_P(InplaceView, ALeafThatRequiresGradIsRefusedUnlessGradIsOff) {
  Tensor a = randn({2, 3}).to(dev()).requires_grad_();
  EXPECT_EQ(error_of([&] { a.unsqueeze_(0); }),
            "[unsqueeze_] a leaf Variable that requires grad is being used in an in-place operation.");
  EXPECT_EQ(a.sizes().vec(), (std::vector<int64_t>{2, 3}));
  EXPECT_THROW(a.t_(), Error);
  EXPECT_EQ(a.sizes().vec(), (std::vector<int64_t>{2, 3}));
  {
    NoGradGuard g;
    a.unsqueeze_(0);
  }
  EXPECT_EQ(a.sizes().vec(), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_TRUE(a.is_leaf());
}

TEST_P(InplaceView, ASavedInputChangedInPlaceFailsItsBackward) {
  Tensor a = randn({2, 3}, TensorOptions(kFloat64)).to(dev()).requires_grad_();
  Tensor y = a * 1;
  Tensor z = y * y;  // saves y
  y.unsqueeze_(0);
  EXPECT_THROW(z.sum().backward(), Error);
}

TEST_P(InplaceView, BadArgumentsChangeNothing) {
  Tensor x = randn({2, 3}).to(dev());
  EXPECT_EQ(error_of([&] { x.unsqueeze_(3); }).rfind("[unsqueeze_] ", 0), 0u);
  EXPECT_EQ(error_of([&] { x.squeeze_(2); }).rfind("[squeeze_] ", 0), 0u);
  EXPECT_EQ(error_of([&] { x.transpose_(0, 5); }).rfind("[transpose_] ", 0), 0u);
  Tensor c = randn({2, 3, 4}).to(dev());
  EXPECT_EQ(error_of([&] { c.t_(); }).rfind("[t_] ", 0), 0u);
  EXPECT_EQ(x.sizes().vec(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(c.sizes().vec(), (std::vector<int64_t>{2, 3, 4}));
  Tensor undefined;
  EXPECT_THROW(undefined.unsqueeze_(0), Error);
}

WICK_INSTANTIATE_ON_DEVICES(InplaceView);

}  // namespace
