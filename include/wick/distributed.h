// Many processes, one or many hosts: process groups and their collectives, as torch.distributed.
//
//   // wick-launch --nproc-per-node 2 ./prog   or   mpirun -np 2 ./prog
//   wick::distributed::init_process_group("gloo");                 // "nccl" for CUDA tensors
//   auto t = wick::full({4}, double(wick::distributed::get_rank() + 1), wick::kFloat64);
//   wick::distributed::all_reduce(t);                               // [3., 3., 3., 3.] on both ranks
//   auto work = wick::distributed::all_reduce(t, wick::distributed::ReduceOp::MAX, /*async_op=*/true);
//   work.wait();
//   wick::distributed::destroy_process_group();
//
// Rank, world size and local rank come from the options when given, else from Open MPI's
// mpirun (OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK), else from torchrun-style variables (RANK,
// WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT; wick-launch sets them), else from Slurm
// (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID). The "nccl" backend takes CUDA tensors of one
// GPU per process (cuda:local_rank unless options.device says otherwise); the "gloo" backend
// (Gloo's collectives over TCP, no MPI needed) and the "mpi" backend (Open MPI) take CPU
// tensors. Each implements ProcessGroup; wick implements no collective itself. Backend names
// are not case-sensitive ("GLOO" is "gloo").
//
// Every collective takes contiguous tensors of the same dtype and sizes on every rank (except
// where the function says otherwise). Called with async_op = false it returns once the result
// can be used: on the CPU the values are there; on a GPU the host has waited for the collective
// to finish, and the current stream is ordered after it. With async_op = true it returns at
// once a Work to wait() on; the tensors must not be touched until then. Collectives of one
// group run in the order they were called, on every rank the same order.
//
// Failures are errors, not hangs: a collective that does not finish within the group's timeout
// (options.timeout, 10 minutes by default) raises DistributedError naming the op, and so does
// every later call on the group; a peer that died makes the survivors raise. With the
// environment variable WICK_DISTRIBUTED_DEBUG=1 each collective first checks that every rank
// called the same op with the same sizes and dtype, and its error says which rank differs.
//
// LibTorch's c10d spellings are declared beside these names (c10d:: is wick::distributed::):
// ProcessGroupMPI::createProcessGroupMPI(), pg->getRank(), getSize(), allreduce(tensors, opts)
// returning an intrusive_ptr<Work> to wait() on, pg->abort(), ProcessGroup::Work.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "wick/tensor.h"

namespace wick::distributed {

enum class ReduceOp { SUM, AVG, PRODUCT, MIN, MAX };
// "SUM", "AVG", ...
const char* reduce_op_name(ReduceOp op);

inline constexpr std::chrono::milliseconds kDefaultTimeout = std::chrono::minutes(10);

struct InitOptions {
  // Each of these, when set, wins over the environment.
  std::optional<int> rank;
  std::optional<int> world_size;
  std::optional<int> local_rank;
  // The TCP store (nccl's unique id, gloo's addresses, the mpi backend's connection outside mpirun):
  // MASTER_ADDR and MASTER_PORT when empty / 0.
  std::string master_addr;
  int master_port = 0;
  std::chrono::milliseconds timeout = kDefaultTimeout;
  // nccl: the GPU of this process (default cuda:local_rank).
  std::optional<Device> device;
};

class ProcessGroup;

// LibTorch's c10d::AllreduceOptions: the reduction of ProcessGroup::allreduce.
struct AllreduceOptions {
  ReduceOp reduceOp = ReduceOp::SUM;
};

// A collective in flight. Copyable handle; a default-constructed Work is complete.
class Work {
 public:
  class Impl;
  Work() = default;
  explicit Work(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

  // Whether the collective has finished (on a GPU: on the device). Never blocks. Raises the
  // collective's error, if it failed.
  bool is_completed() const;
  // Blocks until the collective has finished or the group's timeout has passed (then
  // DistributedError naming the op, and the group is unusable). On a GPU the current stream is
  // also ordered after the collective.
  void wait() const;
  // GPU: orders the current stream after the collective without blocking the host (a timeout is
  // then reported by the next call on the group). CPU: wait().
  void synchronize() const;
  // The output tensors of the collective (all_gather's list, the all-reduced tensor, ...).
  std::vector<Tensor> result() const;

  const std::shared_ptr<Impl>& impl() const { return impl_; }

 private:
  std::shared_ptr<Impl> impl_;
};

// One backend's communicator among world_size ranks. Obtained from init_process_group
// (default_group()); methods are the collectives below, on this group.
class ProcessGroup {
 public:
  // LibTorch's spelling c10d::ProcessGroup::Work.
  using Work = ::wick::distributed::Work;

  virtual ~ProcessGroup() = default;
  virtual std::string backend() const = 0;  // "gloo", "mpi" or "nccl"
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // LibTorch's spellings of rank() and size().
  int getRank() const { return rank(); }
  int getSize() const { return size(); }
  virtual std::chrono::milliseconds timeout() const = 0;

  virtual Work all_reduce(Tensor& tensor, ReduceOp op) = 0;
  // LibTorch's spelling: all_reduce(tensors[0], opts.reduceOp) started and returned as a handle
  // to wait() on (c10::intrusive_ptr<c10d::Work>). tensors holds one tensor (ValueError
  // "[allreduce] ..." otherwise, as LibTorch's MPI group).
  std::shared_ptr<Work> allreduce(std::vector<Tensor>& tensors, const AllreduceOptions& opts = {});
  virtual Work broadcast(Tensor& tensor, int src) = 0;
  virtual Work reduce(Tensor& tensor, int dst, ReduceOp op) = 0;
  // outputs[r] gets rank r's input; their sizes may differ from rank to rank (each must have the
  // sizes of that rank's input).
  virtual Work all_gather(std::vector<Tensor>& outputs, const Tensor& input) = 0;
  // output gets the reduction over ranks of inputs[rank]; inputs[r] must have rank r's output
  // sizes (which may differ from rank to rank).
  virtual Work reduce_scatter(Tensor& output, const std::vector<Tensor>& inputs, ReduceOp op) = 0;
  virtual Work barrier() = 0;
  virtual Work send(const Tensor& tensor, int dst, int tag) = 0;
  virtual Work recv(Tensor& tensor, int src, int tag) = 0;

  // all_reduce for a collective that runs while the caller's stream is busy with compute
  // (DistributedDataParallel's buckets, during the backward pass). The nccl group runs it on a
  // second communicator that takes at most WICK_DDP_OVERLAP_CTAS thread blocks (8; 0 keeps the
  // group's own communicator), which leaves more of the device to the compute; by default it is
  // all_reduce. Every rank must make the same calls in the same order, as for any collective.
  virtual Work all_reduce_beside_compute(Tensor& tensor, ReduceOp op) { return all_reduce(tensor, op); }
  // Sets up now what all_reduce_beside_compute needs (the nccl group's second communicator: a
  // collective call, on every rank) rather than on its first call. By default nothing.
  virtual void prepare_beside_compute() {}
};

// LibTorch's c10d::ProcessGroupMPI: a group of the mpi backend over every process of the job,
// apart from the default group; its collectives are that group's.
class ProcessGroupMPI final : public ProcessGroup {
 public:
  // c10d::ProcessGroupMPI::createProcessGroupMPI(ranks): a new mpi group over all of mpirun's
  // processes (a single process: a group of one), or over those of ranks, the group's rank i
  // being the job's ranks[i]; a process not in ranks gets a null pointer, as LibTorch's.
  // Collective: every process of the job calls it with the same ranks. ValueError for a rank out
  // of range or repeated; else raises as init_process_group("mpi") does.
  static std::shared_ptr<ProcessGroupMPI> createProcessGroupMPI(std::vector<int> ranks = {});
  explicit ProcessGroupMPI(std::shared_ptr<ProcessGroup> group) : group_(std::move(group)) {}
  // Ends the whole job at once (MPI_Abort with exit code 1 on every process), as LibTorch's.
  [[noreturn]] void abort();

  std::string backend() const override { return group_->backend(); }
  int rank() const override { return group_->rank(); }
  int size() const override { return group_->size(); }
  std::chrono::milliseconds timeout() const override { return group_->timeout(); }
  Work all_reduce(Tensor& tensor, ReduceOp op) override { return group_->all_reduce(tensor, op); }
  Work broadcast(Tensor& tensor, int src) override { return group_->broadcast(tensor, src); }
  Work reduce(Tensor& tensor, int dst, ReduceOp op) override { return group_->reduce(tensor, dst, op); }
  Work all_gather(std::vector<Tensor>& outputs, const Tensor& input) override {
    return group_->all_gather(outputs, input);
  }
  Work reduce_scatter(Tensor& output, const std::vector<Tensor>& inputs, ReduceOp op) override {
    return group_->reduce_scatter(output, inputs, op);
  }
  Work barrier() override { return group_->barrier(); }
  Work send(const Tensor& tensor, int dst, int tag) override { return group_->send(tensor, dst, tag); }
  Work recv(Tensor& tensor, int src, int tag) override { return group_->recv(tensor, src, tag); }

 private:
  std::shared_ptr<ProcessGroup> group_;
};

// backend: "gloo", "mpi" or "nccl" (any case). Raises ValueError for an unknown backend or rank,
// NotImplementedError for a backend this build lacks, DistributedError when the ranks cannot
// meet within the timeout, and Error when a group is already set up.
void init_process_group(const std::string& backend, const InitOptions& options = {});
// Whether this build has the gloo, mpi and nccl backends.
bool is_gloo_available();
bool is_mpi_available();
bool is_nccl_available();
bool is_initialized();
// The group made by init_process_group (DistributedError when there is none).
std::shared_ptr<ProcessGroup> default_group();
std::string get_backend();
int get_rank();
int get_world_size();
// This process's index among those of its host.
int get_local_rank();
// Ends the default group; init_process_group may be called again afterwards.
void destroy_process_group();

// ---- collectives on the default group, or on group when given
Work all_reduce(Tensor& tensor, ReduceOp op = ReduceOp::SUM, bool async_op = false,
                const std::shared_ptr<ProcessGroup>& group = nullptr);
Work broadcast(Tensor& tensor, int src, bool async_op = false,
               const std::shared_ptr<ProcessGroup>& group = nullptr);
Work reduce(Tensor& tensor, int dst, ReduceOp op = ReduceOp::SUM, bool async_op = false,
            const std::shared_ptr<ProcessGroup>& group = nullptr);
// tensor_list: one tensor per rank (sizes as that rank's tensor).
Work all_gather(std::vector<Tensor>& tensor_list, const Tensor& tensor, bool async_op = false,
                const std::shared_ptr<ProcessGroup>& group = nullptr);
// input_list: one tensor per rank (rank r's has rank r's output sizes).
Work reduce_scatter(Tensor& output, const std::vector<Tensor>& input_list, ReduceOp op = ReduceOp::SUM,
                    bool async_op = false, const std::shared_ptr<ProcessGroup>& group = nullptr);
Work barrier(bool async_op = false, const std::shared_ptr<ProcessGroup>& group = nullptr);
void send(const Tensor& tensor, int dst, int tag = 0, const std::shared_ptr<ProcessGroup>& group = nullptr);
void recv(Tensor& tensor, int src, int tag = 0, const std::shared_ptr<ProcessGroup>& group = nullptr);
Work isend(const Tensor& tensor, int dst, int tag = 0, const std::shared_ptr<ProcessGroup>& group = nullptr);
Work irecv(Tensor& tensor, int src, int tag = 0, const std::shared_ptr<ProcessGroup>& group = nullptr);

}  // namespace wick::distributed

namespace wick {
// LibTorch's c10::intrusive_ptr and c10::make_intrusive, as the c10d spellings use them
// (ProcessGroupMPI::createProcessGroupMPI(), ProcessGroup::allreduce): a std::shared_ptr.
template <class T>
using intrusive_ptr = std::shared_ptr<T>;
template <class T, class... Args>
std::shared_ptr<T> make_intrusive(Args&&... args) {
  return std::make_shared<T>(std::forward<Args>(args)...);
}
}  // namespace wick
