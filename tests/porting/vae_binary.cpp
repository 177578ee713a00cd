// A LibTorch program as its users write them: a variational autoencoder on binary patterns
// (the reparameterization trick, a KL term written out, binary cross-entropy on probabilities,
// the element tests and reductions such programs check their numbers with), kept in LibTorch's
// spelling: the build renames it as docs/porting.md says and runs it; it exits 0 when its loss
// fell and the checks hold.
#include <torch/torch.h>
#include <cmath>
#include <iostream>

namespace F = torch::nn::functional;

struct VAEImpl : torch::nn::Module {
  VAEImpl(int64_t in, int64_t hidden, int64_t latent)
      : enc(register_module("enc", torch::nn::Linear(in, hidden))),
        mu(register_module("mu", torch::nn::Linear(hidden, latent))),
        logvar(register_module("logvar", torch::nn::Linear(hidden, latent))),
        dec1(register_module("dec1", torch::nn::Linear(latent, hidden))),
        dec2(register_module("dec2", torch::nn::Linear(hidden, in))) {}

  std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> forward(torch::Tensor x) {
    auto h = torch::relu(enc->forward(x));
    auto m = mu->forward(h), lv = logvar->forward(h);
    auto std = torch::exp(0.5 * lv);
    auto z = m + std * torch::randn_like(std);
    auto recon = torch::sigmoid(dec2->forward(torch::relu(dec1->forward(z))));
    return {recon, m, lv};
  }

  torch::nn::Linear enc, mu, logvar, dec1, dec2;
};
TORCH_MODULE(VAE);

int main() {
  torch::manual_seed(0);
  const int64_t n = 512, dim = 16;
  // Patterns: four prototypes, each bit flipped with probability 0.05.
  auto protos = (torch::rand({4, dim}) > 0.5).to(torch::kFloat);
  auto which = torch::randint(0, 4, {n}, torch::kLong);
  auto flips = (torch::rand({n, dim}) < 0.05).to(torch::kFloat);
  auto data = torch::abs(protos.index_select(0, which) - flips);
  TORCH_CHECK(torch::count_nonzero(data).item<int64_t>() > 0, "no set bits");

  VAE model(dim, 32, 2);
  torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(1e-2));
  double first = 0, last = 0;
  for (int epoch = 0; epoch < 60; ++epoch) {
    auto perm = torch::randperm(n);
    double total = 0;
    for (int64_t b = 0; b < n; b += 64) {
      auto x = data.index_select(0, perm.slice(0, b, b + 64));
      auto [recon, m, lv] = model->forward(x);
      auto bce = F::binary_cross_entropy(recon, x, F::BinaryCrossEntropyFuncOptions().reduction(torch::kSum));
      auto kld = -0.5 * torch::sum(1 + lv - torch::square(m) - lv.exp());
      auto loss = (bce + kld) / x.size(0);
      opt.zero_grad();
      loss.backward();
      opt.step();
      TORCH_CHECK(torch::isfinite(loss).all().item<bool>(), "loss is not finite");
      total += loss.item<double>();
    }
    if (epoch == 0) first = total;
    last = total;
    if (epoch % 20 == 0) std::cout << "epoch " << epoch << " loss " << total / (n / 64) << "\n";
  }
  std::cout << "first " << first / (n / 64) << " last " << last / (n / 64) << "\n";

  // Reconstructions, rounded to bits, against the inputs; the checks a user writes about them.
  torch::NoGradGuard no_grad;
  model->eval();
  auto [recon, m, lv] = model->forward(data);
  auto bits = torch::round(recon);
  auto wrong = torch::count_nonzero(bits - data).item<int64_t>();
  std::cout << "wrong bits " << wrong << " of " << n * dim << "\n";
  auto worst = torch::amax(torch::abs(recon - data), {1});
  TORCH_CHECK(worst.size(0) == n, "amax over dim 1 keeps the rows");
  auto p = torch::clamp(recon, 1e-6, 1 - 1e-6);
  auto manual = -(data * torch::log(p) + (1 - data) * torch::log1p(-p)).mean();
  auto library = F::binary_cross_entropy(p, data);
  TORCH_CHECK(torch::allclose(manual, library, 1e-4, 1e-5), "binary cross-entropy by hand differs");
  auto hi = torch::maximum(recon, 1 - recon);
  TORCH_CHECK(torch::amin(hi).item<float>() >= 0.5f, "max(p, 1 - p) below one half");
  TORCH_CHECK(!torch::isnan(m).any().item<bool>(), "NaN in the means");
  return last < 0.7 * first && wrong < n * dim / 10 ? 0 : 1;
}
