// A LibTorch program as its users write them (blocks of their own in Sequentials built from
// options structs, SGD with Nesterov momentum, accuracy counted per epoch, the optimizer saved and
// loaded, inference mode), kept in LibTorch's spelling: the build renames it as docs/porting.md
// says and runs it; it exits 0 when its loss fell.
#include <torch/torch.h>
#include <iostream>
#include <iomanip>

// VGG-like CNN with options structs, accuracy bookkeeping, checkpointing of optimizer, inference.
struct BlockImpl : torch::nn::Module {
  BlockImpl(int64_t in, int64_t out)
      : conv(torch::nn::Conv2dOptions(in, out, 3).padding(1).bias(false)), bn(torch::nn::BatchNorm2dOptions(out).momentum(0.1).eps(1e-5)) {
    register_module("conv", conv);
    register_module("bn", bn);
  }
  torch::Tensor forward(const torch::Tensor& x) { return torch::relu(bn(conv(x))); }
  torch::nn::Conv2d conv;
  torch::nn::BatchNorm2d bn;
};
TORCH_MODULE(Block);

struct CNNImpl : torch::nn::Module {
  CNNImpl() {
    features = register_module("features", torch::nn::Sequential(
        Block(1, 8), torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(2).stride(2)),
        Block(8, 16), torch::nn::AdaptiveAvgPool2d(torch::nn::AdaptiveAvgPool2dOptions({2, 2}))));
    classifier = register_module("classifier", torch::nn::Sequential(
        torch::nn::Flatten(), torch::nn::Linear(torch::nn::LinearOptions(64, 32).bias(true)),
        torch::nn::ReLU(true), torch::nn::Dropout(0.25), torch::nn::Linear(32, 10)));
  }
  torch::Tensor forward(torch::Tensor x) { return classifier->forward(features->forward(x)); }
  torch::nn::Sequential features{nullptr}, classifier{nullptr};
};
TORCH_MODULE(CNN);

int main() {
  torch::manual_seed(42);
  CNN model;
  std::cout << model << std::endl;
  auto images = torch::randn({128, 1, 16, 16});
  auto labels = torch::randint(0, 10, {128}, torch::kLong);
  images.index_put_({torch::indexing::Slice(), 0, 0, 0}, labels.to(torch::kFloat) / 5.0);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9).nesterov(true).weight_decay(5e-4));
  auto criterion = torch::nn::CrossEntropyLoss(torch::nn::CrossEntropyLossOptions().label_smoothing(0.0));
  double first = 0, last = 0;
  for (int64_t epoch = 1; epoch <= 15; ++epoch) {
    model->train();
    double running = 0;
    int64_t correct = 0;
    for (int64_t i = 0; i < 128; i += 32) {
      auto x = images.slice(0, i, i + 32);
      auto y = labels.narrow(0, i, 32);
      auto out = model->forward(x);
      auto loss = criterion(out, y);
      optimizer.zero_grad();
      loss.backward();
      optimizer.step();
      running += loss.item<double>() * x.size(0);
      auto prediction = out.argmax(1);
      correct += prediction.eq(y).sum().item<int64_t>();
    }
    if (epoch == 1) first = running / 128;
    last = running / 128;
    std::cout << "Epoch [" << epoch << "/15], Loss: " << std::fixed << std::setprecision(4) << running / 128
              << ", Accuracy: " << static_cast<double>(correct) / 128 << std::endl;
  }
  torch::save(optimizer, "port_cnn_optimizer.pt");
  torch::optim::SGD restored(model->parameters(), torch::optim::SGDOptions(0.05));
  torch::load(restored, "port_cnn_optimizer.pt");
  model->eval();
  torch::InferenceMode guard;
  auto probs = torch::softmax(model->forward(images.slice(0, 0, 4)), /*dim=*/1);
  auto [values, indices] = probs.max(1);
  std::cout << values.sizes() << " " << indices.dtype() << std::endl;
  auto t = torch::tensor({1.5, 2.5, 3.5}, torch::dtype(torch::kFloat32).requires_grad(false));
  std::cout << t.mean().item().toFloat() << " " << torch::cat({t, t}).sizes() << std::endl;
  return last < first ? 0 : 1;
}
