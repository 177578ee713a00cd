// conv2d on the CPU (im2col + BLAS for float32/float64): forward and the three gradients
// against direct convolution loops in double, over stride, padding, dilation and groups,
// with and without bias, on contiguous and non-contiguous inputs and gradients.
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/conv.h"
#include "cpu/dnnl_conv.h"
#include "nn_test_util.h"
#include "wick/wick.h"

using namespace wick;
namespace F = wick::nn::functional;
using wick::testing::expect_close;

namespace {

struct Case {
  int64_t n, c, h, w, o, kh, kw;
  int64_t sh, sw, ph, pw, dh, dw, groups;
};

int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

// Direct convolution and its gradients in double, by the definition.
struct Reference {
  std::vector<double> y, dx, dw, db;
};

Reference reference(const Case& k, const std::vector<double>& x, const std::vector<double>& w,
                    const std::vector<double>& b, const std::vector<double>& dy) {
  const int64_t oh = out_size(k.h, k.kh, k.sh, k.ph, k.dh), ow = out_size(k.w, k.kw, k.sw, k.pw, k.dw);
  const int64_t cg = k.c / k.groups, og = k.o / k.groups;
  Reference r;
  r.y.assign(size_t(k.n * k.o * oh * ow), 0);
  r.dx.assign(x.size(), 0);
  r.dw.assign(w.size(), 0);
  r.db.assign(size_t(k.o), 0);
  for (int64_t n = 0; n < k.n; ++n)
    for (int64_t o = 0; o < k.o; ++o)
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox) {
          const size_t yi = size_t(((n * k.o + o) * oh + oy) * ow + ox);
          double acc = b.empty() ? 0 : b[size_t(o)];
          const double g = dy[yi];
          r.db[size_t(o)] += g;
          const int64_t gi = o / og;
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t i = 0; i < k.kh; ++i)
              for (int64_t j = 0; j < k.kw; ++j) {
                const int64_t iy = oy * k.sh - k.ph + i * k.dh, ix = ox * k.sw - k.pw + j * k.dw;
                if (iy < 0 || iy >= k.h || ix < 0 || ix >= k.w) continue;
                const size_t xi = size_t(((n * k.c + gi * cg + c) * k.h + iy) * k.w + ix);
                const size_t wi = size_t(((o * cg + c) * k.kh + i) * k.kw + j);
                acc += x[xi] * w[wi];
                r.dx[xi] += w[wi] * g;
                r.dw[wi] += x[xi] * g;
              }
          r.y[yi] = acc;
        }
  return r;
}

// A tensor holding `t`'s values with a non-contiguous layout: every other element of a
// buffer twice as large.
Tensor noncontiguous(const Tensor& t) {
  Tensor s = t.unsqueeze(4).expand({t.size(0), t.size(1), t.size(2), t.size(3), 2}).contiguous().select(4, 0);
  EXPECT_FALSE(s.is_contiguous());
  return s;
}

void check(const Case& k, Dtype dtype, bool bias, bool strided, bool input_grad = true) {
  SCOPED_TRACE(::testing::Message() << "n" << k.n << " c" << k.c << " " << k.h << "x" << k.w << " o" << k.o
                                    << " k" << k.kh << "x" << k.kw << " s" << k.sh << "," << k.sw << " p"
                                    << k.ph << "," << k.pw << " d" << k.dh << "," << k.dw << " g" << k.groups
                                    << " " << dtype << (bias ? " bias" : "") << (strided ? " strided" : "")
                                    << (input_grad ? "" : " no input grad"));
  const TensorOptions o(dtype);
  Tensor x = randn({k.n, k.c, k.h, k.w}, o);
  Tensor w = randn({k.o, k.c / k.groups, k.kh, k.kw}, o);
  Tensor b = bias ? randn({k.o}, o) : Tensor();
  const int64_t oh = out_size(k.h, k.kh, k.sh, k.ph, k.dh), ow = out_size(k.w, k.kw, k.sw, k.pw, k.dw);
  Tensor dy = randn({k.n, k.o, oh, ow}, o);
  const Reference ref =
      reference(k, x.to_vector<double>(), w.to_vector<double>(),
                bias ? b.to_vector<double>() : std::vector<double>{}, dy.to_vector<double>());

  Tensor xi = strided ? noncontiguous(x) : x.clone();
  Tensor dyi = strided ? noncontiguous(dy) : dy;
  if (input_grad) xi.requires_grad_();
  Tensor wi = w.clone().requires_grad_();
  Tensor bi = bias ? b.clone().requires_grad_() : Tensor();
  Tensor y = F::conv2d(xi, wi, bi, {k.sh, k.sw}, {k.ph, k.pw}, {k.dh, k.dw}, k.groups);
  ASSERT_EQ(y.sizes().vec(), (std::vector<int64_t>{k.n, k.o, oh, ow}));
  EXPECT_EQ(y.dtype(), dtype);
  EXPECT_EQ(y.grad_fn()->name(), "ConvolutionBackward0");
  y.backward(dyi);
  const double tol = dtype == kFloat64 ? 1e-10 : 1e-4;
  expect_close(y.view({-1}), ref.y, tol, "y");
  if (input_grad) expect_close(xi.grad().reshape({-1}), ref.dx, tol, "dx");
  else EXPECT_FALSE(xi.grad().defined());
  // The weight and bias gradients sum n * oh * ow products each: float32's rounding of such a
  // sum grows with the count (about eps * sqrt(count) * the partial sums' size, in any order).
  const double sum_tol = dtype == kFloat64 ? tol : tol + 3e-7 * double(k.n * oh * ow);
  expect_close(wi.grad().reshape({-1}), ref.dw, sum_tol, "dw");
  if (bias) expect_close(bi.grad(), ref.db, sum_tol, "db");
}

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      // n  c  h  w  o kh kw sh sw ph pw dh dw g
      {4, 1, 8, 8, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1},   // the CNN's first layer, smaller
      {3, 6, 7, 7, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1},   // its second
      {2, 3, 9, 8, 4, 3, 2, 2, 3, 0, 1, 1, 1, 1},   // strides, uneven padding
      {2, 4, 10, 9, 6, 3, 3, 1, 2, 2, 1, 2, 3, 2},  // dilation, groups
      {3, 4, 6, 6, 4, 3, 3, 2, 2, 1, 1, 1, 1, 4},   // depthwise
      {2, 6, 5, 7, 9, 1, 1, 1, 1, 0, 0, 1, 1, 3},   // 1x1: no im2col
      {2, 4, 5, 5, 2, 1, 1, 2, 2, 1, 0, 1, 1, 1},   // 1x1 with stride and padding
      {1, 2, 5, 6, 3, 5, 4, 1, 1, 0, 0, 1, 1, 1},   // one image: BLAS's own threads
      {5, 2, 4, 4, 3, 2, 2, 3, 1, 2, 2, 2, 1, 1},   // padding wider than the reach of the kernel
      {2, 3, 6, 6, 3, 6, 6, 1, 1, 0, 0, 1, 1, 1},   // kernel as large as the image
      // 8 input channels and more: float32 goes to oneDNN where it is built in
      {3, 8, 7, 7, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1},     // the CNN's second layer, smaller
      {2, 16, 9, 8, 4, 3, 2, 2, 3, 0, 1, 1, 1, 1},    // strides, uneven padding
      {2, 8, 10, 9, 6, 3, 3, 1, 2, 2, 1, 2, 3, 1},    // dilation
      {2, 12, 11, 10, 7, 5, 5, 3, 2, 2, 2, 1, 1, 1},  // a last window that ends before the padding
      {2, 8, 5, 7, 9, 1, 1, 1, 1, 0, 0, 1, 1, 1},     // 1x1
      {2, 8, 6, 6, 4, 3, 3, 1, 1, 1, 1, 1, 1, 2},     // groups: the im2col kernel
      // few taps (K = C / groups * kh * kw <= 16): the direct kernel of src/cpu/conv.cpp
      {3, 3, 9, 8, 6, 3, 3, 1, 1, 2, 1, 2, 1, 1},    // RGB: K = 27 (not direct), dilation, padding
      {2, 1, 11, 10, 3, 5, 5, 2, 1, 2, 0, 1, 1, 1},  // stride, K = 25 (not direct)
      {2, 6, 7, 7, 6, 3, 3, 1, 1, 1, 1, 1, 1, 6},    // depthwise, K = 9
      {2, 1, 9, 9, 3, 4, 4, 1, 1, 1, 2, 1, 1, 1},    // K = 16, uneven padding
      {2, 1, 11, 10, 4, 3, 3, 2, 1, 2, 0, 1, 2, 1},  // K = 9, stride, dilation
      {2, 2, 8, 7, 4, 3, 3, 2, 1, 1, 0, 1, 2, 1},    // K = 18 (not direct)
  };
  return all;
}

TEST(Conv2dCpu, MatchesDirectConvolution) {
  manual_seed(7);
  for (const Case& k : cases())
    for (Dtype dtype : {kFloat32, kFloat64})
      for (bool bias : {true, false})
        for (bool strided : {false, true}) check(k, dtype, bias, strided);
}

// Sets WICK_CPU_CONV for the scope, restoring the previous value after.
class ConvPathScope {
 public:
  explicit ConvPathScope(const char* value) {
    if (const char* v = std::getenv("WICK_CPU_CONV")) saved_ = v;
    ::setenv("WICK_CPU_CONV", value, 1);
  }
  ~ConvPathScope() {
    if (saved_) ::setenv("WICK_CPU_CONV", saved_->c_str(), 1);
    else ::unsetenv("WICK_CPU_CONV");
  }

 private:
  std::optional<std::string> saved_;
};

using detail::cpu::ConvPath;

// Every case on each forced path, float32 and float64, with and without the input's gradient.
TEST(Conv2dCpu, ForcedPaths) {
  for (const char* path : {"dnnl", "im2col", "auto"}) {
    SCOPED_TRACE(path);
    ConvPathScope scope(path);
    manual_seed(11);
    for (const Case& k : cases())
      for (Dtype dtype : {kFloat32, kFloat64})
        for (bool input_grad : {true, false}) check(k, dtype, true, false, input_grad);
    check(cases()[0], kFloat32, false, true, false);
  }
}

// The CNN's first layer at its real size (1 -> 32 channels, 28x28, batch 64, the input needs
// no gradient), threaded, on both paths: the weight and bias gradients against the float64
// reference, and each path really taken (oneDNN where it is built in).
TEST(Conv2dCpu, FirstLayerOnEachPath) {
  manual_seed(12);
  const Case k{64, 1, 28, 28, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1};
  Tensor x = randn({64, 1, 28, 28}), w = randn({32, 1, 3, 3}) * 0.3, b = randn({32});
  Tensor dy = randn({64, 32, 28, 28});
  const Reference ref = reference(k, x.to_vector<double>(), w.to_vector<double>(), b.to_vector<double>(),
                                  dy.to_vector<double>());
  for (const char* path : {"dnnl", "im2col"}) {
    SCOPED_TRACE(path);
    ConvPathScope scope(path);
    const bool dnnl = std::string(path) == "dnnl" && detail::cpu::dnnl_conv2d_built();
    Tensor wi = w.clone().requires_grad_(), bi = b.clone().requires_grad_();
    Tensor y = F::conv2d(x, wi, bi, 1, 1);
    EXPECT_EQ(detail::cpu::conv_last_path(), dnnl ? ConvPath::Dnnl : ConvPath::Own);
    y.backward(dy);
    EXPECT_EQ(detail::cpu::conv_last_path(), dnnl ? ConvPath::Dnnl : ConvPath::Own);
    expect_close(y.reshape({-1}), ref.y, 1e-4, "y");
    EXPECT_FALSE(x.grad().defined());
    const double sum_tol = 1e-4 + 3e-7 * 64 * 28 * 28;
    expect_close(wi.grad().reshape({-1}), ref.dw, sum_tol, "dw");
    expect_close(bi.grad(), ref.db, sum_tol, "db");
  }
}

// The backward entry asked for the weight and bias gradients only computes no input gradient
// on either path (float32 and float64, few and many channels).
TEST(Conv2dCpu, NoInputGradientWhenNotNeeded) {
  manual_seed(13);
  const detail::Conv2dParams p{{1, 1}, {1, 1}, {1, 1}, 1};
  for (const char* path : {"dnnl", "im2col", "auto"})
    for (int64_t c : {1, 3, 8})
      for (Dtype dtype : {kFloat32, kFloat64}) {
        SCOPED_TRACE(::testing::Message() << path << " c" << c << " " << dtype);
        ConvPathScope scope(path);
        const TensorOptions o(dtype);
        const Case k{4, c, 6, 5, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1};
        Tensor x = randn({4, c, 6, 5}, o), w = randn({5, c, 3, 3}, o), dy = randn({4, 5, 6, 5}, o);
        const Reference ref =
            reference(k, x.to_vector<double>(), w.to_vector<double>(), {}, dy.to_vector<double>());
        auto r = detail::conv2d_backward(dy, x, w, p, {false, true, true});
        EXPECT_FALSE(r[0].defined());
        const double tol = dtype == kFloat64 ? 1e-10 : 1e-4;
        expect_close(r[1].reshape({-1}), ref.dw, tol, "dw");
        expect_close(r[2], ref.db, tol, "db");
        r = detail::conv2d_backward(dy, x, w, p, {false, false, true});
        EXPECT_FALSE(r[0].defined());
        EXPECT_FALSE(r[1].defined());
        expect_close(r[2], ref.db, tol, "db alone");
      }
}

TEST(Conv2dCpu, UnknownPathIsAnError) {
  ConvPathScope scope("winograd");
  Tensor x = randn({1, 1, 4, 4}), w = randn({2, 1, 3, 3});
  EXPECT_THROW(F::conv2d(x, w, Tensor(), 1, 1), ValueError);
}

// Enough images and channels for the images to run on several threads.
TEST(Conv2dCpu, ManyImages) {
  manual_seed(8);
  check({16, 3, 12, 12, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1}, kFloat32, true, false);
  check({16, 4, 11, 13, 6, 3, 3, 2, 1, 0, 2, 1, 2, 2}, kFloat64, true, true);
}

// Only some gradients wanted: the others stay undefined, the wanted ones are unchanged.
TEST(Conv2dCpu, OnlyTheWantedGradients) {
  manual_seed(9);
  const Case k{3, 4, 6, 6, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1};
  Tensor x = randn({3, 4, 6, 6}, TensorOptions(kFloat64)), w = randn({5, 4, 3, 3}, TensorOptions(kFloat64));
  Tensor b = randn({5}, TensorOptions(kFloat64)), dy = randn({3, 5, 6, 6}, TensorOptions(kFloat64));
  const Reference ref = reference(k, x.to_vector<double>(), w.to_vector<double>(), b.to_vector<double>(),
                                  dy.to_vector<double>());
  for (int which = 0; which < 3; ++which) {
    SCOPED_TRACE(which);
    Tensor xi = x.clone(), wi = w.clone(), bi = b.clone();
    Tensor* inputs[] = {&xi, &wi, &bi};
    inputs[which]->requires_grad_();
    F::conv2d(xi, wi, bi, 1, 1).backward(dy);
    EXPECT_EQ(xi.grad().defined(), which == 0);
    EXPECT_EQ(wi.grad().defined(), which == 1);
    EXPECT_EQ(bi.grad().defined(), which == 2);
    const std::vector<double>& want = which == 0 ? ref.dx : which == 1 ? ref.dw : ref.db;
    expect_close(inputs[which]->grad().reshape({-1}), want, 1e-10);
  }
}

// Convolutions from several threads at once (each has its own oneDNN stream where oneDNN runs
// them): every thread's forward and gradients equal the float64 reference.
TEST(Conv2dCpu, FromSeveralThreadsAtOnce) {
  manual_seed(10);
  const Case k{3, 8, 7, 7, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1};
  Tensor x = randn({3, 8, 7, 7}), w = randn({5, 8, 3, 3}), b = randn({5}), dy = randn({3, 5, 7, 7});
  const Reference ref = reference(k, x.to_vector<double>(), w.to_vector<double>(), b.to_vector<double>(),
                                  dy.to_vector<double>());
  std::vector<std::vector<double>> ys(4), dws(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 5; ++rep) {
        Tensor wi = w.clone().requires_grad_();
        Tensor y = F::conv2d(x, wi, b, 1, 1);
        y.backward(dy);
        ys[size_t(t)] = y.reshape({-1}).to_vector<double>();
        dws[size_t(t)] = wi.grad().reshape({-1}).to_vector<double>();
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) {
    ASSERT_EQ(ys[size_t(t)].size(), ref.y.size());
    for (size_t i = 0; i < ref.y.size(); ++i)
      EXPECT_NEAR(ys[size_t(t)][i], ref.y[i], 1e-4) << t << " y " << i;
    for (size_t i = 0; i < ref.dw.size(); ++i)
      EXPECT_NEAR(dws[size_t(t)][i], ref.dw[i], 1e-3) << t << " dw " << i;
  }
}

// Other dtypes keep the generic path: an integer convolution still works.
TEST(Conv2dCpu, IntegerDtype) {
  Tensor x = arange(0, 2 * 2 * 4 * 4, 1, TensorOptions(kInt64)).view({2, 2, 4, 4});
  Tensor w = ones({3, 2, 2, 2}, TensorOptions(kInt64));
  Tensor b = tensor<int64_t>({1, 2, 3});
  Tensor y = F::conv2d(x, w, b, 2);
  const Case k{2, 2, 4, 4, 3, 2, 2, 2, 2, 0, 0, 1, 1, 1};
  const Reference ref = reference(k, x.to_vector<double>(), w.to_vector<double>(), {1, 2, 3},
                                  std::vector<double>(size_t(2 * 3 * 2 * 2), 0));
  EXPECT_EQ(y.dtype(), kInt64);
  expect_close(y.reshape({-1}), ref.y, 0);
}

}  // namespace
