// A LibTorch program as its users write them (a 1-D convolutional autoencoder whose layers are
// held as AnyModules in a Sequential, "same" convolutions, a ConvTranspose1d decoder, an
// AnyModule as a TransformerEncoder's norm), kept in LibTorch's spelling: the build renames it
// as docs/porting.md says and runs it; it exits 0 when its loss fell.
#include <torch/torch.h>
#include <iostream>
#include <vector>

// A block of its own, added to the Sequential through an AnyModule.
struct ResidualImpl : torch::nn::Module {
  explicit ResidualImpl(int64_t channels)
      : conv(torch::nn::Conv1dOptions(channels, channels, 4).padding(torch::kSame)) {
    register_module("conv", conv);
  }
  torch::Tensor forward(torch::Tensor x) { return x + torch::relu(conv(x)); }
  torch::nn::Conv1d conv;
};
TORCH_MODULE(Residual);

int main() {
  torch::manual_seed(0);
  torch::nn::Sequential encoder;
  encoder->push_back(torch::nn::AnyModule(torch::nn::Conv1d(torch::nn::Conv1dOptions(2, 8, 5).padding(torch::kSame))));
  encoder->push_back(torch::nn::AnyModule(torch::nn::ReLU()));
  encoder->push_back(torch::nn::AnyModule(std::make_shared<ResidualImpl>(8)));
  encoder->push_back(torch::nn::Conv1d(torch::nn::Conv1dOptions(8, 8, 4).stride(2).padding(1)));
  torch::nn::AnyModule decoder_head(torch::nn::ConvTranspose1d(torch::nn::ConvTranspose1dOptions(8, 2, 4).stride(2).padding(1)));
  torch::nn::Sequential model(torch::nn::AnyModule(encoder), torch::nn::Tanh(), decoder_head);
  std::cout << model << std::endl;

  auto conv = decoder_head.get<torch::nn::ConvTranspose1d>();
  TORCH_CHECK(conv->weight.sizes() == torch::IntArrayRef({8, 2, 4}), "ConvTranspose1d weight [in, out, k]");
  TORCH_CHECK(decoder_head.type_info() == typeid(torch::nn::ConvTranspose1dImpl), "type_info of the held module");
  auto same = torch::nn::functional::conv1d(torch::randn({1, 2, 16}), torch::randn({3, 2, 4}),
                                            torch::nn::functional::Conv1dFuncOptions().padding(torch::kSame));
  TORCH_CHECK(same.size(2) == 16, "padding same keeps the length");

  // A transformer encoder whose final norm is an AnyModule.
  torch::nn::TransformerEncoder context(
      torch::nn::TransformerEncoderOptions(torch::nn::TransformerEncoderLayerOptions(8, 2).dropout(0.0), 1)
          .norm(torch::nn::AnyModule(torch::nn::LayerNorm(torch::nn::LayerNormOptions({8})))));
  TORCH_CHECK(!context->norm.is_empty(), "the encoder keeps its norm");

  std::vector<torch::Tensor> params = model->parameters();
  for (auto& p : context->parameters()) params.push_back(p);
  torch::optim::Adam optimizer(params, torch::optim::AdamOptions(1e-2));
  // signals: sines of random frequency and phase, two channels
  auto t = torch::linspace(0, 6.28, 32);
  float first = 0, last = 0;
  for (int step = 0; step < 60; ++step) {
    auto freq = torch::rand({16, 2, 1}) * 2 + 1, phase = torch::rand({16, 2, 1}) * 3;
    auto x = torch::sin(freq * t + phase);
    optimizer.zero_grad();
    auto code = encoder->forward(x);                                // [16, 8, 16]
    code = context->forward(code.permute({2, 0, 1})).permute({1, 2, 0});  // attention along time
    auto recon = decoder_head.forward(torch::tanh(code));           // [16, 2, 32]
    auto loss = torch::mse_loss(recon, x) + 0.0 * torch::mse_loss(model->forward(x), x);
    loss.backward();
    optimizer.step();
    if (step == 0) first = loss.item<float>();
    last = loss.item<float>();
    if (step % 10 == 0) std::cout << "step " << step << " loss " << last << std::endl;
  }
  auto copy = decoder_head.clone();
  TORCH_CHECK(copy.ptr() != decoder_head.ptr(), "clone copies the module");
  std::cout << "first " << first << " last " << last << std::endl;
  std::cout << (last < first ? "loss fell" : "loss did not fall") << std::endl;
  return last < first ? 0 : 1;
}
