// The safetensors format, written and read with nlohmann::json for the header.
//
// Tensors are laid out largest element size first, then by name (as the reference writer
// does), and the header is padded with spaces to a multiple of 8 bytes: every tensor's data then
// starts at an offset aligned to its element size, so a reader may map the file and use it in place.
#include "core/as_op.h"
#include "wick/io/safetensors.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/tensor_ops.h"
#include "io/atomic_file.h"
#include "io/safetensors_internal.h"
#include "wick/ops.h"

namespace wick {

namespace {

static_assert(std::endian::native == std::endian::little, "safetensors stores little-endian data");

using Json = nlohmann::json;
constexpr uint64_t kMaxHeader = uint64_t(100) << 20;  // the reference reader's limit

const char* st_dtype(Dtype t) {
  switch (t) {
    case kBool:
      return "BOOL";
    case kUInt8:
      return "U8";
    case kInt8:
      return "I8";
    case kInt16:
      return "I16";
    case kInt32:
      return "I32";
    case kInt64:
      return "I64";
    case kFloat16:
      return "F16";
    case kBFloat16:
      return "BF16";
    case kFloat32:
      return "F32";
    case kFloat64:
      return "F64";
  }
  return "?";
}

Dtype parse_dtype(const std::string& s, const std::string& path, const std::string& name) {
  for (int i = 0; i < kNumDtypes; ++i)
    if (s == st_dtype(Dtype(i))) return Dtype(i);
  detail::raise<TypeError>("load", "'", path, "': tensor '", name, "' has dtype '", s,
                           "', which wick does not support");
}

struct Entry {
  std::string name;
  Tensor data;  // contiguous, on the CPU
};

// The padded header of entries, which it sorts into the order their data is written in.
std::string header_text(std::vector<Entry>& entries, const std::string& path,
                        const std::map<std::string, std::string>& metadata) {
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    if (a.data.element_size() != b.data.element_size()) return a.data.element_size() > b.data.element_size();
    return a.name < b.name;
  });
  Json header = Json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const Entry& e : entries) {
    WICK_CHECK(!e.name.empty() && e.name != "__metadata__", ValueError, "save", "invalid tensor name '",
               e.name, "'");
    WICK_CHECK(!header.contains(e.name), ValueError, "save", "two tensors are named '", e.name, "'");
    const uint64_t n = uint64_t(e.data.nbytes());
    header[e.name] = {{"dtype", st_dtype(e.data.dtype())},
                      {"shape", e.data.sizes().vec()},
                      {"data_offsets", {offset, offset + n}}};
    offset += n;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const Json::exception&) {
    // The only way dump fails here: a name or metadata string that is not valid UTF-8.
    detail::raise<ValueError>("save", "a tensor name or metadata string is not valid UTF-8; '", path,
                              "' was not written");
  }
  text.append((8 - (8 + text.size()) % 8) % 8, ' ');
  return text;
}

void write_file(std::vector<Entry> entries, const std::string& path,
                const std::map<std::string, std::string>& metadata) {
  const std::string text = header_text(entries, path, metadata);
  // Through a temporary file that is synced and renamed over path: a crash or a failed write
  // leaves the previous file whole.
  detail::AtomicFile out(path, "save");
  const uint64_t n = text.size();
  out.write(&n, 8);
  out.write(text.data(), text.size());
  for (const Entry& e : entries)
    if (e.data.nbytes()) out.write(e.data.data_ptr(), e.data.nbytes());
  out.commit();
}

Entry host_entry(const std::string& name, const Tensor& t) {
  WICK_CHECK(t.defined(), ValueError, "save", "tensor '", name, "' is undefined");
  return {name, t.cpu().contiguous()};
}

// The parsed header and where the data starts.
struct Header {
  Json json;
  uint64_t data_start = 0;
  uint64_t data_size = 0;
};

// Rejects a second tensor of the same name: JSON parsers keep the last silently, the
// reference reader refuses the file.
Json parse_header(const std::string& text, const std::string& path) {
  std::set<std::string> names;
  std::string duplicate;
  auto track = [&](int depth, Json::parse_event_t event, Json& parsed) {
    if (depth == 1 && event == Json::parse_event_t::key && duplicate.empty()) {
      const std::string& key = parsed.get_ref<const std::string&>();
      if (!names.insert(key).second) duplicate = key;
    }
    return true;
  };
  Json json;
  try {
    json = Json::parse(text, track);
  } catch (const Json::exception& e) {
    detail::raise<ValueError>("load", "'", path, "': the header is not valid JSON (", e.what(), ")");
  }
  WICK_CHECK(duplicate.empty(), ValueError, "load", "'", path, "': the header names '", duplicate, "' twice");
  return json;
}

// The bytes of a safetensors file: a read-only private mapping of the file (load), or bytes the
// caller owns for the duration of the call (load_safetensors_bytes). `keep` holds the mapping.
struct Bytes {
  const char* data = nullptr;
  uint64_t size = 0;
  std::shared_ptr<const void> keep;  // null: the bytes outlive nothing, tensors are copied out
};

// Maps the whole file (PROT_READ|PROT_WRITE, MAP_PRIVATE: a tensor written to later gets its own
// copy of the page, the file never changes). Only regular files.
Bytes map_file(const std::string& path, const char* op) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  WICK_CHECK(fd >= 0, ValueError, op, "cannot open '", path, "': ", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    detail::raise<ValueError>(op, "cannot read '", path, "' (is it a regular file?)");
  }
  Bytes b;
  b.size = uint64_t(st.st_size);
  if (b.size > 0) {
    void* p = ::mmap(nullptr, size_t(b.size), PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    const int err = errno;
    ::close(fd);
    WICK_CHECK(p != MAP_FAILED, ValueError, op, "cannot map '", path, "': ", std::strerror(err));
    const size_t len = size_t(b.size);
    b.data = static_cast<const char*>(p);
    b.keep = std::shared_ptr<const void>(p, [len](const void* q) { ::munmap(const_cast<void*>(q), len); });
  } else {
    ::close(fd);
  }
  return b;
}

Header read_header(const Bytes& in, const std::string& path) {
  const uint64_t file_size = in.size;
  uint64_t n = 0;
  WICK_CHECK(file_size >= 8, ValueError, "load", "'", path, "' is not a safetensors file: ", file_size,
             " bytes, too short for the header length");
  std::memcpy(&n, in.data, 8);
  WICK_CHECK(n <= kMaxHeader && n <= file_size - 8, ValueError, "load", "'", path,
             "' is not a safetensors file or is truncated: the header length ", n, " is beyond ",
             n > kMaxHeader ? "the 100 MiB limit" : "the end of the file");
  std::string text(in.data + 8, size_t(n));
  Header h;
  h.json = parse_header(text, path);
  WICK_CHECK(h.json.is_object(), ValueError, "load", "'", path, "': the header is not a JSON object");
  h.data_start = 8 + n;
  h.data_size = file_size - h.data_start;
  return h;
}

// A CPU tensor over a tensor's bytes inside the mapping, which it keeps alive while it lives.
Tensor mapped_tensor(const Bytes& in, const char* data, const std::vector<int64_t>& shape, Dtype dtype,
                     uint64_t nbytes) {
  auto* keep = new std::shared_ptr<const void>(in.keep);
  detail::DataPtr ptr(
      const_cast<char*>(data), keep, [](void* ctx) { delete static_cast<std::shared_ptr<const void>*>(ctx); },
      Device(kCPU));
  auto storage = detail::Storage::make(std::move(ptr), size_t(nbytes), nullptr);
  return detail::make_tensor(std::move(storage), dtype, shape, detail::contiguous_strides(shape), 0);
}

// A JSON array of non-negative integers (no floats, no negative numbers, no strings), each at most max.
std::vector<uint64_t> uint_array(const Json& j, const char* field, const std::string& path,
                                 const std::string& name, uint64_t max) {
  WICK_CHECK(j.is_array(), ValueError, "load", "'", path, "': tensor '", name, "': ", field,
             " is not an array");
  std::vector<uint64_t> out;
  for (const Json& v : j) {
    WICK_CHECK(v.is_number_integer() && (v.is_number_unsigned() || v.get<int64_t>() >= 0), ValueError, "load",
               "'", path, "': tensor '", name, "': ", field, " holds ", v.dump(),
               ", not a non-negative integer");
    const uint64_t x = v.get<uint64_t>();
    WICK_CHECK(x <= max, ValueError, "load", "'", path, "': tensor '", name, "': ", field, " holds ", x,
               ", which is too large");
    out.push_back(x);
  }
  return out;
}

TensorMap load_bytes(const Bytes& in, const std::string& path, Device device) {
  Header h = read_header(in, path);

  struct Span {
    uint64_t begin, end;
    std::string name;
  };
  std::vector<Span> spans;
  // Every entry is checked and read before any is moved to the device.
  std::vector<std::pair<std::string, Tensor>> read;
  for (const auto& [name, info] : h.json.items()) {
    if (name == "__metadata__") {
      // The format's metadata maps strings to strings; the reference reader refuses a file
      // whose metadata does not.
      bool ok = info.is_object();
      if (ok)
        for (const auto& [k, v] : info.items()) ok = ok && v.is_string();
      WICK_CHECK(ok, ValueError, "load", "'", path, "': __metadata__ must map strings to strings");
      continue;
    }
    try {
      WICK_CHECK(info.is_object(), ValueError, "load", "'", path, "': tensor '", name,
                 "' is not a JSON object with dtype, shape and data_offsets");
      WICK_CHECK(info.contains("dtype") && info.at("dtype").is_string(), ValueError, "load", "'", path,
                 "': tensor '", name, "' has no dtype string");
      const Dtype dtype = parse_dtype(info.at("dtype").get<std::string>(), path, name);
      WICK_CHECK(info.contains("shape"), ValueError, "load", "'", path, "': tensor '", name,
                 "' has no shape");
      WICK_CHECK(info.contains("data_offsets"), ValueError, "load", "'", path, "': tensor '", name,
                 "' has no data_offsets");
      const auto dims = uint_array(info.at("shape"), "shape", path, name, uint64_t(INT64_MAX));
      const auto offsets = uint_array(info.at("data_offsets"), "data_offsets", path, name, UINT64_MAX);
      WICK_CHECK(offsets.size() == 2 && offsets[0] <= offsets[1] && offsets[1] <= h.data_size, ValueError,
                 "load", "'", path, "': tensor '", name, "' has data_offsets outside the ", h.data_size,
                 " bytes of data (two increasing offsets are expected)");
      std::vector<int64_t> shape(dims.begin(), dims.end());
      // The byte count is computed with overflow checks: a shape whose product wraps around
      // could otherwise match the offsets.
      uint64_t nbytes = uint64_t(element_size(dtype));
      bool overflow = false;
      for (uint64_t d : dims) overflow |= __builtin_mul_overflow(nbytes, d, &nbytes);
      overflow |= nbytes > uint64_t(INT64_MAX);
      WICK_CHECK(!overflow && nbytes == offsets[1] - offsets[0], ValueError, "load", "'", path, "': tensor '",
                 name, "' of shape ", IntArrayRef(shape), " and dtype ", dtype, " needs ",
                 overflow ? std::string("more than 2^63") : std::to_string(nbytes),
                 " bytes, but its data_offsets give ", offsets[1] - offsets[0]);
      // CPU tensors are copied out of the mapping into memory of their own (the file may be
      // rewritten or truncated later: a view of it would change or fault). For a GPU, an
      // aligned tensor is a view of the mapping until its copy to the device below
      // (docs/design.md, "Saving and loading").
      const char* src = in.data + h.data_start + offsets[0];
      const bool aligned = reinterpret_cast<uintptr_t>(src) % uintptr_t(element_size(dtype)) == 0;
      Tensor t;
      if (in.keep && aligned && nbytes && !device.is_cpu()) {
        t = mapped_tensor(in, src, shape, dtype, nbytes);
      } else {
        t = empty(shape, dtype);
        if (nbytes) std::memcpy(t.data_ptr(), src, size_t(nbytes));
      }
      spans.push_back({offsets[0], offsets[1], name});
      read.emplace_back(name, std::move(t));
    } catch (const Json::exception& e) {
      detail::raise<ValueError>("load", "'", path, "': tensor '", name, "' has a malformed entry (", e.what(),
                                ")");
    }
  }
  // The reference reader rejects holes and overlaps: the tensors must tile the data exactly.
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t at = 0;
  for (const Span& s : spans) {
    WICK_CHECK(
        s.begin == at, ValueError, "load", "'", path, "': the data of tensor '", s.name,
        s.begin < at ? "' overlaps the previous tensor's" : "' does not start where the previous tensor ends",
        " (offset ", s.begin, ", expected ", at, ")");
    at = s.end;
  }
  WICK_CHECK(at == h.data_size, ValueError, "load", "'", path, "' has ", h.data_size - at,
             " bytes after the last tensor's data");
  TensorMap out;
  for (auto& [name, t] : read) {
    const Tensor& host = t;
    out.emplace(name, device.is_cpu() ? host : wick::detail::as_op("load", [&] { return host.to(device); }));
  }
  return out;
}

std::map<std::string, std::string> metadata_bytes(const Bytes& in, const std::string& path) {
  Header h = read_header(in, path);
  std::map<std::string, std::string> meta;
  if (!h.json.contains("__metadata__")) return meta;
  try {
    meta = h.json["__metadata__"].get<std::map<std::string, std::string>>();
  } catch (const Json::exception& e) {
    detail::raise<ValueError>("load", "'", path, "': __metadata__ must map strings to strings (", e.what(),
                              ")");
  }
  return meta;
}

}  // namespace

void save(const TensorMap& tensors, const std::string& path,
          const std::map<std::string, std::string>& metadata) {
  std::vector<Entry> entries;
  for (const auto& [name, t] : tensors) entries.push_back(host_entry(name, t));
  write_file(std::move(entries), path, metadata);
}

void save(const std::vector<std::pair<std::string, Tensor>>& tensors, const std::string& path,
          const std::map<std::string, std::string>& metadata) {
  std::vector<Entry> entries;
  for (const auto& [name, t] : tensors) entries.push_back(host_entry(name, t));
  write_file(std::move(entries), path, metadata);
}

TensorMap load(const std::string& path, Device device) {
  return load_bytes(map_file(path, "load"), path, device);
}

std::map<std::string, std::string> load_metadata(const std::string& path) {
  return wick::detail::as_op("load_metadata", [&]() -> std::map<std::string, std::string> {
    return metadata_bytes(map_file(path, "load_metadata"), path);
  });
}

void Checkpoint::put(const std::string& prefix, const Checkpoint& part) {
  for (const auto& [name, t] : part.tensors)
    WICK_CHECK(!tensors.count(prefix + name), ValueError, "Checkpoint.put", "the checkpoint already holds a tensor '",
               prefix, name, "'");
  for (const auto& [key, v] : part.metadata)
    WICK_CHECK(!metadata.count(prefix + key), ValueError, "Checkpoint.put",
               "the checkpoint already holds a metadata key '", prefix, key, "'");
  for (const auto& [name, t] : part.tensors) tensors.emplace(prefix + name, t);
  for (const auto& [key, v] : part.metadata) metadata.emplace(prefix + key, v);
}

void Checkpoint::put(const std::string& prefix, const TensorMap& part) { put(prefix, Checkpoint{part, {}}); }

void Checkpoint::put(const std::string& prefix, const std::vector<std::pair<std::string, Tensor>>& part) {
  Checkpoint c;
  for (const auto& [name, t] : part)
    WICK_CHECK(c.tensors.emplace(name, t).second, ValueError, "Checkpoint.put", "two tensors are named '", name,
               "'");
  put(prefix, c);
}

Checkpoint Checkpoint::part(const std::string& prefix) const {
  Checkpoint out;
  for (auto it = tensors.lower_bound(prefix); it != tensors.end() && it->first.starts_with(prefix); ++it)
    out.tensors.emplace(it->first.substr(prefix.size()), it->second);
  for (auto it = metadata.lower_bound(prefix); it != metadata.end() && it->first.starts_with(prefix); ++it)
    out.metadata.emplace(it->first.substr(prefix.size()), it->second);
  return out;
}

void save_checkpoint(const Checkpoint& checkpoint, const std::string& path) {
  // Errors of the shared writer name save_checkpoint, the call made.
  detail::as_op("save_checkpoint", [&] {
    std::vector<Entry> entries;
    for (const auto& [name, t] : checkpoint.tensors) entries.push_back(host_entry(name, t));
    write_file(std::move(entries), path, checkpoint.metadata);
  });
}

Checkpoint load_checkpoint(const std::string& path, Device device) {
  // One mapping serves both reads, so the tensors and the metadata come from the same file.
  // Errors of the shared reader name load_checkpoint, the call made.
  return detail::as_op("load_checkpoint", [&] {
    const Bytes bytes = map_file(path, "load_checkpoint");
    Checkpoint c;
    c.tensors = load_bytes(bytes, path, device);
    c.metadata = metadata_bytes(bytes, path);
    return c;
  });
}

namespace detail {

TensorMap load_safetensors_bytes(std::string_view bytes, const std::string& name) {
  return load_bytes(Bytes{bytes.data(), bytes.size(), nullptr}, name, Device(kCPU));
}

std::map<std::string, std::string> load_safetensors_metadata_bytes(std::string_view bytes,
                                                                   const std::string& name) {
  return metadata_bytes(Bytes{bytes.data(), bytes.size(), nullptr}, name);
}

std::string save_checkpoint_bytes(const Checkpoint& checkpoint, const std::string& name) {
  std::vector<Entry> entries;
  for (const auto& [n, t] : checkpoint.tensors) entries.push_back(host_entry(n, t));
  const std::string text = header_text(entries, name, checkpoint.metadata);
  const uint64_t n = text.size();
  std::string out(reinterpret_cast<const char*>(&n), 8);
  out += text;
  for (const Entry& e : entries)
    if (e.data.nbytes()) out.append(static_cast<const char*>(e.data.data_ptr()), size_t(e.data.nbytes()));
  return out;
}

Checkpoint load_checkpoint_bytes(std::string_view bytes, const std::string& name, Device device) {
  const Bytes in{bytes.data(), bytes.size(), nullptr};
  Checkpoint c;
  c.tensors = load_bytes(in, name, device);
  c.metadata = metadata_bytes(in, name);
  return c;
}

}  // namespace detail

}  // namespace wick
