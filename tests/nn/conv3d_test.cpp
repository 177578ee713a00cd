// Conv3d and functional::conv3d against a direct float64 loop over the output (random inputs;
// stride, padding, dilation and groups; unbatched and non-contiguous inputs), gradients by
// central differences, PyTorch's printing and initialization bounds, and the errors PyTorch
// raises, on every device present.
#include <cmath>
#include <sstream>

#include <gtest/gtest.h>

#include "../autograd/gradcheck.h"
#include "wick/wick.h"

using namespace wick;
namespace F = wick::nn::functional;

namespace {

class Conv3d : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override {
    if (GetParam().is_cuda() && !cuda::is_available()) GTEST_SKIP() << "no CUDA device";
    manual_seed(3);
  }
  Device dev() const { return GetParam(); }
};

// y[n][o][z][y][x] = b[o] + sum over the group's channels and the taps, by loops.
std::vector<double> reference(const Tensor& xt, const Tensor& wt, const Tensor& bt, F::Triple s, F::Triple p,
                              F::Triple d, int64_t groups) {
  Tensor x = xt.cpu().to(kFloat64).contiguous(), w = wt.cpu().to(kFloat64).contiguous();
  const auto xv = x.to_vector<double>(), wv = w.to_vector<double>();
  const std::vector<double> bv = bt.defined() ? bt.cpu().to(kFloat64).to_vector<double>() : std::vector<double>();
  const int64_t N = x.size(0), C = x.size(1), D = x.size(2), H = x.size(3), W = x.size(4);
  const int64_t O = w.size(0), Cg = w.size(1), KD = w.size(2), KH = w.size(3), KW = w.size(4);
  const int64_t OD = (D + 2 * p.d - d.d * (KD - 1) - 1) / s.d + 1, OH = (H + 2 * p.h - d.h * (KH - 1) - 1) / s.h + 1,
                OW = (W + 2 * p.w - d.w * (KW - 1) - 1) / s.w + 1;
  std::vector<double> out;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t z = 0; z < OD; ++z)
        for (int64_t yy = 0; yy < OH; ++yy)
          for (int64_t xx = 0; xx < OW; ++xx) {
            double acc = bv.empty() ? 0.0 : bv[size_t(o)];
            const int64_t g = o / (O / groups);
            for (int64_t ci = 0; ci < Cg; ++ci)
              for (int64_t a = 0; a < KD; ++a)
                for (int64_t b = 0; b < KH; ++b)
                  for (int64_t e = 0; e < KW; ++e) {
                    const int64_t iz = z * s.d - p.d + a * d.d, iy = yy * s.h - p.h + b * d.h,
                                  ix = xx * s.w - p.w + e * d.w;
                    if (iz < 0 || iz >= D || iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                    const int64_t c = g * Cg + ci;
                    acc += xv[size_t((((n * C + c) * D + iz) * H + iy) * W + ix)] *
                           wv[size_t((((o * Cg + ci) * KD + a) * KH + b) * KW + e)];
                  }
            out.push_back(acc);
          }
  return out;
}

void expect_near_all(const Tensor& got, const std::vector<double>& want, double tol) {
  const auto g = got.cpu().to(kFloat64).contiguous().to_vector<double>();
  ASSERT_EQ(g.size(), want.size());
  for (size_t i = 0; i < g.size(); ++i) ASSERT_NEAR(g[i], want[i], tol) << i;
}

TEST_P(Conv3d, MatchesTheLoops) {
  struct Case {
    std::vector<int64_t> x, w;
    F::Triple s, p, d;
    int64_t groups;
  };
  const std::vector<Case> cases = {
      {{2, 3, 5, 6, 7}, {4, 3, 3, 3, 3}, 1, 0, 1, 1},
      {{1, 4, 6, 5, 5}, {6, 2, 2, 3, 1}, {2, 1, 2}, {1, 0, 1}, 1, 2},
      {{2, 2, 7, 6, 6}, {3, 2, 3, 2, 2}, 1, {2, 1, 0}, {2, 1, 2}, 1},
      {{1, 1, 3, 3, 3}, {2, 1, 3, 3, 3}, 1, 1, 1, 1},
  };
  for (Dtype dt : {kFloat64, kFloat32}) {
    for (const auto& c : cases) {
      Tensor x = randn(c.x, TensorOptions(dt).device(dev()));
      Tensor w = randn(c.w, TensorOptions(dt).device(dev()));
      Tensor b = randn({c.w[0]}, TensorOptions(dt).device(dev()));
      const double tol = dt == kFloat64 ? 1e-10 : 1e-4;
      expect_near_all(F::conv3d(x, w, b, c.s, c.p, c.d, c.groups), reference(x, w, b, c.s, c.p, c.d, c.groups), tol);
      expect_near_all(F::conv3d(x, w, {}, c.s, c.p, c.d, c.groups), reference(x, w, {}, c.s, c.p, c.d, c.groups),
                      tol);
    }
  }
  // Unbatched, and a non-contiguous input (a transposed view).
  Tensor x = randn({3, 4, 5, 6}, TensorOptions(kFloat64).device(dev()));
  Tensor w = randn({2, 3, 2, 2, 2}, TensorOptions(kFloat64).device(dev()));
  Tensor y = F::conv3d(x, w);
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{2, 3, 4, 5}));
  expect_near_all(y, reference(x.unsqueeze(0), w, {}, 1, 0, 1, 1), 1e-10);
  Tensor xt = randn({1, 3, 6, 5, 4}, TensorOptions(kFloat64).device(dev())).transpose(2, 4);
  expect_near_all(F::conv3d(xt, w, {}, 1, 1), reference(xt, w, {}, 1, 1, 1, 1), 1e-10);
}

TEST_P(Conv3d, Gradients) {
  auto x = wick::testing::rnd({2, 2, 4, 3, 3}), w = wick::testing::rnd({2, 1, 2, 2, 2}), b = wick::testing::rnd({2});
  wick::testing::gradcheck(
      [](const std::vector<Tensor>& a) { return F::conv3d(a[0], a[1], a[2], {2, 1, 1}, {1, 0, 1}, 1, 2); },
      {x, w, b}, dev());
}

TEST_P(Conv3d, ModuleShapesPrintingAndInit) {
  nn::Conv3d conv(nn::Conv3dOptions(4, 6, 3).stride({1, 2, 2}).padding(1).groups(2).bias(false));
  conv->to(dev());
  EXPECT_EQ(conv->weight.sizes(), (std::vector<int64_t>{6, 2, 3, 3, 3}));
  EXPECT_FALSE(conv->bias.defined());
  std::ostringstream os;
  os << *conv;
  EXPECT_EQ(os.str(), "Conv3d(4, 6, kernel_size=(3, 3, 3), stride=(1, 2, 2), padding=(1, 1, 1), groups=2, bias=False)");
  Tensor y = conv(randn({2, 4, 5, 8, 8}, dev()));
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{2, 6, 5, 4, 4}));
  // kaiming_uniform_(a = sqrt(5)): bound 1 / sqrt(fan_in), fan_in = 3 channels * 2 * 2 * 2.
  nn::Conv3d plain(3, 8, 2);
  const double bound = 1 / std::sqrt(24.0);
  EXPECT_LE(plain->weight.abs().max().item<double>(), bound);
  EXPECT_LE(plain->bias.abs().max().item<double>(), bound);
  std::ostringstream ps;
  ps << *plain;
  EXPECT_EQ(ps.str(), "Conv3d(3, 8, kernel_size=(2, 2, 2), stride=(1, 1, 1))");
  auto names = plain->named_parameters();
  EXPECT_TRUE(names.contains("weight"));
  EXPECT_TRUE(names.contains("bias"));
}

TEST_P(Conv3d, Errors) {
  Tensor x = randn({1, 3, 4, 4, 4}, dev()), w = randn({2, 3, 3, 3, 3}, dev());
  auto expect = [](auto f, const char* what) {
    try {
      f();
      ADD_FAILURE() << what << ": no error";
    } catch (const ValueError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("[conv3d]", 0), 0u) << what << ": " << e.what();
    }
  };
  expect([&] { F::conv3d(x.flatten(0, 1), w.flatten(0, 1)); }, "4-D weight");
  expect([&] { F::conv3d(x.flatten(3), w); }, "3-D input");
  expect([&] { F::conv3d(randn({1, 2, 4, 4, 4}, dev()), w); }, "channels");
  expect([&] { F::conv3d(x, randn({2, 3, 5, 3, 3}, dev())); }, "kernel deeper than the input");
  expect([&] { F::conv3d(x, w, {}, 0); }, "zero stride");
  expect([&] { F::conv3d(x, w, {}, 1, -1); }, "negative padding");
  EXPECT_THROW(nn::Conv3d(nn::Conv3dOptions(3, 4, 3).groups(2)), ValueError);
}

INSTANTIATE_TEST_SUITE_P(Devices, Conv3d, ::testing::Values(Device(kCPU), Device(kCUDA, 0)),
                         [](const auto& info) { return info.param.is_cuda() ? "cuda" : "cpu"; });

}  // namespace
