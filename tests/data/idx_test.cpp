// The IDX reader and FashionMNIST on small synthetic files (gzip'd with zlib into a temporary
// folder): good files of each element type, and corrupt ones (bad magic, truncated header,
// data or gzip stream, trailing bytes, wrong dims, bad labels). Then the real data set, when
// Debian's dataset-fashion-mnist is installed.
#include <cstring>
#include <filesystem>
#include <random>

#include <gtest/gtest.h>

#include "data/idx_internal.h"
#include "idx_files.h"
#include "wick/data/fashion_mnist.h"
#include "wick/wick.h"

namespace fs = std::filesystem;
using namespace wick;
using wick::data::FashionMNIST;
using wick::data::read_idx;

namespace {

using namespace wick::testing_data;

// The message of the ValueError that f throws ("" when it throws nothing).
template <class F>
std::string value_error(F&& f) {
  try {
    f();
  } catch (const ValueError& e) {
    return e.what();
  }
  return "";
}

struct Synthetic {
  std::vector<uint8_t> pixels;  // n * 28 * 28
  std::vector<uint8_t> labels;  // n
};

Synthetic random_images(uint32_t n, unsigned seed) {
  std::mt19937 rng(seed);
  Synthetic s;
  for (uint32_t i = 0; i < n * 28 * 28; ++i) s.pixels.push_back(uint8_t(rng() % 256));
  for (uint32_t i = 0; i < n; ++i) s.labels.push_back(uint8_t(rng() % 10));
  return s;
}

void write_dataset(const TempDir& dir, const std::string& prefix, const Synthetic& s) {
  write_fashion_mnist(dir, prefix, s.pixels, s.labels);
}

}  // namespace

TEST(ReadIdx, Uint8ThreeDims) {
  TempDir dir;
  Bytes b = idx_header(0x08, {2, 3, 4});
  for (int i = 0; i < 24; ++i) b.push_back(uint8_t(i * 10));
  write_gz(dir.file("a.gz"), b);
  Tensor t = read_idx(dir.file("a.gz"));
  EXPECT_EQ(t.dtype(), kUInt8);
  EXPECT_EQ(t.sizes().vec(), (std::vector<int64_t>{2, 3, 4}));
  auto v = t.to_vector<int64_t>();
  for (int i = 0; i < 24; ++i) EXPECT_EQ(v[size_t(i)], i * 10);
}

TEST(ReadIdx, BigEndianTypes) {
  TempDir dir;
  // int32: -2, 70000, 5 as big-endian two's complement.
  Bytes b = idx_header(0x0C, {3});
  put_be32(b, uint32_t(-2));
  put_be32(b, 70000);
  put_be32(b, 5);
  write_gz(dir.file("i.gz"), b);
  Tensor i = read_idx(dir.file("i.gz"));
  EXPECT_EQ(i.dtype(), kInt32);
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{-2, 70000, 5}));

  // float32: 1.5 and -0.25 from their bit patterns.
  Bytes f = idx_header(0x0D, {2});
  for (float x : {1.5f, -0.25f}) {
    uint32_t bits;
    std::memcpy(&bits, &x, 4);
    put_be32(f, bits);
  }
  write_gz(dir.file("f.gz"), f);
  Tensor ft = read_idx(dir.file("f.gz"));
  EXPECT_EQ(ft.dtype(), kFloat32);
  EXPECT_EQ(ft.to_vector<float>(), (std::vector<float>{1.5f, -0.25f}));

  // int16: 0x0102 = 258 and 0xFFFF = -1.
  Bytes s = idx_header(0x0B, {2});
  for (uint8_t x : {0x01, 0x02, 0xFF, 0xFF}) s.push_back(x);
  write_plain(dir.file("s.idx"), s);  // not compressed: read as is
  Tensor st = read_idx(dir.file("s.idx"));
  EXPECT_EQ(st.dtype(), kInt16);
  EXPECT_EQ(st.to_vector<int64_t>(), (std::vector<int64_t>{258, -1}));
}

TEST(ReadIdx, MissingFile) {
  TempDir dir;
  std::string msg = value_error([&] { read_idx(dir.file("nope.gz")); });
  EXPECT_NE(msg.find("[read_idx] cannot open"), std::string::npos) << msg;
  EXPECT_NE(msg.find("nope.gz"), std::string::npos) << msg;
}

TEST(ReadIdx, BadMagic) {
  TempDir dir;
  Bytes b = {0x12, 0x34, 0x08, 0x01};
  put_be32(b, 1);
  b.push_back(7);
  write_gz(dir.file("m.gz"), b);
  std::string msg = value_error([&] { read_idx(dir.file("m.gz"), "FashionMNIST"); });
  EXPECT_NE(msg.find("[FashionMNIST]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("bad magic number 0x12340801"), std::string::npos) << msg;

  Bytes zero_dims = {0, 0, 0x08, 0};
  write_gz(dir.file("z.gz"), zero_dims);
  EXPECT_NE(value_error([&] { read_idx(dir.file("z.gz")); }).find("bad magic"), std::string::npos);

  Bytes bad_type = {0, 0, 0x42, 1, 0, 0, 0, 1, 9};
  write_gz(dir.file("t.gz"), bad_type);
  EXPECT_NE(value_error([&] { read_idx(dir.file("t.gz")); }).find("unknown IDX element type 0x42"),
            std::string::npos);
}

TEST(ReadIdx, Truncated) {
  TempDir dir;
  write_gz(dir.file("empty.gz"), {});
  EXPECT_NE(value_error([&] { read_idx(dir.file("empty.gz")); }).find("truncated"), std::string::npos);

  // The header promises 3 dims but holds 2.
  Bytes header = {0, 0, 0x08, 3};
  put_be32(header, 10);
  put_be32(header, 28);
  write_gz(dir.file("h.gz"), header);
  std::string msg = value_error([&] { read_idx(dir.file("h.gz")); });
  EXPECT_NE(msg.find("is truncated: its header has 3 dims"), std::string::npos) << msg;

  // 10 x 28 x 28 promised, one image short.
  Bytes data = idx_header(0x08, {10, 28, 28});
  data.resize(data.size() + 9 * 28 * 28, 1);
  write_gz(dir.file("d.gz"), data);
  msg = value_error([&] { read_idx(dir.file("d.gz")); });
  EXPECT_NE(msg.find("need 7840 bytes of data, but the file has 7056"), std::string::npos) << msg;

  // A huge header claim must fail cleanly, not try to allocate it.
  Bytes huge = idx_header(0x0E, {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF});
  write_gz(dir.file("huge.gz"), huge);
  EXPECT_NE(value_error([&] { read_idx(dir.file("huge.gz")); }).find("truncated"), std::string::npos);
}

TEST(ReadIdx, TruncatedGzipStream) {
  TempDir dir;
  Bytes b = idx_header(0x08, {1000});
  std::mt19937 rng(3);
  for (int i = 0; i < 1000; ++i) b.push_back(uint8_t(rng()));  // incompressible
  write_gz(dir.file("full.gz"), b);
  Bytes gz = read_plain(dir.file("full.gz"));
  ASSERT_GT(gz.size(), 600u);
  gz.resize(gz.size() / 2);
  write_plain(dir.file("cut.gz"), gz);
  std::string msg = value_error([&] { read_idx(dir.file("cut.gz")); });
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
}

TEST(ReadIdx, TrailingBytes) {
  TempDir dir;
  Bytes b = idx_header(0x08, {2});
  b.insert(b.end(), {1, 2, 3, 4, 5});
  write_gz(dir.file("x.gz"), b);
  std::string msg = value_error([&] { read_idx(dir.file("x.gz")); });
  EXPECT_NE(msg.find("has 3 bytes after the data"), std::string::npos) << msg;
}

TEST(FashionMNISTFiles, SyntheticTrainAndTest) {
  TempDir dir;
  Synthetic train = random_images(7, 1), test = random_images(3, 2);
  write_dataset(dir, "train", train);
  write_dataset(dir, "t10k", test);

  for (bool normalize : {false, true}) {
    FashionMNIST ds(dir.str(), true, {.normalize = normalize});
    ASSERT_EQ(ds.size(), 7);
    EXPECT_TRUE(ds.is_train());
    EXPECT_EQ(ds.data().sizes().vec(), (std::vector<int64_t>{7, 1, 28, 28}));
    EXPECT_EQ(ds.data().dtype(), kFloat32);
    EXPECT_EQ(ds.targets().dtype(), kInt64);
    auto px = ds.data().to_vector<double>();
    for (size_t i = 0; i < px.size(); ++i) {
      double want = train.pixels[i] / 255.0;
      if (normalize) want = (want - FashionMNIST::kMean) / FashionMNIST::kStd;
      ASSERT_NEAR(px[i], want, 1e-6) << "pixel " << i;
    }
    auto [image, label] = ds.get(4);
    EXPECT_EQ(image.sizes().vec(), (std::vector<int64_t>{1, 28, 28}));
    EXPECT_EQ(label.item<int64_t>(), train.labels[4]);
  }
  FashionMNIST t(dir.str(), false);
  EXPECT_EQ(t.size(), 3);
  EXPECT_FALSE(t.is_train());
  auto labels = t.targets().to_vector<int64_t>();
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(labels[i], test.labels[i]);
}

TEST(FashionMNISTFiles, UncompressedFilesAreFound) {
  TempDir dir;
  Synthetic s = random_images(2, 5);
  Bytes images = idx_header(0x08, {2, 28, 28});
  images.insert(images.end(), s.pixels.begin(), s.pixels.end());
  Bytes labels = idx_header(0x08, {2});
  labels.insert(labels.end(), s.labels.begin(), s.labels.end());
  write_plain(dir.file("t10k-images-idx3-ubyte"), images);
  write_plain(dir.file("t10k-labels-idx1-ubyte"), labels);
  FashionMNIST ds(dir.str(), false);
  EXPECT_EQ(ds.size(), 2);
  EXPECT_EQ(ds.targets().to_vector<int64_t>(), (std::vector<int64_t>{s.labels[0], s.labels[1]}));
}

TEST(FashionMNISTFiles, Errors) {
  TempDir dir;
  std::string msg = value_error([&] { FashionMNIST(dir.str(), true); });
  EXPECT_NE(msg.find("[FashionMNIST] cannot find"), std::string::npos) << msg;
  EXPECT_NE(msg.find("dataset-fashion-mnist"), std::string::npos) << msg;

  // Images of 27 x 28.
  Bytes images = idx_header(0x08, {1, 27, 28});
  images.resize(images.size() + 27 * 28);
  write_gz(dir.file("train-images-idx3-ubyte.gz"), images);
  Bytes labels = idx_header(0x08, {1});
  labels.push_back(3);
  write_gz(dir.file("train-labels-idx1-ubyte.gz"), labels);
  msg = value_error([&] { FashionMNIST(dir.str(), true); });
  EXPECT_NE(msg.find("[FashionMNIST]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[N, 28, 28], but holds uint8 of [1, 27, 28]"), std::string::npos) << msg;

  // Two images, one label.
  Synthetic s = random_images(2, 9);
  write_dataset(dir, "train", s);
  write_gz(dir.file("train-labels-idx1-ubyte.gz"), labels);
  msg = value_error([&] { FashionMNIST(dir.str(), true); });
  EXPECT_NE(msg.find("has 2 images but"), std::string::npos) << msg;

  // A label of 10.
  s.labels[1] = 10;
  write_dataset(dir, "train", s);
  msg = value_error([&] { FashionMNIST(dir.str(), true); });
  EXPECT_NE(msg.find("has label 10 at index 1"), std::string::npos) << msg;

  // Labels stored as int32 instead of ubyte.
  Bytes wide = idx_header(0x0C, {2});
  put_be32(wide, 1);
  put_be32(wide, 2);
  write_gz(dir.file("train-labels-idx1-ubyte.gz"), wide);
  msg = value_error([&] { FashionMNIST(dir.str(), true); });
  EXPECT_NE(msg.find("should hold uint8 labels of [N], but holds int32"), std::string::npos) << msg;
}

TEST(FashionMNISTFiles, RealData) {
  const std::string root(FashionMNIST::kDefaultRoot);
  if (!fs::exists(fs::path(root) / "train-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  for (bool train : {true, false}) {
    FashionMNIST ds(root, train);
    const int64_t n = train ? 60000 : 10000;
    ASSERT_EQ(ds.size(), n);
    // Fashion-MNIST is balanced: n / 10 images of each class.
    std::vector<int64_t> per_class(10, 0);
    for (int64_t y : ds.targets().to_vector<int64_t>()) {
      ASSERT_GE(y, 0);
      ASSERT_LT(y, 10);
      ++per_class[size_t(y)];
    }
    for (int64_t c : per_class) EXPECT_EQ(c, n / 10);
    auto px = ds.data().to_vector<float>();
    double sum = 0;
    float lo = 1, hi = 0;
    for (float p : px) {
      sum += p;
      lo = std::min(lo, p);
      hi = std::max(hi, p);
    }
    EXPECT_EQ(lo, 0.0f);
    EXPECT_EQ(hi, 1.0f);
    // The published mean of the training pixels (the constant used to normalize).
    if (train) {
      EXPECT_NEAR(sum / double(px.size()), FashionMNIST::kMean, 5e-4);
    }
  }
}

// Dims whose product wraps around 2^64 (65536^4 = 2^64 reads as 0 bytes modulo 2^64) are
// rejected, not taken as an empty tensor; the decoder from bytes gives the same answers.
TEST(ReadIdx, DimsProductOverflow) {
  TempDir dir;
  Bytes wrap = idx_header(0x08, {65536, 65536, 65536, 65536});
  write_gz(dir.file("wrap.gz"), wrap);
  std::string msg = value_error([&] { read_idx(dir.file("wrap.gz")); });
  EXPECT_NE(msg.find("[read_idx] "), std::string::npos) << msg;
  EXPECT_NE(msg.find("need more bytes of data, but the file has 0"), std::string::npos) << msg;
  msg = value_error([&] { data::parse_idx_bytes(wrap.data(), wrap.size(), "mem"); });
  EXPECT_NE(msg.find("'mem' is truncated"), std::string::npos) << msg;

  // Dims whose running product passes int64 before a 0 are refused too (numel must fit).
  Bytes zero_late = idx_header(0x08, {0xFFFFFFFF, 0xFFFFFFFF, 0});
  msg = value_error([&] { data::parse_idx_bytes(zero_late.data(), zero_late.size(), "mem"); });
  EXPECT_NE(msg.find("need more bytes"), std::string::npos) << msg;
  // A zero dim makes the data empty whatever the others say.
  Bytes empty_ok = idx_header(0x0D, {0, 0xFFFFFFFF});
  Tensor t = data::parse_idx_bytes(empty_ok.data(), empty_ok.size(), "mem");
  EXPECT_EQ(t.sizes().vec(), (std::vector<int64_t>{0, 0xFFFFFFFF}));
  EXPECT_EQ(t.dtype(), kFloat32);
  // Every prefix of a good file is rejected.
  Bytes good = idx_header(0x0B, {2, 2});
  good.insert(good.end(), {0, 1, 0, 2, 0, 3, 1, 0});
  EXPECT_EQ(data::parse_idx_bytes(good.data(), good.size(), "mem")[1][1].item<int64_t>(), 256);
  for (size_t n = 0; n < good.size(); ++n)
    EXPECT_THROW(data::parse_idx_bytes(good.data(), n, "mem"), ValueError) << n;
}
