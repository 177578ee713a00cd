// Fashion-MNIST: the MNIST file layout (mnist_format.cpp), gzip'd, as Debian installs it.
#include "wick/data/fashion_mnist.h"

#include "data/idx_internal.h"

namespace wick::data {

FashionMNIST::FashionMNIST(const std::string& root, bool train, FashionMNISTOptions options) : train_(train) {
  const std::string prefix = train ? "train" : "t10k";
  MnistFormat f;
  f.op = "FashionMNIST";
  f.name = "Fashion-MNIST";
  f.missing_hint = " (Debian's dataset-fashion-mnist package installs the files in " +
                   std::string(kDefaultRoot) + ": apt-get install dataset-fashion-mnist)";
  if (options.normalize) {
    f.mean = kMean;
    f.std = kStd;
  }
  auto [x, y] = read_mnist_format(root, prefix + "-images-idx3-ubyte.gz", prefix + "-labels-idx1-ubyte.gz", f);
  set_tensors(std::move(x), std::move(y), f.op);
}

}  // namespace wick::data
