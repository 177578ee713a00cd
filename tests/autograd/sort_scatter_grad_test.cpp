// Gradient checks (central differences, float64) for sort, topk, scatter, scatter_add,
// index_add and index_copy, with PyTorch's node names; CPU and, when present, cuda:0.
#include <gtest/gtest.h>

#include "gradcheck.h"
#include "wick/wick.h"

using namespace wick;
using wick::testing::gradcheck;
using wick::testing::rnd;
using T = std::vector<Tensor>;

namespace {

class GradcheckSortScatter : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override {
    if (GetParam().is_cuda() && !cuda::is_available()) GTEST_SKIP() << "no CUDA device";
    manual_seed(17);
  }
  Device dev() const { return GetParam(); }
};

TEST_P(GradcheckSortScatter, SortAndTopk) {
  // randn values are distinct, so the order is stable under the differences' steps.
  gradcheck([](const T& x) { return std::get<0>(sort(x[0], 1)); }, {rnd({3, 5})}, dev());
  gradcheck([](const T& x) { return std::get<0>(sort(x[0], 0, true)); }, {rnd({4, 3})}, dev());
  gradcheck([](const T& x) { return std::get<0>(sort(x[0].t(), 1)); }, {rnd({4, 3})}, dev());
  gradcheck([](const T& x) { return std::get<0>(topk(x[0], 2, 1)); }, {rnd({3, 5})}, dev());
  gradcheck([](const T& x) { return std::get<0>(topk(x[0], 3, 0, false)); }, {rnd({5, 2})}, dev());
}

TEST_P(GradcheckSortScatter, Scatter) {
  // One index per position along dim (a permutation per column), so src's gradient is defined.
  Tensor perm = tensor({{2, 0, 1}, {0, 1, 2}});
  gradcheck([perm](const T& x) { return scatter(x[0], 0, perm.to(x[0].device()), x[1]); },
            {rnd({3, 3}), rnd({2, 4})}, dev());
  gradcheck([perm](const T& x) { return scatter(x[0], 0, perm.to(x[0].device()), 1.5); }, {rnd({3, 3})}, dev());
  Tensor dup = tensor({{2, 0, 2}, {2, 1, 2}});
  gradcheck([dup](const T& x) { return scatter_add(x[0], 0, dup.to(x[0].device()), x[1]); },
            {rnd({3, 4}), rnd({2, 3})}, dev());
  gradcheck([dup](const T& x) { return x[0].scatter_add(1, dup.to(x[0].device()), x[1]); },
            {rnd({2, 3}), rnd({2, 3})}, dev());
}

TEST_P(GradcheckSortScatter, IndexAddAndCopy) {
  Tensor idx = tensor({3, 0, 3});
  gradcheck([idx](const T& x) { return index_add(x[0], 0, idx.to(x[0].device()), x[1], 2.5); },
            {rnd({4, 2}), rnd({3, 2})}, dev());
  gradcheck([idx](const T& x) { return index_add(x[0], 1, idx.to(x[0].device()), x[1]); },
            {rnd({2, 4}), rnd({2, 3})}, dev());
  Tensor uniq = tensor({3, 0});
  gradcheck([uniq](const T& x) { return index_copy(x[0], 0, uniq.to(x[0].device()), x[1]); },
            {rnd({4, 2}), rnd({2, 2})}, dev());
  gradcheck([uniq](const T& x) { return index_copy(x[0], 1, uniq.to(x[0].device()), x[1]); },
            {rnd({3, 4}), rnd({3, 2})}, dev());
}

TEST_P(GradcheckSortScatter, InPlaceFormsRecordTheOutOfPlaceNode) {
  Tensor perm = tensor({{1, 0}});
  gradcheck(
      [perm](const T& x) {
        Tensor y = x[0] * 1.0;
        y.scatter_(1, perm.to(y.device()), x[1]);
        return y;
      },
      {rnd({2, 2}), rnd({1, 2})}, dev());
  gradcheck(
      [](const T& x) {
        Tensor y = x[0] * 1.0;
        y.index_add_(0, tensor({1, 1}).to(y.device()), x[1], -1);
        return y;
      },
      {rnd({2, 3}), rnd({2, 3})}, dev());
}

INSTANTIATE_TEST_SUITE_P(Devices, GradcheckSortScatter, ::testing::Values(Device(kCPU), Device(kCUDA, 0)),
                         [](const auto& info) {
                           return info.param.is_cpu() ? std::string("cpu") : std::string("cuda");
                         });

TEST(AutogradNames, SortAndScatterNodesAsPyTorch) {
  auto x = rnd({2, 3}), s = rnd({2, 3});
  auto idx = tensor({{0, 1, 0}, {1, 0, 1}});
  EXPECT_EQ(std::get<0>(sort(x)).grad_fn()->name(), "SortBackward0");
  EXPECT_EQ(std::get<0>(topk(x, 2)).grad_fn()->name(), "TopkBackward0");
  EXPECT_EQ(scatter(x, 0, idx, s).grad_fn()->name(), "ScatterBackward0");
  EXPECT_EQ(scatter(x, 0, idx, 2.0).grad_fn()->name(), "ScatterBackward1");
  EXPECT_EQ(scatter_add(x, 0, idx, s).grad_fn()->name(), "ScatterAddBackward0");
  EXPECT_EQ(index_add(x, 0, tensor({1, 0}), s).grad_fn()->name(), "IndexAddBackward0");
  EXPECT_EQ(index_copy(x, 0, tensor({1, 0}), s).grad_fn()->name(), "IndexCopyBackward0");
  EXPECT_FALSE(std::get<1>(sort(x)).requires_grad());
  EXPECT_FALSE(argsort(x).requires_grad());
  // In place on a leaf that requires grad is refused, as PyTorch's.
  EXPECT_ANY_THROW(x.scatter_(0, idx, s));
}

}  // namespace
