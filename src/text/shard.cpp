// Token shards: written once through a synced temporary file, read back through a read-only
// mapping (docs/design.md, "Text and tokens").
#include <bit>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/atomic_file.h"
#include "wick/error.h"
#include "wick/ops.h"
#include "wick/text.h"

namespace wick::text {

namespace {

static_assert(std::endian::native == std::endian::little, "token shards are little-endian");

constexpr char kMagic[8] = {'W', 'I', 'C', 'K', 'T', 'O', 'K', '\0'};
constexpr uint32_t kVersion = 1;
constexpr size_t kHeaderBytes = 32;
constexpr int64_t kMaxVocab = int64_t(1) << 32;

struct Header {
  char magic[8];
  uint32_t version;
  uint32_t token_bytes;
  uint64_t vocab_size;
  uint64_t count;
};
static_assert(sizeof(Header) == kHeaderBytes);

int width_for(int64_t vocab) { return vocab <= 65536 ? 2 : 4; }

}  // namespace

void write_shard(const std::string& path, const std::vector<int64_t>& tokens, int64_t vocab_size) {
  constexpr const char* op = "write_shard";
  WICK_CHECK(vocab_size >= 1 && vocab_size <= kMaxVocab, ValueError, op, "vocab_size must be in [1, 2^32], got ",
             vocab_size);
  for (size_t i = 0; i < tokens.size(); ++i)
    WICK_CHECK(tokens[i] >= 0 && tokens[i] < vocab_size, ValueError, op, "token ", tokens[i], " at position ", i,
               " is outside the vocabulary [0, ", vocab_size, "); '", path, "' was not written");
  const int width = width_for(vocab_size);
  Header h{};
  std::memcpy(h.magic, kMagic, 8);
  h.version = kVersion;
  h.token_bytes = uint32_t(width);
  h.vocab_size = uint64_t(vocab_size);
  h.count = tokens.size();
  detail::AtomicFile out(path, op);
  out.write(&h, sizeof h);
  // Narrowed a block at a time.
  constexpr size_t kBlock = size_t(1) << 16;
  std::vector<unsigned char> buf(kBlock * size_t(width));
  for (size_t at = 0; at < tokens.size(); at += kBlock) {
    const size_t n = std::min(kBlock, tokens.size() - at);
    if (width == 2) {
      auto* p = reinterpret_cast<uint16_t*>(buf.data());
      for (size_t i = 0; i < n; ++i) p[i] = uint16_t(tokens[at + i]);
    } else {
      auto* p = reinterpret_cast<uint32_t*>(buf.data());
      for (size_t i = 0; i < n; ++i) p[i] = uint32_t(tokens[at + i]);
    }
    out.write(buf.data(), n * size_t(width));
  }
  out.commit();
}

TokenShard::TokenShard(const std::string& path) : path_(path) {
  constexpr const char* op = "TokenShard";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  WICK_CHECK(fd >= 0, ValueError, op, "'", path, "': cannot open: ", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    detail::raise<ValueError>(op, "'", path, "': not a regular file");
  }
  const auto file_size = uint64_t(st.st_size);
  if (file_size < kHeaderBytes) {
    ::close(fd);
    detail::raise<ValueError>(op, "'", path, "': ", file_size, " bytes, too short for the ", kHeaderBytes,
                              "-byte header of a token shard (truncated?)");
  }
  void* p = ::mmap(nullptr, size_t(file_size), PROT_READ, MAP_SHARED, fd, 0);
  const int err = errno;
  ::close(fd);
  WICK_CHECK(p != MAP_FAILED, ValueError, op, "'", path, "': cannot map: ", std::strerror(err));
  map_ = p;
  map_size_ = size_t(file_size);
  // From here on the destructor does not run on a throw: unmap by hand.
  try {
    Header h;
    std::memcpy(&h, p, sizeof h);
    WICK_CHECK(std::memcmp(h.magic, kMagic, 8) == 0, ValueError, op, "'", path,
               "': not a token shard (wrong magic)");
    WICK_CHECK(h.version == kVersion, ValueError, op, "'", path, "': shard version ", h.version,
               ", this wick reads version ", kVersion);
    WICK_CHECK(h.vocab_size >= 1 && h.vocab_size <= uint64_t(kMaxVocab), ValueError, op, "'", path,
               "': corrupt header: vocabulary size ", h.vocab_size);
    const int width = width_for(int64_t(h.vocab_size));
    WICK_CHECK(h.token_bytes == uint32_t(width), ValueError, op, "'", path, "': corrupt header: ", h.token_bytes,
               "-byte tokens for a vocabulary of ", h.vocab_size, " (", width, " expected)");
    const uint64_t data = file_size - kHeaderBytes;
    WICK_CHECK(h.count <= data / uint64_t(width) && h.count * uint64_t(width) == data, ValueError, op, "'", path,
               "': the header gives ", h.count, " tokens (", h.count <= UINT64_MAX / 8 ? h.count * width : 0,
               " bytes) but the file holds ", data, " bytes of tokens",
               h.count > data / uint64_t(width) ? " (truncated)" : " (corrupt)");
    width_ = width;
    vocab_ = int64_t(h.vocab_size);
    count_ = int64_t(h.count);
    data_ = static_cast<const unsigned char*>(p) + kHeaderBytes;
    // Every token is checked once here, so reading windows later needs no checks.
    uint64_t max = 0;
    int64_t at = -1;
    if (width_ == 2) {
      const auto* t = reinterpret_cast<const uint16_t*>(data_);
      for (int64_t i = 0; i < count_; ++i)
        if (t[i] >= h.vocab_size) {
          max = t[i];
          at = i;
          break;
        }
    } else {
      const auto* t = reinterpret_cast<const uint32_t*>(data_);
      for (int64_t i = 0; i < count_; ++i)
        if (t[i] >= h.vocab_size) {
          max = t[i];
          at = i;
          break;
        }
    }
    WICK_CHECK(at < 0, ValueError, op, "'", path, "': token ", max, " at position ", at,
               " is outside the shard's vocabulary of ", h.vocab_size);
  } catch (...) {
    ::munmap(map_, map_size_);
    throw;
  }
}

TokenShard::~TokenShard() {
  if (map_) ::munmap(map_, map_size_);
}

int64_t TokenShard::operator[](int64_t i) const {
  WICK_CHECK(i >= 0 && i < count_, IndexError, "TokenShard", "index ", i, " is out of range for '", path_,
             "' of ", count_, " tokens");
  return width_ == 2 ? int64_t(reinterpret_cast<const uint16_t*>(data_)[i])
                     : int64_t(reinterpret_cast<const uint32_t*>(data_)[i]);
}

void TokenShard::read(int64_t begin, int64_t n, int64_t* out) const {
  WICK_CHECK(begin >= 0 && n >= 0 && begin <= count_ - n, IndexError, "TokenShard.read", n, " tokens from ", begin,
             " are out of range for '", path_, "' of ", count_, " tokens");
  if (width_ == 2) {
    const auto* t = reinterpret_cast<const uint16_t*>(data_) + begin;
    for (int64_t i = 0; i < n; ++i) out[i] = t[i];
  } else {
    const auto* t = reinterpret_cast<const uint32_t*>(data_) + begin;
    for (int64_t i = 0; i < n; ++i) out[i] = t[i];
  }
}

Tensor TokenShard::tokens() const {
  Tensor t = empty({count_}, kInt64);
  read(0, count_, static_cast<int64_t*>(t.data_ptr()));
  return t;
}

}  // namespace wick::text
