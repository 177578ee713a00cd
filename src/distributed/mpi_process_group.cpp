// The "mpi" backend: CPU tensors over Open MPI (docs/design.md, section 12).
//
// Each group owns a communicator of its own and one worker thread that runs the group's
// collectives in call order with MPI's blocking calls; Work::wait waits for the worker with the
// group's timeout. A collective that does not finish in time leaves the worker stuck inside MPI:
// the group is then marked broken (every later call raises at once), the worker is never joined,
// and MPI is not finalized at exit. Point-to-point sends and receives are posted at once from the
// calling thread (MPI_Isend / MPI_Irecv) and completed by polling, so a ring of isend + irecv
// cannot deadlock behind the worker.
//
// float16 and bfloat16 reduce through MPI operations of wick's own that do each step's
// arithmetic in float and round back to 16 bits, as a reduction on 16-bit values does.
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <thread>
#include <type_traits>

#include "distributed/internal.h"
#include "distributed/mpi_runtime.h"
#include "distributed/store.h"

namespace wick::distributed::detail {

#ifndef WICK_HAVE_MPI

std::shared_ptr<ProcessGroup> make_mpi_group(const RankInfo&, const InitOptions&) {
  ::wick::detail::raise<NotImplementedError>(
      "init_process_group",
      "wick was built without MPI; install Open MPI (libopenmpi-dev) and "
      "rebuild to use the mpi backend");
}

void mpi_abort_job() { std::abort(); }

#else

using ::wick::detail::raise;
using Clock = std::chrono::steady_clock;

namespace {

class GroupState;

// Process-wide MPI state; never destroyed (it is used at exit).
struct Runtime {
  std::mutex mu;
  bool initialized_by_us = false;
  bool multiple = true;
  std::mutex call_mu;
  std::vector<std::weak_ptr<GroupState>> groups;
  int stuck_workers = 0;
  MPI_Datatype half_type = MPI_DATATYPE_NULL;
  MPI_Op half_ops[2][4] = {};  // [float16, bfloat16][SUM, PRODUCT, MIN, MAX]
};
Runtime& rt() {
  static Runtime* r = new Runtime;
  return *r;
}

void finalize_at_exit();

}  // namespace

std::unique_lock<std::mutex> mpi_lock() {
  if (rt().multiple) return {};
  return std::unique_lock<std::mutex>(rt().call_mu);
}

void mpi_check(int rc, const char* op, const std::string& context) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS)
    len = std::snprintf(msg, sizeof msg, "MPI error %d", rc);
  raise<DistributedError>(op, std::string(msg, size_t(len)), " (", context, ")");
}

void mpi_ensure_initialized(const char* op) {
  Runtime& r = rt();
  std::lock_guard<std::mutex> lock(r.mu);
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  WICK_CHECK(!finalized, DistributedError, op, "MPI was already finalized in this process");
  int provided = 0;
  if (!initialized) {
    int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    mpi_check(rc, op, "MPI_Init_thread");
    r.initialized_by_us = true;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    std::atexit(finalize_at_exit);
  } else {
    MPI_Query_thread(&provided);
  }
  r.multiple = provided >= MPI_THREAD_MULTIPLE;
}

namespace {

// ---- datatypes and reduction operations

template <class T, int K>
void half_op(void* in, void* inout, int* len, MPI_Datatype*) {
  const T* a = static_cast<const T*>(in);
  T* b = static_cast<T*>(inout);
  for (int i = 0; i < *len; ++i) {
    float x = float(a[i]), y = float(b[i]);
    float z = K == 0   ? x + y
              : K == 1 ? x * y
              : K == 2 ? (y < x || y != y ? y : x)
                       : (y > x || y != y ? y : x);
    if (x != x) z = x;  // NaN wins, as in torch.minimum / maximum
    b[i] = T(z);
  }
}

int op_index(ReduceOp op) {
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

void ensure_half_types() {
  Runtime& r = rt();
  std::lock_guard<std::mutex> lock(r.mu);
  if (r.half_type != MPI_DATATYPE_NULL) return;
  auto l = mpi_lock();
  MPI_Type_contiguous(2, MPI_BYTE, &r.half_type);
  MPI_Type_commit(&r.half_type);
  MPI_User_function* fns[2][4] = {
      {half_op<Half, 0>, half_op<Half, 1>, half_op<Half, 2>, half_op<Half, 3>},
      {half_op<BFloat16, 0>, half_op<BFloat16, 1>, half_op<BFloat16, 2>, half_op<BFloat16, 3>}};
  for (int d = 0; d < 2; ++d)
    for (int k = 0; k < 4; ++k) MPI_Op_create(fns[d][k], 1, &r.half_ops[d][k]);
}

MPI_Datatype mpi_type(Dtype t) {
  switch (t) {
    case kBool:
    case kUInt8:
      return MPI_UINT8_T;
    case kInt8:
      return MPI_INT8_T;
    case kInt16:
      return MPI_INT16_T;
    case kInt32:
      return MPI_INT32_T;
    case kInt64:
      return MPI_INT64_T;
    case kFloat16:
    case kBFloat16:
      ensure_half_types();
      return rt().half_type;
    case kFloat32:
      return MPI_FLOAT;
    case kFloat64:
      return MPI_DOUBLE;
  }
  return MPI_BYTE;
}

// bool: SUM and MAX are a logical or (MAX of 0/1 bytes), PRODUCT and MIN a logical and.
MPI_Op mpi_op(ReduceOp op, Dtype t) {
  if (t == kFloat16 || t == kBFloat16) {
    ensure_half_types();
    return rt().half_ops[t == kBFloat16][op_index(op)];
  }
  if (t == kBool) return op == ReduceOp::SUM || op == ReduceOp::MAX ? MPI_MAX : MPI_MIN;
  switch (op) {
    case ReduceOp::SUM:
    case ReduceOp::AVG:
      return MPI_SUM;
    case ReduceOp::PRODUCT:
      return MPI_PROD;
    case ReduceOp::MIN:
      return MPI_MIN;
    case ReduceOp::MAX:
      return MPI_MAX;
  }
  return MPI_SUM;
}

// data /= n over count elements of a floating dtype.
void divide(void* data, int64_t count, Dtype t, int n) {
  WICK_DISPATCH_FLOATING(t, "all_reduce", [&]<class T>() {
    T* p = static_cast<T*>(data);
    for (int64_t i = 0; i < count; ++i) {
      if constexpr (std::is_floating_point_v<T>) p[i] = p[i] / T(n);
      else p[i] = T(float(p[i]) / float(n));
    }
  });
}

// MPI counts are int: big buffers go in pieces.
constexpr int64_t kChunk = int64_t(1) << 30;

// ---- one group's state, shared by the group, its Works and its worker

struct Task {
  std::function<void()> fn;
  std::shared_ptr<class MpiWork> work;
};

class GroupState {
 public:
  std::mutex mu;
  std::condition_variable queue_cv, done_cv;
  std::deque<Task> queue;
  bool stop = false, busy = false, broken = false, shut = false;
  std::string broken_reason;
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, size = 1;
  std::chrono::milliseconds timeout{};
  std::thread worker;

  void check_usable(const char* op) {
    std::lock_guard<std::mutex> l(mu);
    if (broken)
      raise<DistributedError>(op, "the process group can no longer be used (rank ", rank, " of ", size,
                              ", mpi): ", broken_reason);
  }
  void run();
  // Stops the worker and frees the communicator, unless the worker is stuck in MPI. at_exit:
  // called by finalize_at_exit. Returns false when the worker is stuck.
  bool shutdown();
};

class MpiWork final : public Work::Impl {
 public:
  MpiWork(std::string op, std::shared_ptr<GroupState> st) : Impl(std::move(op)), st_(std::move(st)) {}
  bool is_completed() override {
    std::lock_guard<std::mutex> l(st_->mu);
    if (done_ && !error_.empty()) throw DistributedError(error_);
    return done_;
  }
  void wait() override {
    std::unique_lock<std::mutex> l(st_->mu);
    if (!st_->done_cv.wait_for(l, st_->timeout, [&] { return done_; })) {
      std::string msg = ::wick::detail::message(op().c_str(), "timed out after ", st_->timeout.count(),
                                                " ms (rank ", st_->rank, " of ", st_->size,
                                                ", mpi); the process group can no longer be used");
      if (!st_->broken) {
        st_->broken = true;
        st_->broken_reason = msg;
      }
      throw DistributedError(msg);
    }
    if (!error_.empty()) throw DistributedError(error_);
  }
  void finish(std::string error) {  // under st_->mu
    done_ = true;
    error_ = std::move(error);
  }
  std::vector<Tensor> keep;  // inputs in flight

 private:
  std::shared_ptr<GroupState> st_;
  bool done_ = false;
  std::string error_;
};

void GroupState::run() {
  for (;;) {
    std::unique_lock<std::mutex> l(mu);
    queue_cv.wait(l, [&] { return stop || !queue.empty(); });
    if (queue.empty()) return;
    Task t = std::move(queue.front());
    queue.pop_front();
    std::string error;
    if (broken) {
      error = ::wick::detail::message(t.work->op().c_str(), "the process group can no longer be used (rank ",
                                      rank, " of ", size, ", mpi): ", broken_reason);
    } else {
      busy = true;
      l.unlock();
      try {
        t.fn();
      } catch (const std::exception& e) {
        error = e.what();
      }
      l.lock();
      busy = false;
      if (!error.empty() && !broken) {
        broken = true;
        broken_reason = error;
      }
    }
    t.work->finish(std::move(error));
    t.fn = nullptr;
    done_cv.notify_all();
  }
}

bool GroupState::shutdown() {
  std::unique_lock<std::mutex> l(mu);
  if (shut) return !busy;
  shut = true;
  // A broken group's worker may still come back (the peers may yet join the collective).
  if (broken) done_cv.wait_for(l, std::chrono::seconds(1), [&] { return !busy && queue.empty(); });
  stop = true;
  queue_cv.notify_all();
  if (busy || !queue.empty()) {
    worker.detach();
    std::lock_guard<std::mutex> rl(rt().mu);
    ++rt().stuck_workers;
    return false;
  }
  l.unlock();
  if (worker.joinable()) worker.join();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && comm != MPI_COMM_NULL) {
    auto ml = mpi_lock();
    MPI_Comm_free(&comm);
  }
  return true;
}

void finalize_at_exit() {
  Runtime& r = rt();
  std::vector<std::shared_ptr<GroupState>> live;
  {
    std::lock_guard<std::mutex> l(r.mu);
    for (auto& w : r.groups)
      if (auto s = w.lock()) live.push_back(std::move(s));
  }
  bool stuck = false;
  for (auto& s : live) stuck |= !s->shutdown();
  std::lock_guard<std::mutex> l(r.mu);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!stuck && r.stuck_workers == 0 && r.initialized_by_us && !finalized) MPI_Finalize();
}

// Point-to-point: requests posted at once, completed by polling MPI_Testall.
class P2PWork final : public Work::Impl {
 public:
  P2PWork(std::string op, std::shared_ptr<GroupState> st) : Impl(std::move(op)), st_(std::move(st)) {}
  bool is_completed() override {
    if (done_) return true;
    int flag = 0;
    {
      auto l = mpi_lock();
      check(MPI_Testall(int(reqs.size()), reqs.data(), &flag, MPI_STATUSES_IGNORE));
    }
    done_ = flag != 0;
    return done_;
  }
  void wait() override {
    auto deadline = Clock::now() + st_->timeout;
    while (!is_completed()) {
      if (Clock::now() > deadline) {
        std::string msg = ::wick::detail::message(op().c_str(), "timed out after ", st_->timeout.count(),
                                                  " ms (rank ", st_->rank, " of ", st_->size,
                                                  ", mpi); the process group can no longer be used");
        std::lock_guard<std::mutex> l(st_->mu);
        if (!st_->broken) {
          st_->broken = true;
          st_->broken_reason = msg;
        }
        throw DistributedError(msg);
      }
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
  std::vector<MPI_Request> reqs;
  Tensor keep;

 private:
  void check(int rc) {
    if (rc == MPI_SUCCESS) return;
    std::string ctx = "rank " + std::to_string(st_->rank) + " of " + std::to_string(st_->size) + ", mpi";
    try {
      mpi_check(rc, op().c_str(), ctx);
    } catch (const DistributedError& e) {
      std::lock_guard<std::mutex> l(st_->mu);
      if (!st_->broken) {
        st_->broken = true;
        st_->broken_reason = e.what();
      }
      throw;
    }
  }
  std::shared_ptr<GroupState> st_;
  bool done_ = false;
};

// ---- the group

void call_on(GroupState* s, int rc, const char* op) {
  if (rc != MPI_SUCCESS)
    mpi_check(rc, op, "rank " + std::to_string(s->rank) + " of " + std::to_string(s->size) + ", mpi");
}

class MpiProcessGroup final : public BackendGroup {
 public:
  // Takes comm (rank and size from it); starts the worker.
  MpiProcessGroup(std::shared_ptr<GroupState> st) : BackendGroup(Device(kCPU)), st_(std::move(st)) {}
  ~MpiProcessGroup() override { st_->shutdown(); }

  std::string backend() const override { return "mpi"; }
  int rank() const override { return st_->rank; }
  int size() const override { return st_->size; }
  std::chrono::milliseconds timeout() const override { return st_->timeout; }

  Work all_reduce(Tensor& tensor, ReduceOp op) override {
    const char* name = "all_reduce";
    check_tensor(tensor, name, "tensor");
    check_reduce_op(op, tensor.dtype(), name);
    Tensor t = tensor;
    int world = size();
    return enqueue(name, {t}, {t}, [=, s = st_.get()] {
      MPI_Datatype type = mpi_type(t.dtype());
      MPI_Op mop = mpi_op(op, t.dtype());
      char* p = static_cast<char*>(t.data_ptr());
      int64_t es = t.element_size();
      for (int64_t off = 0; off < t.numel(); off += kChunk) {
        int n = int(std::min(kChunk, t.numel() - off));
        call_on(s, MPI_Allreduce(MPI_IN_PLACE, p + off * es, n, type, mop, s->comm), name);
      }
      if (op == ReduceOp::AVG) divide(p, t.numel(), t.dtype(), world);
    });
  }

  Work broadcast(Tensor& tensor, int src) override {
    const char* name = "broadcast";
    check_tensor(tensor, name, "tensor");
    check_rank(src, name, "src");
    Tensor t = tensor;
    return enqueue(name, {t}, {t}, [=, s = st_.get()] {
      char* p = static_cast<char*>(t.data_ptr());
      int64_t es = t.element_size();
      for (int64_t off = 0; off < t.numel(); off += kChunk) {
        int n = int(std::min(kChunk, t.numel() - off));
        call_on(s, MPI_Bcast(p + off * es, n, mpi_type(t.dtype()), src, s->comm), name);
      }
    });
  }

  Work reduce(Tensor& tensor, int dst, ReduceOp op) override {
    const char* name = "reduce";
    check_tensor(tensor, name, "tensor");
    check_rank(dst, name, "dst");
    check_reduce_op(op, tensor.dtype(), name);
    Tensor t = tensor;
    int world = size(), me = rank();
    return enqueue(name, {t}, {t}, [=, s = st_.get()] {
      MPI_Datatype type = mpi_type(t.dtype());
      MPI_Op mop = mpi_op(op, t.dtype());
      char* p = static_cast<char*>(t.data_ptr());
      int64_t es = t.element_size();
      for (int64_t off = 0; off < t.numel(); off += kChunk) {
        int n = int(std::min(kChunk, t.numel() - off));
        void* q = p + off * es;
        call_on(s,
                MPI_Reduce(me == dst ? MPI_IN_PLACE : q, me == dst ? q : nullptr, n, type, mop, dst, s->comm),
                name);
      }
      if (op == ReduceOp::AVG && me == dst) divide(p, t.numel(), t.dtype(), world);
    });
  }

  Work all_gather(std::vector<Tensor>& outputs, const Tensor& input) override {
    const char* name = "all_gather";
    check_tensor(input, name, "tensor");
    check_list(outputs, input, name, "tensor_list");
    check_counts(outputs, name, "tensor_list");
    std::vector<Tensor> outs = outputs;
    Tensor in = input;
    return enqueue(name, outs, {in}, [=, s = st_.get()] {
      auto [counts, displs, total] = layout(outs);
      int64_t es = in.element_size();
      std::vector<char> buf(size_t(total * es));
      MPI_Datatype type = mpi_type(in.dtype());
      call_on(s,
              MPI_Allgatherv(in.data_ptr(), int(in.numel()), type, buf.data(), counts.data(), displs.data(),
                             type, s->comm),
              name);
      for (size_t r = 0; r < outs.size(); ++r)
        if (counts[r]) std::memcpy(outs[r].data_ptr(), buf.data() + displs[r] * es, size_t(counts[r] * es));
    });
  }

  Work reduce_scatter(Tensor& output, const std::vector<Tensor>& inputs, ReduceOp op) override {
    const char* name = "reduce_scatter";
    check_tensor(output, name, "output");
    check_reduce_op(op, output.dtype(), name);
    check_list(inputs, output, name, "input_list");
    check_counts(inputs, name, "input_list");
    std::vector<Tensor> ins = inputs;
    Tensor out = output;
    int world = size();
    return enqueue(name, {out}, ins, [=, s = st_.get()] {
      auto [counts, displs, total] = layout(ins);
      int64_t es = out.element_size();
      std::vector<char> buf(size_t(total * es));
      for (size_t r = 0; r < ins.size(); ++r)
        if (counts[r]) std::memcpy(buf.data() + displs[r] * es, ins[r].data_ptr(), size_t(counts[r] * es));
      call_on(s,
              MPI_Reduce_scatter(buf.data(), out.data_ptr(), counts.data(), mpi_type(out.dtype()),
                                 mpi_op(op, out.dtype()), s->comm),
              name);
      if (op == ReduceOp::AVG) divide(out.data_ptr(), out.numel(), out.dtype(), world);
    });
  }

  Work barrier() override {
    st_->check_usable("barrier");
    return enqueue("barrier", {}, {}, [s = st_.get()] { call_on(s, MPI_Barrier(s->comm), "barrier"); });
  }

  Work send(const Tensor& tensor, int dst, int tag) override {
    return p2p("send", tensor, dst, tag, "dst", true);
  }
  Work recv(Tensor& tensor, int src, int tag) override { return p2p("recv", tensor, src, tag, "src", false); }

 private:
  void call(int rc, const char* op) { call_on(st_.get(), rc, op); }

  // The group usable, then the arguments' checks of every backend (internal.h).
  void check_tensor(const Tensor& t, const char* op, const char* what) {
    st_->check_usable(op);
    BackendGroup::check_tensor(t, op, what);
  }
  // MPI counts elements in int.
  static void check_counts(const std::vector<Tensor>& list, const char* op, const char* what) {
    for (size_t r = 0; r < list.size(); ++r)
      WICK_CHECK(list[r].numel() <= INT32_MAX, ValueError, op, what, "[", r, "] has more than 2^31-1 elements");
  }

  struct Layout {
    std::vector<int> counts, displs;
    int64_t total;
  };
  static Layout layout(const std::vector<Tensor>& list) {
    Layout l{{}, {}, 0};
    for (const Tensor& t : list) {
      WICK_CHECK(l.total <= INT32_MAX, ValueError, "all_gather", "more than 2^31-1 elements in all");
      l.counts.push_back(int(t.numel()));
      l.displs.push_back(int(l.total));
      l.total += t.numel();
    }
    return l;
  }

  Work enqueue(const char* op, std::vector<Tensor> outputs, std::vector<Tensor> inputs,
               std::function<void()> fn) {
    auto work = std::make_shared<MpiWork>(op, st_);
    work->outputs = std::move(outputs);
    work->keep = std::move(inputs);
    {
      std::lock_guard<std::mutex> l(st_->mu);
      st_->queue.push_back(Task{std::move(fn), work});
    }
    st_->queue_cv.notify_one();
    return Work(work);
  }

  Work p2p(const char* op, const Tensor& tensor, int peer, int tag, const char* what, bool is_send) {
    check_tensor(tensor, op, "tensor");
    check_rank(peer, op, what, /*not_self=*/true);
    WICK_CHECK(tag >= 0, ValueError, op, "tag ", tag, " must not be negative");
    auto work = std::make_shared<P2PWork>(op, st_);
    work->keep = tensor;
    if (!is_send) work->outputs = {tensor};
    char* p = static_cast<char*>(tensor.data_ptr());
    int64_t nbytes = tensor.nbytes();
    auto l = mpi_lock();
    for (int64_t off = 0; off < nbytes || (off == 0 && nbytes == 0); off += kChunk) {
      int n = int(std::min(kChunk, nbytes - off));
      MPI_Request req;
      int rc = is_send ? MPI_Isend(p + off, n, MPI_BYTE, peer, tag, st_->comm, &req)
                       : MPI_Irecv(p + off, n, MPI_BYTE, peer, tag, st_->comm, &req);
      call(rc, op);
      work->reqs.push_back(req);
      if (nbytes == 0) break;
    }
    return Work(work);
  }

  std::shared_ptr<GroupState> st_;
};

// Makes the group's state around comm and starts its worker.
std::shared_ptr<GroupState> new_state(std::chrono::milliseconds timeout) {
  auto st = std::make_shared<GroupState>();
  st->timeout = timeout;
  st->worker = std::thread([st] { st->run(); });  // the worker keeps the state alive
  std::lock_guard<std::mutex> l(rt().mu);
  std::erase_if(rt().groups, [](auto& w) { return w.expired(); });
  rt().groups.push_back(st);
  return st;
}

// Runs fn on the state's worker and waits for it with the timeout (DistributedError naming
// init_process_group, and a broken state, when it does not finish).
// awaited: what a timeout waited for, for its message.
void run_on_worker(const std::shared_ptr<GroupState>& st, std::function<void()> fn,
                   const std::string& awaited) {
  auto work = std::make_shared<MpiWork>("init_process_group", st);
  {
    std::lock_guard<std::mutex> l(st->mu);
    st->queue.push_back(Task{std::move(fn), work});
  }
  st->queue_cv.notify_one();
  try {
    work->wait();
  } catch (const DistributedError& e) {
    if (work->is_completed()) throw;
    raise<DistributedError>("init_process_group", "rank ", st->rank, " of ", st->size, " timed out after ",
                            st->timeout.count(), " ms waiting for ", awaited);
  }
}

}  // namespace

std::shared_ptr<ProcessGroup> make_mpi_group(const RankInfo& info, const InitOptions& options) {
  const char* op = "init_process_group";
  mpi_ensure_initialized(op);
  auto st = new_state(options.timeout);
  std::string where =
      "rank " + std::to_string(info.rank) + " of " + std::to_string(info.world_size) + ", mpi";
  st->rank = info.rank;
  st->size = info.world_size;
  // The group owns its state from here: a failure below shuts the worker down (or leaves it
  // detached when it is stuck in MPI).
  auto group = std::make_shared<MpiProcessGroup>(st);
  GroupState* s = st.get();
  if (info.launched_by_mpirun || info.world_size == 1) {
    MPI_Comm base = info.launched_by_mpirun ? MPI_COMM_WORLD : MPI_COMM_SELF;
    int base_rank = 0, base_size = 1;
    MPI_Comm_rank(base, &base_rank);
    MPI_Comm_size(base, &base_size);
    WICK_CHECK(base_rank == info.rank && base_size == info.world_size, ValueError, op, "rank ", info.rank,
               " of world size ", info.world_size, " (", info.source, ") does not match MPI's rank ",
               base_rank, " of ", base_size);
    run_on_worker(
        st,
        [=] {
          auto l = mpi_lock();
          mpi_check(MPI_Comm_dup(base, &s->comm), op, where);
          MPI_Comm_set_errhandler(s->comm, MPI_ERRORS_RETURN);
        },
        "every rank to copy MPI's communicator");
    return group;
  }

  // Singletons (started by wick-launch or by hand): they meet through ompi-server. Rank 0 opens
  // a port and publishes its name in the TCP store; the group then grows one rank at a time in
  // rank order (current members accept, the newcomer connects, all merge).
  const char* uri = std::getenv("OMPI_MCA_pmix_server_uri");
  WICK_CHECK(
      uri && *uri, DistributedError, op, "rank ", info.rank, " of ", info.world_size,
      ": processes not started by mpirun meet through Open MPI's ompi-server, and "
      "OMPI_MCA_pmix_server_uri is not set; launch with mpirun or wick-launch (which starts ompi-server)");
  auto store = std::make_shared<TcpStore>(info.master_addr, info.master_port, info.rank, info.world_size,
                                          options.timeout, op);
  int rank = info.rank, world = info.world_size;
  run_on_worker(
      st,
      [=] {
        char port[MPI_MAX_PORT_NAME] = {};
        if (rank == 0) {
          auto l = mpi_lock();
          mpi_check(MPI_Open_port(MPI_INFO_NULL, port), op, where + ", MPI_Open_port");
        }
        if (rank == 0) store->set("mpi/port", port, op);
        else std::strncpy(port, store->get("mpi/port", op).c_str(), MPI_MAX_PORT_NAME - 1);
        MPI_Comm comm = MPI_COMM_SELF;
        std::vector<MPI_Comm> to_free;
        if (rank > 0) {
          // Rank r joins once ranks 0..r-1 form the group.
          if (rank > 1) store->wait("mpi/joined/" + std::to_string(rank - 1), op);
          MPI_Comm inter;
          {
            auto l = mpi_lock();
            mpi_check(MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter), op,
                      where + ", MPI_Comm_connect");
            mpi_check(MPI_Intercomm_merge(inter, 1, &comm), op, where + ", MPI_Intercomm_merge");
          }
          to_free.push_back(inter);
          to_free.push_back(comm);
          if (rank + 1 < world) store->set("mpi/joined/" + std::to_string(rank), "", op);
        }
        for (;;) {
          int n = 0;
          MPI_Comm_size(comm, &n);
          if (n == world) break;
          MPI_Comm inter, merged;
          {
            auto l = mpi_lock();
            mpi_check(MPI_Comm_accept(port, MPI_INFO_NULL, 0, comm, &inter), op, where + ", MPI_Comm_accept");
            mpi_check(MPI_Intercomm_merge(inter, 0, &merged), op, where + ", MPI_Intercomm_merge");
          }
          to_free.push_back(inter);
          to_free.push_back(merged);
          comm = merged;
        }
        auto l = mpi_lock();
        mpi_check(MPI_Comm_split(comm, 0, rank, &s->comm), op, where + ", MPI_Comm_split");
        MPI_Comm_set_errhandler(s->comm, MPI_ERRORS_RETURN);
        for (MPI_Comm& c : to_free) MPI_Comm_free(&c);
        if (rank == 0) MPI_Close_port(port);
      },
      "the other ranks to connect through ompi-server (MPI_Comm_accept / MPI_Comm_connect)");
  // Every rank has its communicator before rank 0 stops serving the store.
  run_on_worker(
      st,
      [s, op, where, keep_store = store] {
        auto l = mpi_lock();
        mpi_check(MPI_Barrier(s->comm), op, where + ", MPI_Barrier");
      },
      "every rank to finish connecting");
  return group;
}

void mpi_abort_job() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, EXIT_FAILURE);
  std::abort();
}

#endif  // WICK_HAVE_MPI

}  // namespace wick::distributed::detail
