// Gradient checks (central differences, float64) for sort, topk, scatter, scatter_add,
// scatter_reduce, index_add and index_copy, with PyTorch's node names; CPU and, when present, cuda:0.
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

TEST_P(GradcheckSortScatter, ScatterReduce) {
  // Repeated indices, src larger than index, both include_self forms, every reduction.
  Tensor dup = tensor({{2, 0, 2}, {2, 1, 2}});
  for (const char* r : {"sum", "prod", "mean", "amax", "amin"})
    for (bool self_in : {true, false}) {
      SCOPED_TRACE(std::string(r) + (self_in ? " include_self" : " exclude_self"));
      gradcheck([&](const T& x) { return scatter_reduce(x[0], 0, dup.to(x[0].device()), x[1], r, self_in); },
                {rnd({3, 4}), rnd({3, 3})}, dev());
      gradcheck([&](const T& x) { return x[0].t().scatter_reduce(1, dup.to(x[0].device()), x[1], r, self_in); },
                {rnd({4, 2}), rnd({2, 3})}, dev());
    }
  // prod with zeros: one zero in a position's values, two zeros, and a zero in self.
  Tensor idx = tensor({0, 0, 1, 1, 2});
  Tensor src = tensor({0.0, 2.0, 0.0, 0.0, 3.0}, kFloat64).requires_grad_();
  Tensor self = tensor({1.5, -2.0, 0.0}, kFloat64).requires_grad_();
  for (bool self_in : {true, false})
    gradcheck([&](const T& x) { return scatter_reduce(x[0], 0, idx.to(x[0].device()), x[1], "prod", self_in); },
              {self, src}, dev());
}

TEST_P(GradcheckSortScatter, ScatterReduceTiesShareTheGradient) {
  // amax at position 0: self's 1 and src's two 1s tie, each gets a third (PyTorch's rule); at
  // position 1 self's 0 wins alone. amin the same on the negated values.
  Tensor self = tensor({1.0, 0.0}, kFloat64).to(dev()).requires_grad_();
  Tensor src = tensor({1.0, 1.0, -1.0}, kFloat64).to(dev()).requires_grad_();
  Tensor idx = tensor({0, 0, 1}).to(dev());
  for (const char* r : {"amax", "amin"}) {
    Tensor s = r == std::string("amax") ? src : (-src).detach().requires_grad_();
    Tensor x = r == std::string("amax") ? self : (-self).detach().requires_grad_();
    Tensor y = scatter_reduce(x, 0, idx, s, r);
    y.backward(tensor({3.0, 1.0}, kFloat64).to(dev()));
    EXPECT_EQ(x.grad().cpu().to_vector<double>(), std::vector<double>({1.0, 1.0})) << r;
    EXPECT_EQ(s.grad().cpu().to_vector<double>(), std::vector<double>({1.0, 1.0, 0.0})) << r;
  }
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
  EXPECT_EQ(scatter_reduce(x, 0, idx, s, "amax").grad_fn()->name(), "ScatterReduceBackward0");
  EXPECT_EQ(x.scatter_reduce(1, idx, s, "mean", false).grad_fn()->name(), "ScatterReduceBackward0");
  // scatter with reduce has no derivative in PyTorch: backward through it raises.
  EXPECT_THROW(scatter(x, 0, idx, s, "add").sum().backward(), NotImplementedError);
  EXPECT_THROW(scatter(x, 0, idx, 2.0, "multiply").sum().backward(), NotImplementedError);
  EXPECT_FALSE(std::get<1>(sort(x)).requires_grad());
  EXPECT_FALSE(argsort(x).requires_grad());
  // In place on a leaf that requires grad is refused, as PyTorch's.
  EXPECT_ANY_THROW(x.scatter_(0, idx, s));
}

}  // namespace
