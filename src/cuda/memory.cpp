// The memory API of wick::cuda over the caching allocator: PyTorch's names, keys and summary.
#include <cinttypes>
#include <cstdio>
#include <map>
#include <string>

#include "core/cuda_hooks.h"
#include "cuda/caching_allocator.h"
#include "cuda/runtime.h"
#include "wick/cuda.h"
#include "wick/tensor.h"

namespace wick::cuda {

using namespace wick::detail::gpu;

namespace {

int resolve(int device, const char* op) {
  return detail::resolve_cuda_device(Device(kCUDA, device), op).index();
}

DeviceStats stats_of(int device, const char* op) {
  const int d = resolve(device, op);
  DeviceCachingAllocator* a = existing_caching_allocator(d);
  return a ? a->stats() : DeviceStats();
}

}  // namespace

int64_t memory_allocated(int device) { return stats_of(device, "memory_allocated").allocated_bytes[kStatAll].current; }
int64_t max_memory_allocated(int device) { return stats_of(device, "max_memory_allocated").allocated_bytes[kStatAll].peak; }
int64_t memory_reserved(int device) { return stats_of(device, "memory_reserved").reserved_bytes[kStatAll].current; }
int64_t max_memory_reserved(int device) { return stats_of(device, "max_memory_reserved").reserved_bytes[kStatAll].peak; }

void empty_cache() {
  // Every device that has an allocator, as torch.cuda.empty_cache(); nothing to do without CUDA.
  for (int d = 0; d < detail::gpu::device_count(); ++d)
    if (DeviceCachingAllocator* a = existing_caching_allocator(d)) a->empty_cache();
}

void reset_peak_memory_stats(int device) {
  device_caching_allocator(resolve(device, "reset_peak_memory_stats")).reset_peak_stats();
}

void reset_accumulated_memory_stats(int device) {
  device_caching_allocator(resolve(device, "reset_accumulated_memory_stats")).reset_accumulated_stats();
}

std::map<std::string, int64_t> memory_stats(int device) {
  const DeviceStats s = stats_of(device, "memory_stats");
  std::map<std::string, int64_t> out;
  const char* types[] = {"all", "small_pool", "large_pool"};
  auto add = [&](const std::string& prefix, const Stat& st) {
    out[prefix + ".current"] = st.current;
    out[prefix + ".peak"] = st.peak;
    out[prefix + ".allocated"] = st.allocated;
    out[prefix + ".freed"] = st.freed;
  };
  auto add_array = [&](const char* name, const StatArray& a) {
    for (int t = 0; t < kNumStatTypes; ++t) add(std::string(name) + "." + types[t], a[t]);
  };
  add_array("allocation", s.allocation);
  add_array("segment", s.segment);
  add_array("active", s.active);
  add_array("inactive_split", s.inactive_split);
  add_array("allocated_bytes", s.allocated_bytes);
  add_array("reserved_bytes", s.reserved_bytes);
  add_array("active_bytes", s.active_bytes);
  add_array("inactive_split_bytes", s.inactive_split_bytes);
  add_array("requested_bytes", s.requested_bytes);
  add("oversize_allocations", s.oversize_allocations);
  add("oversize_segments", s.oversize_segments);
  out["num_alloc_retries"] = s.num_alloc_retries;
  out["num_ooms"] = s.num_ooms;
  out["num_sync_all_streams"] = s.num_sync_all_streams;
  out["num_device_alloc"] = s.num_device_alloc;
  out["num_device_free"] = s.num_device_free;
  out["max_split_size"] = s.max_split_size;
  return out;
}

namespace {

// Sizes as the summary prints them: a whole number of the largest unit that keeps it readable.
std::string summary_bytes(int64_t n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double v = double(n);
  while (u < 4 && (v >= 768 * 1024 || v <= -768 * 1024)) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%6" PRId64 " %-3s", int64_t(v), units[u]);
  return buf;
}

std::string summary_count(int64_t n) {
  const char* units[] = {"", "K", "M", "B"};
  int u = 0;
  while (u < 3 && n >= 1000000) {
    n /= 1000;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%6" PRId64 " %-3s", n, units[u]);
  return buf;
}

}  // namespace

std::string memory_summary(int device) {
  const int d = resolve(device, "memory_summary");
  const DeviceStats s = stats_of(d, "memory_summary");
  const std::string rule(75, '=');
  const std::string thin(75, '-');
  std::string out;
  auto line = [&](const std::string& text) { out += "|" + text + "|\n"; };
  auto centered = [&](const std::string& text) {
    size_t pad = text.size() < 75 ? 75 - text.size() : 0;
    line(std::string(pad / 2, ' ') + text + std::string(pad - pad / 2, ' '));
  };
  auto row = [&](const char* name, const Stat& st, bool bytes) {
    auto f = bytes ? summary_bytes : summary_count;
    char buf[128];
    std::snprintf(buf, sizeof buf, " %-22s| %s | %s | %s | %s ", name, f(st.current).c_str(), f(st.peak).c_str(),
                  f(st.allocated).c_str(), f(st.freed).c_str());
    line(buf);
  };
  auto group = [&](const char* name, const StatArray& a, bool bytes) {
    row(name, a[kStatAll], bytes);
    row("      from large pool", a[kStatLargePool], bytes);
    row("      from small pool", a[kStatSmallPool], bytes);
    line(thin);
  };
  out += "|" + rule + "|\n";
  centered("wick CUDA memory summary, device ID " + std::to_string(d));
  line(thin);
  char buf[128];
  std::snprintf(buf, sizeof buf, "            CUDA OOMs: %-13" PRId64 "|        cudaMalloc retries: %-10" PRId64,
                s.num_ooms, s.num_alloc_retries);
  std::string head = buf;
  head.resize(75, ' ');
  line(head);
  out += "|" + rule + "|\n";
  line("        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  ");
  line(thin);
  group("Allocated memory", s.allocated_bytes, true);
  group("Active memory", s.active_bytes, true);
  group("Requested memory", s.requested_bytes, true);
  group("GPU reserved memory", s.reserved_bytes, true);
  group("Non-releasable memory", s.inactive_split_bytes, true);
  group("Allocations", s.allocation, false);
  group("Active allocs", s.active, false);
  group("GPU reserved segments", s.segment, false);
  group("Non-releasable allocs", s.inactive_split, false);
  row("Oversize allocations", s.oversize_allocations, false);
  line(thin);
  row("Oversize GPU segments", s.oversize_segments, false);
  out += "|" + rule + "|\n";
  return out;
}

void set_per_process_memory_fraction(double fraction, int device) {
  device_caching_allocator(resolve(device, "set_per_process_memory_fraction")).set_memory_fraction(fraction);
}

}  // namespace wick::cuda

namespace wick::detail {

void cuda_record_stream(const Tensor& t, const wick::cuda::Stream& s) {
  if (!t.defined()) return;
  const DataPtr& p = t.impl()->storage()->data_ptr();
  if (p.deleter() != &gpu::block_deleter) return;  // not from the caching allocator (from_blob, empty)
  gpu::Block* b = static_cast<gpu::Block*>(p.context());
  gpu::device_caching_allocator(b->device).record_stream(b, s.device_index(), s.native());
}

}  // namespace wick::detail
