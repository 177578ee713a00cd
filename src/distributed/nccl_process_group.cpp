// The "nccl" backend (a placeholder until the NCCL process group lands; builds without NCCL
// get their make_nccl_group from process_group.cpp).
#ifdef WICK_HAVE_NCCL

#include "distributed/internal.h"

namespace wick::distributed::detail {

std::shared_ptr<ProcessGroup> make_nccl_group(const RankInfo&, const InitOptions&, Bootstrap&) {
  ::wick::detail::raise<NotImplementedError>("init_process_group", "the nccl backend is not implemented yet");
}

}  // namespace wick::distributed::detail

#endif  // WICK_HAVE_NCCL
