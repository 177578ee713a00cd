// Collectives whose arguments differ across ranks (the CPU backends: mpi, or gloo with
// WICK_TEST_BACKEND=gloo): under the default cross-rank check every rank raises DistributedError
// naming the op it called and runs nothing; without it the transport's own errors name the op.
// Every rank runs every test, in the same order.
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "dist_test_util.h"
#include "distributed/checked_group.h"
#include "distributed/internal.h"
#include "wick/distributed.h"
#include "wick/ops.h"

namespace wick {
namespace {

namespace dist = wick::distributed;
using dist::ReduceOp;
using dist_test::test_backend;

int rank() { return dist::get_rank(); }
int world() { return dist::get_world_size(); }

// A new group of the test's backend with the given timeout, beside the default one.
std::shared_ptr<dist::ProcessGroup> new_group(std::chrono::milliseconds timeout) {
  dist::InitOptions o;
  o.timeout = timeout;
  auto info = dist::detail::resolve_rank_info(o);
  return test_backend() == "gloo" ? dist::detail::make_gloo_group(info, o) : dist::detail::make_mpi_group(info, o);
}

// call's DistributedError message ("no error" when none), and whether input kept its values.
struct Outcome {
  std::string error = "no error";
  bool unchanged = false;
};
template <class F>
Outcome outcome(const Tensor& input, F call) {
  const auto before = input.to_vector<double>();
  Outcome o;
  try {
    call();
  } catch (const DistributedError& e) {
    o.error = e.what();
  }
  o.unchanged = before == input.to_vector<double>();
  return o;
}

const std::string kByDefault =
    " (the ranks' collectives must match; checked by default, WICK_DISTRIBUTED_DEBUG=1 checks every call)";

// init_process_group checks by default (WICK_DISTRIBUTED_DEBUG unset) when there are other
// ranks, and every call under WICK_DISTRIBUTED_DEBUG=1.
TEST(DistributedMismatch, TheDefaultGroupChecksByDefault) {
  const char* debug = std::getenv("WICK_DISTRIBUTED_DEBUG");
  auto g = dist::default_group();
  auto mode = dist::detail::CheckMode::kSampled;
  const bool checked = dist::detail::unchecked(g, &mode) != g;
  if (debug && std::string(debug) == "1") {
    EXPECT_TRUE(checked);
    EXPECT_EQ(mode, dist::detail::CheckMode::kEvery);
  } else if (!debug || !*debug) {
    EXPECT_EQ(checked, world() > 1);
    EXPECT_EQ(mode, dist::detail::CheckMode::kSampled);
  }
}

// The first call of each op kind and the calls at ordinals 2^k: ranks 1.. differ from rank 0 in
// numel, root, dtype or list sizes; every rank raises the same error, the inputs unchanged, and
// the group stays usable.
TEST(DistributedMismatch, EveryRankRaisesNamingTheOpUnderTheDefaultCheck) {
  if (world() == 1) GTEST_SKIP() << "one rank";
  auto g = dist::detail::make_checked_group(new_group(std::chrono::milliseconds(20000)), Device(kCPU),
                                            dist::detail::CheckMode::kSampled);
  const int r = rank(), w = world();
  const bool other = r != 0;
  std::vector<Outcome> got;
  // 1: all_reduce, numel 4 on rank 0, 5 elsewhere
  Tensor a = full({other ? 5 : 4}, double(r + 1));
  got.push_back(outcome(a, [&] { g->all_reduce(a, ReduceOp::SUM).wait(); }));
  // 2: broadcast, each rank its own root
  Tensor b = full({3}, double(r + 1));
  got.push_back(outcome(b, [&] { g->broadcast(b, r).wait(); }));
  // 3: all_gather, float32 on rank 0, float64 elsewhere
  Tensor c = full({2}, double(r + 1), TensorOptions(other ? kFloat64 : kFloat32));
  std::vector<Tensor> outs;
  for (int q = 0; q < w; ++q) outs.push_back(zeros({2}, c.options()));
  got.push_back(outcome(outs[0], [&] { g->all_gather(outs, c).wait(); }));
  // 4: reduce_scatter, the last input of 2 elements on rank 0, 3 elsewhere
  std::vector<Tensor> ins;
  for (int q = 0; q < w; ++q) ins.push_back(full({q == w - 1 && other ? 3 : 2}, 1.0));
  Tensor d = zeros(ins[size_t(r)].sizes());
  got.push_back(outcome(d, [&] { g->reduce_scatter(d, ins, ReduceOp::SUM).wait(); }));
  // 5-7: matching all_reduces run unchecked; 8: int32 on rank 0, int64 elsewhere
  for (int i = 0; i < 3; ++i) {
    Tensor m = full({2}, double(r + 1));
    got.push_back(outcome(m, [&] { g->all_reduce(m, ReduceOp::SUM).wait(); }));
    got.back().unchanged = m.to_vector<double>() == std::vector<double>(2, w * (w + 1) / 2.0);  // here: summed
  }
  Tensor e = full({3}, 1.0, TensorOptions(other ? kInt64 : kInt32));
  got.push_back(outcome(e, [&] { g->all_reduce(e, ReduceOp::MAX).wait(); }));
  // 9: the group is still usable
  Tensor f = full({2}, double(r + 1));
  got.push_back(outcome(f, [&] { g->all_reduce(f, ReduceOp::SUM).wait(); }));
  got.back().unchanged = f.to_vector<double>() == std::vector<double>(2, w * (w + 1) / 2.0);

  const std::string list = " with a list of " + std::to_string(w) + " tensors";
  const std::vector<std::string> want = {
      "[all_reduce] rank 1 called all_reduce(op=SUM) on float32[5], rank 0 called all_reduce(op=SUM) on float32[4]",
      "[broadcast] rank 1 called broadcast(src=1) on float32[3], rank 0 called broadcast(src=0) on float32[3]",
      "[all_gather] rank 1 called all_gather on float64[2]" + list + ", rank 0 called all_gather on float32[2]" +
          list,
      // rank 1's output has 3 elements when it is the last rank
      "[reduce_scatter] rank 1 called reduce_scatter(op=SUM) on float32[" + std::string(w == 2 ? "3" : "2") + "]" +
          list + (w == 2 ? "" : " (the sizes in its tensor list differ)") +
          ", rank 0 called reduce_scatter(op=SUM) on float32[2]" + list,
      "no error",
      "no error",
      "no error",
      "[all_reduce] rank 1 called all_reduce(op=MAX) on int64[3], rank 0 called all_reduce(op=MAX) on int32[3]",
      "no error"};
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].error, want[i] == "no error" ? want[i] : want[i] + kByDefault) << "call " << i + 1;
    EXPECT_TRUE(got[i].unchanged) << "call " << i + 1;
  }
  dist::barrier();
  g.reset();
}

// Without the check, MPI's own truncation error (its communicators return error codes rather
// than abort) is a DistributedError naming the op called; gloo's ranks time out instead (see
// tests/dist_local). Two ranks: with more, a rank that forwards the broadcast may fail before
// the next gets its part, which would leave that one's worker inside MPI.
TEST(DistributedMismatch, MpiTruncationIsADistributedErrorNamingTheOp) {
  if (world() != 2 || test_backend() != "mpi") GTEST_SKIP() << "mpi, two ranks";
  auto g = new_group(std::chrono::milliseconds(5000));
  Tensor x = full({rank() == 0 ? 8 : 4}, double(rank() + 1));
  Outcome o = outcome(x, [&] { g->broadcast(x, 0).wait(); });
  if (rank() == 1) EXPECT_EQ(o.error.rfind("[broadcast] MPI_ERR_TRUNCATE", 0), 0u) << o.error;
  else EXPECT_EQ(o.error, "no error");
  dist::barrier();
  g.reset();
}

}  // namespace
}  // namespace wick
