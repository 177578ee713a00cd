// add_layer_norm: {x + delta, layer_norm(x + delta) in dtype}. Values and gradients of x, delta,
// weight and bias against float64 references on every device, for each output dtype, with and
// without delta, parameters and a later use of the sum, rows of every length the kernels
// distinguish, a non-contiguous x; under autocast; the fallbacks (a delta of another dtype, a
// 16-bit x, a broadcast delta); the recorded node; double backward; errors. On CUDA the fused
// kernels against the composed ops they replace.
#include <cmath>
#include <optional>
#include <sstream>
#include <tuple>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "nn_test_util.h"
#include "wick/amp.h"
#include "wick/nn/functional.h"
#include "wick/wick.h"

using namespace wick;
using wick::testing::expect_close;
namespace F = wick::nn::functional;

namespace {

// 1 ulp of d's rounding, relative.
double ulp(Dtype d) { return d == kBFloat16 ? 1.0 / 128 : d == kFloat16 ? 1.0 / 1024 : 1.2e-7; }

struct Case {
  int64_t m, n;
  Dtype y;                    // the output dtype asked for
  bool delta;                 // a delta (of delta_dtype) or none
  Dtype delta_dtype;
  bool weight, bias;
  bool use_s;                 // the sum also reaches the loss (the residual stream going on)
  bool transposed = false;    // x a transposed view
};

std::string describe(const Case& c) {
  std::ostringstream os;
  os << "m=" << c.m << " n=" << c.n << " y=" << c.y << " delta=" << (c.delta ? c.delta_dtype : kBool)
     << " w=" << c.weight << " b=" << c.bias << " use_s=" << c.use_s << " t=" << c.transposed;
  return os.str();
}

// Runs the case on device; compares with float64 on the CPU from the same rounded inputs.
// Returns the node's name.
std::string check(const Case& c, Device device) {
  SCOPED_TRACE(describe(c));
  const double eps = 1e-5;
  std::vector<int64_t> shape = {c.m, c.n};
  if (c.transposed) shape = {c.n, c.m};
  Tensor xq = (randn(shape, TensorOptions(kFloat64)) * 2 + 0.5).to(kFloat32).to(kFloat64);
  Tensor dq = c.delta ? randn({c.m, c.n}, TensorOptions(kFloat64)).to(c.delta_dtype).to(kFloat64) : Tensor();
  Tensor wq = c.weight ? (randn({c.n}, TensorOptions(kFloat64)) + 1).to(kFloat32).to(kFloat64) : Tensor();
  Tensor bq = c.bias ? randn({c.n}, TensorOptions(kFloat64)).to(kFloat32).to(kFloat64) : Tensor();
  Tensor gy = randn({c.m, c.n}, TensorOptions(kFloat64)).to(c.y).to(kFloat64);
  Tensor gs = randn({c.m, c.n}, TensorOptions(kFloat64)).to(kFloat32).to(kFloat64);

  auto on = [&](const Tensor& t, Dtype d) { return t.defined() ? t.to(device, d, false, true).requires_grad_() : t; };
  Tensor x = on(xq, kFloat32), delta = on(dq, c.delta ? c.delta_dtype : kFloat32), w = on(wq, kFloat32),
         b = on(bq, kFloat32);
  Tensor xin = c.transposed ? x.t() : x;
  auto [s, y] = F::add_layer_norm(xin, delta, {c.n}, w, b, eps, c.y);
  EXPECT_EQ(y.dtype(), c.y);
  EXPECT_EQ(s.dtype(), c.delta ? promote_types(kFloat32, c.delta_dtype) : kFloat32);
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{c.m, c.n}));
  EXPECT_EQ(s.device(), device);
  EXPECT_EQ(y.device(), device);
  std::string node = y.grad_fn() ? y.grad_fn()->name() : "";
  Tensor loss = (y.to(kFloat32) * gy.to(device, kFloat32)).sum();
  if (c.use_s) loss = loss + (s.to(kFloat32) * gs.to(device, kFloat32)).sum();
  loss.backward();

  auto leaf = [](const Tensor& t) { return t.defined() ? t.clone().requires_grad_() : t; };
  Tensor rx = leaf(xq), rd = leaf(dq), rw = leaf(wq), rb = leaf(bq);
  Tensor rs = (c.transposed ? rx.t() : rx);
  if (rd.defined()) rs = rs + rd;
  Tensor rc = rs - rs.mean({1}, true);
  Tensor ry = rc * rsqrt((rc * rc).mean({1}, true) + eps);
  if (rw.defined()) ry = ry * rw;
  if (rb.defined()) ry = ry + rb;
  Tensor rloss = (ry * gy).sum();
  if (c.use_s) rloss = rloss + (rs * gs).sum();
  rloss.backward();

  const double yt = std::max(ulp(c.y), 1e-5);
  expect_close(s.to(kFloat64).cpu(), rs.detach(), 1e-6, 1e-6, "s");
  expect_close(y.to(kFloat64).cpu(), ry.detach(), 2 * yt, 2 * yt, "y");
  // The gradient reaching s is computed in float32 from gy's rounded values.
  const double gt = 2e-4;
  EXPECT_TRUE(x.grad().defined());
  if (!x.grad().defined()) return node;
  EXPECT_EQ(x.grad().dtype(), kFloat32);
  expect_close(x.grad().to(kFloat64).cpu(), rx.grad(), gt, gt, "dx");
  if (c.delta) {
    EXPECT_TRUE(delta.grad().defined());
    if (!delta.grad().defined()) return node;
    EXPECT_EQ(delta.grad().dtype(), c.delta_dtype);
    const double dt = std::max(2 * ulp(c.delta_dtype), gt);
    expect_close(delta.grad().to(kFloat64).cpu(), rd.grad(), dt, dt, "ddelta");
  }
  const double pt = gt * std::sqrt(double(c.m));
  if (c.weight) expect_close(w.grad().to(kFloat64).cpu(), rw.grad(), pt, gt, "dweight");
  if (c.bias) expect_close(b.grad().to(kFloat64).cpu(), rb.grad(), pt, gt, "dbias");
  return node;
}

class AddLayerNorm : public wick::testing::OnEachDevice<43> {};

TEST_P(AddLayerNorm, EveryOutputDtypeWithAndWithoutDelta) {
  for (Dtype yd : {kFloat32, kBFloat16, kFloat16})
    for (bool d : {false, true})
      for (bool use_s : {false, true}) {
        if (!d && use_s) continue;  // without delta, s is x itself
        const Case c{6, 40, yd, d, yd, true, true, use_s};
        const std::string node = check(c, dev());
        if (dev().is_cuda()) {
          EXPECT_EQ(node, "AddLayerNormBackward0") << describe(c);
        }
        if (dev().is_cpu()) {
          EXPECT_NE(node, "AddLayerNormBackward0");
        }
      }
}

TEST_P(AddLayerNorm, WithoutParameters) {
  for (bool w : {false, true})
    for (bool b : {false, true}) check({5, 24, kBFloat16, true, kBFloat16, w, b, true}, dev());
}

TEST_P(AddLayerNorm, RowsOfEveryLength) {
  // Rows in a warp's registers (one to four vectors a thread, and a length no vector divides),
  // in a block's, and longer than that.
  for (int64_t n : {7, 64, 256, 300, 512, 768, 1000, 1536, 4096, 5000})
    for (Dtype yd : {kFloat32, kBFloat16})
      check({9, n, yd, true, yd, true, true, true}, dev());
}

TEST_P(AddLayerNorm, NonContiguousInput) {
  check({12, 32, kBFloat16, true, kBFloat16, true, true, true, /*transposed=*/true}, dev());
  check({12, 32, kFloat16, false, kFloat16, true, false, false, /*transposed=*/true}, dev());
}

TEST_P(AddLayerNorm, OtherDtypesTakeTheComposedOps) {
  // A float32 delta with a 16-bit output, and a 16-bit delta with a float32 output.
  const Case a{4, 16, kBFloat16, true, kFloat32, true, true, true};
  EXPECT_NE(check(a, dev()), "AddLayerNormBackward0");
  const Case b{4, 16, kFloat32, true, kFloat16, true, true, true};
  EXPECT_NE(check(b, dev()), "AddLayerNormBackward0");
}

TEST_P(AddLayerNorm, BroadcastDeltaAndSixteenBitInput) {
  Tensor x = randn({3, 4, 8}, TensorOptions(kFloat32).device(dev()));
  Tensor d = randn({8}, TensorOptions(kFloat32).device(dev()));
  auto [s, y] = F::add_layer_norm(x, d, {8});
  expect_close(s.cpu(), (x + d).cpu(), 0, 0, "s");
  expect_close(y.cpu(), F::layer_norm(x + d, {8}).cpu(), 1e-6, 1e-6, "y");
  Tensor xh = x.to(kBFloat16), dh = randn({3, 4, 8}, TensorOptions(kBFloat16).device(dev()));
  auto [sh, yh] = F::add_layer_norm(xh, dh, {4, 8});
  EXPECT_EQ(sh.dtype(), kBFloat16);
  EXPECT_EQ(yh.dtype(), kBFloat16);
  expect_close(yh.to(kFloat32).cpu(), F::layer_norm(xh + dh, {4, 8}).to(kFloat32).cpu(), 0, 0, "y of bf16");
}

TEST_P(AddLayerNorm, UnderAutocastTheOutputIsAutocastsDtype) {
  Tensor x = randn({4, 32}, TensorOptions(kFloat32).device(dev()));
  Tensor w = randn({32}, TensorOptions(kFloat32).device(dev()));
  const Dtype ad = kBFloat16;
  Tensor d = randn({4, 32}, TensorOptions(ad).device(dev()));
  Tensor s, y;
  {
    AutocastGuard guard(dev().type(), ad);
    std::tie(s, y) = F::add_layer_norm(x, d, {32}, w);
  }
  EXPECT_EQ(s.dtype(), kFloat32);
  EXPECT_EQ(y.dtype(), ad);
  Tensor want = F::layer_norm(x + d.to(kFloat32), {32}, w).to(ad);
  expect_close(y.to(kFloat32).cpu(), want.to(kFloat32).cpu(), 0, 0, "y");
  // Outside autocast, the output keeps the sum's dtype.
  EXPECT_EQ(F::add_layer_norm(x, d, {32}, w).second.dtype(), kFloat32);
}

TEST_P(AddLayerNorm, DoubleBackward) {
  // The gradient of the input gradient's norm, against the composed ops' (float64 on the CPU).
  auto run = [&](Device device, Dtype dt, bool fused_form) {
    wick::manual_seed(5);
    Tensor x = randn({3, 16}, TensorOptions(kFloat64)).to(device, dt).requires_grad_();
    Tensor d = randn({3, 16}, TensorOptions(kFloat64)).to(device, dt).requires_grad_();
    Tensor w = (randn({16}, TensorOptions(kFloat64)) + 1).to(device, dt).requires_grad_();
    Tensor gy = randn({3, 16}, TensorOptions(kFloat64)).to(device, dt);
    Tensor s, y;
    if (fused_form) {
      std::tie(s, y) = F::add_layer_norm(x, d, {16}, w);
    } else {
      s = x + d;
      y = F::layer_norm(s, {16}, w);
    }
    Tensor loss = (y * gy).sum() + (s * s).sum();
    auto g = autograd::grad({loss}, {x, w}, {}, true, true);
    Tensor gg = (g[0] * g[0]).sum() + (g[1] * g[1]).sum();
    gg.backward();
    return std::vector<Tensor>{g[0].detach().cpu().to(kFloat64), x.grad().cpu().to(kFloat64),
                               d.grad().cpu().to(kFloat64), w.grad().cpu().to(kFloat64)};
  };
  const auto want = run(kCPU, kFloat64, false);
  const auto got = run(dev(), kFloat32, true);
  const char* what[] = {"dx", "ddx", "dddelta", "ddw"};
  for (size_t i = 0; i < want.size(); ++i) expect_close(got[i], want[i], 1e-3, 1e-3, what[i]);
}

TEST_P(AddLayerNorm, Errors) {
  Tensor x = randn({2, 8}, TensorOptions(kFloat32).device(dev()));
  try {
    (void)F::add_layer_norm(x, Tensor(), {8}, {}, {}, 1e-5, kInt64);
    FAIL() << "no error";
  } catch (const TypeError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[add_layer_norm]", 0), 0u) << e.what();
  }
  try {
    (void)F::add_layer_norm(x, Tensor(), {7});
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[add_layer_norm] Given normalized_shape=[7]", 0), 0u) << e.what();
  }
  try {
    (void)F::add_layer_norm(x, randn({3, 8}, TensorOptions(kFloat32).device(dev())), {8});
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[add_layer_norm]", 0), 0u) << e.what();
  }
  EXPECT_THROW((void)F::add_layer_norm(Tensor(), x, {8}), Error);
}

WICK_INSTANTIATE_ON_DEVICES(AddLayerNorm);

// CUDA: the fused kernels against the composed ops they replace (add, layer_norm, cast), on the
// same device: the same float32 arithmetic, so the same values to within a rounding.
TEST(AddLayerNormCuda, MatchesTheComposedOps) {
  if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  for (int64_t n : {40, 768, 3000, 6000})
    for (Dtype yd : {kBFloat16, kFloat16, kFloat32}) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " y=" << yd);
      const Device cu(kCUDA, 0);
      Tensor x0 = randn({33, n}, TensorOptions(kFloat32).device(cu));
      Tensor d0 = randn({33, n}, TensorOptions(yd).device(cu));
      Tensor w0 = randn({n}, TensorOptions(kFloat32).device(cu)), b0 = randn({n}, TensorOptions(kFloat32).device(cu));
      Tensor gy = randn({33, n}, TensorOptions(yd).device(cu)), gs = randn({33, n}, TensorOptions(kFloat32).device(cu));
      std::vector<Tensor> got[2];
      for (int k = 0; k < 2; ++k) {
        Tensor x = x0.clone().requires_grad_(), d = d0.clone().requires_grad_(), w = w0.clone().requires_grad_(),
               b = b0.clone().requires_grad_();
        Tensor s, y;
        if (k == 0) {
          std::tie(s, y) = F::add_layer_norm(x, d, {n}, w, b, 1e-5, yd);
        } else {
          s = x + d;
          y = F::layer_norm(s, {n}, w, b).to(yd);
        }
        autograd::backward({s, y}, {gs, gy});
        got[k] = {s.detach(), y.detach(), x.grad(), d.grad(), w.grad(), b.grad()};
      }
      const char* what[] = {"s", "y", "dx", "ddelta", "dweight", "dbias"};
      for (size_t i = 0; i < 6; ++i) {
        const double t = i == 1 || i == 3 ? ulp(yd) : i >= 4 ? 1e-4 : 1e-6;
        expect_close(got[0][i].to(kFloat64).cpu(), got[1][i].to(kFloat64).cpu(), t, t, what[i]);
      }
    }
}

}  // namespace
