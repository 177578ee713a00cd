// wick-train: trains a classifier on Fashion-MNIST and reports as it goes.
//
//   wick-train                                  # MLP, 5 epochs, on the GPU when there is one
//   wick-train --model cnn --epochs 5 --device cuda:1 --plot cnn.svg
//   wick-train --save model.safetensors && wick-train --resume model.safetensors --epochs 1
//   wick-train --model cnn --gpus 0,1           # nn::DataParallel over cuda:0 and cuda:1 (or --gpus all)
//   wick-launch --nproc-per-node 4 wick-train --distributed    # DistributedDataParallel, a GPU each
//   wick-launch --nproc-per-node 2 wick-train --distributed --device cpu   # two CPU processes (gloo)
//   wick-train --model cnn --amp                # mixed precision: bfloat16 autocast
//   wick-train --model cnn --amp fp16           # float16 autocast with amp::GradScaler
//
// Each epoch: a progress bar (samples/s, running loss), then the test accuracy. At the end: the
// SVG plot of loss and accuracy and, on a GPU, the caching allocator's memory summary.
//
// --distributed: one process per GPU (cuda:LOCAL_RANK, the "nccl" backend) or, with --device
// cpu, per CPU process ("gloo"; "mpi" in a build without Gloo), started by wick-launch, mpirun
// or srun (docs/distributed.md).
// The model is wrapped in nn::parallel::DistributedDataParallel, each process reads its share
// of the training set through a DistributedSampler, and every process starts from the same
// seed. --batch-size is the batch of a whole step, as with --gpus: each of N processes takes
// batch-size / N rows (rounded up), so that a step averages over about the same rows as on
// one device and training follows the same course. Rank 0 alone reports,
// evaluates (on the whole test set), plots and saves; the others print nothing.
//
// --amp: forward passes (training and evaluation) run under wick::AutocastGuard on the
// device's type, bfloat16 by default; --amp fp16 uses float16 and scales the loss with
// amp::GradScaler (steps with inf/NaN gradients are skipped). Parameters stay float32.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "train/progress.h"
#include "train/svg_plot.h"
#include "wick/data/dataloader.h"
#include "wick/data/fashion_mnist.h"
#include "wick/data/sampler.h"
#include "wick/distributed.h"
#include "wick/io/safetensors.h"
#include "wick/nn.h"
#include "wick/optim.h"
#include "wick/wick.h"

namespace {

using namespace wick;
using Clock = std::chrono::steady_clock;

struct Config {
  std::string device = "auto";
  bool disable_cuda = false;
  bool distributed = false;
  std::string gpus_arg;   // --gpus as given: "0,1" or "all"
  std::vector<int> gpus;  // parsed
  int epochs = 5;
  int64_t batch_size = 64;
  double lr = 1e-3;
  std::string model = "mlp";
  std::string optimizer = "adam";
  double momentum = 0.9;
  std::string amp;  // "" (off), "bf16" or "fp16"
  uint64_t seed = 0;
  std::string data_dir = std::string(data::FashionMNIST::kDefaultRoot);
  int workers = 1;
  std::string save, resume;
  std::string plot = "wick-train.svg";
};

[[noreturn]] void fail(const std::string& what) { throw ValueError("[wick-train] " + what); }

// --gpus "0,1" or "all" to indices (checked against the visible devices in pick_device).
std::vector<int> parse_gpus(const std::string& arg) {
  std::vector<int> out;
  if (arg.empty()) return out;
  if (arg == "all") {
    if (!cuda::is_available()) fail("--gpus all: no CUDA device is available; use --device cpu");
    for (int i = 0; i < cuda::device_count(); ++i) out.push_back(i);
    return out;
  }
  size_t pos = 0;
  while (pos <= arg.size()) {
    const size_t comma = std::min(arg.find(',', pos), arg.size());
    const std::string item = arg.substr(pos, comma - pos);
    if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos)
      fail("--gpus " + arg + ": expected GPU indices such as 0,1, or all");
    const int g = std::stoi(item);
    for (int seen : out)
      if (seen == g) fail("--gpus " + arg + ": GPU " + item + " is listed twice");
    out.push_back(g);
    pos = comma + 1;
  }
  return out;
}

// --device, --disable-cuda and --gpus to the device the model lives on (with several --gpus,
// the first; nn::DataParallel spreads each batch over all of them).
Device pick_device(const Config& c) {
  if (c.disable_cuda) {
    if (c.device != "auto" && c.device != "cpu") fail("--disable-cuda contradicts --device " + c.device);
    if (!c.gpus.empty()) fail("--disable-cuda contradicts --gpus");
    return Device(kCPU);
  }
  if (!c.gpus.empty() && c.device != "auto") fail("give either --device or --gpus, not both");
  const std::string flag = c.gpus.empty() ? "--device " + c.device : "--gpus " + c.gpus_arg;
  if (c.gpus.empty() && c.device == "auto") return cuda::is_available() ? Device(kCUDA, 0) : Device(kCPU);
  // "[Device] invalid device string ..." for anything but cpu, cuda, cuda:N.
  Device d = c.gpus.empty() ? Device(c.device) : Device(kCUDA, c.gpus[0]);
  if (d.is_cpu()) return d;
#ifndef WICK_WITH_CUDA
  fail(flag + ": this wick was built without CUDA; use --device cpu");
#endif
  if (!cuda::is_available()) fail(flag + ": no CUDA device is available; use --device cpu");
  if (!d.has_index()) d = Device(kCUDA, cuda::current_device());
  for (int g : c.gpus.empty() ? std::vector<int>{int(d.index())} : c.gpus)
    if (g >= cuda::device_count())
      fail(flag + ": only " + std::to_string(cuda::device_count()) + " CUDA device(s) are visible");
  return d;
}

// --distributed: the processes were started by a launcher; this one joins the group ("nccl" on a
// GPU, "gloo" on the CPU, or "mpi" in a build without Gloo) and takes cuda:LOCAL_RANK. Returns
// its device.
Device join_process_group(const Config& c) {
  if (!c.gpus_arg.empty())
    fail(
        "--distributed runs one process per GPU: give --device cuda or cpu, not --gpus (start the "
        "processes with wick-launch, mpirun or srun)");
  if (c.device.find(':') != std::string::npos)
    fail("--distributed: each process uses cuda:LOCAL_RANK; give --device cuda (or cpu), not --device " +
         c.device);
  const Device kind = pick_device(c);  // cpu or cuda, checked against what is available
  const char* cpu_backend = distributed::is_gloo_available() ? "gloo" : "mpi";
  distributed::init_process_group(kind.is_cuda() ? "nccl" : cpu_backend);
  if (kind.is_cpu()) return kind;
  const int local = distributed::get_local_rank();
  if (local >= cuda::device_count())
    fail("--distributed: local rank " + std::to_string(local) + " but only " +
         std::to_string(cuda::device_count()) +
         " CUDA device(s) are visible; start at most that many "
         "processes per host");
  cuda::set_device(local);
  return Device(kCUDA, local);
}

// 784-128-10: about 88% after 5 epochs, a few seconds on two CPU cores.
nn::Sequential make_mlp() {
  return nn::Sequential(nn::Flatten(), nn::Linear(784, 128), nn::ReLU(), nn::Linear(128, 10));
}

// Two 3x3 convolutions with pooling, then two linear layers: about 91% after 3 epochs.
nn::Sequential make_cnn() {
  return nn::Sequential(
      nn::Conv2d(nn::Conv2dOptions(1, 32, 3).padding(1)), nn::ReLU(), nn::MaxPool2d(nn::MaxPool2dOptions(2)),
      nn::Conv2d(nn::Conv2dOptions(32, 64, 3).padding(1)), nn::ReLU(), nn::MaxPool2d(nn::MaxPool2dOptions(2)),
      nn::Flatten(), nn::Linear(64 * 7 * 7, 128), nn::ReLU(), nn::Linear(128, 10));
}

// Fraction of the test set classified correctly.
template <class Forward>
double evaluate(nn::Sequential& model, const Forward& forward, data::DataLoader& loader, Device device) {
  NoGradGuard no_grad;
  model->eval();
  int64_t correct = 0, total = 0;
  for (auto& batch : loader) {
    Tensor x = batch.data.to(device, /*non_blocking=*/true);
    Tensor y = batch.target.to(device, /*non_blocking=*/true);
    Tensor predicted = argmax(forward(x), 1);
    correct += sum(predicted == y).item<int64_t>();
    total += y.size(0);
  }
  model->train();
  return total ? double(correct) / double(total) : 0.0;
}

std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", 100 * fraction);
  return buf;
}

int run(Config c) {
  const auto start = Clock::now();
  std::optional<Dtype> amp_dtype;
  if (c.amp == "bf16" || c.amp == "bfloat16") amp_dtype = kBFloat16;
  else if (c.amp == "fp16" || c.amp == "float16") amp_dtype = kFloat16;
  else if (!c.amp.empty()) fail("--amp " + c.amp + ": expected bf16 (the default) or fp16");
  if (c.epochs < 1) fail("--epochs must be at least 1");
  if (c.batch_size < 1) fail("--batch-size must be at least 1");
  Device device(kCPU);
  int world = 1;
  if (c.distributed) {
    device = join_process_group(c);
    world = distributed::get_world_size();
  } else {
    c.gpus = parse_gpus(c.gpus_arg);
    device = pick_device(c);
  }
  // Rank 0 reports; the other ranks of a distributed run are silent.
  const bool lead = !c.distributed || distributed::get_rank() == 0;
  manual_seed(c.seed);  // the same weights on every rank

  data::FashionMNIST train_set(c.data_dir, true, {.normalize = true});
  data::FashionMNIST test_set(c.data_dir, false, {.normalize = true});
  const bool pin = device.is_cuda();
  // Distributed: each rank its share of the training set, in an order drawn from the seed
  // and the epoch, the same on every rank.
  std::shared_ptr<data::DistributedSampler> sampler;
  if (c.distributed)
    sampler = std::make_shared<data::DistributedSampler>(
        train_set,
        data::DistributedSamplerOptions{
            .num_replicas = world, .rank = distributed::get_rank(), .shuffle = true, .seed = c.seed});
  const int64_t rank_batch = (c.batch_size + world - 1) / world;
  data::DataLoader train_loader(train_set, {.batch_size = rank_batch,
                                            .shuffle = sampler == nullptr,
                                            .sampler = sampler,
                                            .num_workers = c.workers,
                                            .pin_memory = pin,
                                            .seed = c.seed});
  data::DataLoader test_loader(test_set, {.batch_size = 1000, .num_workers = c.workers, .pin_memory = pin});

  nn::Sequential model = c.model == "cnn" ? make_cnn() : make_mlp();
  model->to(device);
  int first_epoch = 1;
  if (!c.resume.empty()) {
    model->load_state_dict(load(c.resume));  // strict: names and sizes must match
    auto meta = load_metadata(c.resume);
    if (meta.count("epoch")) first_epoch = std::stoi(meta["epoch"]) + 1;
    train_loader.set_epoch(uint64_t(first_epoch - 1));  // the order an uninterrupted run would see
  }
  // Several GPUs: the model stays on the first (its state dict keeps its names), and
  // DataParallel runs each batch over all of them.
  nn::DataParallel parallel{nullptr};
  if (c.gpus.size() > 1) parallel = nn::DataParallel(model, c.gpus);
  // Distributed: the wrapper averages the gradients over the ranks during backward; it starts
  // every rank from rank 0's weights. Evaluation uses the model itself (rank 0 alone runs it, and
  // the wrapper's forward takes part in collectives).
  nn::parallel::DistributedDataParallel ddp{nullptr};
  if (c.distributed) {
    nn::parallel::DistributedDataParallelOptions options;
    if (device.is_cuda()) options.device_ids({int(device.index())});
    ddp = nn::parallel::DistributedDataParallel(model, options);
  }
  auto evaluate_forward = [&](const Tensor& x) {
    std::optional<AutocastGuard> autocast;
    if (amp_dtype) autocast.emplace(device.type(), *amp_dtype);
    return parallel ? parallel(x) : model->forward(x);
  };
  auto forward = [&](const Tensor& x) { return ddp ? ddp(x) : evaluate_forward(x); };
  std::string where = device.str();
  if (parallel) {
    where.clear();
    for (int g : c.gpus) where += (where.empty() ? "" : ",") + Device(kCUDA, g).str();
    where += " (DataParallel)";
  }
  if (c.distributed)
    where = std::to_string(world) + " process" + (world > 1 ? "es" : "") + " (" + distributed::get_backend() +
            ", " + (device.is_cuda() ? "cuda:LOCAL_RANK" : "cpu") + ", DistributedDataParallel)";
  nn::CrossEntropyLoss criterion;
  std::unique_ptr<optim::Optimizer> optimizer;
  if (c.optimizer == "sgd")
    optimizer =
        std::make_unique<optim::SGD>(model->parameters(), optim::SGDOptions(c.lr).momentum(c.momentum));
  else optimizer = std::make_unique<optim::Adam>(model->parameters(), optim::AdamOptions(c.lr));
  // float16 needs the loss scaled; bfloat16 has float32's range.
  amp::GradScaler scaler(65536.0, 2.0, 0.5, 2000, /*enabled=*/amp_dtype == kFloat16);
  if (amp_dtype) where += std::string(", amp ") + (amp_dtype == kFloat16 ? "fp16 (GradScaler)" : "bf16");

  const int last_epoch = first_epoch + c.epochs - 1;
  const std::string batch = c.distributed ? std::to_string(rank_batch * world) + " (" + std::to_string(rank_batch) +
                                                " per process)"
                                          : std::to_string(c.batch_size);
  if (lead)
    std::cout << "wick-train: " << c.model << " on Fashion-MNIST (" << train_set.size() << " train, "
              << test_set.size() << " test images), " << where << ", " << c.epochs << " epoch"
              << (c.epochs > 1 ? "s" : "") << ", batch " << batch << ", " << c.optimizer << " lr " << c.lr
              << ", seed " << c.seed << (c.resume.empty() ? "" : ", resumed from " + c.resume) << std::endl;

  train::Curves curves;
  curves.title = "wick-train: " + c.model + " on Fashion-MNIST, " + where;
  curves.epochs = c.epochs;
  // On a GPU, reading the loss waits for the GPU: read it every few steps only.
  const int64_t read_every = device.is_cuda() ? 10 : 1;
  const int64_t steps = train_loader.size();
  double accuracy = 0;
  for (int epoch = first_epoch; epoch <= last_epoch; ++epoch) {
    const int shown = epoch - first_epoch;  // 0-based position on the plot
    if (sampler) sampler->set_epoch(uint64_t(epoch - 1));
    std::optional<train::Progress> bar;
    if (lead) bar.emplace("epoch " + std::to_string(epoch) + "/" + std::to_string(last_epoch), steps);
    int64_t step = 0;
    double epoch_loss = 0;
    int64_t epoch_reads = 0;
    for (auto& batch : train_loader) {
      Tensor x = batch.data.to(device, /*non_blocking=*/true);
      Tensor y = batch.target.to(device, /*non_blocking=*/true);
      optimizer->zero_grad();
      Tensor loss;
      {
        std::optional<AutocastGuard> autocast;
        if (amp_dtype) autocast.emplace(device.type(), *amp_dtype);
        loss = criterion(forward(x), y);
      }
      scaler.scale(loss).backward();
      scaler.step(*optimizer);  // optimizer->step() unless float16 gradients overflowed
      scaler.update();
      ++step;
      std::optional<double> value;
      if (step % read_every == 0 || step == steps) {
        value = loss.item<double>();
        curves.loss.push_back({shown + double(step) / double(steps), *value});
        epoch_loss += *value;
        ++epoch_reads;
      }
      // Every rank's batch has this size: the sampler gives each as many samples.
      if (bar) bar->step(x.size(0) * world, value);
    }
    double mean_loss = epoch_reads ? epoch_loss / double(epoch_reads) : 0.0;
    if (c.distributed) {
      // The loss reported is the mean over the ranks.
      Tensor t = full({1}, mean_loss, kFloat64).to(device);
      distributed::all_reduce(t, distributed::ReduceOp::AVG);
      mean_loss = t.item<double>();
    }
    if (!lead) continue;
    bar->finish();
    accuracy = evaluate(model, evaluate_forward, test_loader, device);
    curves.epoch_loss.push_back({shown + 1.0, mean_loss});
    curves.accuracy.push_back({shown + 1.0, 100 * accuracy});
    std::printf("epoch %d/%d: train loss %.4f, test accuracy %s, %.0f samples/s, %s\n", epoch, last_epoch,
                mean_loss, percent(accuracy).c_str(), bar->samples_per_second(),
                train::format_duration(bar->seconds()).c_str());
    std::fflush(stdout);
    if (!c.save.empty())
      save(model->state_dict(), c.save,
           {{"format", "pt"}, {"model", c.model}, {"epoch", std::to_string(epoch)}});
  }

  if (c.distributed) distributed::destroy_process_group();
  if (!lead) return 0;
  if (!c.plot.empty()) {
    train::write_svg(curves, c.plot);
    std::cout << "plot: " << c.plot << "\n";
  }
  if (!c.save.empty()) std::cout << "saved: " << c.save << "\n";
  const double total = std::chrono::duration<double>(Clock::now() - start).count();
  std::cout << "test accuracy " << percent(accuracy) << " after " << c.epochs << " epoch"
            << (c.epochs > 1 ? "s" : "") << ", " << train::format_duration(total) << " in all\n";
  if (device.is_cuda()) std::cout << "\n" << cuda::memory_summary(device.index());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Config c;
  CLI::App app{"wick-train: trains a classifier on Fashion-MNIST with wick."};
  app.add_option("--device", c.device, "auto (a GPU when there is one), cpu, cuda or cuda:N")
      ->capture_default_str();
  app.add_flag("--disable-cuda", c.disable_cuda, "run on the CPU even when a GPU is available");
  app.add_flag("--distributed", c.distributed,
               "one process of a distributed run started by wick-launch, mpirun or srun: "
               "DistributedDataParallel over cuda:LOCAL_RANK (nccl), or the CPU (gloo) with --device cpu");
  app.add_option("--gpus", c.gpus_arg, "GPU indices, e.g. 0,1, or all: several run nn::DataParallel");
  app.add_option("--epochs", c.epochs, "passes over the training set")->capture_default_str();
  app.add_option("--batch-size", c.batch_size,
                 "training batch size of a step (split over the GPUs of --gpus or the processes of --distributed)")
      ->capture_default_str();
  app.add_option("--lr", c.lr, "learning rate")->capture_default_str();
  app.add_option("--model", c.model, "mlp (784-128-10) or cnn (two convolutions)")
      ->check(CLI::IsMember({"mlp", "cnn"}))
      ->capture_default_str();
  app.add_option("--optimizer", c.optimizer, "adam, or sgd with --momentum")
      ->check(CLI::IsMember({"adam", "sgd"}))
      ->capture_default_str();
  app.add_option("--momentum", c.momentum, "SGD momentum")->capture_default_str();
  auto* amp = app.add_option("--amp", c.amp,
                             "mixed precision: autocast in bf16 (the default) or fp16 (with a GradScaler)")
                  ->expected(0, 1);
  app.add_option("--seed", c.seed, "seed of the weights and of the shuffling")->capture_default_str();
  app.add_option("--data-dir", c.data_dir, "folder of the Fashion-MNIST IDX files")->capture_default_str();
  app.add_option("--workers", c.workers, "data loader worker threads")->capture_default_str();
  app.add_option("--save", c.save, "write the weights to this .safetensors file after each epoch");
  app.add_option("--resume", c.resume,
                 "start from the weights of this .safetensors file (the optimizer starts afresh)");
  app.add_option("--plot", c.plot, "write loss and accuracy to this SVG file (\"\" for none)")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (amp->count() > 0 && c.amp.empty()) c.amp = "bf16";
  try {
    return run(c);
  } catch (const std::exception& e) {
    std::cerr << "wick-train: " << e.what() << "\n";
    return 1;
  }
}
