// ZeroRedundancyOptimizer: an optimizer whose state is sharded over the ranks of a process group
// (ZeRO stage 1), as torch.distributed.optim.ZeroRedundancyOptimizer. Include it explicitly.
//
//   #include "wick/distributed/zero.h"
//   namespace zero = wick::distributed::optim;
//   DistributedDataParallel ddp(model);
//   zero::ZeroRedundancyOptimizer opt(ddp->parameters(),
//                                     zero::optimizer_class<wick::optim::AdamW>(wick::optim::AdamWOptions(3e-4)));
//   opt.zero_grad();  loss.backward();  opt.step();   // as any optimizer
//   opt.consolidate_state_dict(/*to=*/0);             // on every rank, then on rank 0:
//   if (rank == 0) wick::save_checkpoint(opt.state_dict(), "opt.safetensors");
//
// The parameters are partitioned over the ranks greedily by size (largest first, each to the
// rank holding the fewest elements so far), group by group; each rank's local optimizer (the
// wrapped class) holds the parameters, and so the state, of its own partition only. step()
// updates this rank's partition (the gradients must already be the same on every rank, as
// DistributedDataParallel leaves them) and then broadcasts each partition from its owner, so
// every rank ends the step with the same parameters. param_groups() are all the parameters'
// groups; schedulers change their learning rates, which step() passes to the local optimizer.
// Every parameter must be a dense tensor of one dtype and one device (the group's device:
// the CPU for gloo and mpi, this process's GPU for nccl).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "wick/distributed.h"
#include "wick/optim/optimizer.h"

namespace wick::distributed::optim {

// The optimizer class a ZeroRedundancyOptimizer wraps: its defaults and how to build one over
// groups (PyTorch's optimizer_class and **defaults).
struct OptimizerClass {
  std::unique_ptr<wick::optim::OptimizerOptions> defaults;
  std::function<std::unique_ptr<wick::optim::Optimizer>(std::vector<wick::optim::OptimizerParamGroup>)> make;
};

// The class Opt (SGD, Adam, AdamW, RMSprop, Adagrad, or one of one's own taking (groups,
// options)) with these defaults.
template <class Opt, class Options>
OptimizerClass optimizer_class(const Options& defaults) {
  OptimizerClass c;
  c.defaults = defaults.clone();
  c.make = [defaults](std::vector<wick::optim::OptimizerParamGroup> groups) {
    return std::unique_ptr<wick::optim::Optimizer>(std::make_unique<Opt>(std::move(groups), defaults));
  };
  return c;
}

class ZeroRedundancyOptimizer : public wick::optim::Optimizer {
 public:
  // Over the group (the default group when null). ValueError for no parameters or parameters
  // of several dtypes or devices, DistributedError without a process group, and the wrapped
  // class's errors (bad hyperparameters, non-leaf parameters, ...).
  ZeroRedundancyOptimizer(std::vector<Tensor> params, OptimizerClass optimizer_class,
                          std::shared_ptr<ProcessGroup> group = nullptr);
  ZeroRedundancyOptimizer(std::vector<wick::optim::OptimizerParamGroup> groups, OptimizerClass optimizer_class,
                          std::shared_ptr<ProcessGroup> group = nullptr);

  // The local optimizer's step over this rank's partition, then every partition broadcast from
  // its owner (a collective: every rank calls it).
  void step() override;
  using wick::optim::Optimizer::step;  // step(closure)
  // Appends a group (partitioned as the others, after them) to param_groups and to the local
  // optimizer; the consolidated state is dropped. Call it on every rank with the same group.
  void add_param_group(const wick::optim::OptimizerParamGroup& group) override;

  // Gathers every rank's optimizer state onto rank to (a collective: every rank calls it).
  void consolidate_state_dict(int to = 0);
  // The whole optimizer's state_dict, in the wrapped class's format (loadable by it or by a
  // ZeroRedundancyOptimizer over any number of ranks), on the rank consolidate_state_dict
  // gathered to; Error "[state_dict] ..." elsewhere, or when no consolidation happened since
  // the last step.
  wick::Checkpoint state_dict() const override;
  // A state_dict of the wrapped class over all the parameters (every rank passes the same):
  // the hyperparameters of every group, the state of this rank's partition (checked as the
  // wrapped class checks it; a refused state changes nothing).
  void load_state_dict(const wick::Checkpoint& state) override;

  // The optimizer over this rank's partition, and the partition (its parameters, group by group).
  wick::optim::Optimizer& local_optimizer() { return *local_; }
  const wick::optim::Optimizer& local_optimizer() const { return *local_; }
  // The rank that owns the i-th parameter (counting through the groups in order).
  int owner(size_t i) const { return owner_.at(i); }
  const std::shared_ptr<ProcessGroup>& process_group() const { return group_; }

 private:
  // The owners of the parameters of groups_[g] (appended to owner_).
  void partition_group(size_t g);
  // The local optimizer's groups take param_groups' hyperparameters.
  void sync_local_groups();

  std::shared_ptr<ProcessGroup> group_;
  OptimizerClass class_;
  std::unique_ptr<wick::optim::Optimizer> local_;
  std::vector<int> owner_;          // by parameter index through the groups
  std::vector<int64_t> rank_numel_;  // elements each rank owns so far
  std::optional<wick::Checkpoint> consolidated_;
};

}  // namespace wick::distributed::optim
