// The CPU backends' collectives (mpi, or gloo with WICK_TEST_BACKEND=gloo) against values
// computed by hand from the rank numbers. Every rank runs every test, in the same order (a test
// skipped on one rank only would leave the others waiting).
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "dist_test_util.h"
#include "distributed/checked_group.h"
#include "distributed/internal.h"
#include "wick/cuda.h"
#include "wick/distributed.h"
#include "wick/ops.h"

namespace wick {
namespace {

namespace dist = wick::distributed;
using dist::ReduceOp;
using dist_test::expect_error_prefix;
using dist_test::expected;
using dist_test::test_backend;

int rank() { return dist::get_rank(); }
int world() { return dist::get_world_size(); }

const Dtype kDtypes[] = {kFloat32, kFloat64, kInt64, kInt32, kFloat16, kBFloat16};
const ReduceOp kOps[] = {ReduceOp::SUM, ReduceOp::AVG, ReduceOp::PRODUCT, ReduceOp::MIN, ReduceOp::MAX};

// Rank r's value at i: r + 1 + i.
Tensor ranked(int r, int64_t n, Dtype t) {
  Tensor x = empty({n}, TensorOptions(kFloat64));
  for (int64_t i = 0; i < n; ++i) x.data_ptr<double>()[i] = r + 1 + i;
  return x.to(t);
}

bool supports(ReduceOp op, Dtype t) { return op != ReduceOp::AVG || is_floating_point(t); }

std::string what(ReduceOp op, Dtype t) {
  return std::string(dist::reduce_op_name(op)) + " " + std::string(name(t));
}

void expect_values(const Tensor& got, const std::vector<double>& want, const std::string& ctx) {
  auto v = got.to_vector<double>();
  ASSERT_EQ(v.size(), want.size()) << ctx;
  for (size_t i = 0; i < v.size(); ++i) {
    double tol = got.dtype() == kFloat16 || got.dtype() == kBFloat16 ? 1e-2 * std::abs(want[i])
                                                                     : 1e-6 * std::abs(want[i]);
    EXPECT_NEAR(v[i], want[i], tol) << ctx << " at " << i << " (rank " << rank() << ")";
  }
}

TEST(DistributedCpu, Basics) {
  EXPECT_TRUE(dist::is_initialized());
  EXPECT_EQ(dist::get_backend(), test_backend());
  EXPECT_GE(world(), 1);
  EXPECT_GE(rank(), 0);
  EXPECT_LT(rank(), world());
  EXPECT_GE(dist::get_local_rank(), 0);
  EXPECT_EQ(dist::default_group()->size(), world());
  EXPECT_STREQ(dist::reduce_op_name(ReduceOp::AVG), "AVG");
  EXPECT_THROW(dist::init_process_group("mpi"), Error);
  EXPECT_THROW(dist::init_process_group("gloo"), Error);
}

TEST(DistributedCpu, AllReduceEveryOpAndDtype) {
  for (Dtype t : kDtypes)
    for (ReduceOp op : kOps) {
      if (!supports(op, t)) continue;
      Tensor x = ranked(rank(), 4, t);
      dist::all_reduce(x, op);
      EXPECT_EQ(x.dtype(), t);
      std::vector<double> want;
      for (int64_t i = 0; i < 4; ++i) want.push_back(expected(op, world(), i));
      expect_values(x, want, "all_reduce " + what(op, t));
    }
}

TEST(DistributedCpu, AllReduceBoolIsLogical) {
  int w = world();
  for (ReduceOp op : {ReduceOp::SUM, ReduceOp::PRODUCT, ReduceOp::MIN, ReduceOp::MAX}) {
    Tensor x = tensor({rank() == 0, true, false, rank() % 2 == 1}).to(kBool);
    dist::all_reduce(x, op);
    bool any = op == ReduceOp::SUM || op == ReduceOp::MAX;
    std::vector<double> want = any ? std::vector<double>{1, 1, 0, w > 1 ? 1.0 : 0.0}
                                   : std::vector<double>{w == 1 ? 1.0 : 0.0, 1, 0, 0};
    expect_values(x, want, std::string("bool ") + dist::reduce_op_name(op));
  }
}

TEST(DistributedCpu, AllReduceOnAViewAndEmpty) {
  Tensor base = zeros({3, 4}, TensorOptions(kFloat64));
  Tensor row = base.select(0, 1);  // contiguous view of row 1
  row.fill_(double(rank() + 1));
  dist::all_reduce(row);
  double s = world() * (world() + 1) / 2.0;
  expect_values(base.select(0, 1), {s, s, s, s}, "row view");
  expect_values(base.select(0, 0), {0, 0, 0, 0}, "untouched row");
  Tensor e = empty({0}, TensorOptions(kFloat32));
  dist::all_reduce(e);
  EXPECT_EQ(e.numel(), 0);
}

TEST(DistributedCpu, AvgOfIntegersIsATypeError) {
  Tensor x = ranked(rank(), 3, kInt64);
  EXPECT_THROW(dist::all_reduce(x, ReduceOp::AVG), TypeError);
  expect_error_prefix([&] { dist::all_reduce(x, ReduceOp::AVG); }, "[all_reduce] ");
  expect_values(x, {double(rank() + 1), double(rank() + 2), double(rank() + 3)}, "unchanged");
}

TEST(DistributedCpu, BroadcastFromEveryRank) {
  for (Dtype t : {kFloat32, kFloat64, kInt64, kBFloat16, kBool})
    for (int src = 0; src < world(); ++src) {
      Tensor x = (ranked(rank(), 5, kFloat64) * 10).to(t);
      dist::broadcast(x, src);
      Tensor want = (ranked(src, 5, kFloat64) * 10).to(t);
      expect_values(x, want.to_vector<double>(), "broadcast src " + std::to_string(src));
    }
}

TEST(DistributedCpu, ReduceToEveryRank) {
  for (Dtype t : {kFloat32, kFloat64, kInt64, kFloat16})
    for (ReduceOp op : kOps)
      for (int dst = 0; dst < world(); ++dst) {
        if (!supports(op, t)) continue;
        Tensor x = ranked(rank(), 3, t);
        dist::reduce(x, dst, op);
        std::vector<double> want;
        for (int64_t i = 0; i < 3; ++i)
          want.push_back(rank() == dst ? expected(op, world(), i) : rank() + 1 + i);
        expect_values(x, want, "reduce " + what(op, t) + " dst " + std::to_string(dst));
      }
}

TEST(DistributedCpu, AllGatherEvenAndUneven) {
  for (Dtype t : {kFloat32, kInt64, kFloat16}) {
    // even: every rank 2x2
    Tensor in = (ranked(rank(), 4, kFloat64) * 100).to(t).view({2, 2});
    std::vector<Tensor> outs;
    for (int r = 0; r < world(); ++r) outs.push_back(full({2, 2}, -1.0, TensorOptions(t)));
    dist::all_gather(outs, in);
    for (int r = 0; r < world(); ++r)
      expect_values(outs[size_t(r)], (ranked(r, 4, kFloat64) * 100).to_vector<double>(), "all_gather even");
    // uneven: rank r gives r + 1 elements, 100 r + i
    Tensor u = (arange(rank() + 1, TensorOptions(kFloat64)) + 100.0 * rank()).to(t);
    std::vector<Tensor> uo;
    for (int r = 0; r < world(); ++r) uo.push_back(zeros({r + 1}, TensorOptions(t)));
    dist::Work w = dist::all_gather(uo, u, /*async_op=*/true);
    w.wait();
    EXPECT_EQ(w.result().size(), size_t(world()));
    for (int r = 0; r < world(); ++r) {
      std::vector<double> want;
      for (int i = 0; i <= r; ++i) want.push_back(100.0 * r + i);
      expect_values(uo[size_t(r)], want, "all_gather uneven from " + std::to_string(r));
    }
  }
}

TEST(DistributedCpu, ReduceScatterEvenAndUneven) {
  int w = world();
  for (Dtype t : {kFloat32, kFloat64, kInt64, kBFloat16})
    for (ReduceOp op : kOps) {
      if (!supports(op, t)) continue;
      // uneven: the output of rank q has q + 1 elements; rank r's inputs[q][i] = r + 1 + i + q.
      std::vector<Tensor> ins;
      for (int q = 0; q < w; ++q) ins.push_back((ranked(rank(), q + 1, kFloat64) + double(q)).to(t));
      Tensor out = zeros({rank() + 1}, TensorOptions(t));
      dist::reduce_scatter(out, ins, op);
      std::vector<double> want;
      for (int i = 0; i <= rank(); ++i) want.push_back(expected(op, w, i, rank()));
      expect_values(out, want, "reduce_scatter uneven " + what(op, t));
      // even: 2 elements each
      std::vector<Tensor> even;
      for (int q = 0; q < w; ++q) even.push_back((ranked(rank(), 2, kFloat64) + double(q)).to(t));
      Tensor eo = zeros({2}, TensorOptions(t));
      dist::reduce_scatter(eo, even, op);
      expect_values(eo, {expected(op, w, 0, rank()), expected(op, w, 1, rank())},
                    "reduce_scatter even " + what(op, t));
    }
}

TEST(DistributedCpu, AsyncWorkAndBarrier) {
  Tensor x = ranked(rank(), 1000, kFloat64);
  dist::Work w = dist::all_reduce(x, ReduceOp::MAX, /*async_op=*/true);
  (void)w.is_completed();  // false or true, never throws here
  Tensor y = ranked(rank(), 10, kFloat32);
  dist::Work w2 = dist::broadcast(y, 0, /*async_op=*/true);
  w2.wait();  // in call order: the all_reduce is done too
  EXPECT_TRUE(w.is_completed());
  w.wait();
  ASSERT_EQ(w.result().size(), 1u);
  EXPECT_EQ(w.result()[0].data_ptr(), x.data_ptr());
  std::vector<double> want;
  for (int i = 0; i < 1000; ++i) want.push_back(world() + i);
  expect_values(x, want, "async all_reduce");
  expect_values(y, ranked(0, 10, kFloat64).to_vector<double>(), "async broadcast");
  dist::barrier();
  dist::Work b = dist::barrier(/*async_op=*/true);
  b.wait();
  EXPECT_TRUE(b.is_completed());
  dist::Work none;
  EXPECT_TRUE(none.is_completed());
  none.wait();
  EXPECT_TRUE(none.result().empty());
  dist::Work done = dist::detail::completed_work("x", {x});
  EXPECT_TRUE(done.is_completed());
  EXPECT_EQ(done.result().size(), 1u);
}

TEST(DistributedCpu, SendRecvRing) {
  int w = world();
  if (w == 1) GTEST_SKIP() << "one rank";
  int next = (rank() + 1) % w, prev = (rank() + w - 1) % w;
  Tensor out = ranked(rank(), 1 << 18, kFloat32);  // 1 MiB: past the eager protocol
  Tensor in = zeros({1 << 18}, TensorOptions(kFloat32));
  dist::Work r = dist::irecv(in, prev, 7);
  dist::Work s = dist::isend(out, next, 7);
  s.wait();
  r.wait();
  ASSERT_EQ(r.result().size(), 1u);
  auto v = in.to_vector<float>();
  EXPECT_EQ(v[0], float(prev + 1));
  EXPECT_EQ(v[(1 << 18) - 1], float(prev + (1 << 18)));
  // tags keep two messages apart; blocking forms
  if (rank() == 0) {
    dist::send(full({2}, 1.0, TensorOptions(kInt64)), 1, 1);
    dist::send(full({2}, 2.0, TensorOptions(kInt64)), 1, 2);
  } else if (rank() == 1) {
    Tensor a = zeros({2}, TensorOptions(kInt64)), b = zeros({2}, TensorOptions(kInt64));
    dist::Work wb = dist::irecv(b, 0, 2);
    dist::recv(a, 0, 1);
    wb.wait();
    expect_values(a, {1, 1}, "tag 1");
    expect_values(b, {2, 2}, "tag 2");
  }
  dist::barrier();
}

// A blocking send completes while a receive posted before it still waits (for a message the peer
// sends only after that send and a second one).
TEST(DistributedCpu, SendCompletesBeforeAnEarlierReceive) {
  if (world() == 1) GTEST_SKIP() << "one rank";
  if (rank() == 0) {
    Tensor a = zeros({3}, TensorOptions(kInt64));
    dist::Work r = dist::irecv(a, 1, 5);
    dist::send(full({2}, 6.0, TensorOptions(kInt64)), 1, 6);
    dist::send(full({2}, 7.0, TensorOptions(kInt64)), 1, 7);
    r.wait();
    expect_values(a, {5, 5, 5}, "the receive posted first");
  } else if (rank() == 1) {
    Tensor b = zeros({2}, TensorOptions(kInt64)), d = zeros({2}, TensorOptions(kInt64));
    dist::recv(b, 0, 6);
    dist::recv(d, 0, 7);
    dist::send(full({3}, 5.0, TensorOptions(kInt64)), 0, 5);
    expect_values(b, {6, 6}, "tag 6");
    expect_values(d, {7, 7}, "tag 7");
  }
  dist::barrier();
}

TEST(DistributedCpu, ErrorsBeforeAnythingIsQueued) {
  int w = world();
  Tensor x = ranked(rank(), 6, kFloat32).view({2, 3});
  Tensor nc = x.t();
  expect_error_prefix([&] { dist::all_reduce(nc); }, "[all_reduce] tensors must be contiguous");
  expect_error_prefix([&] { dist::broadcast(x, w); }, "[broadcast] src");
  expect_error_prefix([&] { dist::broadcast(x, -1); }, "[broadcast] src");
  expect_error_prefix([&] { dist::reduce(x, w); }, "[reduce] dst");
  expect_error_prefix([&] { dist::send(x, rank()); }, "[send] ");
  expect_error_prefix([&] { dist::recv(x, w); }, "[recv] ");
  expect_error_prefix([&] { dist::send(x, (rank() + 1) % w, -3); }, "[send] ");
  Tensor undefined;
  expect_error_prefix([&] { dist::all_reduce(undefined); }, "[all_reduce] ");
  std::vector<Tensor> too_many;
  for (int r = 0; r <= w; ++r) too_many.push_back(zeros({2, 3}));
  expect_error_prefix([&] { dist::all_gather(too_many, x); }, "[all_gather] tensor_list has");
  std::vector<Tensor> wrong_dtype;
  for (int r = 0; r < w; ++r) wrong_dtype.push_back(zeros({2, 3}, TensorOptions(kFloat64)));
  EXPECT_THROW(dist::all_gather(wrong_dtype, x), TypeError);
  std::vector<Tensor> wrong_size;
  for (int r = 0; r < w; ++r) wrong_size.push_back(zeros({5}));
  expect_error_prefix([&] { dist::all_gather(wrong_size, x); }, "[all_gather] ");
  Tensor o = zeros({2, 3});
  expect_error_prefix([&] { dist::reduce_scatter(o, too_many); }, "[reduce_scatter] input_list has");
  expect_error_prefix([&] { dist::reduce_scatter(o, wrong_size); }, "[reduce_scatter] ");
  if (cuda::is_available()) {
    Tensor g = x.cuda();
    EXPECT_THROW(dist::all_reduce(g), DeviceError);
    expect_error_prefix([&] { dist::all_reduce(g); },
                        "[all_reduce] the " + test_backend() + " backend takes CPU tensors");
  }
  // nothing changed, and the group still works
  expect_values(x.view({6}), ranked(rank(), 6, kFloat64).to_vector<double>(), "unchanged");
  dist::all_reduce(x);
  std::vector<double> want;
  for (int i = 0; i < 6; ++i) want.push_back(expected(ReduceOp::SUM, w, i));
  expect_values(x.view({6}), want, "after the errors");
}

TEST(DistributedCpu, FreeFunctionsNeedAGroup) {
  // Works on a given group without touching the default one.
  dist::Work b = dist::barrier(false, dist::default_group());
  EXPECT_TRUE(b.is_completed());
}

// WICK_DISTRIBUTED_DEBUG's check, on the default group wrapped by hand.
TEST(DistributedDebug, MismatchNamesTheRankThatDiffers) {
  auto g = dist::detail::make_checked_group(dist::default_group(), Device(kCPU));
  Tensor x = ranked(rank(), 4, kFloat32);
  dist::all_reduce(x, ReduceOp::SUM, false, g);  // matching calls run
  std::vector<double> want;
  for (int i = 0; i < 4; ++i) want.push_back(expected(ReduceOp::SUM, world(), i));
  expect_values(x, want, "checked all_reduce");
  std::vector<Tensor> outs;
  for (int r = 0; r < world(); ++r) outs.push_back(zeros({r + 1}));
  dist::all_gather(outs, zeros({rank() + 1}), false, g);  // uneven sizes are fine
  if (world() == 1) GTEST_SKIP() << "one rank";
  Tensor y = full({4}, 1.0);
  std::string err;
  try {
    if (rank() == 1) dist::broadcast(y, 0, false, g);
    else dist::all_reduce(y, ReduceOp::SUM, false, g);
  } catch (const DistributedError& e) {
    err = e.what();
  }
  std::string mine = rank() == 1 ? "[broadcast] " : "[all_reduce] ";
  EXPECT_EQ(err, mine +
                     "rank 1 called broadcast(src=0) on float32[4], rank 0 called all_reduce(op=SUM) on "
                     "float32[4] (WICK_DISTRIBUTED_DEBUG)");
  expect_values(y, {1, 1, 1, 1}, "not run");
  // different sizes
  Tensor z = zeros({rank() == 0 ? 3 : 2, 2}, TensorOptions(kInt64));
  try {
    dist::all_reduce(z, ReduceOp::MAX, false, g);
    ADD_FAILURE() << "no error";
  } catch (const DistributedError& e) {
    EXPECT_EQ(std::string(e.what()),
              "[all_reduce] rank 1 called all_reduce(op=MAX) on int64[2, 2], rank 0 called "
              "all_reduce(op=MAX) on int64[3, 2] (WICK_DISTRIBUTED_DEBUG)");
  }
  dist::barrier(false, g);
  // Under WICK_DISTRIBUTED_DEBUG=1 the default group itself checks.
  const char* debug = std::getenv("WICK_DISTRIBUTED_DEBUG");
  if (debug && std::string(debug) == "1") {
    std::string derr;
    try {
      if (rank() == 1) dist::broadcast(y, 0);
      else dist::all_reduce(y);
    } catch (const DistributedError& e) {
      derr = e.what();
    }
    EXPECT_EQ(derr, err);
  }
}

// A group with a 2 s timeout: rank 1 comes late to an all_reduce; the others raise within a
// few seconds, and the group is unusable afterwards. Under mpi rank 1 then joins the
// all_reduce, so that no worker stays stuck (gloo's have given up: rank 1 stays away).
TEST(DistributedTimeout, CollectiveThatARankSkipsRaises) {
  if (world() == 1) GTEST_SKIP() << "one rank";
  const bool gloo = test_backend() == "gloo";
  dist::InitOptions o;
  o.timeout = std::chrono::milliseconds(2000);
  auto info = dist::detail::resolve_rank_info(o);
  auto g = gloo ? dist::detail::make_gloo_group(info, o) : dist::detail::make_mpi_group(info, o);
  EXPECT_EQ(g->timeout(), std::chrono::milliseconds(2000));
  if (rank() != 1) {
    Tensor x = ones({4});
    auto start = std::chrono::steady_clock::now();
    std::string err;
    try {
      dist::all_reduce(x, ReduceOp::SUM, false, g);
    } catch (const DistributedError& e) {
      err = e.what();
    }
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::string where = "(rank " + std::to_string(rank()) + " of " + std::to_string(world()) + ", " +
                              test_backend() + "); the process group can no longer be used";
    if (gloo && world() > 2) {
      // The rank that times out first closes its connections: a third rank may see that first.
      EXPECT_EQ(err.rfind("[all_reduce] ", 0), 0u) << err;
      EXPECT_TRUE(err.size() > where.size() && err.substr(err.size() - where.size()) == where) << err;
    } else {
      EXPECT_EQ(err, "[all_reduce] timed out after 2000 ms " + where);
    }
    EXPECT_LT(s, 10.0);
    EXPECT_GE(s, 1.5);
    expect_error_prefix([&] { dist::barrier(false, g); },
                        "[barrier] the process group can no longer be used");
    expect_error_prefix([&] { dist::all_reduce(x, ReduceOp::SUM, false, g); },
                        "[all_reduce] the process group");
  }
  dist::barrier();
  if (rank() == 1 && !gloo) {
    Tensor x = ones({4});
    dist::all_reduce(x, ReduceOp::SUM, false, g);
    expect_values(x, std::vector<double>(4, world()), "late all_reduce");
  }
  dist::barrier();
  g.reset();
}

}  // namespace
}  // namespace wick
