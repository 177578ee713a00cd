// The cross-rank check of collectives: before a checked collective the ranks all-gather a
// fixed-size fingerprint of the call (op, dtype, sizes, root, list sizes) through the wrapped
// group itself, and when the fingerprints differ every rank raises DistributedError naming the
// op it called, the rank that differs and how, without running the collective. send and recv
// pass straight on.
//
// Which calls are checked depends only on what every rank sees alike as long as the calls so
// far matched (the group's call ordinal and the op kinds called before), never on a rank's own
// data, so that the ranks always take part in the same fingerprint exchanges:
// - kSampled (the default): the first call of each op kind and every call whose ordinal
//   (1, 2, 3, ... over the group's collectives) is a power of two: O(log n) small all-gathers
//   over n calls;
// - kEvery (WICK_DISTRIBUTED_DEBUG=1 or DETAIL): every call.
// all_reduce_beside_compute (DistributedDataParallel's buckets but the last, whose parameters
// it compares across ranks at construction) is checked and counted only under kEvery.
#pragma once

#include <memory>

#include "wick/distributed.h"

namespace wick::distributed::detail {

enum class CheckMode { kSampled, kEvery };

// device: where the fingerprints live (the CPU for gloo and mpi, the group's GPU for nccl).
std::shared_ptr<ProcessGroup> make_checked_group(std::shared_ptr<ProcessGroup> inner, Device device,
                                                 CheckMode mode = CheckMode::kEvery);

// The group that group checks (group itself when it is no checking group), and whether group
// checks every call (kEvery) or samples them (kSampled); for tests.
std::shared_ptr<ProcessGroup> unchecked(const std::shared_ptr<ProcessGroup>& group, CheckMode* mode = nullptr);

}  // namespace wick::distributed::detail
