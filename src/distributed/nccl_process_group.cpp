// The "nccl" backend: one NCCL communicator among the processes, one GPU each.
//
// Streams: every collective is queued on the group's own communication stream, which first
// waits (by an event) for the work queued so far on the caller's current stream, so that the
// collective sees the values the caller's kernels write; tensors in flight are recorded on the
// communication stream for the caching allocator and kept alive until the collective ends.
// Work::wait blocks the host until the collective's end event has passed (or the timeout) and
// orders the current stream after it; Work::synchronize only orders the stream.
//
// Failures: a watchdog thread looks at the collectives in flight every few milliseconds. One
// that has run longer than the group's timeout, or an asynchronous error reported by NCCL (a
// peer that died, a broken connection), aborts the communicator (ncclCommAbort ends its
// kernels, so no stream stays blocked) and marks the group broken: the waiting call, and every
// later call on the group, raises DistributedError naming the op. docs/design.md section 12.
#include "distributed/internal.h"

#ifdef WICK_HAVE_NCCL

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "core/cuda_hooks.h"
#include "core/nccl_types.h"
#include "core/timeline.h"
#include "wick/autograd.h"
#include "wick/cuda.h"
#include "wick/ops.h"

namespace wick::distributed {

namespace {

using Clock = std::chrono::steady_clock;
using wick::detail::raise;

// Set at exit (before static destructors run): communicators are then left to the process's
// end, since tearing them down races the CUDA runtime's own teardown.
std::atomic<bool> g_exiting{false};

// NCCL's type for t; bool as bytes (its SUM and MAX are then logical or, PRODUCT and MIN
// logical and). Int16 has no NCCL type: it is moved as bytes but cannot be reduced.
std::optional<ncclDataType_t> nccl_type(Dtype t) {
  if (t == kBool) return ncclUint8;
  return wick::detail::nccl_type(t);
}

ncclRedOp_t nccl_op(ReduceOp op, Dtype t) {
  if (t == kBool) return (op == ReduceOp::SUM || op == ReduceOp::MAX) ? ncclMax : ncclMin;
  switch (op) {
    case ReduceOp::SUM:
      return ncclSum;
    case ReduceOp::AVG:
      return ncclAvg;
    case ReduceOp::PRODUCT:
      return ncclProd;
    case ReduceOp::MIN:
      return ncclMin;
    case ReduceOp::MAX:
      return ncclMax;
  }
  return ncclSum;
}

class NcclGroup;

class NcclWork final : public Work::Impl {
 public:
  NcclWork(std::string op, std::weak_ptr<NcclGroup> group, int device)
      : Impl(std::move(op)), group(std::move(group)), device(device) {}
  bool is_completed() override;
  void wait() override;
  void synchronize() override;
  // Whether the end event has passed (no error check).
  bool done() const { return done_.load(std::memory_order_acquire) || (end.query() && mark_done()); }
  bool mark_done() const {
    done_.store(true, std::memory_order_release);
    return true;
  }

  // Raises the group's error while it lives (the group keeps its works, not the reverse).
  void check_group() const;

  cuda::Event end;
  Clock::time_point issued;
  std::weak_ptr<NcclGroup> group;
  int device;
  // A send or recv waits in the group until something needs it launched (docs: see
  // NcclGroup::launched_of); then launched is the NCCL group that carries it.
  bool deferred = false;
  std::shared_ptr<NcclWork> launched;

 private:
  mutable std::atomic<bool> done_{false};
};

class NcclGroup final : public detail::BackendGroup, public std::enable_shared_from_this<NcclGroup> {
 public:
  NcclGroup(int rank, int size, int device, std::chrono::milliseconds timeout);
  ~NcclGroup() override;
  void connect(detail::Bootstrap& boot);

  std::string backend() const override { return "nccl"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::chrono::milliseconds timeout() const override { return timeout_; }

  Work all_reduce(Tensor& tensor, ReduceOp op) override;
  Work broadcast(Tensor& tensor, int src) override;
  Work reduce(Tensor& tensor, int dst, ReduceOp op) override;
  Work all_gather(std::vector<Tensor>& outputs, const Tensor& input) override;
  Work reduce_scatter(Tensor& output, const std::vector<Tensor>& inputs, ReduceOp op) override;
  Work barrier() override;
  Work send(const Tensor& tensor, int dst, int tag) override;
  Work recv(Tensor& tensor, int src, int tag) override;
  // all_reduce on a second communicator that takes at most overlap_ctas() thread blocks: for
  // collectives that run while the compute stream is busy (DDP's buckets), which then leave more
  // of the device to the compute. Made on the first call, which every rank must make.
  Work all_reduce_beside_compute(Tensor& tensor, ReduceOp op) override;
  void prepare_beside_compute() override;
  // The communicator of all_reduce_beside_compute, made on the first call (collective).
  ncclComm_t overlap_comm(const char* op);

  // Raises the group's error, naming op, once the group is broken.
  void check_usable(const std::string& op) const;
  // The launched work that carries a deferred send or recv (launching the waiting ones now).
  std::shared_ptr<NcclWork> launched_of(NcclWork& w);
  // Aborts the communicator (once) for reason; this and later calls raise it.
  void abort(const std::string& reason);
  bool broken() const { return broken_.load(std::memory_order_acquire); }
  int device() const { return device_; }
  std::string where() const;

 private:
  // Checks, orders the communication stream after the caller's, runs calls (the NCCL calls
  // of the op, inside one group) on it, and returns the op's Work.
  // after (optional) queues more work on the stream once the NCCL group has been launched.
  template <class F, class G>
  Work issue(const char* op, const std::vector<Tensor>& keep, F&& calls, G&& after);
  template <class F>
  Work issue(const char* op, const std::vector<Tensor>& keep, F&& calls) {
    return issue(op, keep, std::forward<F>(calls), [](cudaStream_t) { return true; });
  }
  // issue's body, with issue_mu_ held.
  template <class F, class G>
  std::shared_ptr<NcclWork> issue_locked(const char* op, const std::vector<Tensor>& keep, F&& calls,
                                         G&& after);
  // Launches the waiting sends and receives as one NCCL group (issue_mu_ held).
  void flush_p2p_locked();
  Work defer_p2p(const char* op, const Tensor& tensor, int peer, bool is_send);
  ncclDataType_t reduce_type(const Tensor& t, ReduceOp rop, const char* op) const;
  void watchdog();
  // Waits until NCCL has taken the communicator's last call (non-blocking mode), at most the
  // timeout: then the group is aborted and DistributedError raised naming op.
  ncclResult_t settle(const char* op, const char* what, ncclComm_t comm = nullptr);

  int rank_, size_, device_;
  std::chrono::milliseconds timeout_;
  ncclComm_t comm_ = nullptr;
  std::atomic<ncclComm_t> overlap_comm_{nullptr};  // made by overlap_comm()
  ncclComm_t issuing_comm_ = nullptr;              // issue_locked's NCCL calls' (issue_mu_): null is comm_
  std::mutex overlap_mu_;                          // held while overlap_comm_ is made
  std::optional<cuda::Stream> stream_;
  cuda::Event ready_;

  // Sends and receives not launched yet. A send and a receive of one ring queued one after the
  // other on one stream would each wait for the peer's other half: they are launched together,
  // as one NCCL group, when one of them is waited for or the next collective is queued.
  struct PendingP2P {
    std::shared_ptr<NcclWork> work;
    Tensor tensor;
    int peer;
    bool is_send;
  };
  std::vector<PendingP2P> pending_;  // guarded by issue_mu_
  std::mutex issue_mu_;              // one collective queued at a time
  mutable std::mutex mu_;  // the in-flight list, the error (never held in NCCL calls but abort)
  std::deque<std::shared_ptr<NcclWork>> in_flight_;
  std::atomic<bool> broken_{false};
  std::string error_;

  std::mutex wd_mu_;
  std::condition_variable wd_cv_;
  bool stop_ = false;
  std::thread watchdog_;
};

// ---- the group

NcclGroup::NcclGroup(int rank, int size, int device, std::chrono::milliseconds timeout)
    : BackendGroup(Device(kCUDA, device)), rank_(rank), size_(size), device_(device), timeout_(timeout) {}

std::string NcclGroup::where() const {
  std::ostringstream os;
  os << "rank " << rank_ << " of " << size_ << ", nccl on cuda:" << device_;
  return os.str();
}

void NcclGroup::connect(detail::Bootstrap& boot) {
  static const char* op = "init_process_group";
  wick::detail::CudaDeviceScope scope(device_);
  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  if (rank_ == 0) {
    ncclResult_t r = ncclGetUniqueId(&id);
    if (r != ncclSuccess)
      raise<DistributedError>(op, "ncclGetUniqueId failed (", where(), "): ", ncclGetErrorString(r));
  }
  std::string bytes = boot.broadcast(std::string(reinterpret_cast<const char*>(&id), sizeof id), 0, op);
  if (bytes.size() != sizeof id) raise<DistributedError>(op, "received a malformed NCCL id (", where(), ")");
  std::memcpy(&id, bytes.data(), sizeof id);
  boot.barrier(op);
  // A non-blocking communicator: no NCCL call blocks the host (a fresh communicator's first
  // collectives connect to the peers, which would otherwise wait for a peer that never comes);
  // settle() waits for each call against the timeout.
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclResult_t r = ncclCommInitRankConfig(&comm_, size_, id, rank_, &config);
  if (r == ncclInProgress) r = settle(op, "ncclCommInitRank");
  if (r != ncclSuccess) {
    if (comm_ && !broken()) (void)ncclCommAbort(comm_);
    raise<DistributedError>(op, "ncclCommInitRank failed (", where(), "): ", ncclGetErrorString(r));
  }
  cudaStream_t s = nullptr;
  int least = 0, greatest = 0;
  if (cudaDeviceGetStreamPriorityRange(&least, &greatest) != cudaSuccess ||
      cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, greatest) != cudaSuccess)
    raise<DistributedError>(op, "could not create the communication stream (", where(), ")");
  stream_.emplace(device_, s);  // streams live for the process
  watchdog_ = std::thread([this] { watchdog(); });
}

NcclGroup::~NcclGroup() {
  {
    std::lock_guard<std::mutex> lock(wd_mu_);
    stop_ = true;
  }
  wd_cv_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
  if (!comm_ || g_exiting.load()) return;
  if (broken()) return;  // aborted already
  // Wait for what is in flight (bounded by the timeout), then free the communicator.
  const auto deadline = Clock::now() + timeout_;
  for (auto& w : in_flight_)
    while (!w->done() && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::microseconds(200));
  // Abort frees the communicator without talking to the peers, which may be gone already
  // (ncclCommDestroy may wait for them).
  if (ncclComm_t c = overlap_comm_.load()) (void)ncclCommAbort(c);
  (void)ncclCommAbort(comm_);
}

ncclResult_t NcclGroup::settle(const char* op, const char* what, ncclComm_t comm) {
  if (!comm) comm = comm_;
  const auto start = Clock::now();
  int spins = 0;
  for (;;) {
    ncclResult_t st = ncclSuccess;
    ncclResult_t q = ncclCommGetAsyncError(comm, &st);
    if (q != ncclSuccess) return q;
    if (st != ncclInProgress) return st;
    if (Clock::now() - start > timeout_) {
      std::ostringstream os;
      os << what << " did not finish within the timeout of " << timeout_.count() << " ms (" << where()
         << "): a peer did not take part or died. The process group can no longer be used";
      abort(os.str());
      raise<DistributedError>(op, os.str());
    }
    if (++spins < 1000) std::this_thread::yield();
    else std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

void NcclGroup::check_usable(const std::string& op) const {
  if (!broken()) return;
  std::lock_guard<std::mutex> lock(mu_);
  raise<DistributedError>(op.c_str(), error_);
}

void NcclGroup::abort(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  if (broken_.load()) return;
  error_ = reason;
  broken_.store(true, std::memory_order_release);
  // Ends the communicator's kernels: no stream stays blocked on a collective that cannot finish.
  if (ncclComm_t c = overlap_comm_.load()) (void)ncclCommAbort(c);
  (void)ncclCommAbort(comm_);
}

void NcclGroup::watchdog() {
  std::unique_lock<std::mutex> lk(wd_mu_);
  while (!stop_) {
    wd_cv_.wait_for(lk, std::chrono::milliseconds(5));
    if (stop_ || broken()) continue;
    std::shared_ptr<NcclWork> late;
    {
      std::lock_guard<std::mutex> lock(mu_);
      while (!in_flight_.empty() && in_flight_.front()->done()) in_flight_.pop_front();
      const auto now = Clock::now();
      for (auto& w : in_flight_)
        if (!w->done() && now - w->issued > timeout_) {
          late = w;
          break;
        }
    }
    ncclResult_t async = ncclSuccess;
    ncclComm_t failed = comm_;
    (void)ncclCommGetAsyncError(comm_, &async);
    if (ncclComm_t c = overlap_comm_.load(); c && (async == ncclSuccess || async == ncclInProgress)) {
      (void)ncclCommGetAsyncError(c, &async);
      failed = c;
    }
    if (async != ncclSuccess && async != ncclInProgress) {
      std::ostringstream os;
      os << "NCCL reported an error (" << where() << "): " << ncclGetErrorString(async);
      if (const char* last = ncclGetLastError(failed); last && *last) os << " (" << last << ")";
      os << "; a peer may have died. The process group can no longer be used";
      abort(os.str());
    } else if (late) {
      std::ostringstream os;
      os << late->op() << " did not finish within the timeout of " << timeout_.count() << " ms (" << where()
         << "): a peer did not take part or died. The process group can no longer be used";
      abort(os.str());
    }
  }
}

ncclDataType_t NcclGroup::reduce_type(const Tensor& t, ReduceOp rop, const char* op) const {
  auto ty = nccl_type(t.dtype());
  WICK_CHECK(ty.has_value(), TypeError, op, "the nccl backend cannot reduce tensors of dtype ", t.dtype());
  check_reduce_op(rop, t.dtype(), op);
  return *ty;
}

template <class F, class G>
Work NcclGroup::issue(const char* op, const std::vector<Tensor>& keep, F&& calls, G&& after) {
  check_usable(op);
  std::lock_guard<std::mutex> issuing(issue_mu_);
  flush_p2p_locked();
  return Work(issue_locked(op, keep, std::forward<F>(calls), std::forward<G>(after)));
}

template <class F, class G>
std::shared_ptr<NcclWork> NcclGroup::issue_locked(const char* op, const std::vector<Tensor>& keep, F&& calls,
                                                  G&& after) {
  check_usable(op);
  wick::detail::CudaDeviceScope scope(device_);
  auto work = std::make_shared<NcclWork>(op, weak_from_this(), device_);
  const cuda::Stream caller = cuda::current_stream(device_);
  // The timeline (core/timeline.h): where the caller's stream was when the collective was
  // queued (what it waits for), its start and its end on the communication stream.
  wick::detail::Timeline& timeline = wick::detail::process_timeline();
  if (timeline.enabled()) timeline.mark(std::string(op) + ".ready", caller);
  ready_.record(caller);
  stream_->wait_event(ready_);
  if (timeline.enabled()) timeline.mark(std::string(op) + ".start", *stream_);
  ncclResult_t r = ncclGroupStart();
  if (r == ncclSuccess) r = calls(stream_->native());
  ncclResult_t r2 = ncclGroupEnd();
  if (r == ncclSuccess || r == ncclInProgress) r = r2;
  ncclComm_t used = issuing_comm_ ? issuing_comm_ : comm_;
  if (r == ncclInProgress) r = settle(op, op, used);
  if (r != ncclSuccess) {
    std::ostringstream os;
    os << "NCCL error (" << where() << "): " << ncclGetErrorString(r);
    if (const char* last = ncclGetLastError(used); last && *last) os << " (" << last << ")";
    raise<DistributedError>(op, os.str());
  }
  if (!after(stream_->native()))
    raise<DistributedError>(op, "a copy after the collective failed (", where(), ")");
  for (const Tensor& t : keep) t.record_stream(*stream_);
  work->end.record(*stream_);
  if (timeline.enabled()) timeline.mark(std::string(op) + ".end", *stream_);
  work->issued = Clock::now();
  work->outputs = keep;
  std::lock_guard<std::mutex> lock(mu_);
  in_flight_.push_back(work);
  return work;
}

void NcclGroup::flush_p2p_locked() {
  if (pending_.empty()) return;
  std::vector<PendingP2P> batch;
  batch.swap(pending_);
  std::vector<Tensor> keep;
  for (auto& p : batch) keep.push_back(p.tensor);
  const char* op = batch.size() == 1 ? (batch[0].is_send ? "send" : "recv") : "send/recv";
  auto launched = issue_locked(
      op, keep,
      [&](cudaStream_t s) {
        for (auto& p : batch) {
          const size_t n = size_t(p.tensor.nbytes());
          ncclResult_t r = p.is_send ? ncclSend(p.tensor.data_ptr(), n, ncclUint8, p.peer, comm_, s)
                                     : ncclRecv(p.tensor.data_ptr(), n, ncclUint8, p.peer, comm_, s);
          if (r != ncclSuccess) return r;
        }
        return ncclSuccess;
      },
      [](cudaStream_t) { return true; });
  for (auto& p : batch) p.work->launched = launched;
}

Work NcclGroup::defer_p2p(const char* op, const Tensor& tensor, int peer, bool is_send) {
  check_tensor(tensor, op, "tensor");
  check_rank(peer, op, is_send ? "dst" : "src", true);
  std::lock_guard<std::mutex> issuing(issue_mu_);
  check_usable(op);
  auto work = std::make_shared<NcclWork>(op, weak_from_this(), device_);
  work->deferred = true;
  work->outputs = {tensor};
  // The values the caller's stream is about to write are what is sent: the launch waits for
  // the caller's stream as it is then.
  pending_.push_back({work, tensor, peer, is_send});
  return Work(work);
}

std::shared_ptr<NcclWork> NcclGroup::launched_of(NcclWork& w) {
  std::lock_guard<std::mutex> issuing(issue_mu_);
  if (!w.launched) flush_p2p_locked();
  return w.launched;
}

Work NcclGroup::all_reduce(Tensor& tensor, ReduceOp rop) {
  static const char* op = "all_reduce";
  check_tensor(tensor, op, "tensor");
  const ncclDataType_t ty = reduce_type(tensor, rop, op);
  const ncclRedOp_t nop = nccl_op(rop, tensor.dtype());
  void* p = tensor.data_ptr();
  const size_t n = size_t(tensor.numel());
  return issue(op, {tensor}, [&](cudaStream_t s) { return ncclAllReduce(p, p, n, ty, nop, comm_, s); });
}

// WICK_DDP_OVERLAP_CTAS: 8 unless set; 0 keeps every collective on the group's communicator.
int overlap_ctas(const char* op) {
  static const int n = [op] {
    const char* v = std::getenv("WICK_DDP_OVERLAP_CTAS");
    if (!v || !*v) return 8;
    char* end = nullptr;
    const long x = std::strtol(v, &end, 10);
    WICK_CHECK(*end == '\0' && x >= 0 && x <= 1024, ValueError, op,
               "WICK_DDP_OVERLAP_CTAS must be a whole number of thread blocks from 0 to 1024, got '", v, "'");
    return int(x);
  }();
  return n;
}

ncclComm_t NcclGroup::overlap_comm(const char* op) {
  if (ncclComm_t c = overlap_comm_.load()) return c;
  std::lock_guard<std::mutex> lock(overlap_mu_);
  if (ncclComm_t c = overlap_comm_.load()) return c;
  wick::detail::CudaDeviceScope scope(device_);
  // A communicator of its own (ncclCommSplit of a non-blocking one hands the new communicator
  // over only once it is ready, with nothing to wait on): rank 0's unique id goes to the others
  // through the group itself.
  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  if (rank_ == 0) {
    ncclResult_t r = ncclGetUniqueId(&id);
    if (r != ncclSuccess)
      raise<DistributedError>(op, "ncclGetUniqueId failed (", where(), "): ", ncclGetErrorString(r));
  }
  {
    NoGradGuard no_grad;
    Tensor bytes = from_blob(&id, {int64_t(sizeof id)}, TensorOptions().dtype(kUInt8)).to(Device(kCUDA, device_));
    broadcast(bytes, 0).wait();
    Tensor host = bytes.cpu();
    std::memcpy(&id, host.data_ptr(), sizeof id);
  }
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  config.maxCTAs = overlap_ctas(op);
  ncclComm_t c = nullptr;
  ncclResult_t r = ncclCommInitRankConfig(&c, size_, id, rank_, &config);
  if (r == ncclInProgress && c) r = settle(op, "ncclCommInitRank", c);
  if (r != ncclSuccess || !c) {
    std::ostringstream os;
    os << "could not make the communicator for collectives beside the compute (" << where()
       << "): " << ncclGetErrorString(r) << ". The process group can no longer be used";
    if (c) (void)ncclCommAbort(c);
    abort(os.str());
    raise<DistributedError>(op, os.str());
  }
  overlap_comm_.store(c);
  return c;
}

Work NcclGroup::all_reduce_beside_compute(Tensor& tensor, ReduceOp rop) {
  static const char* op = "all_reduce";
  if (size_ == 1 || overlap_ctas(op) == 0) return all_reduce(tensor, rop);
  check_tensor(tensor, op, "tensor");
  const ncclDataType_t ty = reduce_type(tensor, rop, op);
  const ncclRedOp_t nop = nccl_op(rop, tensor.dtype());
  void* p = tensor.data_ptr();
  const size_t n = size_t(tensor.numel());
  ncclComm_t c = overlap_comm(op);
  check_usable(op);
  std::lock_guard<std::mutex> issuing(issue_mu_);
  flush_p2p_locked();
  // Both communicators queue on the one communication stream, in the order the ranks issue.
  issuing_comm_ = c;
  struct Reset {
    ncclComm_t& slot;
    ~Reset() { slot = nullptr; }
  } reset{issuing_comm_};
  return Work(issue_locked(
      op, {tensor}, [&](cudaStream_t s) { return ncclAllReduce(p, p, n, ty, nop, c, s); },
      [](cudaStream_t) { return true; }));
}

void NcclGroup::prepare_beside_compute() {
  static const char* op = "DistributedDataParallel";
  if (size_ > 1 && overlap_ctas(op) > 0) overlap_comm(op);
}

Work NcclGroup::broadcast(Tensor& tensor, int src) {
  static const char* op = "broadcast";
  check_tensor(tensor, op, "tensor");
  check_rank(src, op, "src", false);
  void* p = tensor.data_ptr();
  const size_t n = size_t(tensor.nbytes());
  return issue(op, {tensor},
               [&](cudaStream_t s) { return ncclBroadcast(p, p, n, ncclUint8, src, comm_, s); });
}

Work NcclGroup::reduce(Tensor& tensor, int dst, ReduceOp rop) {
  static const char* op = "reduce";
  check_tensor(tensor, op, "tensor");
  check_rank(dst, op, "dst", false);
  const ncclDataType_t ty = reduce_type(tensor, rop, op);
  const ncclRedOp_t nop = nccl_op(rop, tensor.dtype());
  void* p = tensor.data_ptr();
  const size_t n = size_t(tensor.numel());
  return issue(op, {tensor}, [&](cudaStream_t s) { return ncclReduce(p, p, n, ty, nop, dst, comm_, s); });
}

Work NcclGroup::all_gather(std::vector<Tensor>& outputs, const Tensor& input) {
  static const char* op = "all_gather";
  check_tensor(input, op, "tensor");
  check_list(outputs, input, op, "tensor_list");
  bool even = true;
  for (const Tensor& o : outputs) even = even && o.numel() == input.numel();
  std::vector<Tensor> keep = outputs;
  keep.push_back(input);
  if (even && input.numel() > 0) {
    // One ring all-gather into a flat buffer, then copies out on the communication stream.
    Tensor flat =
        empty({int64_t(size_) * input.numel()}, TensorOptions().dtype(input.dtype()).device(input.device()));
    keep.push_back(flat);
    const size_t bytes = size_t(input.nbytes());
    const void* in = input.data_ptr();
    char* buf = static_cast<char*>(flat.data_ptr());
    Work w = issue(
        op, keep, [&](cudaStream_t s) { return ncclAllGather(in, buf, bytes, ncclUint8, comm_, s); },
        [&](cudaStream_t s) {
          for (int i = 0; i < size_; ++i)
            if (cudaMemcpyAsync(outputs[size_t(i)].data_ptr(), buf + size_t(i) * bytes, bytes,
                                cudaMemcpyDeviceToDevice, s) != cudaSuccess)
              return false;
          return true;
        });
    w.impl()->outputs = outputs;
    return w;
  }
  // Different sizes from rank to rank: one broadcast per rank, in one NCCL group.
  Work w = issue(op, keep, [&](cudaStream_t s) {
    for (int i = 0; i < size_; ++i) {
      const size_t bytes = size_t(outputs[size_t(i)].nbytes());
      if (bytes == 0) continue;
      const void* send = i == rank_ ? input.data_ptr() : outputs[size_t(i)].data_ptr();
      ncclResult_t r = ncclBroadcast(send, outputs[size_t(i)].data_ptr(), bytes, ncclUint8, i, comm_, s);
      if (r != ncclSuccess) return r;
    }
    return ncclSuccess;
  });
  w.impl()->outputs = outputs;
  return w;
}

Work NcclGroup::reduce_scatter(Tensor& output, const std::vector<Tensor>& inputs, ReduceOp rop) {
  static const char* op = "reduce_scatter";
  check_tensor(output, op, "output");
  check_list(inputs, output, op, "input_list");
  const ncclDataType_t ty = reduce_type(output, rop, op);
  const ncclRedOp_t nop = nccl_op(rop, output.dtype());
  bool even = true;
  for (const Tensor& t : inputs) even = even && t.numel() == output.numel();
  std::vector<Tensor> keep = inputs;
  keep.push_back(output);
  if (even && output.numel() > 0) {
    std::vector<Tensor> flats;
    for (const Tensor& t : inputs) flats.push_back(t.view({t.numel()}));
    Tensor flat = cat(flats, 0);  // on the caller's stream, before the collective waits for it
    keep.push_back(flat);
    const void* in = flat.data_ptr();
    void* out = output.data_ptr();
    const size_t n = size_t(output.numel());
    Work w =
        issue(op, keep, [&](cudaStream_t s) { return ncclReduceScatter(in, out, n, ty, nop, comm_, s); });
    w.impl()->outputs = {output};
    return w;
  }
  // Different sizes: one reduce per rank onto that rank, in one NCCL group.
  Work w = issue(op, keep, [&](cudaStream_t s) {
    for (int i = 0; i < size_; ++i) {
      const size_t n = size_t(inputs[size_t(i)].numel());
      if (n == 0) continue;
      void* recv = i == rank_ ? output.data_ptr() : nullptr;
      ncclResult_t r = ncclReduce(inputs[size_t(i)].data_ptr(), recv, n, ty, nop, i, comm_, s);
      if (r != ncclSuccess) return r;
    }
    return ncclSuccess;
  });
  w.impl()->outputs = {output};
  return w;
}

Work NcclGroup::barrier() {
  static const char* op = "barrier";
  Tensor one = ones({1}, TensorOptions().dtype(kFloat32).device(Device(kCUDA, device_)));
  void* p = one.data_ptr();
  Work w = issue(op, {one},
                 [&](cudaStream_t s) { return ncclAllReduce(p, p, 1, ncclFloat32, ncclSum, comm_, s); });
  w.impl()->outputs.clear();
  return w;
}

Work NcclGroup::send(const Tensor& tensor, int dst, int tag) { return defer_p2p("send", tensor, dst, true); }

Work NcclGroup::recv(Tensor& tensor, int src, int tag) { return defer_p2p("recv", tensor, src, false); }

// ---- Work

void NcclWork::check_group() const {
  if (auto g = group.lock()) g->check_usable(op());
}

bool NcclWork::is_completed() {
  if (deferred) {
    if (!launched) {
      check_group();
      return false;
    }
    return launched->is_completed();
  }
  if (done()) return true;
  check_group();
  return false;
}

void NcclWork::wait() {
  if (deferred) {
    auto g = group.lock();
    if (!g)
      raise<DistributedError>(op().c_str(), "the process group was destroyed before this ", op(),
                              " was launched");
    g->launched_of(*this)->wait();
    return;
  }
  // Spin briefly (short collectives), then poll; the watchdog aborts a late collective, which
  // ends its kernels, so this loop always ends.
  int spins = 0;
  while (!done()) {
    if (group.expired()) {  // destroyed: nothing watches the collective any more
      end.synchronize();
      break;
    }
    check_group();
    if (++spins < 2000) std::this_thread::yield();
    else std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  check_group();
  cuda::current_stream(device).wait_event(end);
}

void NcclWork::synchronize() {
  if (deferred) {
    auto g = group.lock();
    if (!g)
      raise<DistributedError>(op().c_str(), "the process group was destroyed before this ", op(),
                              " was launched");
    g->launched_of(*this)->synchronize();
    return;
  }
  check_group();
  cuda::current_stream(device).wait_event(end);
}

}  // namespace

namespace detail {

std::shared_ptr<ProcessGroup> make_nccl_group(const RankInfo& info, const InitOptions& options,
                                              Bootstrap& bootstrap) {
  static const char* op = "init_process_group";
  static const bool registered = [] {
    std::atexit([] { g_exiting.store(true); });
    return true;
  }();
  (void)registered;
  int device = info.local_rank;
  if (options.device) {
    WICK_CHECK(options.device->is_cuda(), ValueError, op, "the nccl backend needs a CUDA device, got ",
               *options.device);
    device = options.device->has_index() ? options.device->index() : info.local_rank;
  }
  const int count = cuda::device_count();
  WICK_CHECK(count > 0, DeviceError, op, "the nccl backend needs a GPU, and none is visible");
  WICK_CHECK(device >= 0 && device < count, DeviceError, op, "rank ", info.rank, " (local rank ",
             info.local_rank, ") would use cuda:", device, " but only ", count,
             " GPUs are visible; start one process per GPU, or pass InitOptions::device");
  auto group = std::make_shared<NcclGroup>(info.rank, info.world_size, device, options.timeout);
  group->connect(bootstrap);
  return group;
}

}  // namespace detail
}  // namespace wick::distributed

#endif  // WICK_HAVE_NCCL (make_nccl_group without it: process_group.cpp)
