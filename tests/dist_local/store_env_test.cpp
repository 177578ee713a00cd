// The pieces of wick::distributed that run in one process: rank discovery from options and
// environment, the TCP store, the store's bootstrap (ranks as threads), the free functions
// before init_process_group, and the gloo backend's groups with ranks as threads (with
// collectives whose arguments differ across ranks).
// (Collectives among processes: tests/distributed, under mpirun and wick-launch.)
#include <cstdlib>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "wick/cuda.h"
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "distributed/checked_group.h"
#include "distributed/internal.h"
#include "distributed/store.h"
#include "wick/distributed.h"
#include "wick/ops.h"

namespace wick {
namespace {

namespace dist = wick::distributed;
using namespace std::chrono_literals;

// Sets environment variables for one scope and restores them afterwards.
class ScopedEnv {
 public:
  ScopedEnv(std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (const char* n : kNames) {
      const char* v = std::getenv(n);
      saved_.emplace_back(n, v ? std::optional<std::string>(v) : std::nullopt);
      ::unsetenv(n);
    }
    for (auto& [n, v] : vars) ::setenv(n, v, 1);
  }
  ~ScopedEnv() {
    for (auto& [n, v] : saved_) v ? (void)::setenv(n.c_str(), v->c_str(), 1) : (void)::unsetenv(n.c_str());
  }

 private:
  static constexpr const char* kNames[] = {"OMPI_COMM_WORLD_RANK",
                                           "OMPI_COMM_WORLD_SIZE",
                                           "OMPI_COMM_WORLD_LOCAL_RANK",
                                           "RANK",
                                           "WORLD_SIZE",
                                           "LOCAL_RANK",
                                           "MASTER_ADDR",
                                           "MASTER_PORT",
                                           "SLURM_PROCID",
                                           "SLURM_NTASKS",
                                           "SLURM_LOCALID",
                                           "WICK_DISTRIBUTED_DEBUG"};
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

template <class E, class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "no error";
}

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

// Rank r of world ranks on this host, meeting through the TCP store at 127.0.0.1:port.
dist::detail::RankInfo local_rank(int r, int world, int port) {
  dist::detail::RankInfo info;
  info.rank = r;
  info.world_size = world;
  info.master_addr = "127.0.0.1";
  info.master_port = port;
  return info;
}

TEST(DistributedEnv, NothingIsOneProcess) {
  ScopedEnv env({});
  auto info = dist::detail::resolve_rank_info({});
  EXPECT_EQ(info.rank, 0);
  EXPECT_EQ(info.world_size, 1);
  EXPECT_EQ(info.local_rank, 0);
  EXPECT_FALSE(info.launched_by_mpirun);
  EXPECT_TRUE(info.master_addr.empty());
  EXPECT_EQ(info.master_port, 0);
}

TEST(DistributedEnv, SourcesInOrder) {
  {
    ScopedEnv env({{"OMPI_COMM_WORLD_RANK", "2"},
                   {"OMPI_COMM_WORLD_SIZE", "4"},
                   {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                   {"RANK", "1"},
                   {"WORLD_SIZE", "2"}});
    auto info = dist::detail::resolve_rank_info({});
    EXPECT_EQ(info.rank, 2);
    EXPECT_EQ(info.world_size, 4);
    EXPECT_EQ(info.local_rank, 0);
    EXPECT_TRUE(info.launched_by_mpirun);
    EXPECT_EQ(info.source, "mpirun");
  }
  {
    ScopedEnv env({{"RANK", "1"},
                   {"WORLD_SIZE", "3"},
                   {"LOCAL_RANK", "1"},
                   {"MASTER_ADDR", "10.0.0.1"},
                   {"MASTER_PORT", "29500"},
                   {"SLURM_PROCID", "0"},
                   {"SLURM_NTASKS", "8"}});
    auto info = dist::detail::resolve_rank_info({});
    EXPECT_EQ(info.rank, 1);
    EXPECT_EQ(info.world_size, 3);
    EXPECT_EQ(info.local_rank, 1);
    EXPECT_FALSE(info.launched_by_mpirun);
    EXPECT_EQ(info.master_addr, "10.0.0.1");
    EXPECT_EQ(info.master_port, 29500);
    EXPECT_EQ(info.source, "torchrun");
  }
  {
    ScopedEnv env({{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "1"}});
    auto info = dist::detail::resolve_rank_info({});
    EXPECT_EQ(info.rank, 5);
    EXPECT_EQ(info.world_size, 8);
    EXPECT_EQ(info.local_rank, 1);
    EXPECT_EQ(info.source, "slurm");
  }
  {
    ScopedEnv env({{"RANK", "1"}, {"WORLD_SIZE", "3"}, {"MASTER_PORT", "29500"}});
    dist::InitOptions o;
    o.rank = 0;
    o.world_size = 2;
    o.local_rank = 0;
    o.master_addr = "127.0.0.1";
    o.master_port = 1234;
    auto info = dist::detail::resolve_rank_info(o);
    EXPECT_EQ(info.rank, 0);
    EXPECT_EQ(info.world_size, 2);
    EXPECT_EQ(info.master_addr, "127.0.0.1");
    EXPECT_EQ(info.master_port, 1234);
    EXPECT_EQ(info.source, "options");
  }
}

TEST(DistributedEnv, BadValuesAreValueErrors) {
  {
    ScopedEnv env({{"RANK", "2"}, {"WORLD_SIZE", "2"}});
    EXPECT_TRUE(starts_with(error_of<ValueError>([] { dist::detail::resolve_rank_info({}); }),
                            "[init_process_group] rank 2 is out of range for world size 2"));
  }
  {
    ScopedEnv env({{"RANK", "x1"}, {"WORLD_SIZE", "2"}});
    EXPECT_TRUE(starts_with(error_of<ValueError>([] { dist::detail::resolve_rank_info({}); }),
                            "[init_process_group] environment variable RANK='x1' is not an integer"));
  }
  {
    // env:// needs RANK beside WORLD_SIZE, and a local rank inside the world.
    ScopedEnv env({{"WORLD_SIZE", "4"}});
    EXPECT_EQ(error_of<ValueError>([] { dist::detail::resolve_rank_info({}); }),
              "[init_process_group] environment variable WORLD_SIZE is set (4) but RANK is not; set both, or "
              "neither for a single process");
  }
  {
    ScopedEnv env({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "2"}});
    EXPECT_TRUE(starts_with(error_of<ValueError>([] { dist::detail::resolve_rank_info({}); }),
                            "[init_process_group] local rank 2 is out of range for world size 2"));
  }
  {
    ScopedEnv env({{"RANK", "-1"}, {"WORLD_SIZE", "2"}});
    EXPECT_TRUE(starts_with(error_of<ValueError>([] { dist::detail::resolve_rank_info({}); }),
                            "[init_process_group] rank -1 is out of range for world size 2"));
  }
  {
    ScopedEnv env({{"RANK", "0"}});
    EXPECT_TRUE(starts_with(error_of<ValueError>([] { dist::detail::resolve_rank_info({}); }),
                            "[init_process_group] the rank is 0 but the world size is not known"));
  }
  {
    ScopedEnv env({});
    dist::InitOptions o;
    o.world_size = 0;
    o.rank = 0;
    EXPECT_THROW(dist::detail::resolve_rank_info(o), ValueError);
    o.world_size = 2;
    o.rank = -1;
    EXPECT_THROW(dist::detail::resolve_rank_info(o), ValueError);
    o.rank = 1;
    o.master_port = 70000;
    EXPECT_THROW(dist::detail::resolve_rank_info(o), ValueError);
  }
}

TEST(DistributedStore, SetGetAddAcrossClients) {
  int port = free_port();
  dist::detail::TcpStore s0("127.0.0.1", port, 0, 2, 10s, "test");
  dist::detail::TcpStore s1("127.0.0.1", port, 1, 2, 10s, "test");
  s0.set("a", std::string("x\0y", 3), "test");
  EXPECT_EQ(s1.get("a", "test"), std::string("x\0y", 3));
  EXPECT_EQ(s0.add("n", 5, "test"), 5);
  EXPECT_EQ(s1.add("n", -2, "test"), 3);
  // get blocks until another client sets the key
  auto later = std::async(std::launch::async, [&] { return s1.get("late", "test"); });
  std::this_thread::sleep_for(50ms);
  s0.set("late", std::string(100000, 'z'), "test");
  EXPECT_EQ(later.get(), std::string(100000, 'z'));
  s1.wait("late", "test");
  s0.set("a", "", "test");
  EXPECT_EQ(s1.get("a", "test"), "");
}

TEST(DistributedStore, WaitsAreBoundedByTheTimeout) {
  int port = free_port();
  // no server: rank 1 gives up connecting
  auto start = std::chrono::steady_clock::now();
  std::string err = error_of<DistributedError>(
      [&] { dist::detail::TcpStore s("127.0.0.1", port, 1, 2, 300ms, "init_process_group"); });
  EXPECT_EQ(
      err, "[init_process_group] rank 1 of 2 timed out after 300 ms waiting for the TCP store at 127.0.0.1:" +
               std::to_string(port));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  // a key nobody sets
  dist::detail::TcpStore s0("127.0.0.1", port, 0, 2, 300ms, "init_process_group");
  err = error_of<DistributedError>([&] { s0.get("never", "barrier"); });
  EXPECT_EQ(
      err,
      "[barrier] rank 0 of 2 timed out after 300 ms waiting for key 'never' in the TCP store at 127.0.0.1:" +
          std::to_string(port));
  // a port that is taken
  EXPECT_THROW(dist::detail::TcpStore("127.0.0.1", port, 0, 2, 300ms, "init_process_group"),
               DistributedError);
  EXPECT_THROW(dist::detail::TcpStore("", 0, 0, 2, 300ms, "init_process_group"), ValueError);
}

TEST(DistributedStore, BootstrapAmongThreeThreads) {
  int port = free_port();
  auto rank_main = [&](int r) {
    dist::detail::RankInfo info = local_rank(r, 3, port);
    auto b = dist::detail::make_bootstrap(info, 10s);
    EXPECT_EQ(b->rank(), r);
    EXPECT_EQ(b->size(), 3);
    std::string from1 = b->broadcast(r == 1 ? "one" : "", 1, "test");
    auto all = b->all_gather(std::string(size_t(r), char('a' + r)), "test");
    b->barrier("test");
    b->barrier("test");
    std::string from0 = b->broadcast(r == 0 ? "zero" : "", 0, "test");
    b->barrier("test");  // rank 0 serves the store until everyone is done
    return from1 + "|" + all[0] + "," + all[1] + "," + all[2] + "|" + from0;
  };
  auto f0 = std::async(std::launch::async, rank_main, 0);
  auto f2 = std::async(std::launch::async, rank_main, 2);
  auto f1 = std::async(std::launch::async, rank_main, 1);
  for (auto* f : {&f0, &f1, &f2}) EXPECT_EQ(f->get(), "one|,b,cc|zero");
  dist::detail::RankInfo one;
  auto b = dist::detail::make_bootstrap(one, 1s);
  EXPECT_EQ(b->all_gather("x", "test"), std::vector<std::string>{"x"});
}

TEST(DistributedStore, FreeFunctionsBeforeInit) {
  ASSERT_FALSE(dist::is_initialized());
  EXPECT_EQ(error_of<DistributedError>([] { dist::get_rank(); }),
            "[get_rank] the default process group has not been initialized; call init_process_group first");
  EXPECT_THROW(dist::get_world_size(), DistributedError);
  EXPECT_THROW(dist::default_group(), DistributedError);
  EXPECT_THROW(dist::destroy_process_group(), DistributedError);
  Tensor t;
  EXPECT_TRUE(starts_with(error_of<DistributedError>([&] { dist::all_reduce(t); }), "[all_reduce] "));
  EXPECT_EQ(error_of<ValueError>([] { dist::init_process_group("tcp"); }),
            "[init_process_group] unknown backend 'tcp' (expected \"gloo\", \"mpi\" or \"nccl\")");
  EXPECT_TRUE(starts_with(error_of<ValueError>([] { dist::init_process_group("Nccl2"); }),
                          "[init_process_group] unknown backend 'Nccl2'"));
  // Names are case-insensitive: "NCCL" is the nccl backend (which then needs a GPU).
  if (!cuda::is_available()) {
    const std::string e = error_of<Error>([] { dist::init_process_group("NCCL"); });
    EXPECT_EQ(e.find("unknown backend"), std::string::npos) << e;
    EXPECT_NE(e, "no error");
  }
  EXPECT_FALSE(dist::is_initialized());
  EXPECT_EQ(std::string(dist::reduce_op_name(dist::ReduceOp::PRODUCT)), "PRODUCT");
}

// The gloo backend as one process: any case of its name, and every collective the identity.
TEST(DistributedGloo, OneProcessAndTheNamesCase) {
  if (!dist::is_gloo_available()) GTEST_SKIP() << "built without Gloo";
  ScopedEnv env({});
  dist::init_process_group("GLOO");
  EXPECT_EQ(dist::get_backend(), "gloo");
  EXPECT_EQ(dist::get_world_size(), 1);
  EXPECT_EQ(dist::get_rank(), 0);
  Tensor x = tensor({1.5, -2.0, 4.0}).to(kFloat64);
  dist::all_reduce(x, dist::ReduceOp::AVG);
  EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{1.5, -2.0, 4.0}));
  std::vector<Tensor> outs{zeros({3}, TensorOptions(kFloat64))};
  dist::all_gather(outs, x);
  EXPECT_EQ(outs[0].to_vector<double>(), (std::vector<double>{1.5, -2.0, 4.0}));
  Tensor o = zeros({2}, TensorOptions(kInt32));
  dist::reduce_scatter(o, {tensor({7, 8}).to(kInt32)}, dist::ReduceOp::PRODUCT);
  EXPECT_EQ(o.to_vector<double>(), (std::vector<double>{7, 8}));
  dist::barrier();
  EXPECT_TRUE(
      starts_with(error_of<ValueError>([&] { dist::send(x, 0); }), "[send] dst 0 is this process's own"));
  // A value outside ReduceOp is refused by the collective called, before the transport sees it;
  // the tensors stay as they were.
  for (int bad : {5, 6, -1, 255}) {
    const auto rop = static_cast<dist::ReduceOp>(bad);
    const std::string v = std::to_string(bad) + " is not a valid ReduceOp";
    EXPECT_EQ(error_of<ValueError>([&] { dist::all_reduce(x, rop); }), "[all_reduce] " + v);
    EXPECT_EQ(error_of<ValueError>([&] { dist::reduce(x, 0, rop); }), "[reduce] " + v);
    EXPECT_EQ(error_of<ValueError>([&] { dist::reduce_scatter(o, {tensor({1, 2}).to(kInt32)}, rop); }),
              "[reduce_scatter] " + v);
    EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{1.5, -2.0, 4.0}));
    EXPECT_EQ(o.to_vector<double>(), (std::vector<double>{7, 8}));
  }
  dist::destroy_process_group();
  EXPECT_FALSE(dist::is_initialized());
}

// Three ranks as threads of this process, each with its own gloo group, meeting through the TCP
// store: the collectives' values against sums computed by hand.
TEST(DistributedGloo, RanksAsThreads) {
  if (!dist::is_gloo_available()) GTEST_SKIP() << "built without Gloo";
  int port = free_port();
  constexpr int kWorld = 3;
  auto rank_main = [&](int r) {
    dist::detail::RankInfo info = local_rank(r, kWorld, port);
    dist::InitOptions o;
    o.timeout = 20s;
    auto g = dist::detail::make_gloo_group(info, o);
    std::vector<std::vector<double>> got;
    // all_reduce: SUM of (r + 1) * [1, 2, 3] in float32; MAX over int64; SUM in bfloat16
    Tensor a = tensor({1.0, 2.0, 3.0}).to(kFloat32) * double(r + 1);
    g->all_reduce(a, dist::ReduceOp::SUM).wait();
    got.push_back(a.to_vector<double>());
    Tensor m = tensor({int64_t(r), int64_t(-r), int64_t(10 * r)});
    g->all_reduce(m, dist::ReduceOp::MAX).wait();
    got.push_back(m.to_vector<double>());
    Tensor h = full({2}, 0.5 * (r + 1), TensorOptions(kBFloat16));
    g->all_reduce(h, dist::ReduceOp::SUM).wait();
    got.push_back(h.to_vector<double>());
    // broadcast from rank 2
    Tensor b = full({2}, double(r), TensorOptions(kFloat64));
    g->broadcast(b, 2).wait();
    got.push_back(b.to_vector<double>());
    // all_gather: rank q gives q + 1 values 10 q + i
    std::vector<Tensor> outs;
    for (int q = 0; q < kWorld; ++q) outs.push_back(zeros({q + 1}, TensorOptions(kInt64)));
    g->all_gather(outs, arange(r + 1, TensorOptions(kInt64)) + int64_t(10 * r)).wait();
    for (const Tensor& t : outs) got.push_back(t.to_vector<double>());
    // reduce_scatter: inputs[q] of q + 1 values r + q; rank r's output: the sum over ranks
    std::vector<Tensor> ins;
    for (int q = 0; q < kWorld; ++q) ins.push_back(full({q + 1}, double(r + q), TensorOptions(kFloat64)));
    Tensor rs = zeros({r + 1}, TensorOptions(kFloat64));
    g->reduce_scatter(rs, ins, dist::ReduceOp::SUM).wait();
    got.push_back(rs.to_vector<double>());
    // a ring of isend + irecv
    Tensor in = zeros({4}, TensorOptions(kFloat32));
    dist::Work rw = g->recv(in, (r + kWorld - 1) % kWorld, 3);
    dist::Work sw = g->send(full({4}, double(r), TensorOptions(kFloat32)), (r + 1) % kWorld, 3);
    sw.wait();
    rw.wait();
    got.push_back(in.to_vector<double>());
    g->barrier().wait();
    return got;
  };
  std::vector<std::future<std::vector<std::vector<double>>>> ranks;
  for (int r = 0; r < kWorld; ++r) ranks.push_back(std::async(std::launch::async, rank_main, r));
  for (int r = 0; r < kWorld; ++r) {
    auto got = ranks[size_t(r)].get();
    ASSERT_EQ(got.size(), 9u);
    EXPECT_EQ(got[0], (std::vector<double>{6, 12, 18})) << "rank " << r;
    EXPECT_EQ(got[1], (std::vector<double>{2, 0, 20})) << "rank " << r;
    EXPECT_EQ(got[2], (std::vector<double>{3, 3})) << "rank " << r;
    EXPECT_EQ(got[3], (std::vector<double>{2, 2})) << "rank " << r;
    EXPECT_EQ(got[4], (std::vector<double>{0})) << "rank " << r;
    EXPECT_EQ(got[5], (std::vector<double>{10, 11})) << "rank " << r;
    EXPECT_EQ(got[6], (std::vector<double>{20, 21, 22})) << "rank " << r;
    // sum over ranks s of (s + r) = 0 + 1 + 2 + 3 r
    EXPECT_EQ(got[7], std::vector<double>(size_t(r + 1), 3.0 + 3 * r)) << "rank " << r;
    EXPECT_EQ(got[8], std::vector<double>(4, double((r + kWorld - 1) % kWorld))) << "rank " << r;
  }
}

// ---- collectives whose arguments differ across ranks (two gloo ranks as threads)

// Runs rank_main(r) for ranks 0 and 1 of a new gloo group each, in threads; their results in
// rank order.
template <class F>
auto on_two_gloo_ranks(F rank_main, std::chrono::milliseconds timeout = 10s) {
  int port = free_port();
  auto run = [&](int r) {
    dist::detail::RankInfo info = local_rank(r, 2, port);
    dist::InitOptions o;
    o.timeout = timeout;
    return rank_main(r, dist::detail::make_gloo_group(info, o));
  };
  auto r0 = std::async(std::launch::async, run, 0);
  auto r1 = std::async(std::launch::async, run, 1);
  return std::vector{r0.get(), r1.get()};
}

// What call raised (its DistributedError's message) and whether it left its input as it was.
struct Outcome {
  std::string error = "no error";
  bool unchanged = false;
};
template <class F>
Outcome outcome(const Tensor& input, F call) {
  Tensor before = input.clone();
  Outcome o;
  try {
    call();
  } catch (const DistributedError& e) {
    o.error = e.what();
  }
  o.unchanged = before.to_vector<double>() == input.to_vector<double>();
  return o;
}

constexpr const char* kByDefault =
    " (the ranks' collectives must match; checked by default, WICK_DISTRIBUTED_DEBUG=1 checks every call)";

// The default check: the first call of each op kind and the calls at ordinals 2^k are compared
// across ranks; a mismatch raises on every rank naming the op called, runs nothing, and leaves
// the group usable.
TEST(DistributedGloo, MismatchedCollectivesRaiseOnEveryRankUnderTheDefaultCheck) {
  if (!dist::is_gloo_available()) GTEST_SKIP() << "built without Gloo";
  auto results = on_two_gloo_ranks([](int r, std::shared_ptr<dist::ProcessGroup> inner) {
    auto g = dist::detail::make_checked_group(inner, Device(kCPU), dist::detail::CheckMode::kSampled);
    std::vector<Outcome> got;
    // 1: all_reduce, numel 4 and 5
    Tensor a = full({4 + r}, double(r + 1));
    got.push_back(outcome(a, [&] { g->all_reduce(a, dist::ReduceOp::SUM).wait(); }));
    // 2: broadcast, each rank its own root
    Tensor b = full({3}, double(r + 1));
    got.push_back(outcome(b, [&] { g->broadcast(b, r).wait(); }));
    // 3: all_gather, float32 and float64
    Tensor c = full({2}, double(r + 1), TensorOptions(r == 0 ? kFloat32 : kFloat64));
    std::vector<Tensor> outs{zeros({2}, c.options()), zeros({2}, c.options())};
    got.push_back(outcome(outs[0], [&] { g->all_gather(outs, c).wait(); }));
    // 4: reduce_scatter, the second input of 2 and 3 elements
    std::vector<Tensor> ins{full({2}, 1.0), full({2 + r}, 1.0)};
    Tensor d = zeros({r == 0 ? 2 : 2 + r});
    got.push_back(outcome(d, [&] { g->reduce_scatter(d, ins, dist::ReduceOp::SUM).wait(); }));
    // 5-7: matching all_reduces run (not checked); 8: int32 and int64
    for (int i = 0; i < 3; ++i) {
      Tensor m = full({2}, double(r + 1));
      got.push_back(outcome(m, [&] { g->all_reduce(m, dist::ReduceOp::SUM).wait(); }));
      got.back().unchanged = m.to_vector<double>() == std::vector<double>{3, 3};  // here: summed
    }
    Tensor e = full({3}, 1.0, TensorOptions(r == 0 ? kInt32 : kInt64));
    got.push_back(outcome(e, [&] { g->all_reduce(e, dist::ReduceOp::MAX).wait(); }));
    // 9: the group is still usable
    Tensor f = full({2}, double(r + 1));
    got.push_back(outcome(f, [&] { g->all_reduce(f, dist::ReduceOp::SUM).wait(); }));
    got.back().unchanged = f.to_vector<double>() == std::vector<double>{3, 3};
    return got;
  });
  const std::vector<std::string> want = {
      "[all_reduce] rank 1 called all_reduce(op=SUM) on float32[5], rank 0 called all_reduce(op=SUM) on float32[4]",
      "[broadcast] rank 1 called broadcast(src=1) on float32[3], rank 0 called broadcast(src=0) on float32[3]",
      "[all_gather] rank 1 called all_gather on float64[2] with a list of 2 tensors, rank 0 called all_gather on "
      "float32[2] with a list of 2 tensors",
      "[reduce_scatter] rank 1 called reduce_scatter(op=SUM) on float32[3] with a list of 2 tensors, rank 0 "
      "called reduce_scatter(op=SUM) on float32[2] with a list of 2 tensors",
      "no error",
      "no error",
      "no error",
      "[all_reduce] rank 1 called all_reduce(op=MAX) on int64[3], rank 0 called all_reduce(op=MAX) on int32[3]",
      "no error"};
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(results[size_t(r)].size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      const Outcome& o = results[size_t(r)][i];
      EXPECT_EQ(o.error, want[i] == "no error" ? want[i] : want[i] + kByDefault) << "rank " << r << ", call " << i + 1;
      EXPECT_TRUE(o.unchanged) << "rank " << r << ", call " << i + 1;
    }
  }
}

// Without the check (WICK_DISTRIBUTED_DEBUG=OFF) ranks whose calls differ never meet with buffers
// of other sizes (which Gloo's transport does not survive) nor return garbage: they raise
// DistributedError naming the op called, the ranks that wait for the others after the timeout.
TEST(DistributedGloo, UncheckedMismatchesRaiseNamingTheOp) {
  if (!dist::is_gloo_available()) GTEST_SKIP() << "built without Gloo";
  // broadcast: 8 elements from rank 0, 4 on rank 1 (the root's send may complete)
  auto b = on_two_gloo_ranks(
      [](int r, std::shared_ptr<dist::ProcessGroup> g) {
        Tensor x = full({r == 0 ? 8 : 4}, double(r + 1));
        return outcome(x, [&] { g->broadcast(x, 0).wait(); });
      },
      2s);
  // Rank 1 times out, unless rank 0, its send done, has closed its connections first.
  const std::string tail = " (rank 1 of 2, gloo); the process group can no longer be used";
  EXPECT_TRUE(b[1].error == "[broadcast] timed out after 2000 ms" + tail ||
              (starts_with(b[1].error, "[broadcast] Connection closed by peer") &&
               b[1].error.size() > tail.size() && b[1].error.substr(b[1].error.size() - tail.size()) == tail))
      << b[1].error;
  // The root's send may complete, or fail once rank 1 has given up and closed its connections.
  EXPECT_TRUE(b[0].error == "no error" || starts_with(b[0].error, "[broadcast] ")) << b[0].error;
  for (const Outcome& o : b) EXPECT_TRUE(o.unchanged);
  // all_reduce: SUM and MAX
  auto a = on_two_gloo_ranks(
      [](int r, std::shared_ptr<dist::ProcessGroup> g) {
        Tensor x = full({3}, double(r + 1));
        return outcome(x, [&] { g->all_reduce(x, r == 0 ? dist::ReduceOp::SUM : dist::ReduceOp::MAX).wait(); });
      },
      2s);
  // Each rank times out, unless the other timed out first and closed its connections: then it
  // learns of the failure from the transport. Either way the error names the op and the group.
  int timed_out = 0;
  for (int r = 0; r < 2; ++r) {
    const std::string& e = a[size_t(r)].error;
    const std::string tail = " (rank " + std::to_string(r) + " of 2, gloo); the process group can no longer be used";
    if (e == "[all_reduce] timed out after 2000 ms" + tail) ++timed_out;
    else EXPECT_TRUE(starts_with(e, "[all_reduce] ") && e.ends_with(tail)) << e;
    EXPECT_TRUE(a[size_t(r)].unchanged);
  }
  EXPECT_GE(timed_out, 1);
  // reduce_scatter: the second input of 2 and 3 elements; every rank sees the difference at once
  auto rs = on_two_gloo_ranks(
      [](int r, std::shared_ptr<dist::ProcessGroup> g) {
        std::vector<Tensor> ins{full({2}, 1.0), full({2 + r}, 1.0)};
        Tensor out = zeros({r == 0 ? 2 : 3});
        return outcome(out, [&] { g->reduce_scatter(out, ins, dist::ReduceOp::SUM).wait(); });
      },
      2s);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(rs[size_t(r)].error, "[reduce_scatter] the ranks passed input_list of different sizes or dtypes, or "
                                   "different ops (rank " + std::to_string(r) +
                                       " of 2, gloo); the process group can no longer be used");
    EXPECT_TRUE(rs[size_t(r)].unchanged);
  }
}

// WICK_DISTRIBUTED_DEBUG takes OFF, INFO, DETAIL, 0 and 1 in any case; anything else is an error
// of init_process_group before any rank is contacted.
TEST(DistributedEnv, DistributedDebugValues) {
  if (!dist::is_gloo_available()) GTEST_SKIP() << "built without Gloo";
  for (const char* v : {"off", "0", "INFO", "detail", "1", ""}) {
    ScopedEnv env({{"WICK_DISTRIBUTED_DEBUG", v}});
    dist::init_process_group("gloo");
    Tensor x = tensor({1.0, 2.0});
    dist::all_reduce(x);
    EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{1, 2})) << v;
    EXPECT_EQ(dist::default_group()->backend(), "gloo");
    dist::destroy_process_group();
  }
  ScopedEnv env({{"WICK_DISTRIBUTED_DEBUG", "verbose"}});
  EXPECT_EQ(error_of<ValueError>([] { dist::init_process_group("gloo"); }),
            "[init_process_group] WICK_DISTRIBUTED_DEBUG must be OFF, INFO or DETAIL (or 0 or 1), got 'verbose'");
  EXPECT_FALSE(dist::is_initialized());
}

}  // namespace
}  // namespace wick
