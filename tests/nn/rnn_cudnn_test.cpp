// The recurrent layers' cuDNN path (CUDA with cuDNN; the tests skip otherwise): RNN relu/tanh, LSTM with and without projection, GRU, one and two
// layers, bidirectional, batch_first, packed sequences of unsorted lengths, float32 (tight) and
// 16-bit (loose). Outputs, h_n, c_n and every gradient (input, h_0, c_0, each parameter)
// against the same module on the CPU in float64, with parameters and inputs rounded to the
// dtype first so that only the computation differs; the node is CudnnRnnBackward0. Dropout
// between layers: training differs from eval, eval is deterministic, a seed repeats a draw.
// Flattened parameters: after a forward (or flatten_parameters) the parameters are views of one
// cuDNN weight space and their gradients views of one flat gradient, and the module still
// matches the CPU through optimizer steps, in-place changes, moves, load_state_dict, a parameter
// shared between modules and frozen parameters.
#include <cmath>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include "core/cudnn_rnn.h"
#include "nn/rnn_layers.h"
#include "nn_test_util.h"
#include "wick/optim/sgd.h"
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

// The flattened parameters and their handed-over gradients.
class CudnnRnnFlat : public CudnnRnn {};

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

// ---- flattened parameters

// Whether m's parameters are flattened: views of one storage, that storage the size of cuDNN's
// weight space, each parameter contiguous at the offset cuDNN gives its piece, the pieces
// disjoint and inside the storage.
bool flattened(const nn::RNNBaseImpl& m) {
  const std::vector<Tensor> params = m.parameters();
  auto space = detail::cudnn_rnn_weight_space(nn::detail::cudnn_layers(m), params);
  if (!space) return false;
  const auto& storage = params[0].impl()->storage();
  const char* base = static_cast<const char*>(storage->data());
  const char* end = base + storage->nbytes();
  std::vector<std::pair<const char*, const char*>> ranges;
  for (const Tensor& p : params) {
    if (p.impl()->storage().get() != storage.get() || !p.is_contiguous()) return false;
    const char* b = static_cast<const char*>(p.data_ptr());
    const char* e = b + p.numel() * p.element_size();
    if (b < base || e > end) return false;
    for (const auto& [ob, oe] : ranges)
      if (b < oe && ob < e) return false;
    ranges.emplace_back(b, e);
  }
  return detail::cudnn_rnn_weights_flat(params, space->buf.numel(), space->pieces);
}

// Whether every parameter's grad() is a view of one storage (the flat gradient cuDNN wrote).
bool grads_share_one_storage(const nn::RNNBaseImpl& m) {
  const std::vector<Tensor> params = m.parameters();
  for (const Tensor& p : params)
    if (!p.grad().defined() || p.grad().impl()->storage().get() != params[0].grad().impl()->storage().get())
      return false;
  return true;
}

// An LSTM on CUDA (float32) and its float64 twin on the CPU holding the same values.
struct LstmPair {
  nn::LSTM gpu{nullptr}, cpu{nullptr};
  explicit LstmPair(const nn::LSTMOptions& o) : gpu(o), cpu(o) {
    cpu->to(Device(kCPU), kFloat64);
    gpu->to(Device(kCUDA), kFloat32);
    NoGradGuard no_grad;
    auto cp = cpu->parameters(), gp = gpu->parameters();
    for (size_t i = 0; i < cp.size(); ++i) {
      cp[i].copy_(cp[i].to(kFloat32).to(kFloat64));
      gp[i].copy_(cp[i]);
    }
  }
};

// Outputs and every gradient of the pair on the same input (rounded to float32) agree.
void expect_pair_matches(LstmPair& pair, const std::string& when, uint64_t seed = 5) {
  manual_seed(seed);
  const int64_t T = 5, B = 3, dirs = pair.cpu->bidirectional ? 2 : 1;
  const int64_t h_out = pair.cpu->proj_size > 0 ? pair.cpu->proj_size : pair.cpu->hidden_size;
  auto rounded = [](Tensor t) { return t.to(kFloat32).to(kFloat64); };
  Tensor x = rounded(randn({T, B, pair.cpu->input_size}, TensorOptions(kFloat64)));
  Tensor h0 = rounded(randn({pair.cpu->num_layers * dirs, B, h_out}, TensorOptions(kFloat64)) * 0.5);
  Tensor c0 =
      rounded(randn({pair.cpu->num_layers * dirs, B, pair.cpu->hidden_size}, TensorOptions(kFloat64)) * 0.5);
  pair.cpu->zero_grad();
  pair.gpu->zero_grad();
  const Run want = run(pair.cpu, x, h0, c0, {}, false);
  const Run got = run(pair.gpu, x, h0, c0, {}, false);
  EXPECT_EQ(got.node, "CudnnRnnBackward0") << when;
  expect_close(got.out, want.out, kF32, kF32, when + ": output");
  expect_close(got.h, want.h, kF32, kF32, when + ": h_n");
  expect_close(got.c, want.c, kF32, kF32, when + ": c_n");
  expect_close(got.gx, want.gx, kF32, kF32, when + ": grad input");
  expect_close(got.gh, want.gh, kF32, kF32, when + ": grad h_0");
  expect_close(got.gc, want.gc, kF32, kF32, when + ": grad c_0");
  for (const auto& [n, g] : want.grads) {
    if (!g.defined()) {
      EXPECT_FALSE(got.grads.at(n).defined()) << when << ": " << n;
      continue;
    }
    ASSERT_TRUE(got.grads.at(n).defined()) << when << ": " << n;
    expect_close(got.grads.at(n), g, kF32, kF32, when + ": grad " + n);
  }
}

// The checks that find parameters laid out as a weight space, on CPU tensors (they read only
// storages, offsets and sizes): views of one storage of the space's size at their pieces'
// offsets; not another size, offset, order, a weight in two pieces, its own storage or a
// transposed view. A CPU module's flatten_parameters() does nothing.
TEST(CudnnRnnWeights, FlatLayoutChecks) {
  Tensor buf = zeros({20}, TensorOptions(kFloat32));
  const std::vector<Tensor> w{buf.narrow(0, 0, 6).view({2, 3}), buf.narrow(0, 8, 4)};
  using P = detail::CudnnRnnWeightPiece;
  const std::vector<P> pieces{{0, 0, 0, 6}, {1, 0, 8, 4}};
  EXPECT_TRUE(detail::cudnn_rnn_one_piece_each(w, pieces));
  EXPECT_TRUE(detail::cudnn_rnn_weights_flat(w, 20, pieces));
  EXPECT_FALSE(detail::cudnn_rnn_weights_flat(w, 19, pieces));
  EXPECT_FALSE(detail::cudnn_rnn_weights_flat(w, 20, {{0, 0, 0, 6}, {1, 0, 10, 4}}));
  EXPECT_FALSE(detail::cudnn_rnn_one_piece_each(w, {{0, 0, 0, 3}, {0, 3, 3, 3}, {1, 0, 8, 4}}));
  EXPECT_FALSE(detail::cudnn_rnn_one_piece_each(w, {{0, 0, 0, 6}, {0, 0, 8, 4}}));
  EXPECT_FALSE(detail::cudnn_rnn_weights_flat(std::vector<Tensor>{w[0], w[1].clone()}, 20, pieces));
  EXPECT_FALSE(detail::cudnn_rnn_weights_flat(std::vector<Tensor>{buf.narrow(0, 0, 6).view({3, 2}).t(), w[1]},
                                              20, pieces));

  nn::LSTM cpu(nn::LSTMOptions(4, 6).num_layers(2));
  cpu->flatten_parameters();
  const auto cp = cpu->parameters();
  for (size_t i = 1; i < cp.size(); ++i)
    EXPECT_NE(cp[0].impl()->storage().get(), cp[i].impl()->storage().get());
}

// A forward flattens the parameters in place: the handles held before (the module's, an
// optimizer's) see one weight space laid out as cuDNN's; the gradients are views of one flat
// gradient; outputs and gradients match the CPU before and after optimizer steps.
TEST_F(CudnnRnnFlat, LstmParametersFlattenedByForward) {
  LstmPair pair(nn::LSTMOptions(4, 6).num_layers(2));
  const std::vector<Tensor> before = pair.gpu->parameters();
  optim::SGD opt_gpu(pair.gpu->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  optim::SGD opt_cpu(pair.cpu->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  EXPECT_FALSE(flattened(*pair.gpu));
  expect_pair_matches(pair, "first step");
  ASSERT_TRUE(flattened(*pair.gpu));
  EXPECT_TRUE(grads_share_one_storage(*pair.gpu));
  const std::vector<Tensor> after = pair.gpu->parameters();
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(after[i].impl(), before[i].impl()) << i;
    EXPECT_EQ(opt_gpu.param_groups()[0].params()[i].data_ptr(), after[i].data_ptr()) << i;
  }
  const void* space = after[0].impl()->storage().get();
  for (int step = 0; step < 3; ++step) {
    opt_gpu.step();
    opt_cpu.step();
    for (size_t i = 0; i < after.size(); ++i)
      expect_close(after[i], pair.cpu->parameters()[i], kF32, kF32, "parameter " + std::to_string(i));
    expect_pair_matches(pair, "after step " + std::to_string(step), 6 + uint64_t(step));
    EXPECT_EQ(pair.gpu->parameters()[0].impl()->storage().get(), space) << "flattened again";
    EXPECT_TRUE(flattened(*pair.gpu));
  }
}

// flatten_parameters() flattens without a forward on CUDA; GRU, RNN and LSTM with a projection
// flatten too.
TEST_F(CudnnRnnFlat, FlattenParametersExplicitly) {
  nn::LSTM lstm(nn::LSTMOptions(4, 6).num_layers(2).bidirectional(true).proj_size(3));
  nn::GRU gru(nn::GRUOptions(4, 6).num_layers(2));
  nn::RNN rnn(nn::RNNOptions(4, 6).bias(false).bidirectional(true));
  lstm->to(Device(kCUDA));
  gru->to(Device(kCUDA));
  rnn->to(Device(kCUDA));
  const Tensor w = lstm->parameters()[0];
  const std::vector<double> values = w.to(kFloat64).cpu().to_vector<double>();
  EXPECT_FALSE(flattened(*lstm));
  lstm->flatten_parameters();
  gru->flatten_parameters();
  rnn->flatten_parameters();
  EXPECT_TRUE(flattened(*lstm));
  EXPECT_TRUE(flattened(*gru));
  EXPECT_TRUE(flattened(*rnn));
  expect_close(w, values, 0, "values kept");
  // again: already flat, nothing moves
  const void* data = w.data_ptr();
  lstm->flatten_parameters();
  EXPECT_EQ(w.data_ptr(), data);
}

// An in-place change to a parameter (under no_grad) is seen by the next forward; one between a
// forward and its backward is refused, as PyTorch refuses it (the forward read the parameters
// in place).
TEST_F(CudnnRnnFlat, LstmFlatInPlaceChangeSeen) {
  LstmPair pair(nn::LSTMOptions(4, 6).num_layers(2));
  expect_pair_matches(pair, "before");
  ASSERT_TRUE(flattened(*pair.gpu));
  {
    NoGradGuard no_grad;
    for (const Tensor& p : pair.gpu->parameters()) p.mul_(0.5);
    for (const Tensor& p : pair.cpu->parameters()) p.mul_(0.5);
  }
  expect_pair_matches(pair, "halved");
  EXPECT_TRUE(flattened(*pair.gpu));

  Tensor x = randn({5, 3, 4}, TensorOptions(kFloat32).device(kCUDA));
  Tensor out = std::get<0>(pair.gpu->forward(x));
  {
    NoGradGuard no_grad;
    pair.gpu->parameters()[1].mul_(0.5);
  }
  const std::string e = error_of([&] { out.sum().backward(); });
  EXPECT_NE(e.find("modified by an inplace operation"), std::string::npos) << e;
}

// .to(kCPU) gives the parameters storages of their own; .to(kCUDA) and a forward flatten them
// again, and the module still matches.
TEST_F(CudnnRnnFlat, LstmFlatMovedToCpuAndBack) {
  LstmPair pair(nn::LSTMOptions(4, 6).num_layers(2).bidirectional(true));
  expect_pair_matches(pair, "on CUDA");
  ASSERT_TRUE(flattened(*pair.gpu));
  pair.gpu->to(Device(kCPU));
  const auto cp = pair.gpu->parameters();
  EXPECT_TRUE(cp[0].is_cpu());
  EXPECT_NE(cp[0].impl()->storage().get(), cp[1].impl()->storage().get());
  for (size_t i = 0; i < cp.size(); ++i) ASSERT_TRUE(cp[i].grad().defined()) << i;
  pair.gpu->to(Device(kCUDA));
  EXPECT_FALSE(flattened(*pair.gpu));
  expect_pair_matches(pair, "back on CUDA");
  EXPECT_TRUE(flattened(*pair.gpu));
}

// load_state_dict copies into the flattened parameters: they keep their place and hold the
// loaded values; the module matches one built from those values.
TEST_F(CudnnRnnFlat, LstmFlatLoadStateDict) {
  LstmPair pair(nn::LSTMOptions(4, 6).num_layers(2));
  expect_pair_matches(pair, "before");
  ASSERT_TRUE(flattened(*pair.gpu));
  const void* data = pair.gpu->parameters()[0].data_ptr();
  nn::LSTM other(nn::LSTMOptions(4, 6).num_layers(2));  // float32 values of its own
  pair.gpu->load_state_dict(other->state_dict());
  pair.cpu->load_state_dict(other->state_dict());
  EXPECT_EQ(pair.gpu->parameters()[0].data_ptr(), data);
  EXPECT_TRUE(flattened(*pair.gpu));
  const auto want = other->parameters(), got = pair.gpu->parameters();
  for (size_t i = 0; i < got.size(); ++i) expect_close(got[i], want[i], 0, 0, "loaded " + std::to_string(i));
  expect_pair_matches(pair, "loaded");
}

// A parameter shared by two modules stays in the space of the module that flattened first; the
// other copies its weights on each call (no flattening back and forth); both match the CPU, the
// shared parameter's gradient summing both uses. Frozen parameters flatten and get no gradient.
TEST_F(CudnnRnnFlat, LstmSharedAndFrozenParameters) {
  LstmPair a(nn::LSTMOptions(4, 6)), b(nn::LSTMOptions(4, 6));
  b.gpu->replace_parameter("weight_hh_l0", a.gpu->named_parameters()["weight_hh_l0"]);
  b.cpu->replace_parameter("weight_hh_l0", a.cpu->named_parameters()["weight_hh_l0"]);
  Tensor x64 = randn({5, 3, 4}, TensorOptions(kFloat64)).to(kFloat32).to(kFloat64);
  Tensor x = x64.to(Device(kCUDA), kFloat32);
  const Tensor wg = weights_like(zeros({5, 3, 6}, TensorOptions(kFloat64)));
  const Tensor wg_gpu = wg.to(Device(kCUDA));
  const Tensor shared = a.gpu->named_parameters()["weight_hh_l0"];
  for (int round = 0; round < 2; ++round) {
    for (LstmPair* p : {&a, &b}) {
      p->gpu->zero_grad();
      p->cpu->zero_grad();
    }
    // a first: it flattens, taking the shared parameter into its space
    Tensor ya = std::get<0>(a.gpu->forward(x));
    Tensor yb = std::get<0>(b.gpu->forward(x));
    (ya.to(kFloat64).mul(wg_gpu).sum() + yb.to(kFloat64).mul(wg_gpu).sum()).backward();
    Tensor ca = std::get<0>(a.cpu->forward(x64));
    Tensor cb = std::get<0>(b.cpu->forward(x64));
    (ca.mul(wg).sum() + cb.mul(wg).sum()).backward();
    EXPECT_TRUE(flattened(*a.gpu)) << round;
    EXPECT_FALSE(flattened(*b.gpu)) << round;
    EXPECT_EQ(shared.impl()->storage(), a.gpu->parameters()[0].impl()->storage()) << round;
    for (LstmPair* p : {&a, &b}) {
      const auto want = p->cpu->named_parameters(), got = p->gpu->named_parameters();
      for (const auto& [n, w] : want) expect_close(got[n].grad(), w.grad(), kF32, kF32, "grad " + n);
    }
  }

  LstmPair frozen(nn::LSTMOptions(4, 6).num_layers(2));
  for (nn::LSTM* m : {&frozen.gpu, &frozen.cpu}) (*m)->named_parameters()["bias_hh_l1"].requires_grad_(false);
  expect_pair_matches(frozen, "one frozen");
  EXPECT_TRUE(flattened(*frozen.gpu));
  EXPECT_FALSE(frozen.gpu->named_parameters()["bias_hh_l1"].grad().defined());
  for (const Tensor& p : frozen.gpu->parameters()) p.requires_grad_(false);
  {
    Tensor xf = randn({5, 3, 4}, TensorOptions(kFloat32).device(kCUDA));
    Tensor out = std::get<0>(frozen.gpu->forward(xf));
    EXPECT_FALSE(out.requires_grad());
    expect_close(out, std::get<0>(frozen.cpu->forward(xf.to(Device(kCPU), kFloat64))), kF32, kF32,
                 "all frozen");
  }
  EXPECT_TRUE(flattened(*frozen.gpu));
}

}  // namespace
}  // namespace wick
