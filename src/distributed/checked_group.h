// The checking group of WICK_DISTRIBUTED_DEBUG=1: before each collective the ranks all-gather
// a fixed-size fingerprint of the call (op, dtype, sizes, root, list sizes) through the wrapped
// group itself, and when the fingerprints differ every rank raises DistributedError naming the
// rank that differs and how, without running the collective. send and recv pass straight on.
#pragma once

#include <memory>

#include "wick/distributed.h"

namespace wick::distributed::detail {

// device: where the fingerprints live (CPU for mpi, the group's GPU for nccl).
std::shared_ptr<ProcessGroup> make_checked_group(std::shared_ptr<ProcessGroup> inner, Device device);

}  // namespace wick::distributed::detail
