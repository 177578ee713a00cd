// Helpers of the data tests: a temporary folder per test, and IDX files written byte by byte
// (gzip'd with zlib or plain) from known contents.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

namespace wick::testing_data {

using Bytes = std::vector<unsigned char>;

// A fresh folder named after the running test, removed at the end.
class TempDir {
 public:
  TempDir() {
    auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            ("wick_data_" + std::to_string(getpid()) + "_" + info->test_suite_name() + "_" + info->name());
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

inline void put_be32(Bytes& b, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b.push_back(uint8_t(v >> s));
}

// An IDX header: magic 0, 0, type, ndims, then each dim big-endian.
inline Bytes idx_header(uint8_t type, const std::vector<uint32_t>& dims) {
  Bytes b = {0, 0, type, uint8_t(dims.size())};
  for (uint32_t d : dims) put_be32(b, d);
  return b;
}

inline void write_gz(const std::string& path, const Bytes& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  if (!bytes.empty()) {
    ASSERT_EQ(gzwrite(f, bytes.data(), unsigned(bytes.size())), int(bytes.size()));
  }
  gzclose(f);
}

inline void write_plain(const std::string& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

inline Bytes read_plain(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

// Writes {prefix}-images-idx3-ubyte.gz and {prefix}-labels-idx1-ubyte.gz (prefix "train" or
// "t10k") into dir: pixels holds n * 28 * 28 bytes, labels n.
inline void write_fashion_mnist(const TempDir& dir, const std::string& prefix,
                                const std::vector<uint8_t>& pixels, const std::vector<uint8_t>& labels) {
  const auto n = uint32_t(labels.size());
  Bytes images = idx_header(0x08, {n, 28, 28});
  images.insert(images.end(), pixels.begin(), pixels.end());
  Bytes lab = idx_header(0x08, {n});
  lab.insert(lab.end(), labels.begin(), labels.end());
  write_gz(dir.file(prefix + "-images-idx3-ubyte.gz"), images);
  write_gz(dir.file(prefix + "-labels-idx1-ubyte.gz"), lab);
}

}  // namespace wick::testing_data
