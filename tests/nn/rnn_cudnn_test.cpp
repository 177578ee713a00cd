// The recurrent layers' cuDNN path (CUDA with cuDNN; the tests skip otherwise): RNN relu/tanh, LSTM with and without projection, GRU, one and two
// layers, bidirectional, batch_first, packed sequences of unsorted lengths, float32 (tight) and
// 16-bit (loose). Outputs, h_n, c_n and every gradient (input, h_0, c_0, each parameter)
// against the same module on the CPU in float64, with parameters and inputs rounded to the
// dtype first so that only the computation differs; the node is CudnnRnnBackward0. Dropout
// between layers: training differs from eval, eval is deterministic, a seed repeats a draw.
#include <cmath>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include "core/cudnn_rnn.h"
#include "nn_test_util.h"
#include "wick/wick.h"

namespace wick {
namespace {

using testing::error_of;
using testing::expect_close;
namespace R = nn::utils::rnn;

class CudnnRnn : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device";
    if (!detail::cuda_cudnn_rnn_built()) GTEST_SKIP() << "built without cuDNN";
    manual_seed(34);
  }
};

// Fixed weights of t's shape for the loss sum(t * w): every element gets its own gradient.
Tensor weights_like(const Tensor& t) {
  return arange(t.numel(), TensorOptions(kFloat64)).mul(0.37).cos().view(t.sizes()).to(t.device());
}

struct Run {
  Tensor out, h, c;  // out: the padded output, or the packed data
  Tensor gx, gh, gc;
  std::map<std::string, Tensor> grads;
  std::string node;  // the grad_fn of h_n (padded) or of the packed data
};

// The module m on x (padded [T, B, F] or [B, T, F]; packed by lengths, unsorted, when given),
// h0 (c0), in m's device and dtype; loss sum(out w) + sum(h w) (+ sum(c w)) in float64.
template <class M>
Run run(M& m, const Tensor& x_in, const Tensor& h0_in, const Tensor& c0_in, const std::vector<int64_t>& lengths,
        bool batch_first) {
  constexpr bool lstm = std::is_same_v<M, nn::LSTM>;
  const Tensor p0 = m->parameters()[0];
  auto prep = [&](const Tensor& t) { return t.to(p0.device(), p0.dtype()).detach().requires_grad_(); };
  Tensor x = prep(x_in), h0 = prep(h0_in), c0 = lstm ? prep(c0_in) : Tensor();
  Run r;
  if (!lengths.empty()) {
    auto packed = R::pack_padded_sequence(x, lengths, batch_first, /*enforce_sorted=*/false);
    if constexpr (lstm) {
      auto [o, hc] = m->forward(packed, std::make_tuple(h0, c0));
      r.out = o.data();
      std::tie(r.h, r.c) = hc;
    } else {
      auto [o, h] = m->forward(packed, h0);
      r.out = o.data();
      r.h = h;
    }
    r.node = r.out.grad_fn() ? r.out.grad_fn()->name() : "";
  } else {
    if constexpr (lstm) {
      auto [o, hc] = m->forward(x, std::make_tuple(h0, c0));
      r.out = o;
      std::tie(r.h, r.c) = hc;
    } else {
      auto [o, h] = m->forward(x, h0);
      r.out = o;
      r.h = h;
    }
    r.node = r.h.grad_fn() ? r.h.grad_fn()->name() : "";
  }
  Tensor loss = (r.out.to(kFloat64) * weights_like(r.out)).sum() + (r.h.to(kFloat64) * weights_like(r.h)).sum();
  if (lstm) loss = loss + (r.c.to(kFloat64) * weights_like(r.c)).sum();
  loss.backward();
  r.gx = x.grad();
  r.gh = h0.grad();
  if (lstm) r.gc = c0.grad();
  for (const auto& [n, p] : m->named_parameters()) r.grads[n] = p.grad();
  return r;
}

// The module built by make on CUDA in dtype dt against its float64 CPU twin (same parameter
// values, rounded to dt), with inputs of T steps, B sequences.
template <class M, class Make>
void check(Make make, Dtype dt, double atol, double rtol, int64_t T = 5, int64_t B = 3,
           const std::vector<int64_t>& lengths = {}) {
  constexpr bool lstm = std::is_same_v<M, nn::LSTM>;
  M cpu = make();
  M gpu = make();
  cpu->to(Device(kCPU), kFloat64);
  gpu->to(Device(kCUDA), dt);
  {
    NoGradGuard no_grad;
    auto cp = cpu->parameters(), gp = gpu->parameters();
    for (size_t i = 0; i < cp.size(); ++i) {
      cp[i].copy_(cp[i].to(dt).to(kFloat64));  // the values dt can hold
      gp[i].copy_(cp[i]);
    }
  }
  const auto& base = *cpu;
  const int64_t F = base.input_size, dirs = base.bidirectional ? 2 : 1;
  const int64_t h_out = base.proj_size > 0 ? base.proj_size : base.hidden_size;
  const bool batch_first = base.batch_first;
  auto rounded = [&](Tensor t) { return t.to(dt).to(kFloat64); };
  Tensor x = rounded(batch_first ? randn({B, T, F}, TensorOptions(kFloat64)) : randn({T, B, F}, TensorOptions(kFloat64)));
  Tensor h0 = rounded(randn({base.num_layers * dirs, B, h_out}, TensorOptions(kFloat64)) * 0.5);
  Tensor c0 = lstm ? rounded(randn({base.num_layers * dirs, B, base.hidden_size}, TensorOptions(kFloat64)) * 0.5)
                   : Tensor();
  const Run want = run(cpu, x, h0, c0, lengths, batch_first);
  const Run got = run(gpu, x, h0, c0, lengths, batch_first);
  EXPECT_EQ(got.node, "CudnnRnnBackward0");
  EXPECT_EQ(got.out.dtype(), dt);
  expect_close(got.out, want.out, atol, rtol, "output");
  expect_close(got.h, want.h, atol, rtol, "h_n");
  if (lstm) expect_close(got.c, want.c, atol, rtol, "c_n");
  expect_close(got.gx, want.gx, atol, rtol, "grad input");
  expect_close(got.gh, want.gh, atol, rtol, "grad h_0");
  if (lstm) expect_close(got.gc, want.gc, atol, rtol, "grad c_0");
  ASSERT_EQ(got.grads.size(), want.grads.size());
  for (const auto& [n, g] : want.grads) {
    ASSERT_TRUE(got.grads.at(n).defined()) << n;
    EXPECT_EQ(got.grads.at(n).sizes().vec(), g.sizes().vec()) << n;
    expect_close(got.grads.at(n), g, atol, rtol, "grad " + n);
  }
}

constexpr double kF32 = 1e-4;
constexpr double kBf16Atol = 6e-2, kBf16Rtol = 5e-2;
constexpr double kF16 = 1e-2;

TEST_F(CudnnRnn, RnnTanhTwoLayersBidirectional) {
  check<nn::RNN>([] { return nn::RNN(nn::RNNOptions(4, 6).num_layers(2).bidirectional(true)); }, kFloat32, kF32,
                 kF32);
}

TEST_F(CudnnRnn, RnnReluOneLayerBatchFirstNoBias) {
  check<nn::RNN>(
      [] { return nn::RNN(nn::RNNOptions(4, 6).nonlinearity(kReLU).batch_first(true).bias(false)); },
      kFloat32, kF32, kF32);
}

TEST_F(CudnnRnn, LstmOneLayer) {
  check<nn::LSTM>([] { return nn::LSTM(nn::LSTMOptions(4, 6)); }, kFloat32, kF32, kF32);
}

TEST_F(CudnnRnn, LstmTwoLayersBidirectionalBatchFirst) {
  check<nn::LSTM>([] { return nn::LSTM(nn::LSTMOptions(4, 6).num_layers(2).bidirectional(true).batch_first(true)); },
                  kFloat32, kF32, kF32);
}

TEST_F(CudnnRnn, LstmProjectionTwoLayersBidirectional) {
  check<nn::LSTM>([] { return nn::LSTM(nn::LSTMOptions(4, 6).num_layers(2).bidirectional(true).proj_size(3)); },
                  kFloat32, kF32, kF32);
}

TEST_F(CudnnRnn, LstmProjectionNoBias) {
  check<nn::LSTM>([] { return nn::LSTM(nn::LSTMOptions(4, 6).proj_size(2).bias(false)); }, kFloat32, kF32, kF32);
}

TEST_F(CudnnRnn, GruOneLayer) {
  check<nn::GRU>([] { return nn::GRU(nn::GRUOptions(4, 6)); }, kFloat32, kF32, kF32);
}

TEST_F(CudnnRnn, GruTwoLayersBidirectional) {
  check<nn::GRU>([] { return nn::GRU(nn::GRUOptions(4, 6).num_layers(2).bidirectional(true)); }, kFloat32, kF32,
                 kF32);
}

TEST_F(CudnnRnn, LstmPackedUnsortedLengths) {
  check<nn::LSTM>([] { return nn::LSTM(nn::LSTMOptions(4, 6).num_layers(2).bidirectional(true)); }, kFloat32, kF32,
                  kF32, 5, 4, {3, 5, 1, 4});
}

TEST_F(CudnnRnn, GruPackedUnsortedLengthsBatchFirst) {
  check<nn::GRU>([] { return nn::GRU(nn::GRUOptions(4, 6).num_layers(2).batch_first(true)); }, kFloat32, kF32, kF32,
                 5, 4, {2, 5, 5, 3});
}

TEST_F(CudnnRnn, RnnTanhPackedUnsortedLengthsBidirectional) {
  check<nn::RNN>([] { return nn::RNN(nn::RNNOptions(4, 6).bidirectional(true)); }, kFloat32, kF32, kF32, 4, 3,
                 {1, 4, 2});
}

TEST_F(CudnnRnn, LstmBFloat16) {
  check<nn::LSTM>([] { return nn::LSTM(nn::LSTMOptions(8, 8).num_layers(2).bidirectional(true)); }, kBFloat16,
                  kBf16Atol, kBf16Rtol);
}

TEST_F(CudnnRnn, LstmProjectionBFloat16) {
  check<nn::LSTM>([] { return nn::LSTM(nn::LSTMOptions(8, 8).proj_size(4)); }, kBFloat16, kBf16Atol, kBf16Rtol);
}

TEST_F(CudnnRnn, GruBFloat16) {
  check<nn::GRU>([] { return nn::GRU(nn::GRUOptions(8, 8).num_layers(2)); }, kBFloat16, kBf16Atol, kBf16Rtol);
}

TEST_F(CudnnRnn, RnnTanhBFloat16) {
  check<nn::RNN>([] { return nn::RNN(nn::RNNOptions(8, 8).num_layers(2)); }, kBFloat16, kBf16Atol, kBf16Rtol);
}

TEST_F(CudnnRnn, LstmFloat16) {
  check<nn::LSTM>([] { return nn::LSTM(nn::LSTMOptions(8, 8).num_layers(2)); }, kFloat16, kF16, kF16);
}

// Without grad the forward runs in inference mode (no reserve space): the same values.
TEST_F(CudnnRnn, LstmInferenceModeMatchesTraining) {
  nn::LSTM m(nn::LSTMOptions(4, 6).num_layers(2));
  m->to(Device(kCUDA), kFloat32);
  Tensor x = randn({5, 3, 4}, TensorOptions(kFloat32).device(kCUDA));
  auto [out, hc] = m->forward(x);
  ASSERT_TRUE(out.requires_grad());
  Tensor out2;
  {
    NoGradGuard no_grad;
    out2 = std::get<0>(m->forward(x));
  }
  EXPECT_FALSE(out2.requires_grad());
  expect_close(out2, out, 1e-5, 1e-5, "inference");
}

// Dropout between layers (p = 0.5): training draws differ from eval and from each other, a
// seed repeats its draw, eval is deterministic and equals the CPU's result; one layer has
// nothing to drop.
TEST_F(CudnnRnn, LstmDropoutBetweenLayers) {
  nn::LSTM m(nn::LSTMOptions(4, 16).num_layers(2).dropout(0.5));
  nn::LSTM cpu(nn::LSTMOptions(4, 16).num_layers(2).dropout(0.5));
  cpu->to(Device(kCPU), kFloat64);
  m->to(Device(kCUDA), kFloat32);
  {
    NoGradGuard no_grad;
    auto cp = cpu->parameters(), gp = m->parameters();
    for (size_t i = 0; i < cp.size(); ++i) {
      cp[i].copy_(cp[i].to(kFloat32).to(kFloat64));
      gp[i].copy_(cp[i]);
    }
  }
  Tensor x64 = randn({6, 5, 4}, TensorOptions(kFloat64)).to(kFloat32).to(kFloat64);
  Tensor x = x64.to(Device(kCUDA), kFloat32);
  manual_seed(1);
  Tensor a = std::get<0>(m->forward(x));
  Tensor b = std::get<0>(m->forward(x));
  manual_seed(1);
  Tensor a2 = std::get<0>(m->forward(x));
  Tensor no_grad_train;  // dropout acts in training without grad too
  {
    NoGradGuard no_grad;
    no_grad_train = std::get<0>(m->forward(x));
  }
  m->eval();
  cpu->eval();
  Tensor e1 = std::get<0>(m->forward(x)), e2 = std::get<0>(m->forward(x));
  expect_close(e1, e2, 0, 0, "eval twice");
  expect_close(e1, std::get<0>(cpu->forward(x64)), kF32, kF32, "eval against the CPU");
  EXPECT_GT((a - e1).abs().max().item<double>(), 1e-3) << "training equals eval";
  EXPECT_GT((a - b).abs().max().item<double>(), 1e-3) << "two draws are the same";
  expect_close(a2, a, 0, 0, "the same seed");
  EXPECT_GT((no_grad_train - e1).abs().max().item<double>(), 1e-3) << "no dropout without grad";
  // gradients flow through the dropped layer
  m->train();
  Tensor xr = x.detach().requires_grad_();
  std::get<0>(m->forward(xr)).sum().backward();
  ASSERT_TRUE(xr.grad().defined());
  EXPECT_TRUE(std::isfinite(xr.grad().abs().sum().item<double>()));
  for (const Tensor& p : m->parameters()) ASSERT_TRUE(p.grad().defined());
}

// cuDNN's backward is not differentiable: double backward raises, as PyTorch's does.
TEST_F(CudnnRnn, LstmNoDoubleBackward) {
  nn::LSTM m(nn::LSTMOptions(4, 6));
  m->to(Device(kCUDA), kFloat32);
  Tensor x = randn({5, 3, 4}, TensorOptions(kFloat32).device(kCUDA)).requires_grad_();
  Tensor out = std::get<0>(m->forward(x));
  const std::string e = error_of([&] { autograd::grad({out.sum()}, {x}, {}, true, true); });
  EXPECT_NE(e.find("[lstm]"), std::string::npos) << e;
  EXPECT_NE(e.find("CudnnRnnBackward0"), std::string::npos) << e;
}

}  // namespace
}  // namespace wick
