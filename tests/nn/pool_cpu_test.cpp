// max_pool2d on the CPU: the CPU kernel for float32/float64 (direct loops over the windows) and
// core's generic windows implementation (what the other dtypes and an empty kernel-table entry
// get): values and the input gradient against loops in double written here, over kernel,
// stride, padding, dilation and ceil_mode, with ties (the first maximum takes the gradient) and
// NaN.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "core/pool.h"
#include "nn_test_util.h"
#include "wick/wick.h"

using namespace wick;
namespace F = wick::nn::functional;
using wick::testing::expect_close;

namespace {

struct Pool {
  int64_t n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw;
  bool ceil_mode;
};

int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  const int64_t num = in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  int64_t out = num / s + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

// Max of each window (the first NaN, else the first maximum) and the gradient dy sent to it.
void reference(const Pool& k, const std::vector<double>& x, const std::vector<double>& dy,
               std::vector<double>& y, std::vector<double>& dx) {
  const int64_t oh = pool_out(k.h, k.kh, k.sh, k.ph, k.dh, k.ceil_mode);
  const int64_t ow = pool_out(k.w, k.kw, k.sw, k.pw, k.dw, k.ceil_mode);
  y.assign(size_t(k.n * k.c * oh * ow), 0);
  dx.assign(x.size(), 0);
  for (int64_t p = 0; p < k.n * k.c; ++p)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox) {
        double best = -std::numeric_limits<double>::infinity();
        int64_t at = -1;
        for (int64_t i = 0; i < k.kh; ++i)
          for (int64_t j = 0; j < k.kw; ++j) {
            const int64_t iy = oy * k.sh - k.ph + i * k.dh, ix = ox * k.sw - k.pw + j * k.dw;
            if (iy < 0 || iy >= k.h || ix < 0 || ix >= k.w) continue;
            const int64_t e = (p * k.h + iy) * k.w + ix;
            if (std::isnan(best)) continue;
            if (at < 0 || std::isnan(x[size_t(e)]) || x[size_t(e)] > best) best = x[size_t(e)], at = e;
          }
        const size_t o = size_t((p * oh + oy) * ow + ox);
        y[o] = best;
        dx[size_t(at)] += dy[o];
      }
}

const std::vector<Pool> kCases = {
    // n c  h  w kh kw sh sw ph pw dh dw ceil
    {2, 3, 8, 8, 2, 2, 2, 2, 0, 0, 1, 1, false},  // the CNN's pooling
    {2, 2, 7, 9, 2, 2, 2, 2, 0, 0, 1, 1, false},  // the same, odd sizes (the last row and column unused)
    {2, 2, 7, 9, 2, 2, 2, 2, 0, 0, 1, 1, true},   // ceil_mode: windows cut by the edge
    {2, 2, 7, 9, 3, 3, 2, 2, 1, 1, 1, 1, false},  // overlapping windows, padding
    {1, 3, 7, 7, 2, 3, 2, 1, 1, 1, 2, 1, true},   // dilation, ceil_mode
    {2, 2, 5, 6, 3, 2, 3, 2, 1, 0, 1, 2, true},   // windows past the edge
    {1, 1, 4, 4, 4, 4, 1, 1, 0, 0, 1, 1, false},  // one window
};

void check(const Pool& k, Dtype dtype, bool strided) {
  SCOPED_TRACE(::testing::Message() << k.h << "x" << k.w << " k" << k.kh << "x" << k.kw << " s" << k.sh << ","
                                    << k.sw << " p" << k.ph << "," << k.pw << " d" << k.dh << "," << k.dw
                                    << (k.ceil_mode ? " ceil" : "") << " " << dtype
                                    << (strided ? " strided" : ""));
  // Small integers: many ties inside a window.
  Tensor x = randint(-3, 4, {k.n, k.c, k.h, k.w}, TensorOptions(kInt64)).to(dtype);
  const int64_t oh = pool_out(k.h, k.kh, k.sh, k.ph, k.dh, k.ceil_mode);
  const int64_t ow = pool_out(k.w, k.kw, k.sw, k.pw, k.dw, k.ceil_mode);
  Tensor dy = randn({k.n, k.c, oh, ow}, TensorOptions(dtype));
  std::vector<double> y_ref, dx_ref;
  reference(k, x.to_vector<double>(), dy.to_vector<double>(), y_ref, dx_ref);

  Tensor xi = strided ? x.transpose(2, 3).contiguous().transpose(2, 3) : x.clone();
  if (strided) {
    EXPECT_FALSE(xi.is_contiguous());
  }
  xi.requires_grad_();
  Tensor y = F::max_pool2d(xi, {k.kh, k.kw}, F::Pair{k.sh, k.sw}, {k.ph, k.pw}, {k.dh, k.dw}, k.ceil_mode);
  EXPECT_EQ(y.grad_fn()->name(), "MaxPool2DWithIndicesBackward0");
  EXPECT_EQ(y.dtype(), dtype);
  expect_close(y.reshape({-1}), y_ref, 0, "y");
  y.backward(dy);
  expect_close(xi.grad().reshape({-1}), dx_ref, 1e-6, "dx");
  // Without grad the same values.
  NoGradGuard no_grad;
  expect_close(F::max_pool2d(x, {k.kh, k.kw}, F::Pair{k.sh, k.sw}, {k.ph, k.pw}, {k.dh, k.dw}, k.ceil_mode)
                   .reshape({-1}),
               y_ref, 0, "y without grad");
}

TEST(MaxPool2dCpu, MatchesLoops) {
  manual_seed(11);
  for (const Pool& k : kCases)
    for (Dtype dtype : {kFloat32, kFloat64})
      for (bool strided : {false, true}) check(k, dtype, strided);
}

// The geometry nn::functional builds (no padding beyond what the cases need).
detail::Pool2dGeometry geometry(const Pool& k) {
  detail::Pool2dGeometry g{k.kh, k.kw, k.sh, k.sw, k.ph, k.pw, k.dh, k.dw, 0, 0, 0, 0};
  g.oh = pool_out(k.h, k.kh, k.sh, k.ph, k.dh, k.ceil_mode);
  g.ow = pool_out(k.w, k.kw, k.sw, k.pw, k.dw, k.ceil_mode);
  g.hp = std::max(k.h + 2 * k.ph, (g.oh - 1) * k.sh + k.dh * (k.kh - 1) + 1);
  g.wp = std::max(k.w + 2 * k.pw, (g.ow - 1) * k.sw + k.dw * (k.kw - 1) + 1);
  return g;
}


// The generic implementation called directly (float64, contiguous and strided input), and
// through nn::functional for bfloat16, a dtype the CPU kernel hands to it: both against the
// reference, so the two CPU paths agree with each other too.
TEST(MaxPool2dCpu, GenericMatchesLoops) {
  manual_seed(12);
  for (const Pool& k : kCases) {
    SCOPED_TRACE(::testing::Message()
                 << k.h << "x" << k.w << " k" << k.kh << "x" << k.kw << " s" << k.sh << "," << k.sw << " p"
                 << k.ph << "," << k.pw << " d" << k.dh << "," << k.dw << (k.ceil_mode ? " ceil" : ""));
    const detail::Pool2dGeometry g = geometry(k);
    Tensor x = randint(-3, 4, {k.n, k.c, k.h, k.w}, TensorOptions(kInt64)).to(kFloat64);
    // Integer gradients: exact in bfloat16 and in their sums.
    Tensor dy = randint(-4, 5, {k.n, k.c, g.oh, g.ow}, TensorOptions(kInt64)).to(kFloat64);
    std::vector<double> y_ref, dx_ref;
    reference(k, x.to_vector<double>(), dy.to_vector<double>(), y_ref, dx_ref);
    for (bool strided : {false, true}) {
      Tensor xi = strided ? x.transpose(2, 3).contiguous().transpose(2, 3) : x;
      auto [values, offsets] = detail::generic_max_pool2d_forward(xi, g);
      expect_close(values.reshape({-1}), y_ref, 0, "generic y");
      EXPECT_EQ(offsets.dtype(), kInt64);
      expect_close(detail::generic_max_pool2d_backward(dy, offsets, x.sizes(), g).reshape({-1}), dx_ref, 0,
                   "generic dx");
      // The CPU kernel's values and offsets are the generic one's.
      auto [cpu_values, cpu_offsets] = detail::cpu_kernels().max_pool2d_forward(xi, g);
      expect_close(cpu_values.reshape({-1}), y_ref, 0, "cpu y");
      expect_close(cpu_offsets.reshape({-1}), offsets.reshape({-1}), 0, 0, "offsets");
    }
    Tensor xb = x.to(kBFloat16).requires_grad_();
    Tensor y = F::max_pool2d(xb, {k.kh, k.kw}, F::Pair{k.sh, k.sw}, {k.ph, k.pw}, {k.dh, k.dw}, k.ceil_mode);
    EXPECT_EQ(y.grad_fn()->name(), "MaxPool2DWithIndicesBackward0");
    EXPECT_EQ(y.dtype(), kBFloat16);
    expect_close(y.reshape({-1}), y_ref, 0, "bfloat16 y");
    y.backward(dy.to(kBFloat16));
    expect_close(xb.grad().reshape({-1}), dx_ref, 0, "bfloat16 dx");
  }
}

// A NaN in a window is its max and takes the gradient; with two NaNs, the first (the 2x2
// windows of the CNN's pooling, and 3x3 ones with padding).
TEST(MaxPool2dCpu, NaNWins) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = tensor<float>({1, nan, 5, 2, 3, nan, nan, 4}).view({1, 1, 2, 4}).requires_grad_();
  Tensor y = F::max_pool2d(x, 2);
  auto v = y.detach().to_vector<float>();
  ASSERT_EQ(v.size(), 2u);
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_TRUE(std::isnan(v[1]));
  y.backward(tensor<float>({10, 20}).view({1, 1, 1, 2}));
  expect_close(x.grad().reshape({-1}), std::vector<double>{0, 10, 0, 0, 0, 0, 20, 0}, 0);

  // [[1, 2, 3], [nan, 5, 6], [7, 8, 9]]: only the windows of the right column miss the NaN.
  Tensor z = tensor<float>({1, 2, 3, nan, 5, 6, 7, 8, 9}).view({1, 1, 3, 3}).requires_grad_();
  Tensor m = F::max_pool2d(z, 3, 1, 1);
  auto mv = m.detach().to_vector<float>();
  for (int i : {0, 1, 3, 4, 6, 7}) EXPECT_TRUE(std::isnan(mv[size_t(i)])) << i;
  EXPECT_EQ(mv[2], 6.f);
  EXPECT_EQ(mv[5], 9.f);
  EXPECT_EQ(mv[8], 9.f);
  m.sum().backward();
  expect_close(z.grad().reshape({-1}), std::vector<double>{0, 0, 0, 6, 0, 1, 0, 0, 2}, 0);
}

}  // namespace
