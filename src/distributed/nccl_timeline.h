// Where a step's collectives run on the GPU, for the benchmark that shows DistributedDataParallel's
// overlap. Only with the environment variable WICK_NCCL_TIMELINE=1 (read once): each collective
// of an nccl group then records three timing events: "ready" on the caller's stream when it was
// queued (the point the caller's kernels had reached, which the collective waits for), "start"
// and "end" on the communication stream. Otherwise nothing is recorded.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "wick/distributed.h"

namespace wick::distributed::detail::nccl_timeline {

struct Mark {
  std::string op;
  int seq = 0;          // the collective's index since begin()
  double ready_ms = 0;  // GPU times, milliseconds after begin()
  double start_ms = 0;
  double end_ms = 0;
};

bool enabled();
// Drops earlier marks and records the time origin on the current stream of group's device.
void begin(const std::shared_ptr<ProcessGroup>& group);
// Records a named point on the current stream (op = name, ready = start = end).
void mark(const std::shared_ptr<ProcessGroup>& group, const std::string& name);
// Waits for the events and returns the marks in the order they were queued.
std::vector<Mark> take(const std::shared_ptr<ProcessGroup>& group);

}  // namespace wick::distributed::detail::nccl_timeline
