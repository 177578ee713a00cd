// Fashion-MNIST from the gzip'd IDX files of Debian's dataset-fashion-mnist, and the IDX reader.
//
//   wick::data::FashionMNIST train("/usr/share/datasets/fashion-mnist", /*train=*/true);
//   train.size();                        // 60000
//   auto [image, label] = train.get(0);  // image: float32 [1, 28, 28] in [0, 1]; label: int64
//   auto raw = wick::data::read_idx("t10k-labels-idx1-ubyte.gz");  // uint8 [10000]
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "wick/data/dataset.h"

namespace wick::data {

// Reads an IDX file (plain or gzip'd) into a CPU tensor of its element type and dims.
// Bad magic numbers, truncated data and trailing bytes throw ValueError "[op] ...".
Tensor read_idx(const std::string& path, const char* op = "read_idx");

struct FashionMNISTOptions {
  // Subtract kMean and divide by kStd after scaling to [0, 1] (transforms.Normalize).
  bool normalize = false;
};

class FashionMNIST : public TensorDataset {
 public:
  // Where Debian's dataset-fashion-mnist installs the files.
  static constexpr std::string_view kDefaultRoot = "/usr/share/datasets/fashion-mnist";
  // Mean and standard deviation of the training images' pixels, scaled to [0, 1].
  static constexpr double kMean = 0.2860, kStd = 0.3530;
  static constexpr std::array<std::string_view, 10> kClasses = {
      "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
      "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};

  // Reads {train,t10k}-{images-idx3,labels-idx1}-ubyte.gz from root: images float32
  // [N, 1, 28, 28], labels int64 [N] in 0..9. Missing or corrupt files throw ValueError.
  explicit FashionMNIST(const std::string& root = std::string(kDefaultRoot), bool train = true,
                        FashionMNISTOptions options = {});
  bool is_train() const { return train_; }

 private:
  bool train_;
};

}  // namespace wick::data
