// Data (the API contract, part 8): a TensorDataset read by a DataLoader in batches, in order,
// then shuffled (every sample once per epoch). It prints
//   batch 0: data [4, 2], targets tensor([0, 1, 2, 3])
//   batch 1: data [4, 2], targets tensor([4, 5, 6, 7])
//   batch 2: data [2, 2], targets tensor([8, 9])
//   shuffled, with drop_last: 2 batches of 4, each sample at most once: true
// Fashion-MNIST through the same loader: 08_fashion_mnist.cpp.
#include <iostream>
#include <set>

#include <wick/wick.h>

int main() {
  auto features = wick::arange(20.).view({10, 2});
  auto labels = wick::arange(10);
  wick::data::DataLoader loader(wick::data::TensorDataset(features, labels), {.batch_size = 4});
  int i = 0;
  for (auto& batch : loader) {
    std::cout << "batch " << i++ << ": data " << batch.data.sizes() << ", targets " << batch.target << "\n";
  }

  wick::data::DataLoader shuffled(wick::data::TensorDataset(features, labels),
                                  {.batch_size = 4, .shuffle = true, .num_workers = 2, .drop_last = true});
  std::set<int64_t> seen;
  int batches = 0, samples = 0;
  for (auto& batch : shuffled) {
    ++batches;
    for (int64_t v : batch.target.to_vector<int64_t>()) {
      seen.insert(v);
      ++samples;
    }
  }
  std::cout << std::boolalpha << "shuffled, with drop_last: " << batches
            << " batches of 4, each sample at most once: " << (int(seen.size()) == samples && samples == 8)
            << "\n";
}
