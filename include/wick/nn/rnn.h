// Recurrent layers as torch.nn's RNN, LSTM and GRU and their cells: the same options, parameter
// names (weight_ih_l0, bias_hh_l1_reverse, weight_hr_l0, ...), gate order (LSTM: i, f, g, o;
// GRU: r, z, n), initialization and outputs, with LibTorch's spellings (options structs,
// std::tuple results, kTanh/kReLU).
//
//   wick::nn::LSTM lstm(wick::nn::LSTMOptions(10, 20).num_layers(2).batch_first(true));
//   auto [out, hc] = lstm(x);                  // x [batch, seq, 10]: out [batch, seq, 20]
//   auto [h_n, c_n] = hc;                      // [2, batch, 20] each
//   wick::nn::GRU gru(8, 16);
//   auto [y, h] = gru(packed);                 // a PackedSequence in, a PackedSequence out
#pragma once

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "wick/enums.h"
#include "wick/nn/module.h"
#include "wick/nn/options.h"
#include "wick/nn/utils/rnn.h"

namespace wick {

namespace nn {

using utils::rnn::PackedSequence;

// "tanh" or "relu" (also wick::kTanh, wick::kReLU); another name fails when the module is made.
struct RNNNonlinearity {
  RNNNonlinearity(const char* n) : name(n) {}
  RNNNonlinearity(std::string n) : name(std::move(n)) {}
  RNNNonlinearity(enumtype::kTanh) : name("tanh") {}
  RNNNonlinearity(enumtype::kReLU) : name("relu") {}
  std::string name;
};

struct RNNOptions {
  RNNOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  WICK_ARG(int64_t, input_size);
  WICK_ARG(int64_t, hidden_size);
  WICK_ARG(int64_t, num_layers) = 1;
  WICK_ARG(RNNNonlinearity, nonlinearity) = "tanh";
  WICK_ARG(bool, bias) = true;
  // Inputs and outputs [batch, seq, feature] instead of [seq, batch, feature] (not h_n).
  WICK_ARG(bool, batch_first) = false;
  // Dropout on the outputs of every layer but the last, in training.
  WICK_ARG(double, dropout) = 0.0;
  WICK_ARG(bool, bidirectional) = false;
};

struct LSTMOptions {
  LSTMOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  WICK_ARG(int64_t, input_size);
  WICK_ARG(int64_t, hidden_size);
  WICK_ARG(int64_t, num_layers) = 1;
  WICK_ARG(bool, bias) = true;
  WICK_ARG(bool, batch_first) = false;
  WICK_ARG(double, dropout) = 0.0;
  WICK_ARG(bool, bidirectional) = false;
  // > 0: h is projected to proj_size features by weight_hr (h_n and the output have proj_size).
  WICK_ARG(int64_t, proj_size) = 0;
};

struct GRUOptions {
  GRUOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  WICK_ARG(int64_t, input_size);
  WICK_ARG(int64_t, hidden_size);
  WICK_ARG(int64_t, num_layers) = 1;
  WICK_ARG(bool, bias) = true;
  WICK_ARG(bool, batch_first) = false;
  WICK_ARG(double, dropout) = 0.0;
  WICK_ARG(bool, bidirectional) = false;
};

// What RNN, LSTM and GRU share: the parameters of every layer and direction, registered in
// PyTorch's order (weight_ih, weight_hh, bias_ih, bias_hh, weight_hr per layer and direction).
class RNNBaseImpl : public Module {
 public:
  enum class Mode { RNN_TANH, RNN_RELU, LSTM, GRU };
  // Every weight uniform in [-1/sqrt(hidden_size), 1/sqrt(hidden_size)], as PyTorch's.
  void reset_parameters();
  // On CUDA, where cuDNN takes the layers: makes the parameters views of one weight space laid
  // out as cuDNN's, in place (every handle to a parameter sees it), so that a forward reads it
  // without copying; a forward does it too for parameters new to CUDA. Elsewhere nothing.
  void flatten_parameters();
  // The parameters in registration order (PyTorch's _flat_weights).
  std::vector<Tensor> all_weights() const { return parameters(false); }
  std::string extra_repr() const override;

  Mode mode;
  int64_t input_size, hidden_size, num_layers, proj_size;
  bool bias, batch_first, bidirectional;
  double dropout;

 protected:
  RNNBaseImpl(const char* name, Mode mode, int64_t input_size, int64_t hidden_size, int64_t num_layers, bool bias,
              bool batch_first, double dropout, bool bidirectional, int64_t proj_size);
  // The layers over input (a padded tensor or packed data); hx (and cx, LSTM) as given or
  // undefined. Returns {output, h_n, c_n} shaped as the module's forward returns them.
  struct Result {
    Tensor output, h, c;
    PackedSequence packed;
  };
  Result run(const Tensor& input, const PackedSequence* packed, Tensor hx, Tensor cx);
};

// A stack of Elman layers: h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh) (or relu).
class RNNImpl : public RNNBaseImpl {
 public:
  RNNImpl(int64_t input_size, int64_t hidden_size) : RNNImpl(RNNOptions(input_size, hidden_size)) {}
  explicit RNNImpl(const RNNOptions& options);
  // {output [seq, batch, D * hidden] (or [batch, seq, ...]; [seq, ...] unbatched),
  //  h_n [D * num_layers, batch, hidden]}; hx as h_n (zeros when undefined).
  std::tuple<Tensor, Tensor> forward(const Tensor& input, Tensor hx = {});
  std::tuple<PackedSequence, Tensor> forward(const PackedSequence& input, Tensor hx = {});
  // LibTorch's name of the packed forward.
  std::tuple<PackedSequence, Tensor> forward_with_packed_input(const PackedSequence& input, Tensor hx = {}) {
    return forward(input, std::move(hx));
  }
  RNNOptions options;
};
WICK_MODULE(RNN);

// LSTM layers: gates i, f, g, o (rows of weight_ih / weight_hh in that order),
// c_t = f * c_{t-1} + i * g, h_t = o * tanh(c_t) (then h_t W_hr^T with proj_size).
class LSTMImpl : public RNNBaseImpl {
 public:
  LSTMImpl(int64_t input_size, int64_t hidden_size) : LSTMImpl(LSTMOptions(input_size, hidden_size)) {}
  explicit LSTMImpl(const LSTMOptions& options);
  // {output, {h_n [D * num_layers, batch, proj_size or hidden], c_n [D * num_layers, batch, hidden]}};
  // hx_opt: {h_0, c_0} (zeros when absent).
  std::tuple<Tensor, std::tuple<Tensor, Tensor>> forward(const Tensor& input,
                                                         std::optional<std::tuple<Tensor, Tensor>> hx_opt = {});
  std::tuple<PackedSequence, std::tuple<Tensor, Tensor>> forward(
      const PackedSequence& input, std::optional<std::tuple<Tensor, Tensor>> hx_opt = {});
  std::tuple<PackedSequence, std::tuple<Tensor, Tensor>> forward_with_packed_input(
      const PackedSequence& input, std::optional<std::tuple<Tensor, Tensor>> hx_opt = {}) {
    return forward(input, std::move(hx_opt));
  }
  LSTMOptions options;
};
WICK_MODULE(LSTM);

// GRU layers: gates r, z, n; n = tanh(W_in x + b_in + r * (W_hn h + b_hn)), h' = (1 - z) * n + z * h.
class GRUImpl : public RNNBaseImpl {
 public:
  GRUImpl(int64_t input_size, int64_t hidden_size) : GRUImpl(GRUOptions(input_size, hidden_size)) {}
  explicit GRUImpl(const GRUOptions& options);
  std::tuple<Tensor, Tensor> forward(const Tensor& input, Tensor hx = {});
  std::tuple<PackedSequence, Tensor> forward(const PackedSequence& input, Tensor hx = {});
  std::tuple<PackedSequence, Tensor> forward_with_packed_input(const PackedSequence& input, Tensor hx = {}) {
    return forward(input, std::move(hx));
  }
  GRUOptions options;
};
WICK_MODULE(GRU);

// ---- cells: one time step; input [batch, input_size] or [input_size] (unbatched)

struct RNNCellOptions {
  RNNCellOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  WICK_ARG(int64_t, input_size);
  WICK_ARG(int64_t, hidden_size);
  WICK_ARG(bool, bias) = true;
  WICK_ARG(RNNNonlinearity, nonlinearity) = "tanh";
};

struct LSTMCellOptions {
  LSTMCellOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  WICK_ARG(int64_t, input_size);
  WICK_ARG(int64_t, hidden_size);
  WICK_ARG(bool, bias) = true;
};
using GRUCellOptions = LSTMCellOptions;

// weight_ih [gates * hidden, input_size], weight_hh [gates * hidden, hidden], bias_ih, bias_hh.
class RNNCellBaseImpl : public Module {
 public:
  // Every weight uniform in [-1/sqrt(hidden_size), 1/sqrt(hidden_size)].
  void reset_parameters();
  std::string extra_repr() const override;

  int64_t input_size, hidden_size;
  bool bias;
  std::string nonlinearity;  // RNNCell's; empty for the others
  Tensor weight_ih, weight_hh, bias_ih, bias_hh;

 protected:
  RNNCellBaseImpl(const char* name, int64_t input_size, int64_t hidden_size, bool bias, int64_t gates,
                  std::string nonlinearity = "");
};

class RNNCellImpl : public RNNCellBaseImpl {
 public:
  RNNCellImpl(int64_t input_size, int64_t hidden_size) : RNNCellImpl(RNNCellOptions(input_size, hidden_size)) {}
  explicit RNNCellImpl(const RNNCellOptions& options);
  // h' [batch, hidden] (or [hidden]); hx zeros when undefined.
  Tensor forward(const Tensor& input, Tensor hx = {});
  RNNCellOptions options;
};
WICK_MODULE(RNNCell);

class LSTMCellImpl : public RNNCellBaseImpl {
 public:
  LSTMCellImpl(int64_t input_size, int64_t hidden_size) : LSTMCellImpl(LSTMCellOptions(input_size, hidden_size)) {}
  explicit LSTMCellImpl(const LSTMCellOptions& options);
  // {h', c'}; hx_opt: {h, c} (zeros when absent).
  std::tuple<Tensor, Tensor> forward(const Tensor& input, std::optional<std::tuple<Tensor, Tensor>> hx_opt = {});
  LSTMCellOptions options;
};
WICK_MODULE(LSTMCell);

class GRUCellImpl : public RNNCellBaseImpl {
 public:
  GRUCellImpl(int64_t input_size, int64_t hidden_size) : GRUCellImpl(GRUCellOptions(input_size, hidden_size)) {}
  explicit GRUCellImpl(const GRUCellOptions& options);
  Tensor forward(const Tensor& input, Tensor hx = {});
  GRUCellOptions options;
};
WICK_MODULE(GRUCell);

}  // namespace nn
}  // namespace wick
