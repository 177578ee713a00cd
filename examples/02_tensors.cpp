// Tensors on the CPU (the API contract, part 2): sizes, dtype and device of a new tensor, and
// new_* keeping the dtype and device of their source. It prints
//   [2, 3] float32 cpu
//   tensor([[0.3000, 0.3000],
//           [0.3000, 0.3000],
//           [0.3000, 0.3000]])
//   tensor([[1, 2, 3]])
//   tensor([1, 2, 3]) tensor([1., 2.])
// The same with a GPU: 02_tensors_cuda.cpp.
// [doc:first_program]
#include <iostream>

#include <wick/wick.h>

int main() {
  auto a = wick::ones({2, 3});
  std::cout << a.sizes() << " " << a.dtype() << " " << a.device() << "\n";  // [2, 3] float32 cpu

  auto x_cpu = wick::empty({2});
  auto x_cpu_long = wick::empty({2}, wick::kInt64);
  std::cout << x_cpu.new_full({3, 2}, 0.3) << "\n";
  std::cout << x_cpu_long.new_tensor({{1, 2, 3}}) << "\n";  // int64, as x_cpu_long

  // wick::tensor({1, 2, 3}) is int64, wick::tensor({1., 2.}) float32.
  std::cout << wick::tensor({1, 2, 3}) << " " << wick::tensor({1., 2.}) << "\n";
}
// [doc:end]
