// A LibTorch program as its users write them: a GAN on small generated images (a DCGAN-style
// generator of its own behind TORCH_MODULE, ConvTranspose2d and BatchNorm2d without bias, a
// discriminator built as a Sequential of Conv2d, LeakyReLU options and Sigmoid, Adam with betas,
// labels from torch::empty(n, device).uniform_, binary_cross_entropy), then the samples laid out
// in a grid as image-saving helpers do (torch::full of a Scalar, narrow().narrow().copy_,
// permute, to(kCPU, kUInt8), torch::str for the file name). Kept in LibTorch's spelling: the
// build renames it as docs/porting.md says and runs it; it exits 0 when the discriminator's
// loss fell while it trained alone and the generator's samples came closer to the data.
#include <torch/torch.h>
#include <cmath>
#include <iostream>

using namespace torch;

const int64_t kNoise = 8;

struct DCGANGeneratorImpl : nn::Module {
  DCGANGeneratorImpl(int64_t noise)
      : conv1(nn::ConvTranspose2dOptions(noise, 32, 4).bias(false)),
        bn1(32),
        conv2(nn::ConvTranspose2dOptions(32, 1, 4).stride(2).padding(1).bias(false)) {
    register_module("conv1", conv1);
    register_module("bn1", bn1);
    register_module("conv2", conv2);
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(bn1(conv1(x)));  // [N, 32, 4, 4]
    return torch::tanh(conv2(x));     // [N, 1, 8, 8]
  }
  nn::ConvTranspose2d conv1, conv2;
  nn::BatchNorm2d bn1;
};
TORCH_MODULE(DCGANGenerator);

nn::Sequential make_discriminator() {
  return nn::Sequential(
      nn::Conv2d(nn::Conv2dOptions(1, 16, 4).stride(2).padding(1).bias(false)),
      nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.2)),
      nn::Conv2d(nn::Conv2dOptions(16, 32, 4).stride(2).padding(1).bias(false)),
      nn::BatchNorm2d(32),
      nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.2)),
      nn::Conv2d(nn::Conv2dOptions(32, 1, 2).stride(1).padding(0).bias(false)),
      nn::Sigmoid());
}

// Real images: a bright vertical bar at a random column on a dark background, in [-1, 1].
torch::Tensor real_batch(int64_t n) {
  auto img = torch::full({n, 1, 8, 8}, -1.0);
  auto cols = torch::randint(1, 7, {n}, torch::kLong);
  for (int64_t i = 0; i < n; ++i) img[i].select(2, cols[i].item<int64_t>()).fill_(1.0);
  return img;
}

// A grid of images with padding between them, as the helpers that save samples build it.
torch::Tensor make_grid(torch::Tensor images, int64_t nrow, int64_t padding, torch::Scalar pad_value) {
  auto n = images.size(0), h = images.size(2) + padding, w = images.size(3) + padding;
  auto cols = std::min(nrow, n), rows = (n + cols - 1) / cols;
  auto grid = torch::full({images.size(1), h * rows + padding, w * cols + padding}, pad_value, torch::kFloat);
  for (int64_t k = 0; k < n; ++k) {
    grid.narrow(1, (k / cols) * h + padding, h - padding).narrow(2, (k % cols) * w + padding, w - padding).copy_(images[k]);
  }
  return grid;
}

int main() {
  torch::manual_seed(1);
  torch::Device device(torch::kCPU);
  TORCH_CHECK(torch::full({2}, 0).scalar_type() == torch::kLong, "full of an integer is int64");

  DCGANGenerator generator(kNoise);
  generator->to(device);
  nn::Sequential discriminator = make_discriminator();
  discriminator->to(device);
  torch::optim::Adam g_opt(generator->parameters(), torch::optim::AdamOptions(2e-3).betas(std::make_tuple(0.5, 0.999)));
  torch::optim::Adam d_opt(discriminator->parameters(), torch::optim::AdamOptions(2e-3).betas(std::make_tuple(0.5, 0.999)));

  const int64_t batch = 32;
  auto fixed_noise = torch::randn({64, kNoise, 1, 1}, device);
  auto data_mean = real_batch(512).mean(0);
  auto distance = [&] {
    torch::NoGradGuard no_grad;
    generator->eval();
    auto d = (generator->forward(fixed_noise).mean(0) - data_mean).abs().mean().item<double>();
    generator->train();
    return d;
  };
  const double start_distance = distance();

  double d_first = 0, d_last = 0;
  for (int64_t step = 0; step < 150; ++step) {
    const bool train_generator = step >= 30;  // the discriminator trains alone first
    discriminator->zero_grad();
    auto real = real_batch(batch).to(device);
    torch::Tensor real_labels = torch::empty(batch, device).uniform_(0.8, 1.0);
    auto real_out = discriminator->forward(real).reshape(real_labels.sizes());
    auto d_loss_real = torch::binary_cross_entropy(real_out, real_labels);
    d_loss_real.backward();
    auto fake = generator->forward(torch::randn({batch, kNoise, 1, 1}, device));
    torch::Tensor fake_labels = torch::zeros(batch, device);
    auto fake_out = discriminator->forward(fake.detach()).reshape(fake_labels.sizes());
    auto d_loss_fake = torch::binary_cross_entropy(fake_out, fake_labels);
    d_loss_fake.backward();
    d_opt.step();
    auto d_loss = (d_loss_real + d_loss_fake).item<double>();
    if (step < 5) d_first += d_loss;
    if (step >= 25 && step < 30) d_last += d_loss;

    if (train_generator) {
      generator->zero_grad();
      fake_labels.fill_(1);
      auto g_out = discriminator->forward(fake).reshape(fake_labels.sizes());
      auto g_loss = torch::binary_cross_entropy(g_out, fake_labels);
      g_loss.backward();
      g_opt.step();
      TORCH_CHECK(std::isfinite(g_loss.item<float>()), "generator loss is not finite");
      if (step % 40 == 0) std::printf("[%3ld] D_loss: %.4f | G_loss: %.4f\n", step, d_loss, g_loss.item<float>());
    }
  }
  const double end_distance = distance();
  std::cout << "discriminator alone: first " << d_first / 5 << " last " << d_last / 5 << "\n";
  std::cout << "distance of the samples' mean to the data's: " << start_distance << " -> " << end_distance << "\n";

  // The samples as an 8-bit image grid, as a program writes them to a file.
  torch::NoGradGuard no_grad;
  generator->eval();
  auto denorm = [](torch::Tensor t) { return t.add(1).div_(2).clamp_(0, 1); };
  auto samples = denorm(generator->forward(fixed_noise.slice(0, 0, 10)));
  auto grid = make_grid(samples, 5, 2, 0).mul(255).add_(0.5).clamp_(0, 255).permute({1, 2, 0}).to(torch::kCPU, torch::kUInt8);
  TORCH_CHECK(grid.sizes() == torch::IntArrayRef({2 * 10 + 2, 5 * 10 + 2, 1}), "grid shape ", grid.sizes());
  TORCH_CHECK(grid.scalar_type() == torch::kUInt8 && grid.select(0, 0).sum().item<int64_t>() == 0, "padding rows are 0");
  const std::string name = torch::str("samples-", 3, ".png");
  TORCH_CHECK(name == "samples-3.png", name);
  return (d_last < d_first && end_distance < start_distance) ? 0 : 1;
}
