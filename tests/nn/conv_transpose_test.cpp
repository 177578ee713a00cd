// conv_transpose2d / ConvTranspose2d: values against a float64 reference that scatters each
// input element times the kernel into the output (the definition, written out here), with
// groups, stride, padding, output padding and dilation, from non-contiguous inputs; gradients
// by gradcheck (one ConvolutionBackward0 node); the module's shapes, initialization,
// output_size and PyTorch's errors; CUDA (cuDNN's backward-data) against the CPU, skipped
// without a GPU.
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
using TL = std::vector<Tensor>;
namespace F = wick::nn::functional;

namespace {

struct Geo {
  int64_t n, cin, h, w, cout, kh, kw, g, sh, sw, ph, pw, oph, opw, dh, dw;
  int64_t oh() const { return (h - 1) * sh - 2 * ph + dh * (kh - 1) + oph + 1; }
  int64_t ow() const { return (w - 1) * sw - 2 * pw + dw * (kw - 1) + opw + 1; }
};

// y[n, co, i sh + a dh - ph, j sw + b dw - pw] += x[n, ci, i, j] w[ci, co in group, a, b] (+ b[co]).
std::vector<double> reference(const Geo& s, const Tensor& x, const Tensor& w, const Tensor& b) {
  const auto xv = x.contiguous().to(kFloat64).to_vector<double>();
  const auto wv = w.contiguous().to(kFloat64).to_vector<double>();
  const int64_t oh = s.oh(), ow = s.ow(), cig = s.cin / s.g, cog = s.cout / s.g;
  std::vector<double> y(size_t(s.n * s.cout * oh * ow), 0.0);
  if (b.defined()) {
    const auto bv = b.to(kFloat64).to_vector<double>();
    for (int64_t n = 0; n < s.n; ++n)
      for (int64_t c = 0; c < s.cout; ++c)
        for (int64_t k = 0; k < oh * ow; ++k) y[size_t((n * s.cout + c) * oh * ow + k)] = bv[size_t(c)];
  }
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t ci = 0; ci < s.cin; ++ci)
      for (int64_t i = 0; i < s.h; ++i)
        for (int64_t j = 0; j < s.w; ++j) {
          const double xe = xv[size_t(((n * s.cin + ci) * s.h + i) * s.w + j)];
          const int64_t gi = ci / cig;
          for (int64_t co = 0; co < cog; ++co)
            for (int64_t a = 0; a < s.kh; ++a)
              for (int64_t bb = 0; bb < s.kw; ++bb) {
                const int64_t u = i * s.sh + a * s.dh - s.ph, v = j * s.sw + bb * s.dw - s.pw;
                if (u < 0 || u >= oh || v < 0 || v >= ow) continue;
                const double we = wv[size_t(((ci * cog + co) * s.kh + a) * s.kw + bb)];
                y[size_t(((n * s.cout + gi * cog + co) * oh + u) * ow + v)] += xe * we;
              }
        }
  return y;
}

const std::vector<Geo> kGeos = {
    // n cin h w cout kh kw g sh sw ph pw oph opw dh dw
    {2, 3, 4, 5, 2, 3, 3, 1, 1, 1, 0, 0, 0, 0, 1, 1},
    {2, 4, 5, 4, 6, 3, 2, 2, 2, 3, 1, 0, 1, 2, 1, 1},  // groups, stride, padding, output padding
    {1, 2, 3, 4, 3, 2, 3, 1, 2, 1, 1, 1, 0, 0, 2, 3},  // dilation
    {2, 2, 3, 3, 4, 3, 3, 2, 1, 1, 1, 2, 1, 1, 2, 3},  // output padding past the stride (< dilation)
};

// x as a non-contiguous view: the transpose of a [N, C, W, H] tensor.
Tensor strided_input(const Geo& s, Dtype dt) {
  Tensor base = randn({s.n, s.cin, s.w, s.h}, TensorOptions(kFloat64)).to(dt);
  return base.transpose(2, 3);
}

Tensor call(const Geo& s, const Tensor& x, const Tensor& w, const Tensor& b) {
  return F::conv_transpose2d(x, w, b, {s.sh, s.sw}, {s.ph, s.pw}, {s.oph, s.opw}, s.g, {s.dh, s.dw});
}

TEST(ConvTranspose2d, ValuesAgainstTheDefinition) {
  for (Dtype dt : {kFloat64, kFloat32}) {
    for (const Geo& s : kGeos) {
      SCOPED_TRACE(::testing::Message() << dt << " cin " << s.cin << " g " << s.g << " s " << s.sh << "," << s.sw);
      Tensor x = strided_input(s, dt);
      ASSERT_FALSE(x.is_contiguous());
      Tensor w = randn({s.cin, s.cout / s.g, s.kh, s.kw}, TensorOptions(kFloat64)).to(dt);
      Tensor b = randn({s.cout}, TensorOptions(kFloat64)).to(dt);
      const double tol = dt == kFloat64 ? 1e-12 : 1e-4;  // absolute; values are O(10)
      Tensor y = call(s, x, w, b);
      ASSERT_EQ(y.sizes().vec(), (std::vector<int64_t>{s.n, s.cout, s.oh(), s.ow()}));
      EXPECT_EQ(y.dtype(), dt);
      expect_close(y.reshape({-1}), reference(s, x, w, b), tol);
      expect_close(call(s, x, w, {}).reshape({-1}), reference(s, x, w, {}), tol);
      // Unbatched [C, H, W] gives the batch's first image.
      Tensor y0 = call(s, x.select(0, 0), w, b);
      ASSERT_EQ(y0.dim(), 3);
      expect_close(y0, y.select(0, 0), tol, tol);
    }
  }
}

TEST(ConvTranspose2d, Int64AsTheCpuFloat) {
  const Geo& s = kGeos[1];
  Tensor x = randint(-3, 4, {s.n, s.cin, s.h, s.w}, TensorOptions(kInt64));
  Tensor w = randint(-3, 4, {s.cin, s.cout / s.g, s.kh, s.kw}, TensorOptions(kInt64));
  Tensor y = call(s, x, w, {});
  EXPECT_EQ(y.dtype(), kInt64);
  expect_close(y.reshape({-1}), reference(s, x, w, {}), 0);
}

TEST(ConvTranspose2d, Gradcheck) {
  for (const Geo& s : kGeos) {
    Tensor x = wick::testing::rnd({s.n, s.cin, s.h, s.w});
    Tensor w = wick::testing::rnd({s.cin, s.cout / s.g, s.kh, s.kw});
    Tensor b = wick::testing::rnd({s.cout});
    gradcheck([s](const TL& a) { return call(s, a[0], a[1], a[2]); }, {x, w, b});
    Tensor y = call(s, x, w, b);
    ASSERT_NE(y.grad_fn(), nullptr);
    EXPECT_EQ(y.grad_fn()->name(), "ConvolutionBackward0");
    EXPECT_EQ(y.grad_fn()->num_inputs(), 3u);
  }
  // Only x requires grad: the weight and the bias get nothing; no grad mode, no node.
  const Geo& s = kGeos[1];
  Tensor x = wick::testing::rnd({s.n, s.cin, s.h, s.w});
  Tensor w = wick::testing::rnd({s.cin, s.cout / s.g, s.kh, s.kw}, false);
  Tensor b = wick::testing::rnd({s.cout}, false);
  call(s, x, w, b).sum().backward();
  EXPECT_TRUE(x.grad().defined());
  EXPECT_FALSE(w.grad().defined());
  EXPECT_FALSE(b.grad().defined());
  NoGradGuard g;
  EXPECT_EQ(call(s, x, w, b).grad_fn(), nullptr);
}

TEST(ConvTranspose2d, ModuleShapesInitAndOutputSize) {
  nn::ConvTranspose2d m(nn::ConvTranspose2dOptions(4, 6, {3, 2}).stride(2).padding(1).groups(2));
  ASSERT_EQ(m->weight.sizes().vec(), (std::vector<int64_t>{4, 3, 3, 2}));
  ASSERT_EQ(m->bias.sizes().vec(), (std::vector<int64_t>{6}));
  // fan_in = weight.size(1) * kh * kw = 18: kaiming_uniform(a = sqrt 5) gives bound 1 / sqrt(18),
  // as does the bias.
  const double bound = 1.0 / std::sqrt(18.0);
  EXPECT_LE(m->weight.abs().max().item<float>(), bound + 1e-7);
  EXPECT_LE(m->bias.abs().max().item<float>(), bound + 1e-7);
  EXPECT_GT(m->weight.abs().max().item<float>(), bound / 2);
  EXPECT_EQ(m->named_parameters().size(), 2u);
  Tensor x = randn({2, 4, 5, 4});
  // (5 - 1) 2 - 2 + 2 + 1 = 9 rows, (4 - 1) 2 - 2 + 1 + 1 = 6 columns; output_size may add up to one stride less one.
  EXPECT_EQ(m(x).sizes().vec(), (std::vector<int64_t>{2, 6, 9, 6}));
  Tensor y = m->forward(x, std::vector<int64_t>{10, 7});
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{2, 6, 10, 7}));
  Tensor want = F::conv_transpose2d(x, m->weight, m->bias, 2, 1, 1, 2);
  expect_close(y, want, 0, 0);
  EXPECT_EQ(m->forward(x, std::vector<int64_t>{2, 6, 9, 7}).sizes().vec(), (std::vector<int64_t>{2, 6, 9, 7}));
  EXPECT_EQ(m->forward(x.select(0, 0), std::vector<int64_t>{6, 10, 6}).sizes().vec(), (std::vector<int64_t>{6, 10, 6}));
  EXPECT_EQ(error_of([&] { m->forward(x, std::vector<int64_t>{11, 6}); }),
            "[ConvTranspose2d] requested an output size of [11, 6], but valid sizes range from [9, 6] to "
            "[10, 7] (for an input of [5, 4])");
  EXPECT_EQ(error_of([&] { m->forward(x, std::vector<int64_t>{9}); }),
            "[ConvTranspose2d] ConvTranspose2D: for 4D input, output_size must have 2 or 4 elements (got 1)");
  nn::ConvTranspose2d plain(3, 2, 3);
  EXPECT_TRUE(plain->bias.defined());
  EXPECT_EQ(plain->extra_repr(), "3, 2, kernel_size=(3, 3), stride=(1, 1)");
  EXPECT_EQ(m->extra_repr(), "4, 6, kernel_size=(3, 2), stride=(2, 2), padding=(1, 1), groups=2");
  nn::ConvTranspose2d nb(nn::ConvTranspose2dOptions(2, 2, 2).bias(false).output_padding(1).stride(2).dilation(2));
  EXPECT_FALSE(nb->bias.defined());
  EXPECT_EQ(nb->extra_repr(),
            "2, 2, kernel_size=(2, 2), stride=(2, 2), dilation=(2, 2), output_padding=(1, 1), bias=False");
  EXPECT_EQ(error_of([] { nn::ConvTranspose2d(nn::ConvTranspose2dOptions(3, 4, 2).groups(2)); }),
            "[ConvTranspose2d] in_channels must be divisible by groups");
}

TEST(ConvTranspose2d, ErrorsAsPyTorch) {
  Tensor x = randn({1, 3, 5, 5});
  Tensor w = randn({4, 2, 3, 3});
  EXPECT_EQ(error_of([&] { F::conv_transpose2d(x, w); }),
            "[conv_transpose2d] Given transposed=1, weight of size [4, 2, 3, 3], expected input[1, 3, 5, 5] to "
            "have 4 channels, but got 3 channels instead");
  Tensor x4 = randn({1, 4, 5, 5});
  EXPECT_EQ(error_of([&] { F::conv_transpose2d(x4, w, randn({3})); }),
            "[conv_transpose2d] Given transposed=1, weight of size [4, 2, 3, 3], expected bias to be "
            "1-dimensional with 2 elements, but got bias of size [3] instead");
  EXPECT_EQ(error_of([&] { F::conv_transpose2d(x4, w, {}, 1, 0, 1); }),
            "[conv_transpose2d] output padding must be smaller than either stride or dilation, but got "
            "output_padding_height: 1 output_padding_width: 1 stride_height: 1 stride_width: 1 "
            "dilation_height: 1 dilation_width: 1");
  EXPECT_EQ(error_of([&] { F::conv_transpose2d(randn({4, 5}), w); }),
            "[conv_transpose2d] Expected 3D (unbatched) or 4D (batched) input to conv_transpose2d, but got input "
            "of size: [4, 5]");
  EXPECT_EQ(error_of([&] { F::conv_transpose2d(randn({1, 4, 1, 1}), w, {}, 1, 2); }),
            "[conv_transpose2d] Given input size per channel: (1 x 1). Calculated output size per channel: "
            "(-1 x -1). Output size is too small");
  EXPECT_EQ(error_of([&] { F::conv_transpose2d(x4, w, {}, 1, 0, 0, 3); }),
            "[conv_transpose2d] Given groups=3, expected weight to be divisible by 3 at dimension 0, but got "
            "weight of size [4, 2, 3, 3] instead");
  EXPECT_EQ(error_of([&] { F::conv_transpose2d(x4, w.to(kFloat64)); }),
            "[conv_transpose2d] Input type (float32) and weight type (float64) should be the same");
}

TEST(ConvTranspose2d, CudaAgainstCpu) {
  if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const Device gpu(kCUDA, 0);
  for (Dtype dt : {kFloat64, kFloat32, kInt64}) {
    for (const Geo& s : kGeos) {
      SCOPED_TRACE(::testing::Message() << dt << " cin " << s.cin << " g " << s.g);
      const bool fl = dt != kInt64;
      Tensor x = fl ? strided_input(s, dt) : randint(-3, 4, {s.n, s.cin, s.h, s.w}, TensorOptions(kInt64));
      Tensor w = fl ? randn({s.cin, s.cout / s.g, s.kh, s.kw}, TensorOptions(dt))
                    : randint(-3, 4, {s.cin, s.cout / s.g, s.kh, s.kw}, TensorOptions(kInt64));
      Tensor b = fl ? randn({s.cout}, TensorOptions(dt)) : Tensor();
      const double tol = dt == kFloat32 ? 1e-3 : (fl ? 1e-10 : 0);
      Tensor xg = x.to(gpu), wg = w.to(gpu), bg = fl ? b.to(gpu) : Tensor();
      if (fl) {
        xg.requires_grad_(), wg.requires_grad_(), bg.requires_grad_();
        x = x.detach().requires_grad_(), w = w.detach().requires_grad_(), b = b.detach().requires_grad_();
      }
      Tensor y = call(s, x, w, b), yg = call(s, xg, wg, bg);
      expect_close(yg.cpu(), y.detach(), tol, tol);
      if (!fl) continue;
      Tensor gy = randn(y.sizes(), TensorOptions(dt));
      (y * gy).sum().backward();
      (yg * gy.to(gpu)).sum().backward();
      expect_close(xg.grad().cpu(), x.grad(), tol, tol);
      expect_close(wg.grad().cpu(), w.grad(), tol, tol);
      expect_close(bg.grad().cpu(), b.grad(), tol, tol);
    }
  }
}

}  // namespace
