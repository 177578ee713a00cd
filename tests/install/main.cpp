// Uses the installed wick through its one header: makes tensors, adds them, and checks the
// result; then touches data loading, nn, optim, save/load and the CUDA runtime API. Built with
// WICK_PACKAGE_VERSION (the CMake package's or pkg-config's version), it checks that the
// headers' WICK_VERSION and the library's wick::version() agree with it.
#include <cstdio>
#include <cstring>
#include <iostream>

#include <wick/wick.h>

int main() {
#ifdef WICK_PACKAGE_VERSION
  if (std::strcmp(WICK_PACKAGE_VERSION, WICK_VERSION) != 0 ||
      std::strcmp(wick::version(), WICK_VERSION) != 0) {
    std::cerr << "wick_consumer: versions differ: package " << WICK_PACKAGE_VERSION << ", headers "
              << WICK_VERSION << ", library " << wick::version() << "\n";
    return 1;
  }
#endif
  static_assert(WICK_VERSION_MAJOR >= 0 && WICK_VERSION_MINOR >= 0 && WICK_VERSION_PATCH >= 0);
  auto a = wick::full({2, 3}, 1.5);
  auto b = wick::arange(6).view({2, 3});
  auto c = a + b;  // float32 + int64 -> float32
  float expected = 1.5f + 4.0f;
  float got = c.to_vector<float>()[4];
  if (c.dtype() != wick::kFloat32 || got != expected) {
    std::cerr << "wick_consumer: expected " << expected << " got " << got << " (" << c.dtype() << ")\n";
    return 1;
  }
  std::cout << "wick_consumer: wick " << wick::version() << ": " << c << "\n";

  wick::data::DataLoader loader(wick::data::TensorDataset(wick::ones({4, 2}), wick::arange(4)),
                                {.batch_size = 2});
  wick::nn::Linear lin(2, 1);
  wick::optim::SGD opt(lin->parameters(), wick::optim::SGDOptions(0.1));
  for (auto& batch : loader) {
    opt.zero_grad();
    lin(batch.data).sum().backward();
    opt.step();
  }
  wick::save(lin->state_dict(), "wick_consumer.safetensors");
  auto state = wick::load("wick_consumer.safetensors");
  std::remove("wick_consumer.safetensors");
  if (state.count("weight") != 1 || wick::cuda::device_count() < 0) {
    std::cerr << "wick_consumer: save/load lost the weight\n";
    return 1;
  }
  return 0;
}
