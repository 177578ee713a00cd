// The timeline of a step (core/timeline.h).
#include "core/timeline.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

namespace wick::detail {

namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

struct Timeline::State {
  struct Record {
    std::string phase;
    int device;
    double host_ms;
    std::unique_ptr<cuda::Event> event;  // null for the host's marks
  };
  mutable std::mutex mu;
  bool started = false;
  Clock::time_point host_start;
  std::map<int, std::unique_ptr<cuda::Event>> starts;  // by device
  std::vector<Record> records;

  void add(std::string phase, int device, std::unique_ptr<cuda::Event> event) {
    const auto now = Clock::now();
    std::lock_guard<std::mutex> lock(mu);
    if (!started) return;
    const double host_ms = std::chrono::duration<double, std::milli>(now - host_start).count();
    records.push_back({std::move(phase), device, host_ms, std::move(event)});
  }
};

Timeline::Timeline() : state_(std::make_unique<State>()) {
  const char* v = std::getenv("WICK_TIMELINE");
  on_ = v != nullptr && std::strcmp(v, "1") == 0;
}

Timeline::~Timeline() = default;

void Timeline::begin(const std::vector<int>& devices) {
  if (!on_) return;
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mu);
  s.records.clear();
  s.starts.clear();
  s.host_start = Clock::now();
  for (int d : devices) {
    auto e = std::make_unique<cuda::Event>(true);
    e->record(cuda::current_stream(d));
    s.starts.emplace(d, std::move(e));
  }
  s.started = true;
}

void Timeline::mark(std::string phase, int device) {
  if (!on_) return;
  if (device < 0) return state_->add(std::move(phase), -1, nullptr);
  mark(std::move(phase), cuda::current_stream(device));
}

void Timeline::mark(std::string phase, const cuda::Stream& stream) {
  if (!on_) return;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (!state_->started) return;
  }
  auto e = std::make_unique<cuda::Event>(true);
  e->record(stream);
  state_->add(std::move(phase), stream.device_index(), std::move(e));
}

std::vector<TimelineMark> Timeline::marks() const {
  std::vector<TimelineMark> out;
  if (!on_) return out;
  const State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mu);
  for (const State::Record& r : s.records) {
    TimelineMark m{r.phase, r.device, r.host_ms, 0};
    if (r.event) {
      auto it = s.starts.find(r.device);
      if (it != s.starts.end()) m.gpu_ms = it->second->elapsed_time(*r.event);  // waits for both
    }
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<TimelineMark> Timeline::take() {
  std::vector<TimelineMark> out = marks();
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->records.clear();
  state_->starts.clear();
  state_->started = false;
  return out;
}

Timeline& process_timeline() {
  static Timeline* t = new Timeline;  // never destroyed: marks may come from threads at exit
  return *t;
}

}  // namespace wick::detail
