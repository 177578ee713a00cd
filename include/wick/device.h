// Where a tensor lives.
//
//   wick::Device cpu("cpu"), gpu("cuda"), gpu1("cuda:1"), g2(wick::kCUDA, 2);
//   gpu.index() == -1;       // "the current device"
//   std::cout << gpu1;       // cuda:1
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>

namespace wick {

enum class DeviceType : int8_t { CPU = 0, CUDA = 1 };
inline constexpr DeviceType kCPU = DeviceType::CPU;
inline constexpr DeviceType kCUDA = DeviceType::CUDA;
inline constexpr int kNumDeviceTypes = 2;

// A device type and an index; index -1 means "the current device" (CUDA) or the only one (CPU).
class Device {
 public:
  // The index must be -1 or in [0, 127] (a CPU device only -1 or 0); anything else throws
  // ValueError rather than wrapping into the 8-bit index.
  constexpr Device(DeviceType type = kCPU, int index = -1) : type_(type), index_(int8_t(index)) {
    if (index < -1 || index > 127 || (type == DeviceType::CPU && index > 0)) [[unlikely]]
      bad_index(type, index);
  }
  // Parses "cpu", "cuda", "cuda:N"; anything else throws ValueError.
  Device(std::string_view spec);
  Device(const char* spec) : Device(spec ? std::string_view(spec) : null_spec()) {}
  Device(const std::string& spec) : Device(std::string_view(spec)) {}

  constexpr DeviceType type() const { return type_; }
  constexpr int index() const { return index_; }
  constexpr bool has_index() const { return index_ >= 0; }
  constexpr bool is_cpu() const { return type_ == kCPU; }
  constexpr bool is_cuda() const { return type_ == kCUDA; }
  std::string str() const;

  constexpr bool operator==(const Device& o) const { return type_ == o.type_ && index_ == o.index_; }
  constexpr bool operator!=(const Device& o) const { return !(*this == o); }

 private:
  // ValueError for a null device string.
  [[noreturn]] static std::string_view null_spec();
  [[noreturn]] static void bad_index(DeviceType type, int index);
  DeviceType type_;
  int8_t index_;
};

std::ostream& operator<<(std::ostream& os, const Device& d);
std::ostream& operator<<(std::ostream& os, DeviceType t);

// The default device of factory functions (cpu unless set).
void set_default_device(Device d);
Device get_default_device();

}  // namespace wick

template <>
struct std::hash<wick::Device> {
  size_t operator()(const wick::Device& d) const { return size_t(d.type()) * 256 + size_t(d.index() + 1); }
};
