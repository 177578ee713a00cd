// safetensors from bytes in memory, for the fuzz targets and tests: the same checks as
// wick::load and wick::load_metadata, with `name` standing for the path in messages.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "wick/io/safetensors.h"

namespace wick::detail {

TensorMap load_safetensors_bytes(std::string_view bytes, const std::string& name = "<memory>");
std::map<std::string, std::string> load_safetensors_metadata_bytes(std::string_view bytes,
                                                                   const std::string& name = "<memory>");

}  // namespace wick::detail
