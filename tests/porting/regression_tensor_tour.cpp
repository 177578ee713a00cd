// A LibTorch program as its users write them (a polynomial regression with a module held by
// value, then a tour of tensor spellings: indexing with Slice, masked_fill, topk, sort, the
// reductions, in-place fills, stack/permute/view, accessors and from_blob), kept in LibTorch's
// spelling: the build renames it as docs/porting.md says and runs it; it exits 0 when its loss
// fell and the values it checks hold.
#include <torch/torch.h>
#include <iostream>
#include <vector>

struct LinearRegression : torch::nn::Module {
  torch::nn::Linear fc{nullptr};
  LinearRegression() { fc = register_module("fc", torch::nn::Linear(3, 1)); }
  torch::Tensor forward(torch::Tensor x) { return fc->forward(x); }
};

int main() {
  auto x = torch::linspace(-1, 1, 100).unsqueeze(1);
  auto X = torch::cat({x, x.pow(2), x.pow(3)}, 1);
  auto y = 2 * x - 3 * x.pow(3) + 0.5 + 0.01 * torch::randn({100, 1});
  LinearRegression model;
  torch::optim::SGD opt(model.parameters(), torch::optim::SGDOptions(0.1));
  float first = 0, last = 0;
  for (int i = 0; i < 200; ++i) {
    opt.zero_grad();
    auto loss = torch::mse_loss(model.forward(X), y);
    loss.backward();
    opt.step();
    if (i == 0) first = loss.item<float>();
    last = loss.item<float>();
    if (i % 50 == 0) std::cout << "loss " << loss.item<float>() << std::endl;
  }
  std::cout << model.fc->weight << model.fc->bias << std::endl;
  auto a = torch::arange(12).reshape({3, 4}).to(torch::kFloat);
  std::cout << a.index({torch::indexing::Slice(1, torch::indexing::None), torch::indexing::Slice(torch::indexing::None, 2)}) << std::endl;
  std::cout << a.masked_fill(a > 5, -1) << a.clamp(2, 8).sum(0) << torch::where(a > 3, a, torch::zeros_like(a)).mean() << std::endl;
  auto [vals, idx] = torch::topk(a, 2, 1);
  auto sorted = std::get<0>(torch::sort(a, 1, true));
  std::cout << vals << idx << sorted << torch::argmax(a, 1) << std::endl;
  std::cout << a.std() << a.var(0) << torch::norm(a) << a.abs().max() << a.min().item<float>() << std::endl;
  auto b = torch::empty({2, 3}).normal_(0, 1).uniform_(0, 1).fill_(2);
  auto c = torch::stack({b, b}, 0).permute({1, 0, 2}).contiguous().view({2, -1});
  std::cout << c.sizes() << c.numel() << c.dim() << c.size(-1) << std::endl;
  auto d = torch::ones({2, 2}, torch::requires_grad());
  auto e = (d * d).sum();
  e.backward();
  std::cout << d.grad() << std::endl;
  std::cout << torch::eye(3) << torch::full({2}, 7) << std::endl;
  std::cout << a.chunk(2, 1)[0] << a.split(2, 0)[1] << a.repeat({2, 1}).sizes() << std::endl;

  std::vector<float> v(a.data_ptr<float>(), a.data_ptr<float>() + a.numel());
  auto acc = a.accessor<float, 2>();
  std::cout << v.size() << " " << acc[1][2] << std::endl;
  torch::Tensor blob = torch::from_blob(v.data(), {3, 4}, torch::kFloat).clone();
  std::cout << blob.equal(a) << std::endl;
  TORCH_CHECK(blob.equal(a), "from_blob of the values is not a");
  TORCH_CHECK(acc[1][2] == 6.0f, "accessor read ", acc[1][2]);
  TORCH_CHECK(vals.select(1, 0).equal(a.select(1, 3)), "topk's largest is not the last column");
  TORCH_CHECK(d.grad().equal(2 * torch::ones({2, 2})), "d(sum d*d)/dd is not 2");
  return last < first ? 0 : 1;
}
