// The "mpi" backend: CPU tensors over Open MPI (docs/design.md, section 12).
//
// Each group owns a communicator of its own and one worker thread (cpu_worker.h) that runs the
// group's collectives in call order with MPI's blocking calls; Work::wait waits for the worker with the
// group's timeout. A collective that does not finish in time leaves the worker stuck inside MPI:
// the group is then marked broken (every later call raises at once), the worker is never joined,
// and MPI is not finalized at exit. Point-to-point sends and receives are posted at once from the
// calling thread (MPI_Isend / MPI_Irecv) and completed by polling, so a ring of isend + irecv
// cannot deadlock behind the worker.
//
// float16 and bfloat16 reduce through MPI operations of wick's own that do each step's
// arithmetic in float and round back to 16 bits, as a reduction on 16-bit values does.
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>
#include <type_traits>

#include "distributed/cpu_worker.h"
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

std::shared_ptr<ProcessGroup> make_mpi_subgroup(const std::shared_ptr<ProcessGroup>&, const std::vector<int>&,
                                               const InitOptions&) {
  ::wick::detail::raise<NotImplementedError>(
      "createProcessGroupMPI",
      "wick was built without MPI; install Open MPI (libopenmpi-dev) and rebuild to use the mpi backend");
}

void mpi_abort_job() { std::abort(); }

#else

using ::wick::detail::raise;
using Clock = std::chrono::steady_clock;

namespace {

class MpiState;

// Process-wide MPI state; never destroyed (it is used at exit).
struct Runtime {
  std::mutex mu;
  bool initialized_by_us = false;
  bool multiple = true;
  std::mutex call_mu;
  std::vector<std::weak_ptr<MpiState>> groups;
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
    return rt().half_ops[t == kBFloat16][reduce_op_index(op)];
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

// MPI counts are int: big buffers go in pieces.
constexpr int64_t kChunk = int64_t(1) << 30;

// ---- one group's state: the worker (cpu_worker.h) with the group's communicator

class MpiState final : public CpuWorker {
 public:
  MpiState() : CpuWorker("mpi", /*bounded=*/false) {}
  MPI_Comm comm = MPI_COMM_NULL;
  // Stops the worker and frees the communicator, unless the worker is stuck in MPI (then
  // false).
  bool release();
};

bool MpiState::release() {
  switch (shutdown()) {
    case Stopped::kBefore:
      return !busy();
    case Stopped::kDetached: {
      std::lock_guard<std::mutex> rl(rt().mu);
      ++rt().stuck_workers;
      return false;
    }
    case Stopped::kJoined:
      break;
  }
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
  std::vector<std::shared_ptr<MpiState>> live;
  {
    std::lock_guard<std::mutex> l(r.mu);
    for (auto& w : r.groups)
      if (auto s = w.lock()) live.push_back(std::move(s));
  }
  bool stuck = false;
  for (auto& s : live) stuck |= !s->release();
  std::lock_guard<std::mutex> l(r.mu);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!stuck && r.stuck_workers == 0 && r.initialized_by_us && !finalized) MPI_Finalize();
}

// Point-to-point: requests posted at once, completed by polling MPI_Testall.
class P2PWork final : public Work::Impl {
 public:
  P2PWork(std::string op, std::shared_ptr<MpiState> st) : Impl(std::move(op)), st_(std::move(st)) {}
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
        std::string msg = st_->timed_out(op().c_str());
        st_->fail(msg);
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
    try {
      mpi_check(rc, op().c_str(), st_->where());
    } catch (const DistributedError& e) {
      st_->fail(e.what());
      throw;
    }
  }
  std::shared_ptr<MpiState> st_;
  bool done_ = false;
};

// ---- the group

void call_on(MpiState* s, int rc, const char* op) {
  if (rc != MPI_SUCCESS) mpi_check(rc, op, s->where());
}

class MpiProcessGroup final : public CpuGroup<MpiState> {
 public:
  explicit MpiProcessGroup(std::shared_ptr<MpiState> st) : CpuGroup("mpi", std::move(st)) {}
  ~MpiProcessGroup() override { st_->release(); }
  const std::shared_ptr<MpiState>& state() const { return st_; }

 protected:
  std::function<void()> all_reduce_fn(Tensor t, ReduceOp op) override {
    return [=, s = st_.get(), world = size()] {
      const char* name = "all_reduce";
      MPI_Datatype type = mpi_type(t.dtype());
      MPI_Op mop = mpi_op(op, t.dtype());
      char* p = static_cast<char*>(t.data_ptr());
      int64_t es = t.element_size();
      for (int64_t off = 0; off < t.numel(); off += kChunk) {
        int n = int(std::min(kChunk, t.numel() - off));
        call_on(s, MPI_Allreduce(MPI_IN_PLACE, p + off * es, n, type, mop, s->comm), name);
      }
      if (op == ReduceOp::AVG) divide_by(p, t.numel(), t.dtype(), world, name);
    };
  }

  std::function<void()> broadcast_fn(Tensor t, int src) override {
    return [=, s = st_.get()] {
      char* p = static_cast<char*>(t.data_ptr());
      int64_t es = t.element_size();
      for (int64_t off = 0; off < t.numel(); off += kChunk) {
        int n = int(std::min(kChunk, t.numel() - off));
        call_on(s, MPI_Bcast(p + off * es, n, mpi_type(t.dtype()), src, s->comm), "broadcast");
      }
    };
  }

  std::function<void()> reduce_fn(Tensor t, int dst, ReduceOp op) override {
    return [=, s = st_.get(), world = size(), me = rank()] {
      const char* name = "reduce";
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
      if (op == ReduceOp::AVG && me == dst) divide_by(p, t.numel(), t.dtype(), world, name);
    };
  }

  std::function<void()> all_gather_fn(std::vector<Tensor> outs, Tensor in) override {
    const char* name = "all_gather";
    check_counts(outs, name, "tensor_list");
    return [=, s = st_.get()] {
      auto [counts, displs, total] = layout(outs, name);
      int64_t es = in.element_size();
      std::vector<char> buf(size_t(total * es));
      MPI_Datatype type = mpi_type(in.dtype());
      call_on(s,
              MPI_Allgatherv(in.data_ptr(), int(in.numel()), type, buf.data(), counts.data(), displs.data(),
                             type, s->comm),
              name);
      for (size_t r = 0; r < outs.size(); ++r)
        if (counts[r]) std::memcpy(outs[r].data_ptr(), buf.data() + displs[r] * es, size_t(counts[r] * es));
    };
  }

  std::function<void()> reduce_scatter_fn(Tensor out, std::vector<Tensor> ins, ReduceOp op) override {
    const char* name = "reduce_scatter";
    check_counts(ins, name, "input_list");
    return [=, s = st_.get(), world = size()] {
      auto [counts, displs, total] = layout(ins, name);
      int64_t es = out.element_size();
      std::vector<char> buf(size_t(total * es));
      for (size_t r = 0; r < ins.size(); ++r)
        if (counts[r]) std::memcpy(buf.data() + displs[r] * es, ins[r].data_ptr(), size_t(counts[r] * es));
      call_on(s,
              MPI_Reduce_scatter(buf.data(), out.data_ptr(), counts.data(), mpi_type(out.dtype()),
                                 mpi_op(op, out.dtype()), s->comm),
              name);
      if (op == ReduceOp::AVG) divide_by(out.data_ptr(), out.numel(), out.dtype(), world, name);
    };
  }

  std::function<void()> barrier_fn() override {
    return [s = st_.get()] { call_on(s, MPI_Barrier(s->comm), "barrier"); };
  }

  // MPI_Isend / MPI_Irecv at once; the Work polls them.
  Work post(const char* op, const Tensor& tensor, int peer, int tag, bool is_send) override {
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
      call_on(st_.get(), rc, op);
      work->reqs.push_back(req);
      if (nbytes == 0) break;
    }
    return Work(work);
  }

 private:
  // MPI counts elements in int.
  static void check_counts(const std::vector<Tensor>& list, const char* op, const char* what) {
    for (size_t r = 0; r < list.size(); ++r)
      WICK_CHECK(list[r].numel() <= INT32_MAX, ValueError, op, what, "[", r, "] has more than 2^31-1 elements");
  }

  struct Layout {
    std::vector<int> counts, displs;
    int64_t total;
  };
  static Layout layout(const std::vector<Tensor>& list, const char* op) {
    Layout l{{}, {}, 0};
    for (const Tensor& t : list) {
      WICK_CHECK(l.total <= INT32_MAX, ValueError, op, "more than 2^31-1 elements in all");
      l.counts.push_back(int(t.numel()));
      l.displs.push_back(int(l.total));
      l.total += t.numel();
    }
    return l;
  }
};

// Makes a group's state and starts its worker.
std::shared_ptr<MpiState> new_state(const RankInfo& info, std::chrono::milliseconds timeout) {
  auto st = std::make_shared<MpiState>();
  st->rank = info.rank;
  st->size = info.world_size;
  st->timeout = timeout;
  st->start();
  std::lock_guard<std::mutex> l(rt().mu);
  std::erase_if(rt().groups, [](auto& w) { return w.expired(); });
  rt().groups.push_back(st);
  return st;
}

// Runs fn on the state's worker and waits for it with the timeout (DistributedError naming
// init_process_group, and a broken state, when it does not finish).
// awaited: what a timeout waited for, for its message.
void run_on_worker(const std::shared_ptr<MpiState>& st, std::function<void()> fn, const std::string& awaited) {
  auto work = st->enqueue("init_process_group", {}, {}, std::move(fn));
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
  auto st = new_state(info, options.timeout);
  std::string where = st->where();
  // The group owns its state from here: a failure below shuts the worker down (or leaves it
  // detached when it is stuck in MPI).
  auto group = std::make_shared<MpiProcessGroup>(st);
  MpiState* s = st.get();
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

std::shared_ptr<ProcessGroup> make_mpi_subgroup(const std::shared_ptr<ProcessGroup>& world,
                                               const std::vector<int>& ranks, const InitOptions& options) {
  const char* op = "createProcessGroupMPI";
  auto* full = dynamic_cast<MpiProcessGroup*>(world.get());
  WICK_CHECK(full != nullptr, ValueError, op, "the group to split is not an mpi group");
  int index = -1;
  for (size_t i = 0; i < ranks.size(); ++i)
    if (ranks[i] == world->rank()) index = int(i);
  // A member's group owns its state (and so frees the communicator) from here on.
  std::shared_ptr<MpiProcessGroup> group;
  if (index >= 0) {
    RankInfo info;
    info.rank = index;
    info.world_size = int(ranks.size());
    group = std::make_shared<MpiProcessGroup>(new_state(info, options.timeout));
  }
  // Every process of world splits its communicator: members in ranks' order, the others out.
  auto comm = std::make_shared<MPI_Comm>(MPI_COMM_NULL);
  MpiState* ws = full->state().get();
  std::string where = ws->where();
  run_on_worker(
      full->state(),
      [comm, ws, index, op, where] {
        auto l = mpi_lock();
        mpi_check(MPI_Comm_split(ws->comm, index < 0 ? MPI_UNDEFINED : 0, index < 0 ? 0 : index, comm.get()), op,
                  where + ", MPI_Comm_split");
      },
      "every rank to split the communicator (MPI_Comm_split)");
  if (!group) return nullptr;
  group->state()->comm = *comm;
  MPI_Comm_set_errhandler(*comm, MPI_ERRORS_RETURN);
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
