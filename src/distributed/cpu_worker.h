// What the CPU backends (gloo, mpi) share around their transports: one worker thread per group
// that runs the group's collectives in call order, the group's broken state, the Work of a
// queued collective with its bounded wait, and the wording of their errors (docs/design.md,
// section 12). A backend subclasses CpuWorker for its transport's state and queues closures that
// make the transport's blocking calls; the closures raise wick::Error naming the op the user
// called, or let the transport's own exceptions through for transport_error to word.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "distributed/internal.h"

namespace wick::distributed::detail {

class CpuWork;

class CpuWorker : public std::enable_shared_from_this<CpuWorker> {
 public:
  using Clock = std::chrono::steady_clock;

  // backend: for messages. bounded: the transport bounds each of its calls by the group's
  // timeout (gloo), so Work::wait waits for the call and gives up only when it overruns the
  // timeout by far, and shutdown joins the worker; otherwise (mpi) Work::wait gives up after
  // the timeout, and shutdown leaves a worker that is stuck in the transport detached.
  CpuWorker(std::string backend, bool bounded) : backend_(std::move(backend)), bounded_(bounded) {}
  virtual ~CpuWorker() = default;
  CpuWorker(const CpuWorker&) = delete;
  CpuWorker& operator=(const CpuWorker&) = delete;

  int rank = 0, size = 1;
  std::chrono::milliseconds timeout{};

  // "rank r of n, <backend>", for messages.
  std::string where() const;
  // "[op] what (where); the process group can no longer be used".
  std::string fatal(const char* op, const std::string& what) const;
  // "[op] timed out after N ms (where); the process group can no longer be used".
  std::string timed_out(const char* op) const;
  // DistributedError naming op when the group is broken.
  void check_usable(const char* op);
  // Marks the group broken for reason (the first reason stays).
  void fail(const std::string& reason);

  // Starts the worker thread, which holds the state until it ends.
  void start();
  // Queues fn for the worker. outputs: the Work's result; inputs: kept alive until it has run.
  std::shared_ptr<CpuWork> enqueue(const char* op, std::vector<Tensor> outputs, std::vector<Tensor> inputs,
                                   std::function<void()> fn);
  // Runs fn on the calling thread as the worker would run it (the group usable, errors worded
  // and breaking the group), and completes work with it.
  void run_now(const std::shared_ptr<CpuWork>& work, std::function<void()> fn);

  enum class Stopped { kJoined, kDetached, kBefore };
  // Stops the worker once its queue is done. kJoined: it ended now; kDetached: (unbounded
  // transports) it is stuck in a call or has work left, and runs on detached; kBefore: an
  // earlier call stopped it.
  Stopped shutdown();
  // Whether the worker is inside a collective now.
  bool busy();

 protected:
  // The message of fn's failure by an exception other than wick::Error (the transport's own):
  // fatal(op, e.what()) unless a backend words it.
  virtual std::string transport_error(const char* op, const std::exception& e, Clock::duration elapsed) const;

 private:
  friend class CpuWork;
  struct Task {
    std::function<void()> fn;
    std::shared_ptr<CpuWork> work;
  };
  void run();
  // Runs t (unless the group is broken) and completes its work; an error breaks the group. l: a
  // lock of mu_, held on entry and on return.
  void execute(Task& t, std::unique_lock<std::mutex>& l);
  void fail_locked(const std::string& reason);

  const std::string backend_;
  const bool bounded_;
  std::mutex mu_;
  std::condition_variable queue_cv_, done_cv_;
  std::deque<Task> queue_;  // the collectives, in call order
  std::thread worker_;
  const Task* running_ = nullptr;  // the worker's current task, and since when
  Clock::time_point started_;
  bool stop_ = false, shut_ = false, broken_ = false;
  std::string broken_reason_;
};

// A collective queued on a CpuWorker.
class CpuWork final : public Work::Impl {
 public:
  CpuWork(std::string op, std::shared_ptr<CpuWorker> worker) : Impl(std::move(op)), w_(std::move(worker)) {}
  bool is_completed() override;
  void wait() override;
  std::vector<Tensor> keep;  // inputs in flight

 private:
  friend class CpuWorker;
  std::shared_ptr<CpuWorker> w_;
  bool done_ = false;  // under w_->mu_
  std::string error_;
};

// The base of the CPU backends' groups: their state (a CpuWorker subclass), what they report
// of it, the checks of every call's arguments (the group usable, then BackendGroup's), and the
// queueing of their collectives. A backend gives the transport's part of each collective as a
// closure for the worker, made on the caller's thread after those checks (it may raise for
// what only its transport refuses), and posts sends and receives itself.
template <class State>
class CpuGroup : public BackendGroup {
 public:
  std::string backend() const override { return backend_; }
  int rank() const override { return st_->rank; }
  int size() const override { return st_->size; }
  std::chrono::milliseconds timeout() const override { return st_->timeout; }

  Work all_reduce(Tensor& tensor, ReduceOp op) final {
    const char* name = "all_reduce";
    check_tensor(tensor, name, "tensor");
    check_reduce_op(op, tensor.dtype(), name);
    return enqueue(name, {tensor}, {tensor}, all_reduce_fn(tensor, op));
  }
  Work broadcast(Tensor& tensor, int src) final {
    const char* name = "broadcast";
    check_tensor(tensor, name, "tensor");
    check_rank(src, name, "src");
    return enqueue(name, {tensor}, {tensor}, broadcast_fn(tensor, src));
  }
  Work reduce(Tensor& tensor, int dst, ReduceOp op) final {
    const char* name = "reduce";
    check_tensor(tensor, name, "tensor");
    check_rank(dst, name, "dst");
    check_reduce_op(op, tensor.dtype(), name);
    return enqueue(name, {tensor}, {tensor}, reduce_fn(tensor, dst, op));
  }
  Work all_gather(std::vector<Tensor>& outputs, const Tensor& input) final {
    const char* name = "all_gather";
    check_tensor(input, name, "tensor");
    check_list(outputs, input, name, "tensor_list");
    return enqueue(name, outputs, {input}, all_gather_fn(outputs, input));
  }
  Work reduce_scatter(Tensor& output, const std::vector<Tensor>& inputs, ReduceOp op) final {
    const char* name = "reduce_scatter";
    check_tensor(output, name, "output");
    check_reduce_op(op, output.dtype(), name);
    check_list(inputs, output, name, "input_list");
    return enqueue(name, {output}, inputs, reduce_scatter_fn(output, inputs, op));
  }
  Work barrier() final {
    st_->check_usable("barrier");
    return enqueue("barrier", {}, {}, barrier_fn());
  }
  Work send(const Tensor& tensor, int dst, int tag) final {
    check_p2p(tensor, dst, tag, "send", "dst");
    return post("send", tensor, dst, tag, /*is_send=*/true);
  }
  Work recv(Tensor& tensor, int src, int tag) final {
    check_p2p(tensor, src, tag, "recv", "src");
    return post("recv", tensor, src, tag, /*is_send=*/false);
  }

 protected:
  CpuGroup(std::string backend, std::shared_ptr<State> st)
      : BackendGroup(Device(kCPU)), st_(std::move(st)), backend_(std::move(backend)) {}

  // The transport's part of each collective, for the worker (names as the call's).
  virtual std::function<void()> all_reduce_fn(Tensor tensor, ReduceOp op) = 0;
  virtual std::function<void()> broadcast_fn(Tensor tensor, int src) = 0;
  virtual std::function<void()> reduce_fn(Tensor tensor, int dst, ReduceOp op) = 0;
  virtual std::function<void()> all_gather_fn(std::vector<Tensor> outputs, Tensor input) = 0;
  virtual std::function<void()> reduce_scatter_fn(Tensor output, std::vector<Tensor> inputs, ReduceOp op) = 0;
  virtual std::function<void()> barrier_fn() = 0;
  // A send or receive (op), its arguments checked: posted at once from the caller's thread, so
  // that a ring of isend + irecv cannot deadlock behind the worker.
  virtual Work post(const char* op, const Tensor& tensor, int peer, int tag, bool is_send) = 0;

  std::shared_ptr<State> st_;

 private:
  // The group usable, then the arguments' checks of every backend (internal.h).
  void check_tensor(const Tensor& t, const char* op, const char* what) {
    st_->check_usable(op);
    BackendGroup::check_tensor(t, op, what);
  }
  void check_p2p(const Tensor& tensor, int peer, int tag, const char* op, const char* what) {
    check_tensor(tensor, op, "tensor");
    check_rank(peer, op, what, /*not_self=*/true);
    WICK_CHECK(tag >= 0, ValueError, op, "tag ", tag, " must not be negative");
  }
  Work enqueue(const char* op, std::vector<Tensor> outputs, std::vector<Tensor> inputs, std::function<void()> fn) {
    return Work(st_->enqueue(op, std::move(outputs), std::move(inputs), std::move(fn)));
  }

  std::string backend_;
};

// ---- the arithmetic the CPU backends share

// The index of a reduction: 0 SUM (and AVG), 1 PRODUCT, 2 MIN, 3 MAX.
int reduce_op_index(ReduceOp op);
// data /= n over count elements of a floating dtype (ReduceOp.AVG after a SUM); op names the
// call for a dtype error.
void divide_by(void* data, int64_t count, Dtype dtype, int n, const char* op);

}  // namespace wick::distributed::detail
