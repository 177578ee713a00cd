// The "gloo" backend: CPU tensors over Gloo's collectives and its TCP transport (docs/design.md,
// section 12). No MPI is involved: the ranks meet through the TCP store at
// MASTER_ADDR:MASTER_PORT (wick-launch, torchrun-style variables); under mpirun without them,
// rank 0 picks the store's address and port and hands them around over MPI.
//
// Each group has one worker thread (cpu_worker.h) that runs its collectives in call order with
// Gloo's blocking calls, every one bounded by the group's timeout (Gloo's own). Sends and receives are posted at
// once from the caller, so that a ring of isend + irecv cannot deadlock behind the worker, and
// each is waited for on a thread of its own. A collective that fails (a timeout, a peer gone) marks the
// group broken: every later call raises at once.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <type_traits>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "distributed/cpu_worker.h"
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

// f.template operator()<T, K>() with T the dtype's C++ type and K op's index; bool as bytes of 0
// and 1, SUM and MAX as MAX (or), PRODUCT and MIN as MIN (and).
template <class F>
void with_reduction(Dtype dtype, ReduceOp op, const char* name, F&& f) {
  WICK_DISPATCH_ALL(dtype, name, [&]<class T>() {
    if constexpr (std::is_same_v<T, bool>) {
      if (op == ReduceOp::SUM || op == ReduceOp::MAX) return f.template operator()<uint8_t, 3>();
      return f.template operator()<uint8_t, 2>();
    } else {
      switch (reduce_op_index(op)) {
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

// ---- one group's state: the worker (cpu_worker.h) with Gloo's context, and the threads of the
// sends' and receives' waits

class GlooState final : public CpuWorker {
 public:
  GlooState() : CpuWorker("gloo", /*bounded=*/true) {}
  std::shared_ptr<gloo::rendezvous::Context> context;
  uint32_t next_tag = 0;  // the worker's: one tag per collective, the same sequence on every rank

  // The worker's tag for its next collective: the collective's ordinal (next_tag) mixed with
  // what every rank must pass alike (the op, dtype, counts, root), so that ranks whose calls
  // differ use different slots and time out (a DistributedError naming the op) rather than meet
  // with buffers of other sizes, which Gloo's transport does not survive (its check of a
  // message's length ends the process). list: byte counts that must agree too.
  uint32_t tag_for(std::initializer_list<int64_t> agreed, const std::vector<size_t>& list = {}) {
    uint64_t h = 1469598103934665603ull;  // FNV-1a
    auto mix = [&h](uint64_t v) {
      for (int k = 0; k < 8; ++k) h = (h ^ ((v >> (8 * k)) & 0xff)) * 1099511628211ull;
    };
    mix(next_tag++);
    for (int64_t v : agreed) mix(uint64_t(v));
    for (size_t v : list) mix(v);
    return uint32_t(h ^ (h >> 32));
  }

  // Runs fn for work on a thread of its own (a send's or receive's wait: waits in one queue
  // could hold a send's completion behind a receive that needs a later send).
  void run_beside(std::shared_ptr<CpuWork> work, std::function<void()> fn) {
    std::lock_guard<std::mutex> l(p2p_mu_);
    // The waits that have ended are joined here.
    std::erase_if(p2p_threads_, [](P2PThread& t) {
      if (!t.done->load()) return false;
      t.thread.join();
      return true;
    });
    auto done = std::make_shared<std::atomic<bool>>(false);
    p2p_threads_.push_back(P2PThread{std::thread([this, work = std::move(work), fn = std::move(fn), done]() mutable {
                                       run_now(work, std::move(fn));
                                       done->store(true);
                                     }),
                                     done});
  }
  void join_p2p() {
    std::vector<P2PThread> p2p;
    {
      std::lock_guard<std::mutex> l(p2p_mu_);
      p2p.swap(p2p_threads_);
    }
    for (P2PThread& t : p2p) t.thread.join();
  }

 protected:
  // Gloo's exceptions: a timeout (its wording starts "Timed out") or an I/O error (a peer gone).
  std::string transport_error(const char* op, const std::exception& e, Clock::duration elapsed) const override {
    std::string m = gloo_message(e);
    if (m.rfind("Timed out", 0) == 0 || elapsed >= timeout) return timed_out(op);
    return fatal(op, m);
  }

 private:
  struct P2PThread {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::mutex p2p_mu_;
  std::vector<P2PThread> p2p_threads_;
};

// Point-to-point slots: a prefix above those of Gloo's collectives, then the tag.
constexpr uint64_t kP2PSlot = uint64_t(0x7f) << 56;

class GlooProcessGroup final : public CpuGroup<GlooState> {
 public:
  explicit GlooProcessGroup(std::shared_ptr<GlooState> st) : CpuGroup("gloo", std::move(st)) {}
  ~GlooProcessGroup() override {
    st_->shutdown();
    st_->join_p2p();
  }

 protected:
  std::function<void()> all_reduce_fn(Tensor t, ReduceOp op) override {
    return [=, s = st_.get(), world = size()] {
      const char* name = "all_reduce";
      const uint32_t tag = s->tag_for({1, int64_t(t.dtype()), t.numel(), int64_t(op)});
      if (t.numel() == 0) return;
      with_reduction(t.dtype(), op, name, [&]<class T, int K>() {
        gloo::AllreduceOptions o(s->context);
        o.setOutput(static_cast<T*>(t.data_ptr()), size_t(t.numel()));
        o.setReduceFunction(&reduce_into<T, K>);
        o.setTag(tag);
        gloo::allreduce(o);
      });
      if (op == ReduceOp::AVG) divide_by(t.data_ptr(), t.numel(), t.dtype(), world, name);
    };
  }

  std::function<void()> broadcast_fn(Tensor t, int src) override {
    return [=, s = st_.get()] {
      const uint32_t tag = s->tag_for({2, int64_t(t.dtype()), t.numel(), src});
      if (t.numel() == 0) return;
      gloo::BroadcastOptions o(s->context);
      o.setRoot(src);
      o.setOutput(static_cast<uint8_t*>(t.data_ptr()), size_t(t.nbytes()));
      o.setTag(tag);
      gloo::broadcast(o);
    };
  }

  std::function<void()> reduce_fn(Tensor t, int dst, ReduceOp op) override {
    return [=, s = st_.get(), world = size(), me = rank()] {
      const char* name = "reduce";
      const uint32_t tag = s->tag_for({3, int64_t(t.dtype()), t.numel(), dst, int64_t(op)});
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
        o.setTag(tag);
        gloo::reduce(o);
      });
      if (op == ReduceOp::AVG && me == dst) divide_by(t.data_ptr(), t.numel(), t.dtype(), world, name);
    };
  }

  std::function<void()> all_gather_fn(std::vector<Tensor> outs, Tensor in) override {
    return [=, s = st_.get()] {
      std::vector<size_t> bytes;
      size_t total = 0;
      for (const Tensor& o : outs) bytes.push_back(size_t(o.nbytes())), total += size_t(o.nbytes());
      const uint32_t tag = s->tag_for({4, int64_t(in.dtype())}, bytes);
      if (total == 0) return;
      std::vector<uint8_t> buf(total);
      gloo::AllgathervOptions o(s->context);
      o.setInput(static_cast<uint8_t*>(in.data_ptr()), size_t(in.nbytes()));
      o.setOutput(buf.data(), bytes);
      o.setTag(tag);
      gloo::allgatherv(o);
      size_t at = 0;
      for (size_t r = 0; r < outs.size(); ++r) {
        if (bytes[r]) std::memcpy(outs[r].data_ptr(), buf.data() + at, bytes[r]);
        at += bytes[r];
      }
    };
  }

  std::function<void()> reduce_scatter_fn(Tensor out, std::vector<Tensor> ins, ReduceOp op) override {
    const char* name = "reduce_scatter";
    int64_t total = 0;
    for (const Tensor& t : ins) total += t.numel();
    // Gloo's reduce-scatter counts elements in int.
    WICK_CHECK(total <= INT32_MAX, ValueError, name, "input_list has more than 2^31-1 elements in all");
    return [=, s = st_.get(), world = size()] {
      // Gloo's reduce-scatter takes no tag: the ranks first agree on its counts, dtype and op
      // (one MAX all-reduce of a hash of them and of its negation: equal everywhere only when
      // every rank passed the same), since its transport does not survive buffers of other sizes.
      std::vector<size_t> counts_agreed;
      for (const Tensor& t : ins) counts_agreed.push_back(size_t(t.numel()));
      const int64_t h = int64_t(s->tag_for({5, int64_t(out.dtype()), int64_t(op)}, counts_agreed));
      int64_t agree[2] = {h, -h};
      gloo::AllreduceOptions a(s->context);
      a.setOutput(agree, 2);
      a.setReduceFunction(&reduce_into<int64_t, 3>);
      a.setTag(s->tag_for({6}));
      gloo::allreduce(a);
      if (agree[0] != h || agree[1] != -h)
        raise<DistributedError>(name, "the ranks passed input_list of different sizes or dtypes, or different ops (",
                                s->where(), "); the process group can no longer be used");
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
      if (op == ReduceOp::AVG) divide_by(out.data_ptr(), out.numel(), out.dtype(), world, name);
    };
  }

  std::function<void()> barrier_fn() override {
    return [s = st_.get()] {
      gloo::BarrierOptions o(s->context);
      o.setTag(s->tag_for({7}));
      gloo::barrier(o);
    };
  }

  // Posted at once on Gloo's unbound buffer; the wait runs on a thread of its own.
  Work post(const char* op, const Tensor& tensor, int peer, int tag, bool is_send) override {
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
      std::string msg = st_->fatal(op, gloo_message(e));
      st_->fail(msg);
      throw DistributedError(msg);
    }
    auto work = std::make_shared<CpuWork>(op, st_);
    work->outputs = std::move(outputs);
    work->keep = {tensor};
    auto timeout = st_->timeout;
    st_->run_beside(work, [buf, is_send, timeout] {
      if (is_send) buf->waitSend(timeout);
      else buf->waitRecv(timeout);
    });
    return Work(work);
  }
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
  auto st = std::make_shared<GlooState>();
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
  st->start();
  return std::make_shared<GlooProcessGroup>(st);
}

#endif  // WICK_HAVE_GLOO

}  // namespace detail
}  // namespace wick::distributed
