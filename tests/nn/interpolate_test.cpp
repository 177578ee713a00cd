// nn::functional::interpolate and nn::Upsample: values against float64 references written out
// here with nested loops over the output (PyTorch's source-index formulas: nearest
// floor(dst * scale) in float, nearest-exact floor((dst + 0.5) * scale), linear with and without
// align_corners, clamped at 0), PyTorch's values for small cases, gradients by gradcheck, the
// errors PyTorch raises, LibTorch's option spellings, and CUDA against the CPU.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../autograd/gradcheck.h"
#include "nn_test_util.h"
#include "wick/wick.h"

using namespace wick;
using wick::testing::error_of;
using wick::testing::expect_close;
using wick::testing::gradcheck;
using wick::testing::test_devices;
using TL = std::vector<Tensor>;
namespace F = wick::nn::functional;

namespace {

// One spatial dim of the reference: the two source positions of output position o and the
// weight of the second (nearest: both the same, weight 0).
struct Taps {
  std::vector<int64_t> i0, i1;
  std::vector<double> w1;
};

// scale: the scale_factor the resampling uses (none: in / out).
Taps ref_taps(const std::string& mode, int64_t in, int64_t out, std::optional<double> scale, bool align) {
  Taps t;
  for (int64_t o = 0; o < out; ++o) {
    if (mode == "nearest" || mode == "nearest-exact") {
      const float s = scale ? float(1.0 / *scale) : float(in) / float(out);
      double pos = mode == "nearest" ? std::floor(float(o) * s) : std::floor(float((o + 0.5) * s));
      int64_t i = std::min<int64_t>(int64_t(pos), in - 1);
      if (mode == "nearest" && out == in) i = o;
      t.i0.push_back(i);
      t.i1.push_back(i);
      t.w1.push_back(0);
      continue;
    }
    double real;
    if (align) {
      real = out > 1 ? double(o) * double(in - 1) / double(out - 1) : 0.0;
    } else {
      const double s = scale ? 1.0 / *scale : double(in) / double(out);
      real = std::max((o + 0.5) * s - 0.5, 0.0);
    }
    const int64_t a = int64_t(std::floor(real));
    t.i0.push_back(a);
    t.i1.push_back(std::min(a + 1, in - 1));
    t.w1.push_back(real - double(a));
  }
  return t;
}

// The reference output: every output element a weighted sum over the 2^k corners of its cell.
Tensor reference(const Tensor& x, const std::vector<int64_t>& out, const std::vector<std::optional<double>>& scales,
                 const std::string& mode, bool align) {
  const Tensor xc = x.detach().cpu().to(kFloat64).contiguous();
  const std::vector<double> xv = xc.to_vector<double>();
  const int64_t k = x.dim() - 2, nc = x.size(0) * x.size(1);
  std::vector<int64_t> in(static_cast<size_t>(k)), sizes{x.size(0), x.size(1)};
  std::vector<Taps> taps;
  for (int64_t d = 0; d < k; ++d) {
    in[size_t(d)] = x.size(d + 2);
    taps.push_back(ref_taps(mode, in[size_t(d)], out[size_t(d)], scales[size_t(d)], align));
    sizes.push_back(out[size_t(d)]);
  }
  int64_t in_plane = 1, out_plane = 1;
  for (int64_t d = 0; d < k; ++d) in_plane *= in[size_t(d)], out_plane *= out[size_t(d)];
  std::vector<double> y(size_t(nc * out_plane));
  for (int64_t p = 0; p < nc; ++p) {
    for (int64_t flat = 0; flat < out_plane; ++flat) {
      std::vector<int64_t> pos(static_cast<size_t>(k));
      for (int64_t d = k - 1, r = flat; d >= 0; --d) pos[size_t(d)] = r % out[size_t(d)], r /= out[size_t(d)];
      double acc = 0;
      for (int corner = 0; corner < (1 << k); ++corner) {
        double w = 1;
        int64_t src = 0;
        for (int64_t d = 0; d < k; ++d) {
          const Taps& t = taps[size_t(d)];
          const size_t o = size_t(pos[size_t(d)]);
          const bool second = (corner >> d) & 1;
          w *= second ? t.w1[o] : 1 - t.w1[o];
          src = src * in[size_t(d)] + (second ? t.i1[o] : t.i0[o]);
        }
        acc += w * xv[size_t(p * in_plane + src)];
      }
      y[size_t(p * out_plane + flat)] = acc;
    }
  }
  return from_blob(y.data(), {int64_t(y.size())}, TensorOptions(kFloat64)).clone().view(sizes);
}

std::string mode_for(int64_t dims) { return dims == 1 ? "linear" : dims == 2 ? "bilinear" : "trilinear"; }

// An input of sizes [2, 3, s...] that is not contiguous: every other element of the last dim
// of a wider tensor, seen through a transpose of N and C.
Tensor strided_input(const std::vector<int64_t>& spatial, Dtype dtype) {
  std::vector<int64_t> sz{3, 2};
  sz.insert(sz.end(), spatial.begin(), spatial.end());
  sz.back() *= 2;
  Tensor big = randn(sz, TensorOptions(kFloat64)).to(dtype);
  Tensor x = big.slice(-1, 0, sz.back(), 2).transpose(0, 1);
  EXPECT_FALSE(x.is_contiguous());
  return x;
}

TEST(Interpolate, PyTorchValues) {
  Tensor x = arange(4, TensorOptions(kFloat32)).view({1, 1, 2, 2});
  expect_close(F::interpolate(x, {}, {2.0}, "bilinear", false),
               std::vector<double>{0, 0.25, 0.75, 1, 0.5, 0.75, 1.25, 1.5, 1.5, 1.75, 2.25, 2.5, 2, 2.25, 2.75, 3});
  expect_close(F::interpolate(x, {4, 4}, {}, "bilinear", true),
               std::vector<double>{0, 1. / 3, 2. / 3, 1, 2. / 3, 1, 4. / 3, 5. / 3, 4. / 3, 5. / 3, 2, 7. / 3, 2,
                                   7. / 3, 8. / 3, 3});
  expect_close(F::interpolate(x, {}, {2.0, 2.0}),
               std::vector<double>{0, 0, 1, 1, 0, 0, 1, 1, 2, 2, 3, 3, 2, 2, 3, 3}, 0);
  Tensor l = tensor({0.0f, 1.0f, 2.0f}).view({1, 1, 3});
  expect_close(F::interpolate(l, {5}), std::vector<double>{0, 0, 1, 1, 2}, 0);
  expect_close(F::interpolate(l, {5}, {}, "nearest-exact"), std::vector<double>{0, 0, 1, 2, 2}, 0);
  expect_close(F::interpolate(l, {5}, {}, "linear"), std::vector<double>{0, 0.4, 1, 1.6, 2});
  expect_close(F::interpolate(l, {5}, {}, "linear", true), std::vector<double>{0, 0.5, 1, 1.5, 2});
  expect_close(F::interpolate(l, {2}, {}, "linear"), std::vector<double>{0.25, 1.75});
}

TEST(Interpolate, RandomAgainstReference) {
  manual_seed(3);
  const std::vector<std::vector<int64_t>> inputs{{5}, {4, 5}, {3, 4, 2}};
  for (Dtype dtype : {kFloat64, kFloat32}) {
    const double tol = dtype == kFloat64 ? 1e-12 : 2e-5;
    for (const auto& spatial : inputs) {
      const int64_t k = int64_t(spatial.size());
      Tensor x = strided_input(spatial, dtype);
      for (const std::string& mode : {std::string("nearest"), std::string("nearest-exact"), mode_for(k)}) {
        const bool lin = mode == mode_for(k);
        for (int align = 0; align < (lin ? 2 : 1); ++align) {
          std::optional<bool> ac = lin ? std::optional<bool>(align == 1) : std::nullopt;
          // by size: up, down and mixed
          for (int64_t grow : {3, -1}) {
            std::vector<int64_t> out;
            for (int64_t d = 0; d < k; ++d) out.push_back(std::max<int64_t>(1, spatial[size_t(d)] + grow * (d + 1)));
            SCOPED_TRACE(mode + " size " + std::to_string(grow) + " align " + std::to_string(align));
            Tensor y = F::interpolate(x, out, {}, mode, ac);
            EXPECT_EQ(y.dtype(), dtype);
            expect_close(y, reference(x, out, std::vector<std::optional<double>>(size_t(k)), mode, align == 1), tol, tol);
          }
          // by scale factor: the factor itself is the source scale, unless recomputed
          for (double sf : {1.7, 0.6, 2.0}) {
            for (int rec = 0; rec < 2; ++rec) {
              SCOPED_TRACE(mode + " scale " + std::to_string(sf) + " recompute " + std::to_string(rec));
              std::vector<int64_t> out;
              std::vector<std::optional<double>> scales;
              for (int64_t d = 0; d < k; ++d) {
                out.push_back(int64_t(std::floor(double(spatial[size_t(d)]) * sf)));
                scales.push_back(rec ? std::nullopt : std::optional<double>(sf));
              }
              Tensor y = F::interpolate(x, {}, std::vector<double>(size_t(k), sf), mode, ac, rec == 1);
              expect_close(y, reference(x, out, scales, mode, align == 1), tol, tol);
            }
          }
        }
      }
    }
  }
}

TEST(Interpolate, Dtypes) {
  Tensor i = arange(12, TensorOptions(kInt64)).view({1, 2, 2, 3});
  Tensor y = F::interpolate(i, {3, 5});
  EXPECT_EQ(y.dtype(), kInt64);
  expect_close(y, reference(i, {3, 5}, {std::nullopt, std::nullopt}, "nearest", false), 0, 0);
  Tensor u = i.to(kUInt8);
  EXPECT_EQ(F::interpolate(u, {}, {2.0}, "nearest-exact").dtype(), kUInt8);
  expect_close(F::interpolate(u, {}, {2.0}, "nearest-exact"),
               reference(u, {4, 6}, {2.0, 2.0}, "nearest-exact", false), 0, 0);
  for (Dtype low : {kFloat16, kBFloat16}) {
    Tensor x = randn({1, 2, 3, 4}, TensorOptions(kFloat64)).to(low);
    Tensor h = F::interpolate(x, {5, 7}, {}, "bilinear");
    EXPECT_EQ(h.dtype(), low);
    expect_close(h, reference(x, {5, 7}, {std::nullopt, std::nullopt}, "bilinear", false), 2e-2, 2e-2);
  }
  // the result is a new tensor even when nothing moves
  Tensor x = randn({1, 1, 3});
  Tensor same = F::interpolate(x, {3});
  expect_close(same, x, 0, 0);
  same.add_(1);
  EXPECT_NE(same.to_vector<float>()[0], x.to_vector<float>()[0]);
}

TEST(Interpolate, Gradcheck) {
  manual_seed(5);
  for (Device d : test_devices()) {
    SCOPED_TRACE(d.str());
    Tensor x3 = randn({2, 2, 4}, TensorOptions(kFloat64)).requires_grad_();
    Tensor x4 = randn({1, 2, 3, 4}, TensorOptions(kFloat64)).requires_grad_();
    Tensor x5 = randn({1, 1, 2, 3, 2}, TensorOptions(kFloat64)).requires_grad_();
    gradcheck([](const TL& a) { return F::interpolate(a[0], {7}); }, {x3}, d);
    gradcheck([](const TL& a) { return F::interpolate(a[0], {3}, {}, "nearest-exact"); }, {x3}, d);
    gradcheck([](const TL& a) { return F::interpolate(a[0], {}, {1.5}, "linear"); }, {x3}, d);
    gradcheck([](const TL& a) { return F::interpolate(a[0], {5, 3}, {}, "bilinear", false); }, {x4}, d);
    gradcheck([](const TL& a) { return F::interpolate(a[0], {5, 7}, {}, "bilinear", true); }, {x4}, d);
    gradcheck([](const TL& a) { return F::interpolate(a[0], {}, {2.0, 2.0}); }, {x4}, d);
    gradcheck([](const TL& a) { return F::interpolate(a[0], {3, 4, 3}, {}, "trilinear"); }, {x5}, d);
  }
}

TEST(Interpolate, Errors) {
  Tensor x = randn({1, 2, 3, 4});
  auto starts = [](const std::string& msg, const std::string& prefix) { return msg.rfind(prefix, 0) == 0; };
  EXPECT_TRUE(starts(error_of([&] { F::interpolate(x, {4, 4}, {}, "nearest", false); }),
                     "[interpolate] align_corners option can only be set with the interpolating modes"));
  EXPECT_TRUE(starts(error_of([&] { F::interpolate(x, {4, 4}, {2.0}); }),
                     "[interpolate] only one of size or scale_factor should be defined"));
  EXPECT_TRUE(starts(error_of([&] { F::interpolate(x); }), "[interpolate] either size or scale_factor should be defined"));
  EXPECT_TRUE(starts(error_of([&] { F::interpolate(x, {4, 4, 4}); }),
                     "[interpolate] Input and output must have the same number of spatial dimensions, but got input "
                     "with spatial dimensions of [3, 4] and output size of [4, 4, 4]"));
  EXPECT_TRUE(starts(error_of([&] { F::interpolate(x, {}, {2.0, 2.0, 2.0}); }),
                     "[interpolate] Input and scale_factor must have the same number of spatial dimensions"));
  EXPECT_TRUE(starts(error_of([&] { F::interpolate(x, {4, 4}, {}, "nearest", std::nullopt, true); }),
                     "[interpolate] recompute_scale_factor is not meaningful with an explicit size."));
  EXPECT_TRUE(starts(error_of([&] { F::interpolate(randn({1, 2, 3}), {4}, {}, "bilinear"); }),
                     "[interpolate] Got 3D input, but bilinear mode needs 4D input"));
  EXPECT_TRUE(starts(error_of([&] { F::interpolate(x, {4, 4}, {}, "linear"); }),
                     "[interpolate] Got 4D input, but linear mode needs 3D input"));
  EXPECT_TRUE(starts(error_of([&] { F::interpolate(randn({2, 3}), {4, 4}); }),
                     "[interpolate] Input and output must have the same number of spatial dimensions"));
  EXPECT_TRUE(starts(error_of([&] { F::interpolate(randn({2, 3}), std::vector<int64_t>{}, {}); }),
                     "[interpolate] either size or scale_factor"));
  EXPECT_TRUE(starts(error_of([&] { F::interpolate(randn({1, 1, 1, 1, 1, 1}), {2, 2, 2, 2}); }),
                     "[interpolate] Input Error: Only 3D, 4D and 5D input Tensors supported (got 6D)"));
  EXPECT_TRUE(starts(error_of([&] { F::interpolate(x, {4, 4}, {}, "cubic"); }), "[interpolate] Input Error:"));
  EXPECT_TRUE(starts(error_of([&] { F::interpolate(x, {4, 4}, {}, "bicubic"); }), "[interpolate] mode 'bicubic'"));
  EXPECT_TRUE(starts(error_of([&] { F::interpolate(x, {4, 4}, {}, "bilinear", std::nullopt, std::nullopt, true); }),
                     "[interpolate] antialias"));
  EXPECT_TRUE(starts(error_of([&] { F::interpolate(x.to(kInt64), {4, 4}, {}, "bilinear"); }),
                     "[interpolate] mode 'bilinear' is not implemented for int64"));
  EXPECT_TRUE(starts(error_of([&] { F::interpolate(x, {0, 4}); }),
                     "[interpolate] Input and output sizes should be greater than 0"));
  EXPECT_TRUE(starts(error_of([&] { F::interpolate(randn({1, 0, 3, 4}), {4, 4}); }), "[interpolate] Non-empty 4D"));
  EXPECT_THROW(F::interpolate(x, {4, 4}, {}, "nearest", false), ValueError);
  EXPECT_THROW(F::interpolate(x, {4, 4}, {}, "bicubic"), NotImplementedError);
  // a batch of zero is fine
  EXPECT_EQ(F::interpolate(randn({0, 2, 3, 4}), {5, 6}).sizes().vec(), (std::vector<int64_t>{0, 2, 5, 6}));
}

TEST(Interpolate, LibTorchSpellings) {
  manual_seed(9);
  Tensor x = randn({2, 3, 4, 5});
  Tensor y = F::interpolate(
      x, F::InterpolateFuncOptions().size(std::vector<int64_t>{7, 3}).mode(wick::kBilinear).align_corners(false));
  expect_close(y, reference(x, {7, 3}, {std::nullopt, std::nullopt}, "bilinear", false), 1e-5, 1e-5);
  Tensor z = F::interpolate(x, F::InterpolateFuncOptions()
                                   .scale_factor(std::vector<double>{1.5, 2})
                                   .mode(wick::kNearestExact)
                                   .recompute_scale_factor(true));
  expect_close(z, reference(x, {6, 10}, {std::nullopt, std::nullopt}, "nearest-exact", false), 0, 0);
  nn::Upsample up(nn::UpsampleOptions().scale_factor(std::vector<double>{2, 2}).mode(wick::kNearest));
  expect_close(up(x), F::interpolate(x, {}, {2.0, 2.0}), 0, 0);
  EXPECT_EQ(up->extra_repr(), "scale_factor=(2.0, 2.0), mode='nearest'");
  nn::Upsample lin(nn::UpsampleOptions().size(std::vector<int64_t>{9}).mode(wick::kLinear).align_corners(true));
  Tensor l = randn({1, 2, 4});
  expect_close(lin->forward(l), reference(l, {9}, {std::nullopt}, "linear", true), 1e-5, 1e-5);
  EXPECT_EQ(lin->extra_repr(), "size=9, mode='linear'");
  EXPECT_EQ(nn::Upsample(nn::UpsampleOptions().scale_factor(std::vector<double>{2}).mode(wick::kTrilinear))
                ->extra_repr(),
            "scale_factor=2.0, mode='trilinear'");
  EXPECT_EQ(std::string(wick::kBicubic), "bicubic");
  EXPECT_EQ(std::string(wick::kArea), "area");
}

TEST(Interpolate, CudaMatchesCpu) {
  if (!cuda::is_available()) GTEST_SKIP() << "no GPU";
  manual_seed(11);
  Tensor x = randn({2, 3, 5, 6});
  for (const std::string mode : {"nearest", "nearest-exact", "bilinear"}) {
    SCOPED_TRACE(mode);
    Tensor c = x.to(Device(kCUDA, 0)).transpose(2, 3);
    Tensor y = F::interpolate(c, {9, 4}, {}, mode);
    EXPECT_EQ(y.device(), c.device());
    expect_close(y.cpu(), F::interpolate(x.transpose(2, 3), {9, 4}, {}, mode), 1e-5, 1e-5);
  }
  Tensor v = randn({1, 2, 3, 4, 5}).to(Device(kCUDA, 0));
  expect_close(F::interpolate(v, {}, {1.5}, "trilinear", true).cpu(),
               F::interpolate(v.cpu(), {}, {1.5}, "trilinear", true), 1e-5, 1e-5);
}

}  // namespace
