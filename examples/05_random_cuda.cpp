// Random numbers on GPUs (the API contract, part 5): the same seed gives the same numbers on the
// CPU and on every GPU, so results do not depend on where a program ran. It prints, for each GPU,
//   cuda:0 draws what the CPU draws: true
// Without a GPU it says so and exits 0.
#include <iostream>

#include <wick/wick.h>

int main() {
  if (!wick::cuda::is_available()) {
    std::cout << "this example needs a GPU (wick::cuda::is_available() is false)\n";
    return 0;
  }
  wick::manual_seed(7);  // every device
  auto on_cpu = wick::randn({4, 5});
  bool all_same = true;
  for (int i = 0; i < wick::cuda::device_count(); ++i) {
    wick::manual_seed(7);
    auto on_gpu = wick::randn({4, 5}, wick::Device(wick::kCUDA, i));
    const bool same = (on_gpu.cpu() == on_cpu).sum().item<int64_t>() == on_cpu.numel();
    std::cout << std::boolalpha << on_gpu.device() << " draws what the CPU draws: " << same << "\n";
    all_same = all_same && same;
  }
  return all_same ? 0 : 1;
}
