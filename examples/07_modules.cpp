// Modules, losses and optimizers on the CPU (the API contract, part 7): a Linear's parameters,
// Sequential's names, a module of one's own, a weighted CrossEntropyLoss and its buffer, and one
// SGD step worked out by hand. It prints
//   cpu
//   weight [1, 3]; bias [1]
//   0.weight 0.bias 2.weight 2.bias
//   body.0.weight body.0.bias body.2.weight body.2.bias head.weight head.bias
//   weight: tensor([1., 3.])
//   tensor(0.6931)
//   tensor([[1.5000],
//           [1.5000]], grad_fn=<AddmmBackward0>)
//   tensor(2.2500, grad_fn=<MseLossBackward0>)
//   after one step: tensor([[0.2000, 0.2000, 0.2000]]) tensor([-0.3000])
// The same on a GPU: 07_modules_cuda.cpp.
#include <iostream>

#include <wick/wick.h>

namespace nn = wick::nn;

// A module of one's own, as with LibTorch's TORCH_MODULE.
struct TwoLayerNetImpl : nn::Module {
  TwoLayerNetImpl(int64_t in, int64_t hidden, int64_t out) {
    body = register_module("body",
                           nn::Sequential(nn::Linear(in, hidden), nn::ReLU(), nn::Linear(hidden, hidden)));
    head = register_module("head", nn::Linear(hidden, out));
  }
  wick::Tensor forward(const wick::Tensor& x) { return head(body->forward(x)); }
  nn::Sequential body{nullptr};
  nn::Linear head{nullptr};
};
WICK_MODULE(TwoLayerNet);

int main() {
  nn::Linear net(3, 1);
  std::cout << net->parameters()[0].device() << "\n";  // cpu
  for (auto& [name, p] : net->named_parameters())
    std::cout << name << " " << p.sizes() << (name == "weight" ? "; " : "\n");

  nn::Sequential seq(nn::Linear(4, 8), nn::ReLU(), nn::Linear(8, 2));  // children 0, 1, 2
  for (auto& [name, p] : seq->named_parameters()) std::cout << name << (name == "2.bias" ? "\n" : " ");
  TwoLayerNet mine(4, 8, 2);
  for (auto& [name, p] : mine->named_parameters()) std::cout << name << (name == "head.bias" ? "\n" : " ");

  // Equal logits: every sample's loss is log 2, and so is their weighted mean.
  nn::CrossEntropyLoss criterion(nn::CrossEntropyLossOptions().weight(wick::tensor({1., 3.})));
  auto input = wick::zeros({4, 2});
  auto target = wick::tensor({1., 0., 0., 1.}).to(wick::kInt64);
  auto loss = criterion(input, target);
  for (auto& [name, buf] : criterion->named_buffers()) std::cout << name << ": " << buf << "\n";
  std::cout << loss << "\n";

  // One SGD step: y = 0.5 * 3 = 1.5 for both rows; the mean squared error to 0 is 2.25; its
  // gradient is 2 * 1.5 / 2 = 1.5 per row, so each weight and the bias get 2 * 1.5 = 3, and a step
  // of 0.1 takes the weights to 0.5 - 0.3 = 0.2 and the bias to -0.3.
  {
    wick::NoGradGuard no_grad;
    net->weight.fill_(0.5);
    net->bias.fill_(0);
  }
  // [doc:sgd_step]
  wick::optim::SGD opt(net->parameters(), wick::optim::SGDOptions(0.1));
  auto out = net(wick::ones({2, 3}));
  std::cout << out << "\n";
  auto mse = nn::MSELoss()(out, wick::zeros({2, 1}));
  std::cout << mse << "\n";
  opt.zero_grad();
  mse.backward();
  opt.step();
  std::cout << "after one step: " << net->weight.detach() << " " << net->bias.detach() << "\n";
  // [doc:end]
}
