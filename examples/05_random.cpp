// Random numbers (the API contract, part 5): one seed, the same numbers, every time. It prints
//   same seed, same numbers: true
//   another seed, other numbers: true
//   rand in [0, 1): true; randint in [0, 10): true
// The CPU against the GPUs: 05_random_cuda.cpp.
#include <iostream>

#include <wick/wick.h>

// True when every element of a boolean tensor is true.
bool all(const wick::Tensor& b) { return b.sum().item<int64_t>() == b.numel(); }

int main() {
  wick::manual_seed(42);
  auto a = wick::rand({1000});
  auto n = wick::randn({3, 4});
  wick::manual_seed(42);
  auto b = wick::rand({1000});
  auto m = wick::randn({3, 4});
  wick::manual_seed(43);
  auto c = wick::rand({1000});
  std::cout << std::boolalpha;
  std::cout << "same seed, same numbers: " << (all(a == b) && all(n == m)) << "\n";
  std::cout << "another seed, other numbers: " << (!all(a == c)) << "\n";
  auto r = wick::randint(0, 10, {1000});
  std::cout << "rand in [0, 1): " << (all(a >= 0) && all(a < 1))
            << "; randint in [0, 10): " << (all(r >= 0) && all(r < 10)) << "\n";
}
