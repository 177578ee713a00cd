// An LSTM learning a generated sequence task (the recurrent layers): each output step must repeat
// the input of two steps before (a delayed echo, which needs the LSTM's memory). A 2-layer LSTM
// with a Linear head trains with Adam on fresh random batches; at the end a batch of sequences of
// different lengths goes through as a PackedSequence. It prints the loss at the start and the
// end, and exits 1 unless the loss fell to a quarter of where it started. Runs on a GPU when
// there is one.
#include <iostream>
#include <tuple>

#include <wick/wick.h>

namespace nn = wick::nn;
namespace R = wick::nn::utils::rnn;

constexpr int64_t kDelay = 2;

struct EchoNetImpl : nn::Module {
  EchoNetImpl() {
    lstm = register_module("lstm", nn::LSTM(nn::LSTMOptions(1, 32).num_layers(2).batch_first(true)));
    head = register_module("head", nn::Linear(32, 1));
  }
  // x [batch, seq, 1] -> [batch, seq, 1]
  wick::Tensor forward(const wick::Tensor& x) {
    auto [out, state] = lstm(x);
    return head(out);
  }
  nn::LSTM lstm{nullptr};
  nn::Linear head{nullptr};
};
WICK_MODULE(EchoNet);

// Random inputs in [-1, 1] and their echo: target[t] = input[t - kDelay] (0 before).
std::tuple<wick::Tensor, wick::Tensor> batch(int64_t n, int64_t len, wick::Device device) {
  wick::Tensor x = wick::rand({n, len, 1}, device) * 2 - 1;
  wick::Tensor y = wick::cat({wick::zeros({n, kDelay, 1}, device), x.narrow(1, 0, len - kDelay)}, 1);
  return {x, y};
}

int main() {
  wick::manual_seed(12);
  const wick::Device device = wick::cuda::is_available() ? wick::Device("cuda") : wick::Device("cpu");
  EchoNet net;
  net->to(device);
  wick::optim::Adam opt(net->parameters(), wick::optim::AdamOptions(1e-2));

  double first = 0, last = 0;
  for (int step = 0; step < 100; ++step) {
    auto [x, y] = batch(16, 12, device);
    wick::Tensor loss = nn::functional::mse_loss(net(x), y);
    opt.zero_grad();
    loss.backward();
    opt.step();
    if (step == 0) first = loss.item<double>();
    last = loss.item<double>();
  }
  std::cout << "loss " << first << " -> " << last << "\n";

  // Sequences of lengths 12, 7 and 9, packed: the LSTM runs each only as far as it goes.
  wick::NoGradGuard no_grad;
  auto [x, y] = batch(3, 12, device);
  auto packed = R::pack_padded_sequence(x, std::vector<int64_t>{12, 7, 9}, /*batch_first=*/true,
                                        /*enforce_sorted=*/false);
  auto [out, state] = net->lstm(packed);
  auto [padded, lengths] = R::pad_packed_sequence(out, /*batch_first=*/true);
  wick::Tensor pred = net->head(padded);
  // the first 7 steps of every sequence are real ones
  const double packed_loss = nn::functional::mse_loss(pred.narrow(1, 0, 7), y.narrow(1, 0, 7)).item<double>();
  std::cout << "packed batch, first 7 steps: loss " << packed_loss << "\n";

  if (!(last < first / 4 && packed_loss < first / 4)) {
    std::cout << "the loss did not fall\n";
    return 1;
  }
  return 0;
}
