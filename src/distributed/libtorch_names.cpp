// LibTorch's c10d spellings of wick::distributed (ProcessGroup::allreduce, ProcessGroupMPI):
// each calls the Python-named function it stands for.
#include <memory>
#include <vector>

#include "core/as_op.h"
#include "distributed/internal.h"

namespace wick::distributed {

std::shared_ptr<Work> ProcessGroup::allreduce(std::vector<Tensor>& tensors, const AllreduceOptions& opts) {
  WICK_CHECK(tensors.size() == 1, ValueError, "allreduce", "expects a single tensor, got ", tensors.size(),
             " tensors");
  return std::make_shared<Work>(
      ::wick::detail::as_op("allreduce", [&] { return all_reduce(tensors[0], opts.reduceOp); }));
}

std::shared_ptr<ProcessGroupMPI> ProcessGroupMPI::createProcessGroupMPI(std::vector<int> ranks) {
  return ::wick::detail::as_op("createProcessGroupMPI", [&]() -> std::shared_ptr<ProcessGroupMPI> {
    InitOptions options;
    const detail::RankInfo info = detail::resolve_rank_info(options);
    // Every process checks the same ranks alike, before any of them starts the collective.
    std::vector<bool> seen(size_t(info.world_size), false);
    for (size_t i = 0; i < ranks.size(); ++i) {
      const int r = ranks[i];
      WICK_CHECK(r >= 0 && r < info.world_size, ValueError, "createProcessGroupMPI", "ranks[", i, "] = ", r,
                 " is not a rank of the job (world size ", info.world_size, ")");
      WICK_CHECK(!seen[size_t(r)], ValueError, "createProcessGroupMPI", "rank ", r, " appears twice in ranks");
      seen[size_t(r)] = true;
    }
    auto group = detail::make_mpi_group(info, options);
    if (ranks.empty()) return std::make_shared<ProcessGroupMPI>(std::move(group));
    auto sub = detail::make_mpi_subgroup(group, ranks, options);
    if (!sub) return nullptr;
    return std::make_shared<ProcessGroupMPI>(std::move(sub));
  });
}

void ProcessGroupMPI::abort() { detail::mpi_abort_job(); }

}  // namespace wick::distributed
