// The IDX decoder (MNIST files, after gunzip) on arbitrary bytes: a tensor whose bytes are
// exactly the input's data, or a wick::Error.
#include <cstdint>
#include <cstdlib>

#include "data/idx_internal.h"
#include "wick/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const wick::Tensor t = wick::data::parse_idx_bytes(data, size, "<fuzz>");
    size_t dims = 0;
    for (size_t i = 0; i < size_t(t.dim()); ++i) dims += 4;
    if (4 + dims + size_t(t.nbytes()) != size) std::abort();
  } catch (const wick::Error&) {}
  return 0;
}
