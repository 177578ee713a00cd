// The "gloo" backend: CPU tensors over Gloo's collectives and its TCP transport (docs/design.md,
// section 12). No MPI is involved: the ranks meet through the TCP store at
// MASTER_ADDR:MASTER_PORT (wick-launch, torchrun-style variables); under mpirun without them,
// rank 0 picks the store's address and port and hands them around over MPI.
//
// Each group has one worker thread that runs its collectives in call order with Gloo's blocking
// calls, every one bounded by the group's timeout (Gloo's own). Sends and receives are posted at
// once from the caller, so that a ring of isend + irecv cannot deadlock behind the worker, and
// each is waited for on a thread of its own. A collective that fails (a timeout, a peer gone) marks the
// group broken: every later call raises at once.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <thread>
#include <type_traits>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "distributed/internal.h"
#include "distributed/store.h"

#ifdef WICK_HAVE_GLOO
#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/reduce.h>
#include <gloo/reduce_scatter.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/hash_store.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/unbound_buffer.h>
#endif

namespace wick::distributed {

bool is_gloo_available() {
#ifdef WICK_HAVE_GLOO
  return true;
#else
  return false;
#endif
}

namespace detail {

#ifndef WICK_HAVE_GLOO

std::shared_ptr<ProcessGroup> make_gloo_group(const RankInfo&, const InitOptions&) {
  ::wick::detail::raise<NotImplementedError>(
      "init_process_group",
      "wick was built without Gloo; install it (libgloo-dev) and rebuild to use the gloo backend");
}

#else

using ::wick::detail::raise;
using Clock = std::chrono::steady_clock;

namespace {

// ---- reductions: c[i] = a[i] op b[i]; K: 0 SUM, 1 PRODUCT, 2 MIN, 3 MAX

template <class T>
constexpr bool kIsHalf = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

template <class T, int K>
T combine(T a, T b) {
  if constexpr (kIsHalf<T>) {
    return T(combine<float, K>(float(a), float(b)));  // each step in float, rounded to 16 bits
  } else if constexpr (std::is_floating_point_v<T>) {
    if constexpr (K == 0) return a + b;
    if constexpr (K == 1) return a * b;
    if (a != a) return a;  // NaN wins, as in torch.minimum / maximum
    if (b != b) return b;
    if constexpr (K == 2) return b < a ? b : a;
    return b > a ? b : a;
  } else {
    // Integers wrap, as the other backends' do (no signed overflow).
    if constexpr (K == 0) return T(uint64_t(a) + uint64_t(b));
    if constexpr (K == 1) return T(uint64_t(a) * uint64_t(b));
    if constexpr (K == 2) return b < a ? b : a;
    return b > a ? b : a;
  }
}

// The form of AllreduceOptions / ReduceOptions.
template <class T, int K>
void reduce_into(void* c, const void* a, const void* b, size_t n) {
  T* out = static_cast<T*>(c);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) out[i] = combine<T, K>(x[i], y[i]);
}

// The form of the older algorithms' ReductionFunction (x op= y).
template <class T, int K>
void reduce_in_place(T* x, const T* y, size_t n) {
  reduce_into<T, K>(x, x, y, n);
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

// f.template operator()<T, K>() with T the dtype's C++ type and K op's index; bool as bytes of 0
// and 1, SUM and MAX as MAX (or), PRODUCT and MIN as MIN (and).
template <class F>
void with_reduction(Dtype dtype, ReduceOp op, const char* name, F&& f) {
  WICK_DISPATCH_ALL(dtype, name, [&]<class T>() {
    if constexpr (std::is_same_v<T, bool>) {
      if (op == ReduceOp::SUM || op == ReduceOp::MAX) return f.template operator()<uint8_t, 3>();
      return f.template operator()<uint8_t, 2>();
    } else {
      switch (op_index(op)) {
        case 0:
          return f.template operator()<T, 0>();
        case 1:
          return f.template operator()<T, 1>();
        case 2:
          return f.template operator()<T, 2>();
        default:
          return f.template operator()<T, 3>();
      }
    }
  });
}

// data /= n over count elements of a floating dtype (ReduceOp.AVG after a SUM).
void divide(void* data, int64_t count, Dtype t, int n) {
  WICK_DISPATCH_FLOATING(t, "all_reduce", [&]<class T>() {
    T* p = static_cast<T*>(data);
    for (int64_t i = 0; i < count; ++i) {
      if constexpr (std::is_floating_point_v<T>) p[i] = p[i] / T(n);
      else p[i] = T(float(p[i]) / float(n));
    }
  });
}

// Gloo's message without its "[file:line] " prefix.
std::string gloo_message(const std::exception& e) {
  std::string m = e.what();
  if (!m.empty() && m[0] == '[') {
    size_t end = m.find("] ");
    if (end != std::string::npos) m.erase(0, end + 2);
  }
  return m;
}

// ---- the rendezvous: Gloo's Store over wick's

// Over the TCP store of this group's setup (keys under "gloo/").
class TcpGlooStore final : public gloo::rendezvous::Store {
 public:
  explicit TcpGlooStore(TcpStore& store) : store_(store) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    store_.set("gloo/" + key, std::string(data.begin(), data.end()), "init_process_group");
  }
  std::vector<char> get(const std::string& key) override {
    std::string v = store_.get("gloo/" + key, "init_process_group");
    return std::vector<char>(v.begin(), v.end());
  }
  // Each wait is bounded by the store's timeout, the group's.
  void wait(const std::vector<std::string>& keys) override {
    for (const std::string& k : keys) store_.wait("gloo/" + k, "init_process_group");
  }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds&) override { wait(keys); }

 private:
  TcpStore& store_;
};

// ---- one group's state, shared by the group, its Works and its two threads

class GlooWork;

struct Task {
  std::function<void()> fn;
  std::shared_ptr<GlooWork> work;
};

// A send's or receive's wait, on a thread of its own (waits in one queue could hold a send's
// completion behind a receive that needs a later send).
struct P2PThread {
  std::thread thread;
  std::shared_ptr<std::atomic<bool>> done;
};

class GroupState {
 public:
  std::mutex mu;
  std::condition_variable queue_cv, done_cv;
  std::deque<Task> queue;  // the collectives, in call order
  std::thread worker;
  const Task* running = nullptr;  // the worker's current task, and since when
  Clock::time_point started;
  std::vector<P2PThread> p2p_threads;
  bool stop = false, broken = false;
  std::string broken_reason;
  std::shared_ptr<gloo::rendezvous::Context> context;
  int rank = 0, size = 1;
  std::chrono::milliseconds timeout{};
  uint32_t next_tag = 0;  // the worker's: one tag per collective, the same sequence on every rank

  std::string where() const {
    return "rank " + std::to_string(rank) + " of " + std::to_string(size) + ", gloo";
  }
  void check_usable(const char* op) {
    std::lock_guard<std::mutex> l(mu);
    if (broken)
      raise<DistributedError>(op, "the process group can no longer be used (", where(), "): ", broken_reason);
  }
  // Marks the group broken (under mu).
  void fail(const std::string& reason) {
    if (broken) return;
    broken = true;
    broken_reason = reason;
  }
  // The worker's loop.
  void run();
  // Runs t (unless the group is broken) and finishes its work; an error breaks the group. l: a
  // lock of mu, held on entry and on return.
  void execute(Task& t, std::unique_lock<std::mutex>& l);
  void shutdown() {
    std::vector<P2PThread> p2p;
    {
      std::lock_guard<std::mutex> l(mu);
      stop = true;
      p2p.swap(p2p_threads);
    }
    queue_cv.notify_all();
    if (worker.joinable()) worker.join();
    for (P2PThread& t : p2p) t.thread.join();
  }
};

class GlooWork final : public Work::Impl {
 public:
  GlooWork(std::string op, std::shared_ptr<GroupState> st) : Impl(std::move(op)), st_(std::move(st)) {}
  bool is_completed() override {
    std::lock_guard<std::mutex> l(st_->mu);
    if (done_ && !error_.empty()) throw DistributedError(error_);
    return done_;
  }
  // Gloo bounds every call by the timeout; the wait here is only a guard against a call that
  // overruns it by far (the group is then unusable).
  void wait() override {
    std::unique_lock<std::mutex> l(st_->mu);
    while (!done_) {
      st_->done_cv.wait_for(l, std::chrono::milliseconds(200));
      if (done_) break;
      if (st_->running && st_->running->work.get() == this &&
          Clock::now() - st_->started > st_->timeout + std::chrono::seconds(30)) {
        std::string msg =
            ::wick::detail::message(op().c_str(), "timed out after ", st_->timeout.count(), " ms (",
                                    st_->where(), "); the process group can no longer be used");
        st_->fail(msg);
        throw DistributedError(msg);
      }
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
    running = &t;
    started = Clock::now();
    execute(t, l);
    running = nullptr;
  }
}

void GroupState::execute(Task& t, std::unique_lock<std::mutex>& l) {
  const char* op = t.work->op().c_str();
  std::string error;
  if (broken) {
    error = ::wick::detail::message(op, "the process group can no longer be used (", where(),
                                    "): ", broken_reason);
  } else {
    l.unlock();
    auto start = Clock::now();
    try {
      t.fn();
    } catch (const Error& e) {
      error = e.what();
    } catch (const std::exception& e) {
      // Gloo's exceptions: a timeout (its wording starts "Timed out") or an I/O error (a peer gone).
      std::string m = gloo_message(e);
      if (m.rfind("Timed out", 0) == 0 || Clock::now() - start >= timeout)
        error = ::wick::detail::message(op, "timed out after ", timeout.count(), " ms (", where(),
                                        "); the process group can no longer be used");
      else
        error = ::wick::detail::message(op, m, " (", where(), "); the process group can no longer be used");
    }
    l.lock();
    if (!error.empty()) fail(error);
  }
  t.work->finish(std::move(error));
  t.fn = nullptr;
  done_cv.notify_all();
}

// Point-to-point slots: a prefix above those of Gloo's collectives, then the tag.
constexpr uint64_t kP2PSlot = uint64_t(0x7f) << 56;

class GlooProcessGroup final : public BackendGroup {
 public:
  explicit GlooProcessGroup(std::shared_ptr<GroupState> st)
      : BackendGroup(Device(kCPU)), st_(std::move(st)) {}
  ~GlooProcessGroup() override { st_->shutdown(); }

  std::string backend() const override { return "gloo"; }
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
      if (t.numel() == 0) return;
      with_reduction(t.dtype(), op, name, [&]<class T, int K>() {
        gloo::AllreduceOptions o(s->context);
        o.setOutput(static_cast<T*>(t.data_ptr()), size_t(t.numel()));
        o.setReduceFunction(&reduce_into<T, K>);
        o.setTag(s->next_tag++);
        gloo::allreduce(o);
      });
      if (op == ReduceOp::AVG) divide(t.data_ptr(), t.numel(), t.dtype(), world);
    });
  }

  Work broadcast(Tensor& tensor, int src) override {
    const char* name = "broadcast";
    check_tensor(tensor, name, "tensor");
    check_rank(src, name, "src");
    Tensor t = tensor;
    return enqueue(name, {t}, {t}, [=, s = st_.get()] {
      if (t.numel() == 0) return;
      gloo::BroadcastOptions o(s->context);
      o.setRoot(src);
      o.setOutput(static_cast<uint8_t*>(t.data_ptr()), size_t(t.nbytes()));
      o.setTag(s->next_tag++);
      gloo::broadcast(o);
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
      if (t.numel() == 0) return;
      // Gloo's reduce writes its output on every rank: the others' go to scratch, so that their
      // tensors keep their values, as PyTorch's do.
      std::vector<char> scratch(me == dst ? 0 : size_t(t.nbytes()));
      with_reduction(t.dtype(), op, name, [&]<class T, int K>() {
        gloo::ReduceOptions o(s->context);
        o.setRoot(dst);
        size_t n = size_t(t.numel());
        if (me == dst) {
          o.setOutput(static_cast<T*>(t.data_ptr()), n);
        } else {
          o.setInput(static_cast<T*>(t.data_ptr()), n);
          o.setOutput(reinterpret_cast<T*>(scratch.data()), n);
        }
        o.setReduceFunction(&reduce_into<T, K>);
        o.setTag(s->next_tag++);
        gloo::reduce(o);
      });
      if (op == ReduceOp::AVG && me == dst) divide(t.data_ptr(), t.numel(), t.dtype(), world);
    });
  }

  Work all_gather(std::vector<Tensor>& outputs, const Tensor& input) override {
    const char* name = "all_gather";
    check_tensor(input, name, "tensor");
    check_list(outputs, input, name, "tensor_list");
    std::vector<Tensor> outs = outputs;
    Tensor in = input;
    return enqueue(name, outs, {in}, [=, s = st_.get()] {
      std::vector<size_t> bytes;
      size_t total = 0;
      for (const Tensor& o : outs) bytes.push_back(size_t(o.nbytes())), total += size_t(o.nbytes());
      if (total == 0) return;
      std::vector<uint8_t> buf(total);
      gloo::AllgathervOptions o(s->context);
      o.setInput(static_cast<uint8_t*>(in.data_ptr()), size_t(in.nbytes()));
      o.setOutput(buf.data(), bytes);
      o.setTag(s->next_tag++);
      gloo::allgatherv(o);
      size_t at = 0;
      for (size_t r = 0; r < outs.size(); ++r) {
        if (bytes[r]) std::memcpy(outs[r].data_ptr(), buf.data() + at, bytes[r]);
        at += bytes[r];
      }
    });
  }

  Work reduce_scatter(Tensor& output, const std::vector<Tensor>& inputs, ReduceOp op) override {
    const char* name = "reduce_scatter";
    check_tensor(output, name, "output");
    check_reduce_op(op, output.dtype(), name);
    check_list(inputs, output, name, "input_list");
    int64_t total = 0;
    for (const Tensor& t : inputs) total += t.numel();
    // Gloo's reduce-scatter counts elements in int.
    WICK_CHECK(total <= INT32_MAX, ValueError, name, "input_list has more than 2^31-1 elements in all");
    std::vector<Tensor> ins = inputs;
    Tensor out = output;
    int world = size();
    return enqueue(name, {out}, ins, [=, s = st_.get()] {
      if (total == 0) return;
      with_reduction(out.dtype(), op, name, [&]<class T, int K>() {
        auto buf = std::make_unique<T[]>(static_cast<size_t>(total));
        std::vector<int> counts;
        int64_t at = 0;
        for (const Tensor& t : ins) {
          counts.push_back(int(t.numel()));
          if (t.numel()) std::memcpy(buf.get() + at, t.data_ptr(), size_t(t.nbytes()));
          at += t.numel();
        }
        gloo::ReductionFunction<T> fn(gloo::CUSTOM, &reduce_in_place<T, K>);
        gloo::ReduceScatterHalvingDoubling<T> algo(s->context, std::vector<T*>{buf.get()}, int(total), counts,
                                                   &fn);
        algo.run();
        // This rank's part is at the front of the buffer.
        if (out.numel()) std::memcpy(out.data_ptr(), buf.get(), size_t(out.nbytes()));
      });
      if (op == ReduceOp::AVG) divide(out.data_ptr(), out.numel(), out.dtype(), world);
    });
  }

  Work barrier() override {
    st_->check_usable("barrier");
    return enqueue("barrier", {}, {}, [s = st_.get()] {
      gloo::BarrierOptions o(s->context);
      o.setTag(s->next_tag++);
      gloo::barrier(o);
    });
  }

  Work send(const Tensor& tensor, int dst, int tag) override {
    return p2p("send", tensor, dst, tag, "dst", true);
  }
  Work recv(Tensor& tensor, int src, int tag) override { return p2p("recv", tensor, src, tag, "src", false); }

 private:
  // The group usable, then the arguments' checks of every backend (internal.h).
  void check_tensor(const Tensor& t, const char* op, const char* what) {
    st_->check_usable(op);
    BackendGroup::check_tensor(t, op, what);
  }

  // A collective, for the worker; or (p2p) a send's or receive's wait, on a thread of its own.
  Work enqueue(const char* op, std::vector<Tensor> outputs, std::vector<Tensor> inputs,
               std::function<void()> fn, bool p2p = false) {
    auto work = std::make_shared<GlooWork>(op, st_);
    work->outputs = std::move(outputs);
    work->keep = std::move(inputs);
    std::lock_guard<std::mutex> l(st_->mu);
    if (!p2p) {
      st_->queue.push_back(Task{std::move(fn), work});
      st_->queue_cv.notify_all();
      return Work(work);
    }
    // The waits that have ended are joined here.
    std::erase_if(st_->p2p_threads, [](P2PThread& t) {
      if (!t.done->load()) return false;
      t.thread.join();
      return true;
    });
    auto done = std::make_shared<std::atomic<bool>>(false);
    st_->p2p_threads.push_back(
        P2PThread{std::thread([s = st_.get(), task = Task{std::move(fn), work}, done]() mutable {
                    std::unique_lock<std::mutex> tl(s->mu);
                    s->execute(task, tl);
                    done->store(true);
                  }),
                  done});
    return Work(work);
  }

  // Posted at once from this thread; the p2p thread waits for it.
  Work p2p(const char* op, const Tensor& tensor, int peer, int tag, const char* what, bool is_send) {
    check_tensor(tensor, op, "tensor");
    check_rank(peer, op, what, /*not_self=*/true);
    WICK_CHECK(tag >= 0, ValueError, op, "tag ", tag, " must not be negative");
    std::vector<Tensor> outputs;
    if (!is_send) outputs = {tensor};
    if (tensor.nbytes() == 0) return completed_work(op, outputs);
    std::shared_ptr<gloo::transport::UnboundBuffer> buf;
    try {
      buf = st_->context->createUnboundBuffer(tensor.data_ptr(), size_t(tensor.nbytes()));
      if (is_send) buf->send(peer, kP2PSlot | uint64_t(tag));
      else buf->recv(peer, kP2PSlot | uint64_t(tag));
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      std::string msg = ::wick::detail::message(op, gloo_message(e), " (", st_->where(),
                                                "); the process group can no longer be used");
      std::lock_guard<std::mutex> l(st_->mu);
      st_->fail(msg);
      throw DistributedError(msg);
    }
    auto timeout = st_->timeout;
    return enqueue(
        op, outputs, {tensor},
        [buf, is_send, timeout] {
          if (is_send) buf->waitSend(timeout);
          else buf->waitRecv(timeout);
        },
        /*p2p_lane=*/true);
  }

  std::shared_ptr<GroupState> st_;
};

// The address this process's Gloo device listens on: the interface GLOO_SOCKET_IFNAME names (as
// PyTorch reads it), else the loopback address when the store is on this host's loopback (one
// host), else this host's name.
gloo::transport::tcp::attr device_attr(const RankInfo& info) {
  gloo::transport::tcp::attr a;
  const char* iface = std::getenv("GLOO_SOCKET_IFNAME");
  if (iface && *iface) {
    a.iface = iface;
    return a;
  }
  const std::string& m = info.master_addr;
  if (info.world_size == 1 || m.empty() || m.rfind("127.", 0) == 0 || m == "localhost" || m == "::1") {
    a.hostname = "127.0.0.1";
    return a;
  }
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "localhost");
  a.hostname = host;
  return a;
}

// info with the TCP store's address and port, for ranks started by mpirun without MASTER_ADDR and
// MASTER_PORT: 127.0.0.1 when every rank is on one host, else rank 0's host name, and a port
// that is free on rank 0's host now; handed around over MPI (the bootstrap).
RankInfo store_over_mpi(const RankInfo& info, const InitOptions& options) {
  const char* op = "init_process_group";
  auto bootstrap = make_bootstrap(info, options.timeout);
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "localhost");
  std::vector<std::string> hosts = bootstrap->all_gather(host, op);
  bool one_host =
      std::all_of(hosts.begin(), hosts.end(), [&](const std::string& h) { return h == hosts[0]; });
  std::string port;
  if (info.rank == 0) {
    // Port 0: the system picks one (IPv6 with IPv4 too, as the store listens, else IPv4).
    int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0) {
      int zero = 0;
      ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
      sockaddr_in6 a{};
      a.sin6_family = AF_INET6;
      a.sin6_addr = in6addr_any;
      socklen_t len = sizeof a;
      if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
          ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
        port = std::to_string(ntohs(a.sin6_port));
    } else if ((fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0) {
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_ANY);
      socklen_t len = sizeof a;
      if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
          ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
        port = std::to_string(ntohs(a.sin_port));
    }
    if (fd >= 0) ::close(fd);
  }
  port = bootstrap->broadcast(port, 0, op);
  WICK_CHECK(!port.empty(), DistributedError, op,
             "rank 0 found no free port for the TCP store; set MASTER_ADDR "
             "and MASTER_PORT");
  RankInfo at = info;
  at.master_addr = one_host ? "127.0.0.1" : hosts[0];
  at.master_port = std::stoi(port);
  bootstrap->barrier(op);
  return at;
}

}  // namespace

std::shared_ptr<ProcessGroup> make_gloo_group(const RankInfo& info, const InitOptions& options) {
  const char* op = "init_process_group";
  auto st = std::make_shared<GroupState>();
  st->rank = info.rank;
  st->size = info.world_size;
  st->timeout = options.timeout;
  const std::string where = st->where();

  auto run_gloo = [&](const char* what, const std::function<void()>& fn) {
    try {
      fn();
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      std::string hint = std::string(what) == "creating the TCP device"
                             ? " (set GLOO_SOCKET_IFNAME to the network interface to use)"
                             : "";
      raise<DistributedError>(op, where, ": ", what, " failed: ", gloo_message(e), hint);
    }
  };

  // Under mpirun without MASTER_ADDR and MASTER_PORT, rank 0 picks them and tells the others over MPI.
  RankInfo at = info;
  if (info.world_size > 1 && info.launched_by_mpirun && (info.master_addr.empty() || info.master_port == 0))
    at = store_over_mpi(info, options);
  std::shared_ptr<gloo::transport::Device> device;
  run_gloo("creating the TCP device", [&] { device = gloo::transport::tcp::CreateDevice(device_attr(at)); });
  auto context = std::make_shared<gloo::rendezvous::Context>(info.rank, info.world_size);
  context->setTimeout(options.timeout);
  auto barrier = [&](const char* what) {
    run_gloo(what, [&] {
      gloo::BarrierOptions o(context);
      o.setTag(st->next_tag++);
      gloo::barrier(o);
    });
  };

  if (info.world_size == 1) {
    gloo::rendezvous::HashStore store;
    run_gloo("connecting", [&] { context->connectFullMesh(store, device); });
  } else {
    // The TCP store serves this setup only: every rank has read it before rank 0 closes it (the
    // first barrier), and none goes on before it is closed (the second), so that a next group
    // on the same port never meets this one's store.
    auto store = std::make_unique<TcpStore>(at.master_addr, at.master_port, at.rank, at.world_size,
                                            options.timeout, op);
    TcpGlooStore adapter(*store);
    run_gloo("connecting to the other ranks", [&] { context->connectFullMesh(adapter, device); });
    barrier("the barrier after connecting");
    store.reset();
    barrier("the barrier after closing the TCP store");
  }
  st->context = std::move(context);
  st->worker = std::thread([s = st.get()] { s->run(); });
  return std::make_shared<GlooProcessGroup>(st);
}

#endif  // WICK_HAVE_GLOO

}  // namespace detail
}  // namespace wick::distributed
