// A variational autoencoder (the VAE of PyTorch's examples, with MLPs): the encoder maps a 28x28
// image to the mean and log-variance of a 16-dim Gaussian, a sample drawn by the
// reparameterisation trick (mu + sigma * eps, so gradients flow through mu and sigma) goes
// through the decoder back to pixel probabilities, and the loss is the negative ELBO: binary
// cross entropy of the reconstruction plus the KL divergence from N(0, 1). The images are
// Fashion-MNIST's when Debian's dataset-fashion-mnist is installed, else (or with --generated)
// generated round blobs. It prints the loss per image at the start and at the end (each the
// mean over 10 steps), and exits 1 unless it fell to 2/3 of where it started.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <tuple>

#include <wick/wick.h>

#include "blob_images.h"

namespace nn = wick::nn;
namespace F = wick::nn::functional;
using wick::Tensor;

constexpr int64_t kLatent = 16;
constexpr int64_t kBatchSize = 64;
constexpr int kSteps = 150;

struct VAEImpl : nn::Module {
  VAEImpl() {
    fc1 = register_module("fc1", nn::Linear(784, 256));
    fc_mu = register_module("fc_mu", nn::Linear(256, kLatent));
    fc_logvar = register_module("fc_logvar", nn::Linear(256, kLatent));
    fc3 = register_module("fc3", nn::Linear(kLatent, 256));
    fc4 = register_module("fc4", nn::Linear(256, 784));
  }
  std::tuple<Tensor, Tensor> encode(const Tensor& x) {
    Tensor h = F::relu(fc1(x));
    return {fc_mu(h), fc_logvar(h)};
  }
  // z = mu + sigma * eps with eps ~ N(0, 1): random, yet differentiable in mu and logvar.
  Tensor reparameterize(const Tensor& mu, const Tensor& logvar) {
    Tensor std = wick::exp(logvar * 0.5);
    return mu + std * wick::randn_like(std);
  }
  Tensor decode(const Tensor& z) { return wick::sigmoid(fc4(F::relu(fc3(z)))); }
  // x [n, 784] in [0, 1] -> (reconstruction [n, 784], mu, logvar)
  std::tuple<Tensor, Tensor, Tensor> forward(const Tensor& x) {
    auto [mu, logvar] = encode(x);
    return {decode(reparameterize(mu, logvar)), mu, logvar};
  }
  nn::Linear fc1{nullptr}, fc_mu{nullptr}, fc_logvar{nullptr}, fc3{nullptr}, fc4{nullptr};
};
WICK_MODULE(VAE);

// The negative ELBO summed over the batch: reconstruction BCE + KL(N(mu, sigma^2) || N(0, 1)),
// whose closed form is -1/2 sum(1 + log sigma^2 - mu^2 - sigma^2).
Tensor loss_function(const Tensor& recon_x, const Tensor& x, const Tensor& mu, const Tensor& logvar) {
  Tensor bce = F::binary_cross_entropy(recon_x, x, /*weight=*/{}, "sum");
  Tensor kld = (1 + logvar - mu.pow(2) - logvar.exp()).sum() * -0.5;
  return bce + kld;
}

int main(int argc, char** argv) {
  wick::manual_seed(16);
  const bool generated = argc > 1 && std::string(argv[1]) == "--generated";
  const std::string root(wick::data::FashionMNIST::kDefaultRoot);
  Tensor images;  // [N, 1, 28, 28] in [0, 1]
  if (!generated && std::filesystem::exists(root + "/t10k-images-idx3-ubyte.gz")) {
    images = wick::data::FashionMNIST(root, /*train=*/false).data();
    std::cout << "images: Fashion-MNIST\n";
  } else {
    images = blob_images(4096);
    std::cout << "images: generated blobs\n";
  }
  wick::data::TensorDataset dataset(images, wick::zeros({images.size(0)}, wick::kInt64));
  wick::data::DataLoader loader(dataset, {.batch_size = kBatchSize, .shuffle = true, .drop_last = true});

  VAE model;
  wick::optim::Adam optimizer(model->parameters(), wick::optim::AdamOptions(1e-3));
  double first = 0, last = 0;
  int step = 0;
  while (step < kSteps) {
    for (auto& batch : loader) {
      if (step == kSteps) break;
      Tensor x = batch.data.view({-1, 784});
      optimizer.zero_grad();
      auto [recon, mu, logvar] = model(x);
      Tensor loss = loss_function(recon, x, mu, logvar);
      loss.backward();
      optimizer.step();
      const double per_image = loss.item<double>() / kBatchSize;
      if (step < 10) first += per_image / 10;
      if (step >= kSteps - 10) last += per_image / 10;
      ++step;
    }
  }
  std::printf("loss per image: %.1f in the first 10 steps, %.1f in the last 10\n", first, last);
  if (!(last < first * 2 / 3)) {
    std::cout << "the loss did not fall\n";
    return 1;
  }
  return 0;
}
