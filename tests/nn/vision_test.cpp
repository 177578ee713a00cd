// F::unfold, F::fold, F::affine_grid and F::grid_sample, and the Unfold and Fold modules: values
// against float64 loops written here (im2col per element, col2im as its adjoint, the affine
// map per grid point, bilinear and nearest sampling per output pixel with reflection by
// repeated folding), fold(unfold(x)) against x times the overlap count, gradients against
// central differences, node names, non-contiguous inputs, each device, errors and printing.
#include "wick/nn/vision.h"

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "../autograd/gradcheck.h"
#include "nn_test_util.h"
#include "wick/wick.h"

using namespace wick;
using wick::testing::expect_close;
using wick::testing::names;
using TL = std::vector<Tensor>;
namespace F = wick::nn::functional;

namespace {

Tensor from_vector(const std::vector<double>& v, IntArrayRef sizes) {
  return tensor(v, TensorOptions(kFloat64)).view(sizes);
}

struct BlockArgs {
  int64_t kh, kw, dh, dw, ph, pw, sh, sw;
};

int64_t blocks_along(int64_t size, int64_t k, int64_t d, int64_t p, int64_t s) {
  return (size + 2 * p - d * (k - 1) - 1) / s + 1;
}

// im2col of x [N, C, H, W], one element at a time: [N, C * kh * kw, L]
Tensor unfold_ref(const Tensor& x, const BlockArgs& a) {
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  const int64_t oh = blocks_along(h, a.kh, a.dh, a.ph, a.sh), ow = blocks_along(w, a.kw, a.dw, a.pw, a.sw);
  const std::vector<double> v = x.contiguous().cpu().to_vector<double>();
  std::vector<double> out(size_t(n * c * a.kh * a.kw * oh * ow), 0.0);
  for (int64_t in = 0; in < n; ++in)
    for (int64_t ic = 0; ic < c; ++ic)
      for (int64_t i = 0; i < a.kh; ++i)
        for (int64_t j = 0; j < a.kw; ++j)
          for (int64_t bi = 0; bi < oh; ++bi)
            for (int64_t bj = 0; bj < ow; ++bj) {
              const int64_t r = bi * a.sh - a.ph + i * a.dh, q = bj * a.sw - a.pw + j * a.dw;
              const int64_t row = (ic * a.kh + i) * a.kw + j, col = bi * ow + bj;
              if (r >= 0 && r < h && q >= 0 && q < w)
                out[size_t((in * c * a.kh * a.kw + row) * oh * ow + col)] =
                    v[size_t(((in * c + ic) * h + r) * w + q)];
            }
  return from_vector(out, {n, c * a.kh * a.kw, oh * ow});
}

// col2im: cols [N, C * kh * kw, L] summed into [N, C, H, W]
Tensor fold_ref(const Tensor& cols, int64_t h, int64_t w, const BlockArgs& a) {
  const int64_t n = cols.size(0), c = cols.size(1) / (a.kh * a.kw);
  const int64_t oh = blocks_along(h, a.kh, a.dh, a.ph, a.sh), ow = blocks_along(w, a.kw, a.dw, a.pw, a.sw);
  const std::vector<double> v = cols.contiguous().cpu().to_vector<double>();
  std::vector<double> out(size_t(n * c * h * w), 0.0);
  for (int64_t in = 0; in < n; ++in)
    for (int64_t ic = 0; ic < c; ++ic)
      for (int64_t i = 0; i < a.kh; ++i)
        for (int64_t j = 0; j < a.kw; ++j)
          for (int64_t bi = 0; bi < oh; ++bi)
            for (int64_t bj = 0; bj < ow; ++bj) {
              const int64_t r = bi * a.sh - a.ph + i * a.dh, q = bj * a.sw - a.pw + j * a.dw;
              const int64_t row = (ic * a.kh + i) * a.kw + j, col = bi * ow + bj;
              if (r >= 0 && r < h && q >= 0 && q < w)
                out[size_t(((in * c + ic) * h + r) * w + q)] +=
                    v[size_t((in * c * a.kh * a.kw + row) * oh * ow + col)];
            }
  return from_vector(out, {n, c, h, w});
}

// How many (block, tap) pairs read pixel (r, q): fold(unfold(x)) is x times this.
Tensor overlap_count(int64_t h, int64_t w, const BlockArgs& a) {
  const int64_t oh = blocks_along(h, a.kh, a.dh, a.ph, a.sh), ow = blocks_along(w, a.kw, a.dw, a.pw, a.sw);
  std::vector<double> count(size_t(h * w), 0.0);
  for (int64_t bi = 0; bi < oh; ++bi)
    for (int64_t bj = 0; bj < ow; ++bj)
      for (int64_t i = 0; i < a.kh; ++i)
        for (int64_t j = 0; j < a.kw; ++j) {
          const int64_t r = bi * a.sh - a.ph + i * a.dh, q = bj * a.sw - a.pw + j * a.dw;
          if (r >= 0 && r < h && q >= 0 && q < w) count[size_t(r * w + q)] += 1;
        }
  return from_vector(count, {h, w});
}

F::UnfoldFuncOptions unfold_options(const BlockArgs& a) {
  return F::UnfoldFuncOptions({a.kh, a.kw}).dilation({a.dh, a.dw}).padding({a.ph, a.pw}).stride({a.sh, a.sw});
}
F::FoldFuncOptions fold_options(int64_t h, int64_t w, const BlockArgs& a) {
  return F::FoldFuncOptions({h, w}, {a.kh, a.kw})
      .dilation({a.dh, a.dw})
      .padding({a.ph, a.pw})
      .stride({a.sh, a.sw});
}

const std::vector<BlockArgs> kBlockCases = {
    {2, 2, 1, 1, 0, 0, 1, 1}, {3, 2, 1, 1, 1, 0, 1, 1}, {2, 3, 2, 1, 1, 2, 2, 1},
    {3, 3, 1, 2, 2, 1, 2, 3}, {1, 1, 1, 1, 0, 0, 2, 2}, {2, 2, 1, 1, 0, 0, 3, 3},  // the last skips pixels
};

// ---- grid_sample's reference, per output pixel

// Folds x back into [lo, hi] by reflecting at the bounds, one reflection at a time.
double fold_into(double x, double lo, double hi) {
  if (lo == hi) return lo;
  while (x < lo || x > hi) x = x < lo ? 2 * lo - x : 2 * hi - x;
  return x;
}

double source_coord(double g, int64_t size, const std::string& padding, bool align) {
  double x = align ? (g + 1) / 2 * double(size - 1) : ((g + 1) * double(size) - 1) / 2;
  if (padding == "reflection")
    x = align ? fold_into(x, 0, double(size - 1)) : fold_into(x, -0.5, double(size) - 0.5);
  if (padding != "zeros") x = std::min(double(size - 1), std::max(0.0, x));
  return x;
}

Tensor grid_sample_ref(const Tensor& input, const Tensor& grid, const std::string& mode,
                       const std::string& padding, bool align) {
  const int64_t n = input.size(0), c = input.size(1), h = input.size(2), w = input.size(3);
  const int64_t ho = grid.size(1), wo = grid.size(2);
  const std::vector<double> v = input.contiguous().cpu().to_vector<double>();
  const std::vector<double> g = grid.contiguous().cpu().to_vector<double>();
  std::vector<double> out(size_t(n * c * ho * wo), 0.0);
  for (int64_t in = 0; in < n; ++in)
    for (int64_t oy = 0; oy < ho; ++oy)
      for (int64_t ox = 0; ox < wo; ++ox) {
        const size_t gi = size_t(((in * ho + oy) * wo + ox) * 2);
        const double x = source_coord(g[gi], w, padding, align),
                     y = source_coord(g[gi + 1], h, padding, align);
        for (int64_t ic = 0; ic < c; ++ic) {
          auto at = [&](double r, double q) {
            if (r < 0 || r > double(h - 1) || q < 0 || q > double(w - 1)) return 0.0;
            return v[size_t(((in * c + ic) * h + int64_t(r)) * w + int64_t(q))];
          };
          double s = 0;
          if (mode == "nearest") {
            s = at(std::nearbyint(y), std::nearbyint(x));
          } else {
            const double x0 = std::floor(x), y0 = std::floor(y), fx = x - x0, fy = y - y0;
            s = at(y0, x0) * (1 - fx) * (1 - fy) + at(y0, x0 + 1) * fx * (1 - fy) +
                at(y0 + 1, x0) * (1 - fx) * fy + at(y0 + 1, x0 + 1) * fx * fy;
          }
          out[size_t(((in * c + ic) * ho + oy) * wo + ox)] = s;
        }
      }
  return from_vector(out, {n, c, ho, wo});
}

// affine_grid's points, one at a time: theta [N, 2, 3] applied to (x, y, 1)
Tensor affine_grid_ref(const Tensor& theta, int64_t n, int64_t h, int64_t w, bool align) {
  const std::vector<double> t = theta.contiguous().cpu().to_vector<double>();
  auto base = [&](int64_t i, int64_t size) {
    if (size == 1) return 0.0;
    return align ? -1.0 + 2.0 * double(i) / double(size - 1) : (2.0 * double(i) + 1.0) / double(size) - 1.0;
  };
  std::vector<double> out;
  for (int64_t in = 0; in < n; ++in)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x)
        for (int64_t k = 0; k < 2; ++k) {
          const double* row = &t[size_t(in * 6 + k * 3)];
          out.push_back(row[0] * base(x, w) + row[1] * base(y, h) + row[2]);
        }
  return from_vector(out, {n, h, w, 2});
}

}  // namespace

class VisionOnDevices : public wick::testing::OnEachDevice<34> {
 protected:
  // a float64 tensor on the device
  Tensor rnd(IntArrayRef sizes) const { return randn(sizes, kFloat64).to(dev()); }
};

TEST_P(VisionOnDevices, UnfoldMatchesAnIm2ColLoop) {
  for (const BlockArgs& a : kBlockCases) {
    Tensor x = rnd({2, 3, 7, 6});
    expect_close(F::unfold(x, unfold_options(a)), unfold_ref(x, a), 1e-12, 0, "unfold");
    // unbatched [C, H, W], float32
    Tensor x3 = x[0].to(kFloat32);
    Tensor got = F::unfold(x3, unfold_options(a));
    EXPECT_EQ(got.dtype(), kFloat32);
    EXPECT_EQ(got.device(), dev());
    expect_close(got, unfold_ref(x[0].unsqueeze(0).to(kFloat32), a)[0], 1e-6, 0, "unfold unbatched");
  }
  // a non-contiguous input: a channels-last layout seen as [N, C, H, W]
  Tensor nhwc = rnd({2, 5, 4, 3}).permute({0, 3, 1, 2});
  ASSERT_FALSE(nhwc.is_contiguous());
  const BlockArgs a{2, 2, 1, 1, 1, 1, 1, 2};
  expect_close(F::unfold(nhwc, unfold_options(a)), unfold_ref(nhwc, a), 1e-12, 0, "non-contiguous");
}

TEST_P(VisionOnDevices, FoldMatchesACol2ImLoop) {
  for (const BlockArgs& a : kBlockCases) {
    const int64_t h = 7, w = 6;
    const int64_t l = blocks_along(h, a.kh, a.dh, a.ph, a.sh) * blocks_along(w, a.kw, a.dw, a.pw, a.sw);
    Tensor cols = rnd({2, 3 * a.kh * a.kw, l});
    expect_close(F::fold(cols, fold_options(h, w, a)), fold_ref(cols, h, w, a), 1e-12, 0, "fold");
    Tensor got = F::fold(cols[1], fold_options(h, w, a));
    expect_close(got, fold_ref(cols[1].unsqueeze(0), h, w, a)[0], 1e-12, 0, "fold unbatched");
    // a non-contiguous input
    Tensor t = cols.transpose(1, 2).contiguous().transpose(1, 2);
    ASSERT_FALSE(t.is_contiguous());
    expect_close(F::fold(t, fold_options(h, w, a)), fold_ref(cols, h, w, a), 1e-12, 0, "fold non-contiguous");
  }
}

TEST_P(VisionOnDevices, FoldOfUnfoldIsTheInputTimesItsOverlapCount) {
  for (const BlockArgs& a : kBlockCases) {
    Tensor x = rnd({2, 3, 7, 6});
    Tensor back = F::fold(F::unfold(x, unfold_options(a)), fold_options(7, 6, a));
    expect_close(back, x * overlap_count(7, 6, a).to(dev()), 1e-12, 0, "fold(unfold(x))");
  }
}

TEST_P(VisionOnDevices, UnfoldAndFoldGradients) {
  const BlockArgs a{2, 3, 1, 2, 1, 1, 2, 1};
  Tensor x = randn({2, 2, 5, 6}, kFloat64).requires_grad_();
  wick::testing::gradcheck([&](const TL& v) { return F::unfold(v[0], unfold_options(a)); }, {x}, dev());
  const int64_t l = blocks_along(5, a.kh, a.dh, a.ph, a.sh) * blocks_along(6, a.kw, a.dw, a.pw, a.sw);
  Tensor cols = randn({2, 2 * 6, l}, kFloat64).requires_grad_();
  wick::testing::gradcheck([&](const TL& v) { return F::fold(v[0], fold_options(5, 6, a)); }, {cols}, dev());
  // second order: each backward is the other op, recorded
  wick::testing::gradgradcheck([&](const TL& v) { return F::unfold(v[0], unfold_options(a)); }, {x}, dev());
  // the nodes, named as PyTorch's
  Tensor y = F::unfold(x.to(dev()).detach().requires_grad_(), unfold_options(a));
  EXPECT_EQ(y.grad_fn()->name(), "Im2ColBackward0");
  Tensor z = F::fold(cols.to(dev()).detach().requires_grad_(), fold_options(5, 6, a));
  EXPECT_EQ(z.grad_fn()->name(), "Col2ImBackward0");
}

TEST_P(VisionOnDevices, AffineGridMatchesTheMapPerPoint) {
  for (bool align : {false, true}) {
    Tensor theta = rnd({3, 2, 3});
    expect_close(F::affine_grid(theta, {3, 2, 4, 5}, align), affine_grid_ref(theta, 3, 4, 5, align), 1e-12, 0,
                 align ? "align" : "no align");
    // one row or column: its coordinate is 0
    expect_close(F::affine_grid(theta, {3, 1, 1, 5}, align), affine_grid_ref(theta, 3, 1, 5, align), 1e-12, 0,
                 "H=1");
  }
  // the identity over 2 x 2 pixels: their centers, as PyTorch gives them
  Tensor id = tensor({{1.0, 0.0, 0.0}, {0.0, 1.0, 0.0}}).unsqueeze(0).to(dev());
  expect_close(F::affine_grid(id, {1, 1, 2, 2}, false),
               std::vector<double>{-0.5, -0.5, 0.5, -0.5, -0.5, 0.5, 0.5, 0.5});
  expect_close(F::affine_grid(id, {1, 1, 2, 2}, true), std::vector<double>{-1, -1, 1, -1, -1, 1, 1, 1});
  // 3-D: theta [N, 3, 4], grid [N, D, H, W, 3]
  Tensor g3 = F::affine_grid(rnd({2, 3, 4}), {2, 1, 3, 4, 5});
  EXPECT_EQ(g3.sizes().vec(), (std::vector<int64_t>{2, 3, 4, 5, 3}));
  Tensor theta = randn({2, 2, 3}, kFloat64).requires_grad_();
  wick::testing::gradcheck(
      [](const TL& v) {
        return F::affine_grid(v[0], {2, 3, 4, 3}, false);
      },
      {theta}, dev());
}

TEST_P(VisionOnDevices, GridSampleMatchesSamplingPerPixel) {
  for (const char* mode : {"bilinear", "nearest"})
    for (const char* padding : {"zeros", "border", "reflection"})
      for (bool align : {false, true}) {
        Tensor input = rnd({2, 3, 5, 4});
        Tensor grid = (rand({2, 6, 7, 2}, kFloat64) * 3.2 - 1.6).to(dev());  // inside and outside the image
        Tensor got = F::grid_sample(
            input, grid, F::GridSampleFuncOptions().mode(mode).padding_mode(padding).align_corners(align));
        const std::string what = std::string(mode) + " " + padding + (align ? " align" : "");
        expect_close(got, grid_sample_ref(input, grid, mode, padding, align), 1e-12, 0, what);
        // the positional form, and float32
        Tensor f = F::grid_sample(input.to(kFloat32), grid.to(kFloat32), mode, padding, align);
        EXPECT_EQ(f.dtype(), kFloat32);
        expect_close(f, got, 2e-5, 0, what + " float32");
      }
  // non-contiguous input and grid
  Tensor input = rnd({2, 4, 5, 3}).permute({0, 3, 1, 2});
  Tensor grid = (rand({2, 2, 7, 6}, kFloat64) * 2.4 - 1.2).to(dev()).permute({0, 2, 3, 1});
  ASSERT_FALSE(input.is_contiguous());
  ASSERT_FALSE(grid.is_contiguous());
  expect_close(F::grid_sample(input, grid, F::GridSampleFuncOptions().padding_mode(wick::kReflection)),
               grid_sample_ref(input, grid, "bilinear", "reflection", false), 1e-12, 0, "non-contiguous");
}

TEST_P(VisionOnDevices, GridSampleOfTheIdentityGridIsTheInput) {
  Tensor input = randn({2, 3, 4, 5}).to(dev());
  Tensor id = tensor({{1.0, 0.0, 0.0}, {0.0, 1.0, 0.0}}).unsqueeze(0).expand({2, 2, 3}).to(dev());
  for (bool align : {false, true})
    for (auto mode : {std::string(wick::kBilinear), std::string(wick::kNearest)}) {
      Tensor grid = F::affine_grid(id, {2, 3, 4, 5}, align);
      expect_close(F::grid_sample(input, grid, F::GridSampleFuncOptions().mode(mode).align_corners(align)),
                   input, 1e-5, 0, mode);
    }
  // a shift by one pixel to the left with zeros padding: the last column is 0
  Tensor x = arange(6, TensorOptions(kFloat32)).view({1, 1, 2, 3}).to(dev());
  Tensor shift = tensor({{1.0, 0.0, 2.0 / 3.0}, {0.0, 1.0, 0.0}}).unsqueeze(0).to(dev());
  Tensor y = F::grid_sample(
      x, F::affine_grid(shift, {1, 1, 2, 3}, false),
      F::GridSampleFuncOptions().mode(wick::kBilinear).padding_mode(wick::kZeros).align_corners(false));
  expect_close(y, std::vector<double>{1, 2, 0, 4, 5, 0}, 1e-5);
  Tensor b = F::grid_sample(x, F::affine_grid(shift, {1, 1, 2, 3}, false),
                            F::GridSampleFuncOptions().padding_mode(wick::kBorder).align_corners(false));
  expect_close(b, std::vector<double>{1, 2, 2, 4, 5, 5}, 1e-5);
}

TEST_P(VisionOnDevices, GridSampleAtTheCornersAsPyTorch) {
  // [[1, 2], [3, 4]] sampled at the center and at the top-left corner (-1, -1): with
  // align_corners=false the corner is the outer edge of pixel (0, 0), half a pixel out
  Tensor x = tensor({{1.0, 2.0}, {3.0, 4.0}}).view({1, 1, 2, 2}).to(dev());
  Tensor grid = tensor({{0.0, 0.0}, {-1.0, -1.0}, {1.0, -1.0}}).view({1, 1, 3, 2}).to(dev());
  auto at = [&](const std::string& mode, const std::string& padding, bool align) {
    return F::grid_sample(x, grid,
                          F::GridSampleFuncOptions().mode(mode).padding_mode(padding).align_corners(align));
  };
  expect_close(at("bilinear", "zeros", false), std::vector<double>{2.5, 0.25, 0.5});
  expect_close(at("bilinear", "border", false), std::vector<double>{2.5, 1, 2});
  expect_close(at("bilinear", "reflection", false), std::vector<double>{2.5, 1, 2});
  expect_close(at("bilinear", "zeros", true), std::vector<double>{2.5, 1, 2});
  expect_close(at("nearest", "zeros", true), std::vector<double>{1, 1, 2});  // 0.5 rounds to even: 0
  // the default options: bilinear, zeros, align_corners false
  expect_close(F::grid_sample(x, grid), std::vector<double>{2.5, 0.25, 0.5});
}

TEST_P(VisionOnDevices, GridSampleGradients) {
  for (const char* padding : {"zeros", "border", "reflection"})
    for (bool align : {false, true}) {
      Tensor input = randn({2, 2, 4, 5}, kFloat64).requires_grad_();
      Tensor grid = (rand({2, 3, 4, 2}, kFloat64) * 2.6 - 1.3).requires_grad_();
      wick::testing::gradcheck(
          [=](const TL& v) { return F::grid_sample(v[0], v[1], "bilinear", padding, align); }, {input, grid},
          dev());
    }
  // nearest: the input's gradient (each output pixel's value goes back to the pixel it read)
  Tensor input = randn({1, 2, 4, 5}, kFloat64).requires_grad_();
  Tensor grid = rand({1, 3, 3, 2}, kFloat64) * 2.2 - 1.1;
  wick::testing::gradcheck([=](const TL& v) { return F::grid_sample(v[0], v[1], "nearest", "zeros", false); },
                           {input, grid}, dev());
}

TEST_P(VisionOnDevices, Errors) {
  Tensor x = rnd({1, 2, 4, 4});
  EXPECT_TRUE(names([&] { F::unfold(x, F::UnfoldFuncOptions(0)); }, "unfold"));
  EXPECT_TRUE(names([&] { F::unfold(x, F::UnfoldFuncOptions(2).stride(0)); }, "unfold"));
  EXPECT_TRUE(names([&] { F::unfold(x, F::UnfoldFuncOptions(2).padding(-1)); }, "unfold"));
  EXPECT_TRUE(names([&] { F::unfold(x, F::UnfoldFuncOptions(5)); }, "unfold"));  // no block fits
  EXPECT_TRUE(names([&] { F::unfold(rnd({4, 4}), F::UnfoldFuncOptions(2)); }, "unfold"));
  EXPECT_THROW(F::unfold(rnd({2, 4, 4, 4, 4}), F::UnfoldFuncOptions(2)), ValueError);
  EXPECT_EQ(
      wick::testing::error_of([&] { F::unfold(x, F::UnfoldFuncOptions(5)); }),
      "[unfold] Given input with spatial size (4, 4), kernel_size=(5, 5), dilation=(1, 1), padding=(0, 0), "
      "calculated shape of the array of sliding blocks as (0, 0), but its components must be at least one.");
  Tensor cols = rnd({1, 8, 9});
  EXPECT_NO_THROW(F::fold(cols, F::FoldFuncOptions(4, 2)));
  EXPECT_TRUE(names([&] { F::fold(rnd({1, 7, 9}), F::FoldFuncOptions(4, 2)); }, "fold"));  // 7 % 4
  EXPECT_TRUE(names([&] { F::fold(rnd({1, 8, 8}), F::FoldFuncOptions(4, 2)); }, "fold"));  // 8 blocks, not 9
  EXPECT_TRUE(names([&] { F::fold(rnd({8}), F::FoldFuncOptions(4, 2)); }, "fold"));
  EXPECT_EQ(
      wick::testing::error_of([&] {
        F::fold(rnd({1, 8, 8}), F::FoldFuncOptions(4, 2));
      }),
      "[fold] Given output_size=(4, 4), kernel_size=(2, 2), dilation=(1, 1), padding=(0, 0), stride=(1, 1), "
      "expected size of input's dimension 2 to match the calculated number of sliding blocks 3 * 3 = 9, but "
      "got input.size(2) = 8.");

  Tensor g = rnd({1, 3, 3, 2});
  EXPECT_THROW(F::grid_sample(x, g, F::GridSampleFuncOptions().mode("linear")), ValueError);
  EXPECT_TRUE(names([&] { F::grid_sample(x, g, F::GridSampleFuncOptions().mode("linear")); }, "grid_sample"));
  EXPECT_TRUE(names([&] { F::grid_sample(x, g, F::GridSampleFuncOptions().padding_mode("circular")); },
                    "grid_sample"));
  EXPECT_THROW(F::grid_sample(x, g, F::GridSampleFuncOptions().mode(wick::kBicubic)), NotImplementedError);
  EXPECT_THROW(F::grid_sample(x, g.to(kFloat32)), TypeError);
  EXPECT_THROW(F::grid_sample(x, rnd({2, 3, 3, 2})), ValueError);  // batch sizes
  EXPECT_THROW(F::grid_sample(x, rnd({1, 3, 3, 3})), ValueError);  // (x, y)
  EXPECT_THROW(F::grid_sample(rnd({2, 4, 4}), rnd({2, 3, 2})), ValueError);
  EXPECT_TRUE(names([&] { F::grid_sample(rnd({1, 2, 0, 4}), g); }, "grid_sample"));
  EXPECT_THROW(F::affine_grid(rnd({1, 2, 3}), {1, 1, 4}), NotImplementedError);
  EXPECT_THROW(F::affine_grid(rnd({1, 3, 3}), {1, 1, 4, 4}), ValueError);
  EXPECT_THROW(F::affine_grid(rnd({1, 2, 3}).to(kInt64), {1, 1, 4, 4}), ValueError);
  EXPECT_THROW(F::affine_grid(rnd({1, 2, 3}), {1, 1, 0, 4}), ValueError);
  EXPECT_TRUE(names([&] { F::affine_grid(rnd({1, 3, 3}), {1, 1, 4, 4}); }, "affine_grid"));
}

WICK_INSTANTIATE_ON_DEVICES(VisionOnDevices);

TEST(VisionModules, UnfoldAndFoldAsPyTorchDocumentsThem) {
  // torch.nn.Unfold's and Fold's documented examples
  nn::Unfold unfold(nn::UnfoldOptions({2, 3}));
  EXPECT_EQ(unfold(randn({2, 5, 3, 4})).sizes().vec(), (std::vector<int64_t>{2, 30, 4}));
  EXPECT_EQ(wick::testing::repr(*unfold), "Unfold(kernel_size=(2, 3), dilation=1, padding=0, stride=1)");
  nn::Fold fold(nn::FoldOptions({4, 5}, {2, 2}));
  EXPECT_EQ(fold(randn({1, 3 * 2 * 2, 12})).sizes().vec(), (std::vector<int64_t>{1, 3, 4, 5}));
  EXPECT_EQ(wick::testing::repr(*fold),
            "Fold(output_size=(4, 5), kernel_size=(2, 2), dilation=1, padding=0, stride=1)");
  nn::Unfold u2(nn::UnfoldOptions(2).dilation(2).padding({1, 0}).stride(2));
  EXPECT_EQ(wick::testing::repr(*u2), "Unfold(kernel_size=2, dilation=2, padding=(1, 0), stride=2)");
  nn::Fold f2(3, 2);
  EXPECT_EQ(wick::testing::repr(*f2), "Fold(output_size=3, kernel_size=2, dilation=1, padding=0, stride=1)");
  // options read as LibTorch's ExpandingArray<2>
  EXPECT_EQ(u2->options.padding()->at(0), 1);
  EXPECT_EQ((*fold->options.output_size())[1], 5);
  // the modules are the functions
  Tensor x = randn({1, 2, 5, 5});
  expect_close(u2(x), F::unfold(x, F::UnfoldFuncOptions(2).dilation(2).padding({1, 0}).stride(2)), 0, 0);
  // positional forms of the functions
  expect_close(F::unfold(x, 2, 1, 1, 2), F::unfold(x, F::UnfoldFuncOptions(2).padding(1).stride(2)), 0, 0);
  expect_close(F::fold(randn({1, 8, 9}).fill_(1.0), {4, 4}, 2),
               overlap_count(4, 4, {2, 2, 1, 1, 0, 0, 1, 1}).expand({1, 2, 4, 4}), 0, 0);
}
