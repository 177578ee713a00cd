// LibTorch's c10d spellings, written as a LibTorch program renamed to wick reads them
// (c10d:: -> wick::distributed::, c10:: -> wick::): ProcessGroupMPI::createProcessGroupMPI() and
// createProcessGroupMPI(ranks), getRank/getSize, allreduce of a one-tensor vector returning a
// handle to wait() on, and the all-reduced values. Runs where the mpi group can be made beside the default one: under
// mpirun, or as a single process (every rank decides alike, so none is left waiting).
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "dist_test_util.h"
#include "wick/distributed.h"
#include "wick/ops.h"

namespace {

using wick::Tensor;

bool mpi_group_possible() {
  const int world = wick::distributed::get_world_size();
  const char* mpirun_world = std::getenv("OMPI_COMM_WORLD_SIZE");
  return wick::dist_test::test_backend() == "mpi" &&
         (world == 1 || (mpirun_world != nullptr && std::atoi(mpirun_world) == world));
}

// As LibTorch's distributed MNIST example waits for its gradients' all-reduces.
void waitWork(std::shared_ptr<wick::distributed::ProcessGroupMPI> pg,
              std::vector<std::shared_ptr<wick::distributed::ProcessGroup::Work>> works) {
  for (auto& work : works) {
    try {
      work->wait();
    } catch (const std::exception& ex) {
      ADD_FAILURE() << ex.what();
      if (false) pg->abort();  // compiled, not run: it would end the whole job
    }
  }
}

TEST(LibTorchC10d, ProcessGroupMPIAllreduce) {
  if (!mpi_group_possible()) GTEST_SKIP() << "the mpi group needs mpirun or a single process";
  wick::intrusive_ptr<wick::distributed::ProcessGroupMPI> pg =
      wick::distributed::ProcessGroupMPI::createProcessGroupMPI();
  auto numranks = pg->getSize();
  auto rank = pg->getRank();
  EXPECT_EQ(numranks, wick::distributed::get_world_size());
  EXPECT_EQ(rank, wick::distributed::get_rank());
  EXPECT_EQ(pg->backend(), "mpi");

  // rank r holds r + 1 + i at i; the sum over ranks is w (w + 1) / 2 + w i
  std::vector<Tensor> grads;
  for (int k = 0; k < 3; ++k) {
    Tensor g = wick::empty({4}, wick::TensorOptions(wick::kFloat32));
    for (int64_t i = 0; i < 4; ++i) g.data_ptr<float>()[i] = float(rank + 1 + i + k);
    grads.push_back(g);
  }
  std::vector<std::shared_ptr<::wick::distributed::ProcessGroup::Work>> works;
  for (auto& g : grads) {
    std::vector<Tensor> tmp = {g};
    auto work = pg->allreduce(tmp);
    works.push_back(std::move(work));
  }
  waitWork(pg, works);
  for (int k = 0; k < 3; ++k) {
    auto v = grads[size_t(k)].to_vector<double>();
    for (int64_t i = 0; i < 4; ++i)
      EXPECT_DOUBLE_EQ(v[size_t(i)], wick::dist_test::expected(wick::distributed::ReduceOp::SUM, numranks, i, k))
          << "tensor " << k << " element " << i;
  }

  // with options, and the handle as c10::intrusive_ptr<c10d::Work>
  Tensor m = wick::full({3}, double(rank), wick::kFloat64);
  std::vector<Tensor> one = {m};
  wick::distributed::AllreduceOptions opts;
  opts.reduceOp = wick::distributed::ReduceOp::MAX;
  wick::intrusive_ptr<wick::distributed::Work> w = pg->allreduce(one, opts);
  w->wait();
  EXPECT_EQ(m.to_vector<double>(), std::vector<double>(3, double(numranks - 1)));
  opts.reduceOp = wick::distributed::ReduceOp::SUM;
  pg->allreduce(one, opts)->wait();
  EXPECT_EQ(m.to_vector<double>(), std::vector<double>(3, double(numranks) * (numranks - 1)));

  // one tensor only, as LibTorch's MPI group
  std::vector<Tensor> two = {m, m.clone()};
  wick::dist_test::expect_error_prefix([&] { pg->allreduce(two); }, "[allreduce] expects a single tensor, got 2");
  std::vector<Tensor> none;
  wick::dist_test::expect_error_prefix([&] { pg->allreduce(none); }, "[allreduce] expects a single tensor, got 0");
  // the group's own checks, under the LibTorch name
  std::vector<Tensor> strided = {wick::zeros({4, 2}).t()};
  wick::dist_test::expect_error_prefix([&] { pg->allreduce(strided); }, "[allreduce]");

  // the same spellings on the default group
  auto def = wick::distributed::default_group();
  EXPECT_EQ(def->getSize(), numranks);
  EXPECT_EQ(def->getRank(), rank);
  Tensor d = wick::ones({2});
  std::vector<Tensor> dv = {d};
  def->allreduce(dv)->wait();
  EXPECT_EQ(d.to_vector<float>(), std::vector<float>(2, float(numranks)));
  auto made = wick::make_intrusive<wick::distributed::AllreduceOptions>();
  EXPECT_EQ(made->reduceOp, wick::distributed::ReduceOp::SUM);
}

// createProcessGroupMPI(ranks): the group's rank i is the job's ranks[i]; a process left out
// gets a null pointer; each group's all-reduce sums over its members only.
TEST(LibTorchC10d, ProcessGroupMPIOfSomeRanks) {
  if (!mpi_group_possible()) GTEST_SKIP() << "the mpi group needs mpirun or a single process";
  const int world = wick::distributed::get_world_size();
  const int rank = wick::distributed::get_rank();

  // every rank, in reverse order
  std::vector<int> reversed;
  for (int r = world - 1; r >= 0; --r) reversed.push_back(r);
  auto rev = wick::distributed::ProcessGroupMPI::createProcessGroupMPI(reversed);
  ASSERT_TRUE(rev != nullptr);
  EXPECT_EQ(rev->getSize(), world);
  EXPECT_EQ(rev->getRank(), world - 1 - rank);
  // rank 0 of the new group is the job's last rank: a broadcast from it carries that rank
  Tensor b = wick::full({2}, double(rank), wick::kFloat64);
  rev->broadcast(b, 0).wait();
  EXPECT_EQ(b.to_vector<double>(), std::vector<double>(2, double(world - 1)));

  // every rank but the first (a single process: the group of rank 0 alone)
  std::vector<int> some;
  for (int r = world > 1 ? 1 : 0; r < world; ++r) some.push_back(r);
  auto pg = wick::distributed::ProcessGroupMPI::createProcessGroupMPI(some);
  const bool member = world == 1 || rank >= 1;
  ASSERT_EQ(pg != nullptr, member);
  if (member) {
    EXPECT_EQ(pg->getSize(), int(some.size()));
    EXPECT_EQ(pg->getRank(), world == 1 ? 0 : rank - 1);
    Tensor t = wick::full({3}, double(rank + 1), wick::kFloat32);
    std::vector<Tensor> one = {t};
    pg->allreduce(one)->wait();
    double sum = 0;
    for (int r : some) sum += r + 1;
    EXPECT_EQ(t.to_vector<float>(), std::vector<float>(3, float(sum)));
  }
  // the default group still spans the job
  Tensor d = wick::ones({1});
  wick::distributed::all_reduce(d);
  EXPECT_EQ(d.item<float>(), float(world));

  // ranks out of range or repeated: ValueError on every process, before any collective
  wick::dist_test::expect_error_prefix(
      [&] { wick::distributed::ProcessGroupMPI::createProcessGroupMPI({0, world}); },
      "[createProcessGroupMPI] ranks[1] = " + std::to_string(world) + " is not a rank of the job (world size " +
          std::to_string(world) + ")");
  wick::dist_test::expect_error_prefix(
      [&] { wick::distributed::ProcessGroupMPI::createProcessGroupMPI({0, -1}); },
      "[createProcessGroupMPI] ranks[1] = -1 is not a rank of the job");
  wick::dist_test::expect_error_prefix(
      [&] { wick::distributed::ProcessGroupMPI::createProcessGroupMPI({0, 0}); },
      "[createProcessGroupMPI] rank 0 appears twice in ranks");
  EXPECT_THROW(wick::distributed::ProcessGroupMPI::createProcessGroupMPI({0, 0}), wick::ValueError);
}

}  // namespace
