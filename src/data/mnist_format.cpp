// The MNIST file layout that MNIST and Fashion-MNIST share: an images IDX file (uint8 [N, 28, 28])
// and a labels IDX file (uint8 [N], 0 to 9) per split, checked against that layout and converted
// once to float32 images [N, 1, 28, 28] and int64 labels.
//
// Images are converted at load time (188 MB for a training set of 60000) rather than per batch as
// torchvision's ToTensor does: the workers then only copy rows, and the training loop on a
// 2-core machine never waits for them.
#include <filesystem>

#include "data/idx_internal.h"
#include "wick/data/fashion_mnist.h"
#include "wick/ops.h"

namespace wick::data {

namespace {

constexpr int64_t kSide = 28;
constexpr int64_t kNumClasses = 10;

// root/name (".gz" or not), or the same name with(out) ".gz" when only that one is there.
std::string find_file(const std::string& root, const std::string& name, const MnistFormat& f) {
  namespace fs = std::filesystem;
  const fs::path given = fs::path(root) / name;
  const bool gz = given.extension() == ".gz";
  const fs::path other = gz ? fs::path(root) / given.stem() : fs::path(root) / (name + ".gz");
  std::error_code ec;
  if (!fs::exists(given, ec) && fs::exists(other, ec)) return other.string();
  WICK_CHECK(fs::exists(given, ec), ValueError, f.op, "cannot find '", given.string(), "'", f.missing_hint);
  return given.string();
}

}  // namespace

std::pair<Tensor, Tensor> read_mnist_format(const std::string& root, const std::string& images_name,
                                            const std::string& labels_name, const MnistFormat& f) {
  const std::string images_path = find_file(root, images_name, f);
  const std::string labels_path = find_file(root, labels_name, f);
  Tensor images = read_idx(images_path, f.op);
  Tensor labels = read_idx(labels_path, f.op);

  WICK_CHECK(
      images.dtype() == kUInt8 && images.dim() == 3 && images.size(1) == kSide && images.size(2) == kSide,
      ValueError, f.op, "'", images_path, "' should hold uint8 images of [N, 28, 28], but holds ",
      images.dtype(), " of ", images.sizes());
  WICK_CHECK(labels.dtype() == kUInt8 && labels.dim() == 1, ValueError, f.op, "'", labels_path,
             "' should hold uint8 labels of [N], but holds ", labels.dtype(), " of ", labels.sizes());
  WICK_CHECK(images.size(0) == labels.size(0), ValueError, f.op, "'", images_path, "' has ", images.size(0),
             " images but '", labels_path, "' has ", labels.size(0), " labels");

  const int64_t n = images.size(0);
  Tensor y = empty({n}, kInt64);
  const uint8_t* lp = labels.data_ptr<uint8_t>();
  int64_t* yp = y.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    WICK_CHECK(lp[i] < kNumClasses, ValueError, f.op, "'", labels_path, "' has label ", int(lp[i]),
               " at index ", i, "; ", f.name, " labels are 0 to 9");
    yp[i] = lp[i];
  }

  Tensor x = empty({n, 1, kSide, kSide}, kFloat32);
  const uint8_t* px = images.data_ptr<uint8_t>();
  float* out = x.data_ptr<float>();
  // One table of the 256 possible values: the same float for the same pixel, and no division per pixel.
  float table[256];
  for (int v = 0; v < 256; ++v) table[v] = float((v / 255.0 - f.mean) / f.std);
  for (int64_t i = 0; i < x.numel(); ++i) out[i] = table[px[i]];
  return {std::move(x), std::move(y)};
}

}  // namespace wick::data
