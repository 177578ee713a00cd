// Where a step's time goes: the one timeline of wick's parallel paths (DataParallel's phases,
// the nccl group's collectives, DistributedDataParallel's bucket launches), printed by the
// benchmarks (bench/train_step_bench.cpp, bench/ddp_step_bench.cpp) and returned by
// DistributedDataParallel::timeline(). docs/design.md, section 1 (bench may include it).
//
// Only with the environment variable WICK_TIMELINE=1, read when a Timeline is made (the
// process's timeline: on first use): then, between begin() and marks(), each mark records the
// host's time and, for a device, a timing event on a stream of it. Otherwise nothing is
// recorded and no event is made. Nothing here synchronizes a device except marks().
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "wick/cuda.h"

namespace wick::detail {

struct TimelineMark {
  std::string phase;
  int device = -1;     // the CUDA device of the stream the mark was recorded on; -1: the host's only
  double host_ms = 0;  // when the host made the mark, after begin()
  double gpu_ms = 0;   // when the stream reached it, after the device's start (0 for the host's)
};

class Timeline {
 public:
  Timeline();
  ~Timeline();
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  // Whether WICK_TIMELINE=1 when the timeline was made.
  bool enabled() const { return on_; }
  // Drops earlier marks; the host's time origin is now, each device's (of devices) an event on
  // its current stream: call it with those devices idle, so that their origins are one moment.
  void begin(const std::vector<int>& devices = {});
  // A mark of the host (device -1), or on the current stream of device, or on stream. Nothing
  // unless enabled() and begin() was called.
  void mark(std::string phase, int device = -1);
  void mark(std::string phase, const cuda::Stream& stream);
  // Waits for the marks' events; the marks in the order they were made.
  std::vector<TimelineMark> marks() const;
  // marks(), then drops them: nothing is recorded until the next begin().
  std::vector<TimelineMark> take();

 private:
  struct State;
  bool on_;
  std::unique_ptr<State> state_;
};

// The process's timeline: DataParallel's and the nccl group's marks.
Timeline& process_timeline();

}  // namespace wick::detail
