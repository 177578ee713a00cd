// The current device (docs/devices.md): what "cuda" without an index means, DeviceGuard making
// another GPU current for a scope, and each GPU's name and free memory. It prints
//   current device: 0; "cuda" means cuda:0
//   inside DeviceGuard(N): current device N, "cuda" means cuda:N
//   after it: current device 0
//   cuda:0 <name>: ... MiB free of ... MiB        (a line per GPU)
// (N is the last GPU, 0 on a machine with one). Without a GPU it says so and exits 0.
#include <iostream>

#include <wick/wick.h>

int main() {
  if (!wick::cuda::is_available()) {
    std::cout << "this example needs a GPU (wick::cuda::is_available() is false)\n";
    return 0;
  }
  // [doc:device_guard]
  auto a = wick::zeros({2}, wick::Device("cuda"));  // "cuda": the current device
  std::cout << "current device: " << wick::cuda::current_device() << "; \"cuda\" means " << a.device()
            << "\n";
  const int last = wick::cuda::device_count() - 1;
  {
    wick::cuda::DeviceGuard guard(last);  // with torch.cuda.device(last):
    auto b = wick::zeros({2}, wick::Device("cuda"));
    std::cout << "inside DeviceGuard(" << last << "): current device " << wick::cuda::current_device()
              << ", \"cuda\" means " << b.device() << "\n";
  }
  std::cout << "after it: current device " << wick::cuda::current_device() << "\n";
  // [doc:end]

  // [doc:free_memory]
  for (int i = 0; i < wick::cuda::device_count(); ++i) {
    auto [free_bytes, total_bytes] = wick::cuda::mem_get_info(i);  // bytes
    std::cout << wick::Device(wick::kCUDA, i) << " " << wick::cuda::get_device_name(i) << ": "
              << (free_bytes >> 20) << " MiB free of " << (total_bytes >> 20) << " MiB\n";
  }
  // [doc:end]
}
