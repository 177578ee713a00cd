// ConvTranspose1d / conv_transpose1d: values against a float64 scatter loop (the definition,
// written out here) and against conv_transpose2d of the unsqueezed input, with groups, stride,
// padding, output padding and dilation, from non-contiguous inputs; gradients by gradcheck; the
// module's shapes, initialization, output_size, repr and errors.
// padding(kSame) / padding(kValid) of Conv1d/2d/3d and their F:: forms: values against a float64
// loop with PyTorch's asymmetric padding (the odd zero on the right), against F::pad and a
// convolution without padding, gradients, padding modes, repr, the strided error; the padding
// spellings that were there before still work. CUDA against the CPU, skipped without a GPU.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "../autograd/gradcheck.h"
#include "nn_test_util.h"
#include "wick/wick.h"

using namespace wick;
using wick::testing::error_of;
using wick::testing::expect_close;
using wick::testing::gradcheck;
using wick::testing::repr;
using TL = std::vector<Tensor>;
namespace F = wick::nn::functional;

namespace {

struct Geo1 {
  int64_t n, cin, l, cout, k, g, s, p, op, d;
  int64_t out() const { return (l - 1) * s - 2 * p + d * (k - 1) + op + 1; }
};

// y[n, co, i s + a d - p] += x[n, ci, i] w[ci, co in group, a] (+ b[co]).
std::vector<double> scatter_reference(const Geo1& s, const Tensor& x, const Tensor& w, const Tensor& b) {
  const auto xv = x.contiguous().to(kFloat64).to_vector<double>();
  const auto wv = w.contiguous().to(kFloat64).to_vector<double>();
  const int64_t ol = s.out(), cig = s.cin / s.g, cog = s.cout / s.g;
  std::vector<double> y(size_t(s.n * s.cout * ol), 0.0);
  if (b.defined()) {
    const auto bv = b.to(kFloat64).to_vector<double>();
    for (int64_t n = 0; n < s.n; ++n)
      for (int64_t c = 0; c < s.cout; ++c)
        for (int64_t u = 0; u < ol; ++u) y[size_t((n * s.cout + c) * ol + u)] = bv[size_t(c)];
  }
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t ci = 0; ci < s.cin; ++ci)
      for (int64_t i = 0; i < s.l; ++i) {
        const double xe = xv[size_t((n * s.cin + ci) * s.l + i)];
        const int64_t gi = ci / cig;
        for (int64_t co = 0; co < cog; ++co)
          for (int64_t a = 0; a < s.k; ++a) {
            const int64_t u = i * s.s + a * s.d - s.p;
            if (u < 0 || u >= ol) continue;
            y[size_t((n * s.cout + gi * cog + co) * ol + u)] += xe * wv[size_t((ci * cog + co) * s.k + a)];
          }
      }
  return y;
}

const std::vector<Geo1> kGeos1 = {
    // n cin l cout k g s p op d
    {2, 3, 5, 2, 3, 1, 1, 0, 0, 1},
    {2, 4, 6, 6, 3, 2, 2, 1, 1, 1},  // groups, stride, padding, output padding
    {1, 2, 4, 3, 2, 1, 3, 1, 2, 2},  // dilation, output padding below the stride
    {2, 2, 3, 4, 3, 2, 1, 2, 1, 2},  // output padding below the dilation
};

// x as a non-contiguous view: the transpose of a [N, L, C] tensor.
Tensor strided_input1(const Geo1& s, Dtype dt) {
  return randn({s.n, s.l, s.cin}, TensorOptions(kFloat64)).to(dt).transpose(1, 2);
}

Tensor call1(const Geo1& s, const Tensor& x, const Tensor& w, const Tensor& b) {
  return F::conv_transpose1d(x, w, b, s.s, s.p, s.op, s.g, s.d);
}

TEST(ConvTranspose1d, ValuesAgainstTheDefinition) {
  manual_seed(0);
  for (Dtype dt : {kFloat64, kFloat32}) {
    const double tol = dt == kFloat64 ? 1e-12 : 1e-5;
    for (const Geo1& s : kGeos1) {
      Tensor x = strided_input1(s, dt);
      ASSERT_FALSE(x.is_contiguous());
      Tensor w = randn({s.cin, s.cout / s.g, s.k}, TensorOptions(dt));
      Tensor b = randn({s.cout}, TensorOptions(dt));
      Tensor y = call1(s, x, w, b);
      ASSERT_EQ(y.sizes().vec(), (std::vector<int64_t>{s.n, s.cout, s.out()}));
      EXPECT_EQ(y.dtype(), dt);
      expect_close(y.reshape({-1}), scatter_reference(s, x, w, b), tol);
      // conv_transpose2d of the input with a unit height
      Tensor y2 = F::conv_transpose2d(x.unsqueeze(2), w.unsqueeze(2), b, {1, s.s}, {0, s.p}, {0, s.op}, s.g,
                                      {1, s.d});
      expect_close(y, y2.squeeze(2), tol, tol);
      // without bias, and unbatched
      expect_close(call1(s, x, w, {}).reshape({-1}), scatter_reference(s, x, w, {}), tol);
      expect_close(call1(s, x[0], w, b), y[0], tol, tol);
    }
  }
}

TEST(ConvTranspose1d, FunctionalSpellings) {
  manual_seed(1);
  const Geo1& s = kGeos1[1];
  Tensor x = randn({s.n, s.cin, s.l}), w = randn({s.cin, s.cout / s.g, s.k}), b = randn({s.cout});
  Tensor want = call1(s, x, w, b);
  expect_close(F::conv_transpose1d(x, w,
                                   F::ConvTranspose1dFuncOptions()
                                       .bias(b)
                                       .stride(s.s)
                                       .padding(s.p)
                                       .output_padding(s.op)
                                       .groups(s.g)
                                       .dilation(s.d)),
               want, 0, 0);
  expect_close(wick::conv_transpose1d(x, w, b, s.s, s.p, s.op, s.g, s.d), want, 0, 0);
}

TEST(ConvTranspose1d, Gradcheck) {
  for (const Geo1& s : kGeos1) {
    Tensor x = wick::testing::rnd({s.n, s.cin, s.l});
    Tensor w = wick::testing::rnd({s.cin, s.cout / s.g, s.k});
    Tensor b = wick::testing::rnd({s.cout});
    gradcheck([s](const TL& a) { return call1(s, a[0], a[1], a[2]); }, {x, w, b});
    // through a non-contiguous input
    gradcheck([s](const TL& a) { return call1(s, a[0].transpose(1, 2), a[1], a[2]); },
              {wick::testing::rnd({s.n, s.l, s.cin}), w, b});
  }
}

TEST(ConvTranspose1d, Module) {
  manual_seed(2);
  nn::ConvTranspose1d up(nn::ConvTranspose1dOptions(8, 4, 4).stride(2).padding(1));
  EXPECT_EQ(up->weight.sizes().vec(), (std::vector<int64_t>{8, 4, 4}));
  EXPECT_EQ(up->bias.sizes().vec(), (std::vector<int64_t>{4}));
  auto x = randn({2, 8, 16});
  Tensor y = up(x);
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{2, 4, 32}));
  expect_close(y, F::conv_transpose1d(x, up->weight, up->bias, 2, 1), 0, 0);
  EXPECT_EQ(repr(*up), "ConvTranspose1d(8, 4, kernel_size=(4,), stride=(2,), padding=(1,))");
  // PyTorch's initialization: U(+-1/sqrt(fan_in)), fan_in = (out / groups) * k = 16
  const double bound = 1.0 / std::sqrt(16.0);
  EXPECT_LE(up->weight.abs().max().item<double>(), bound);
  EXPECT_LE(up->bias.abs().max().item<double>(), bound);
  EXPECT_GT(up->weight.abs().max().item<double>(), 0.8 * bound);
  // every option, printed as PyTorch's
  nn::ConvTranspose1d all(nn::ConvTranspose1dOptions(4, 6, 3).stride(2).padding(1).output_padding(1).groups(2)
                              .bias(false).dilation(2));
  EXPECT_EQ(repr(*all),
            "ConvTranspose1d(4, 6, kernel_size=(3,), stride=(2,), padding=(1,), dilation=(2,), output_padding=(1,), "
            "groups=2, bias=False)");
  EXPECT_FALSE(all->bias.defined());
  EXPECT_EQ(all->weight.sizes().vec(), (std::vector<int64_t>{4, 3, 3}));
  EXPECT_EQ(repr(*nn::ConvTranspose1d(2, 3, 5)), "ConvTranspose1d(2, 3, kernel_size=(5,), stride=(1,))");
  // output_size picks the output padding; unbatched input
  Tensor z = up(x, std::vector<int64_t>{33});
  EXPECT_EQ(z.sizes().vec(), (std::vector<int64_t>{2, 4, 33}));
  expect_close(z, F::conv_transpose1d(x, up->weight, up->bias, 2, 1, 1), 0, 0);
  EXPECT_EQ(up(x, std::vector<int64_t>{2, 4, 32}).sizes().vec(), (std::vector<int64_t>{2, 4, 32}));
  EXPECT_EQ(up(x[0]).sizes().vec(), (std::vector<int64_t>{4, 32}));
  // trains: gradients reach weight and bias
  y.sum().backward();
  EXPECT_EQ(up->weight.grad().sizes().vec(), up->weight.sizes().vec());
  EXPECT_TRUE(up->bias.grad().defined());
}

TEST(ConvTranspose1d, Errors) {
  nn::ConvTranspose1d up(nn::ConvTranspose1dOptions(8, 4, 4).stride(2).padding(1));
  EXPECT_THROW(up(randn({2, 8, 3, 3})), ValueError);
  EXPECT_TRUE(wick::testing::names([&] { up(randn({2, 8, 3, 3})); }, "conv_transpose1d"));
  EXPECT_THROW(up(randn({2, 8, 16}), std::vector<int64_t>{40}), ValueError);
  EXPECT_TRUE(wick::testing::names([&] { up(randn({2, 8, 16}), std::vector<int64_t>{40}); }, "ConvTranspose1d"));
  EXPECT_THROW(nn::ConvTranspose1d(nn::ConvTranspose1dOptions(3, 4, 2).groups(2)), ValueError);
  EXPECT_THROW(F::conv_transpose1d(randn({2, 3, 5}), randn({3, 2, 2, 2})), ValueError);
  EXPECT_THROW(up(randn({2, 5, 16})), Error);  // channels
}

TEST(ConvTranspose1d, CudaAgainstCpu) {
  if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  manual_seed(3);
  for (const Geo1& s : kGeos1) {
    Tensor x = strided_input1(s, kFloat32), w = randn({s.cin, s.cout / s.g, s.k}), b = randn({s.cout});
    expect_close(call1(s, x.cuda(), w.cuda(), b.cuda()), call1(s, x, w, b), 1e-4, 1e-4);
  }
}

// ---- padding='same' / 'valid'

// The float64 convolution of x [N, C, *spatial] (1 to 3 spatial dims, as [N, C, D, H, W] with
// unit dims in front) with w, stride 1, padding `left` before each dim (and whatever is needed
// after it for an output as large as the input).
std::vector<double> same_reference(const Tensor& x, const Tensor& w, const Tensor& b, std::vector<int64_t> left,
                                   std::vector<int64_t> dil, int64_t groups) {
  Tensor x5 = x.contiguous().to(kFloat64), w5 = w.contiguous().to(kFloat64);
  while (x5.dim() < 5) x5 = x5.unsqueeze(2), w5 = w5.unsqueeze(2);
  while (left.size() < 3) left.insert(left.begin(), 0), dil.insert(dil.begin(), 1);
  const auto xv = x5.to_vector<double>(), wv = w5.to_vector<double>();
  const int64_t n = x5.size(0), c = x5.size(1), D = x5.size(2), H = x5.size(3), W = x5.size(4);
  const int64_t co = w5.size(0), cig = w5.size(1), kd = w5.size(2), kh = w5.size(3), kw = w5.size(4);
  const int64_t cog = co / groups;
  std::vector<double> y(size_t(n * co * D * H * W), 0.0);
  std::vector<double> bv = b.defined() ? b.to(kFloat64).to_vector<double>() : std::vector<double>(size_t(co), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t o = 0; o < co; ++o)
      for (int64_t z = 0; z < D; ++z)
        for (int64_t r = 0; r < H; ++r)
          for (int64_t q = 0; q < W; ++q) {
            double acc = bv[size_t(o)];
            for (int64_t ci = 0; ci < cig; ++ci)
              for (int64_t a = 0; a < kd; ++a)
                for (int64_t e = 0; e < kh; ++e)
                  for (int64_t f = 0; f < kw; ++f) {
                    const int64_t zz = z + a * dil[0] - left[0], rr = r + e * dil[1] - left[1],
                                  qq = q + f * dil[2] - left[2];
                    if (zz < 0 || zz >= D || rr < 0 || rr >= H || qq < 0 || qq >= W) continue;
                    const int64_t cin = (o / cog) * cig + ci;
                    acc += xv[size_t((((i * c + cin) * D + zz) * H + rr) * W + qq)] *
                           wv[size_t((((o * cig + ci) * kd + a) * kh + e) * kw + f)];
                  }
            y[size_t((((i * co + o) * D + z) * H + r) * W + q)] = acc;
          }
  (void)c;
  return y;
}

TEST(ConvPaddingSame, Conv1dAgainstTheDefinition) {
  manual_seed(4);
  // k 4 (3 zeros: 1 left, 2 right), k 3 dilation 2 (4: 2 and 2), k 2 dilation 3 (3: 1 and 2)
  struct Case {
    int64_t k, d, g;
  };
  for (Case cs : {Case{4, 1, 1}, Case{3, 2, 1}, Case{2, 3, 2}}) {
    Tensor x = randn({2, 7, 4}, TensorOptions(kFloat64)).transpose(1, 2);  // [2, 4, 7], non-contiguous
    Tensor w = randn({6, 4 / cs.g, cs.k}, TensorOptions(kFloat64)), b = randn({6}, TensorOptions(kFloat64));
    Tensor y = F::conv1d(x, w, b, 1, kSame, cs.d, cs.g);
    ASSERT_EQ(y.sizes().vec(), (std::vector<int64_t>{2, 6, 7}));
    const int64_t total = cs.d * (cs.k - 1);
    expect_close(y.reshape({-1}), same_reference(x, w, b, {total / 2}, {cs.d}, cs.g), 1e-12);
    // F::pad on the right by the odd zero, then a symmetric padding
    expect_close(y, F::conv1d(F::pad(x, {total / 2, total - total / 2}), w, b, 1, 0, cs.d, cs.g), 1e-12, 1e-12);
    expect_close(F::conv1d(x, w, F::Conv1dFuncOptions().bias(b).padding(kSame).dilation(cs.d).groups(cs.g)), y, 0, 0);
    expect_close(wick::conv1d(x, w, b, 1, kSame, cs.d, cs.g), y, 0, 0);
    // unbatched
    expect_close(F::conv1d(x[1], w, b, 1, kSame, cs.d, cs.g), y[1], 1e-12, 1e-12);
  }
  // 'valid' is no padding
  Tensor x = randn({2, 3, 9}), w = randn({5, 3, 4});
  expect_close(F::conv1d(x, w, {}, 2, kValid), F::conv1d(x, w, {}, 2, 0), 0, 0);
  expect_close(F::conv1d(x, w, F::Conv1dFuncOptions().padding(kValid)), F::conv1d(x, w), 0, 0);
}

TEST(ConvPaddingSame, Conv2dAgainstTheDefinition) {
  manual_seed(5);
  Tensor x = randn({2, 6, 5, 3}, TensorOptions(kFloat64)).permute({0, 3, 1, 2});  // [2, 3, 6, 5]
  ASSERT_FALSE(x.is_contiguous());
  for (int64_t g : {1, 3}) {
    Tensor w = randn({6, 3 / g, 4, 3}, TensorOptions(kFloat64)), b = randn({6}, TensorOptions(kFloat64));
    // height: kernel 4 -> 3 zeros (1 top, 2 bottom); width: kernel 3 dilation 2 -> 4 (2 and 2)
    Tensor y = F::conv2d(x, w, b, 1, kSame, {1, 2}, g);
    ASSERT_EQ(y.sizes().vec(), (std::vector<int64_t>{2, 6, 6, 5}));
    expect_close(y.reshape({-1}), same_reference(x, w, b, {1, 2}, {1, 2}, g), 1e-12);
    expect_close(y, F::conv2d(F::pad(x, {2, 2, 1, 2}), w, b, 1, 0, {1, 2}, g), 1e-12, 1e-12);
    expect_close(F::conv2d(x, w, F::Conv2dFuncOptions().bias(b).padding(kSame).dilation({1, 2}).groups(g)), y, 0, 0);
    expect_close(wick::conv2d(x, w, b, 1, kSame, {1, 2}, g), y, 0, 0);
  }
  Tensor w = randn({4, 3, 3, 3}, TensorOptions(kFloat64));
  expect_close(F::conv2d(x, w, {}, 2, kValid), F::conv2d(x, w, {}, 2, 0), 0, 0);
  expect_close(F::conv2d(x, w, F::Conv2dFuncOptions().padding(kValid).stride(2)), F::conv2d(x, w, {}, 2), 0, 0);
  // symmetric 'same' is the ordinary padding
  expect_close(F::conv2d(x, w, {}, 1, kSame), F::conv2d(x, w, {}, 1, 1), 0, 0);
}

TEST(ConvPaddingSame, Conv3dAgainstTheDefinition) {
  manual_seed(6);
  Tensor x = randn({1, 4, 5, 6, 2}, TensorOptions(kFloat64)).permute({0, 4, 1, 2, 3});  // [1, 2, 4, 5, 6]
  Tensor w = randn({3, 2, 2, 3, 4}, TensorOptions(kFloat64)), b = randn({3}, TensorOptions(kFloat64));
  Tensor y = F::conv3d(x, w, b, 1, kSame, {1, 1, 2});
  ASSERT_EQ(y.sizes().vec(), (std::vector<int64_t>{1, 3, 4, 5, 6}));
  // depth 1 zero (0 front, 1 back), height 2 (1, 1), width 6 (3, 3)
  expect_close(y.reshape({-1}), same_reference(x, w, b, {0, 1, 3}, {1, 1, 2}, 1), 1e-12);
  expect_close(F::conv3d(x, w, F::Conv3dFuncOptions().bias(b).padding(kSame).dilation({1, 1, 2})), y, 0, 0);
  Tensor w3 = randn({3, 2, 3, 3, 3}, TensorOptions(kFloat64));
  expect_close(F::conv3d(x, w3, {}, 1, kValid), F::conv3d(x, w3), 0, 0);
  expect_close(F::conv3d(x, w3, F::Conv3dFuncOptions().padding(kValid)), F::conv3d(x, w3), 0, 0);
}

TEST(ConvPaddingSame, Gradcheck) {
  gradcheck([](const TL& a) { return F::conv2d(a[0], a[1], a[2], 1, kSame, {1, 2}); },
            {wick::testing::rnd({2, 2, 4, 5}), wick::testing::rnd({3, 2, 2, 3}), wick::testing::rnd({3})});
  gradcheck([](const TL& a) { return F::conv1d(a[0].transpose(1, 2), a[1], a[2], 1, kSame, 1, 2); },
            {wick::testing::rnd({2, 6, 4}), wick::testing::rnd({4, 2, 4}), wick::testing::rnd({4})});
  gradcheck([](const TL& a) { return F::conv3d(a[0], a[1], a[2], 1, kSame); },
            {wick::testing::rnd({1, 2, 3, 3, 4}), wick::testing::rnd({2, 2, 2, 1, 2}), wick::testing::rnd({2})});
}

TEST(ConvPaddingSame, Modules) {
  manual_seed(7);
  nn::Conv1d c1(nn::Conv1dOptions(3, 4, 4).padding(kSame));
  nn::Conv2d c2(nn::Conv2dOptions(3, 4, {2, 3}).padding(kSame).dilation({1, 2}));
  nn::Conv3d c3(nn::Conv3dOptions(2, 3, {2, 3, 2}).padding(kSame));
  Tensor x1 = randn({2, 3, 9}), x2 = randn({2, 3, 6, 7}), x3 = randn({1, 2, 3, 4, 5});
  expect_close(c1(x1), F::conv1d(x1, c1->weight, c1->bias, 1, kSame), 0, 0);
  expect_close(c2(x2), F::conv2d(x2, c2->weight, c2->bias, 1, kSame, {1, 2}), 0, 0);
  expect_close(c3(x3), F::conv3d(x3, c3->weight, c3->bias, 1, kSame), 0, 0);
  EXPECT_EQ(c1(x1).sizes().vec(), (std::vector<int64_t>{2, 4, 9}));
  EXPECT_EQ(c2(x2).sizes().vec(), (std::vector<int64_t>{2, 4, 6, 7}));
  EXPECT_EQ(c3(x3).sizes().vec(), (std::vector<int64_t>{1, 3, 3, 4, 5}));
  EXPECT_EQ(repr(*c1), "Conv1d(3, 4, kernel_size=(4,), stride=(1,), padding=same)");
  EXPECT_EQ(repr(*c2), "Conv2d(3, 4, kernel_size=(2, 3), stride=(1, 1), padding=same, dilation=(1, 2))");
  EXPECT_EQ(repr(*c3), "Conv3d(2, 3, kernel_size=(2, 3, 2), stride=(1, 1, 1), padding=same)");
  nn::Conv2d v(nn::Conv2dOptions(3, 4, 3).padding(kValid).stride(2));
  EXPECT_EQ(repr(*v), "Conv2d(3, 4, kernel_size=(3, 3), stride=(2, 2), padding=valid)");
  expect_close(v(x2), F::conv2d(x2, v->weight, v->bias, 2), 0, 0);
  nn::Conv1d v1(nn::Conv1dOptions(3, 4, 3).padding(kValid));
  EXPECT_EQ(repr(*v1), "Conv1d(3, 4, kernel_size=(3,), stride=(1,), padding=valid)");
  EXPECT_EQ(v1(x1).sizes().vec(), (std::vector<int64_t>{2, 4, 7}));
  nn::Conv3d v3(nn::Conv3dOptions(2, 3, 2).padding(kValid));
  EXPECT_EQ(v3(x3).sizes().vec(), (std::vector<int64_t>{1, 3, 2, 3, 4}));
  // a padding mode with 'same': the input padded by it (the odd one on the right), as PyTorch's
  nn::Conv2d r(nn::Conv2dOptions(3, 2, {4, 3}).padding(kSame).padding_mode(kReflect));
  expect_close(r(x2), F::conv2d(F::pad(x2, {1, 1, 1, 2}, "reflect"), r->weight, r->bias), 1e-6, 1e-6);
  EXPECT_EQ(repr(*r), "Conv2d(3, 2, kernel_size=(4, 3), stride=(1, 1), padding=same, padding_mode=reflect)");
  nn::Conv1d r1(nn::Conv1dOptions(3, 2, 2).padding(kSame).padding_mode(kCircular));
  expect_close(r1(x1), F::conv1d(F::pad(x1, {0, 1}, "circular"), r1->weight, r1->bias), 1e-6, 1e-6);
  // gradients through the module
  c2(x2).sum().backward();
  EXPECT_EQ(c2->weight.grad().sizes().vec(), c2->weight.sizes().vec());
}

TEST(ConvPaddingSame, StridedIsAnError) {
  EXPECT_THROW(nn::Conv2d(nn::Conv2dOptions(3, 4, 3).padding(kSame).stride(2)), ValueError);
  EXPECT_EQ(error_of([] { nn::Conv2d(nn::Conv2dOptions(3, 4, 3).padding(kSame).stride({1, 2})); }),
            "[Conv2d] padding='same' is not supported for strided convolutions");
  EXPECT_EQ(error_of([] { nn::Conv1d(nn::Conv1dOptions(3, 4, 3).padding(kSame).stride(2)); }),
            "[Conv1d] padding='same' is not supported for strided convolutions");
  EXPECT_EQ(error_of([] { nn::Conv3d(nn::Conv3dOptions(3, 4, 3).padding(kSame).stride({2, 1, 1})); }),
            "[Conv3d] padding='same' is not supported for strided convolutions");
  EXPECT_EQ(error_of([] { F::conv2d(randn({1, 3, 5, 5}), randn({2, 3, 3, 3}), {}, 2, kSame); }),
            "[conv2d] padding='same' is not supported for strided convolutions");
  EXPECT_EQ(error_of([] { F::conv1d(randn({1, 3, 5}), randn({2, 3, 3}), {}, 2, kSame); }),
            "[conv1d] padding='same' is not supported for strided convolutions");
  EXPECT_EQ(error_of([] { F::conv3d(randn({1, 3, 5, 5, 5}), randn({2, 3, 3, 3, 3}), {}, 2, kSame); }),
            "[conv3d] padding='same' is not supported for strided convolutions");
  // options changed after construction are checked when the module runs
  nn::Conv2d c(nn::Conv2dOptions(3, 4, 3).padding(kSame));
  c->options.stride(2);
  EXPECT_THROW(c(randn({1, 3, 5, 5})), ValueError);
}

TEST(ConvPaddingSame, EarlierSpellingsStillWork) {
  manual_seed(8);
  nn::Conv2d c(nn::Conv2dOptions(3, 4, 3).padding({1, 2}));
  EXPECT_EQ(c->options.padding()->at(0), 1);
  EXPECT_EQ((*c->options.padding())[1], 2);
  EXPECT_EQ(c->options.padding().h, 1);
  const F::Pair p = c->options.padding();
  EXPECT_EQ(p.w, 2);
  EXPECT_TRUE(c->options.padding() == F::Pair(1, 2));
  EXPECT_EQ(repr(*c), "Conv2d(3, 4, kernel_size=(3, 3), stride=(1, 1), padding=(1, 2))");
  nn::Conv1d c1(nn::Conv1dOptions(3, 4, 3).padding(2));
  const int64_t p1 = c1->options.padding();
  EXPECT_EQ(p1, 2);
  EXPECT_EQ(c1(randn({1, 3, 5})).size(2), 7);
  nn::Conv3d c3(nn::Conv3dOptions(2, 3, 3).padding({1, 0, 1}));
  EXPECT_EQ(c3->options.padding().w, 1);
  EXPECT_EQ(repr(*c3), "Conv3d(2, 3, kernel_size=(3, 3, 3), stride=(1, 1, 1), padding=(1, 0, 1))");
  // F:: forms with sizes
  Tensor x = randn({1, 3, 6, 6}), w = randn({2, 3, 3, 3});
  expect_close(F::conv2d(x, w, F::Conv2dFuncOptions().padding(1)), F::conv2d(x, w, {}, 1, 1), 0, 0);
  expect_close(F::conv2d(x, w, F::Conv2dFuncOptions().padding({1, 0})), F::conv2d(x, w, {}, 1, {1, 0}), 0, 0);
}

TEST(ConvPaddingSame, CudaAgainstCpu) {
  if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  manual_seed(9);
  Tensor x = randn({2, 3, 6, 5}), w = randn({4, 3, 4, 3}), b = randn({4});
  expect_close(F::conv2d(x.cuda(), w.cuda(), b.cuda(), 1, kSame, {1, 2}), F::conv2d(x, w, b, 1, kSame, {1, 2}), 1e-4,
               1e-4);
  Tensor x1 = randn({2, 3, 9}), w1 = randn({4, 3, 4});
  expect_close(F::conv1d(x1.cuda(), w1.cuda(), {}, 1, kSame), F::conv1d(x1, w1, {}, 1, kSame), 1e-4, 1e-4);
}

}  // namespace
