// Printing of autograd state: requires_grad=True on leaves, grad_fn=<...> on results.
#include <sstream>

#include <gtest/gtest.h>

#include "wick/wick.h"

using namespace wick;

namespace {

std::string str(const Tensor& t) {
  std::ostringstream os;
  os << t;
  return os.str();
}

TEST(AutogradPrinting, LeafAndResultSuffixes) {
  auto w = tensor({1., 2.}).requires_grad_();
  EXPECT_EQ(str(w), "tensor([1., 2.], requires_grad=True)");
  EXPECT_EQ(str(w * 2), "tensor([2., 4.], grad_fn=<MulBackward1>)");
  EXPECT_EQ(str((w * w).sum()), "tensor(5., grad_fn=<SumBackward0>)");
  EXPECT_EQ(str(w.detach()), "tensor([1., 2.])");
  {
    NoGradGuard g;
    EXPECT_EQ(str(w + 1), "tensor([2., 3.])");
  }
  nn::Linear fc(2, 1);
  {
    NoGradGuard g;
    fc->weight.fill_(0.5);
    fc->bias.fill_(0.25);
  }
  EXPECT_EQ(str(fc(tensor({{1., 2.}}))), "tensor([[1.7500]], grad_fn=<AddmmBackward0>)");
}

}  // namespace
