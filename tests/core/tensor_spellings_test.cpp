// The spellings a LibTorch or PyTorch program uses beyond the op list: Tensor methods taking a
// Scalar (with PyTorch's result dtypes), in-place comparisons, all/any, data(), the option
// helpers and LibTorch's short dtype names; on the CPU and, when present, on CUDA.
#include <cmath>

#include <gtest/gtest.h>

#include "../autograd/gradcheck.h"
#include "../nn/nn_test_util.h"
#include "wick/wick.h"

using namespace wick;
using wick::testing::error_of;
using wick::testing::test_devices;

namespace {

std::vector<double> values(const Tensor& t) { return t.detach().cpu().to(kFloat64).to_vector<double>(); }

TEST(TensorSpellings, ScalarMethodsAndTheirDtypes) {
  for (Device d : test_devices()) {
    SCOPED_TRACE(d.str());
    Tensor i = tensor({1, 2, 3, -4}).to(d);  // int64
    Tensor f = tensor({1.5f, -2.0f, 0.25f, 4.0f}).to(d);
    // int / int-scalar is true division into the default float dtype, as PyTorch.
    EXPECT_EQ(i.div(2).dtype(), kFloat32);
    EXPECT_EQ(values(i.div(2)), (std::vector<double>{0.5, 1.0, 1.5, -2.0}));
    EXPECT_EQ(i.add(1).dtype(), kInt64);
    EXPECT_EQ(values(i.add(1)), (std::vector<double>{2, 3, 4, -3}));
    EXPECT_EQ(i.add(1.5).dtype(), kFloat32);
    EXPECT_EQ(values(i.add(1.5)), (std::vector<double>{2.5, 3.5, 4.5, -2.5}));
    EXPECT_EQ(values(i.add(2, 3)), (std::vector<double>{7, 8, 9, 2}));
    EXPECT_EQ(values(i.sub(1)), (std::vector<double>{0, 1, 2, -5}));
    EXPECT_EQ(values(i.sub(1, 2)), (std::vector<double>{-1, 0, 1, -6}));
    EXPECT_EQ(values(i.mul(2)), (std::vector<double>{2, 4, 6, -8}));
    EXPECT_EQ(i.mul(2).dtype(), kInt64);
    EXPECT_EQ(i.mul(0.5).dtype(), kFloat32);
    EXPECT_EQ(values(f.mul(2)), (std::vector<double>{3, -4, 0.5, 8}));
    EXPECT_EQ(values(f.div(2)), (std::vector<double>{0.75, -1, 0.125, 2}));
    EXPECT_EQ(f.add(1).dtype(), kFloat32);
    // The forms that existed already, spelled as LibTorch programs spell them.
    EXPECT_EQ(values(f.pow(2)), (std::vector<double>{2.25, 4, 0.0625, 16}));
    EXPECT_EQ(values(f.eq(4)), (std::vector<double>{0, 0, 0, 1}));
    EXPECT_EQ(values(f.clamp(0)), (std::vector<double>{1.5, 0, 0.25, 4}));
    EXPECT_EQ(values(wick::add(i, 1)), (std::vector<double>{2, 3, 4, -3}));
    Tensor g = f.clone();
    g.add_(1);
    EXPECT_EQ(values(g), (std::vector<double>{2.5, -1, 1.25, 5}));
  }
}

TEST(TensorSpellings, ScalarMethodsRecordGradients) {
  wick::testing::gradcheck(
      [](const std::vector<Tensor>& x) { return x[0].add(2, 3).mul(1.5).sub(0.5, 2).div(4); },
      {randn({3, 2}, kFloat64).requires_grad_()});
  auto x = randn({3}, kFloat64).requires_grad_();
  x.div(4).sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{0.25, 0.25, 0.25}));
}

TEST(TensorSpellings, InPlaceComparisons) {
  for (Device d : test_devices()) {
    SCOPED_TRACE(d.str());
    Tensor base = tensor({1.0, 2.0, 3.0, 2.0}, kFloat64).to(d);
    Tensor other = tensor({2.0, 2.0, 2.0, 1.0}, kFloat64).to(d);
    struct Case {
      const char* name;
      Tensor& (Tensor::*scalar)(const Scalar&);
      Tensor& (Tensor::*tensor)(const Tensor&);
      std::vector<double> vs_two, vs_other;
    };
    const std::vector<Case> cases{
        {"eq_", &Tensor::eq_, &Tensor::eq_, {0, 1, 0, 1}, {0, 1, 0, 0}},
        {"ne_", &Tensor::ne_, &Tensor::ne_, {1, 0, 1, 0}, {1, 0, 1, 1}},
        {"lt_", &Tensor::lt_, &Tensor::lt_, {1, 0, 0, 0}, {1, 0, 0, 0}},
        {"le_", &Tensor::le_, &Tensor::le_, {1, 1, 0, 1}, {1, 1, 0, 0}},
        {"gt_", &Tensor::gt_, &Tensor::gt_, {0, 0, 1, 0}, {0, 0, 1, 1}},
        {"ge_", &Tensor::ge_, &Tensor::ge_, {0, 1, 1, 1}, {0, 1, 1, 1}},
    };
    for (const Case& c : cases) {
      SCOPED_TRACE(c.name);
      Tensor a = base.clone();
      Tensor& r = (a.*c.scalar)(2);
      EXPECT_TRUE(r.is_same(a));
      EXPECT_EQ(a.dtype(), kFloat64);  // self keeps its dtype
      EXPECT_EQ(values(a), c.vs_two);
      Tensor b = base.clone();
      (b.*c.tensor)(other);
      EXPECT_EQ(values(b), c.vs_other);
    }
    // Into a strided view, broadcasting other.
    Tensor m = tensor({1, 5, 2, 7, 3, 9}).view({3, 2}).to(d);
    Tensor col = m.select(1, 0);
    col.gt_(tensor({1}).to(d));
    EXPECT_EQ(values(m), (std::vector<double>{0, 5, 1, 7, 1, 9}));
    Tensor small = tensor({1.0, 2.0}).to(d);
    EXPECT_NE(error_of([&] { small.eq_(tensor({1.0, 2.0, 3.0}).to(d)); }).find("[eq_]"), std::string::npos);
    EXPECT_EQ(values(small), (std::vector<double>{1, 2}));
  }
}

TEST(TensorSpellings, AllAndAny) {
  for (Device d : test_devices()) {
    SCOPED_TRACE(d.str());
    Tensor x = tensor({1.0, 0.0, double(NAN), 2.0, 3.0, -1.0}, kFloat32).view({2, 3}).to(d);
    EXPECT_EQ(x.all().dtype(), kBool);
    EXPECT_FALSE(x.all().item().to<bool>());
    EXPECT_TRUE(x.any().item().to<bool>());
    EXPECT_EQ(values(x.all(1)), (std::vector<double>{0, 1}));  // NaN counts as true
    EXPECT_EQ(values(x.any(0)), (std::vector<double>{1, 1, 1}));
    EXPECT_EQ(x.all(0, true).sizes().vec(), (std::vector<int64_t>{1, 3}));
    EXPECT_EQ(values(x.all(-2)), (std::vector<double>{1, 0, 1}));
    Tensor z = zeros({2, 2}).to(d);
    EXPECT_FALSE(z.any().item().to<bool>());
    EXPECT_TRUE(z.eq(0).all().item().to<bool>());
    // Empty: all is true, any is false.
    Tensor e = zeros({0}).to(d);
    EXPECT_TRUE(e.all().item().to<bool>());
    EXPECT_FALSE(e.any().item().to<bool>());
    // uint8 in, uint8 out.
    Tensor u = tensor({1, 2, 0}).to(kUInt8).to(d);
    EXPECT_EQ(u.all().dtype(), kUInt8);
    EXPECT_EQ(values(u.all()), (std::vector<double>{0}));
    EXPECT_EQ(values(u.any()), (std::vector<double>{1}));
    Tensor b = tensor({true, true}).to(d);
    EXPECT_TRUE(b.all().item().to<bool>());
    EXPECT_NE(error_of([&] { x.all(2); }).find("[all]"), std::string::npos);
    // A transposed view.
    EXPECT_EQ(values(x.t().any(1)), (std::vector<double>{1, 1, 1}));
  }
}

TEST(TensorSpellings, DataIsADetachedAlias) {
  Tensor w = randn({3}, kFloat64).requires_grad_();
  Tensor y = w * 2;
  Tensor d = y.data();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_EQ(d.grad_fn(), nullptr);
  EXPECT_EQ(d.data_ptr(), y.data_ptr());
  // Writing through data() changes the parameter without recording (SGD by hand, as LibTorch
  // programs write it).
  w.data().sub_(1);
  EXPECT_TRUE(w.requires_grad());
  EXPECT_EQ(values(w.data()), values(w));
}

// Assigning to a temporary writes into its data (LibTorch's rvalue assignment); assigning to a
// named tensor rebinds it.
TEST(TensorSpellings, AssigningToATemporaryWritesIntoIt) {
  for (Device d : test_devices()) {
    SCOPED_TRACE(d.str());
    Tensor w = tensor({1.0, 2.0, 3.0}, kFloat64).to(d).requires_grad_();
    (w * 3).sum().backward();
    const void* grad_memory = w.grad().data_ptr();
    // The distributed-MNIST pattern: the averaged gradient written back through data().
    w.grad().data() = tensor({6.0, 9.0, 12.0}, kFloat64).to(d) / 3;
    EXPECT_EQ(w.grad().data_ptr(), grad_memory);
    EXPECT_EQ(values(w.grad()), (std::vector<double>{2, 3, 4}));
    EXPECT_TRUE(w.requires_grad());

    Tensor x = zeros({2, 3}, kInt64).to(d);
    x[0] = 7;                                               // a number fills the row
    x[1] = tensor({1, 2, 3}).to(d);                         // a tensor is copied into it
    x.select(1, 2) = tensor({-1}).to(d);                    // broadcast as copy_
    EXPECT_EQ(values(x), (std::vector<double>{7, 7, -1, 1, 2, -1}));
    // A failed write changes nothing and names copy_.
    EXPECT_NE(error_of([&] { x[0] = tensor({1, 2}).to(d); }).find("[copy_]"), std::string::npos);
    EXPECT_EQ(values(x), (std::vector<double>{7, 7, -1, 1, 2, -1}));

    // A named tensor is rebound, not written into.
    Tensor a = x[0];
    a = tensor({5, 5, 5}).to(d);
    EXPECT_EQ(values(x[0]), (std::vector<double>{7, 7, -1}));
  }
}

// torch.tensor(3.): a 0-dim tensor, its dtype as a list of the value would have.
TEST(TensorSpellings, ZeroDimTensorFromANumber) {
  Tensor f = tensor(3.5);
  EXPECT_EQ(f.dim(), 0);
  EXPECT_EQ(f.dtype(), get_default_dtype());
  EXPECT_EQ(f.item<double>(), 3.5);
  Tensor i = tensor(int64_t(-4));
  EXPECT_EQ(i.dim(), 0);
  EXPECT_EQ(i.dtype(), kInt64);
  EXPECT_EQ(i.item<int64_t>(), -4);
  EXPECT_EQ(tensor(true).dtype(), kBool);
  Tensor h = tensor(2.0, kFloat64);
  EXPECT_EQ(h.dtype(), kFloat64);
  EXPECT_EQ(h.sizes().size(), 0u);
  EXPECT_EQ(tensor({3.0}).dim(), 1);  // a list stays 1-D
}

TEST(TensorSpellings, OptionHelpersAndShortDtypes) {
  TensorOptions o = wick::dtype(kF32).requires_grad(true);
  EXPECT_EQ(o.dtype(), kFloat32);
  EXPECT_TRUE(o.requires_grad());
  Tensor t = zeros({2}, wick::dtype(kF64).requires_grad(true));
  EXPECT_EQ(t.dtype(), kFloat64);
  EXPECT_TRUE(t.requires_grad());
  EXPECT_TRUE(wick::requires_grad().requires_grad());
  EXPECT_FALSE(wick::requires_grad(false).requires_grad());
  EXPECT_EQ(wick::device(kCPU).device(), Device(kCPU));
  EXPECT_EQ(wick::device(kCUDA).device_opt(), std::optional<Device>(Device(kCUDA)));
  EXPECT_EQ(ones({1}, wick::device(kCPU).dtype(kF16)).dtype(), kFloat16);
  EXPECT_EQ(kBF16, kBFloat16);
}

}  // namespace
