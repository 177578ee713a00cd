// A rank that exits in the middle of a collective makes the others raise within the timeout:
// rank 1 starts an all_reduce and leaves without a word (_exit); every other rank must catch
// DistributedError from its own all_reduces and prints "caught DistributedError".
// Run: mpirun --mca orte_allowed_exit_without_sync 1 -np 2 wick_dist_failure, or
// wick-launch --nproc-per-node 2 wick_dist_failure; WICK_TEST_BACKEND=gloo: the same over gloo
// (under wick-launch); WICK_TEST_BACKEND=nccl: over nccl, one GPU per process.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include <unistd.h>

#include "wick/distributed.h"
#include "wick/ops.h"

namespace dist = wick::distributed;

int main() {
  dist::InitOptions o;
  o.timeout = std::chrono::seconds(5);
  const char* b = std::getenv("WICK_TEST_BACKEND");
  const std::string backend = b && *b ? b : "mpi";
  dist::init_process_group(backend, o);
  int rank = dist::get_rank();
  const wick::Device dev =
      backend == "nccl" ? wick::Device(wick::kCUDA, dist::get_local_rank()) : wick::Device(wick::kCPU);
  if (dist::get_world_size() < 2) {
    std::printf("needs at least 2 ranks\n");
    return 1;
  }
  if (rank == 1) {
    wick::Tensor t = wick::ones({1 << 22}, wick::TensorOptions().device(dev));
    dist::all_reduce(t, dist::ReduceOp::SUM, /*async_op=*/true);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::fflush(stdout);
    _exit(0);
  }
  auto start = std::chrono::steady_clock::now();
  try {
    for (int i = 0; i < 4; ++i) {
      wick::Tensor t = wick::ones({1 << 22}, wick::TensorOptions().device(dev));
      dist::all_reduce(t);
    }
    std::printf("rank %d: no error\n", rank);
    return 1;
  } catch (const wick::DistributedError& e) {
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("rank %d caught DistributedError after %.1f s: %s\n", rank, s, e.what());
    std::fflush(stdout);
    return s < 30 ? 0 : 1;
  }
}
