// The IDX decoder over bytes already in memory (decompressed): read_idx reads the file and
// calls it; the fuzz targets call it directly. `path` only names the input in messages.
#pragma once

#include <cstddef>
#include <string>

#include "wick/tensor.h"

namespace wick::data {

Tensor parse_idx_bytes(const unsigned char* data, size_t size, const std::string& path,
                       const char* op = "read_idx");

}  // namespace wick::data
