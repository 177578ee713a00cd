// DistributedDataParallel: one replica of a module per process, gradients averaged over the
// processes of a group during the backward pass, as torch.nn.parallel.DistributedDataParallel.
//
//   wick::distributed::init_process_group("mpi");            // mpirun -np 2 ./train
//   Net net;                                                 // CPU module ("nccl": net->to(cuda:local_rank))
//   wick::nn::parallel::DistributedDataParallel ddp(net);    // rank 0's parameters and buffers everywhere
//   wick::optim::SGD opt(ddp->parameters(), 0.1);
//   auto loss = loss_fn(ddp(x_shard), y_shard);              // each rank its own shard of the batch
//   loss.backward();                                         // grads: the mean over ranks
//   opt.step();                                              // identical steps on every rank
//   {
//     auto guard = ddp->no_sync();                           // local accumulation only
//     loss_fn(ddp(x1), y1).backward();
//   }
//
// The parameters that require grad are grouped, in reverse registration order (about the order
// their gradients appear in the backward pass), into buckets of one dtype: the first bucket of a
// dtype holds at least 1 MiB, later ones at least bucket_cap_mb (a bucket closes at the tensor
// that reaches its cap). Each bucket is one flat tensor on the parameters' device and each
// parameter's grad() is a view into it. A post-accumulate-grad hook on each parameter copies
// its new gradient into its view (when grad() is not already that view) and marks it ready;
// once a bucket's last parameter is ready, the complete buckets are all-reduced (ReduceOp::AVG,
// asynchronously) in bucket order, so that communication overlaps the rest of the backward.
// At the end of the backward pass the remaining buckets are launched and every bucket's
// collective is waited for (on a GPU the current stream is ordered after it; the host does not
// wait).
//
// find_unused_parameters: a parameter that got no gradient counts zero (or its grad() as it
// was) towards the average; an all-reduced map of which parameters each rank used decides the
// result: a parameter no rank used keeps its grad() untouched (undefined when it was), one used
// elsewhere gets the average (the host waits for that map). Without it a parameter that got no
// gradient is a ValueError at the end of the backward pass naming it; the next forward starts
// afresh.
//
// The module's parameters and buffers must all be on one device: the CPU for the "mpi"
// backend, this process's GPU for "nccl" (device_ids, when given, must name it). Only
// ProcessGroup and Work are used, so any backend works. The wrapped module is the child
// "module" (state_dict keys "module.fc.weight"). Supported forward signatures: as DataParallel
// (Tensor forward(const Tensor&)).
//
// Differences from PyTorch: buckets are never rebuilt from the observed gradient order;
// gradients are always views into the buckets (gradient_as_bucket_view = true); unused
// parameters are found at the end of the backward pass rather than by walking the graph after
// forward (so a bucket holding an unused parameter is launched at the end); no communication
// hooks, static_graph, join or sparse gradients; buffers are broadcast before every forward.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "wick/distributed.h"
#include "wick/nn/module.h"
#include "wick/nn/options.h"

namespace wick::nn::parallel {

struct DistributedDataParallelOptions {
  // Empty, or the one CUDA index the module is on.
  WICK_ARG(std::vector<int>, device_ids) = {};
  // Buffers are broadcast from rank 0 before each forward.
  WICK_ARG(bool, broadcast_buffers) = true;
  // Size of the buckets after the first (MiB).
  WICK_ARG(double, bucket_cap_mb) = 25;
  WICK_ARG(bool, find_unused_parameters) = false;
  // The group whose ranks average the gradients (null: distributed::default_group()).
  WICK_ARG(std::shared_ptr<distributed::ProcessGroup>, process_group) = nullptr;
};

class DistributedDataParallelImpl : public Module {
 public:
  // module: a holder (FooNet, nn::Sequential, ...) or a std::shared_ptr to a module class with a
  // forward as above.
  template <class H, class = decltype(std::declval<H>().ptr())>
  explicit DistributedDataParallelImpl(const H& module, DistributedDataParallelOptions options = {})
      : DistributedDataParallelImpl(module.ptr(), forward_of<typename H::ContainedType>(),
                                    std::move(options)) {}
  template <class M>
  explicit DistributedDataParallelImpl(const std::shared_ptr<M>& module,
                                       DistributedDataParallelOptions options = {})
      : DistributedDataParallelImpl(std::shared_ptr<Module>(module), forward_of<M>(), std::move(options)) {}
  ~DistributedDataParallelImpl() override;

  // The module's forward; with grad mode on (and outside no_sync) it also readies the
  // gradient reduction of the next backward pass.
  Tensor forward(const Tensor& input);

  // Within the guard's scope, backward passes only accumulate into grad() (no communication);
  // the next synchronized backward pass averages what was accumulated.
  class NoSyncGuard {
   public:
    explicit NoSyncGuard(DistributedDataParallelImpl& ddp);
    ~NoSyncGuard();
    NoSyncGuard(const NoSyncGuard&) = delete;
    NoSyncGuard& operator=(const NoSyncGuard&) = delete;

   private:
    DistributedDataParallelImpl& ddp_;
    bool previous_;
  };
  [[nodiscard]] NoSyncGuard no_sync() { return NoSyncGuard(*this); }

  // The wrapped module (the child "module").
  const std::shared_ptr<Module>& module() const;
  const DistributedDataParallelOptions& options() const;
  const std::shared_ptr<distributed::ProcessGroup>& process_group() const;
  // The buckets, in launch order: each the names of its parameters ("fc2.bias", ...).
  std::vector<std::vector<std::string>> bucket_parameter_names() const;

  // With the environment variable WICK_TIMELINE=1 when it was made: host times of the last
  // iteration, in ms after its forward began: "forward.begin", "bucket[i].launch",
  // "backward.end" (after every bucket's collective was waited for or ordered). Else empty.
  struct TimelineMark {
    std::string phase;
    double host_ms = 0;
  };
  std::vector<TimelineMark> timeline() const;

  struct Reducer;

 private:
  using Forward = std::function<Tensor(Module&, const Tensor&)>;
  template <class M>
  static Forward forward_of() {
    return [](Module& m, const Tensor& x) -> Tensor { return static_cast<M&>(m).forward(x); };
  }
  DistributedDataParallelImpl(std::shared_ptr<Module> module, Forward forward,
                              DistributedDataParallelOptions options);

  std::shared_ptr<Module> module_;
  Forward forward_;
  DistributedDataParallelOptions options_;
  std::shared_ptr<Reducer> reducer_;
};
WICK_MODULE(DistributedDataParallel);

}  // namespace wick::nn::parallel
