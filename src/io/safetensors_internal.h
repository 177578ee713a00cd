// safetensors from and to bytes in memory, for streams, the fuzz targets and tests: the same
// checks as wick::load and wick::load_metadata, with `name` standing for the path in messages.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "wick/io/safetensors.h"

namespace wick::detail {

TensorMap load_safetensors_bytes(std::string_view bytes, const std::string& name = "<memory>");
std::map<std::string, std::string> load_safetensors_metadata_bytes(std::string_view bytes,
                                                                   const std::string& name = "<memory>");
// A checkpoint as the bytes of a .safetensors file, and back (errors name the op "save" / "load"
// and `name` for the path).
std::string save_checkpoint_bytes(const Checkpoint& checkpoint, const std::string& name = "<memory>");
Checkpoint load_checkpoint_bytes(std::string_view bytes, const std::string& name = "<memory>",
                                 Device device = Device(kCPU));

}  // namespace wick::detail
