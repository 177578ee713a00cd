// Fashion-MNIST: four IDX files, checked against the layout the dataset promises, converted once
// to float32 images in [0, 1] (optionally normalized) and int64 labels.
//
// Images are converted at load time (188 MB for the training set) rather than per batch as
// torchvision's ToTensor does: the workers then only copy rows, and the training loop on a
// 2-core machine never waits for them.
#include "wick/data/fashion_mnist.h"

#include <filesystem>

#include "wick/ops.h"

namespace wick::data {

namespace {

constexpr const char* kOp = "FashionMNIST";
constexpr int64_t kSide = 28;
constexpr int64_t kNumClasses = 10;

// root/name, or root/name without ".gz" when only the uncompressed file is there.
std::string find_file(const std::string& root, const std::string& name) {
  namespace fs = std::filesystem;
  fs::path gz = fs::path(root) / name;
  fs::path plain = fs::path(root) / gz.stem();
  std::error_code ec;
  if (!fs::exists(gz, ec) && fs::exists(plain, ec)) return plain.string();
  WICK_CHECK(fs::exists(gz, ec), ValueError, kOp, "cannot find '", gz.string(),
             "' (Debian's dataset-fashion-mnist ", "package installs the files in ",
             FashionMNIST::kDefaultRoot, ": apt-get install dataset-fashion-mnist)");
  return gz.string();
}

}  // namespace

FashionMNIST::FashionMNIST(const std::string& root, bool train, FashionMNISTOptions options) : train_(train) {
  const std::string prefix = train ? "train" : "t10k";
  const std::string images_path = find_file(root, prefix + "-images-idx3-ubyte.gz");
  const std::string labels_path = find_file(root, prefix + "-labels-idx1-ubyte.gz");
  Tensor images = read_idx(images_path, kOp);
  Tensor labels = read_idx(labels_path, kOp);

  WICK_CHECK(
      images.dtype() == kUInt8 && images.dim() == 3 && images.size(1) == kSide && images.size(2) == kSide,
      ValueError, kOp, "'", images_path, "' should hold uint8 images of [N, 28, 28], but holds ",
      images.dtype(), " of ", images.sizes());
  WICK_CHECK(labels.dtype() == kUInt8 && labels.dim() == 1, ValueError, kOp, "'", labels_path,
             "' should hold uint8 labels of [N], but holds ", labels.dtype(), " of ", labels.sizes());
  WICK_CHECK(images.size(0) == labels.size(0), ValueError, kOp, "'", images_path, "' has ", images.size(0),
             " images but '", labels_path, "' has ", labels.size(0), " labels");

  const int64_t n = images.size(0);
  Tensor x = empty({n, 1, kSide, kSide}, kFloat32);
  const uint8_t* px = images.data_ptr<uint8_t>();
  float* out = x.data_ptr<float>();
  // One table of the 256 possible values: the same float for the same pixel, and no division per pixel.
  float table[256];
  for (int v = 0; v < 256; ++v) {
    double f = v / 255.0;
    table[v] = float(options.normalize ? (f - kMean) / kStd : f);
  }
  for (int64_t i = 0; i < x.numel(); ++i) out[i] = table[px[i]];

  Tensor y = empty({n}, kInt64);
  const uint8_t* lp = labels.data_ptr<uint8_t>();
  int64_t* yp = y.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    WICK_CHECK(lp[i] < kNumClasses, ValueError, kOp, "'", labels_path, "' has label ", int(lp[i]),
               " at index ", i, "; Fashion-MNIST labels are 0 to 9");
    yp[i] = lp[i];
  }
  set_tensors(std::move(x), std::move(y), kOp);
}

}  // namespace wick::data
