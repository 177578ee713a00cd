// Where this process stands among the others: InitOptions first, then the variables of
// mpirun, of torchrun-style launchers (wick-launch) and of Slurm.
#include <cerrno>
#include <cstdlib>
#include <optional>
#include <string>

#include "distributed/internal.h"

namespace wick::distributed::detail {
using ::wick::detail::raise;
namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

// The integer value of variable name, or nullopt when unset; ValueError when it is not a number.
std::optional<int> env_int(const char* name) {
  const char* v = env(name);
  if (!v) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  WICK_CHECK(errno == 0 && end != v && *end == '\0' && x >= INT32_MIN && x <= INT32_MAX, ValueError,
             "init_process_group", "environment variable ", name, "='", v, "' is not an integer");
  return int(x);
}

}  // namespace

RankInfo resolve_rank_info(const InitOptions& options) {
  RankInfo info;
  std::optional<int> rank, world, local;
  if (auto r = env_int("OMPI_COMM_WORLD_RANK")) {
    rank = r;
    world = env_int("OMPI_COMM_WORLD_SIZE");
    local = env_int("OMPI_COMM_WORLD_LOCAL_RANK");
    info.launched_by_mpirun = true;
    info.source = "mpirun";
  } else if (auto r2 = env_int("RANK")) {
    rank = r2;
    world = env_int("WORLD_SIZE");
    local = env_int("LOCAL_RANK");
    info.source = "torchrun";
  } else if (auto r3 = env_int("SLURM_PROCID")) {
    rank = r3;
    world = env_int("SLURM_NTASKS");
    local = env_int("SLURM_LOCALID");
    info.source = "slurm";
  } else if (auto w = env_int("WORLD_SIZE"); w && !options.rank) {
    // PyTorch's env:// needs both: a world size alone says there are peers without saying
    // which one this is.
    raise<ValueError>("init_process_group", "environment variable WORLD_SIZE is set (", *w,
                      ") but RANK is not; set both, or neither for a single process");
  }
  if (options.rank || options.world_size) info.source = "options";
  if (options.rank) rank = options.rank;
  if (options.world_size) world = options.world_size;
  if (options.local_rank) local = options.local_rank;
  if (info.source.empty()) info.source = "single process";

  if (world && !rank)
    raise<ValueError>("init_process_group", "the world size is ", *world,
                      " but the rank is not known (set RANK or InitOptions::rank)");
  if (rank && !world)
    raise<ValueError>("init_process_group", "the rank is ", *rank,
                      " but the world size is not known (set WORLD_SIZE or InitOptions::world_size)");
  info.world_size = world.value_or(1);
  info.rank = rank.value_or(0);
  WICK_CHECK(info.world_size >= 1, ValueError, "init_process_group", "world size ", info.world_size,
             " must be at least 1 (", info.source, ")");
  WICK_CHECK(info.rank >= 0 && info.rank < info.world_size, ValueError, "init_process_group", "rank ",
             info.rank, " is out of range for world size ", info.world_size, " (", info.source, ")");
  info.local_rank = local.value_or(info.rank);
  WICK_CHECK(info.local_rank >= 0 && info.local_rank < info.world_size, ValueError, "init_process_group",
             "local rank ", info.local_rank, " is out of range for world size ", info.world_size, " (", info.source,
             ")");

  info.master_addr = options.master_addr;
  if (info.master_addr.empty()) {
    if (const char* a = env("MASTER_ADDR")) info.master_addr = a;
  }
  info.master_port = options.master_port;
  if (info.master_port == 0) {
    if (auto p = env_int("MASTER_PORT")) info.master_port = *p;
  }
  WICK_CHECK(info.master_port >= 0 && info.master_port <= 65535, ValueError, "init_process_group",
             "master port ", info.master_port, " is out of range [0, 65535]");
  return info;
}

}  // namespace wick::distributed::detail
