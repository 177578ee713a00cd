// LibTorch's spellings beside PyTorch's names: Tensor::unfold (a view with UnfoldBackward0),
// max/min of two tensors, the out= forms (wick/out.h), ScalarType and ATen's padding functions.
// Values against plain loops over float64, gradients by central differences, the errors and
// node names PyTorch gives, on every device present.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "../autograd/gradcheck.h"
#include "../test_files.h"
#include "wick/wick.h"

using namespace wick;
using wick::testing::gradcheck;
using T = std::vector<Tensor>;

namespace {

std::vector<double> values(const Tensor& t) { return t.detach().cpu().to(kFloat64).contiguous().to_vector<double>(); }

using wick::test::error_of;

class AtenSpellings : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override {
    if (GetParam().is_cuda() && !cuda::is_available()) GTEST_SKIP() << "no CUDA device";
    manual_seed(5);
  }
  Device dev() const { return GetParam(); }
};

// unfold(d, size, step) of x [3, 7, 2] against loops: out[i, w, k, j] = x[i, w step + j, k].
TEST_P(AtenSpellings, UnfoldIsAViewOfTheWindows) {
  const Tensor x = randn({3, 7, 2}, TensorOptions(kFloat64)).to(dev());
  const auto xv = values(x);
  for (auto [size, step] : std::vector<std::pair<int64_t, int64_t>>{{3, 2}, {2, 1}, {7, 1}, {1, 3}, {0, 2}}) {
    SCOPED_TRACE(::testing::Message() << "size " << size << " step " << step);
    const Tensor u = x.unfold(1, size, step);
    const int64_t windows = (7 - size) / step + 1;
    ASSERT_EQ(u.sizes().vec(), (std::vector<int64_t>{3, windows, 2, size}));
    if (u.numel() > 0) {
      EXPECT_EQ(u.data_ptr(), x.data_ptr());  // a view
    }
    std::vector<double> want;
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t w = 0; w < windows; ++w)
        for (int64_t k = 0; k < 2; ++k)
          for (int64_t j = 0; j < size; ++j) want.push_back(xv[size_t((i * 7 + w * step + j) * 2 + k)]);
    EXPECT_EQ(values(u), want);
  }
  // the last dim, a negative dim, a non-contiguous input
  const Tensor xt = x.transpose(0, 1);
  EXPECT_EQ(values(xt.unfold(-1, 2, 1).squeeze(-1)), values(xt.contiguous().unfold(2, 2, 1).squeeze(-1)));
  EXPECT_EQ(values(xt.unfold(0, 4, 3)), values(xt.contiguous().unfold(0, 4, 3)));
  // a 0-dim tensor unfolds as one element
  const Tensor s = tensor(2.5).to(dev());
  EXPECT_EQ(s.unfold(0, 1, 1).sizes().vec(), std::vector<int64_t>{1});
  EXPECT_EQ(values(s.unfold(-1, 1, 2)), std::vector<double>{2.5});
  // writes through the view reach x
  Tensor y = zeros({5}, TensorOptions(kFloat32).device(dev()));
  y.unfold(0, 2, 2).select(1, 0).fill_(1);
  EXPECT_EQ(values(y), (std::vector<double>{1, 0, 1, 0, 0}));
}

TEST_P(AtenSpellings, UnfoldGradientsAddOverlappingWindows) {
  for (auto [size, step] : std::vector<std::pair<int64_t, int64_t>>{{3, 1}, {2, 2}, {2, 3}})
    gradcheck([size, step](const T& a) { return a[0].unfold(1, size, step); },
              {randn({2, 6, 3}, TensorOptions(kFloat64)).requires_grad_()}, dev());
  gradcheck([](const T& a) { return a[0].unfold(0, 1, 1); }, {randn({}, TensorOptions(kFloat64)).requires_grad_()},
            dev());
  // each element's gradient counts the windows holding it: 1 2 3 3 2 1 for size 3, step 1
  Tensor x = ones({6}, TensorOptions(kFloat64).device(dev())).requires_grad_();
  Tensor u = x.unfold(0, 3, 1);
  EXPECT_EQ(u.grad_fn()->name(), "UnfoldBackward0");
  u.sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{1, 2, 3, 3, 2, 1}));
}

TEST_P(AtenSpellings, UnfoldErrors) {
  const Tensor x = randn({2, 5}).to(dev());
  EXPECT_THROW(x.unfold(1, 6, 1), ValueError);
  EXPECT_THROW(x.unfold(1, -1, 1), ValueError);
  EXPECT_THROW(x.unfold(1, 2, 0), ValueError);
  EXPECT_THROW(x.unfold(2, 2, 1), IndexError);
  EXPECT_EQ(error_of<Error>([&] { x.unfold(1, 6, 1); }).rfind("[unfold] maximum size for tensor at dimension 1 is 5", 0), 0u);
  EXPECT_THROW(Tensor().unfold(0, 1, 1), ValueError);
}

TEST_P(AtenSpellings, MaxAndMinOfTwoTensorsAreMaximumAndMinimum) {
  const Tensor a = randn({3, 4}).to(dev()), b = randn({4}).to(dev());
  EXPECT_EQ(values(max(a, b)), values(maximum(a, b)));
  EXPECT_EQ(values(min(a, b)), values(minimum(a, b)));
  EXPECT_EQ(values(a.max(b)), values(maximum(a, b)));
  EXPECT_EQ(values(a.min(b)), values(minimum(a, b)));
  Tensor p = a.clone().requires_grad_();
  EXPECT_EQ(max(p, b).grad_fn()->name(), "MaximumBackward0");
  EXPECT_EQ(p.min(b).grad_fn()->name(), "MinimumBackward0");
  // the one-tensor and dim forms are unchanged
  EXPECT_EQ(values(max(a))[0], values(a.amax())[0]);
  EXPECT_EQ(values(std::get<0>(max(a, 1))), values(a.amax({1})));
  const Tensor t = ones({2}, TensorOptions(kBool).device(dev()));
  EXPECT_EQ(error_of<Error>([&] { max(t, t); }).rfind("[max] ", 0), 0u);
}

TEST_P(AtenSpellings, OutFormsWriteIntoOut) {
  const Tensor a = randn({2, 3}).to(dev()), b = randn({2, 3}).to(dev());
  Tensor out = empty({2, 3}, TensorOptions(kFloat32).device(dev()));
  const void* storage = out.data_ptr();
  Tensor& r = add_out(out, a, b, 2);
  EXPECT_EQ(&r, &out);
  EXPECT_EQ(out.data_ptr(), storage);  // in place when the shape matches
  EXPECT_EQ(values(out), values(a + b * 2));
  sub_out(out, a, b);
  EXPECT_EQ(values(out), values(a - b));
  mul_out(out, a, b);
  EXPECT_EQ(values(out), values(a * b));
  div_out(out, a, b);
  EXPECT_EQ(values(out), values(a / b));
  exp_out(out, a);
  EXPECT_EQ(values(out), values(exp(a)));
  sigmoid_out(out, a);
  EXPECT_EQ(values(out), values(sigmoid(a)));
  clamp_out(out, a, -0.5, 0.5);
  EXPECT_EQ(values(out), values(clamp(a, -0.5, 0.5)));
  pow_out(out, a, 2);
  EXPECT_EQ(values(out), values(pow(a, 2)));
  // into float64: cast; out of another shape: rebound to the result's shape, out's dtype
  Tensor d = zeros({1}, TensorOptions(kFloat64).device(dev()));
  mm_out(d, a, b.t());
  EXPECT_EQ(d.sizes().vec(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(d.dtype(), kFloat64);
  EXPECT_EQ(values(d), values(mm(a, b.t())));
  Tensor c;
  c = empty({0}, TensorOptions(kFloat32).device(dev()));
  cat_out(c, {a, b}, 1);
  EXPECT_EQ(values(c), values(cat({a, b}, 1)));
  stack_out(c, {a, b});
  EXPECT_EQ(values(c), values(stack({a, b})));
  sum_out(c, a, {1});
  EXPECT_EQ(values(c), values(a.sum({1})));
  mean_out(c, a, {0}, true);
  EXPECT_EQ(values(c), values(a.mean({0}, true)));
  matmul_out(c, a, b.t());
  EXPECT_EQ(values(c), values(matmul(a, b.t())));
  bmm_out(c, a.unsqueeze(0), b.t().unsqueeze(0));
  EXPECT_EQ(values(c), values(bmm(a.unsqueeze(0), b.t().unsqueeze(0))));
  addmm_out(c, ones({2, 2}).to(dev()), a, b.t(), 0.5, 2);
  EXPECT_EQ(values(c), values(addmm(ones({2, 2}).to(dev()), a, b.t(), 0.5, 2)));
  // an out that is also an input
  Tensor x = a.clone();
  add_out(x, x, x);
  EXPECT_EQ(values(x), values(a * 2));
}

TEST_P(AtenSpellings, OutFormsRefuseWhatPyTorchRefuses) {
  const Tensor a = randn({2, 3}).to(dev());
  Tensor ints = zeros({2, 3}, TensorOptions(kInt64).device(dev()));
  const auto before = values(ints);
  EXPECT_THROW(add_out(ints, a, a), TypeError);  // Float can't be cast to Long
  EXPECT_EQ(error_of<Error>([&] { add_out(ints, a, a); }).rfind("[add_out] result type float32 can't be cast", 0), 0u);
  EXPECT_EQ(values(ints), before);
  Tensor out = zeros({2, 3}).to(dev());
  const Tensor g = a.clone().requires_grad_();
  EXPECT_THROW(mul_out(out, g, a), ValueError);  // no autograd through out=
  EXPECT_EQ(values(out), std::vector<double>(6, 0.0));
  {
    NoGradGuard no_grad;
    mul_out(out, g, a);  // allowed without grad mode
  }
  EXPECT_EQ(values(out), values(a * a));
  if (dev().is_cuda()) {
    Tensor host = zeros({2, 3});
    EXPECT_THROW(add_out(host, a, a), DeviceError);
  }
  Tensor undefined;
  EXPECT_THROW(neg_out(undefined, a), ValueError);
}

TEST_P(AtenSpellings, ScalarTypeAndAtenPads) {
  const ScalarType st = kFloat32;
  EXPECT_EQ(st, Dtype::Float32);
  const Tensor x = randn({1, 2, 4, 5}).to(dev());
  namespace F = nn::functional;
  EXPECT_EQ(values(reflection_pad2d(x, {1, 2, 2, 1})), values(F::pad(x, {1, 2, 2, 1}, "reflect")));
  EXPECT_EQ(values(replication_pad2d(x, {1, 0, 3, 1})), values(F::pad(x, {1, 0, 3, 1}, "replicate")));
  EXPECT_EQ(values(reflection_pad1d(x[0], {2, 1})), values(F::pad(x[0], {2, 1}, "reflect")));
  EXPECT_EQ(values(replication_pad1d(x[0], {2, 1})), values(F::pad(x[0], {2, 1}, "replicate")));
  const Tensor v = randn({1, 2, 3, 4, 5}).to(dev());
  EXPECT_EQ(values(reflection_pad3d(v, {1, 1, 1, 1, 1, 1})), values(F::pad(v, {1, 1, 1, 1, 1, 1}, "reflect")));
  EXPECT_EQ(values(replication_pad3d(v, {0, 1, 2, 0, 1, 1})), values(F::pad(v, {0, 1, 2, 0, 1, 1}, "replicate")));
  EXPECT_EQ(error_of<Error>([&] { reflection_pad2d(x, {1, 1}); }).rfind("[reflection_pad2d] padding size is expected to be 4", 0),
            0u);
  EXPECT_THROW(replication_pad2d(v, {1, 1, 1, 1}), ValueError);
}

// c10's and older LibTorch spellings: ScalarType's enumerators, kU8 ..., toType, data<T>(),
// reshape and broadcast_tensors as functions, IntList, ArrayRef<int64_t>, tensor_list, str,
// WICK_ERROR and WICK_ASSERT.
TEST_P(AtenSpellings, OlderLibTorchSpellings) {
  EXPECT_EQ(ScalarType::Long, kInt64);
  EXPECT_EQ(ScalarType::Float, kFloat32);
  EXPECT_EQ(ScalarType::Double, kFloat64);
  EXPECT_EQ(ScalarType::Byte, kUInt8);
  EXPECT_EQ(ScalarType::Half, kFloat16);
  EXPECT_EQ(kU8, kUInt8);
  EXPECT_EQ(kI64, kInt64);
  const Tensor x = arange(6, TensorOptions(kFloat32).device(dev()));
  EXPECT_EQ(x.toType(ScalarType::Double).dtype(), kFloat64);
  const Tensor c = x.cpu();
  EXPECT_EQ(c.data<float>(), c.data_ptr<float>());
  EXPECT_EQ(c.data<float>()[5], 5.0f);
  const Tensor r = reshape(x, {2, 3});
  EXPECT_EQ(r.sizes().vec(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values(r), values(x));
  const Tensor a = randn({3, 1}).to(dev()), b = randn({4}).to(dev()), s = tensor(2.0).to(dev());
  const auto t = broadcast_tensors({a, b, s});
  ASSERT_EQ(t.size(), 3u);
  for (const Tensor& u : t) EXPECT_EQ(u.sizes().vec(), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(values(t[0]), values(a.expand({3, 4})));
  EXPECT_EQ(values(t[1]), values(b.expand({3, 4})));
  EXPECT_EQ(values(t[2]), std::vector<double>(12, 2.0));
  EXPECT_THROW(broadcast_tensors({randn({3}).to(dev()), randn({4}).to(dev())}), ValueError);
  IntList l = {1, 2};
  ArrayRef<int64_t> ar = l;
  EXPECT_EQ(ar.size(), 2u);
  autograd::tensor_list tl{x};
  EXPECT_EQ(tl.size(), 1u);
  EXPECT_EQ(str("a", 1, " ", 2.5), "a1 2.5");
  EXPECT_EQ(error_of<Error>([] { WICK_ERROR("bad ", 3); }), "bad 3");
  EXPECT_THROW(WICK_ASSERT(x.dim() == 2), Error);
  WICK_ASSERT(x.dim() == 1);  // holds: nothing thrown
}

// In-place methods on a const handle (LibTorch declares them const): they modify the shared
// data, return the same handle, and record autograd as the non-const ones do.
TEST_P(AtenSpellings, InPlaceMethodsOnConstHandles) {
  nn::Linear lin(3, 2);
  lin->to(dev());
  const std::vector<double> w0 = values(lin->weight);
  {
    NoGradGuard no_grad;
    for (const auto& p : lin->parameters()) p.mul_(0.5).add_(1);
  }
  const std::vector<double> w1 = values(lin->weight);
  ASSERT_EQ(w1.size(), w0.size());
  for (size_t i = 0; i < w0.size(); ++i) EXPECT_DOUBLE_EQ(w1[i], float(float(w0[i]) * 0.5f) + 1.0f);
  const Tensor t = zeros({4}, TensorOptions(kFloat32).device(dev()));
  const Tensor& same = t.fill_(3).add_(t, 2).neg_().clamp_(-10, -5);
  EXPECT_EQ(&same, &t);
  EXPECT_EQ(values(t), std::vector<double>(4, -9.0));
  const Tensor m = arange(4, TensorOptions(kFloat32).device(dev()));
  m.eq_(2);
  EXPECT_EQ(values(m), (std::vector<double>{0, 0, 1, 0}));
  const Tensor g = ones({2}, TensorOptions(kFloat32).device(dev()));
  g.requires_grad_();
  EXPECT_TRUE(g.requires_grad());
  const Tensor y = g * 3;
  y.exp_();
  EXPECT_EQ(y.grad_fn()->name(), "ExpBackward0");
  y.sum().backward();
  EXPECT_NEAR(values(g.grad())[0], 3 * std::exp(3.0), 1e-3);
}

INSTANTIATE_TEST_SUITE_P(Devices, AtenSpellings, ::testing::Values(Device(kCPU), Device(kCUDA, 0)),
                         [](const ::testing::TestParamInfo<Device>& i) { return i.param.is_cuda() ? "cuda" : "cpu"; });

}  // namespace
