// Fashion-MNIST (the API contract, part 8), from Debian's dataset-fashion-mnist: its sizes, one
// sample, and a batch from a DataLoader. It prints
//   train: 60000 samples, test: 10000 samples
//   sample 0: data [1, 28, 28] float32, label 9
//   first batch: [64, 1, 28, 28] [64]
#include <iostream>
#include <string>

#include <wick/wick.h>

int main() {
  const std::string root(wick::data::FashionMNIST::kDefaultRoot);  // /usr/share/datasets/fashion-mnist
  wick::data::FashionMNIST train(root, /*train=*/true);
  wick::data::FashionMNIST test(root, /*train=*/false);
  std::cout << "train: " << train.size() << " samples, test: " << test.size() << " samples\n";
  auto [x, y] = train.get(0);
  std::cout << "sample 0: data " << x.sizes() << " " << x.dtype() << ", label " << y.item<int64_t>() << "\n";
  wick::data::DataLoader loader(test, {.batch_size = 64});
  for (auto& batch : loader) {
    std::cout << "first batch: " << batch.data.sizes() << " " << batch.target.sizes() << "\n";
    break;
  }
}
