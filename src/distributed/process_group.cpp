// The default process group, the free functions of wick/distributed.h, Work, and the checks
// every backend makes of a collective's arguments.
#include <cctype>
#include <csignal>
#include <cstdlib>
#include <mutex>

#include "distributed/checked_group.h"
#include "distributed/internal.h"

namespace wick::distributed {

using ::wick::detail::raise;

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM:
      return "SUM";
    case ReduceOp::AVG:
      return "AVG";
    case ReduceOp::PRODUCT:
      return "PRODUCT";
    case ReduceOp::MIN:
      return "MIN";
    case ReduceOp::MAX:
      return "MAX";
  }
  return "?";
}

// ---- Work

bool Work::is_completed() const { return impl_ ? impl_->is_completed() : true; }
void Work::wait() const {
  if (impl_) impl_->wait();
}
void Work::synchronize() const {
  if (impl_) impl_->synchronize();
}
std::vector<Tensor> Work::result() const { return impl_ ? impl_->outputs : std::vector<Tensor>{}; }

namespace detail {
namespace {

class CompletedWork final : public Work::Impl {
 public:
  using Impl::Impl;
  bool is_completed() override { return true; }
  void wait() override {}
};

}  // namespace

void BackendGroup::check_tensor(const Tensor& t, const char* op, const char* what) const {
  WICK_CHECK(t.defined(), ValueError, op, what, " is undefined");
  if (t.device() != tensor_device_) [[unlikely]] {
    if (tensor_device_.is_cpu())
      raise<DeviceError>(op, "the ", backend(), " backend takes CPU tensors, but ", what, " is on ", t.device(),
                         " (use the nccl backend for CUDA tensors)");
    raise<DeviceError>(op, "the ", backend(), " backend takes CUDA tensors of this process group's device ",
                       tensor_device_, ", but ", what, " is on ", t.device(),
                       t.is_cpu() ? " (use the gloo or mpi backend for CPU tensors)" : "");
  }
  WICK_CHECK(t.is_contiguous(), ValueError, op, "tensors must be contiguous (", what, " is not)");
}

void BackendGroup::check_rank(int r, const char* op, const char* what, bool not_self) const {
  WICK_CHECK(r >= 0 && r < size(), ValueError, op, what, " ", r, " is out of range for a group of ", size(),
             " ranks");
  WICK_CHECK(!not_self || r != rank(), ValueError, op, what, " ", r, " is this process's own rank");
}

void BackendGroup::check_reduce_op(ReduceOp rop, Dtype dtype, const char* op) {
  // An integer cast to ReduceOp would reach the transport's switch, which has no such case.
  WICK_CHECK(int(rop) >= int(ReduceOp::SUM) && int(rop) <= int(ReduceOp::MAX), ValueError, op, int(rop),
             " is not a valid ReduceOp");
  WICK_CHECK(rop != ReduceOp::AVG || is_floating_point(dtype), TypeError, op,
             "ReduceOp.AVG takes floating-point tensors, got ", dtype);
}

void BackendGroup::check_list(const std::vector<Tensor>& list, const Tensor& mine, const char* op,
                              const char* what) const {
  WICK_CHECK(int64_t(list.size()) == size(), ValueError, op, what, " has ", list.size(),
             " tensors; it must have one per rank (a group of ", size(), " ranks)");
  for (size_t r = 0; r < list.size(); ++r) {
    const std::string w = std::string(what) + "[" + std::to_string(r) + "]";
    check_tensor(list[r], op, w.c_str());
    WICK_CHECK(list[r].dtype() == mine.dtype(), TypeError, op, w, " has dtype ", list[r].dtype(), ", expected ",
               mine.dtype());
  }
  const Tensor& own = list[size_t(rank())];
  WICK_CHECK(own.sizes().equals(mine.sizes()), ValueError, op, what, "[", rank(), "] has sizes ", own.sizes(),
             " but this rank's tensor has ", mine.sizes());
}

Work completed_work(const std::string& op, std::vector<Tensor> outputs) {
  auto impl = std::make_shared<CompletedWork>(op);
  impl->outputs = std::move(outputs);
  return Work(impl);
}

#ifndef WICK_HAVE_NCCL
std::shared_ptr<ProcessGroup> make_nccl_group(const RankInfo&, const InitOptions&, Bootstrap&) {
  raise<NotImplementedError>(
      "init_process_group",
      "wick was built without NCCL; install NCCL (libnccl-dev) with the CUDA toolkit and "
      "rebuild to use the nccl backend, or use the gloo or mpi backend for CPU tensors");
}
#endif

}  // namespace detail

// ---- the default group

namespace {

struct Default {
  std::mutex mu;
  std::shared_ptr<ProcessGroup> group;
  // Kept while the group lives: rank 0 serves the TCP store until the group is destroyed.
  std::unique_ptr<detail::Bootstrap> bootstrap;
  int local_rank = 0;
};
// Never destroyed: the mpi backend finalizes MPI at exit on its own.
Default& state() {
  static Default* d = new Default;
  return *d;
}

std::shared_ptr<ProcessGroup> require_default(const char* op) {
  std::lock_guard<std::mutex> l(state().mu);
  if (!state().group)
    raise<DistributedError>(
        op, "the default process group has not been initialized; call init_process_group first");
  return state().group;
}

std::shared_ptr<ProcessGroup> pick(const std::shared_ptr<ProcessGroup>& group, const char* op) {
  return group ? group : require_default(op);
}

enum class Check { kOff, kSampled, kEvery };

// WICK_DISTRIBUTED_DEBUG, in any case: unset, empty or INFO (the sampled check), 1 or DETAIL
// (every call), OFF or 0 (none); ValueError naming op for anything else.
Check check_from_env(const char* op) {
  const char* v = std::getenv("WICK_DISTRIBUTED_DEBUG");
  std::string s = v ? v : "";
  for (char& c : s) c = char(std::toupper(static_cast<unsigned char>(c)));
  if (s.empty() || s == "INFO") return Check::kSampled;
  if (s == "1" || s == "DETAIL") return Check::kEvery;
  if (s == "0" || s == "OFF") return Check::kOff;
  raise<ValueError>(op, "WICK_DISTRIBUTED_DEBUG must be OFF, INFO or DETAIL (or 0 or 1), got '", v, "'");
}

Work finish(Work w, bool async_op) {
  if (!async_op) w.wait();
  return w;
}

}  // namespace

bool is_mpi_available() {
#ifdef WICK_HAVE_MPI
  return true;
#else
  return false;
#endif
}

bool is_nccl_available() {
#ifdef WICK_HAVE_NCCL
  return true;
#else
  return false;
#endif
}

void init_process_group(const std::string& backend_name, const InitOptions& options) {
  const char* op = "init_process_group";
  Default& d = state();
  std::lock_guard<std::mutex> l(d.mu);
  if (d.group)
    raise<Error>(op, "the default process group is already initialized; call destroy_process_group first");
  // Backend names are not case-sensitive, as torch.distributed.Backend's.
  std::string backend = backend_name;
  for (char& c : backend) c = char(std::tolower(static_cast<unsigned char>(c)));
  WICK_CHECK(backend == "gloo" || backend == "mpi" || backend == "nccl", ValueError, op, "unknown backend '",
             backend_name, "' (expected \"gloo\", \"mpi\" or \"nccl\")");
  WICK_CHECK(options.timeout.count() > 0, ValueError, op, "the timeout must be positive, got ",
             options.timeout.count(), " ms");
  const Check check = check_from_env(op);
  detail::RankInfo info = detail::resolve_rank_info(options);
  // A peer that dies leaves its sockets closed; a write to one (Open MPI's transports between
  // processes not started by mpirun write without MSG_NOSIGNAL) would end this process by
  // SIGPIPE instead of failing the collective, which then raises. Ignored unless the program
  // set a handler of its own.
  if (info.world_size > 1) {
    struct sigaction current {};
    if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL)
      std::signal(SIGPIPE, SIG_IGN);
  }
  std::shared_ptr<ProcessGroup> group;
  std::unique_ptr<detail::Bootstrap> bootstrap;
  Device check_device(kCPU);
  if (backend == "gloo") {
    group = detail::make_gloo_group(info, options);
  } else if (backend == "mpi") {
    group = detail::make_mpi_group(info, options);
  } else {
    bootstrap = detail::make_bootstrap(info, options.timeout);
    group = detail::make_nccl_group(info, options, *bootstrap);
    check_device = options.device.value_or(Device(kCUDA, info.local_rank));
  }
  // The cross-rank check of the collectives (distributed/checked_group.h): sampled by default
  // on the CPU backends (when there are other ranks), every call under WICK_DISTRIBUTED_DEBUG=1
  // (or DETAIL) on any backend, none under OFF (or 0). nccl is checked only when asked: a
  // checked call reads its fingerprints back on the host, a wait for the GPU that a step
  // captured as a CUDA graph cannot contain.
  const bool sampled = check == Check::kSampled && info.world_size > 1 && backend != "nccl";
  if (check == Check::kEvery || sampled)
    group = detail::make_checked_group(std::move(group), check_device,
                                       check == Check::kEvery ? detail::CheckMode::kEvery
                                                              : detail::CheckMode::kSampled);
  d.group = std::move(group);
  d.bootstrap = std::move(bootstrap);
  d.local_rank = info.local_rank;
}

bool is_initialized() {
  std::lock_guard<std::mutex> l(state().mu);
  return bool(state().group);
}

std::shared_ptr<ProcessGroup> default_group() { return require_default("default_group"); }
std::string get_backend() { return require_default("get_backend")->backend(); }
int get_rank() { return require_default("get_rank")->rank(); }
int get_world_size() { return require_default("get_world_size")->size(); }
int get_local_rank() {
  require_default("get_local_rank");
  std::lock_guard<std::mutex> l(state().mu);
  return state().local_rank;
}

void destroy_process_group() {
  std::shared_ptr<ProcessGroup> group;
  std::unique_ptr<detail::Bootstrap> bootstrap;
  {
    std::lock_guard<std::mutex> l(state().mu);
    if (!state().group)
      raise<DistributedError>(
          "destroy_process_group",
          "the default process group has not been initialized; call init_process_group first");
    group = std::move(state().group);
    bootstrap = std::move(state().bootstrap);
  }
  group.reset();
  bootstrap.reset();
}

// ---- collectives

Work all_reduce(Tensor& tensor, ReduceOp op, bool async_op, const std::shared_ptr<ProcessGroup>& group) {
  return finish(pick(group, "all_reduce")->all_reduce(tensor, op), async_op);
}
Work broadcast(Tensor& tensor, int src, bool async_op, const std::shared_ptr<ProcessGroup>& group) {
  return finish(pick(group, "broadcast")->broadcast(tensor, src), async_op);
}
Work reduce(Tensor& tensor, int dst, ReduceOp op, bool async_op, const std::shared_ptr<ProcessGroup>& group) {
  return finish(pick(group, "reduce")->reduce(tensor, dst, op), async_op);
}
Work all_gather(std::vector<Tensor>& tensor_list, const Tensor& tensor, bool async_op,
                const std::shared_ptr<ProcessGroup>& group) {
  return finish(pick(group, "all_gather")->all_gather(tensor_list, tensor), async_op);
}
Work reduce_scatter(Tensor& output, const std::vector<Tensor>& input_list, ReduceOp op, bool async_op,
                    const std::shared_ptr<ProcessGroup>& group) {
  return finish(pick(group, "reduce_scatter")->reduce_scatter(output, input_list, op), async_op);
}
Work barrier(bool async_op, const std::shared_ptr<ProcessGroup>& group) {
  return finish(pick(group, "barrier")->barrier(), async_op);
}
void send(const Tensor& tensor, int dst, int tag, const std::shared_ptr<ProcessGroup>& group) {
  pick(group, "send")->send(tensor, dst, tag).wait();
}
void recv(Tensor& tensor, int src, int tag, const std::shared_ptr<ProcessGroup>& group) {
  pick(group, "recv")->recv(tensor, src, tag).wait();
}
Work isend(const Tensor& tensor, int dst, int tag, const std::shared_ptr<ProcessGroup>& group) {
  return pick(group, "isend")->send(tensor, dst, tag);
}
Work irecv(Tensor& tensor, int src, int tag, const std::shared_ptr<ProcessGroup>& group) {
  return pick(group, "irecv")->recv(tensor, src, tag);
}

}  // namespace wick::distributed
