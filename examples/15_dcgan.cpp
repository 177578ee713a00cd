// A small DCGAN (LibTorch's DCGAN example, scaled down to run in seconds): a generator of
// ConvTranspose2d layers turns noise into 28x28 images, a discriminator of Conv2d layers tells
// them from real ones, both trained with binary cross entropy and Adam (betas 0.5, 0.999).
// The real images are Fashion-MNIST's when Debian's dataset-fashion-mnist is installed, else
// (or with --generated) generated ones: round blobs of random place and size. It prints the
// discriminator's and the generator's losses at the start and at the end (each the mean over 10
// steps), and exits 1 unless the discriminator learned to tell real from fake: its loss on real
// + fake images must fall to 3/4 of where it started (it falls from about 1.2 to 0.65 here).
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>

#include <wick/wick.h>

#include "blob_images.h"

namespace nn = wick::nn;
namespace F = wick::nn::functional;
using wick::Tensor;

constexpr int64_t kNoiseSize = 32;
constexpr int64_t kBatchSize = 16;
constexpr int kSteps = 40;

// noise [n, kNoiseSize, 1, 1] -> images [n, 1, 28, 28] in [-1, 1]: 1x1 -> 4x4 -> 7x7 -> 14x14 -> 28x28.
struct DCGANGeneratorImpl : nn::Module {
  DCGANGeneratorImpl() {
    conv1 = register_module("conv1",
                            nn::ConvTranspose2d(nn::ConvTranspose2dOptions(kNoiseSize, 64, 4).bias(false)));
    batch_norm1 = register_module("batch_norm1", nn::BatchNorm2d(64));
    conv2 = register_module(
        "conv2", nn::ConvTranspose2d(nn::ConvTranspose2dOptions(64, 32, 3).stride(2).padding(1).bias(false)));
    batch_norm2 = register_module("batch_norm2", nn::BatchNorm2d(32));
    conv3 = register_module(
        "conv3", nn::ConvTranspose2d(nn::ConvTranspose2dOptions(32, 16, 4).stride(2).padding(1).bias(false)));
    batch_norm3 = register_module("batch_norm3", nn::BatchNorm2d(16));
    conv4 = register_module(
        "conv4", nn::ConvTranspose2d(nn::ConvTranspose2dOptions(16, 1, 4).stride(2).padding(1).bias(false)));
  }
  Tensor forward(Tensor x) {
    x = F::relu(batch_norm1(conv1(x)));
    x = F::relu(batch_norm2(conv2(x)));
    x = F::relu(batch_norm3(conv3(x)));
    return wick::tanh(conv4(x));
  }
  nn::ConvTranspose2d conv1{nullptr}, conv2{nullptr}, conv3{nullptr}, conv4{nullptr};
  nn::BatchNorm2d batch_norm1{nullptr}, batch_norm2{nullptr}, batch_norm3{nullptr};
};
WICK_MODULE(DCGANGenerator);

// images [n, 1, 28, 28] -> the probability that each is real, [n, 1, 1, 1]: 28 -> 14 -> 7 -> 3 -> 1.
nn::Sequential make_discriminator() {
  return nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 16, 4).stride(2).padding(1).bias(false)),
                        nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.2)),
                        nn::Conv2d(nn::Conv2dOptions(16, 32, 4).stride(2).padding(1).bias(false)),
                        nn::BatchNorm2d(32), nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.2)),
                        nn::Conv2d(nn::Conv2dOptions(32, 64, 4).stride(2).padding(1).bias(false)),
                        nn::BatchNorm2d(64), nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.2)),
                        nn::Conv2d(nn::Conv2dOptions(64, 1, 3).stride(1).padding(0).bias(false)),
                        nn::Sigmoid());
}

int main(int argc, char** argv) {
  wick::manual_seed(15);
  const bool generated = argc > 1 && std::string(argv[1]) == "--generated";
  const std::string root(wick::data::FashionMNIST::kDefaultRoot);
  Tensor images;  // [N, 1, 28, 28] in [0, 1]
  if (!generated && std::filesystem::exists(root + "/t10k-images-idx3-ubyte.gz")) {
    images = wick::data::FashionMNIST(root, /*train=*/false).data();
    std::cout << "real images: Fashion-MNIST\n";
  } else {
    images = blob_images(4096);
    std::cout << "real images: generated blobs\n";
  }
  wick::data::TensorDataset dataset(images * 2 - 1,
                                    wick::zeros({images.size(0)}, wick::kInt64));  // to [-1, 1]
  wick::data::DataLoader loader(dataset, {.batch_size = kBatchSize, .shuffle = true, .drop_last = true});

  DCGANGenerator generator;
  nn::Sequential discriminator = make_discriminator();
  wick::optim::Adam generator_optimizer(generator->parameters(),
                                        wick::optim::AdamOptions(2e-4).betas({0.5, 0.999}));
  wick::optim::Adam discriminator_optimizer(discriminator->parameters(),
                                            wick::optim::AdamOptions(2e-4).betas({0.5, 0.999}));

  auto discriminate = [&](const Tensor& x) { return discriminator->forward(x).reshape({-1}); };  // [n]

  double d_first = 0, d_last = 0, g_first = 0, g_last = 0;
  int step = 0;
  while (step < kSteps) {
    for (auto& batch : loader) {
      if (step == kSteps) break;
      // The discriminator: real images labelled 0.8..1 (label smoothing, as the example), fakes 0.
      discriminator->zero_grad();
      Tensor real_images = batch.data;
      Tensor real_labels = wick::empty({kBatchSize}).uniform_(0.8, 1.0);
      Tensor real_output = discriminate(real_images);
      Tensor d_loss_real = F::binary_cross_entropy(real_output, real_labels);
      d_loss_real.backward();

      Tensor noise = wick::randn({kBatchSize, kNoiseSize, 1, 1});
      Tensor fake_images = generator(noise);
      Tensor fake_labels = wick::zeros({kBatchSize});
      Tensor fake_output = discriminate(fake_images.detach());
      Tensor d_loss_fake = F::binary_cross_entropy(fake_output, fake_labels);
      d_loss_fake.backward();
      const double d_loss = (d_loss_real + d_loss_fake).item<double>();
      discriminator_optimizer.step();

      // The generator: its fakes labelled real.
      generator->zero_grad();
      fake_labels.fill_(1);
      fake_output = discriminate(fake_images);
      Tensor g_loss = F::binary_cross_entropy(fake_output, fake_labels);
      g_loss.backward();
      generator_optimizer.step();

      if (step < 10) d_first += d_loss / 10, g_first += g_loss.item<double>() / 10;
      if (step >= kSteps - 10) d_last += d_loss / 10, g_last += g_loss.item<double>() / 10;
      ++step;
    }
  }
  std::printf("discriminator's loss: %.3f in the first 10 steps, %.3f in the last 10\n", d_first, d_last);
  std::printf("generator's loss:     %.3f in the first 10 steps, %.3f in the last 10\n", g_first, g_last);
  if (!(d_last < d_first * 0.75)) {
    std::cout << "the discriminator's loss did not fall\n";
    return 1;
  }
  return 0;
}
