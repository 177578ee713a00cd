// Uses the installed wick: makes tensors, adds them, and checks the result.
#include <iostream>

#include <wick/wick.h>

int main() {
  auto a = wick::full({2, 3}, 1.5);
  auto b = wick::arange(6).view({2, 3});
  auto c = a + b;  // float32 + int64 -> float32
  float expected = 1.5f + 4.0f;
  float got = c.to_vector<float>()[4];
  if (c.dtype() != wick::kFloat32 || got != expected) {
    std::cerr << "wick_consumer: expected " << expected << " got " << got << " (" << c.dtype() << ")\n";
    return 1;
  }
  std::cout << "wick_consumer: " << c << "\n";
  return 0;
}
