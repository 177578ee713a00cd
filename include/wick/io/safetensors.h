// Tensors by name in .safetensors files, the format PyTorch reads with safetensors.torch.load_file.
//
//   wick::save(net->state_dict(), "model.safetensors");
//   auto state = wick::load("model.safetensors");          // CPU tensors by name
//   net->load_state_dict(state);
//   auto on_gpu = wick::load("model.safetensors", "cuda");  // or straight onto a device
//
// The file: an 8-byte little-endian header length N, N bytes of JSON
// ({"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...,
// "__metadata__": {"key": "value"}}), then the tensors' bytes, little-endian, row-major.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "wick/tensor.h"

namespace wick {

using TensorMap = std::map<std::string, Tensor>;

// Writes the tensors (from any device, any layout) and optional string metadata. The file is
// written beside path and renamed over it, so a crash never leaves half a checkpoint.
void save(const TensorMap& tensors, const std::string& path,
          const std::map<std::string, std::string>& metadata = {});
void save(const std::vector<std::pair<std::string, Tensor>>& tensors, const std::string& path,
          const std::map<std::string, std::string>& metadata = {});

// Reads every tensor of a .safetensors file onto device. A malformed file (bad header length,
// invalid JSON, unknown dtype, offsets outside the data or with holes) throws ValueError.
TensorMap load(const std::string& path, Device device = Device(kCPU));
// The file's "__metadata__" strings (empty when it has none).
std::map<std::string, std::string> load_metadata(const std::string& path);

}  // namespace wick
