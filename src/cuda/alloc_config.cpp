#include "cuda/alloc_config.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "wick/error.h"

namespace wick::detail::gpu {

namespace {

constexpr const char* kOp = "WICK_CUDA_ALLOC_CONF";

double parse_number(std::string_view key, std::string_view value) {
  std::string s(value);
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size())
    raise<ValueError>(kOp, "expected a number for '", key, "', got '", value, "'");
  return v;
}

AllocConfig parse() {
  AllocConfig c;
  if (const char* v = std::getenv("WICK_NO_CUDA_MEMORY_CACHING"); v && std::strcmp(v, "1") == 0)
    c.caching = false;
  const char* env = std::getenv("WICK_CUDA_ALLOC_CONF");
  if (!env) return c;
  std::string_view rest(env);
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (item.empty()) continue;
    size_t colon = item.find(':');
    if (colon == std::string_view::npos) raise<ValueError>(kOp, "expected key:value, got '", item, "'");
    std::string_view key = item.substr(0, colon), value = item.substr(colon + 1);
    if (key == "max_split_size_mb") {
      double mb = parse_number(key, value);
      // Smaller than a large-pool segment would leave nothing to split.
      if (mb <= 20) raise<ValueError>(kOp, "max_split_size_mb must be greater than 20, got ", value);
      c.max_split_size = size_t(mb) * 1024 * 1024;
    } else if (key == "garbage_collection_threshold") {
      double t = parse_number(key, value);
      if (!(t > 0 && t < 1))
        raise<ValueError>(kOp, "garbage_collection_threshold must be in (0, 1), got ", value);
      c.garbage_collection_threshold = t;
    } else if (key == "expandable_segments") {
      if (value == "True" || value == "true" || value == "1") c.expandable_segments = true;
      else if (value == "False" || value == "false" || value == "0") c.expandable_segments = false;
      else raise<ValueError>(kOp, "expandable_segments must be True or False, got '", value, "'");
    } else {
      raise<ValueError>(
          kOp, "unknown key '", key,
          "' (wick knows max_split_size_mb, garbage_collection_threshold, expandable_segments)");
    }
  }
  return c;
}

}  // namespace

const AllocConfig& alloc_config() {
  static const AllocConfig c = parse();
  return c;
}

}  // namespace wick::detail::gpu
