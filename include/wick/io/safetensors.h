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
// written beside path, synced, and renamed over it, so a crash or a failed write never leaves
// half a checkpoint: path holds the previous file or the new one.
void save(const TensorMap& tensors, const std::string& path,
          const std::map<std::string, std::string>& metadata = {});
void save(const std::vector<std::pair<std::string, Tensor>>& tensors, const std::string& path,
          const std::map<std::string, std::string>& metadata = {});

// Reads every tensor of a .safetensors file onto device. A malformed file (bad header length,
// invalid JSON, unknown dtype, offsets outside the data or with holes) throws ValueError.
TensorMap load(const std::string& path, Device device = Device(kCPU));
// The file's "__metadata__" strings (empty when it has none).
std::map<std::string, std::string> load_metadata(const std::string& path);

// Tensors and string metadata that make one .safetensors file: a model's, an optimizer's and a
// scheduler's state together, each under its own prefix.
//
//   wick::Checkpoint ckpt;
//   ckpt.put("model.", net->state_dict());       // model.fc.weight, ...
//   ckpt.put("optim.", opt.state_dict());        // optim.state.0.exp_avg, metadata optim.param_groups
//   ckpt.put("sched.", sched.state_dict());
//   wick::save_checkpoint(ckpt, "ckpt/last.safetensors");
//   auto back = wick::load_checkpoint("ckpt/last.safetensors");
//   net->load_state_dict(back.part("model.").tensors);
//   opt.load_state_dict(back.part("optim."));
struct Checkpoint {
  TensorMap tensors;
  std::map<std::string, std::string> metadata;

  // Adds part's tensors and metadata with prefix before each name and key. ValueError
  // "[Checkpoint.put] ..." for a name or key already present (nothing is added then).
  void put(const std::string& prefix, const Checkpoint& part);
  void put(const std::string& prefix, const TensorMap& tensors);
  void put(const std::string& prefix, const std::vector<std::pair<std::string, Tensor>>& tensors);
  // The tensors and metadata whose names start with prefix, without it.
  Checkpoint part(const std::string& prefix) const;
};

// save(tensors, path, metadata) of a Checkpoint: through a synced temporary file renamed over
// path, so a failed or interrupted save leaves the previous file as it was.
void save_checkpoint(const Checkpoint& checkpoint, const std::string& path);
// The tensors (onto device) and metadata of a .safetensors file.
Checkpoint load_checkpoint(const std::string& path, Device device = Device(kCPU));

}  // namespace wick
