// Data-parallel training over processes (LibTorch's distributed MNIST example, in wick): every
// process holds the same small CNN, trains on its own share of the data (a DistributedSampler)
// and, after each backward pass, averages the gradients over the processes with all_reduce, by
// hand, so that each takes the same optimizer step. Start it with wick-launch (the gloo backend
// when wick has it, else mpi):
//   wick-launch --nproc-per-node 2 build/examples/17_distributed_mnist
//   mpirun -np 2 build/examples/17_distributed_mnist
// The data are Fashion-MNIST's test images when Debian's dataset-fashion-mnist is installed,
// else (or with --generated) generated ones: round blobs labelled by the quarter of the image
// their centre lies in. Rank 0 prints the loss at the start and at the end (each the mean over 10
// steps and over the processes); every process exits 1 unless the loss fell to 3/4 of where it
// started and the processes' parameters agree bit for bit at the end.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include <wick/distributed.h>
#include <wick/wick.h>

namespace nn = wick::nn;
namespace F = wick::nn::functional;
namespace dist = wick::distributed;
using wick::Tensor;

constexpr int64_t kBatchSize = 32;
constexpr int kSteps = 60;

// images [n, 1, 28, 28] -> log-probabilities of 10 classes [n, 10].
struct ModelImpl : nn::Module {
  ModelImpl() {
    conv1 = register_module("conv1", nn::Conv2d(1, 8, 5));
    conv2 = register_module("conv2", nn::Conv2d(8, 16, 5));
    fc1 = register_module("fc1", nn::Linear(256, 50));
    fc2 = register_module("fc2", nn::Linear(50, 10));
  }
  Tensor forward(Tensor x) {
    x = F::relu(F::max_pool2d(conv1(x), 2));  // [n, 8, 12, 12]
    x = F::relu(F::max_pool2d(conv2(x), 2));  // [n, 16, 4, 4]
    x = F::relu(fc1(x.view({-1, 256})));
    return F::log_softmax(fc2(x), 1);
  }
  nn::Conv2d conv1{nullptr}, conv2{nullptr};
  nn::Linear fc1{nullptr}, fc2{nullptr};
};
WICK_MODULE(Model);

// n images [n, 1, 28, 28] in [0, 1], each a round blob, and their labels [n]: 0..3, the quarter
// of the image that holds the blob's centre.
wick::data::Example<> blobs(int64_t n) {
  Tensor grid = wick::arange(28, wick::kFloat32);
  Tensor cx = wick::rand({n, 1, 1}) * 20 + 4, cy = wick::rand({n, 1, 1}) * 20 + 4;
  Tensor s = wick::rand({n, 1, 1}) + 2;
  Tensor r2 = (grid.view({1, 28, 1}) - cy).pow(2) + (grid.view({1, 1, 28}) - cx).pow(2);
  Tensor labels = (cx.view({-1}) >= 14).to(wick::kInt64) + (cy.view({-1}) >= 14).to(wick::kInt64) * 2;
  return {wick::exp(-r2 / (s * s * 2)).unsqueeze(1), labels};
}

int main(int argc, char** argv) {
  dist::init_process_group(dist::is_gloo_available() ? "gloo" : "mpi");
  const int rank = dist::get_rank(), world_size = dist::get_world_size();
  wick::manual_seed(17);  // the same data set and initial parameters on every rank

  const bool generated = argc > 1 && std::string(argv[1]) == "--generated";
  const std::string root(wick::data::FashionMNIST::kDefaultRoot);
  const bool fashion_mnist = !generated && std::filesystem::exists(root + "/t10k-images-idx3-ubyte.gz");
  std::unique_ptr<wick::data::TensorDataset> dataset;
  if (fashion_mnist) {
    dataset = std::make_unique<wick::data::FashionMNIST>(root, /*train=*/false,
                                                         wick::data::FashionMNISTOptions{.normalize = true});
  } else {
    auto [images, labels] = blobs(4096);
    dataset = std::make_unique<wick::data::TensorDataset>(images, labels);
  }
  auto sampler = std::make_shared<wick::data::DistributedSampler>(*dataset);  // this rank's share
  wick::data::DataLoader loader(*dataset, {.batch_size = kBatchSize, .sampler = sampler, .drop_last = true});

  Model model;
  // Every rank starts from rank 0's parameters (they agree already: the same seed; this makes
  // sure of it, as DistributedDataParallel does).
  {
    wick::NoGradGuard no_grad;
    for (auto& p : model->parameters()) dist::broadcast(p, 0);
  }
  wick::optim::SGD optimizer(model->parameters(), wick::optim::SGDOptions(0.05).momentum(0.5));

  double first = 0, last = 0;
  int step = 0;
  for (uint64_t epoch = 0; step < kSteps; ++epoch) {
    sampler->set_epoch(epoch);
    for (auto& batch : loader) {
      if (step == kSteps) break;
      optimizer.zero_grad();
      Tensor loss = F::nll_loss(model(batch.data), batch.target);
      loss.backward();
      // The gradients averaged over the ranks: summed by all_reduce, divided by the world size.
      for (auto& p : model->parameters()) {
        Tensor grad = p.grad();
        dist::all_reduce(grad);
        grad.div_(world_size);
      }
      optimizer.step();
      if (step < 10) first += loss.item<double>() / 10;
      if (step >= kSteps - 10) last += loss.item<double>() / 10;
      ++step;
    }
  }

  // The losses averaged over the ranks, and whether every rank holds the same parameters: the
  // largest and the smallest value of each over the ranks must be equal.
  Tensor losses = wick::tensor({first, last});
  dist::all_reduce(losses, dist::ReduceOp::AVG);
  std::vector<Tensor> flat;
  for (auto& p : model->parameters()) flat.push_back(p.detach().reshape({-1}));
  Tensor params_max = wick::cat(flat), params_min = params_max.clone();
  dist::all_reduce(params_max, dist::ReduceOp::MAX);
  dist::all_reduce(params_min, dist::ReduceOp::MIN);
  const bool agree = params_max.eq(params_min).all().item<bool>();
  first = losses[0].item<double>(), last = losses[1].item<double>();
  if (rank == 0) {
    std::printf("%d processes (%s), %s\n", world_size, dist::get_backend().c_str(),
                fashion_mnist ? "Fashion-MNIST" : "generated blobs");
    std::printf("loss %.3f in the first 10 steps, %.3f in the last 10\n", first, last);
    std::printf("parameters agree over the processes: %s\n", agree ? "yes" : "no");
  }
  dist::destroy_process_group();
  if (!(last < first * 0.75) || !agree) {
    if (rank == 0) std::cout << (agree ? "the loss did not fall\n" : "the parameters differ\n");
    return 1;
  }
  return 0;
}
