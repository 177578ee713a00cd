// What the pieces of wick::distributed share: the base of every backend's Work and group (with
// the checks of the collectives' arguments), how ranks are found, how the ranks of a new group
// exchange their first bytes, and the backends' factories.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "wick/distributed.h"
#include "wick/error.h"

namespace wick::distributed {

// One collective in flight. A backend subclasses it; Work forwards to it.
class Work::Impl {
 public:
  explicit Impl(std::string op) : op_(std::move(op)) {}
  virtual ~Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  // As Work's methods (raise DistributedError naming op() on failure or timeout).
  virtual bool is_completed() = 0;
  virtual void wait() = 0;
  virtual void synchronize() { wait(); }

  const std::string& op() const { return op_; }
  std::vector<Tensor> outputs;

 private:
  std::string op_;
};

namespace detail {

// The base of the backends' groups (gloo, mpi, nccl): the checks of the collectives' arguments, one
// wording for every backend. tensor_device: where the group takes tensors (the CPU for gloo and mpi,
// the group's GPU for nccl). Each raises naming op; what names the argument as PyTorch does
// ("tensor", "tensor_list[1]", "src").
class BackendGroup : public ProcessGroup {
 protected:
  explicit BackendGroup(Device tensor_device) : tensor_device_(tensor_device) {}
  // ValueError when t is undefined or not contiguous, DeviceError when it is not on
  // tensor_device.
  void check_tensor(const Tensor& t, const char* op, const char* what) const;
  // ValueError when r is not a rank of the group, or (not_self) is this process's own.
  void check_rank(int r, const char* op, const char* what, bool not_self = false) const;
  // TypeError for ReduceOp.AVG of a dtype that is not floating-point.
  static void check_reduce_op(ReduceOp rop, Dtype dtype, const char* op);
  // list (all_gather's outputs, reduce_scatter's inputs): one tensor per rank, each as
  // check_tensor wants and of mine's dtype (TypeError), list[rank()] of mine's sizes.
  void check_list(const std::vector<Tensor>& list, const Tensor& mine, const char* op, const char* what) const;

 private:
  Device tensor_device_;
};

// A Work that is already complete, holding outputs.
Work completed_work(const std::string& op, std::vector<Tensor> outputs);

// Where this process stands: from InitOptions, then mpirun, torchrun-style variables or Slurm.
struct RankInfo {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr;          // empty when not known
  int master_port = 0;              // 0 when not known
  bool launched_by_mpirun = false;  // OMPI_COMM_WORLD_* present
  std::string source;               // "options", "mpirun", "torchrun" or "slurm": for messages
};
// Raises ValueError naming init_process_group for missing or inconsistent values.
RankInfo resolve_rank_info(const InitOptions& options);

// Small byte strings between the ranks while a group is set up (NCCL's unique id, the MPI
// port name): over MPI when the processes were started by mpirun, else over the TCP store
// at master_addr:master_port that rank 0 serves. Every call is collective and bounded by the
// timeout (DistributedError naming op when a rank does not come).
class Bootstrap {
 public:
  virtual ~Bootstrap() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // root's bytes, on every rank.
  virtual std::string broadcast(const std::string& bytes, int root, const char* op) = 0;
  // Every rank's bytes, in rank order.
  virtual std::vector<std::string> all_gather(const std::string& bytes, const char* op) = 0;
  virtual void barrier(const char* op) = 0;
};
std::unique_ptr<Bootstrap> make_bootstrap(const RankInfo& info, std::chrono::milliseconds timeout);

// The backends. Each raises NotImplementedError ("[init_process_group] wick was built without
// ...") when wick was built without it.
std::shared_ptr<ProcessGroup> make_mpi_group(const RankInfo& info, const InitOptions& options);
// The group of world's processes listed in ranks (world an mpi group; the new group's rank i is
// world's ranks[i]), or null on a process not in ranks. Collective over world.
std::shared_ptr<ProcessGroup> make_mpi_subgroup(const std::shared_ptr<ProcessGroup>& world,
                                               const std::vector<int>& ranks, const InitOptions& options);
// Ends every process of the job (MPI_Abort with EXIT_FAILURE; std::abort without MPI).
[[noreturn]] void mpi_abort_job();
// Meets the other ranks through the TCP store (or, under mpirun without MASTER_ADDR, over MPI).
std::shared_ptr<ProcessGroup> make_gloo_group(const RankInfo& info, const InitOptions& options);
std::shared_ptr<ProcessGroup> make_nccl_group(const RankInfo& info, const InitOptions& options,
                                              Bootstrap& bootstrap);

}  // namespace detail
}  // namespace wick::distributed
