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

std::shared_ptr<ProcessGroupMPI> ProcessGroupMPI::createProcessGroupMPI() {
  return ::wick::detail::as_op("createProcessGroupMPI", [] {
    InitOptions options;
    auto group = detail::make_mpi_group(detail::resolve_rank_info(options), options);
    return std::make_shared<ProcessGroupMPI>(std::move(group));
  });
}

void ProcessGroupMPI::abort() { detail::mpi_abort_job(); }

}  // namespace wick::distributed
