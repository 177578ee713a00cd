// Modules on a GPU (the API contract, part 7): a Linear moved in place with cuda(i), its output
// on that device, and a loss whose weight buffer moves with it. It prints
//   cpu
//   tensor([[0.xxxx],
//           [0.xxxx]], device='cuda:N', grad_fn=<AddmmBackward0>)   (random values)
//   weight: tensor([1., 3.], device='cuda:0')
//   loss on cuda:0
// The contract's program uses cuda:7; this one the last GPU there is (7 on an 8-GPU machine).
// Without a GPU it says so and exits 0.
#include <algorithm>
#include <iostream>

#include <wick/wick.h>

int main() {
  if (!wick::cuda::is_available()) {
    std::cout << "this example needs a GPU (wick::cuda::is_available() is false)\n";
    return 0;
  }
  const int gpu = std::min(7, wick::cuda::device_count() - 1);
  // [doc:module_cuda]
  wick::nn::Linear net(3, 1);
  std::cout << net->parameters()[0].device() << "\n";  // cpu
  net->cuda(gpu);                                      // in place; returns the module
  auto x = wick::rand({2, 3}).cuda(gpu);
  std::cout << net(x) << "\n";
  // [doc:end]

  wick::nn::CrossEntropyLoss criterion(wick::nn::CrossEntropyLossOptions().weight(wick::tensor({1., 3.})));
  auto input = wick::randn({4, 2}).cuda();
  auto target = wick::tensor({1., 0., 0., 1.}).to(wick::kInt64).cuda();
  criterion->cuda();
  auto loss = criterion(input, target);
  for (auto& [name, buf] : criterion->named_buffers()) std::cout << name << ": " << buf << "\n";
  std::cout << "loss on " << loss.device() << "\n";
}
