// Autograd (the API contract, part 6): gradients of a small function, the names of the graph's
// nodes (PyTorch's), no_grad, detach and retain_grad. It prints
//   tensor(30., grad_fn=<SumBackward0>)
//   tensor([[2., 4.],
//           [6., 8.]])
//   MmBackward0
//   under NoGradGuard: requires_grad = false; detach(): requires_grad = false
//   tensor([[1., 1.],
//           [1., 1.]])
//   tensor([[ 5.,  7.],
//           [ 9., 11.]])
#include <iostream>

#include <wick/wick.h>

int main() {
  auto x = wick::tensor({{1., 2.}, {3., 4.}}).requires_grad_();
  auto y = (x * x).sum();  // 1 + 4 + 9 + 16
  std::cout << y << "\n";
  y.backward();
  std::cout << x.grad() << "\n";  // d/dx sum(x^2) = 2x

  auto w = wick::tensor({{1.}, {-1.}});
  std::cout << x.mm(w).grad_fn()->name() << "\n";

  std::cout << std::boolalpha;
  {
    wick::NoGradGuard no_grad;  // with torch.no_grad():
    std::cout << "under NoGradGuard: requires_grad = " << (x * 2).requires_grad();
  }
  std::cout << "; detach(): requires_grad = " << x.detach().requires_grad() << "\n";

  auto h = x * 3;
  h.retain_grad();  // keep the gradient of a non-leaf tensor
  h.sum().backward();
  std::cout << h.grad() << "\n";
  std::cout << x.grad() << "\n";  // accumulated: 2x + 3
}
