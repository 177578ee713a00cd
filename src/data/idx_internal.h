// The IDX decoder over bytes already in memory (decompressed): read_idx reads the file and
// calls it; the fuzz targets call it directly. `path` only names the input in messages.
// And the MNIST file layout that MNIST and Fashion-MNIST share.
#pragma once

#include <cstddef>
#include <string>
#include <utility>

#include "wick/tensor.h"

namespace wick::data {

Tensor parse_idx_bytes(const unsigned char* data, size_t size, const std::string& path,
                       const char* op = "read_idx");

// How a dataset of the MNIST layout names itself in errors, and the pixel normalization.
struct MnistFormat {
  const char* op = "MNIST";      // the [op] of errors
  const char* name = "MNIST";    // the data set, in messages
  std::string missing_hint;      // appended to "cannot find '...'"
  double mean = 0.0, std = 1.0;  // images are (pixel / 255 - mean) / std
};

// Reads and checks root/images_name (uint8 [N, 28, 28]) and root/labels_name (uint8 [N], 0 to 9),
// each gzip'd or plain (the name with or without ".gz", whichever exists): images float32
// [N, 1, 28, 28], labels int64 [N]. ValueError "[op] ..." for missing or corrupt files.
std::pair<Tensor, Tensor> read_mnist_format(const std::string& root, const std::string& images_name,
                                            const std::string& labels_name, const MnistFormat& format);

}  // namespace wick::data
