// Autocast's per-thread state, its guard and queries, the casts and their cache
// (docs/design.md, "Mixed precision").
#include "core/autocast.h"

#include <unordered_map>
#include <utility>

namespace wick {

namespace detail::autocast {

namespace {

struct State {
  bool enabled[kNumDeviceTypes] = {false, false};
  Dtype dtype[kNumDeviceTypes] = {kBFloat16, kFloat16};  // CPU, CUDA: PyTorch's defaults
  bool cache_enabled = true;
  int nesting = 0;   // live AutocastGuards
  int excluded = 0;  // live Excludes
  // Casts of weights, by the weight's TensorImpl; the weight is kept so that its address
  // cannot be reused while the entry lives.
  std::unordered_map<const TensorImpl*, std::pair<Tensor, Tensor>> cache;
};

thread_local State t_state;

void refresh() { t_active = (t_state.enabled[0] || t_state.enabled[1]) && t_state.excluded == 0; }

bool eligible(const Tensor& t, DeviceType d) {
  if (!t.defined() || t.device().type() != d) return false;
  const Dtype dt = t.dtype();
  return dt == kFloat32 || dt == kFloat16 || dt == kBFloat16;
}

}  // namespace

thread_local bool t_active = false;

Exclude::Exclude() {
  ++t_state.excluded;
  t_active = false;
}
Exclude::~Exclude() {
  --t_state.excluded;
  refresh();
}

bool enabled(DeviceType d) { return t_state.enabled[int(d)]; }
Dtype lower_dtype(DeviceType d) { return t_state.dtype[int(d)]; }

Tensor cast(const Tensor& t, Dtype dtype, DeviceType d) {
  if (!eligible(t, d) || t.dtype() == dtype) return t;
  const bool cacheable = t_state.cache_enabled && dtype == lower_dtype(d) && t.dtype() == kFloat32 &&
                         t.requires_grad() && t.is_leaf();
  if (!cacheable) return t.to(dtype);
  auto it = t_state.cache.find(t.impl());
  if (it != t_state.cache.end()) return it->second.second;
  Tensor c = t.to(dtype);
  t_state.cache.emplace(t.impl(), std::make_pair(t, c));
  return c;
}

Dtype promote(const std::vector<const Tensor*>& ts, DeviceType d, const char* op) {
  const Dtype lower = lower_dtype(d);
  Dtype current = lower;
  for (const Tensor* t : ts) {
    if (!eligible(*t, d)) continue;  // float64, integers, other devices: ignored
    const Dtype next = t->dtype();
    if (current == kFloat32 || next == kFloat32) current = kFloat32;
    else if (current != lower || next != lower)
      raise<TypeError>(op, "Unexpected floating ScalarType in at::autocast::prioritize (", next, " under ",
                       lower, " autocast)");
  }
  return current;
}

}  // namespace detail::autocast

using namespace detail::autocast;

namespace {
// ValueError for a DeviceType made from an integer outside the enum (it would index the
// per-device state out of bounds).
void check_device_type(DeviceType device, const char* op) {
  WICK_CHECK(device == kCPU || device == kCUDA, ValueError, op, "invalid device type ", int(device),
             " (expected kCPU or kCUDA)");
}
}  // namespace

AutocastGuard::AutocastGuard(DeviceType device, std::optional<Dtype> dtype, bool enabled, bool cache_enabled)
    : device_(device) {
  check_device_type(device, "autocast");
  State& s = t_state;
  const Dtype dt = dtype.value_or(s.dtype[int(device)]);
  WICK_CHECK(dt == kFloat16 || dt == kBFloat16, ValueError, "autocast", "In ",
             device == kCUDA ? "CUDA" : "CPU",
             " autocast, but the target dtype is not supported: expected float16 or bfloat16, got ", dt);
  prev_enabled_ = s.enabled[int(device)];
  prev_dtype_ = s.dtype[int(device)];
  prev_cache_enabled_ = s.cache_enabled;
  s.enabled[int(device)] = enabled;
  s.dtype[int(device)] = dt;
  s.cache_enabled = cache_enabled;
  ++s.nesting;
  refresh();
}

AutocastGuard::~AutocastGuard() {
  State& s = t_state;
  s.enabled[int(device_)] = prev_enabled_;
  s.dtype[int(device_)] = prev_dtype_;
  s.cache_enabled = prev_cache_enabled_;
  if (--s.nesting == 0) s.cache.clear();
  refresh();
}

bool is_autocast_enabled(DeviceType device) {
  check_device_type(device, "is_autocast_enabled");
  return t_state.enabled[int(device)];
}
Dtype get_autocast_dtype(DeviceType device) {
  check_device_type(device, "get_autocast_dtype");
  return t_state.dtype[int(device)];
}
void clear_autocast_cache() { t_state.cache.clear(); }

}  // namespace wick
