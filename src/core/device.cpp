#include "wick/device.h"

#include <atomic>
#include <charconv>
#include <ostream>

#include "wick/error.h"

namespace wick {

std::string_view Device::null_spec() {
  detail::raise<ValueError>("Device", "expected a device string but got a null pointer");
}

Device::Device(std::string_view spec) : type_(kCPU), index_(-1) {
  auto bad = [&]() {
    detail::raise<ValueError>("Device", "invalid device string: '", spec,
                              "' (expected 'cpu', 'cuda' or 'cuda:N' with N a device index)");
  };
  std::string_view kind = spec.substr(0, spec.find(':'));
  if (kind == "cpu") type_ = kCPU;
  else if (kind == "cuda") type_ = kCUDA;
  else bad();
  if (kind.size() == spec.size()) return;
  std::string_view num = spec.substr(kind.size() + 1);
  int idx = -1;
  auto [end, ec] = std::from_chars(num.data(), num.data() + num.size(), idx);
  if (num.empty() || ec != std::errc() || end != num.data() + num.size() || idx < 0 || idx > 127 ||
      (num.size() > 1 && num[0] == '0'))
    bad();
  if (type_ == kCPU && idx != 0) bad();
  index_ = int8_t(idx);
}

void Device::bad_index(DeviceType type, int index) {
  if (index < -1) detail::raise<ValueError>("Device", "Device index must be -1 or non-negative, got ", index);
  if (type == kCPU) detail::raise<ValueError>("Device", "CPU device index must be -1 or zero, got ", index);
  detail::raise<ValueError>("Device", "Device index must be at most 127 (it is stored in 8 bits), got ",
                            index);
}

std::string Device::str() const {
  if (index_ < 0) return type_ == kCPU ? "cpu" : "cuda";
  return (type_ == kCPU ? std::string("cpu:") : std::string("cuda:")) + std::to_string(index_);
}

std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }
std::ostream& operator<<(std::ostream& os, DeviceType t) { return os << (t == kCPU ? "cpu" : "cuda"); }

namespace {
std::atomic<Device> g_default_device{Device(kCPU)};
}

void set_default_device(Device d) { g_default_device.store(d, std::memory_order_relaxed); }
Device get_default_device() { return g_default_device.load(std::memory_order_relaxed); }

}  // namespace wick
