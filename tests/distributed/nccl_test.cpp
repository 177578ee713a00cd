// The nccl backend's collectives on CUDA tensors against values computed by hand from the rank
// numbers. They run when wick_dist_tests' default group is "nccl" (WICK_TEST_BACKEND=nccl, one
// process per GPU: wick-launch --nproc-per-node N wick_dist_tests); else they skip.
#include <chrono>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "dist_test_util.h"
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

int rank() { return dist::get_rank(); }
int world() { return dist::get_world_size(); }

#define WICK_REQUIRE_NCCL_GROUP()                                                             \
  do {                                                                                        \
    if (!dist::is_initialized() || dist::get_backend() != "nccl") GTEST_SKIP() << "not nccl"; \
  } while (0)

Device gpu() { return Device(kCUDA, dist::get_local_rank()); }

const ReduceOp kOps[] = {ReduceOp::SUM, ReduceOp::AVG, ReduceOp::PRODUCT, ReduceOp::MIN, ReduceOp::MAX};

// Rank r's value at i: r + 1 + i, on this process's GPU.
Tensor ranked(int r, int64_t n, Dtype t) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(r + 1 + double(i));
  return from_blob(v.data(), {n}, kFloat64).clone().to(gpu()).to(t);
}

void expect_values(const Tensor& got, const std::vector<double>& want, const std::string& ctx) {
  auto v = got.cpu().to(kFloat64).contiguous().to_vector<double>();
  ASSERT_EQ(v.size(), want.size()) << ctx;
  for (size_t i = 0; i < v.size(); ++i) {
    double tol = got.dtype() == kFloat16 || got.dtype() == kBFloat16 ? 1e-2 * std::abs(want[i]) + 1e-3
                                                                     : 1e-6 * std::abs(want[i]);
    EXPECT_NEAR(v[i], want[i], tol) << ctx << " at " << i << " (rank " << rank() << ")";
  }
}

TEST(DistributedNccl, AllReduceEveryOpAndDtype) {
  WICK_REQUIRE_NCCL_GROUP();
  for (Dtype t : {kFloat32, kFloat64, kInt64, kInt32, kFloat16, kBFloat16, kUInt8})
    for (ReduceOp op : kOps) {
      if (op == ReduceOp::AVG && !is_floating_point(t)) continue;
      Tensor x = ranked(rank(), 3, t);
      dist::all_reduce(x, op);
      EXPECT_EQ(x.dtype(), t);
      EXPECT_EQ(x.device(), gpu());
      std::vector<double> want;
      for (int64_t i = 0; i < 3; ++i) {
        const double w = expected(op, world(), i);
        want.push_back(t == kUInt8 ? std::fmod(w, 256.0) : w);  // uint8 wraps, as in PyTorch (4 ranks: 3*4*5*6)
      }
      expect_values(x, want,
                    std::string("all_reduce ") + dist::reduce_op_name(op) + " " + std::string(name(t)));
    }
  Tensor b = tensor({rank() == 0 ? 1.0 : 0.0, 1.0, 0.0}).to(gpu()).to(kBool);
  dist::all_reduce(b, ReduceOp::SUM);  // logical or
  expect_values(b, {1, 1, 0}, "bool SUM");
  Tensor i = ranked(rank(), 3, kInt64);
  EXPECT_THROW(dist::all_reduce(i, ReduceOp::AVG), TypeError);
  Tensor s = ranked(rank(), 3, kInt16);
  EXPECT_THROW(dist::all_reduce(s), TypeError);
}

TEST(DistributedNccl, AllReduceFollowsTheCurrentStreamsWork) {
  WICK_REQUIRE_NCCL_GROUP();
  // Values written by a kernel just before the collective, on a side stream made current.
  cuda::Stream side = cuda::Stream::create(gpu().index());
  cuda::StreamGuard g(side);
  Tensor x = full({1 << 20}, double(rank() + 1), TensorOptions(kFloat32).device(gpu()));
  x.mul_(2.0);
  dist::all_reduce(x);
  double want = 2.0 * world() * (world() + 1) / 2;
  auto v = x.cpu().to_vector<float>();
  EXPECT_EQ(v.front(), float(want));
  EXPECT_EQ(v.back(), float(want));
}

TEST(DistributedNccl, BroadcastAndReduce) {
  WICK_REQUIRE_NCCL_GROUP();
  for (int src = 0; src < world(); ++src) {
    for (Dtype t : {kFloat32, kInt16, kBool, kBFloat16}) {
      Tensor x = (ranked(rank(), 5, kFloat64) * (t == kBool ? 0 : 1)).to(t);
      if (t == kBool) x = ranked(rank(), 5, kFloat64).gt(double(rank() + 3)).to(kBool);
      Tensor want = t == kBool ? ranked(src, 5, kFloat64).gt(double(src + 3)) : ranked(src, 5, kFloat64);
      dist::broadcast(x, src);
      expect_values(x, want.cpu().to(kFloat64).to_vector<double>(), "broadcast " + std::string(name(t)));
    }
    Tensor y = ranked(rank(), 4, kFloat32);
    dist::reduce(y, src, ReduceOp::MAX);
    std::vector<double> want;
    for (int64_t i = 0; i < 4; ++i)
      want.push_back(rank() == src ? expected(ReduceOp::MAX, world(), i) : rank() + 1 + i);
    expect_values(y, want, "reduce to " + std::to_string(src));
  }
}

TEST(DistributedNccl, AllGatherEvenAndUneven) {
  WICK_REQUIRE_NCCL_GROUP();
  Tensor in = ranked(rank(), 6, kFloat32).view({2, 3});
  std::vector<Tensor> outs;
  for (int r = 0; r < world(); ++r) outs.push_back(full({2, 3}, -1.0, TensorOptions(kFloat32).device(gpu())));
  dist::all_gather(outs, in);
  for (int r = 0; r < world(); ++r)
    expect_values(outs[size_t(r)], ranked(r, 6, kFloat64).cpu().to_vector<double>(),
                  "even from " + std::to_string(r));
  Tensor u = (arange(rank() + 1, TensorOptions(kFloat64)) + 100.0 * rank()).to(gpu());
  std::vector<Tensor> uo;
  for (int r = 0; r < world(); ++r) uo.push_back(zeros({r + 1}, TensorOptions(kFloat64).device(gpu())));
  dist::Work w = dist::all_gather(uo, u, /*async_op=*/true);
  w.wait();
  EXPECT_EQ(w.result().size(), size_t(world()));
  for (int r = 0; r < world(); ++r) {
    std::vector<double> want;
    for (int i = 0; i <= r; ++i) want.push_back(100.0 * r + i);
    expect_values(uo[size_t(r)], want, "uneven from " + std::to_string(r));
  }
}

TEST(DistributedNccl, ReduceScatterEvenAndUneven) {
  WICK_REQUIRE_NCCL_GROUP();
  const int w = world();
  for (ReduceOp op : kOps) {
    std::vector<Tensor> ins, even;
    for (int q = 0; q < w; ++q) {
      ins.push_back(ranked(rank(), q + 1, kFloat64) + double(q));
      even.push_back(ranked(rank(), 2, kFloat64) + double(q));
    }
    Tensor out = zeros({rank() + 1}, TensorOptions(kFloat64).device(gpu()));
    dist::reduce_scatter(out, ins, op);
    std::vector<double> want;
    for (int i = 0; i <= rank(); ++i) want.push_back(expected(op, w, i, rank()));
    expect_values(out, want, std::string("uneven ") + dist::reduce_op_name(op));
    Tensor eo = zeros({2}, TensorOptions(kFloat64).device(gpu()));
    dist::reduce_scatter(eo, even, op);
    expect_values(eo, {expected(op, w, 0, rank()), expected(op, w, 1, rank())},
                  std::string("even ") + dist::reduce_op_name(op));
  }
}

TEST(DistributedNccl, AsyncWorkSendRecvAndBarrier) {
  WICK_REQUIRE_NCCL_GROUP();
  Tensor x = ranked(rank(), 1 << 20, kFloat32);
  dist::Work w = dist::all_reduce(x, ReduceOp::SUM, /*async_op=*/true);
  (void)w.is_completed();
  w.wait();
  EXPECT_TRUE(w.is_completed());
  ASSERT_EQ(w.result().size(), 1u);
  EXPECT_EQ(w.result()[0].data_ptr(), x.data_ptr());
  auto v = x.cpu().to_vector<float>();
  EXPECT_EQ(v[0], float(expected(ReduceOp::SUM, world(), 0)));
  // synchronize(): the current stream waits, the host does not; the values are right after it.
  Tensor y = ranked(rank(), 1000, kFloat64);
  dist::Work w2 = dist::all_reduce(y, ReduceOp::MAX, true);
  w2.synchronize();
  expect_values(y.narrow(0, 998, 2),
                {expected(ReduceOp::MAX, world(), 998), expected(ReduceOp::MAX, world(), 999)},
                "synchronize");
  if (world() > 1) {
    int next = (rank() + 1) % world(), prev = (rank() + world() - 1) % world();
    Tensor out = ranked(rank(), 1 << 16, kFloat32);
    Tensor in = zeros({1 << 16}, TensorOptions(kFloat32).device(gpu()));
    // Sends and receives of a ring must be posted before either is waited for.
    dist::Work r = dist::irecv(in, prev);
    dist::Work s = dist::isend(out, next);
    s.wait();
    r.wait();
    auto iv = in.cpu().to_vector<float>();
    EXPECT_EQ(iv[0], float(prev + 1));
    EXPECT_EQ(iv.back(), float(prev + (1 << 16)));
  }
  dist::barrier();
  dist::Work b = dist::barrier(true);
  b.wait();
  EXPECT_TRUE(b.is_completed());
}

TEST(DistributedNccl, ErrorsBeforeAnythingIsQueued) {
  WICK_REQUIRE_NCCL_GROUP();
  Tensor x = ranked(rank(), 6, kFloat32).view({2, 3});
  expect_error_prefix(
      [&] {
        Tensor nc = x.t();
        dist::all_reduce(nc);
      },
      "[all_reduce] tensors must be contiguous");
  expect_error_prefix(
      [&] {
        Tensor c = x.cpu();
        dist::all_reduce(c);
      },
      "[all_reduce] the nccl backend takes CUDA tensors");
  expect_error_prefix([&] { dist::broadcast(x, world()); }, "[broadcast] src");
  expect_error_prefix([&] { dist::reduce(x, -1); }, "[reduce] dst");
  expect_error_prefix([&] { dist::send(x, rank()); }, "[send] dst");
  std::vector<Tensor> few;
  expect_error_prefix([&] { dist::all_gather(few, x); }, "[all_gather] ");
  if (cuda::device_count() > 1) {
    Tensor other = x.to(Device(kCUDA, (gpu().index() + 1) % int(cuda::device_count())));
    EXPECT_THROW(dist::all_reduce(other), DeviceError);
  }
  expect_values(x.view({6}), ranked(rank(), 6, kFloat64).cpu().to_vector<double>(), "unchanged");
  dist::all_reduce(x);
  std::vector<double> want;
  for (int i = 0; i < 6; ++i) want.push_back(expected(ReduceOp::SUM, world(), i));
  expect_values(x.view({6}), want, "after the errors");
}

// A second nccl group with a 2 s timeout: rank 1 does not join an all_reduce; the others raise
// within a few seconds (the watchdog aborts the communicator), and the group stays unusable.
TEST(DistributedNcclTimeout, CollectiveThatARankSkipsRaises) {
  WICK_REQUIRE_NCCL_GROUP();
  if (world() == 1) GTEST_SKIP() << "one rank";
  dist::InitOptions o;
  o.timeout = std::chrono::milliseconds(2000);
  auto info = dist::detail::resolve_rank_info(o);
  // Outside mpirun the default group's TCP store holds MASTER_PORT: this group's store takes
  // the next port.
  if (!info.launched_by_mpirun && info.master_port > 0) info.master_port += 1;
  auto boot = dist::detail::make_bootstrap(info, std::chrono::milliseconds(60000));
  auto g = dist::detail::make_nccl_group(info, o, *boot);
  if (rank() != 1) {
    Tensor x = ones({4}, TensorOptions(kFloat32).device(gpu()));
    auto start = std::chrono::steady_clock::now();
    std::string err;
    try {
      dist::all_reduce(x, ReduceOp::SUM, false, g);
    } catch (const DistributedError& e) {
      err = e.what();
    }
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(err.rfind("[all_reduce] all_reduce did not finish within the timeout of 2000 ms", 0), 0u)
        << err;
    EXPECT_LT(s, 10.0);
    EXPECT_GE(s, 1.5);
    expect_error_prefix([&] { dist::barrier(false, g); }, "[barrier] all_reduce did not finish");
    // The device is usable: the aborted collective's kernels ended.
    Tensor z = ones({4}, TensorOptions(kFloat32).device(gpu())) * 3.0;
    expect_values(z, {3, 3, 3, 3}, "device still works");
  } else {
    std::this_thread::sleep_for(std::chrono::milliseconds(4000));
  }
  dist::barrier();  // on the default group
}

}  // namespace
}  // namespace wick
