// Gradient checks (central differences, float64) for Tensor::index, index_put_ / index_put and
// masked_select, with PyTorch's node names; CPU and, when present, cuda:0.
#include <gtest/gtest.h>

#include "gradcheck.h"
#include "wick/wick.h"

using namespace wick;
using namespace wick::indexing;
using wick::testing::gradcheck;
using wick::testing::rnd;
using T = std::vector<Tensor>;

namespace {

class GradcheckIndex : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override {
    if (GetParam().is_cuda() && !cuda::is_available()) GTEST_SKIP() << "no CUDA device";
    manual_seed(23);
  }
  Device dev() const { return GetParam(); }
};

TEST_P(GradcheckIndex, Index) {
  // repeated indices: their gradients add
  gradcheck([](const T& x) { return x[0].index({Slice(), tensor({2, 0, 2, -1}).to(x[0].device())}); },
            {rnd({3, 4})}, dev());
  gradcheck([](const T& x) {
    const Device d = x[0].device();
    return x[0].index({tensor({1, 0}).to(d), Slice(1, None), tensor({{3}, {0}}).to(d)});
  }, {rnd({2, 3, 4})}, dev());
  gradcheck([](const T& x) { return x[0].index({None, Ellipsis, 1}); }, {rnd({2, 3})}, dev());
  gradcheck([](const T& x) { return x[0].t().index({x[0].t().detach() > 0}); }, {rnd({3, 4})}, dev());
  gradcheck([](const T& x) { return x[0].masked_select(tensor({true, false, true}).to(x[0].device())); },
            {rnd({2, 3})}, dev());
}

TEST_P(GradcheckIndex, IndexPut) {
  // self's gradient is cut where it was overwritten; values' gathers from there
  gradcheck([](const T& x) {
    return x[0].index_put({Slice(), tensor({3, 0}).to(x[0].device())}, x[1]);
  }, {rnd({2, 4}), rnd({2, 2})}, dev());
  // accumulate with repeated indices and broadcast values
  gradcheck([](const T& x) {
    return x[0].index_put({tensor({1, 1, 0}).to(x[0].device())}, x[1], true);
  }, {rnd({2, 3}), rnd({3})}, dev());
  // in place on a non-leaf
  gradcheck([](const T& x) {
    Tensor y = x[0] * 2;
    y.index_put_({y.detach() > 0}, x[1].sum());
    return y;
  }, {rnd({3, 3}), rnd({2})}, dev());
}

INSTANTIATE_TEST_SUITE_P(Devices, GradcheckIndex, ::testing::Values(Device(kCPU), Device(kCUDA, 0)),
                         [](const auto& info) { return info.param.is_cpu() ? std::string("cpu") : std::string("cuda"); });

TEST(AutogradNames, IndexNodesAsPyTorch) {
  Tensor x = randn({3, 4}).requires_grad_();
  EXPECT_EQ(x.index({Slice(), tensor({1, 0})}).grad_fn()->name(), "IndexBackward0");
  EXPECT_EQ(x.index({x.detach() > 0}).grad_fn()->name(), "IndexBackward0");
  EXPECT_EQ(x.index({1}).grad_fn()->name(), "SelectBackward0");  // basic indices are views
  EXPECT_EQ(x.index({Slice(1, None)}).grad_fn()->name(), "SliceBackward0");
  EXPECT_EQ(x.masked_select(x.detach() > 0).grad_fn()->name(), "MaskedSelectBackward0");
  Tensor y = x * 1;
  y.index_put_({tensor({0})}, 1.0);
  EXPECT_EQ(y.grad_fn()->name(), "IndexPutBackward0");
  // gradient of a gather with repeats: the counts
  x.index({tensor({2, 2, 0})}).sum().backward();
  EXPECT_EQ(x.grad().cpu().sum(1).to_vector<float>(), (std::vector<float>{4, 0, 8}));
  // in place on a leaf that requires grad is refused, as PyTorch's
  EXPECT_ANY_THROW(x.index_put_({tensor({0})}, 1.0));
}

}  // namespace
