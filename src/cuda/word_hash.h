// The hash of the plan caches' keys (cuBLASLt matmuls in blas.cpp, cuDNN convolutions in
// cudnn_conv.cpp): a key is a plain struct of int64 words with no padding, hashed word by word
// with FNV-1a.
#pragma once

#include <cstddef>
#include <cstdint>

namespace wick::detail::gpu {

template <class Key>
struct WordHash {
  static_assert(sizeof(Key) % sizeof(int64_t) == 0, "a plan key is made of int64 words");
  size_t operator()(const Key& k) const {
    const auto* p = reinterpret_cast<const int64_t*>(&k);
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < sizeof(Key) / sizeof(int64_t); ++i) h = (h ^ uint64_t(p[i])) * 1099511628211ull;
    return size_t(h);
  }
};

}  // namespace wick::detail::gpu
