// LibTorch's ways of making and comparing tensors that renamed programs use: torch::tensor of a
// std::vector and of nested lists three and four deep, from_blob with a deleter (and a storage
// offset), torch::equal / Tensor::equal, arange(start, end, options), the free transpose and
// size, and F::cross_entropy with CrossEntropyFuncOptions.
#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "../nn/nn_test_util.h"
#include "wick/wick.h"

using namespace wick;
using wick::testing::error_of;
namespace F = wick::nn::functional;

namespace {

TEST(TensorFromVector, DtypesAsLibTorchs) {
  Tensor f = tensor(std::vector<float>{1.5f, -2.0f, 3.25f});
  EXPECT_EQ(f.dtype(), kFloat32);
  EXPECT_EQ(f.sizes().vec(), (std::vector<int64_t>{3}));
  EXPECT_EQ(f.to_vector<float>(), (std::vector<float>{1.5f, -2.0f, 3.25f}));
  // doubles: the default float unless a dtype is asked for, which then keeps every digit
  Tensor d = tensor(std::vector<double>{0.1, 1e-9});
  EXPECT_EQ(d.dtype(), kFloat32);
  EXPECT_EQ(d.to_vector<float>(), (std::vector<float>{0.1f, 1e-9f}));
  Tensor d64 = tensor(std::vector<double>{0.1, 1e-9}, kFloat64);
  EXPECT_EQ(d64.dtype(), kFloat64);
  EXPECT_EQ(d64.to_vector<double>(), (std::vector<double>{0.1, 1e-9}));
  // int and int64_t: int64
  Tensor i = tensor(std::vector<int>{3, -1, 2147483647});
  EXPECT_EQ(i.dtype(), kInt64);
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{3, -1, 2147483647}));
  Tensor l = tensor(std::vector<int64_t>{int64_t(1) << 40, -7});
  EXPECT_EQ(l.dtype(), kInt64);
  EXPECT_EQ(l.to_vector<int64_t>(), (std::vector<int64_t>{int64_t(1) << 40, -7}));
  // bool (std::vector<bool> has no data(): read element by element)
  Tensor b = tensor(std::vector<bool>{true, false, true});
  EXPECT_EQ(b.dtype(), kBool);
  EXPECT_EQ(b.to(kInt64).to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 1}));
  // int8, uint8 and int16 keep their dtype, as LibTorch's
  EXPECT_EQ(tensor(std::vector<uint8_t>{200, 1}).dtype(), kUInt8);
  EXPECT_EQ(tensor(std::vector<uint8_t>{200, 1}).to_vector<int64_t>(), (std::vector<int64_t>{200, 1}));
  EXPECT_EQ(tensor(std::vector<int8_t>{-100}).dtype(), kInt8);
  EXPECT_EQ(tensor(std::vector<int16_t>{-300, 300}).to_vector<int64_t>(), (std::vector<int64_t>{-300, 300}));
  EXPECT_EQ(tensor({int16_t(1), int16_t(2)}).dtype(), kInt16);
  // an empty vector: shape [0]
  Tensor e = tensor(std::vector<float>{});
  EXPECT_EQ(e.sizes().vec(), (std::vector<int64_t>{0}));
  EXPECT_EQ(e.dtype(), kFloat32);
}

TEST(TensorFromVector, OptionsAndErrors) {
  std::vector<double> v = {1.0, 2.0, 4.0};
  Tensor t = tensor(v, TensorOptions(kFloat64).requires_grad(true));
  EXPECT_TRUE(t.requires_grad());
  (t * t).sum().backward();
  EXPECT_EQ(t.grad().to_vector<double>(), (std::vector<double>{2.0, 4.0, 8.0}));
  // the vector is copied: changing it afterwards changes nothing
  v[0] = 100.0;
  EXPECT_EQ(t.detach().to_vector<double>()[0], 1.0);
  Tensor i = tensor(std::vector<int>{1, 2}, kFloat16);
  EXPECT_EQ(i.dtype(), kFloat16);
  EXPECT_EQ(i.to_vector<float>(), (std::vector<float>{1.0f, 2.0f}));
  // a value that does not fit the integer dtype asked for raises, as torch.tensor
  EXPECT_THROW(tensor(std::vector<int>{300}, kUInt8), ValueError);
  EXPECT_EQ(error_of([] { tensor(std::vector<int>{300}, kUInt8); }).rfind("[tensor]", 0), 0u);
}

TEST(TensorFromNestedLists, ThreeAndFourDims) {
  Tensor t = tensor({{{1, 2}, {3, 4}, {5, 6}}, {{7, 8}, {9, 10}, {11, 12}}});
  EXPECT_EQ(t.dtype(), kInt64);
  EXPECT_EQ(t.sizes().vec(), (std::vector<int64_t>{2, 3, 2}));
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 2; ++k) EXPECT_EQ(t[i][j][k].item<int64_t>(), 1 + k + 2 * j + 6 * i);
  Tensor d = tensor({{{0.5}, {-1.5}}}, TensorOptions(kFloat64));
  EXPECT_EQ(d.sizes().vec(), (std::vector<int64_t>{1, 2, 1}));
  EXPECT_EQ(d.to_vector<double>(), (std::vector<double>{0.5, -1.5}));
  EXPECT_EQ(tensor({{{1.0, 2.0}}}).dtype(), kFloat32);
  Tensor q = tensor({{{{true, false}, {false, true}}}});
  EXPECT_EQ(q.dtype(), kBool);
  EXPECT_EQ(q.sizes().vec(), (std::vector<int64_t>{1, 1, 2, 2}));
  EXPECT_EQ(q.to(kInt64).to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 0, 1}));
  // ragged lists raise as torch.tensor does
  EXPECT_EQ(error_of([] { tensor({{{1, 2}, {3}}}); }), "[tensor] expected sequence of length 2 at dim 2 (got 1)");
  EXPECT_THROW(tensor({{{1, 2}}, {{3, 4}, {5, 6}}}), ValueError);
  EXPECT_EQ(error_of([] { tensor({{{{1}}}, {{{2}, {3}}}}); }), "[tensor] expected sequence of length 1 at dim 2 (got 2)");
}

// A deleter that counts its calls and checks the pointer it is given.
struct Counted {
  int calls = 0;
  void* seen = nullptr;
  std::function<void(void*)> deleter() {
    return [this](void* p) {
      ++calls;
      seen = p;
    };
  }
};

TEST(FromBlob, DeleterRunsOnceWhenTheLastTensorGoes) {
  std::vector<float> buf = {1, 2, 3, 4, 5, 6};
  Counted c;
  {
    Tensor t = from_blob(buf.data(), {2, 3}, c.deleter());
    EXPECT_EQ(t.dtype(), kFloat32);
    EXPECT_EQ(t.data_ptr(), buf.data());
    Tensor view = t.t();
    t = Tensor();
    EXPECT_EQ(c.calls, 0);  // the view still uses the memory
    EXPECT_EQ(view.contiguous().to_vector<float>(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  }
  EXPECT_EQ(c.calls, 1);
  EXPECT_EQ(c.seen, buf.data());
}

TEST(FromBlob, StridesOffsetAndOptions) {
  std::vector<double> buf = {0, 1, 2, 3, 4, 5, 6, 7};
  Counted c;
  {
    // columns of a row-major [2, 4] as [4, 2]
    Tensor t = from_blob(buf.data(), {4, 2}, {1, 4}, c.deleter(), kFloat64);
    EXPECT_EQ(t.contiguous().to_vector<double>(), (std::vector<double>{0, 4, 1, 5, 2, 6, 3, 7}));
    // the storage offset: [1, 3] from element 5 on
    Tensor o = from_blob(buf.data(), {1, 3}, {3, 1}, 5, c.deleter(), TensorOptions(kFloat64));
    EXPECT_EQ(o.storage_offset(), 5);
    EXPECT_EQ(o.to_vector<double>(), (std::vector<double>{5, 6, 7}));
    EXPECT_EQ(o.data_ptr(), buf.data() + 5);
    // writes reach the caller's memory
    o.fill_(-1.0);
    EXPECT_EQ(buf[6], -1.0);
  }
  EXPECT_EQ(c.calls, 2);
  // torch::from_blob applies requires_grad from the options
  std::vector<float> f = {1, 2};
  Tensor g = from_blob(f.data(), {2}, [](void*) {}, TensorOptions().requires_grad(true));
  EXPECT_TRUE(g.requires_grad());
  EXPECT_TRUE(g.is_leaf());
}

TEST(FromBlob, AFailedCallLeavesTheMemoryToTheCaller) {
  std::vector<float> buf(4);
  Counted c;
  EXPECT_THROW(from_blob(buf.data(), {2, -2}, c.deleter()), ValueError);
  EXPECT_THROW(from_blob(buf.data(), {2}, {1}, -1, c.deleter()), ValueError);
  EXPECT_EQ(error_of([&] { from_blob(buf.data(), {2}, {1}, -1, c.deleter()); }),
            "[from_blob] storage_offset must be non-negative (got -1)");
  EXPECT_THROW(from_blob(nullptr, {2}, c.deleter()), ValueError);
  EXPECT_EQ(c.calls, 0);
}

class Equal : public wick::testing::OnEachDevice<35> {};

TEST_P(Equal, SameSizesAndValues) {
  Tensor a = randn({3, 4}, TensorOptions(kFloat64)).to(dev());
  EXPECT_TRUE(equal(a, a.clone()));
  EXPECT_TRUE(a.equal(a));
  Tensor b = a.clone();
  b.index_put_({2, 3}, b.index({2, 3}) + 1e-12);
  EXPECT_FALSE(equal(a, b));
  EXPECT_FALSE(a.equal(b));
  // sizes differ: false, even where they broadcast or hold the same elements
  EXPECT_FALSE(equal(a, a.view({4, 3})));
  EXPECT_FALSE(equal(ones({1, 3}, dev()), ones({3}, dev())));
  EXPECT_FALSE(equal(ones({3, 3}, dev()), ones({3}, dev())));
  // non-contiguous views compare by value
  Tensor t = a.t();
  EXPECT_TRUE(equal(t, t.contiguous()));
  EXPECT_FALSE(equal(t.contiguous(), a.view({4, 3})));
  // dtypes promote: 1 == 1.0
  Tensor i = arange(6, TensorOptions(kInt64).device(dev()));
  EXPECT_TRUE(equal(i, i.to(kFloat32)));
  EXPECT_FALSE(equal(i, i.to(kFloat32) + 0.5));
  EXPECT_TRUE(equal(i.eq(2), i.eq(2)));
  // NaN equals nothing, itself included
  Tensor n = full({2}, std::numeric_limits<double>::quiet_NaN(), TensorOptions(kFloat32).device(dev()));
  EXPECT_FALSE(equal(n, n));
  // empty tensors of the same sizes are equal
  EXPECT_TRUE(equal(zeros({0, 3}, dev()), ones({0, 3}, dev())));
  EXPECT_FALSE(equal(zeros({0, 3}, dev()), zeros({3, 0}, dev())));
}

TEST_P(Equal, MatchesTheCpuAndRaisesAcrossDevices) {
  if (dev().is_cpu()) GTEST_SKIP() << "compares a CUDA tensor with the CPU";
  Tensor a = randn({5, 2});
  Tensor b = a.clone();
  b.index_put_({0, 0}, 7.0);
  EXPECT_EQ(equal(a.to(dev()), a.to(dev())), equal(a, a));
  EXPECT_EQ(equal(a.to(dev()), b.to(dev())), equal(a, b));
  EXPECT_THROW(equal(a, a.to(dev())), DeviceError);
  EXPECT_EQ(error_of([&] { equal(a, a.to(dev())); }).rfind("[equal] Cannot compare two tensors on different devices", 0),
            0u);
}

WICK_INSTANTIATE_ON_DEVICES(Equal);

TEST(Equal, UndefinedTensorRaises) {
  EXPECT_EQ(error_of([] { equal(Tensor(), ones({1})); }).rfind("[equal]", 0), 0u);
}

TEST(AtenSpellings, ArangeWithOptionsTransposeAndSize) {
  Tensor a = arange(2, 6, TensorOptions(kFloat32));
  EXPECT_EQ(a.dtype(), kFloat32);
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{2, 3, 4, 5}));
  Tensor l = arange(0, 3, kInt64);
  EXPECT_EQ(l.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2}));
  // a number in third place stays the step
  EXPECT_EQ(arange(0, 10, 3).to_vector<int64_t>(), (std::vector<int64_t>{0, 3, 6, 9}));
  EXPECT_EQ(arange(1, 2, Device(kCPU)).to_vector<int64_t>(), (std::vector<int64_t>{1}));
  Tensor x = arange(6, kFloat64).view({2, 3});
  Tensor t = transpose(x, 0, 1);
  EXPECT_EQ(t.sizes().vec(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(t.contiguous().to_vector<double>(), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(wick::size(x, 0), 2);
  EXPECT_EQ(wick::size(x, -1), 3);
  EXPECT_THROW(wick::size(x, 2), IndexError);
}

TEST(AtenSpellings, CrossEntropyFuncOptions) {
  Tensor x = randn({5, 4}, TensorOptions(kFloat64));
  Tensor y = tensor({0, 3, 1, 1, 2});
  Tensor w = tensor({1.0, 2.0, 0.5, 1.0}, TensorOptions(kFloat64));
  auto close = [](const Tensor& p, const Tensor& q) {
    ASSERT_EQ(p.sizes().vec(), q.sizes().vec());
    auto a = p.to_vector<double>(), b = q.to_vector<double>();
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-12);
  };
  close(F::cross_entropy(x, y, F::CrossEntropyFuncOptions()), F::cross_entropy(x, y));
  close(F::cross_entropy(x, y, F::CrossEntropyFuncOptions().reduction(kSum)), F::cross_entropy(x, y, {}, -100, "sum"));
  close(F::cross_entropy(x, y, F::CrossEntropyFuncOptions().reduction(kNone).ignore_index(1).weight(w)),
        F::cross_entropy(x, y, w, 1, "none"));
  close(F::cross_entropy(x, y, F::CrossEntropyFuncOptions().label_smoothing(0.2)),
        F::cross_entropy(x, y, {}, -100, "mean", 0.2));
  // the mean of -log_softmax at the targets, by hand
  auto lp = log_softmax(x, 1);
  double ref = 0;
  for (int64_t i = 0; i < 5; ++i) ref -= lp[i][y[i].item<int64_t>()].item<double>();
  EXPECT_NEAR(F::cross_entropy(x, y, F::CrossEntropyFuncOptions().reduction(kMean)).item<double>(), ref / 5, 1e-12);
}

}  // namespace
