// The two training-step workloads (docs/design.md, "Performance targets"), one program for
// both libraries: built
// against wick, or against LibTorch with -DTRAIN_STEP_TORCH (bench/compare builds both and
// prints them in its table). A step is zero_grad, forward, cross-entropy, backward and an
// optimizer step; the figure is the wall time per step of a group of steps ended by a device
// synchronize, the median of several groups after a warm-up, on fresh random batches.
//   train_step_mlp_small_us: MLP 784-128-10, batch 64, SGD with momentum
//   train_step_mlp_small_kernels (wick only): the kernels of one small step (the captured graph's
//     kernel nodes)
//   train_step_mlp_small_graph_us (wick only): the small step captured once as a CUDA graph,
//     then per step the batch copied into the captured inputs and one replay
//   train_step_mlp_large_ms: MLP 4096-4096-4096-4096-1000, batch 4096, SGD with momentum, fp32
//   train_step_mlp_large_dp{1,2,4}_ms: the same step through data parallelism over 1, 2 and 4 GPUs
//     (wick: nn::DataParallel; LibTorch: torch::nn::parallel::data_parallel; PyTorch's Python
//     nn.DataParallel: bench/compare/torch_dp_bench.py). The batch of 4096 is split over them.
//   train_step_mlp_large_tf32_ms: the same fp32 step with set_float32_matmul_precision("high")
//   train_step_mlp_large_amp_bf16_ms: the large step with forward and loss under bfloat16 autocast
//     (wick::AutocastGuard; LibTorch: at::autocast's thread state, its cache cleared at the
//     region's end, as torch.autocast does)
//   train_step_mlp_large_amp_fp16_ms: the same under float16 autocast with loss scaling (wick:
//     amp::GradScaler; LibTorch has no C++ GradScaler: its steps done by hand with the ops
//     PyTorch's GradScaler calls, _amp_foreach_non_finite_check_and_unscale_ and
//     _amp_update_scale_, the step skipped when the flag is set)
// With WICK_TIMELINE=1 (wick only), each data-parallel row then runs 3 more steps, each
// begun with the devices idle, and prints to stderr where each step's time went: per phase
// (DataParallel's own marks and the step's: forward, loss, backward, optimizer) and device,
// when the host queued it and when the device reached it, in ms from the step's start. The
// timed groups above record nothing.
#ifdef TRAIN_STEP_TORCH
#include <ATen/autocast_mode.h>
#include <torch/cuda.h>
#include <torch/nn/parallel/data_parallel.h>
#include <torch/torch.h>
namespace lib = torch;
#else
#include <cuda_runtime.h>

#include <wick/wick.h>

#include "core/timeline.h"  // the step's timeline (internal)
namespace lib = wick;
#endif

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
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

// Waits for the first n GPUs (a data-parallel step runs on all of them).
void sync(int n = 1) {
  for (int i = 0; i < n; ++i) lib::cuda::synchronize(i);
}

int gpu_count() { return int(lib::cuda::device_count()); }

lib::Tensor labels(int64_t classes, int64_t batch) {
#ifdef TRAIN_STEP_TORCH
  return torch::randint(classes, {batch}, torch::TensorOptions().dtype(torch::kInt64).device(gpu()));
#else
  return wick::randint(classes, {batch}, wick::TensorOptions(wick::kInt64).device(gpu()));
#endif
}

#ifndef TRAIN_STEP_TORCH
// Runs 3 steps with the timeline on and prints, per step, every mark (device, phase, host ms
// when queued, device ms when reached) in the order the device reached them, then each
// phase that has a .begin and an .end as one interval per device.
template <class F>
void print_timeline(int gpus, F&& one_step) {
  for (int s = 0; s < 3; ++s) {
    one_step();
    auto marks = wick::detail::process_timeline().take();
    std::stable_sort(marks.begin(), marks.end(), [](const auto& a, const auto& b) {
      return a.device != b.device ? a.device < b.device : a.gpu_ms < b.gpu_ms;
    });
    std::fprintf(stderr, "\n== DataParallel timeline, %d GPU(s), step %d (ms from the step's start)\n", gpus,
                 s);
    std::fprintf(stderr, "%-4s %-34s %9s %9s\n", "dev", "mark", "host", "device");
    for (const auto& m : marks)
      std::fprintf(stderr, "%-4d %-34s %9.3f %9.3f\n", m.device, m.phase.c_str(), m.host_ms, m.gpu_ms);
    std::fprintf(stderr, "-- intervals (device times): dev phase start end duration\n");
    std::map<std::pair<int, std::string>, double> begins;
    for (const auto& m : marks) {
      const auto dot = m.phase.rfind('.');
      if (dot == std::string::npos) continue;
      const std::string base = m.phase.substr(0, dot), tail = m.phase.substr(dot + 1);
      if (tail == "begin") begins[{m.device, base}] = m.gpu_ms;
      if (tail != "end") continue;
      auto it = begins.find({m.device, base});
      if (it == begins.end()) continue;
      std::fprintf(stderr, "%-4d %-34s %9.3f %9.3f %9.3f\n", m.device, base.c_str(), it->second, m.gpu_ms,
                   m.gpu_ms - it->second);
      begins.erase(it);
    }
  }
}
#endif

enum class Amp { Off, Bf16, Fp16 };

#ifdef TRAIN_STEP_TORCH
// torch.autocast's region in C++: the thread's CUDA autocast state, its nesting, and the cache
// of casted weights cleared when the outermost region ends.
struct TorchAutocast {
  explicit TorchAutocast(at::ScalarType dtype) {
    at::autocast::set_autocast_enabled(at::kCUDA, true);
    at::autocast::set_autocast_dtype(at::kCUDA, dtype);
    at::autocast::increment_nesting();
  }
  ~TorchAutocast() {
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    at::autocast::set_autocast_enabled(at::kCUDA, false);
  }
};
#endif

// The MLP of the given widths (ReLU between the Linears) on the GPU, from seed 0.
lib::nn::Sequential mlp(const std::vector<int64_t>& widths) {
  lib::manual_seed(0);
  lib::nn::Sequential net;
  for (size_t i = 0; i + 1 < widths.size(); ++i) {
    net->push_back(lib::nn::Linear(widths[i], widths[i + 1]));
    if (i + 2 < widths.size()) net->push_back(lib::nn::ReLU());
  }
  net->to(gpu());
  return net;
}

// A few batches made up front and cycled through: fresh values, no generation in the clock.
void make_batches(const std::vector<int64_t>& widths, int64_t batch, std::vector<lib::Tensor>& xs,
                  std::vector<lib::Tensor>& ys) {
  for (int i = 0; i < 4; ++i) {
    xs.push_back(lib::randn({batch, widths.front()}, lib::TensorOptions().device(gpu())));
    ys.push_back(labels(widths.back(), batch));
  }
}

// Host microseconds per training step of an MLP of the given widths; gpus > 0: through data
// parallelism over cuda:0 .. cuda:gpus-1; amp: forward and loss under autocast.
double step_us(const std::vector<int64_t>& widths, int64_t batch, int steps_per_group, int groups,
               int gpus = 0, Amp amp = Amp::Off) {
  lib::nn::Sequential net = mlp(widths);
  lib::optim::SGD opt(net->parameters(), lib::optim::SGDOptions(0.01).momentum(0.9));
  std::vector<lib::Tensor> xs, ys;
  make_batches(widths, batch, xs, ys);
#ifdef TRAIN_STEP_TORCH
  std::vector<torch::Device> devices;
  for (int i = 0; i < gpus; ++i) devices.emplace_back(torch::kCUDA, int8_t(i));
  auto forward = [&](const lib::Tensor& x) {
    return gpus ? torch::nn::parallel::data_parallel(net, x, devices) : net->forward(x);
  };
#else
  std::vector<int> devices;
  for (int i = 0; i < gpus; ++i) devices.push_back(i);
  wick::nn::DataParallel dp{nullptr};
  if (gpus) dp = wick::nn::DataParallel(net, devices);
  auto forward = [&](const lib::Tensor& x) { return gpus ? dp(x) : net->forward(x); };
#endif
  auto sync_all = [&] { sync(gpus > 1 ? gpus : 1); };
#ifndef TRAIN_STEP_TORCH
  const bool timeline = gpus > 0 && wick::detail::process_timeline().enabled();
  auto mark = [&](const char* phase, bool all = false) {
    if (!timeline) return;
    for (int d = 0; d < (all ? gpus : 1); ++d) wick::detail::process_timeline().mark(phase, d);
  };
#else
  auto mark = [](const char*, bool = false) {};
#endif
#ifdef TRAIN_STEP_TORCH
  const at::ScalarType amp_dtype = amp == Amp::Fp16 ? at::kHalf : at::kBFloat16;
  // The scaler's state, as PyTorch's GradScaler keeps it (on the device).
  torch::Tensor scale =
      torch::scalar_tensor(65536.0, torch::TensorOptions().dtype(torch::kFloat32).device(gpu()));
  torch::Tensor growth = torch::scalar_tensor(0, torch::TensorOptions().dtype(torch::kInt32).device(gpu()));
  auto scaled_backward_and_step = [&](const torch::Tensor& loss) {
    (loss * scale).backward();
    std::vector<torch::Tensor> grads;
    for (auto& p : net->parameters())
      if (p.grad().defined()) grads.push_back(p.grad());
    torch::Tensor found = torch::scalar_tensor(0.0, scale.options());
    torch::Tensor inv = scale.to(torch::kFloat64).reciprocal().to(torch::kFloat32);
    at::_amp_foreach_non_finite_check_and_unscale_(grads, found, inv);
    if (found.item<float>() == 0) opt.step();
    at::_amp_update_scale_(scale, growth, found, 2.0, 0.5, 2000);
  };
#else
  const wick::Dtype amp_dtype = amp == Amp::Fp16 ? wick::kFloat16 : wick::kBFloat16;
  wick::amp::GradScaler scaler;
#endif
  int k = 0;
  auto step = [&] {
    opt.zero_grad();
    mark("zero_grad.end");
    lib::Tensor loss;
    {
#ifdef TRAIN_STEP_TORCH
      std::optional<TorchAutocast> autocast;
      if (amp != Amp::Off) autocast.emplace(amp_dtype);
#else
      std::optional<wick::AutocastGuard> autocast;
      if (amp != Amp::Off) autocast.emplace(wick::kCUDA, amp_dtype);
#endif
      auto out = forward(xs[k % 4]);
      mark("forward.end");
      loss = lib::nn::functional::cross_entropy(out, ys[k % 4]);
      mark("loss.end");
    }
    if (amp == Amp::Fp16) {
#ifdef TRAIN_STEP_TORCH
      scaled_backward_and_step(loss);
#else
      scaler.scale(loss).backward();
      scaler.step(opt);
      scaler.update();
#endif
    } else {
      loss.backward();
      mark("backward.end", true);
      opt.step();
    }
    mark("optimizer.end");
    ++k;
  };
  sync_all();
  // Wall time of a group of steps up to the devices' end, per step.
  const double ms = compare::wall_ms(
      [&] {
        for (int i = 0; i < steps_per_group; ++i) step();
      },
      groups, sync_all);
#ifndef TRAIN_STEP_TORCH
  if (timeline)
    print_timeline(gpus, [&] {
      sync_all();
      std::vector<int> all;
      for (int d = 0; d < gpus; ++d) all.push_back(d);
      wick::detail::process_timeline().begin(all);
      step();
      sync_all();
    });
#endif
  return ms * 1000 / steps_per_group;
}

#ifndef TRAIN_STEP_TORCH
// The same step captured once as a CUDA graph (docs/cuda_graphs.md) and replayed: per step,
// the batch copied into the captured input tensors, then one replay.
double graph_step_us(const std::vector<int64_t>& widths, int64_t batch, int steps_per_group, int groups,
                     int* kernels = nullptr) {
  wick::nn::Sequential net = mlp(widths);
  wick::optim::SGD opt(net->parameters(), wick::optim::SGDOptions(0.01).momentum(0.9));
  std::vector<wick::Tensor> xs, ys;
  make_batches(widths, batch, xs, ys);
  wick::Tensor static_x = xs[0].clone(), static_y = ys[0].clone();
  auto step = [&] {
    opt.zero_grad();
    auto loss = wick::nn::functional::cross_entropy(net->forward(static_x), static_y);
    loss.backward();
    opt.step();
  };
  const wick::cuda::Stream side = wick::cuda::Stream::create();
  side.wait_stream(wick::cuda::current_stream());
  {
    wick::cuda::StreamGuard guard(side);
    for (int i = 0; i < 3; ++i) step();  // warm-up: the optimizer's state is made here
  }
  wick::cuda::current_stream().wait_stream(side);
  wick::cuda::Graph graph;
  {
    wick::cuda::GraphCapture capture(graph);
    step();
  }
  if (kernels) {  // the step's kernels: the captured graph's kernel nodes
    auto g = static_cast<cudaGraph_t>(graph.raw_cuda_graph());
    size_t n = 0;
    cudaGraphGetNodes(g, nullptr, &n);
    std::vector<cudaGraphNode_t> nodes(n);
    cudaGraphGetNodes(g, nodes.data(), &n);
    *kernels = 0;
    for (cudaGraphNode_t node : nodes) {
      cudaGraphNodeType type{};
      cudaGraphNodeGetType(node, &type);
      *kernels += type == cudaGraphNodeTypeKernel;
    }
  }
  int k = 0;
  sync();
  const double ms = compare::wall_ms(
      [&] {
        for (int i = 0; i < steps_per_group; ++i, ++k) {
          static_x.copy_(xs[k % 4]);
          static_y.copy_(ys[k % 4]);
          graph.replay();
        }
      },
      groups, [] { sync(); });
  return ms * 1000 / steps_per_group;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  auto sel = [&](const char* name) { return compare::selected(argc, argv, name); };
  if (sel("train_step_mlp_small"))
    compare::report("train_step_mlp_small_us", step_us({784, 128, 10}, 64, 50, 11), "us");
#ifndef TRAIN_STEP_TORCH
  if (sel("train_step_mlp_small_graph")) {
    int kernels = 0;
    compare::report("train_step_mlp_small_graph_us", graph_step_us({784, 128, 10}, 64, 50, 11, &kernels),
                    "us");
    compare::report("train_step_mlp_small_kernels", kernels, "kernels");
  }
#endif
  if (sel("train_step_mlp_large"))
    compare::report("train_step_mlp_large_ms", step_us({4096, 4096, 4096, 4096, 1000}, 4096, 5, 7) / 1000,
                    "ms");
  if (sel("train_step_mlp_large_tf32")) {
    // The fp32 step with float32 matmuls on TF32 tensor cores (PyTorch's
    // set_float32_matmul_precision("high")), the precision restored afterwards.
#ifdef TRAIN_STEP_TORCH
    at::globalContext().setFloat32MatmulPrecision("high");
#else
    lib::set_float32_matmul_precision("high");
#endif
    compare::report("train_step_mlp_large_tf32_ms",
                    step_us({4096, 4096, 4096, 4096, 1000}, 4096, 5, 7) / 1000, "ms");
#ifdef TRAIN_STEP_TORCH
    at::globalContext().setFloat32MatmulPrecision("highest");
#else
    lib::set_float32_matmul_precision("highest");
#endif
  }
  if (sel("train_step_mlp_large_amp_bf16"))
    compare::report("train_step_mlp_large_amp_bf16_ms",
                    step_us({4096, 4096, 4096, 4096, 1000}, 4096, 5, 7, 0, Amp::Bf16) / 1000, "ms");
  if (sel("train_step_mlp_large_amp_fp16"))
    compare::report("train_step_mlp_large_amp_fp16_ms",
                    step_us({4096, 4096, 4096, 4096, 1000}, 4096, 5, 7, 0, Amp::Fp16) / 1000, "ms");
  for (int g : {1, 2, 4}) {
    const std::string name = "train_step_mlp_large_dp" + std::to_string(g) + "_ms";
    if (sel(name.c_str()) && gpu_count() >= g)
      compare::report(name.c_str(), step_us({4096, 4096, 4096, 4096, 1000}, 4096, 5, 7, g) / 1000, "ms");
  }
  return 0;
}
