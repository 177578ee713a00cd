// The two training-step workloads (docs/design.md, "Performance targets"), one program for
// both libraries: built
// against wick, or against LibTorch with -DTRAIN_STEP_TORCH (bench/compare builds both and
// prints them in its table). A step is zero_grad, forward, cross-entropy, backward and an
// optimizer step; the figure is the wall time per step of a group of steps ended by a device
// synchronize, the median of several groups after a warm-up, on fresh random batches.
//   train_step_mlp_small_us: MLP 784-128-10, batch 64, SGD with momentum
//   train_step_mlp_large_ms: MLP 4096-4096-4096-4096-1000, batch 4096, SGD with momentum, fp32
#ifdef TRAIN_STEP_TORCH
#include <torch/cuda.h>
#include <torch/torch.h>
namespace lib = torch;
#else
#include <wick/wick.h>
namespace lib = wick;
#endif

#include <vector>

#include "compare/harness.h"

namespace {

lib::Device gpu() {
#ifdef TRAIN_STEP_TORCH
  return lib::Device(torch::kCUDA, 0);
#else
  return lib::Device("cuda:0");
#endif
}

void sync() { lib::cuda::synchronize(); }

lib::Tensor labels(int64_t classes, int64_t batch) {
#ifdef TRAIN_STEP_TORCH
  return torch::randint(classes, {batch}, torch::TensorOptions().dtype(torch::kInt64).device(gpu()));
#else
  return wick::randint(classes, {batch}, wick::TensorOptions(wick::kInt64).device(gpu()));
#endif
}

// Host microseconds per training step of an MLP of the given widths.
double step_us(const std::vector<int64_t>& widths, int64_t batch, int steps_per_group, int groups) {
  lib::manual_seed(0);
  lib::nn::Sequential net;
  for (size_t i = 0; i + 1 < widths.size(); ++i) {
    net->push_back(lib::nn::Linear(widths[i], widths[i + 1]));
    if (i + 2 < widths.size()) net->push_back(lib::nn::ReLU());
  }
  net->to(gpu());
  lib::optim::SGD opt(net->parameters(), lib::optim::SGDOptions(0.01).momentum(0.9));
  // A few batches made up front and cycled through: fresh values, no generation in the clock.
  std::vector<lib::Tensor> xs, ys;
  for (int i = 0; i < 4; ++i) {
    xs.push_back(lib::randn({batch, widths.front()}, lib::TensorOptions().device(gpu())));
    ys.push_back(labels(widths.back(), batch));
  }
  int k = 0;
  auto step = [&] {
    opt.zero_grad();
    auto loss = lib::nn::functional::cross_entropy(net->forward(xs[k % 4]), ys[k % 4]);
    loss.backward();
    opt.step();
    ++k;
  };
  sync();
  // Wall time of a group of steps up to the device's end, per step.
  const double ms = compare::wall_ms(
      [&] {
        for (int i = 0; i < steps_per_group; ++i) step();
      },
      groups, sync);
  return ms * 1000 / steps_per_group;
}

}  // namespace

int main(int argc, char** argv) {
  auto sel = [&](const char* name) { return compare::selected(argc, argv, name); };
  if (sel("train_step_mlp_small"))
    compare::report("train_step_mlp_small_us", step_us({784, 128, 10}, 64, 50, 11), "us");
  if (sel("train_step_mlp_large"))
    compare::report("train_step_mlp_large_ms", step_us({4096, 4096, 4096, 4096, 1000}, 4096, 5, 7) / 1000,
                    "ms");
  return 0;
}
