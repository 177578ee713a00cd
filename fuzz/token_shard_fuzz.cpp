// A token shard read from arbitrary bytes: opening it either throws a wick::Error or gives a
// shard whose every token lies in [0, vocab_size), read the same three ways (one at a time,
// read(), tokens()); windows over it hold only its tokens.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "wick/error.h"
#include "wick/ops.h"
#include "wick/text.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/wick_fuzz_token_shard_" + std::to_string(::getpid()) + ".tokens";
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data), std::streamsize(size));
  }
  std::shared_ptr<const wick::text::TokenShard> shard;
  try {
    shard = std::make_shared<const wick::text::TokenShard>(path);
  } catch (const wick::Error&) {
    return 0;
  }
  const int64_t n = shard->size(), vocab = shard->vocab_size();
  if (n < 0 || vocab < 1 || size_t(n) * size_t(shard->token_bytes()) + 32 > size) std::abort();
  std::vector<int64_t> want(static_cast<size_t>(n));
  if (n > 0) shard->read(0, n, want.data());
  const auto tokens = shard->tokens();
  if (tokens.numel() != n) std::abort();
  const auto from_tensor = tokens.to_vector<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t t = (*shard)[i];
    if (t < 0 || t >= vocab || want[size_t(i)] != t || from_tensor[size_t(i)] != t) std::abort();
  }
  // Windows of a few lengths; a shard too short for one is a ValueError.
  for (int64_t T : {1, 2, 7}) {
    try {
      wick::text::TokenWindows windows({shard}, T);
      for (int64_t w = 0; w < windows.size() && w < 4; ++w) {
        auto ex = windows.get(w);
        auto x = ex.data.to_vector<int64_t>(), y = ex.target.to_vector<int64_t>();
        if (int64_t(x.size()) != T || int64_t(y.size()) != T) std::abort();
        for (int64_t j = 0; j < T; ++j)
          if (x[size_t(j)] != want[size_t(w * T + j)] || y[size_t(j)] != want[size_t(w * T + j + 1)]) std::abort();
      }
    } catch (const wick::Error&) {
      if (n >= T + 1) std::abort();  // enough tokens for a window: it must not fail
    }
  }
  return 0;
}
