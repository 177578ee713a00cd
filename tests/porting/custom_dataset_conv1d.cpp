// A LibTorch program as its users write them (a dataset of their own, a 1-D CNN, the named
// parameters printed by key(), the learning rate lowered through the param groups), kept in
// LibTorch's spelling: the build renames it as docs/porting.md says and runs it; it exits 0 when
// its loss fell.
#include <torch/torch.h>
#include <iostream>
#include <vector>

// A custom dataset of random sequences, a 1-D CNN classifier, named parameter printing, lr decay.
class SeqDataset : public torch::data::datasets::Dataset<SeqDataset> {
 public:
  explicit SeqDataset(int64_t n) {
    data_ = torch::randn({n, 4, 32});
    labels_ = (data_.mean({1, 2}) > 0).to(torch::kLong);
  }
  torch::data::Example<> get(size_t index) override { return {data_[index], labels_[index]}; }
  torch::optional<size_t> size() const override { return data_.size(0); }

 private:
  torch::Tensor data_, labels_;
};

struct NetImpl : torch::nn::Module {
  NetImpl()
      : conv1(torch::nn::Conv1dOptions(4, 16, 3).padding(1)),
        conv2(torch::nn::Conv1dOptions(16, 16, 3).stride(1).padding(1).bias(false)),
        bn(torch::nn::BatchNorm1d(16)),
        pool(torch::nn::MaxPool1dOptions(2)),
        gap(torch::nn::AdaptiveAvgPool1d(1)),
        fc(16, 2) {
    register_module("conv1", conv1);
    register_module("conv2", conv2);
    register_module("bn", bn);
    register_module("pool", pool);
    register_module("gap", gap);
    register_module("fc", fc);
  }
  torch::Tensor forward(torch::Tensor x) {
    x = pool(torch::relu(conv1(x)));
    x = torch::elu(bn(conv2(x)));
    x = gap(x).squeeze(-1);
    return torch::log_softmax(fc(x), 1);
  }
  torch::nn::Conv1d conv1, conv2;
  torch::nn::BatchNorm1d bn;
  torch::nn::MaxPool1d pool;
  torch::nn::AdaptiveAvgPool1d gap;
  torch::nn::Linear fc;
};
TORCH_MODULE(Net);

int main() {
  torch::manual_seed(0);
  Net net;
  for (const auto& pair : net->named_parameters()) {
    std::cout << pair.key() << ": " << pair.value().sizes() << std::endl;
  }
  auto params = net->named_parameters();
  TORCH_CHECK(params.contains("conv1.weight"), "missing conv1.weight");
  std::cout << params["fc.bias"].sizes() << std::endl;
  auto ds = SeqDataset(256).map(torch::data::transforms::Stack<>());
  auto loader = torch::data::make_data_loader<torch::data::samplers::RandomSampler>(
      std::move(ds), torch::data::DataLoaderOptions().batch_size(32));
  torch::optim::Adam optimizer(net->parameters(), torch::optim::AdamOptions(1e-2));
  float first = 0, last = 0;
  for (int epoch = 0; epoch < 8; ++epoch) {
    float total = 0;
    int n = 0;
    for (auto& batch : *loader) {
      optimizer.zero_grad();
      auto out = net->forward(batch.data);
      auto loss = torch::nll_loss(out, batch.target);
      loss.backward();
      optimizer.step();
      total += loss.item<float>();
      ++n;
    }
    for (auto& group : optimizer.param_groups()) {
      auto& options = static_cast<torch::optim::AdamOptions&>(group.options());
      options.lr(options.lr() * 0.9);
    }
    if (epoch == 0) first = total / n;
    last = total / n;
    std::cout << "epoch " << epoch << " loss " << total / n << std::endl;
  }
  torch::Tensor t = torch::randn({3, 4});
  t.unsqueeze_(0);
  t.transpose_(1, 2);
  std::cout << t.sizes() << std::endl;
  auto tds = torch::data::datasets::TensorDataset(torch::randn({10, 3}))
                 .map(torch::data::transforms::Stack<torch::data::TensorExample>());
  auto tl = torch::data::make_data_loader(std::move(tds), 4);
  int batches = 0;
  for (auto& b : *tl) batches += b.data.size(0) > 0;
  std::cout << "tensor dataset batches " << batches << std::endl;
  std::cout << (last < first ? "loss fell" : "loss did not fall") << std::endl;
  return last < first ? 0 : 1;
}
