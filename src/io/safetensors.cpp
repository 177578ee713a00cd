// The safetensors format, written and read with nlohmann::json for the header.
//
// Tensors are laid out largest element size first, then by name (as the reference writer
// does), and the header is padded with spaces to a multiple of 8 bytes: every tensor's data then
// starts at an offset aligned to its element size, so a reader may map the file and use it in place.
#include "wick/io/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

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

void write_file(std::vector<Entry> entries, const std::string& path,
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
  std::string text = header.dump();
  text.append((8 - (8 + text.size()) % 8) % 8, ' ');

  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    WICK_CHECK(out.good(), ValueError, "save", "cannot open '", tmp, "' for writing");
    const uint64_t n = text.size();
    out.write(reinterpret_cast<const char*>(&n), 8);
    out.write(text.data(), std::streamsize(text.size()));
    for (const Entry& e : entries)
      if (e.data.nbytes()) out.write(static_cast<const char*>(e.data.data_ptr()), e.data.nbytes());
    out.flush();
    WICK_CHECK(out.good(), ValueError, "save", "writing '", tmp, "' failed (disk full?)");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    detail::raise<ValueError>("save", "cannot rename '", tmp, "' to '", path, "'");
  }
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

Header read_header(std::ifstream& in, const std::string& path) {
  WICK_CHECK(in.good(), ValueError, "load", "cannot open '", path, "'");
  in.seekg(0, std::ios::end);
  const auto file_size = uint64_t(in.tellg());
  in.seekg(0);
  uint64_t n = 0;
  WICK_CHECK(file_size >= 8, ValueError, "load", "'", path, "' is not a safetensors file: ", file_size,
             " bytes, too short for the header length");
  in.read(reinterpret_cast<char*>(&n), 8);
  WICK_CHECK(n <= kMaxHeader && n <= file_size - 8, ValueError, "load", "'", path,
             "' is not a safetensors file or is truncated: the header length ", n, " is beyond ",
             n > kMaxHeader ? "the 100 MiB limit" : "the end of the file");
  std::string text(n, '\0');
  in.read(text.data(), std::streamsize(n));
  Header h;
  try {
    h.json = Json::parse(text);
  } catch (const Json::exception& e) {
    detail::raise<ValueError>("load", "'", path, "': the header is not valid JSON (", e.what(), ")");
  }
  WICK_CHECK(h.json.is_object(), ValueError, "load", "'", path, "': the header is not a JSON object");
  h.data_start = 8 + n;
  h.data_size = file_size - h.data_start;
  return h;
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
  std::ifstream in(path, std::ios::binary);
  Header h = read_header(in, path);

  struct Span {
    uint64_t begin, end;
    std::string name;
  };
  std::vector<Span> spans;
  TensorMap out;
  for (const auto& [name, info] : h.json.items()) {
    if (name == "__metadata__") continue;
    try {
      const Dtype dtype = parse_dtype(info.at("dtype").get<std::string>(), path, name);
      const auto shape = info.at("shape").get<std::vector<int64_t>>();
      const auto offsets = info.at("data_offsets").get<std::vector<uint64_t>>();
      WICK_CHECK(offsets.size() == 2 && offsets[0] <= offsets[1] && offsets[1] <= h.data_size, ValueError,
                 "load", "'", path, "': tensor '", name, "' has data_offsets outside the ", h.data_size,
                 " bytes of data");
      uint64_t numel = 1;
      for (int64_t s : shape) {
        WICK_CHECK(s >= 0, ValueError, "load", "'", path, "': tensor '", name, "' has a negative size");
        numel *= uint64_t(s);
      }
      WICK_CHECK(numel * uint64_t(element_size(dtype)) == offsets[1] - offsets[0], ValueError, "load", "'",
                 path, "': tensor '", name, "' of shape ", IntArrayRef(shape), " and dtype ", dtype,
                 " needs ", numel * uint64_t(element_size(dtype)), " bytes, but its data_offsets give ",
                 offsets[1] - offsets[0]);
      Tensor t = empty(shape, dtype);
      in.seekg(std::streamoff(h.data_start + offsets[0]));
      in.read(static_cast<char*>(t.data_ptr()), std::streamsize(offsets[1] - offsets[0]));
      WICK_CHECK(in.good(), ValueError, "load", "'", path, "': reading tensor '", name, "' failed");
      spans.push_back({offsets[0], offsets[1], name});
      out.emplace(name, device.is_cpu() ? t : t.to(device));
    } catch (const Json::exception& e) {
      detail::raise<ValueError>("load", "'", path, "': tensor '", name, "' has a malformed entry (", e.what(),
                                ")");
    }
  }
  // The reference reader rejects holes and overlaps: the tensors must tile the data exactly.
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
  uint64_t at = 0;
  for (const Span& s : spans) {
    WICK_CHECK(s.begin == at, ValueError, "load", "'", path, "': the data of tensor '", s.name,
               "' does not start where the previous tensor ends (offset ", s.begin, ", expected ", at, ")");
    at = s.end;
  }
  WICK_CHECK(at == h.data_size, ValueError, "load", "'", path, "' has ", h.data_size - at,
             " bytes after the last tensor's data");
  return out;
}

std::map<std::string, std::string> load_metadata(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
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

}  // namespace wick
