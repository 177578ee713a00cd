// Tensors on a GPU (the API contract, part 2): a random CUDA tensor, a copy of a CPU tensor on
// the GPU, the error mixing devices gives, and new_full on a CUDA tensor. It prints
//   tensor([[0.xxxx, 0.xxxx],
//           [0.xxxx, 0.xxxx]], device='cuda:0')      (random values)
//   [2, 3] float32 cpu
//   [2, 3] float32 cuda:0
//   wick::DeviceError: [mul] expected all tensors to be on the same device, but found at least
//   two devices, cpu and cuda:0 (argument 'other' is on cuda:0)   (on one line)
//   tensor([[-5., -5.],
//           [-5., -5.],
//           [-5., -5.]], device='cuda:0')
// Without a GPU it says so and exits 0.
#include <iostream>

#include <wick/wick.h>

int main() {
  if (!wick::cuda::is_available()) {
    std::cout << "this example needs a GPU (wick::cuda::is_available() is false)\n";
    return 0;
  }
  auto x = wick::rand({2, 2}, wick::Device("cuda"));
  std::cout << x << "\n";

  // [doc:to_and_mixing]
  auto a = wick::ones({2, 3});
  auto b = a.to("cuda");  // a new tensor on cuda:0; a stays on the CPU
  std::cout << a.sizes() << " " << a.dtype() << " " << a.device() << "\n";  // [2, 3] float32 cpu
  std::cout << b.sizes() << " " << b.dtype() << " " << b.device() << "\n";  // [2, 3] float32 cuda:0
  try {
    a* b;
    return 1;
  } catch (const wick::DeviceError& e) {
    std::cout << "wick::DeviceError: " << e.what() << "\n";
  }
  // [doc:end]

  auto x_gpu = wick::empty({2}, wick::Device("cuda"));
  std::cout << x_gpu.new_full({3, 2}, -5) << "\n";  // float32 on cuda:0, as x_gpu
}
