// scaled_dot_product_attention against a float64 reference written with loops (masks, causal,
// scale, GQA, rows that attend nothing), its gradients by gradcheck, its errors, dropout
// statistics, and the backend selector (sdpa_kernel, last_sdpa_backend).
#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "../autograd/gradcheck.h"
#include "nn_test_util.h"
#include "wick/nn/attention.h"
#include "wick/wick.h"

namespace wick {
namespace {

namespace F = nn::functional;
using nn::attention::SDPBackend;
using testing::error_of;
using testing::expect_close;
using testing::gradcheck;
using testing::rnd;
using T = std::vector<Tensor>;

constexpr double kInf = std::numeric_limits<double>::infinity();

// The reference on 4-D q [B, H, L, E], k [B, Hk, S, E], v [B, Hk, S, Ev] (H a multiple of Hk:
// query head h reads key head h / (H / Hk)); bias [B, H, L, S] added (-inf: masked), or none.
Tensor reference(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& bias, bool causal,
                 double scale) {
  const int64_t B = q.size(0), H = q.size(1), L = q.size(2), E = q.size(3);
  const int64_t Hk = k.size(1), S = k.size(2), Ev = v.size(3);
  auto qv = q.detach().to(kFloat64).contiguous().to_vector<double>();
  auto kv = k.detach().to(kFloat64).contiguous().to_vector<double>();
  auto vv = v.detach().to(kFloat64).contiguous().to_vector<double>();
  std::vector<double> bv;
  if (bias.defined()) bv = bias.detach().to(kFloat64).contiguous().to_vector<double>();
  std::vector<double> out(size_t(B * H * L * Ev), 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t hk = h / (H / Hk);
      for (int64_t i = 0; i < L; ++i) {
        std::vector<double> s(static_cast<size_t>(S));
        double mx = -kInf;
        for (int64_t j = 0; j < S; ++j) {
          double d = 0;
          for (int64_t e = 0; e < E; ++e)
            d += qv[size_t(((b * H + h) * L + i) * E + e)] * kv[size_t(((b * Hk + hk) * S + j) * E + e)];
          d *= scale;
          if (!bv.empty()) d += bv[size_t(((b * H + h) * L + i) * S + j)];
          if (causal && j > i) d = -kInf;
          s[size_t(j)] = d;
          mx = std::max(mx, d);
        }
        if (mx == -kInf) continue;  // attends nothing: zeros
        double z = 0;
        for (auto& x : s) z += (x = std::exp(x - mx));
        for (int64_t j = 0; j < S; ++j)
          for (int64_t e = 0; e < Ev; ++e)
            out[size_t(((b * H + h) * L + i) * Ev + e)] +=
                s[size_t(j)] / z * vv[size_t(((b * Hk + hk) * S + j) * Ev + e)];
      }
    }
  return from_blob(out.data(), {B, H, L, Ev}, TensorOptions(kFloat64)).clone();
}

// A mask as the additive bias the reference takes, expanded to [B, H, L, S].
Tensor bias_of(const Tensor& mask, IntArrayRef shape) {
  Tensor m = mask.expand(shape).contiguous();
  if (m.dtype() == kBool) return zeros(shape, TensorOptions(kFloat64)).masked_fill(m == false, -kInf);
  return m.to(kFloat64);
}

double default_scale(const Tensor& q) { return 1.0 / std::sqrt(double(q.size(-1))); }

class Sdpa : public ::testing::Test {
 protected:
  void SetUp() override { manual_seed(7); }
};

TEST_F(Sdpa, MatchesReferenceWithoutMask) {
  Tensor q = randn({2, 3, 4, 5}, kFloat64), k = randn({2, 3, 6, 5}, kFloat64), v = randn({2, 3, 6, 7}, kFloat64);
  expect_close(F::scaled_dot_product_attention(q, k, v), reference(q, k, v, {}, false, default_scale(q)), 1e-12, 1e-10);
  // explicit scale
  expect_close(F::scaled_dot_product_attention(q, k, v, {}, 0.0, false, 0.3), reference(q, k, v, {}, false, 0.3),
               1e-12, 1e-10);
}

TEST_F(Sdpa, BoolMasksBroadcast) {
  Tensor q = randn({2, 3, 4, 5}, kFloat64), k = randn({2, 3, 6, 5}, kFloat64), v = randn({2, 3, 6, 7}, kFloat64);
  const std::vector<int64_t> shape{2, 3, 4, 6};
  for (auto sizes : {std::vector<int64_t>{4, 6}, std::vector<int64_t>{2, 1, 4, 6}, std::vector<int64_t>{6},
                     std::vector<int64_t>{3, 1, 6}}) {
    Tensor mask = rand(sizes) > 0.3;
    expect_close(F::scaled_dot_product_attention(q, k, v, mask), reference(q, k, v, bias_of(mask, shape), false, default_scale(q)),
                 1e-12, 1e-10, "mask " + std::to_string(sizes.size()) + "-D");
  }
}

TEST_F(Sdpa, FloatMaskIsAdded) {
  Tensor q = randn({2, 3, 4, 5}, kFloat64), k = randn({2, 3, 6, 5}, kFloat64), v = randn({2, 3, 6, 7}, kFloat64);
  Tensor mask = randn({1, 3, 4, 6}, kFloat64);
  expect_close(F::scaled_dot_product_attention(q, k, v, mask),
               reference(q, k, v, bias_of(mask, {2, 3, 4, 6}), false, default_scale(q)), 1e-12, 1e-10);
  // a float32 mask with float64 inputs is allowed (PyTorch: bool, float, or q's dtype)
  expect_close(F::scaled_dot_product_attention(q, k, v, mask.to(kFloat32)),
               reference(q, k, v, bias_of(mask.to(kFloat32), {2, 3, 4, 6}), false, default_scale(q)), 1e-12, 1e-10);
}

TEST_F(Sdpa, CausalIsUpperLeftAligned) {
  for (auto [L, S] : {std::pair<int64_t, int64_t>{4, 4}, {4, 6}, {6, 4}}) {
    Tensor q = randn({2, 2, L, 3}, kFloat64), k = randn({2, 2, S, 3}, kFloat64), v = randn({2, 2, S, 5}, kFloat64);
    expect_close(F::scaled_dot_product_attention(q, k, v, {}, 0.0, true), reference(q, k, v, {}, true, default_scale(q)),
                 1e-12, 1e-10, "L=" + std::to_string(L) + " S=" + std::to_string(S));
  }
  // the first query row attends only key 0: its output is v's row 0
  Tensor q = randn({1, 1, 3, 4}, kFloat64), k = randn({1, 1, 3, 4}, kFloat64), v = randn({1, 1, 3, 2}, kFloat64);
  expect_close(F::scaled_dot_product_attention(q, k, v, {}, 0.0, true).select(2, 0), v.select(2, 0), 1e-14, 0);
}

// is_causal runs one masking softmax kernel; the same attention through an explicit bool mask
// (lower triangle) takes where + softmax. Values and gradients agree for every floating dtype,
// on every device, for rows shorter and longer than a warp's or a block's share.
TEST_F(Sdpa, CausalEqualsExplicitTriangularMask) {
  for (Device d : testing::test_devices())
    for (Dtype dt : {kFloat64, kFloat32, kBFloat16, kFloat16})
      for (auto [L, S] : {std::pair<int64_t, int64_t>{1, 1}, {5, 5}, {3, 9}, {9, 3}, {40, 1100}}) {
        const std::string what = "L=" + std::to_string(L) + " S=" + std::to_string(S) + " " +
                                 std::string(name(dt)) + " on " + d.str();
        Tensor q0 = randn({2, 2, L, 8}), k0 = randn({2, 2, S, 8}), v0 = randn({2, 2, S, 3});
        Tensor mask = ones({L, S}, kBool).tril().to(d);
        auto run = [&](bool causal) {
          Tensor q = q0.to(d, dt).requires_grad_(), k = k0.to(d, dt).requires_grad_(),
                 v = v0.to(d, dt).requires_grad_();
          Tensor out = causal ? F::scaled_dot_product_attention(q, k, v, {}, 0.0, true)
                              : F::scaled_dot_product_attention(q, k, v, mask);
          (out * out).sum().backward();
          return T{out, q.grad(), k.grad(), v.grad()};
        };
        const T a = run(true), b = run(false);
        const double tol = dt == kFloat64 ? 1e-12 : dt == kFloat32 ? 1e-5 : 3e-2;
        for (size_t i = 0; i < a.size(); ++i)
          expect_close(a[i].to(kCPU, kFloat64), b[i].to(kCPU, kFloat64), tol, tol, what + " #" + std::to_string(i));
        expect_close(a[0].to(kCPU, kFloat64),
                     reference(q0.to(dt), k0.to(dt), v0.to(dt), {}, true, default_scale(q0)), tol, tol, what);
      }
}

// The causal path's softmax records SoftmaxBackward0 like softmax, so a gradient of a gradient
// (create_graph) goes through it.
TEST_F(Sdpa, CausalDoubleBackward) {
  auto f = [](const T& x) { return F::scaled_dot_product_attention(x[0], x[1], x[2], {}, 0.0, true); };
  for (Device d : testing::test_devices())
    testing::gradgradcheck(f, {rnd({1, 2, 4, 3}), rnd({1, 2, 5, 3}), rnd({1, 2, 5, 2})}, d);
}

TEST_F(Sdpa, GroupedQueryAttention) {
  Tensor q = randn({2, 6, 4, 5}, kFloat64), k = randn({2, 2, 7, 5}, kFloat64), v = randn({2, 2, 7, 3}, kFloat64);
  expect_close(F::scaled_dot_product_attention(q, k, v, {}, 0.0, false, std::nullopt, true),
               reference(q, k, v, {}, false, default_scale(q)), 1e-12, 1e-10);
  Tensor mask = rand({4, 7}) > 0.2;
  expect_close(F::scaled_dot_product_attention(q, k, v, mask, 0.0, false, std::nullopt, true),
               reference(q, k, v, bias_of(mask, {2, 6, 4, 7}), false, default_scale(q)), 1e-12, 1e-10);
  EXPECT_NE(error_of([&] { F::scaled_dot_product_attention(q, k, v); }).find("enable_gqa"), std::string::npos);
  Tensor k4 = randn({2, 4, 7, 5}, kFloat64), v4 = randn({2, 4, 7, 3}, kFloat64);
  EXPECT_EQ(error_of([&] { F::scaled_dot_product_attention(q, k4, v4, {}, 0.0, false, std::nullopt, true); }),
            "[scaled_dot_product_attention] Number of heads in key and value must divide the number of heads in "
            "query (query: 6, key: 4, value: 4)");
}

TEST_F(Sdpa, LowerRankAndNonContiguousInputs) {
  // 3-D (no heads) and 2-D inputs
  Tensor q3 = randn({2, 4, 5}, kFloat64), k3 = randn({2, 6, 5}, kFloat64), v3 = randn({2, 6, 3}, kFloat64);
  expect_close(F::scaled_dot_product_attention(q3, k3, v3),
               reference(q3.unsqueeze(1), k3.unsqueeze(1), v3.unsqueeze(1), {}, false, default_scale(q3)).squeeze(1),
               1e-12, 1e-10);
  expect_close(F::scaled_dot_product_attention(q3[0], k3[0], v3[0], {}, 0.0, true),
               reference(q3.narrow(0, 0, 1).unsqueeze(1), k3.narrow(0, 0, 1).unsqueeze(1),
                         v3.narrow(0, 0, 1).unsqueeze(1), {}, true, default_scale(q3))
                   .view({4, 3}),
               1e-12, 1e-10);
  // [B, L, H, E] transposed to [B, H, L, E]: strided views
  Tensor q = randn({2, 4, 3, 5}, kFloat64).transpose(1, 2), k = randn({2, 6, 3, 5}, kFloat64).transpose(1, 2);
  Tensor v = randn({2, 3, 7, 6}, kFloat64).transpose(2, 3);
  ASSERT_FALSE(q.is_contiguous());
  expect_close(F::scaled_dot_product_attention(q, k, v, {}, 0.0, true), reference(q, k, v, {}, true, default_scale(q)),
               1e-12, 1e-10);
}

TEST_F(Sdpa, Float32AgainstFloat64Reference) {
  Tensor q = randn({2, 3, 8, 16}), k = randn({2, 3, 9, 16}), v = randn({2, 3, 9, 4});
  Tensor out = F::scaled_dot_product_attention(q, k, v, rand({8, 9}) > 0.1);
  EXPECT_EQ(out.dtype(), kFloat32);
  Tensor q2 = randn({2, 3, 8, 16}), k2 = randn({2, 3, 9, 16}), v2 = randn({2, 3, 9, 4});
  expect_close(F::scaled_dot_product_attention(q2, k2, v2, {}, 0.0, true),
               reference(q2, k2, v2, {}, true, default_scale(q2)), 1e-5, 1e-5);
}

TEST_F(Sdpa, RowsThatAttendNothingGiveZerosAndZeroGradients) {
  Tensor q = rnd({1, 2, 3, 4}), k = rnd({1, 2, 5, 4}), v = rnd({1, 2, 5, 3});
  Tensor mask = ones({3, 5}, kBool);
  mask[1].fill_(false);  // query row 1 attends nothing
  Tensor out = F::scaled_dot_product_attention(q, k, v, mask);
  expect_close(out.select(2, 1), zeros({1, 2, 3}, kFloat64), 0, 0);
  expect_close(out, reference(q, k, v, bias_of(mask, {1, 2, 3, 5}), false, default_scale(q)), 1e-12, 1e-10);
  out.sum().backward();
  for (const Tensor& g : {q.grad(), k.grad(), v.grad()})
    for (double x : g.to_vector<double>()) ASSERT_TRUE(std::isfinite(x));
  expect_close(q.grad().select(2, 1), zeros({1, 2, 4}, kFloat64), 0, 0);
  // the same through a float mask of -inf
  Tensor fmask = zeros({3, 5}, kFloat64).masked_fill(mask == false, -kInf);
  expect_close(F::scaled_dot_product_attention(q, k, v, fmask), out, 0, 0);
}

TEST_F(Sdpa, Gradients) {
  auto f = [](Tensor mask, bool causal, bool gqa) {
    return [=](const T& x) {
      return F::scaled_dot_product_attention(x[0], x[1], x[2], mask.defined() ? mask.to(x[0].device()) : mask, 0.0,
                                             causal, std::nullopt, gqa);
    };
  };
  for (Device d : testing::test_devices()) {
    gradcheck(f({}, false, false), {rnd({2, 2, 3, 4}), rnd({2, 2, 5, 4}), rnd({2, 2, 5, 3})}, d);
    gradcheck(f({}, true, false), {rnd({1, 2, 4, 3}), rnd({1, 2, 4, 3}), rnd({1, 2, 4, 2})}, d);
    gradcheck(f(rand({3, 5}) > 0.3, false, false), {rnd({2, 1, 3, 4}), rnd({2, 1, 5, 4}), rnd({2, 1, 5, 3})}, d);
    gradcheck(f({}, false, true), {rnd({1, 4, 3, 2}), rnd({1, 2, 4, 2}), rnd({1, 2, 4, 3})}, d);
    // a float mask gets its gradient too; an explicit scale
    gradcheck([](const T& x) { return F::scaled_dot_product_attention(x[0], x[1], x[2], x[3], 0.0, false, 0.7); },
              {rnd({2, 3, 4}), rnd({2, 5, 4}), rnd({2, 5, 2}), rnd({3, 5})}, d);
  }
}

TEST_F(Sdpa, DropoutStatistics) {
  // q = 0: every row attends its S keys uniformly; v = I: the output is the attention matrix,
  // each entry 0 (dropped) or 1 / S / (1 - p).
  const int64_t B = 8, H = 4, L = 32, S = 16;
  const double p = 0.3;
  Tensor q = zeros({B, H, L, 8}, kFloat64), k = randn({B, H, S, 8}, kFloat64);
  Tensor v = eye(S, kFloat64).expand({B, H, S, S});
  manual_seed(11);
  Tensor out = F::scaled_dot_product_attention(q, k, v, {}, p);
  manual_seed(11);
  expect_close(F::scaled_dot_product_attention(q, k, v, {}, p), out, 0, 0, "same seed, same output");
  const double kept = 1.0 / double(S) / (1 - p);
  int64_t zeros_count = 0;
  const auto vals = out.to_vector<double>();
  for (double x : vals) {
    if (x == 0) ++zeros_count;
    else ASSERT_NEAR(x, kept, 1e-12);
  }
  const double n = double(vals.size()), frac = double(zeros_count) / n;
  EXPECT_NEAR(frac, p, 4 * std::sqrt(p * (1 - p) / n));  // 4 sigma
  EXPECT_EQ(F::scaled_dot_product_attention(q, k, v, {}, 0.0).to_vector<double>(),
            (ones({B, H, L, S}, kFloat64) / double(S)).to_vector<double>());
}

TEST_F(Sdpa, Errors) {
  Tensor q = randn({2, 4, 5}), k = randn({2, 6, 5}), v = randn({2, 6, 3});
  EXPECT_EQ(error_of([&] { F::scaled_dot_product_attention(q, k.to(kFloat64), v); }),
            "[scaled_dot_product_attention] Expected query, key, and value to have the same dtype, but got "
            "query.dtype: float32 key.dtype: float64 and value.dtype: float32 instead.");
  EXPECT_EQ(error_of([&] { F::scaled_dot_product_attention(q, k, v, ones({4, 6}, kBool), 0.0, true); }),
            "[scaled_dot_product_attention] Explicit attn_mask should not be set when is_causal=True");
  EXPECT_NE(error_of([&] { F::scaled_dot_product_attention(q, k, v, ones({4, 6}, kInt64)); })
                .find("Expected attn_mask dtype to be bool or float or to match query dtype"),
            std::string::npos);
  EXPECT_NE(error_of([&] { F::scaled_dot_product_attention(q, k, v, ones({5, 6}, kBool)); }).find("does not broadcast"),
            std::string::npos);
  EXPECT_NE(error_of([&] { F::scaled_dot_product_attention(q, randn({2, 6, 4}), v); }).find("same embedding size"),
            std::string::npos);
  EXPECT_NE(error_of([&] { F::scaled_dot_product_attention(q, k, randn({2, 5, 3})); }).find("same sequence length"),
            std::string::npos);
  EXPECT_NE(error_of([&] { F::scaled_dot_product_attention(randn({4}), k, v); }).find("at least 2 dimensional"),
            std::string::npos);
  EXPECT_NE(error_of([&] { F::scaled_dot_product_attention(q.to(kInt64), k.to(kInt64), v.to(kInt64)); })
                .find("floating point"),
            std::string::npos);
  EXPECT_NE(error_of([&] { F::scaled_dot_product_attention(q, k, v, {}, 1.5); }).find("between 0 and 1"),
            std::string::npos);
}

TEST_F(Sdpa, BackendSelection) {
  using nn::attention::enabled_sdpa_backends;
  using nn::attention::last_sdpa_backend;
  using nn::attention::sdpa_kernel;
  Tensor q = randn({1, 2, 3, 4}), k = randn({1, 2, 3, 4}), v = randn({1, 2, 3, 4});
  EXPECT_EQ(enabled_sdpa_backends().size(), 4u);
  F::scaled_dot_product_attention(q, k, v);
  ASSERT_TRUE(last_sdpa_backend().has_value());
  EXPECT_EQ(*last_sdpa_backend(), SDPBackend::Math);
  {
    sdpa_kernel only_flash(SDPBackend::FlashAttention);
    EXPECT_EQ(enabled_sdpa_backends(), std::vector<SDPBackend>{SDPBackend::FlashAttention});
    const std::string e = error_of([&] { F::scaled_dot_product_attention(q, k, v); });
    EXPECT_EQ(e.rfind("[scaled_dot_product_attention] No available kernel. Aborting execution.", 0), 0u) << e;
    EXPECT_NE(e.find("MATH: disabled"), std::string::npos) << e;
    EXPECT_NE(e.find("FLASH_ATTENTION: needs float16 or bfloat16 inputs"), std::string::npos) << e;
    EXPECT_THROW(F::scaled_dot_product_attention(q, k, v), Error);
    {
      sdpa_kernel math({SDPBackend::Math, SDPBackend::CuDNNAttention});
      EXPECT_NO_THROW(F::scaled_dot_product_attention(q, k, v));
      EXPECT_EQ(*last_sdpa_backend(), SDPBackend::Math);
    }
    EXPECT_EQ(enabled_sdpa_backends(), std::vector<SDPBackend>{SDPBackend::FlashAttention});
  }
  EXPECT_EQ(enabled_sdpa_backends().size(), 4u);
  EXPECT_STREQ(nn::attention::to_string(SDPBackend::CuDNNAttention), "CUDNN_ATTENTION");
}

TEST_F(Sdpa, CudaMatchesCpu) {
  if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const Device gpu(kCUDA, 0);
  for (Dtype dt : {kFloat32, kFloat64}) {
    Tensor q = randn({2, 4, 5, 8}, dt), k = randn({2, 2, 7, 8}, dt), v = randn({2, 2, 7, 3}, dt);
    Tensor mask = rand({5, 7}) > 0.3;
    const double tol = dt == kFloat32 ? 1e-5 : 1e-12;
    expect_close(F::scaled_dot_product_attention(q.to(gpu), k.to(gpu), v.to(gpu), mask.to(gpu), 0.0, false,
                                                 std::nullopt, true),
                 F::scaled_dot_product_attention(q, k, v, mask, 0.0, false, std::nullopt, true), tol, tol);
    Tensor k2 = randn({2, 4, 7, 8}, dt), v2 = randn({2, 4, 7, 3}, dt);
    expect_close(F::scaled_dot_product_attention(q.to(gpu), k2.to(gpu), v2.to(gpu), {}, 0.0, true),
                 F::scaled_dot_product_attention(q, k2, v2, {}, 0.0, true), tol, tol);
    EXPECT_EQ(*nn::attention::last_sdpa_backend(), SDPBackend::Math);
  }
}

}  // namespace
}  // namespace wick
