// A ProcessGroup whose ranks are threads of this process: what the single-process
// DistributedDataParallel tests run their ranks over. Each rank's collectives are numbered in
// call order; a collective completes once every rank has called its k-th one, each rank then
// reducing the inputs all ranks gave at their call (on the device of the tensors, on the
// waiting thread's current stream). Only all_reduce, broadcast and barrier are there. Each rank keeps a log
// of its calls ("all_reduce AVG 8 float64").
#pragma once

#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "distributed/internal.h"
#include "wick/distributed.h"
#include "wick/wick.h"

namespace wick::testing {

class ThreadGroupHub {
 public:
  explicit ThreadGroupHub(int size) : size_(size) {}
  int size() const { return size_; }

  // Rank's input to collective id (a copy taken now).
  void deposit(int64_t id, int rank, const std::string& op, const Tensor& input) {
    Tensor copy = input.defined() ? input.clone() : Tensor();
    // Other ranks read the copy from their own threads and streams: it must be there first.
    if (copy.defined() && copy.is_cuda()) cuda::synchronize(copy.device().index());
    std::lock_guard<std::mutex> lock(mu_);
    Slot& s = slots_[id];
    if (s.inputs.empty()) {
      s.inputs.resize(size_t(size_));
      s.op = op;
    }
    if (s.op != op) s.mismatch = true;
    s.inputs[size_t(rank)] = std::move(copy);
    ++s.arrived;
    cv_.notify_all();
  }
  // Every rank's input to collective id, once all have come (DistributedError after 60 s).
  std::vector<Tensor> gather(int64_t id, const std::string& op) {
    std::unique_lock<std::mutex> lock(mu_);
    const bool ok = cv_.wait_for(lock, std::chrono::seconds(60), [&] { return slots_[id].arrived == size_; });
    if (!ok) throw DistributedError("[" + op + "] timed out waiting for the other ranks");
    if (slots_[id].mismatch) throw DistributedError("[" + op + "] ranks called different collectives");
    return slots_[id].inputs;
  }
  bool complete(int64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    return slots_[id].arrived == size_;
  }

 private:
  struct Slot {
    std::string op;
    std::vector<Tensor> inputs;
    int arrived = 0;
    bool mismatch = false;
  };
  int size_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<int64_t, Slot> slots_;
};

class ThreadWork final : public distributed::Work::Impl {
 public:
  ThreadWork(std::string op, std::shared_ptr<ThreadGroupHub> hub, int64_t id,
             std::function<void(const std::vector<Tensor>&)> finish)
      : Impl(std::move(op)), hub_(std::move(hub)), id_(id), finish_(std::move(finish)) {}
  bool is_completed() override { return done_ || hub_->complete(id_); }
  void wait() override {
    if (done_) return;
    auto inputs = hub_->gather(id_, op());
    NoGradGuard no_grad;
    finish_(inputs);
    done_ = true;
  }

 private:
  std::shared_ptr<ThreadGroupHub> hub_;
  int64_t id_;
  std::function<void(const std::vector<Tensor>&)> finish_;
  bool done_ = false;
};

class ThreadProcessGroup final : public distributed::ProcessGroup {
 public:
  ThreadProcessGroup(std::shared_ptr<ThreadGroupHub> hub, int rank, std::string backend = "mpi")
      : hub_(std::move(hub)), rank_(rank), backend_(std::move(backend)) {}

  std::string backend() const override { return backend_; }
  int rank() const override { return rank_; }
  int size() const override { return hub_->size(); }
  std::chrono::milliseconds timeout() const override { return std::chrono::seconds(60); }

  distributed::Work all_reduce(Tensor& tensor, distributed::ReduceOp op) override {
    static const char* names[] = {"SUM", "AVG", "PRODUCT", "MIN", "MAX"};
    log.push_back(std::string("all_reduce ") + names[int(op)] + " " + std::to_string(tensor.numel()) + " " +
                  dtype_name(tensor.dtype()));
    const int64_t id = next_++;
    hub_->deposit(id, rank_, "all_reduce", tensor);
    Tensor t = tensor;
    const int n = size();
    return make_work("all_reduce", id, [t, op, n](const std::vector<Tensor>& in) mutable {
      Tensor acc = in[0].clone();
      for (size_t r = 1; r < in.size(); ++r) {
        if (op == distributed::ReduceOp::MAX) acc = where(in[r] > acc, in[r], acc);
        else if (op == distributed::ReduceOp::MIN) acc = where(in[r] < acc, in[r], acc);
        else acc.add_(in[r]);
      }
      if (op == distributed::ReduceOp::AVG) acc.div_(double(n));
      t.copy_(acc);
    });
  }
  distributed::Work broadcast(Tensor& tensor, int src) override {
    log.push_back("broadcast " + std::to_string(tensor.numel()) + " " + dtype_name(tensor.dtype()));
    const int64_t id = next_++;
    hub_->deposit(id, rank_, "broadcast", tensor);
    Tensor t = tensor;
    return make_work("broadcast", id,
                     [t, src](const std::vector<Tensor>& in) mutable { t.copy_(in[size_t(src)]); });
  }
  distributed::Work barrier() override {
    log.push_back("barrier");
    const int64_t id = next_++;
    hub_->deposit(id, rank_, "barrier", Tensor());
    return make_work("barrier", id, [](const std::vector<Tensor>&) {});
  }
  distributed::Work reduce(Tensor&, int, distributed::ReduceOp) override { return unsupported("reduce"); }
  distributed::Work all_gather(std::vector<Tensor>&, const Tensor&) override {
    return unsupported("all_gather");
  }
  distributed::Work reduce_scatter(Tensor&, const std::vector<Tensor>&, distributed::ReduceOp) override {
    return unsupported("reduce_scatter");
  }
  distributed::Work send(const Tensor&, int, int) override { return unsupported("send"); }
  distributed::Work recv(Tensor&, int, int) override { return unsupported("recv"); }

  std::vector<std::string> log;

 private:
  static std::string dtype_name(Dtype d) {
    std::ostringstream os;
    os << d;
    return os.str();
  }
  distributed::Work make_work(const char* op, int64_t id, std::function<void(const std::vector<Tensor>&)> f) {
    return distributed::Work(std::make_shared<ThreadWork>(op, hub_, id, std::move(f)));
  }
  [[noreturn]] static distributed::Work unsupported(const char* op) {
    throw NotImplementedError(std::string("[") + op + "] not in the test group");
  }

  std::shared_ptr<ThreadGroupHub> hub_;
  int rank_;
  std::string backend_;
  int64_t next_ = 0;
};

// The groups of world_size thread ranks.
inline std::vector<std::shared_ptr<ThreadProcessGroup>> make_thread_groups(
    int world_size, const std::string& backend = "mpi") {
  auto hub = std::make_shared<ThreadGroupHub>(world_size);
  std::vector<std::shared_ptr<ThreadProcessGroup>> groups;
  for (int r = 0; r < world_size; ++r)
    groups.push_back(std::make_shared<ThreadProcessGroup>(hub, r, backend));
  return groups;
}

// Runs f(rank) on one thread per rank; the first exception of a rank is rethrown here.
inline void run_ranks(int world_size, const std::function<void(int)>& f) {
  std::vector<std::exception_ptr> errors(static_cast<size_t>(world_size));
  std::vector<std::thread> threads;
  for (int r = 0; r < world_size; ++r)
    threads.emplace_back([&, r] {
      try {
        f(r);
      } catch (...) {
        errors[size_t(r)] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace wick::testing
