// RNN, LSTM, GRU and their cells against PyTorch's own values: the state dicts, inputs, outputs
// and gradients that tests/gen/rnn_reference.py writes (tests/fixtures/rnn_reference.safetensors,
// float64 on the CPU). Each PyTorch state dict loads strictly into the wick module of the same
// options; outputs, input gradients and parameter gradients must agree.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "nn_test_util.h"
#include "wick/io/safetensors.h"
#include "wick/wick.h"

namespace wick {
namespace {

using testing::expect_close;
namespace R = nn::utils::rnn;

constexpr double kTol = 1e-10;

class RnnReference : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string path = std::string(WICK_TEST_FIXTURES_DIR) + "/rnn_reference.safetensors";
    // Written by tests/gen/rnn_reference.py with PyTorch and committed.
    ASSERT_TRUE(std::filesystem::exists(path)) << path << " is absent: run tests/gen/rnn_reference.py";
    data_ = load(path);
  }
  Tensor at(const std::string& name) const {
    auto it = data_.find(name);
    if (it == data_.end()) ADD_FAILURE() << "fixture has no tensor " << name;
    return it == data_.end() ? Tensor() : it->second;
  }
  void load_into(nn::Module& m, const std::string& prefix) const {
    std::map<std::string, Tensor> state;
    const std::string key = prefix + ".state.";
    for (const auto& [k, v] : data_)
      if (k.rfind(key, 0) == 0) state.emplace(k.substr(key.size()), v);
    m.load_state_dict(state, /*strict=*/true);
  }
  Tensor input(const std::string& prefix, const std::string& name) const {
    return at(prefix + ".in." + name).clone().requires_grad_();
  }
  // The loss of the fixture, sum((y * w.y).sum()), backward; then every gradient compared.
  void check(const std::string& prefix, nn::Module& m, const std::map<std::string, Tensor>& outputs,
             const std::map<std::string, Tensor>& inputs) const {
    Tensor loss;
    for (const auto& [k, y] : outputs) {
      expect_close(y, at(prefix + ".out." + k), kTol, kTol, prefix + " " + k);
      Tensor term = (y * at(prefix + ".w." + k)).sum();
      loss = loss.defined() ? loss + term : term;
    }
    loss.backward();
    for (const auto& [k, x] : inputs) expect_close(x.grad(), at(prefix + ".grad." + k), kTol, kTol, prefix + " grad " + k);
    for (const auto& [k, p] : m.named_parameters())
      expect_close(p.grad(), at(prefix + ".pgrad." + k), kTol, kTol, prefix + " grad " + k);
  }
  TensorMap data_;
};

TEST_F(RnnReference, RnnReluTwoLayersBidirectional) {
  nn::RNN m(nn::RNNOptions(3, 4).num_layers(2).nonlinearity(kReLU).bidirectional(true));
  m->to(kFloat64);
  load_into(*m, "rnn");
  Tensor x = input("rnn", "input"), h0 = input("rnn", "h0");
  auto [out, h_n] = m(x, h0);
  check("rnn", *m, {{"output", out}, {"h_n", h_n}}, {{"input", x}, {"h0", h0}});
}

TEST_F(RnnReference, LstmProjectionBatchFirstBidirectional) {
  nn::LSTM m(nn::LSTMOptions(3, 5).num_layers(2).batch_first(true).bidirectional(true).proj_size(2));
  m->to(kFloat64);
  load_into(*m, "lstm");
  Tensor x = input("lstm", "input"), h0 = input("lstm", "h0"), c0 = input("lstm", "c0");
  auto [out, hc] = m(x, std::make_tuple(h0, c0));
  check("lstm", *m, {{"output", out}, {"h_n", std::get<0>(hc)}, {"c_n", std::get<1>(hc)}},
        {{"input", x}, {"h0", h0}, {"c0", c0}});
}

TEST_F(RnnReference, GruPackedUnsorted) {
  nn::GRU m(nn::GRUOptions(3, 4).num_layers(2).bidirectional(true));
  m->to(kFloat64);
  load_into(*m, "gru");
  Tensor x = input("gru", "input"), h0 = input("gru", "h0");
  auto packed = R::pack_padded_sequence(x, at("gru.in.lengths"), false, /*enforce_sorted=*/false);
  auto [out, h_n] = m(packed, h0);
  Tensor padded = std::get<0>(R::pad_packed_sequence(out));
  check("gru", *m, {{"output", padded}, {"h_n", h_n}}, {{"input", x}, {"h0", h0}});
}

TEST_F(RnnReference, Cells) {
  nn::LSTMCell lstm(3, 4);
  lstm->to(kFloat64);
  load_into(*lstm, "lstm_cell");
  Tensor x = input("lstm_cell", "input"), h0 = input("lstm_cell", "h0"), c0 = input("lstm_cell", "c0");
  auto [h, c] = lstm(x, std::make_tuple(h0, c0));
  check("lstm_cell", *lstm, {{"h_n", h}, {"c_n", c}}, {{"input", x}, {"h0", h0}, {"c0", c0}});

  nn::GRUCell gru(3, 4);
  gru->to(kFloat64);
  load_into(*gru, "gru_cell");
  Tensor gx = input("gru_cell", "input"), gh = input("gru_cell", "h0");
  check("gru_cell", *gru, {{"h_n", gru(gx, gh)}}, {{"input", gx}, {"h0", gh}});

  nn::RNNCell rnn(3, 4);
  rnn->to(kFloat64);
  load_into(*rnn, "rnn_cell");
  Tensor rx = input("rnn_cell", "input"), rh = input("rnn_cell", "h0");
  check("rnn_cell", *rnn, {{"h_n", rnn(rx, rh)}}, {{"input", rx}, {"h0", rh}});
}

}  // namespace
}  // namespace wick
