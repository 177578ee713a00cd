// layer_norm and rms_norm through their fused entries: values and gradients (x, weight, bias)
// against a float64 reference composed of other ops, for every floating dtype (16-bit within
// their rounding), with and without parameters, mixed 16-bit x with float32 parameters,
// normalized shapes of one and two dims, one-element rows, no rows, a non-contiguous x and a
// long row; the recorded node; the no-grad path; CUDA against the CPU.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "nn_test_util.h"
#include "wick/nn/functional.h"
#include "wick/wick.h"

using namespace wick;
using wick::testing::expect_close;
namespace F = wick::nn::functional;

namespace {

// The normalization over x's last k dims, composed of reductions and arithmetic (float64).
Tensor reference(bool rms, const Tensor& x, int64_t k, const Tensor& w, const Tensor& b, double eps) {
  std::vector<int64_t> dims;
  for (int64_t d = x.dim() - k; d < x.dim(); ++d) dims.push_back(d);
  Tensor xc = rms ? x : x - x.mean(dims, true);
  Tensor y = xc * rsqrt((xc * xc).mean(dims, true) + eps);
  if (w.defined()) y = y * w;
  if (b.defined()) y = y + b;
  return y;
}

struct Tol {
  double atol, rtol;
};
Tol tol_of(Dtype d) {
  switch (d) {
    case kBFloat16: return {3e-2, 3e-2};
    case kFloat16: return {5e-3, 5e-3};
    case kFloat32: return {2e-5, 2e-5};
    default: return {1e-12, 1e-10};
  }
}

struct Case {
  Case(std::vector<int64_t> s, int64_t k_, bool w, bool b, Dtype d, std::optional<Dtype> pd = std::nullopt,
       bool t = false)
      : shape(std::move(s)), k(k_), weight(w), bias(b), dtype(d), param_dtype(pd), transposed(t) {}
  std::vector<int64_t> shape;  // x's sizes
  int64_t k;                   // normalized dims (the last k)
  bool weight, bias;
  Dtype dtype;
  std::optional<Dtype> param_dtype;  // float32 with a 16-bit x: mixed
  bool transposed;                   // x a transposed (non-contiguous) view
};

// Runs the case on device: y and the gradients of <y, dy> against the reference on the
// same (rounded) values in float64.
void check(bool rms, const Case& c, Device device, double eps = 1e-5) {
  SCOPED_TRACE(::testing::Message() << (rms ? "rms_norm" : "layer_norm") << " " << c.dtype << " k=" << c.k
                                    << " w=" << c.weight << " b=" << c.bias << " on " << device);
  const Dtype pd = c.param_dtype.value_or(c.dtype);
  std::vector<int64_t> shape = c.shape;
  if (c.transposed) std::swap(shape[0], shape[1]);
  Tensor x64 = randn(shape, TensorOptions(kFloat64)) * 2 + 0.5;
  std::vector<int64_t> norm(c.shape.end() - c.k, c.shape.end());
  Tensor w64 = c.weight ? randn(norm, TensorOptions(kFloat64)) : Tensor();
  Tensor b64 = c.bias ? randn(norm, TensorOptions(kFloat64)) : Tensor();
  // The rounded values every side starts from.
  Tensor xq = x64.to(c.dtype).to(kFloat64);
  Tensor wq = c.weight ? w64.to(pd).to(kFloat64) : Tensor();
  Tensor bq = c.bias ? b64.to(pd).to(kFloat64) : Tensor();

  Tensor x = xq.to(device, c.dtype, false, true).requires_grad_();
  Tensor w = c.weight ? wq.to(device, pd, false, true).requires_grad_() : Tensor();
  Tensor b = c.bias ? bq.to(device, pd, false, true).requires_grad_() : Tensor();
  Tensor xin = c.transposed ? x.transpose(0, 1) : x;
  Tensor y = rms ? F::rms_norm(xin, norm, w, eps) : F::layer_norm(xin, norm, w, b, eps);
  ASSERT_EQ(y.dtype(), c.dtype);
  ASSERT_EQ(y.sizes().vec(), c.shape);
  ASSERT_TRUE(y.grad_fn() != nullptr);
  EXPECT_EQ(y.grad_fn()->name(), rms ? "FusedRmsNormBackward0" : "NativeLayerNormBackward0");
  Tensor dy = randn(c.shape, TensorOptions(kFloat64)).to(c.dtype).to(kFloat64);
  y.backward(dy.to(device, c.dtype));

  Tensor rx = xq.clone().requires_grad_();
  Tensor rw = c.weight ? wq.clone().requires_grad_() : Tensor();
  Tensor rb = c.bias ? bq.clone().requires_grad_() : Tensor();
  Tensor rxin = c.transposed ? rx.transpose(0, 1) : rx;
  Tensor ry = reference(rms, rxin, c.k, rw, rb, eps);
  ry.backward(dy);

  const Tol t = tol_of(c.dtype);
  expect_close(y.to(kFloat64), ry, t.atol, t.rtol, "y");
  ASSERT_TRUE(x.grad().defined());
  EXPECT_EQ(x.grad().dtype(), c.dtype);
  expect_close(x.grad().to(kFloat64), rx.grad(), t.atol * 4, t.rtol * 4, "dx");
  // The parameter gradients sum over the rows: their rounding grows with the row count.
  int64_t n = 1;
  for (int64_t s : norm) n *= s;
  const int64_t rows = std::max<int64_t>(1, x.numel() / n);
  const double scale = c.dtype == kFloat64 ? 1 : std::sqrt(double(rows));
  const Tol tp = tol_of(pd == kFloat32 ? c.dtype : pd);
  if (c.weight) {
    EXPECT_EQ(w.grad().dtype(), pd);
    expect_close(w.grad().to(kFloat64), rw.grad(), tp.atol * scale * 4, tp.rtol * 4, "dweight");
  }
  if (c.bias) {
    EXPECT_EQ(b.grad().dtype(), pd);
    expect_close(b.grad().to(kFloat64), rb.grad(), tp.atol * scale * 4, tp.rtol * 4, "dbias");
  }
}

class FusedNorm : public wick::testing::OnEachDevice<41> {};

TEST_P(FusedNorm, LayerNormEveryDtypeAndParameters) {
  for (Dtype d : {kFloat64, kFloat32, kBFloat16, kFloat16})
    for (bool w : {false, true})
      for (bool b : {false, true}) check(false, {{6, 37}, 1, w, b, d}, dev());
}

TEST_P(FusedNorm, RmsNormEveryDtypeAndWeight) {
  for (Dtype d : {kFloat64, kFloat32, kBFloat16, kFloat16})
    for (bool w : {false, true}) check(true, {{6, 37}, 1, w, false, d}, dev());
}

TEST_P(FusedNorm, MixedSixteenBitInputWithFloatParameters) {
  for (Dtype d : {kBFloat16, kFloat16}) check(false, {{5, 64}, 1, true, true, d, kFloat32}, dev());
}

TEST_P(FusedNorm, ShapesAndLayouts) {
  for (bool rms : {false, true}) {
    check(rms, {{2, 3, 4, 5}, 2, true, !rms, kFloat64}, dev());   // two normalized dims
    check(rms, {{4, 1}, 1, true, !rms, kFloat64}, dev());         // one element a row
    check(rms, {{7, 3, 24}, 1, true, !rms, kFloat32}, dev());
    check(rms, {{9, 16}, 1, true, !rms, kFloat32, {}, true}, dev());  // non-contiguous x
    check(rms, {{8, 12}, 1, true, !rms, kBFloat16, {}, true}, dev());
    check(rms, {{40}, 1, true, !rms, kFloat64}, dev());           // one row, 1-D x
    check(rms, {{3, 768}, 1, true, !rms, kBFloat16}, dev());       // vectorized rows
    check(rms, {{3, 1000}, 1, true, !rms, kFloat32}, dev());       // a block a row
  }
}

TEST_P(FusedNorm, LongRows) {
  for (bool rms : {false, true}) {
    check(rms, {{3, 50304}, 1, true, !rms, kFloat32}, dev());
    check(rms, {{2, 50304}, 1, true, !rms, kBFloat16}, dev());
  }
}

TEST_P(FusedNorm, NoRows) {
  for (bool rms : {false, true}) {
    Tensor x = zeros({0, 8}, TensorOptions(kFloat32).device(dev())).requires_grad_();
    Tensor w = ones({8}, TensorOptions(kFloat32).device(dev())).requires_grad_();
    Tensor b = zeros({8}, TensorOptions(kFloat32).device(dev())).requires_grad_();
    Tensor y = rms ? F::rms_norm(x, {8}, w) : F::layer_norm(x, {8}, w, b);
    EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{0, 8}));
    y.sum().backward();
    EXPECT_EQ(x.grad().sizes().vec(), (std::vector<int64_t>{0, 8}));
    expect_close(w.grad(), zeros({8}, TensorOptions(kFloat64)), 0, 0, "dweight");
    if (!rms) expect_close(b.grad(), zeros({8}, TensorOptions(kFloat64)), 0, 0, "dbias");
  }
}

TEST_P(FusedNorm, RmsNormDefaultEpsilonIsTheDtypes) {
  // Rows of zeros: y = 0 * rsqrt(0 + eps), finite with the dtype's epsilon.
  for (Dtype d : {kFloat32, kFloat64}) {
    Tensor x = zeros({2, 4}, TensorOptions(d).device(dev()));
    Tensor y = F::rms_norm(x.clone().requires_grad_(), {4});
    expect_close(y.detach().to(kFloat64), zeros({2, 4}, TensorOptions(kFloat64)), 0, 0, "zeros");
    Tensor r = F::rms_norm(full({1, 4}, 1e-3, TensorOptions(d).device(dev())), {4});
    const double e = d == kFloat64 ? std::numeric_limits<double>::epsilon() : std::numeric_limits<float>::epsilon();
    const double want = 1e-3 / std::sqrt(1e-6 + e);
    expect_close(r.to(kFloat64), std::vector<double>(4, want), d == kFloat64 ? 1e-12 : 1e-5, "value");
  }
}

TEST_P(FusedNorm, WithoutGradTheValuesAreTheSame) {
  Tensor x = randn({5, 33}, TensorOptions(kFloat32).device(dev()));
  Tensor w = randn({33}, TensorOptions(kFloat32).device(dev())), b = randn({33}, TensorOptions(kFloat32).device(dev()));
  Tensor plain;
  {
    NoGradGuard g;
    plain = F::layer_norm(x, {33}, w, b);
  }
  Tensor graded = F::layer_norm(x, {33}, w.clone().requires_grad_(), b);
  EXPECT_TRUE(plain.grad_fn() == nullptr);
  expect_close(plain, graded.detach(), 0, 0, "no grad vs grad");
  Tensor rplain = F::rms_norm(x, {33}, w);
  Tensor rgraded = F::rms_norm(x.clone().requires_grad_(), {33}, w);
  expect_close(rplain, rgraded.detach(), 0, 0, "rms no grad vs grad");
}

TEST_P(FusedNorm, ModulesRecordOneNode) {
  nn::LayerNorm ln(nn::LayerNormOptions({16}));
  nn::RMSNorm rn(nn::RMSNormOptions({16}));
  ln->to(dev());
  rn->to(dev());
  Tensor x = randn({3, 16}, TensorOptions(kFloat32).device(dev()));
  EXPECT_EQ(ln(x).grad_fn()->name(), "NativeLayerNormBackward0");
  EXPECT_EQ(rn(x).grad_fn()->name(), "FusedRmsNormBackward0");
}

WICK_INSTANTIATE_ON_DEVICES(FusedNorm);

// CUDA against the CPU on the same values, forward and backward.
class FusedNormCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device";
    manual_seed(5);
  }
};

void cuda_vs_cpu(bool rms, int64_t m, int64_t n, Dtype d, Dtype pd, double atol, double rtol) {
  SCOPED_TRACE(::testing::Message() << (rms ? "rms_norm " : "layer_norm ") << d << " [" << m << ", " << n << "]");
  Tensor x = randn({m, n}, TensorOptions(kFloat32)).to(d);
  Tensor w = randn({n}, TensorOptions(kFloat32)).to(pd), b = randn({n}, TensorOptions(kFloat32)).to(pd);
  Tensor dy = randn({m, n}, TensorOptions(kFloat32)).to(d);
  std::vector<Tensor> got[2];
  for (int k = 0; k < 2; ++k) {
    Device dev = k == 0 ? Device(kCPU) : Device(kCUDA, 0);
    Tensor xl = x.to(dev, false, true).requires_grad_(), wl = w.to(dev, false, true).requires_grad_(),
           bl = b.to(dev, false, true).requires_grad_();
    Tensor y = rms ? F::rms_norm(xl, {n}, wl) : F::layer_norm(xl, {n}, wl, bl);
    y.backward(dy.to(dev));
    got[k] = {y.detach(), xl.grad(), wl.grad()};
    if (!rms) got[k].push_back(bl.grad());
  }
  const char* what[] = {"y", "dx", "dweight", "dbias"};
  for (size_t i = 0; i < got[0].size(); ++i) {
    const double s = i >= 2 ? std::sqrt(double(m)) : 1;
    expect_close(got[1][i].to(kFloat64), got[0][i].to(kFloat64), atol * s, rtol, what[i]);
  }
}

TEST_F(FusedNormCuda, MatchesTheCpu) {
  for (bool rms : {false, true}) {
    cuda_vs_cpu(rms, 4096, 768, kBFloat16, kBFloat16, 3e-2, 3e-2);
    cuda_vs_cpu(rms, 64, 768, kBFloat16, kFloat32, 3e-2, 3e-2);
    cuda_vs_cpu(rms, 33, 7, kFloat32, kFloat32, 1e-5, 1e-5);
    cuda_vs_cpu(rms, 17, 1, kFloat32, kFloat32, 1e-5, 1e-5);
    cuda_vs_cpu(rms, 9, 1000, kFloat16, kFloat16, 5e-3, 5e-3);
    cuda_vs_cpu(rms, 5, 3000, kFloat32, kFloat32, 1e-5, 1e-5);
    cuda_vs_cpu(rms, 3, 50304, kBFloat16, kBFloat16, 3e-2, 3e-2);
    cuda_vs_cpu(rms, 700, 130, kFloat64, kFloat64, 1e-12, 1e-12);
    cuda_vs_cpu(rms, 3, 513, kFloat64, kFloat64, 1e-12, 1e-12);
  }
}

}  // namespace
