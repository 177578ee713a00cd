// The ranks' first exchange of bytes (internal.h's Bootstrap): over MPI_COMM_WORLD under
// mpirun, else over the TCP store. Every call waits at most the timeout.
#include <algorithm>
#include <cstring>
#include <thread>

#include "distributed/internal.h"
#include "distributed/mpi_runtime.h"
#include "distributed/store.h"

namespace wick::distributed::detail {
namespace {

// One process: nothing to exchange.
class LocalBootstrap final : public Bootstrap {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string broadcast(const std::string& bytes, int, const char*) override { return bytes; }
  std::vector<std::string> all_gather(const std::string& bytes, const char*) override { return {bytes}; }
  void barrier(const char*) override {}
};

class StoreBootstrap final : public Bootstrap {
 public:
  StoreBootstrap(const RankInfo& info, std::chrono::milliseconds timeout)
      : store_(info.master_addr, info.master_port, info.rank, info.world_size, timeout,
               "init_process_group") {}
  // Rank 0 serves the store: it waits (at most the timeout, 30 s at most) until every other
  // rank is done with it, so that none loses the store in the middle of its last call.
  ~StoreBootstrap() override {
    try {
      if (rank() != 0) {
        store_.add("bootstrap/left", 1, "destroy_process_group");
        return;
      }
      auto deadline = std::chrono::steady_clock::now() +
                      std::min<std::chrono::milliseconds>(store_.timeout(), std::chrono::seconds(30));
      while (store_.add("bootstrap/left", 0, "destroy_process_group") < size() - 1 &&
             std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    } catch (const Error&) {
      // The store is gone or a rank died: nothing more to wait for.
    }
  }
  int rank() const override { return store_.rank(); }
  int size() const override { return store_.world_size(); }

  std::string broadcast(const std::string& bytes, int root, const char* op) override {
    std::string prefix = next();
    if (rank() == root) store_.set(prefix + std::to_string(root), bytes, op);
    return store_.get(prefix + std::to_string(root), op);
  }
  std::vector<std::string> all_gather(const std::string& bytes, const char* op) override {
    std::string prefix = next();
    store_.set(prefix + std::to_string(rank()), bytes, op);
    std::vector<std::string> out(static_cast<size_t>(size()));
    for (int r = 0; r < size(); ++r)
      out[size_t(r)] = r == rank() ? bytes : store_.get(prefix + std::to_string(r), op);
    return out;
  }
  void barrier(const char* op) override {
    std::string prefix = next();
    if (store_.add(prefix + "count", 1, op) == size()) store_.set(prefix + "done", "", op);
    store_.wait(prefix + "done", op);
  }

 private:
  std::string next() { return "bootstrap/" + std::to_string(seq_++) + "/"; }
  TcpStore store_;
  int64_t seq_ = 0;
};

#ifdef WICK_HAVE_MPI
// Non-blocking collectives on a copy of MPI_COMM_WORLD, polled until done or the deadline.
class MpiBootstrap final : public Bootstrap {
 public:
  MpiBootstrap(const RankInfo& info, std::chrono::milliseconds timeout) : timeout_(timeout) {
    const char* op = "init_process_group";
    mpi_ensure_initialized(op);
    MPI_Request req;
    {
      auto l = mpi_lock();
      mpi_check(MPI_Comm_idup(MPI_COMM_WORLD, &comm_, &req), op, "copying MPI_COMM_WORLD");
    }
    finish(req, op, "every rank to start");
    auto l = mpi_lock();
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  ~MpiBootstrap() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && comm_ != MPI_COMM_NULL && !timed_out_) {
      auto l = mpi_lock();
      MPI_Comm_free(&comm_);
    }
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  std::string broadcast(const std::string& bytes, int root, const char* op) override {
    int64_t n = int64_t(bytes.size());
    MPI_Request req;
    {
      auto l = mpi_lock();
      mpi_check(MPI_Ibcast(&n, 1, MPI_INT64_T, root, comm_, &req), op, "bootstrap broadcast");
    }
    finish(req, op, "the bootstrap broadcast");
    std::string out = rank_ == root ? bytes : std::string(size_t(n), '\0');
    {
      auto l = mpi_lock();
      mpi_check(MPI_Ibcast(out.data(), int(n), MPI_BYTE, root, comm_, &req), op, "bootstrap broadcast");
    }
    finish(req, op, "the bootstrap broadcast");
    return out;
  }
  std::vector<std::string> all_gather(const std::string& bytes, const char* op) override {
    int n = int(bytes.size());
    std::vector<int> counts(static_cast<size_t>(size_)), displs(static_cast<size_t>(size_));
    MPI_Request req;
    {
      auto l = mpi_lock();
      mpi_check(MPI_Iallgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, comm_, &req), op,
                "bootstrap all_gather");
    }
    finish(req, op, "the bootstrap all_gather");
    int total = 0;
    for (int r = 0; r < size_; ++r) displs[size_t(r)] = total, total += counts[size_t(r)];
    std::string all(size_t(total), '\0');
    {
      auto l = mpi_lock();
      mpi_check(MPI_Iallgatherv(bytes.data(), n, MPI_BYTE, all.data(), counts.data(), displs.data(), MPI_BYTE,
                                comm_, &req),
                op, "bootstrap all_gather");
    }
    finish(req, op, "the bootstrap all_gather");
    std::vector<std::string> out;
    for (int r = 0; r < size_; ++r)
      out.push_back(all.substr(size_t(displs[size_t(r)]), size_t(counts[size_t(r)])));
    return out;
  }
  void barrier(const char* op) override {
    MPI_Request req;
    {
      auto l = mpi_lock();
      mpi_check(MPI_Ibarrier(comm_, &req), op, "bootstrap barrier");
    }
    finish(req, op, "the bootstrap barrier");
  }

 private:
  void finish(MPI_Request& req, const char* op, const char* what) {
    auto deadline = std::chrono::steady_clock::now() + timeout_;
    for (;;) {
      int done = 0;
      {
        auto l = mpi_lock();
        mpi_check(MPI_Test(&req, &done, MPI_STATUS_IGNORE), op, what);
      }
      if (done) return;
      if (std::chrono::steady_clock::now() > deadline) {
        timed_out_ = true;
        ::wick::detail::raise<DistributedError>(op, "rank ", rank_, " of ", size_, " timed out after ",
                                                timeout_.count(), " ms waiting for ", what, " (mpirun)");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }

  std::chrono::milliseconds timeout_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  bool timed_out_ = false;
};
#endif

}  // namespace

std::unique_ptr<Bootstrap> make_bootstrap(const RankInfo& info, std::chrono::milliseconds timeout) {
  if (info.world_size == 1) return std::make_unique<LocalBootstrap>();
#ifdef WICK_HAVE_MPI
  if (info.launched_by_mpirun) return std::make_unique<MpiBootstrap>(info, timeout);
#endif
  return std::make_unique<StoreBootstrap>(info, timeout);
}

}  // namespace wick::distributed::detail
