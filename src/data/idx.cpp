// The IDX format of MNIST and Fashion-MNIST: a 4-byte magic number (0, 0, element type, number
// of dims), each dim as a big-endian uint32, then the elements in big-endian row-major order.
// zlib's gzread reads gzip'd and plain files alike.
//
// The whole decompressed file is read before the header's sizes are trusted: a corrupt header
// can't make us allocate more than the file holds, and truncation shows as a short buffer.
#include <bit>
#include <cerrno>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include <zlib.h>

#include "data/idx_internal.h"
#include "wick/data/fashion_mnist.h"
#include "wick/ops.h"

namespace wick::data {

namespace {

struct GzCloser {
  void operator()(gzFile f) const { gzclose(f); }
};

std::vector<unsigned char> read_all(const std::string& path, const char* op) {
  errno = 0;
  std::unique_ptr<gzFile_s, GzCloser> f(gzopen(path.c_str(), "rb"));
  WICK_CHECK(f != nullptr, ValueError, op, "cannot open '", path,
             "': ", errno ? std::strerror(errno) : "out of memory");
  std::vector<unsigned char> buf;
  constexpr size_t kChunk = size_t(1) << 20;
  for (;;) {
    size_t old = buf.size();
    buf.resize(old + kChunk);
    int got = gzread(f.get(), buf.data() + old, unsigned(kChunk));
    if (got < 0) {
      int code = 0;
      const char* msg = gzerror(f.get(), &code);
      detail::raise<ValueError>(op, "'", path, "' is not a readable gzip file: ", msg);
    }
    buf.resize(old + size_t(got));
    if (got == 0) break;
  }
  // A gzip stream cut short reads as end of file; zlib reports it only through gzerror.
  int code = 0;
  const char* msg = gzerror(f.get(), &code);
  WICK_CHECK(code == Z_OK, ValueError, op, "'", path, "' is truncated or corrupt (gzip: ", msg, ")");
  return buf;
}

uint32_t read_be32(const unsigned char* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

Dtype idx_dtype(unsigned char code, const std::string& path, const char* op) {
  switch (code) {
    case 0x08:
      return kUInt8;
    case 0x09:
      return kInt8;
    case 0x0B:
      return kInt16;
    case 0x0C:
      return kInt32;
    case 0x0D:
      return kFloat32;
    case 0x0E:
      return kFloat64;
    default:
      detail::raise<ValueError>(
          op, "'", path, "' has an unknown IDX element type 0x", std::hex, int(code),
          " (expected 0x08 ubyte, 0x09 byte, 0x0b short, 0x0c int, 0x0d float or 0x0e double)");
  }
}

// Copies n big-endian elements of `size` bytes each into host order.
void copy_big_endian(unsigned char* to, const unsigned char* from, size_t n, size_t size) {
  if (size == 1 || std::endian::native == std::endian::big) {
    std::memcpy(to, from, n * size);
    return;
  }
  for (size_t i = 0; i < n; ++i)
    for (size_t b = 0; b < size; ++b) to[i * size + b] = from[i * size + size - 1 - b];
}

}  // namespace

Tensor read_idx(const std::string& path, const char* op) {
  const std::vector<unsigned char> buf = read_all(path, op);
  return parse_idx_bytes(buf.data(), buf.size(), path, op);
}

Tensor parse_idx_bytes(const unsigned char* data, size_t size, const std::string& path, const char* op) {
  const std::span<const unsigned char> buf(data, size);
  WICK_CHECK(buf.size() >= 4, ValueError, op, "'", path, "' is truncated: ", buf.size(),
             " bytes, too short for an IDX magic number");
  const uint32_t magic = read_be32(buf.data());
  WICK_CHECK(buf[0] == 0 && buf[1] == 0 && buf[3] >= 1, ValueError, op, "'", path,
             "' is not an IDX file: bad magic number 0x", std::hex, magic,
             " (expected two zero bytes, an element type and the number of dims)");
  const Dtype dtype = idx_dtype(buf[2], path, op);
  const size_t ndim = buf[3];
  const size_t header = 4 + 4 * ndim;
  WICK_CHECK(buf.size() >= header, ValueError, op, "'", path, "' is truncated: its header has ", ndim,
             " dims and needs ", header, " bytes, but the file has ", buf.size());

  DimVector sizes;
  // The running product must fit in int64 (a tensor's numel), even when a later dim is 0.
  int64_t numel = 1, signed_nbytes = 0;
  bool overflow = false;
  for (size_t d = 0; d < ndim; ++d) {
    uint32_t s = read_be32(buf.data() + 4 + 4 * d);
    sizes.push_back(int64_t(s));
    overflow |= __builtin_mul_overflow(numel, int64_t(s), &numel);
  }
  const size_t esize = size_t(element_size(dtype));
  overflow |= __builtin_mul_overflow(numel, int64_t(esize), &signed_nbytes);
  const size_t nbytes = size_t(signed_nbytes);
  const size_t have = buf.size() - header;
  WICK_CHECK(!overflow && nbytes <= have, ValueError, op, "'", path, "' is truncated: dims ",
             IntArrayRef(sizes), " of ", dtype, " need ",
             overflow ? std::string("more") : std::to_string(nbytes), " bytes of data, but the file has ",
             have);
  WICK_CHECK(nbytes == have, ValueError, op, "'", path, "' has ", have - nbytes,
             " bytes after the data of dims ", IntArrayRef(sizes), "; the file is corrupt");

  Tensor out = empty(sizes, dtype);
  if (numel)
    copy_big_endian(static_cast<unsigned char*>(out.data_ptr()), buf.data() + header, size_t(numel), esize);
  return out;
}

}  // namespace wick::data
