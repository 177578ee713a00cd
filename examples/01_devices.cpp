// Devices (the API contract, part 1): naming devices, their type and index, printing one, and
// the error an invalid device string gives. Runs anywhere; it prints
//   cuda:1
//   gpu.type() == wick::kCUDA: true
//   gpu.index() == -1: true
//   gpu1.index() == 1: true
//   g2: cuda:2, cpu: cpu
//   wick::ValueError: [Device] invalid device string: 'gpu:0' ...
// (the error message in full, as in 01_devices.expected).
#include <iostream>

#include <wick/wick.h>

int main() {
  // [doc:devices]
  wick::Device cpu("cpu"), gpu("cuda"), gpu1("cuda:1"), g2(wick::kCUDA, 2);
  std::cout << gpu1 << "\n";  // cuda:1
  std::cout << std::boolalpha;
  std::cout << "gpu.type() == wick::kCUDA: " << (gpu.type() == wick::kCUDA) << "\n";
  std::cout << "gpu.index() == -1: " << (gpu.index() == -1) << "\n";  // "the current device"
  std::cout << "gpu1.index() == 1: " << (gpu1.index() == 1) << "\n";
  std::cout << "g2: " << g2 << ", cpu: " << cpu << "\n";
  // [doc:end]
  try {
    wick::Device("gpu:0");
  } catch (const wick::ValueError& e) {
    std::cout << "wick::ValueError: " << e.what() << "\n";
  }
}
