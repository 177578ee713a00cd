// A LibTorch program as its users write them (an LSTM over embeddings, a Sequential head with
// options structs, a ModuleList, apply() for initialization, StepLR, gradient clipping, save and
// load), kept in LibTorch's spelling: the build renames it as docs/porting.md says and runs it;
// it exits 0 when its loss fell.
#include <torch/torch.h>
#include <iostream>
#include <tuple>

namespace F = torch::nn::functional;

struct SeqModelImpl : torch::nn::Module {
  SeqModelImpl(int64_t vocab, int64_t embed, int64_t hidden)
      : emb(torch::nn::EmbeddingOptions(vocab, embed).padding_idx(0)),
        lstm(torch::nn::LSTMOptions(embed, hidden).num_layers(2).batch_first(true).dropout(0.1)),
        head(torch::nn::Sequential(torch::nn::Linear(hidden, hidden), torch::nn::ReLU(torch::nn::ReLUOptions().inplace(true)),
                                   torch::nn::Dropout(torch::nn::DropoutOptions(0.2)), torch::nn::Linear(hidden, 3))) {
    register_module("emb", emb);
    register_module("lstm", lstm);
    register_module("head", head);
    layers = register_module("layers", torch::nn::ModuleList());
    layers->push_back(torch::nn::Linear(hidden, hidden));
    layers->push_back(torch::nn::LayerNorm(torch::nn::LayerNormOptions({hidden}).eps(1e-5)));
  }
  torch::Tensor forward(torch::Tensor tokens) {
    auto x = emb->forward(tokens);
    auto out = lstm->forward(x);
    torch::Tensor h = std::get<0>(out);
    auto state = std::get<1>(out);
    (void)std::get<0>(state);
    h = h.select(1, -1);
    for (const auto& m : *layers) h = m->as<torch::nn::Linear>() ? m->as<torch::nn::Linear>()->forward(h)
                                                                  : m->as<torch::nn::LayerNorm>()->forward(h);
    h = F::dropout(h, F::DropoutFuncOptions().p(0.1).training(is_training()));
    return head->forward(h);
  }
  torch::nn::Embedding emb;
  torch::nn::LSTM lstm;
  torch::nn::Sequential head;
  torch::nn::ModuleList layers;
};
TORCH_MODULE(SeqModel);

int main() {
  torch::manual_seed(1);
  torch::Device device(torch::cuda::is_available() ? torch::kCUDA : torch::kCPU);
  SeqModel model(50, 16, 32);
  model->to(device);
  model->apply([](torch::nn::Module& m) {
    if (auto* lin = m.as<torch::nn::Linear>()) {
      torch::nn::init::xavier_uniform_(lin->weight);
      torch::nn::init::zeros_(lin->bias);
    }
  });
  auto tokens = torch::randint(1, 50, {64, 12}, torch::TensorOptions().dtype(torch::kLong).device(device));
  auto labels = (tokens.select(1, 0) % 3).to(torch::kLong);
  torch::nn::CrossEntropyLoss criterion;
  torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(3e-3).weight_decay(1e-4));
  torch::optim::StepLR sched(opt, 20, 0.5);
  double first = 0, last = 0;
  for (int step = 0; step < 60; ++step) {
    model->train();
    opt.zero_grad();
    auto logits = model->forward(tokens);
    auto loss = criterion(logits, labels);
    loss.backward();
    torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
    opt.step();
    sched.step();
    if (step == 0) first = loss.item<double>();
    last = loss.item<double>();
  }
  model->eval();
  {
    torch::NoGradGuard no_grad;
    auto pred = torch::argmax(model->forward(tokens), 1);
    auto correct = (pred == labels).sum().item<int64_t>();
    std::cout << "accuracy " << double(correct) / 64 << std::endl;
  }
  torch::save(model, "port_lstm_classifier.pt");
  SeqModel other(50, 16, 32);
  torch::load(other, "port_lstm_classifier.pt");
  std::cout << "loss " << first << " -> " << last << std::endl;
  return last < first ? 0 : 1;
}
