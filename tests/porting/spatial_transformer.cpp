// A LibTorch program as its users write them: a spatial transformer (PyTorch's STN tutorial) that
// learns to undo random rotations and shifts of generated blobs with affine_grid and
// grid_sample, then the images cut into overlapping patches with unfold, put back with an
// nn::Fold, and each patch matched to its nearest prototype with torch::cdist.
// Kept in LibTorch's spelling: the build renames it as docs/porting.md says and runs it; it
// exits 0 when the loss fell and the checks hold.
#include <cmath>
#include <iostream>

#include <torch/torch.h>

namespace F = torch::nn::functional;

struct STNImpl : torch::nn::Module {
  STNImpl()
      : conv(register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 8, 5)))),
        fc1(register_module("fc1", torch::nn::Linear(8 * 6 * 6, 32))),
        fc2(register_module("fc2", torch::nn::Linear(32, 6))) {
    // start from the identity transform, as the tutorial does
    torch::NoGradGuard no_grad;
    fc2->weight.zero_();
    fc2->bias.copy_(torch::tensor({1.0, 0.0, 0.0, 0.0, 1.0, 0.0}));
  }
  torch::Tensor forward(torch::Tensor x) {
    auto xs = torch::relu(F::max_pool2d(conv->forward(x), F::MaxPool2dFuncOptions(2)));
    auto theta = fc2->forward(torch::relu(fc1->forward(xs.view({-1, 8 * 6 * 6})))).view({-1, 2, 3});
    auto grid = F::affine_grid(theta, x.sizes(), /*align_corners=*/false);
    return F::grid_sample(
        x, grid,
        F::GridSampleFuncOptions().mode(torch::kBilinear).padding_mode(torch::kZeros).align_corners(false));
  }
  torch::nn::Conv2d conv;
  torch::nn::Linear fc1, fc2;
};
TORCH_MODULE(STN);

// n centered blobs [n, 1, 16, 16] of random widths, and the same moved by random rotations and shifts.
std::pair<torch::Tensor, torch::Tensor> batch(int64_t n) {
  auto ax = torch::linspace(-1, 1, 16);
  auto yx = torch::meshgrid({ax, ax}, "ij");
  auto r2 = (yx[0] * yx[0] + yx[1] * yx[1] * 4).view({1, 1, 16, 16});
  auto width = torch::rand({n, 1, 1, 1}) * 0.1 + 0.1;
  auto centered = torch::exp(-r2 / width);
  auto angle = (torch::rand({n}) - 0.5) * 1.2, tx = (torch::rand({n}) - 0.5) * 0.6,
       ty = (torch::rand({n}) - 0.5) * 0.6;
  auto theta =
      torch::stack({torch::cos(angle), -torch::sin(angle), tx, torch::sin(angle), torch::cos(angle), ty}, 1)
          .view({n, 2, 3});
  auto moved = F::grid_sample(centered, F::affine_grid(theta, {n, 1, 16, 16}, false),
                              F::GridSampleFuncOptions().padding_mode(torch::kBorder).align_corners(false));
  return {moved, centered};
}

int main() {
  torch::manual_seed(3);
  STN net;
  torch::optim::Adam opt(net->parameters(), torch::optim::AdamOptions(2e-3));
  double first = 0, last = 0;
  for (int step = 0; step < 100; ++step) {
    auto [x, target] = batch(32);
    auto loss = F::mse_loss(net->forward(x), target);
    opt.zero_grad();
    loss.backward();
    opt.step();
    if (step < 10) first += loss.item<double>() / 10;
    if (step >= 90) last += loss.item<double>() / 10;
  }
  std::cout << "STN loss " << first << " -> " << last << "\n";

  // overlapping 4 x 4 patches, stride 2: fold(unfold(x)) over the overlap count is x again
  auto x = batch(2).first;
  auto opts = F::UnfoldFuncOptions({4, 4}).stride(2).padding(1);
  auto cols = F::unfold(x, opts);  // [2, 16, 64]
  torch::nn::Fold fold(torch::nn::FoldOptions({16, 16}, {4, 4}).stride(2).padding(1));
  std::cout << fold << "\n";
  auto count = fold(F::unfold(torch::ones_like(x), opts));
  const bool round_trip = torch::allclose(fold(cols) / count, x, 1e-5, 1e-6);

  // each patch's nearest of three prototypes (patches of the first image)
  auto patches = cols.transpose(1, 2).reshape({1, -1, 16});  // [1, 128, 16]
  auto prototypes = patches.index_select(1, torch::tensor({0, 27, 45}));
  auto d = torch::cdist(patches, prototypes);  // [1, 128, 3]
  auto nearest = std::get<1>(d.min(2));
  const bool own = nearest[0][27].item<int64_t>() == 1 && d[0][45][2].item<float>() < 1e-2;
  std::cout << "round trip " << round_trip << ", prototypes " << own << "\n";
  return last < 0.8 * first && round_trip && own ? 0 : 1;
}
