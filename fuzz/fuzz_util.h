// What the fuzz targets share: a reader that turns the fuzzer's bytes into small numbers.
//
// Every target calls wick on the input and accepts only wick::Error as a failure: a foreign
// exception escapes LLVMFuzzerTestOneInput and aborts the run, as a crash or a sanitizer
// report does.
#pragma once

#include <cstddef>
#include <cstdint>

namespace wick_fuzz {

class Bytes {
 public:
  Bytes(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool empty() const { return at_ >= size_; }
  // The next byte, or 0 once the input is used up.
  uint8_t u8() { return at_ < size_ ? data_[at_++] : 0; }
  // A small signed number in [lo, hi].
  int64_t range(int64_t lo, int64_t hi) { return lo + int64_t(u8()) % (hi - lo + 1); }
  // Mostly small numbers, now and then a large, negative or extreme one.
  int64_t dim() {
    const uint8_t k = u8();
    switch (k % 16) {
      case 0:
        return -int64_t(u8() % 4) - 1;
      case 1:
        return int64_t(1) << (u8() % 63);
      case 2:
        return INT64_MAX - int64_t(u8() % 2);
      case 3:
        return INT64_MIN + int64_t(u8() % 2);
      default:
        return int64_t(k % 6);
    }
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t at_ = 0;
};

}  // namespace wick_fuzz
