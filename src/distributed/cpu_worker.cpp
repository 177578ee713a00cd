// The CPU backends' worker (cpu_worker.h).
#include "distributed/cpu_worker.h"

#include <type_traits>

#include "wick/error.h"

namespace wick::distributed::detail {

using ::wick::detail::message;

std::string CpuWorker::where() const {
  return "rank " + std::to_string(rank) + " of " + std::to_string(size) + ", " + backend_;
}

std::string CpuWorker::fatal(const char* op, const std::string& what) const {
  return message(op, what, " (", where(), "); the process group can no longer be used");
}

std::string CpuWorker::timed_out(const char* op) const {
  return message(op, "timed out after ", timeout.count(), " ms (", where(),
                 "); the process group can no longer be used");
}

void CpuWorker::check_usable(const char* op) {
  std::lock_guard<std::mutex> l(mu_);
  if (broken_)
    ::wick::detail::raise<DistributedError>(op, "the process group can no longer be used (", where(), "): ",
                                            broken_reason_);
}

void CpuWorker::fail_locked(const std::string& reason) {
  if (broken_) return;
  broken_ = true;
  broken_reason_ = reason;
}

void CpuWorker::fail(const std::string& reason) {
  std::lock_guard<std::mutex> l(mu_);
  fail_locked(reason);
}

std::string CpuWorker::transport_error(const char* op, const std::exception& e, Clock::duration) const {
  return fatal(op, e.what());
}

void CpuWorker::start() {
  worker_ = std::thread([self = shared_from_this()] { self->run(); });
}

std::shared_ptr<CpuWork> CpuWorker::enqueue(const char* op, std::vector<Tensor> outputs,
                                            std::vector<Tensor> inputs, std::function<void()> fn) {
  auto work = std::make_shared<CpuWork>(op, shared_from_this());
  work->outputs = std::move(outputs);
  work->keep = std::move(inputs);
  {
    std::lock_guard<std::mutex> l(mu_);
    queue_.push_back(Task{std::move(fn), work});
  }
  queue_cv_.notify_all();
  return work;
}

void CpuWorker::run_now(const std::shared_ptr<CpuWork>& work, std::function<void()> fn) {
  Task t{std::move(fn), work};
  std::unique_lock<std::mutex> l(mu_);
  execute(t, l);
}

void CpuWorker::run() {
  for (;;) {
    std::unique_lock<std::mutex> l(mu_);
    queue_cv_.wait(l, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;
    Task t = std::move(queue_.front());
    queue_.pop_front();
    running_ = &t;
    started_ = Clock::now();
    execute(t, l);
    running_ = nullptr;
    done_cv_.notify_all();
  }
}

void CpuWorker::execute(Task& t, std::unique_lock<std::mutex>& l) {
  const char* op = t.work->op().c_str();
  std::string error;
  if (broken_) {
    error = message(op, "the process group can no longer be used (", where(), "): ", broken_reason_);
  } else {
    l.unlock();
    auto start = Clock::now();
    try {
      t.fn();
    } catch (const Error& e) {
      error = e.what();
    } catch (const std::exception& e) {
      error = transport_error(op, e, Clock::now() - start);
    }
    l.lock();
    if (!error.empty()) fail_locked(error);
  }
  t.work->done_ = true;
  t.work->error_ = std::move(error);
  t.fn = nullptr;
  done_cv_.notify_all();
}

CpuWorker::Stopped CpuWorker::shutdown() {
  std::unique_lock<std::mutex> l(mu_);
  if (shut_) return Stopped::kBefore;
  shut_ = true;
  if (!bounded_ && broken_) {
    // A broken group's worker may still come back (the peers may yet join the collective).
    done_cv_.wait_for(l, std::chrono::seconds(1), [&] { return !running_ && queue_.empty(); });
  }
  stop_ = true;
  queue_cv_.notify_all();
  if (!bounded_ && (running_ || !queue_.empty())) {
    worker_.detach();
    return Stopped::kDetached;
  }
  l.unlock();
  if (worker_.joinable()) worker_.join();
  return Stopped::kJoined;
}

bool CpuWorker::busy() {
  std::lock_guard<std::mutex> l(mu_);
  return running_ != nullptr;
}

bool CpuWork::is_completed() {
  std::lock_guard<std::mutex> l(w_->mu_);
  if (done_ && !error_.empty()) throw DistributedError(error_);
  return done_;
}

void CpuWork::wait() {
  CpuWorker& w = *w_;
  std::unique_lock<std::mutex> l(w.mu_);
  if (w.bounded_) {
    // The transport bounds every call by the timeout; this is only a guard against a call that
    // overruns it by far.
    while (!done_) {
      w.done_cv_.wait_for(l, std::chrono::milliseconds(200));
      if (done_) break;
      if (w.running_ && w.running_->work.get() == this &&
          CpuWorker::Clock::now() - w.started_ > w.timeout + std::chrono::seconds(30)) {
        std::string msg = w.timed_out(op().c_str());
        w.fail_locked(msg);
        throw DistributedError(msg);
      }
    }
  } else if (!w.done_cv_.wait_for(l, w.timeout, [&] { return done_; })) {
    std::string msg = w.timed_out(op().c_str());
    w.fail_locked(msg);
    throw DistributedError(msg);
  }
  if (!error_.empty()) throw DistributedError(error_);
}

// ---- arithmetic

int reduce_op_index(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM:
    case ReduceOp::AVG:
      return 0;
    case ReduceOp::PRODUCT:
      return 1;
    case ReduceOp::MIN:
      return 2;
    case ReduceOp::MAX:
      return 3;
  }
  return 0;
}

void divide_by(void* data, int64_t count, Dtype dtype, int n, const char* op) {
  WICK_DISPATCH_FLOATING(dtype, op, [&]<class T>() {
    T* p = static_cast<T*>(data);
    for (int64_t i = 0; i < count; ++i) {
      if constexpr (std::is_floating_point_v<T>) p[i] = p[i] / T(n);
      else p[i] = T(float(p[i]) / float(n));
    }
  });
}

}  // namespace wick::distributed::detail
