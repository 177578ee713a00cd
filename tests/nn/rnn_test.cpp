// RNN, LSTM, GRU, their cells and packed sequences against a float64 reference written here from
// the equations (a per-sequence, per-step loop over host vectors), on the CPU and on CUDA
// (skipped without a device); gradients by gradcheck; PyTorch's errors.
#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../autograd/gradcheck.h"
#include "nn_test_util.h"
#include "wick/wick.h"

namespace wick {
namespace {

using testing::error_of;
using testing::expect_close;
using testing::gradcheck;
namespace R = nn::utils::rnn;

using Vec = std::vector<double>;
using Params = std::map<std::string, Vec>;
enum class Kind { Tanh, Relu, Lstm, Gru };

double sigm(double v) { return 1.0 / (1.0 + std::exp(-v)); }

// W [rows, x.size()] (row-major) times x, plus b when given.
Vec affine(const Vec& W, const Vec& x, const Vec* b, size_t rows) {
  Vec y(rows, 0.0);
  for (size_t r = 0; r < rows; ++r) {
    double s = b && !b->empty() ? (*b)[r] : 0.0;
    for (size_t k = 0; k < x.size(); ++k) s += W[r * x.size() + k] * x[k];
    y[r] = s;
  }
  return y;
}

// One step of the cell whose parameters are P[<name><suffix>]: returns h', updates c (LSTM).
Vec ref_step(Kind kind, const Params& P, const std::string& suffix, size_t hidden, const Vec& x, const Vec& h, Vec& c) {
  auto get = [&](const std::string& n) -> const Vec* {
    auto it = P.find(n + suffix);
    return it == P.end() ? nullptr : &it->second;
  };
  const size_t gates = kind == Kind::Lstm ? 4 : kind == Kind::Gru ? 3 : 1;
  const Vec gi = affine(*get("weight_ih"), x, get("bias_ih"), gates * hidden);
  const Vec gh = affine(*get("weight_hh"), h, get("bias_hh"), gates * hidden);
  Vec out(hidden);
  for (size_t j = 0; j < hidden; ++j) {
    switch (kind) {
      case Kind::Tanh: out[j] = std::tanh(gi[j] + gh[j]); break;
      case Kind::Relu: out[j] = std::max(0.0, gi[j] + gh[j]); break;
      case Kind::Lstm: {
        const double i = sigm(gi[j] + gh[j]), f = sigm(gi[hidden + j] + gh[hidden + j]);
        const double g = std::tanh(gi[2 * hidden + j] + gh[2 * hidden + j]);
        const double o = sigm(gi[3 * hidden + j] + gh[3 * hidden + j]);
        c[j] = f * c[j] + i * g;
        out[j] = o * std::tanh(c[j]);
        break;
      }
      case Kind::Gru: {
        const double r = sigm(gi[j] + gh[j]), z = sigm(gi[hidden + j] + gh[hidden + j]);
        const double n = std::tanh(gi[2 * hidden + j] + r * gh[2 * hidden + j]);
        out[j] = (1 - z) * n + z * h[j];
        break;
      }
    }
  }
  if (const Vec* w_hr = get("weight_hr")) out = affine(*w_hr, out, nullptr, w_hr->size() / hidden);
  return out;
}

struct RefSeq {
  std::vector<Vec> out;  // per step, D * h_out
  std::vector<Vec> h_n, c_n;
};

// The stacked layers over one sequence xs (its own length), h0/c0 per layer and direction.
RefSeq ref_run(Kind kind, const Params& P, int64_t layers, int64_t dirs, size_t hidden, std::vector<Vec> xs,
               const std::vector<Vec>& h0, const std::vector<Vec>& c0) {
  RefSeq r;
  const size_t T = xs.size();
  for (int64_t l = 0; l < layers; ++l) {
    std::vector<Vec> next(T);
    for (int64_t d = 0; d < dirs; ++d) {
      const std::string suffix = "_l" + std::to_string(l) + (d ? "_reverse" : "");
      const size_t k = size_t(l * dirs + d);
      Vec h = h0[k], c = kind == Kind::Lstm ? c0[k] : Vec();
      for (size_t s = 0; s < T; ++s) {
        const size_t t = d ? T - 1 - s : s;
        h = ref_step(kind, P, suffix, hidden, xs[t], h, c);
        next[t].insert(next[t].end(), h.begin(), h.end());
      }
      r.h_n.push_back(h);
      r.c_n.push_back(c);
    }
    xs = next;
  }
  r.out = xs;
  return r;
}

Params params_of(const nn::Module& m) {
  Params P;
  for (const auto& [n, t] : m.named_parameters()) P[n] = t.detach().cpu().to_vector<double>();
  return P;
}
Vec at(const Tensor& t, std::initializer_list<int64_t> idx) {
  Tensor s = t;
  for (int64_t i : idx) s = s.select(0, i);
  return s.detach().cpu().to_vector<double>();
}
void expect_vec(const Tensor& got, const Vec& want, double tol, const std::string& what) {
  expect_close(got, want, tol, what);
}

class RnnOnDevices : public testing::OnEachDevice<34> {};

// out [T, B, D * h_out] and h_n [L * D, B, h_out] (c_n) of a module against ref_run per batch element.
void check_padded(Kind kind, const nn::Module& m, int64_t layers, int64_t dirs, size_t hidden, const Tensor& x,
                  const Tensor& h0, const Tensor& c0, const Tensor& out, const Tensor& h_n, const Tensor& c_n,
                  double tol) {
  const int64_t T = x.size(0), B = x.size(1);
  const Params P = params_of(m);
  for (int64_t b = 0; b < B; ++b) {
    std::vector<Vec> xs, hs, cs;
    for (int64_t t = 0; t < T; ++t) xs.push_back(at(x, {t, b}));
    for (int64_t k = 0; k < layers * dirs; ++k) {
      hs.push_back(at(h0, {k, b}));
      if (kind == Kind::Lstm) cs.push_back(at(c0, {k, b}));
    }
    const RefSeq r = ref_run(kind, P, layers, dirs, hidden, xs, hs, cs);
    for (int64_t t = 0; t < T; ++t)
      expect_vec(out.select(0, t).select(0, b), r.out[size_t(t)], tol, "output t=" + std::to_string(t));
    for (int64_t k = 0; k < layers * dirs; ++k) {
      expect_vec(h_n.select(0, k).select(0, b), r.h_n[size_t(k)], tol, "h_n k=" + std::to_string(k));
      if (kind == Kind::Lstm) expect_vec(c_n.select(0, k).select(0, b), r.c_n[size_t(k)], tol, "c_n");
    }
  }
}

TensorOptions f64(Device d) { return TensorOptions(kFloat64).device(d); }

TEST_P(RnnOnDevices, RnnTanhTwoLayersBidirectional) {
  nn::RNN m(nn::RNNOptions(3, 4).num_layers(2).bidirectional(true));
  m->to(dev(), kFloat64);
  Tensor x = randn({5, 3, 3}, f64(dev())), h0 = randn({4, 3, 4}, f64(dev()));
  auto [out, h_n] = m(x, h0);
  EXPECT_EQ(out.sizes().vec(), (std::vector<int64_t>{5, 3, 8}));
  EXPECT_EQ(h_n.sizes().vec(), (std::vector<int64_t>{4, 3, 4}));
  EXPECT_EQ(out.device(), dev());
  check_padded(Kind::Tanh, *m, 2, 2, 4, x, h0, {}, out, h_n, {}, 1e-12);
}

TEST_P(RnnOnDevices, RnnReluBatchFirstNoBiasZeroState) {
  nn::RNN m(nn::RNNOptions(3, 4).nonlinearity(kReLU).batch_first(true).bias(false));
  m->to(dev(), kFloat64);
  Tensor x = randn({2, 6, 3}, f64(dev()));
  auto [out, h_n] = m(x);
  EXPECT_EQ(out.sizes().vec(), (std::vector<int64_t>{2, 6, 4}));
  check_padded(Kind::Relu, *m, 1, 1, 4, x.transpose(0, 1), zeros({1, 2, 4}, f64(dev())), {}, out.transpose(0, 1), h_n,
               {}, 1e-12);
}

TEST_P(RnnOnDevices, LstmProjectionTwoLayersBidirectionalBatchFirst) {
  nn::LSTM m(nn::LSTMOptions(3, 5).num_layers(2).bidirectional(true).proj_size(2).batch_first(true));
  m->to(dev(), kFloat64);
  Tensor x = randn({3, 4, 3}, f64(dev()));
  Tensor h0 = randn({4, 3, 2}, f64(dev())), c0 = randn({4, 3, 5}, f64(dev()));
  auto [out, hc] = m(x, std::make_tuple(h0, c0));
  auto [h_n, c_n] = hc;
  EXPECT_EQ(out.sizes().vec(), (std::vector<int64_t>{3, 4, 4}));
  EXPECT_EQ(h_n.sizes().vec(), (std::vector<int64_t>{4, 3, 2}));
  EXPECT_EQ(c_n.sizes().vec(), (std::vector<int64_t>{4, 3, 5}));
  check_padded(Kind::Lstm, *m, 2, 2, 5, x.transpose(0, 1), h0, c0, out.transpose(0, 1), h_n, c_n, 1e-12);
}

TEST_P(RnnOnDevices, LstmFloat32) {
  nn::LSTM m(nn::LSTMOptions(4, 6).num_layers(2));
  m->to(dev());
  Tensor x = randn({7, 2, 4}, TensorOptions(dev()));
  auto [out, hc] = m(x);
  EXPECT_EQ(out.dtype(), kFloat32);
  check_padded(Kind::Lstm, *m, 2, 1, 6, x, zeros({2, 2, 6}), zeros({2, 2, 6}), out, std::get<0>(hc), std::get<1>(hc),
               2e-5);
}

TEST_P(RnnOnDevices, GruTwoLayersBidirectional) {
  nn::GRU m(nn::GRUOptions(3, 4).num_layers(2).bidirectional(true));
  m->to(dev(), kFloat64);
  Tensor x = randn({4, 2, 3}, f64(dev())), h0 = randn({4, 2, 4}, f64(dev()));
  auto [out, h_n] = m(x, h0);
  check_padded(Kind::Gru, *m, 2, 2, 4, x, h0, {}, out, h_n, {}, 1e-12);
}

TEST_P(RnnOnDevices, UnbatchedInputIsABatchOfOne) {
  nn::GRU m(nn::GRUOptions(3, 4).num_layers(2).batch_first(true));
  m->to(dev(), kFloat64);
  Tensor x = randn({5, 3}, f64(dev())), h0 = randn({2, 4}, f64(dev()));
  auto [out, h_n] = m(x, h0);
  EXPECT_EQ(out.sizes().vec(), (std::vector<int64_t>{5, 4}));
  EXPECT_EQ(h_n.sizes().vec(), (std::vector<int64_t>{2, 4}));
  auto [out1, h1] = m(x.unsqueeze(0), h0.unsqueeze(1));
  expect_close(out, out1.squeeze(0), 0, 0, "output");
  expect_close(h_n, h1.squeeze(1), 0, 0, "h_n");
  check_padded(Kind::Gru, *m, 2, 1, 4, x.unsqueeze(1), h0.unsqueeze(1), {}, out.unsqueeze(1), h_n.unsqueeze(1), {},
               1e-12);

  nn::LSTM lstm(nn::LSTMOptions(3, 4));
  lstm->to(dev(), kFloat64);
  auto [lo, lhc] = lstm(x);
  EXPECT_EQ(lo.sizes().vec(), (std::vector<int64_t>{5, 4}));
  EXPECT_EQ(std::get<1>(lhc).sizes().vec(), (std::vector<int64_t>{1, 4}));
}

// Packed batches of unsorted lengths: each sequence as if run alone; the output padded with
// zeros past its length; h_n (c_n) its state after its last step, in the input's batch order.
template <class M>
void check_packed(Kind kind, M& m, Device dev, bool batch_first) {
  const std::vector<int64_t> lengths{3, 5, 2, 4};
  const int64_t B = 4, T = 5, layers = 2, dirs = 2, hidden = 4;
  const std::vector<int64_t> x_size = batch_first ? std::vector<int64_t>{B, T, 3} : std::vector<int64_t>{T, B, 3};
  Tensor x = randn(x_size, f64(dev));
  Tensor h0 = randn({layers * dirs, B, hidden}, f64(dev)), c0 = randn({layers * dirs, B, hidden}, f64(dev));
  R::PackedSequence packed = R::pack_padded_sequence(x, lengths, batch_first, /*enforce_sorted=*/false);
  Tensor out_data, h_n, c_n;
  R::PackedSequence out_packed;
  if constexpr (std::is_same_v<M, nn::LSTM>) {
    auto [o, hc] = m(packed, std::make_tuple(h0, c0));
    out_packed = o;
    std::tie(h_n, c_n) = hc;
  } else {
    std::tie(out_packed, h_n) = m(packed, h0);
  }
  EXPECT_EQ(out_packed.batch_sizes().to_vector<int64_t>(), (std::vector<int64_t>{4, 4, 3, 2, 1}));
  EXPECT_EQ(out_packed.sorted_indices().cpu().to_vector<int64_t>(), (std::vector<int64_t>{1, 3, 0, 2}));
  auto [out, out_lengths] = R::pad_packed_sequence(out_packed, batch_first);
  EXPECT_EQ(out_lengths.cpu().to_vector<int64_t>(), lengths);
  if (batch_first) out = out.transpose(0, 1), x = x.transpose(0, 1);
  ASSERT_EQ(out.sizes().vec(), (std::vector<int64_t>{T, B, dirs * hidden}));
  const Params P = params_of(*m);
  for (int64_t b = 0; b < B; ++b) {
    std::vector<Vec> xs, hs, cs;
    for (int64_t t = 0; t < lengths[size_t(b)]; ++t) xs.push_back(at(x, {t, b}));
    for (int64_t k = 0; k < layers * dirs; ++k) {
      hs.push_back(at(h0, {k, b}));
      cs.push_back(at(c0, {k, b}));
    }
    const RefSeq r = ref_run(kind, P, layers, dirs, size_t(hidden), xs, hs, cs);
    for (int64_t t = 0; t < T; ++t)
      expect_vec(out.select(0, t).select(0, b), t < lengths[size_t(b)] ? r.out[size_t(t)] : Vec(size_t(dirs * hidden), 0.0),
                 1e-12, "output b=" + std::to_string(b) + " t=" + std::to_string(t));
    for (int64_t k = 0; k < layers * dirs; ++k) {
      expect_vec(h_n.select(0, k).select(0, b), r.h_n[size_t(k)], 1e-12, "h_n b=" + std::to_string(b));
      if (kind == Kind::Lstm) expect_vec(c_n.select(0, k).select(0, b), r.c_n[size_t(k)], 1e-12, "c_n");
    }
  }
}

TEST_P(RnnOnDevices, PackedUnsortedLstm) {
  nn::LSTM m(nn::LSTMOptions(3, 4).num_layers(2).bidirectional(true));
  m->to(dev(), kFloat64);
  check_packed(Kind::Lstm, m, dev(), false);
}

TEST_P(RnnOnDevices, PackedUnsortedGruBatchFirst) {
  nn::GRU m(nn::GRUOptions(3, 4).num_layers(2).bidirectional(true).batch_first(true));
  m->to(dev(), kFloat64);
  check_packed(Kind::Gru, m, dev(), true);
}

TEST_P(RnnOnDevices, PackedRnnWithoutInitialState) {
  nn::RNN m(nn::RNNOptions(2, 3));
  m->to(dev(), kFloat64);
  std::vector<Tensor> seqs{randn({4, 2}, f64(dev())), randn({2, 2}, f64(dev()))};
  auto [out, h_n] = m(R::pack_sequence(seqs));
  EXPECT_FALSE(out.sorted_indices().defined());
  auto [padded, lengths] = R::pad_packed_sequence(out);
  for (int64_t b = 0; b < 2; ++b) {
    std::vector<Vec> xs;
    for (int64_t t = 0; t < seqs[size_t(b)].size(0); ++t) xs.push_back(at(seqs[size_t(b)], {t}));
    const RefSeq r = ref_run(Kind::Tanh, params_of(*m), 1, 1, 3, xs, {Vec(3, 0.0)}, {});
    expect_vec(padded.select(1, b).narrow(0, 0, seqs[size_t(b)].size(0)).flatten(), [&] {
      Vec v;
      for (const Vec& o : r.out) v.insert(v.end(), o.begin(), o.end());
      return v;
    }(), 1e-12, "output");
    expect_vec(h_n.select(0, 0).select(0, b), r.h_n[0], 1e-12, "h_n");
  }
}

TEST_P(RnnOnDevices, Cells) {
  const int64_t B = 3, in = 4, H = 5;
  Tensor x = randn({B, in}, f64(dev())), h = randn({B, H}, f64(dev())), c = randn({B, H}, f64(dev()));
  auto rows = [&](const Tensor& t, int64_t b) { return at(t, {b}); };
  for (Kind kind : {Kind::Tanh, Kind::Relu}) {
    nn::RNNCell cell(nn::RNNCellOptions(in, H).nonlinearity(kind == Kind::Tanh ? "tanh" : "relu"));
    cell->to(dev(), kFloat64);
    Tensor y = cell(x, h);
    Tensor y0 = cell(x);
    const Params P = params_of(*cell);
    for (int64_t b = 0; b < B; ++b) {
      Vec cc;
      expect_vec(y.select(0, b), ref_step(kind, P, "", size_t(H), rows(x, b), rows(h, b), cc), 1e-12, "RNNCell");
      expect_vec(y0.select(0, b), ref_step(kind, P, "", size_t(H), rows(x, b), Vec(size_t(H), 0.0), cc), 1e-12, "RNNCell h=0");
    }
    expect_close(cell(x.select(0, 1), h.select(0, 1)), y.select(0, 1), 1e-12, 1e-12, "unbatched");
  }
  nn::LSTMCell lstm(in, H);
  lstm->to(dev(), kFloat64);
  auto [h1, c1] = lstm(x, std::make_tuple(h, c));
  nn::GRUCell gru(nn::GRUCellOptions(in, H).bias(false));
  gru->to(dev(), kFloat64);
  Tensor g1 = gru(x, h);
  for (int64_t b = 0; b < B; ++b) {
    Vec cc = rows(c, b);
    expect_vec(h1.select(0, b), ref_step(Kind::Lstm, params_of(*lstm), "", size_t(H), rows(x, b), rows(h, b), cc), 1e-12,
               "LSTMCell h");
    expect_vec(c1.select(0, b), cc, 1e-12, "LSTMCell c");
    Vec none;
    expect_vec(g1.select(0, b), ref_step(Kind::Gru, params_of(*gru), "", size_t(H), rows(x, b), rows(h, b), none), 1e-12,
               "GRUCell");
  }
  auto [hu, cu] = lstm(x.select(0, 2), std::make_tuple(h.select(0, 2), c.select(0, 2)));
  expect_close(hu, h1.select(0, 2), 1e-12, 1e-12, "LSTMCell unbatched h");
  expect_close(cu, c1.select(0, 2), 1e-12, 1e-12, "LSTMCell unbatched c");
}

// Gradients through packing, two bidirectional LSTM layers with projections, and unpacking,
// for the input, the initial state and the weights (each replaced by a gradcheck input).
TEST_P(RnnOnDevices, GradcheckPackedLstm) {
  manual_seed(3);
  nn::LSTM m(nn::LSTMOptions(2, 3).num_layers(2).bidirectional(true).proj_size(2));
  m->to(kFloat64);
  std::vector<Tensor> inputs{testing::rnd({3, 3, 2}), testing::rnd({4, 3, 2}), testing::rnd({4, 3, 3}),
                             m->named_parameters()[1].second.detach().clone().requires_grad_(),   // weight_hh_l0
                             m->named_parameters()[19].second.detach().clone().requires_grad_()};  // weight_hr_l1_reverse
  ASSERT_EQ(m->named_parameters()[19].first, "weight_hr_l1_reverse");
  m->to(dev());
  gradcheck(
      [&](const std::vector<Tensor>& v) {
        m->replace_parameter("weight_hh_l0", v[3]);
        m->replace_parameter("weight_hr_l1_reverse", v[4]);
        auto packed = R::pack_padded_sequence(v[0], std::vector<int64_t>{2, 3, 1}, false, false);
        auto [out, hc] = m(packed, std::make_tuple(v[1], v[2]));
        auto [padded, lengths] = R::pad_packed_sequence(out);
        return cat({padded.flatten(), std::get<0>(hc).flatten(), std::get<1>(hc).flatten()});
      },
      inputs, dev());
}

TEST_P(RnnOnDevices, GradcheckGruAndRnnCells) {
  nn::GRU gru(nn::GRUOptions(2, 3).batch_first(true).bidirectional(true));
  gru->to(dev(), kFloat64);
  gradcheck(
      [&](const std::vector<Tensor>& v) {
        auto [out, h] = gru(v[0], v[1]);
        return cat({out.flatten(), h.flatten()});
      },
      {testing::rnd({2, 3, 2}), testing::rnd({2, 2, 3})}, dev());
  nn::RNNCell cell(2, 3);
  cell->to(dev(), kFloat64);
  gradcheck([&](const std::vector<Tensor>& v) { return cell(v[0], v[1]); }, {testing::rnd({2, 2}), testing::rnd({2, 3})},
            dev());
  nn::LSTMCell lcell(2, 3);
  lcell->to(dev(), kFloat64);
  gradcheck(
      [&](const std::vector<Tensor>& v) {
        auto [h, c] = lcell(v[0], std::make_tuple(v[1], v[2]));
        return cat({h.flatten(), c.flatten()});
      },
      {testing::rnd({2, 2}), testing::rnd({2, 3}), testing::rnd({2, 3})}, dev());
}

// Dropout acts between layers in training only: eval equals the same weights without dropout.
TEST_P(RnnOnDevices, DropoutBetweenLayersInTrainingOnly) {
  nn::LSTM m(nn::LSTMOptions(3, 4).num_layers(2).dropout(0.5));
  nn::LSTM plain(nn::LSTMOptions(3, 4).num_layers(2));
  m->to(dev(), kFloat64);
  plain->to(dev(), kFloat64);
  plain->load_state_dict(m->state_dict());
  Tensor x = randn({4, 2, 3}, f64(dev()));
  Tensor want = std::get<0>(plain(x));
  Tensor train_out = std::get<0>(m(x));
  EXPECT_GT((train_out - want).abs().max().item<double>(), 1e-3);
  m->eval();
  expect_close(std::get<0>(m(x)), want, 0, 0, "eval");
  // one layer: nothing between layers to drop
  nn::GRU one(nn::GRUOptions(3, 4).dropout(0.5));
  nn::GRU one_plain(3, 4);
  one->to(dev(), kFloat64);
  one_plain->to(dev(), kFloat64);
  one_plain->load_state_dict(one->state_dict());
  expect_close(std::get<0>(one(x)), std::get<0>(one_plain(x)), 0, 0, "one layer");
}

WICK_INSTANTIATE_ON_DEVICES(RnnOnDevices);

TEST(RnnModules, ParameterNamesShapesAndInit) {
  nn::LSTM m(nn::LSTMOptions(3, 5).num_layers(2).bidirectional(true).proj_size(2));
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& [n, t] : m->named_parameters()) {
    names.push_back(n);
    shapes.push_back(t.sizes().vec());
    auto v = t.to_vector<double>();
    for (double e : v) {
      EXPECT_LE(std::abs(e), 1 / std::sqrt(5.0)) << n;
    }
    EXPECT_GT(t.std().item<double>(), 0.05) << n;
  }
  const std::vector<std::string> want_names{
      "weight_ih_l0",         "weight_hh_l0",         "bias_ih_l0",         "bias_hh_l0",         "weight_hr_l0",
      "weight_ih_l0_reverse", "weight_hh_l0_reverse", "bias_ih_l0_reverse", "bias_hh_l0_reverse", "weight_hr_l0_reverse",
      "weight_ih_l1",         "weight_hh_l1",         "bias_ih_l1",         "bias_hh_l1",         "weight_hr_l1",
      "weight_ih_l1_reverse", "weight_hh_l1_reverse", "bias_ih_l1_reverse", "bias_hh_l1_reverse", "weight_hr_l1_reverse"};
  EXPECT_EQ(names, want_names);
  EXPECT_EQ(shapes[0], (std::vector<int64_t>{20, 3}));
  EXPECT_EQ(shapes[1], (std::vector<int64_t>{20, 2}));
  EXPECT_EQ(shapes[2], (std::vector<int64_t>{20}));
  EXPECT_EQ(shapes[4], (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(shapes[10], (std::vector<int64_t>{20, 4}));
  EXPECT_EQ(m->all_weights().size(), 20u);

  nn::GRU gru(nn::GRUOptions(3, 4).bias(false));
  auto gp = gru->named_parameters();
  ASSERT_EQ(gp.size(), 2u);
  EXPECT_EQ(gp[0].first, "weight_ih_l0");
  EXPECT_EQ(gp[0].second.sizes().vec(), (std::vector<int64_t>{12, 3}));
  EXPECT_EQ(gp[1].second.sizes().vec(), (std::vector<int64_t>{12, 4}));

  nn::LSTMCell cell(3, 4);
  auto cp = cell->named_parameters();
  ASSERT_EQ(cp.size(), 4u);
  EXPECT_EQ(cp[0].first, "weight_ih");
  EXPECT_EQ(cp[3].first, "bias_hh");
  EXPECT_EQ(cp[0].second.sizes().vec(), (std::vector<int64_t>{16, 3}));
  nn::RNNCell nobias(nn::RNNCellOptions(3, 4).bias(false));
  EXPECT_EQ(nobias->parameters().size(), 2u);
}

TEST(RnnModules, Repr) {
  auto repr = [](const nn::Module& m) {
    std::ostringstream os;
    os << m;
    return os.str();
  };
  EXPECT_EQ(repr(*nn::LSTM(nn::LSTMOptions(3, 5).num_layers(2).batch_first(true).dropout(0.5).bidirectional(true).proj_size(2))),
            "LSTM(3, 5, proj_size=2, num_layers=2, batch_first=True, dropout=0.5, bidirectional=True)");
  EXPECT_EQ(repr(*nn::RNN(nn::RNNOptions(4, 8).bias(false).nonlinearity("relu"))), "RNN(4, 8, bias=False)");
  EXPECT_EQ(repr(*nn::GRU(2, 3)), "GRU(2, 3)");
  EXPECT_EQ(repr(*nn::RNNCell(nn::RNNCellOptions(3, 4).nonlinearity(kReLU))), "RNNCell(3, 4, nonlinearity=relu)");
  EXPECT_EQ(repr(*nn::LSTMCell(3, 4)), "LSTMCell(3, 4)");
  EXPECT_EQ(repr(*nn::GRUCell(nn::GRUCellOptions(3, 4).bias(false))), "GRUCell(3, 4, bias=False)");
}

TEST(RnnModules, Errors) {
  nn::LSTM lstm(nn::LSTMOptions(3, 4).num_layers(2));
  nn::GRU gru(3, 4);
  nn::RNN rnn(3, 4);
  EXPECT_EQ(error_of([&] { lstm(randn({2, 2, 2, 3})); }), "[LSTM] Expected input to be 2D or 3D, got 4D instead");
  EXPECT_EQ(error_of([&] { gru(randn({5, 2, 6})); }),
            "[GRU] input.size(-1) must be equal to input_size. Expected 3, got 6");
  EXPECT_EQ(error_of([&] { rnn(randn({5, 2, 3}), randn({1, 3, 4})); }),
            "[RNN] Expected hidden size (1, 2, 4), got [1, 3, 4]");
  EXPECT_EQ(error_of([&] { rnn(randn({5, 2, 3}), randn({2, 4})); }),
            "[RNN] For batched 3-D input, hx should also be 3-D but got 2-D tensor");
  EXPECT_EQ(error_of([&] { rnn(randn({5, 3}), randn({1, 2, 4})); }),
            "[RNN] For unbatched 2-D input, hx should also be 2-D but got 3-D tensor");
  EXPECT_EQ(error_of([&] { lstm(randn({5, 2, 3}), std::make_tuple(zeros({2, 2, 4}), zeros({2, 3, 4}))); }),
            "[LSTM] Expected hidden[1] size (2, 2, 4), got [2, 3, 4]");
  EXPECT_EQ(error_of([&] { lstm(randn({5, 2, 3}), std::make_tuple(zeros({2, 2, 5}), zeros({2, 2, 4}))); }),
            "[LSTM] Expected hidden[0] size (2, 2, 4), got [2, 2, 5]");
  EXPECT_EQ(error_of([&] { lstm(randn({5, 2, 3}), std::make_tuple(zeros({2, 4}), zeros({2, 2, 4}))); }),
            "[LSTM] For batched 3-D input, hx and cx should also be 3-D but got (2-D, 3-D) tensors");
  EXPECT_EQ(error_of([&] { lstm(randn({5, 2, 3}, kFloat64)); }), "[LSTM] input must have the type float32, got type float64");
  EXPECT_EQ(error_of([] { nn::LSTM(nn::LSTMOptions(3, 4).proj_size(4)); }), "[LSTM] proj_size has to be smaller than hidden_size");
  EXPECT_EQ(error_of([] { nn::GRU(nn::GRUOptions(3, 4).dropout(1.5)); }),
            "[GRU] dropout should be a number in range [0, 1] representing the probability of an element being zeroed");
  EXPECT_EQ(error_of([] { nn::RNN(nn::RNNOptions(3, 0)); }), "[RNN] hidden_size must be greater than zero");
  EXPECT_EQ(error_of([] { nn::RNN(nn::RNNOptions(3, 4).num_layers(0)); }), "[RNN] num_layers must be greater than zero");
  EXPECT_EQ(error_of([] { nn::RNN(nn::RNNOptions(3, 4).nonlinearity("gelu")); }),
            "[RNN] Unknown nonlinearity 'gelu'. Select from 'tanh' or 'relu'.");
  // a failed call changes nothing: the module still runs
  EXPECT_EQ(std::get<0>(lstm(randn({5, 2, 3}))).sizes().vec(), (std::vector<int64_t>{5, 2, 4}));

  nn::LSTMCell lc(3, 4);
  nn::GRUCell gc(3, 4);
  nn::RNNCell rc(nn::RNNCellOptions(3, 4).nonlinearity("sigmoid"));
  EXPECT_EQ(error_of([&] { gc(randn({2, 2, 3})); }), "[GRUCell] Expected input to be 1D or 2D, got 3D instead");
  EXPECT_EQ(error_of([&] { gc(randn({2, 3}), randn({1, 2, 4})); }), "[GRUCell] Expected hidden to be 1D or 2D, got 3D instead");
  EXPECT_EQ(error_of([&] { lc(randn({2, 3}), std::make_tuple(randn({2, 4}), randn({1, 2, 4}))); }),
            "[LSTMCell] Expected hx[1] to be 1D or 2D, got 3D instead");
  EXPECT_EQ(error_of([&] { gc(randn({2, 5})); }), "[GRUCell] input has inconsistent input_size: got 5 expected 3");
  EXPECT_EQ(error_of([&] { gc(randn({2, 3}), randn({3, 4})); }),
            "[GRUCell] Input batch size 2 doesn't match hidden0 batch size 3");
  EXPECT_EQ(error_of([&] { lc(randn({2, 3}), std::make_tuple(randn({2, 4}), randn({2, 5}))); }),
            "[LSTMCell] hidden1 has inconsistent hidden_size: got 5, expected 4");
  EXPECT_EQ(error_of([&] { rc(randn({2, 3})); }), "[RNNCell] Unknown nonlinearity: sigmoid");
}

// ---- packed sequences

TEST(PackedSequence, PadSequence) {
  Tensor a = tensor({1.0, 2.0, 3.0}), b = tensor({4.0}), c = tensor({5.0, 6.0});
  expect_close(R::pad_sequence({a, b, c}), tensor({{1.0, 4.0, 5.0}, {2.0, 0.0, 6.0}, {3.0, 0.0, 0.0}}), 0, 0);
  expect_close(R::pad_sequence({a, b, c}, true, -1.0), tensor({{1.0, 2.0, 3.0}, {4.0, -1.0, -1.0}, {5.0, 6.0, -1.0}}), 0, 0);
  expect_close(R::pad_sequence({a, b, c}, true, 0.0, "left"), tensor({{1.0, 2.0, 3.0}, {0.0, 0.0, 4.0}, {0.0, 5.0, 6.0}}), 0,
               0);
  Tensor m = randn({2, 3, 2});
  EXPECT_EQ(R::pad_sequence({m, randn({4, 3, 2})}).sizes().vec(), (std::vector<int64_t>{4, 2, 3, 2}));
  EXPECT_EQ(error_of([] { R::pad_sequence({}); }), "[pad_sequence] received an empty list of sequences");
  EXPECT_EQ(error_of([&] { R::pad_sequence({a}, false, 0.0, "middle"); }),
            "[pad_sequence] Expected padding_side to be one of left or right, but got middle.");
}

TEST(PackedSequence, PackPaddedSortedAndUnsorted) {
  // columns are sequences of lengths 2, 3, 1: [T=3, B=3]
  Tensor x = tensor({{1.0, 10.0, 100.0}, {2.0, 20.0, 200.0}, {3.0, 30.0, 300.0}});
  auto p = R::pack_padded_sequence(x, std::vector<int64_t>{2, 3, 1}, false, false);
  expect_close(p.data(), tensor({10.0, 1.0, 100.0, 20.0, 2.0, 30.0}), 0, 0, "data");
  EXPECT_EQ(p.batch_sizes().to_vector<int64_t>(), (std::vector<int64_t>{3, 2, 1}));
  EXPECT_EQ(p.batch_sizes().device(), Device(kCPU));
  EXPECT_EQ(p.sorted_indices().to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 2}));
  EXPECT_EQ(p.unsorted_indices().to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 2}));
  auto [padded, lengths] = R::pad_packed_sequence(p, false, -1.0);
  expect_close(padded, tensor({{1.0, 10.0, 100.0}, {2.0, 20.0, -1.0}, {-1.0, 30.0, -1.0}}), 0, 0, "padded");
  EXPECT_EQ(lengths.to_vector<int64_t>(), (std::vector<int64_t>{2, 3, 1}));
  auto [bf, bf_lengths] = R::pad_packed_sequence(p, true, 0.0, 5);
  EXPECT_EQ(bf.sizes().vec(), (std::vector<int64_t>{3, 5}));
  expect_close(bf.select(0, 1), tensor({10.0, 20.0, 30.0, 0.0, 0.0}), 0, 0, "batch_first");

  // sorted lengths as a tensor (any integer dtype), batch_first
  auto q = R::pack_padded_sequence(x.t(), tensor({3, 2, 1}, kInt32), true);
  expect_close(q.data(), tensor({1.0, 10.0, 100.0, 2.0, 20.0, 3.0}), 0, 0, "sorted data");
  EXPECT_FALSE(q.sorted_indices().defined());
  EXPECT_FALSE(q.unsorted_indices().defined());

  auto s = R::pack_sequence({tensor({1.0, 2.0}), tensor({3.0, 4.0, 5.0})}, false);
  expect_close(s.data(), tensor({3.0, 1.0, 4.0, 2.0, 5.0}), 0, 0, "pack_sequence");
  R::PackedSequence made(s.data(), s.batch_sizes(), s.sorted_indices());
  EXPECT_EQ(made.unsorted_indices().to_vector<int64_t>(), (std::vector<int64_t>{1, 0}));
}

TEST(PackedSequence, Errors) {
  Tensor x = randn({4, 3, 2});
  EXPECT_EQ(error_of([&] { R::pack_padded_sequence(x, std::vector<int64_t>{2, 4, 1}); }),
            "[pack_padded_sequence] `lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
            "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this "
            "requirement if you do not need ONNX exportability.");
  EXPECT_EQ(error_of([&] { R::pack_padded_sequence(x, std::vector<int64_t>{4, 2, 0}); }),
            "[pack_padded_sequence] Length of all samples has to be greater than 0, but found an element in "
            "'lengths' that is <= 0");
  EXPECT_EQ(error_of([&] { R::pack_padded_sequence(x, std::vector<int64_t>{4, 2}); }),
            "[pack_padded_sequence] Expected `len(lengths)` to be equal to batch_size, but got 2 (batch_size=3)");
  EXPECT_EQ(error_of([&] { R::pack_padded_sequence(x, std::vector<int64_t>{5, 2, 1}); }),
            "[pack_padded_sequence] the longest length, 5, exceeds the input's sequence length 4");
  EXPECT_EQ(error_of([&] { R::pack_sequence({tensor({1.0}), tensor({1.0, 2.0})}); }).rfind("[pack_sequence] `lengths` array must be sorted", 0),
            0u);
  auto p = R::pack_padded_sequence(x, std::vector<int64_t>{4, 2, 1});
  EXPECT_EQ(error_of([&] { R::pad_packed_sequence(p, false, 0.0, 3); }),
            "[pad_packed_sequence] Expected total_length to be at least the length of the longest sequence in the "
            "input, but got total_length=3 and max sequence length being 4");
}

TEST(PackedSequence, GradientFlowsThroughPackAndPad) {
  gradcheck(
      [](const std::vector<Tensor>& v) {
        auto p = R::pack_padded_sequence(v[0], std::vector<int64_t>{1, 3, 2}, true, false);
        return std::get<0>(R::pad_packed_sequence(p, false, 0.5));
      },
      {testing::rnd({3, 3, 2})});
}

}  // namespace
}  // namespace wick
