// TokenWindows: (x, y) windows of token shards for the DataLoader.
#include <algorithm>

#include "wick/error.h"
#include "wick/ops.h"
#include "wick/text.h"

namespace wick::text {

namespace {
std::vector<std::shared_ptr<const TokenShard>> open_all(const std::vector<std::string>& paths) {
  std::vector<std::shared_ptr<const TokenShard>> shards;
  for (const std::string& p : paths) shards.push_back(std::make_shared<const TokenShard>(p));
  return shards;
}
}  // namespace

TokenWindows::TokenWindows(const std::vector<std::string>& shard_paths, int64_t T, int64_t stride)
    : TokenWindows(open_all(shard_paths), T, stride) {}

TokenWindows::TokenWindows(std::vector<std::shared_ptr<const TokenShard>> shards, int64_t T, int64_t stride)
    : shards_(std::move(shards)), T_(T), stride_(stride == 0 ? T : stride) {
  constexpr const char* op = "TokenWindows";
  WICK_CHECK(T >= 1, ValueError, op, "the window length T must be positive, got ", T);
  WICK_CHECK(stride_ >= 1, ValueError, op, "the stride must be positive, got ", stride);
  WICK_CHECK(!shards_.empty(), ValueError, op, "no token shards were given");
  for (const auto& s : shards_) {
    WICK_CHECK(s != nullptr, ValueError, op, "a shard is null");
    WICK_CHECK(s->vocab_size() == shards_.front()->vocab_size(), ValueError, op, "'", s->path(),
               "' has a vocabulary of ", s->vocab_size(), ", '", shards_.front()->path(), "' one of ",
               shards_.front()->vocab_size(), ": the shards must share one tokenizer");
  }
  for (const auto& s : shards_) {
    first_.push_back(total_);
    if (s->size() > T_) total_ += (s->size() - T_ - 1) / stride_ + 1;  // T + 1 tokens, no overflow at T's limit
  }
  first_.push_back(total_);
  WICK_CHECK(total_ > 0, ValueError, op, "no shard holds a window of T + 1 tokens (T = ", T_, ")");
}

std::pair<const TokenShard*, int64_t> TokenWindows::locate(int64_t index, const char* op) const {
  WICK_CHECK(index >= 0 && index < total_, IndexError, op, "window ", index, " is out of range for ", total_,
             " windows");
  // The last shard whose first window is at or before index (shards without windows share
  // their successor's first index, and upper_bound skips past them).
  const auto it = std::upper_bound(first_.begin(), first_.end() - 1, index) - 1;
  const auto s = size_t(it - first_.begin());
  return {shards_[s].get(), (index - *it) * stride_};
}

data::Example<> TokenWindows::get(int64_t index) const {
  const auto [shard, begin] = locate(index, "TokenWindows.get");
  std::vector<int64_t> w(size_t(T_ + 1));
  shard->read(begin, T_ + 1, w.data());
  Tensor x = empty({T_}, kInt64), y = empty({T_}, kInt64);
  std::copy(w.begin(), w.end() - 1, static_cast<int64_t*>(x.data_ptr()));
  std::copy(w.begin() + 1, w.end(), static_cast<int64_t*>(y.data_ptr()));
  return {x, y};
}

data::Example<> TokenWindows::get_batch(const std::vector<int64_t>& indices) const {
  const auto B = int64_t(indices.size());
  Tensor x = empty({B, T_}, kInt64), y = empty({B, T_}, kInt64);
  auto* px = static_cast<int64_t*>(x.data_ptr());
  auto* py = static_cast<int64_t*>(y.data_ptr());
  for (int64_t b = 0; b < B; ++b) {
    const auto [shard, begin] = locate(indices[size_t(b)], "TokenWindows.get_batch");
    shard->read(begin, T_, px + b * T_);
    shard->read(begin + 1, T_, py + b * T_);
  }
  return {x, y};
}

}  // namespace wick::text
