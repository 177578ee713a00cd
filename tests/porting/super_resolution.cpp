// A LibTorch program as its users write them: a sub-pixel super-resolution network (PixelShuffle,
// orthogonal initialization, reflection padding, as in PyTorch's super-resolution example) on
// generated images, then a distillation step (KLDivLoss with batchmean between a teacher's and a
// student's distributions, embeddings from a pretrained table compared by cosine similarity).
// Kept in LibTorch's spelling: the build renames it as docs/porting.md says and runs it; it
// exits 0 when both losses fell and the checks hold.
#include <torch/torch.h>
#include <cmath>
#include <iostream>

namespace F = torch::nn::functional;

struct SuperResImpl : torch::nn::Module {
  explicit SuperResImpl(int64_t r)
      : pad(register_module("pad", torch::nn::ReflectionPad2d(torch::nn::ReflectionPad2dOptions(2)))),
        conv1(register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 32, 5)))),
        conv2(register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(32, 16, 3).padding(1)))),
        conv3(register_module("conv3", torch::nn::Conv2d(torch::nn::Conv2dOptions(16, r * r, 3).padding(1)))),
        shuffle(register_module("shuffle", torch::nn::PixelShuffle(torch::nn::PixelShuffleOptions(r)))) {
    torch::nn::init::orthogonal_(conv1->weight, std::sqrt(2.0));
    torch::nn::init::orthogonal_(conv2->weight, std::sqrt(2.0));
    torch::nn::init::orthogonal_(conv3->weight);
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(conv1->forward(pad->forward(x)));
    x = torch::relu(conv2->forward(x));
    return shuffle->forward(conv3->forward(x));
  }
  torch::nn::ReflectionPad2d pad;
  torch::nn::Conv2d conv1, conv2, conv3;
  torch::nn::PixelShuffle shuffle;
};
TORCH_MODULE(SuperRes);

// Smooth random images [n, 1, s, s]: sums of a few low-frequency waves.
torch::Tensor images(int64_t n, int64_t s) {
  auto ax = torch::linspace(0, 1, s);
  auto grid = torch::meshgrid({ax, ax}, "ij");
  auto out = torch::zeros({n, 1, s, s});
  for (int k = 1; k <= 3; ++k) {
    auto a = torch::randn({n, 1, 1, 1}), b = torch::randn({n, 1, 1, 1});
    out += a * torch::sin(k * 3.0 * grid[0]) * torch::cos(k * 2.0 * grid[1] + b);
  }
  return out;
}

int main() {
  torch::manual_seed(1);
  const int64_t r = 2;
  auto hi = images(64, 16);
  auto lo = F::avg_pool2d(hi, F::AvgPool2dFuncOptions(r));
  SuperRes net(r);
  auto before = torch::nn::utils::parameters_to_vector(net->parameters()).clone();
  torch::optim::Adam opt(net->parameters(), torch::optim::AdamOptions(3e-3));
  torch::nn::MSELoss mse;
  double first = 0, last = 0;
  for (int step = 0; step < 150; ++step) {
    auto out = net->forward(lo);
    auto loss = mse(out, hi);
    opt.zero_grad();
    loss.backward();
    opt.step();
    if (step == 0) first = loss.item<double>();
    last = loss.item<double>();
  }
  std::cout << "super-resolution mse " << first << " -> " << last << "\n";
  auto after = torch::nn::utils::parameters_to_vector(net->parameters());
  TORCH_CHECK(after.numel() == before.numel(), "parameter count changed");
  TORCH_CHECK(!torch::allclose(after, before), "parameters did not move");
  torch::nn::HuberLoss huber(torch::nn::HuberLossOptions().delta(0.5));
  auto h = huber(net->forward(lo), hi).item<double>();
  std::cout << "huber " << h << "\n";

  // Distillation: a student matches a teacher's softened distribution over 5 classes.
  auto table = torch::randn({10, 8});
  auto emb = torch::nn::Embedding::from_pretrained(table);
  TORCH_CHECK(!emb->weight.requires_grad(), "from_pretrained freezes by default");
  auto ids = torch::randint(0, 10, {128}, torch::kLong);
  auto feats = emb->forward(ids);
  torch::nn::CosineSimilarity cos(torch::nn::CosineSimilarityOptions().dim(1));
  auto self_sim = cos(feats, feats);
  TORCH_CHECK(torch::allclose(self_sim, torch::ones_like(self_sim), 1e-4, 1e-5), "cosine of a row with itself");
  torch::nn::Linear teacher(8, 5), student(8, 5);
  torch::optim::SGD sgd(student->parameters(), torch::optim::SGDOptions(0.5));
  torch::nn::KLDivLoss kl(torch::nn::KLDivLossOptions().reduction(torch::kBatchMean));
  auto target = F::softmax(teacher->forward(feats).detach() / 2.0, F::SoftmaxFuncOptions(1));
  double kl_first = 0, kl_last = 0;
  for (int step = 0; step < 100; ++step) {
    auto logp = F::log_softmax(student->forward(feats) / 2.0, F::LogSoftmaxFuncOptions(1));
    auto loss = kl(logp, target);
    sgd.zero_grad();
    loss.backward();
    sgd.step();
    if (step == 0) kl_first = loss.item<double>();
    kl_last = loss.item<double>();
  }
  std::cout << "distillation kl " << kl_first << " -> " << kl_last << "\n";
  auto manual = F::kl_div(F::log_softmax(student->forward(feats) / 2.0, 1), target,
                          F::KLDivFuncOptions().reduction(torch::kSum)) / feats.size(0);
  TORCH_CHECK(std::abs(manual.item<double>() - kl_last) < 0.05, "kl_div batchmean against sum / batch");
  auto norm = F::normalize(feats, F::NormalizeFuncOptions().dim(1));
  TORCH_CHECK(torch::allclose(norm.norm(2, {1}), torch::ones({128}), 1e-4, 1e-5), "normalize gives unit rows");
  return last < 0.5 * first && kl_last < 0.5 * kl_first ? 0 : 1;
}
