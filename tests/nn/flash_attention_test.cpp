// scaled_dot_product_attention's fused paths, flash and cuDNN (CUDA, float16 and bfloat16):
// values and gradients of q, k, v against a float64 reference, with the error of the math path
// in the same dtype as the yardstick (as PyTorch's tests judge their fused kernels), over causal
// and not, L == S and not, tile-unaligned lengths, head dims 8 to 128, strided layouts; for
// flash also GQA and dropout (whose mask the test recomputes from the Philox counters the
// kernels use). On the CPU: the selection's fallbacks and reasons.
#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/cudnn_attention.h"
#include "core/flash_attention.h"
#include "core/generator.h"
#include "core/philox.h"
#include "nn_test_util.h"
#include "wick/nn/attention.h"
#include "wick/wick.h"

namespace wick {
namespace {

namespace F = nn::functional;
using nn::attention::last_sdpa_backend;
using nn::attention::sdpa_kernel;
using nn::attention::SDPBackend;
using testing::error_of;

struct Grads {
  Tensor out, dq, dk, dv;
};

// out and the gradients of <out, dout> wrt q, k, v, on the devices and dtypes of the inputs,
// with only `backend` enabled; keep (optional, float64 [B, H, L, S] of 0 / (1 - p)) applied to the
// weights by hand: the math composition of a dropout whose mask is known.
Grads run(const Tensor& q0, const Tensor& k0, const Tensor& v0, const Tensor& dout, bool causal, SDPBackend backend,
          double dropout_p = 0, const Tensor& keep = {}) {
  Tensor q = q0.detach().clone().requires_grad_(), k = k0.detach().clone().requires_grad_(),
         v = v0.detach().clone().requires_grad_();
  const bool gqa = q.size(1) != k.size(1);
  Tensor out;
  if (keep.defined()) {
    const int64_t r = q.size(1) / k.size(1), L = q.size(2), S = k.size(2);
    Tensor kr = r == 1 ? k : k.unsqueeze(2).expand({k.size(0), k.size(1), r, S, k.size(3)}).reshape(
                                 {k.size(0), q.size(1), S, k.size(3)});
    Tensor vr = r == 1 ? v : v.unsqueeze(2).expand({v.size(0), v.size(1), r, S, v.size(3)}).reshape(
                                 {v.size(0), q.size(1), S, v.size(3)});
    Tensor s = matmul(q, kr.transpose(-2, -1)) / std::sqrt(double(q.size(3)));
    if (causal) {
      Tensor above = arange(S, TensorOptions(kInt64)).unsqueeze(0) > arange(L, TensorOptions(kInt64)).unsqueeze(1);
      s = s.masked_fill(above, -INFINITY);
    }
    out = matmul(softmax(s, -1) * keep, vr);
  } else {
    sdpa_kernel only(backend);
    out = F::scaled_dot_product_attention(q, k, v, {}, dropout_p, causal, std::nullopt, gqa);
    EXPECT_EQ(*last_sdpa_backend(), backend);
    if (backend == SDPBackend::FlashAttention) {
      EXPECT_EQ(out.grad_fn()->name(), "ScaledDotProductFlashAttentionBackward0");
    }
    if (backend == SDPBackend::CuDNNAttention) {
      EXPECT_EQ(out.grad_fn()->name(), "ScaledDotProductCudnnAttentionBackward0");
    }
  }
  out.backward(dout);
  return {out.detach(), q.grad(), k.grad(), v.grad()};
}

double max_err(const Tensor& got, const Tensor& want) {
  return (got.detach().cpu().to(kFloat64) - want.detach().cpu().to(kFloat64)).abs().max().item<double>();
}

struct Shape {
  int64_t B, H, Hkv, L, S, E;
  bool causal;
};

std::string describe(const Shape& s, Dtype dt) {
  std::ostringstream os;
  os << dt << " B=" << s.B << " H=" << s.H << " Hkv=" << s.Hkv << " L=" << s.L << " S=" << s.S << " E=" << s.E
     << (s.causal ? " causal" : "");
  return os.str();
}

// A fused backend vs the float64 reference, judged by the math path's error in dt.
void check_against_math(const Shape& s, Dtype dt, SDPBackend backend = SDPBackend::FlashAttention) {
  const Device gpu(kCUDA, 0);
  const std::string what = describe(s, dt);
  // inputs rounded to dt first, so that every path sees the same values
  Tensor q = randn({s.B, s.H, s.L, s.E}).to(dt), k = randn({s.B, s.Hkv, s.S, s.E}).to(dt),
         v = randn({s.B, s.Hkv, s.S, s.E}).to(dt), g = randn({s.B, s.H, s.L, s.E}).to(dt);
  Grads ref = run(q.to(kFloat64), k.to(kFloat64), v.to(kFloat64), g.to(kFloat64), s.causal, SDPBackend::Math);
  Grads math = run(q.to(gpu), k.to(gpu), v.to(gpu), g.to(gpu), s.causal, SDPBackend::Math);
  Grads flash = run(q.to(gpu), k.to(gpu), v.to(gpu), g.to(gpu), s.causal, backend);
  ASSERT_EQ(flash.out.dtype(), dt) << what;
  ASSERT_EQ(flash.dk.sizes().vec(), k.sizes().vec()) << what;
  const double atol = dt == kBFloat16 ? 1e-2 : 1e-3;
  const std::pair<const char*, std::pair<Tensor, Tensor>> parts[] = {
      {"out", {flash.out, math.out}}, {"dq", {flash.dq, math.dq}}, {"dk", {flash.dk, math.dk}},
      {"dv", {flash.dv, math.dv}}};
  const Tensor refs[] = {ref.out, ref.dq, ref.dk, ref.dv};
  for (int i = 0; i < 4; ++i) {
    const double ef = max_err(parts[i].second.first, refs[i]), em = max_err(parts[i].second.second, refs[i]);
    EXPECT_TRUE(std::isfinite(ef)) << what << " " << parts[i].first;
    EXPECT_LE(ef, 3 * em + atol) << what << " " << parts[i].first << ": " << backend << " error " << ef
                                 << ", math error " << em;
  }
}

bool has_cuda() { return cuda::is_available(); }

class FlashAttention : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!has_cuda()) GTEST_SKIP() << "no CUDA device";
    manual_seed(5);
  }
};

TEST_F(FlashAttention, MatchesMathPathAcrossShapes) {
  const Shape shapes[] = {
      {1, 1, 1, 1, 1, 64, false},   {2, 3, 3, 7, 7, 32, false},   {2, 3, 3, 7, 7, 32, true},
      {1, 2, 2, 65, 65, 64, false}, {1, 2, 2, 65, 65, 64, true},  {2, 2, 2, 200, 200, 80, true},
      {1, 2, 2, 200, 65, 128, false}, {1, 2, 2, 65, 200, 128, true}, {1, 2, 2, 200, 7, 64, true},
      {1, 1, 1, 1, 200, 64, true},  {1, 2, 2, 128, 128, 128, true},
  };
  for (Dtype dt : {kFloat16, kBFloat16})
    for (const Shape& s : shapes) check_against_math(s, dt);
}

TEST_F(FlashAttention, GroupedQueryAttention) {
  for (Dtype dt : {kFloat16, kBFloat16})
    for (bool causal : {false, true}) {
      check_against_math({2, 8, 2, 65, 65, 64, causal}, dt);
      check_against_math({1, 8, 2, 7, 200, 128, causal}, dt);
    }
}

TEST_F(FlashAttention, NonContiguousInputs) {
  // [B, L, H, E] transposed to [B, H, L, E], as attention layers make them: read in place
  const Device gpu(kCUDA, 0);
  const int64_t B = 2, H = 4, L = 33, E = 64;
  Tensor q = randn({B, L, H, E}).to(kBFloat16).to(gpu).transpose(1, 2);
  Tensor k = randn({B, L, H, E}).to(kBFloat16).to(gpu).transpose(1, 2);
  Tensor v = randn({B, L, H, E}).to(kBFloat16).to(gpu).transpose(1, 2);
  Tensor g = randn({B, H, L, E}).to(kBFloat16).to(gpu);
  Grads f = run(q, k, v, g, true, SDPBackend::FlashAttention);
  Grads c = run(q.contiguous(), k.contiguous(), v.contiguous(), g, true, SDPBackend::FlashAttention);
  EXPECT_EQ(max_err(f.out, c.out), 0.0);
  EXPECT_EQ(max_err(f.dq, c.dq), 0.0);
  EXPECT_EQ(max_err(f.dk, c.dk), 0.0);
  EXPECT_EQ(max_err(f.dv, c.dv), 0.0);
  // a head dim that is not the last stride-1 dim is copied first: the same numbers
  Tensor qt = q.contiguous().transpose(2, 3).contiguous().transpose(2, 3);
  EXPECT_EQ(max_err(run(qt, k, v, g, true, SDPBackend::FlashAttention).out, c.out), 0.0);
}

TEST_F(FlashAttention, DropoutMaskIsPhiloxAndGradientsFollowIt) {
  const Device gpu(kCUDA, 0);
  const int64_t B = 2, H = 4, Hkv = 2, L = 70, S = 67, E = 64;
  const double p = 0.25;
  for (bool causal : {false, true}) {
    Tensor q = randn({B, H, L, E}).to(kFloat16), k = randn({B, Hkv, S, E}).to(kFloat16),
           v = randn({B, Hkv, S, E}).to(kFloat16), g = randn({B, H, L, E}).to(kFloat16);
    const detail::PhiloxState st = detail::get_state(gpu);
    Grads flash = run(q.to(gpu), k.to(gpu), v.to(gpu), g.to(gpu), causal, SDPBackend::FlashAttention, p);
    EXPECT_EQ(detail::get_state(gpu).offset, st.offset + detail::flash_dropout_counters(B, H, L, S));
    // the mask the kernels draw: counter (bh * L + i) * ceil(S / 4) + j / 4, word j % 4
    std::vector<double> keep(size_t(B * H * L * S));
    int64_t dropped = 0;
    for (int64_t bh = 0; bh < B * H; ++bh)
      for (int64_t i = 0; i < L; ++i)
        for (int64_t j = 0; j < S; ++j) {
          const uint64_t c = uint64_t((bh * L + i) * ((S + 3) / 4) + j / 4);
          const uint32_t bits = detail::philox::draw_block(st.seed, st.offset, c).v[j % 4];
          const bool kept = float(bits >> 8) * (1.0f / 16777216.0f) < float(1 - p);
          keep[size_t((bh * L + i) * S + j)] = kept ? 1 / (1 - p) : 0;
          dropped += !kept;
        }
    const double frac = double(dropped) / double(keep.size());
    EXPECT_NEAR(frac, p, 4 * std::sqrt(p * (1 - p) / double(keep.size())));
    Tensor km = from_blob(keep.data(), {B, H, L, S}, TensorOptions(kFloat64)).clone();
    Grads ref = run(q.to(kFloat64), k.to(kFloat64), v.to(kFloat64), g.to(kFloat64), causal, SDPBackend::Math, 0, km);
    Grads none = run(q.to(gpu), k.to(gpu), v.to(gpu), g.to(gpu), causal, SDPBackend::Math);
    Grads none64 = run(q.to(kFloat64), k.to(kFloat64), v.to(kFloat64), g.to(kFloat64), causal, SDPBackend::Math);
    const Tensor fl[] = {flash.out, flash.dq, flash.dk, flash.dv};
    const Tensor rf[] = {ref.out, ref.dq, ref.dk, ref.dv};
    const Tensor mh[] = {none.out, none.dq, none.dk, none.dv};
    const Tensor m64[] = {none64.out, none64.dq, none64.dk, none64.dv};
    for (int i = 0; i < 4; ++i) {
      // the yardstick: float16's error without dropout (the scale 1 / (1 - p) grows it a little)
      const double em = max_err(mh[i], m64[i]), ef = max_err(fl[i], rf[i]);
      EXPECT_LE(ef, 4 * em + 2e-3) << "part " << i << (causal ? " causal" : "") << ": " << ef << " vs " << em;
    }
    // the same draw again gives the same numbers
    detail::set_state(gpu, st);
    Grads again = run(q.to(gpu), k.to(gpu), v.to(gpu), g.to(gpu), causal, SDPBackend::FlashAttention, p);
    EXPECT_EQ(max_err(again.out, flash.out), 0.0);
  }
}

TEST_F(FlashAttention, EmptyAndDegenerateSizes) {
  const Device gpu(kCUDA, 0);
  Tensor q = randn({2, 2, 5, 16}).to(kFloat16).to(gpu).requires_grad_();
  Tensor k = zeros({2, 2, 0, 16}, TensorOptions(kFloat16).device(gpu)).requires_grad_();
  Tensor v = zeros({2, 2, 0, 16}, TensorOptions(kFloat16).device(gpu)).requires_grad_();
  sdpa_kernel only(SDPBackend::FlashAttention);
  Tensor out = F::scaled_dot_product_attention(q, k, v);
  EXPECT_EQ(out.abs().max().item<double>(), 0.0);
  out.backward(ones_like(out));
  EXPECT_EQ(q.grad().abs().max().item<double>(), 0.0);
  Tensor q0 = zeros({2, 2, 0, 16}, TensorOptions(kFloat16).device(gpu)).requires_grad_();
  Tensor k1 = randn({2, 2, 3, 16}).to(kFloat16).to(gpu).requires_grad_();
  Tensor out0 = F::scaled_dot_product_attention(q0, k1, k1);
  EXPECT_EQ(out0.numel(), 0);
  out0.sum().backward();
  EXPECT_EQ(k1.grad().abs().max().item<double>(), 0.0);
}

TEST_F(FlashAttention, NoDoubleBackward) {
  const Device gpu(kCUDA, 0);
  Tensor q = randn({1, 1, 4, 16}).to(kBFloat16).to(gpu).requires_grad_();
  sdpa_kernel only(SDPBackend::FlashAttention);
  Tensor out = F::scaled_dot_product_attention(q, q, q);
  EXPECT_EQ(*last_sdpa_backend(), SDPBackend::FlashAttention);
  const std::string e = error_of([&] { out.backward(ones_like(out), std::nullopt, true); });
  EXPECT_NE(e.find("ScaledDotProductFlashAttentionBackward0"), std::string::npos) << e;
}

TEST_F(FlashAttention, SelectionFallsBackOnCuda) {
  const Device gpu(kCUDA, 0);
  sdpa_kernel prefer({SDPBackend::FlashAttention, SDPBackend::Math});
  Tensor q = randn({1, 2, 4, 16}).to(gpu);
  F::scaled_dot_product_attention(q, q, q);
  EXPECT_EQ(*last_sdpa_backend(), SDPBackend::Math);  // float32
  Tensor h = q.to(kFloat16);
  F::scaled_dot_product_attention(h, h, h, ones({4, 4}, TensorOptions(kBool).device(gpu)));
  EXPECT_EQ(*last_sdpa_backend(), SDPBackend::Math);  // a mask
  Tensor wide = randn({1, 2, 4, 136}).to(kFloat16).to(gpu);
  F::scaled_dot_product_attention(wide, wide, wide);
  EXPECT_EQ(*last_sdpa_backend(), SDPBackend::Math);  // E > 128
  F::scaled_dot_product_attention(h, h, h, {}, 0.1);
  EXPECT_EQ(*last_sdpa_backend(), SDPBackend::FlashAttention);
}

// ---- the cuDNN path

class CudnnAttention : public FlashAttention {
 protected:
  void SetUp() override {
    FlashAttention::SetUp();
    if (IsSkipped()) return;
    const std::string why = detail::cudnn_attention_unusable(
        randn({1, 1, 8, 64}).to(kFloat16).to(Device(kCUDA, 0)), randn({1, 1, 8, 64}).to(kFloat16).to(Device(kCUDA, 0)),
        randn({1, 1, 8, 64}).to(kFloat16).to(Device(kCUDA, 0)), false, true);
    if (why.find("built without cuDNN") != std::string::npos || why.find("compute capability") != std::string::npos)
      GTEST_SKIP() << why;
  }
};

// cuDNN's answer for a shape (with the backward or without): "" when it takes it. It may refuse
// only what its documented limits exclude (one query and one key in the backward, key lengths
// not a multiple of 128 in the backward before 9.16, GQA in the backward); the forward it
// always takes.
std::string cudnn_refusal(const Shape& s, Dtype dt, bool backward) {
  const TensorOptions o = TensorOptions(dt).device(Device(kCUDA, 0));
  const std::string why =
      detail::cudnn_attention_unusable(empty({s.B, s.H, s.L, s.E}, o), empty({s.B, s.Hkv, s.S, s.E}, o),
                                       empty({s.B, s.Hkv, s.S, s.E}, o), s.causal, backward);
  if (!why.empty()) {
    const bool documented = backward && ((s.L == 1 && s.S == 1) ||
                                         (s.S % 128 != 0 && why.find("9.16") != std::string::npos) ||
                                         (s.Hkv != s.H && why.find("GQA") != std::string::npos));
    EXPECT_TRUE(documented) << describe(s, dt) << ": " << why;
  }
  return why;
}

// The forward alone (no gradient wanted) vs the float64 reference, judged by math's error in dt.
void check_forward_against_math(const Shape& s, Dtype dt) {
  const Device gpu(kCUDA, 0);
  Tensor q = randn({s.B, s.H, s.L, s.E}).to(dt), k = randn({s.B, s.Hkv, s.S, s.E}).to(dt),
         v = randn({s.B, s.Hkv, s.S, s.E}).to(dt);
  auto out = [&](const Tensor& a, const Tensor& b, const Tensor& c, SDPBackend backend) {
    sdpa_kernel only(backend);
    Tensor o = F::scaled_dot_product_attention(a, b, c, {}, 0, s.causal, std::nullopt, s.Hkv != s.H);
    EXPECT_EQ(*last_sdpa_backend(), backend);
    return o;
  };
  const Tensor ref = out(q.to(kFloat64), k.to(kFloat64), v.to(kFloat64), SDPBackend::Math);
  const double em = max_err(out(q.to(gpu), k.to(gpu), v.to(gpu), SDPBackend::Math), ref);
  const double ec = max_err(out(q.to(gpu), k.to(gpu), v.to(gpu), SDPBackend::CuDNNAttention), ref);
  EXPECT_LE(ec, 3 * em + (dt == kBFloat16 ? 1e-2 : 1e-3)) << describe(s, dt) << " forward: cuDNN " << ec
                                                           << ", math " << em;
}

TEST_F(CudnnAttention, MatchesMathPathAcrossShapes) {
  const Shape shapes[] = {
      {1, 1, 1, 1, 1, 64, false},   {2, 3, 3, 7, 7, 32, false},    {2, 3, 3, 7, 7, 32, true},
      {1, 2, 2, 65, 65, 64, false}, {1, 2, 2, 65, 65, 64, true},   {2, 2, 2, 200, 200, 80, true},
      {1, 2, 2, 200, 65, 128, false}, {1, 2, 2, 65, 200, 128, true}, {1, 2, 2, 200, 7, 64, true},
      {1, 1, 1, 1, 200, 64, true},  {1, 2, 2, 128, 128, 128, true}, {2, 4, 4, 256, 256, 8, true},
      {2, 8, 2, 128, 128, 64, true}, {1, 8, 2, 65, 256, 128, false}, {2, 6, 1, 130, 128, 32, true},
  };
  int with_backward = 0, gqa_with_backward = 0;
  for (Dtype dt : {kFloat16, kBFloat16})
    for (const Shape& s : shapes) {
      // GQA with a gradient: scaled_dot_product_attention repeats k's and v's heads, so cuDNN
      // sees the problem with as many key heads as query heads
      Shape full = s;
      full.Hkv = s.H;
      if (cudnn_refusal(full, dt, true).empty()) {
        check_against_math(s, dt, SDPBackend::CuDNNAttention);
        ++with_backward;
        if (s.Hkv != s.H) ++gqa_with_backward;
      }
      if (cudnn_refusal(s, dt, false).empty()) check_forward_against_math(s, dt);
    }
  EXPECT_GE(with_backward, 4);
  EXPECT_GE(gqa_with_backward, 2);
}

TEST_F(CudnnAttention, StridedInputsAndScale) {
  // [B, L, H, E] transposed to [B, H, L, E] (read in place) and a head dim that is not stride 1
  // (copied first) give what the contiguous inputs give, within the dtype's error
  const Device gpu(kCUDA, 0);
  const int64_t B = 2, H = 4, L = 128, E = 64;
  Tensor q = randn({B, L, H, E}).to(kBFloat16).to(gpu).transpose(1, 2);
  Tensor k = randn({B, L, H, E}).to(kBFloat16).to(gpu).transpose(1, 2);
  Tensor v = randn({B, L, H, E}).to(kBFloat16).to(gpu).transpose(1, 2);
  Tensor g = randn({B, H, L, E}).to(kBFloat16).to(gpu);
  Grads c = run(q.contiguous(), k.contiguous(), v.contiguous(), g, true, SDPBackend::CuDNNAttention);
  Grads ref = run(q.to(kFloat64), k.to(kFloat64), v.to(kFloat64), g.to(kFloat64), true, SDPBackend::Math);
  Grads f = run(q, k, v, g, true, SDPBackend::CuDNNAttention);
  Tensor qt = q.contiguous().transpose(2, 3).contiguous().transpose(2, 3);
  Grads t = run(qt, k, v, g, true, SDPBackend::CuDNNAttention);
  for (const Grads* x : {&f, &t}) {
    EXPECT_LE(max_err(x->out, c.out), 2e-2);
    EXPECT_LE(max_err(x->dq, ref.dq), 3 * max_err(c.dq, ref.dq) + 1e-2);
    EXPECT_LE(max_err(x->dk, ref.dk), 3 * max_err(c.dk, ref.dk) + 1e-2);
    EXPECT_LE(max_err(x->dv, ref.dv), 3 * max_err(c.dv, ref.dv) + 1e-2);
  }
  // an explicit scale reaches the graph: cuDNN's and math's outputs agree with it
  Tensor h = randn({1, 2, 128, 32}).to(kFloat16).to(gpu);
  Tensor want = F::scaled_dot_product_attention(h.to(kFloat64), h.to(kFloat64), h.to(kFloat64), {}, 0, false, 0.5);
  sdpa_kernel only(SDPBackend::CuDNNAttention);
  Tensor got = F::scaled_dot_product_attention(h, h, h, {}, 0, false, 0.5);
  EXPECT_EQ(*last_sdpa_backend(), SDPBackend::CuDNNAttention);
  EXPECT_LE(max_err(got, want), 5e-3);
}

TEST_F(CudnnAttention, OutputAndGradientsInTheLayoutOfTheirOperands) {
  // q, k, v split from one [B, L, 3 H E] projection and viewed as heads (a GPT's attention): the
  // output and the gradients are laid out as their operands, so out.transpose(1, 2) is
  // contiguous; the values are what contiguous operands give, against the float64 math path
  const Device gpu(kCUDA, 0);
  const int64_t B = 2, L = 128, H = 4, E = 64, C = H * E;
  const Tensor qkv = randn({B, L, 3 * C}), g = randn({B, L, C});
  struct Result {
    Tensor out, dqkv;
  };
  auto step = [&](Dtype dt, SDPBackend b, bool contiguous_heads) {
    Tensor x = qkv.to(dt).to(b == SDPBackend::Math && dt == kFloat64 ? Device(kCPU) : gpu).requires_grad_(true);
    std::vector<Tensor> parts = x.split(C, -1);
    auto heads = [&](const Tensor& t) {
      Tensor h = t.view({B, L, H, E}).transpose(1, 2);
      return contiguous_heads ? h.contiguous() : h;
    };
    sdpa_kernel only(b);
    Tensor o = F::scaled_dot_product_attention(heads(parts[0]), heads(parts[1]), heads(parts[2]), {}, 0, true);
    EXPECT_EQ(*last_sdpa_backend(), b);
    o.transpose(1, 2).contiguous().view({B, L, C}).backward(g.to(dt).to(x.device()));
    return Result{o, x.grad()};
  };
  const Result ref = step(kFloat64, SDPBackend::Math, false);
  const Result base = step(kBFloat16, SDPBackend::CuDNNAttention, true);
  const Result got = step(kBFloat16, SDPBackend::CuDNNAttention, false);
  EXPECT_TRUE(got.out.transpose(1, 2).is_contiguous()) << got.out.strides();
  EXPECT_LE(max_err(got.out, ref.out), 2 * max_err(base.out, ref.out) + 1e-2);
  EXPECT_LE(max_err(got.dqkv, ref.dqkv), 2 * max_err(base.dqkv, ref.dqkv) + 1e-2);
  // a gradient for out in another layout than out's is copied into it first
  const Tensor go = randn({B, H, L, E}).to(kBFloat16);
  auto dq = [&](const Tensor& q) {
    Tensor leaf = q.detach().requires_grad_(true);
    sdpa_kernel only(SDPBackend::CuDNNAttention);
    F::scaled_dot_product_attention(leaf, leaf, leaf, {}, 0, true).backward(go.to(leaf.device()));
    EXPECT_EQ(*last_sdpa_backend(), SDPBackend::CuDNNAttention);
    return leaf.grad();
  };
  const Tensor q = qkv.to(kBFloat16).to(gpu).narrow(-1, 0, C).view({B, L, H, E}).transpose(1, 2);
  Tensor q64 = q.to(kFloat64).cpu().requires_grad_(true);
  F::scaled_dot_product_attention(q64, q64, q64, {}, 0, true).backward(go.to(kFloat64));
  EXPECT_LE(max_err(dq(q), q64.grad()), 2 * max_err(dq(q.contiguous()), q64.grad()) + 1e-2);
}

TEST_F(CudnnAttention, TakenByDefaultAndRepeatable) {
  // bfloat16 on CUDA with nothing forced: cuDNN's path; a second backward on memory the first
  // one freed gives the same numbers (nothing left over in the workspaces is summed in)
  const Device gpu(kCUDA, 0);
  Tensor q = randn({2, 3, 128, 64}).to(kBFloat16).to(gpu), k = randn({2, 3, 256, 64}).to(kBFloat16).to(gpu),
         v = randn({2, 3, 256, 64}).to(kBFloat16).to(gpu), g = randn({2, 3, 128, 64}).to(kBFloat16).to(gpu);
  Grads first, second;
  for (Grads* r : {&first, &second}) {
    Tensor a = q.clone().requires_grad_(), b = k.clone().requires_grad_(), c = v.clone().requires_grad_();
    Tensor out = F::scaled_dot_product_attention(a, b, c, {}, 0, true);
    EXPECT_EQ(*last_sdpa_backend(), SDPBackend::CuDNNAttention);
    out.backward(g);
    *r = {out.detach(), a.grad(), b.grad(), c.grad()};
  }
  EXPECT_EQ(max_err(first.out, second.out), 0.0);
  // dQ is summed over key blocks by atomics: the order, not the value, may differ
  EXPECT_LE(max_err(first.dq, second.dq), 2e-2);
  EXPECT_LE(max_err(first.dk, second.dk), 2e-2);
  EXPECT_LE(max_err(first.dv, second.dv), 2e-2);
  Grads ref = run(q.to(kFloat64), k.to(kFloat64), v.to(kFloat64), g.to(kFloat64), true, SDPBackend::Math);
  EXPECT_LE(max_err(first.dq, ref.dq), 5e-2);
  EXPECT_LE(max_err(first.dk, ref.dk), 5e-2);
  // lengths that are not multiples of 64 take another path by default (each would be a new plan)
  Tensor q100 = randn({2, 3, 100, 64}).to(kBFloat16).to(gpu);
  F::scaled_dot_product_attention(q100, q100, q100, {}, 0, true);
  EXPECT_NE(*last_sdpa_backend(), SDPBackend::CuDNNAttention);
}

TEST_F(CudnnAttention, NoDoubleBackward) {
  const Device gpu(kCUDA, 0);
  Tensor q = randn({1, 1, 128, 16}).to(kBFloat16).to(gpu).requires_grad_();
  sdpa_kernel only(SDPBackend::CuDNNAttention);
  Tensor out = F::scaled_dot_product_attention(q, q, q);
  EXPECT_EQ(*last_sdpa_backend(), SDPBackend::CuDNNAttention);
  const std::string e = error_of([&] { out.backward(ones_like(out), std::nullopt, true); });
  EXPECT_NE(e.find("ScaledDotProductCudnnAttentionBackward0"), std::string::npos) << e;
}

TEST_F(CudnnAttention, SelectionReasons) {
  const Device gpu(kCUDA, 0);
  auto forced = [](const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask = {}, double p = 0,
                   bool gqa = false) {
    sdpa_kernel only(SDPBackend::CuDNNAttention);
    return error_of([&] { F::scaled_dot_product_attention(q, k, v, mask, p, false, std::nullopt, gqa); });
  };
  Tensor h = randn({1, 4, 128, 16}).to(kFloat16).to(gpu);
  std::string e = forced(h, h, h, {}, 0.1);
  EXPECT_NE(e.find("CUDNN_ATTENTION: does not take dropout"), std::string::npos) << e;
  e = forced(h, h, h, ones({128, 128}, TensorOptions(kBool).device(gpu)));
  EXPECT_NE(e.find("CUDNN_ATTENTION: does not take an attn_mask"), std::string::npos) << e;
  Tensor wide_v = randn({1, 4, 128, 32}).to(kFloat16).to(gpu);
  e = forced(h, h, wide_v);
  EXPECT_NE(e.find("CUDNN_ATTENTION: needs value's head dim equal to query's"), std::string::npos) << e;
  Tensor f = randn({1, 4, 8, 16}).to(gpu);
  e = forced(f, f, f);
  EXPECT_NE(e.find("CUDNN_ATTENTION: needs float16 or bfloat16 inputs"), std::string::npos) << e;
  // with math enabled too, those fall back to it
  sdpa_kernel both({SDPBackend::CuDNNAttention, SDPBackend::Math});
  F::scaled_dot_product_attention(h, h, h, {}, 0.1);
  EXPECT_EQ(*last_sdpa_backend(), SDPBackend::Math);
  F::scaled_dot_product_attention(h, h, h);
  EXPECT_EQ(*last_sdpa_backend(), SDPBackend::CuDNNAttention);
}

// ---- the CPU side: the selection never picks a fused path there, and says why when forced

TEST(FlashAttentionSelection, FallsBackToMathWithReasons) {
  manual_seed(3);
  auto forced = [](const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask = {}) {
    sdpa_kernel only(SDPBackend::FlashAttention);
    return error_of([&] { F::scaled_dot_product_attention(q, k, v, mask); });
  };
  auto expect_math = [](const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask = {}) {
    F::scaled_dot_product_attention(q, k, v, mask);
    EXPECT_EQ(*last_sdpa_backend(), SDPBackend::Math);
  };
  Tensor h = randn({1, 2, 4, 16}).to(kBFloat16);
  expect_math(h, h, h);
  std::string e = forced(h, h, h);
  EXPECT_EQ(e.rfind("[scaled_dot_product_attention] No available kernel. Aborting execution.", 0), 0u) << e;
  EXPECT_NE(e.find("FLASH_ATTENTION: needs CUDA tensors"), std::string::npos) << e;
  EXPECT_NE(e.find("MATH: disabled"), std::string::npos) << e;
  Tensor mask = ones({4, 4}, kBool);
  expect_math(h, h, h, mask);
  e = forced(h, h, h, mask);
  EXPECT_NE(e.find("FLASH_ATTENTION: does not take an attn_mask"), std::string::npos) << e;
  Tensor f = randn({1, 2, 4, 16});
  expect_math(f, f, f);
  e = forced(f, f, f);
  EXPECT_NE(e.find("FLASH_ATTENTION: needs float16 or bfloat16 inputs"), std::string::npos) << e;
  Tensor wide = randn({1, 2, 4, 256}).to(kFloat16);
  expect_math(wide, wide, wide);
  e = forced(wide, wide, wide);
  EXPECT_NE(e.find("FLASH_ATTENTION: needs a head dim between 8 and 128 and a multiple of 8"), std::string::npos) << e;
  Tensor three = randn({2, 4, 16}).to(kFloat16);
  e = forced(three, three, three);
  EXPECT_NE(e.find("FLASH_ATTENTION: needs 4-D query, key and value"), std::string::npos) << e;
}

TEST(CudnnAttentionSelection, SaysWhyOffCuda) {
  Tensor h = randn({1, 2, 4, 16}).to(kBFloat16);
  sdpa_kernel only(SDPBackend::CuDNNAttention);
  const std::string e = error_of([&] { F::scaled_dot_product_attention(h, h, h); });
  EXPECT_NE(e.find("CUDNN_ATTENTION: needs CUDA tensors"), std::string::npos) << e;
  Tensor f = randn({1, 2, 4, 16});
  const std::string e2 = error_of([&] { F::scaled_dot_product_attention(f, f, f); });
  EXPECT_NE(e2.find("CUDNN_ATTENTION: needs float16 or bfloat16 inputs"), std::string::npos) << e2;
}

}  // namespace
}  // namespace wick
