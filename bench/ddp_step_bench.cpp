// The large-MLP training step of bench/train_step_bench.cpp through DistributedDataParallel,
// one process per GPU, global batch 4096 split over the processes:
//
//   wick-launch --nproc-per-node 2 wick_ddp_step      (or mpirun -np 2 wick_ddp_step)
//
// MLP 4096-4096-4096-4096-1000, cross-entropy, SGD lr 0.01 momentum 0.9, fp32, over the nccl
// backend. The clock is bench/compare's: groups of 5 steps, each timed up to the end of this
// GPU's work, one warm-up group, the median of 7. Rank 0 prints
// "ddp_step_mlp_large_<N>gpu_ms value ms" for bench/compare/table.py. PyTorch's DDP on the same
// step: bench/compare/torch_ddp_bench.py under torchrun.
//
// With WICK_TIMELINE=1 one more step is run with the nccl group's collectives timed on the GPU,
// and rank 0 prints to stderr when each bucket's all-reduce was queued by the backward
// ("all_reduce.ready": where the compute stream was), started and ended, against the
// backward's own start and return on the compute stream: buckets that start before
// "backward.returned" overlap it.
#include <wick/wick.h>

#include <cstdio>
#include <string>
#include <vector>

#include "compare/harness.h"
#include "core/timeline.h"  // the step's timeline (internal)

namespace dist = wick::distributed;

int main(int argc, char** argv) {
  dist::init_process_group("nccl");
  const int world = dist::get_world_size(), rank = dist::get_rank();
  const wick::Device dev(wick::kCUDA, dist::get_local_rank());
  wick::cuda::set_device(dev.index());
  const std::string name = "ddp_step_mlp_large_" + std::to_string(world) + "gpu_ms";
  if (!compare::selected(argc, argv, name.c_str())) {
    dist::destroy_process_group();
    return 0;
  }
  const std::vector<int64_t> widths{4096, 4096, 4096, 4096, 1000};
  const int64_t batch = 4096 / world;

  wick::manual_seed(0);
  wick::nn::Sequential net;
  for (size_t i = 0; i + 1 < widths.size(); ++i) {
    net->push_back(wick::nn::Linear(widths[i], widths[i + 1]));
    if (i + 2 < widths.size()) net->push_back(wick::nn::ReLU());
  }
  net->to(dev);
  wick::nn::parallel::DistributedDataParallel ddp(net);
  wick::optim::SGD opt(net->parameters(), wick::optim::SGDOptions(0.01).momentum(0.9));
  wick::manual_seed(1 + uint64_t(rank));  // each rank its own data
  std::vector<wick::Tensor> xs, ys;
  for (int i = 0; i < 4; ++i) {
    xs.push_back(wick::randn({batch, widths.front()}, wick::TensorOptions().device(dev)));
    ys.push_back(wick::randint(widths.back(), {batch}, wick::TensorOptions(wick::kInt64).device(dev)));
  }
  auto& timeline = wick::detail::process_timeline();
  int k = 0;
  auto step = [&](bool marks) {
    opt.zero_grad();
    auto loss = wick::nn::functional::cross_entropy(ddp(xs[k % 4]), ys[k % 4]);
    if (marks) timeline.mark("backward.begin", dev.index());
    loss.backward();
    if (marks) timeline.mark("backward.returned", dev.index());
    opt.step();
    ++k;
  };
  auto sync = [&] { wick::cuda::synchronize(dev.index()); };
  sync();
  const double ms = compare::wall_ms(
      [&] {
        for (int i = 0; i < 5; ++i) step(false);
      },
      7, sync);
  if (rank == 0) compare::report(name.c_str(), ms / 5, "ms");

  if (timeline.enabled()) {
    sync();
    dist::barrier();
    timeline.begin({dev.index()});
    step(true);
    sync();
    auto marks = timeline.take();
    if (rank == 0) {
      std::fprintf(stderr, "\n== DDP timeline, %d GPU(s), rank 0, ms from the step's start (GPU clock)\n", world);
      std::fprintf(stderr, "%-24s %9s %9s\n", "mark", "host", "device");
      for (const auto& m : marks)
        std::fprintf(stderr, "%-24s %9.3f %9.3f\n", m.phase.c_str(), m.host_ms, m.gpu_ms);
    }
  }
  dist::destroy_process_group();
  return 0;
}
