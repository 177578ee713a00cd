// LibTorch's torch::save / torch::load of a tensor, a list of tensors, a module or an optimizer,
// as .safetensors files with JSON metadata (wick/io/safetensors.h; no pickle). The file name is
// free: "model.pt" works as well as "model.safetensors".
//
//   wick::save(net, "net.pt");          // its state_dict(): parameters and buffers by name
//   wick::save(optimizer, "opt.pt");    // its state_dict()
//   wick::load(net, "net.pt");          // copied into net's tensors (on their devices)
//   wick::load(optimizer, "opt.pt");
//   wick::save(x, "x.pt");  wick::load(x, "x.pt");   // back on the device it was saved from
//
// The metadata key "wick.kind" says what a file holds ("tensor", "tensors", "module",
// "optimizer"); loading one kind from a file of another is a ValueError "[load] ...". A missing
// or unreadable file is a ValueError "[load] cannot open ...", a module loaded from a file whose
// tensors differ in name or shape a ValueError "[load_state_dict] ..." naming each (the tensor and
// both shapes), and an optimizer's mismatch as Optimizer::load_state_dict says. A module file may
// also be any .safetensors state dict (no kind: safetensors.torch.save_file's files load).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "wick/io/safetensors.h"
#include "wick/nn/module.h"
#include "wick/optim/optimizer.h"
#include "wick/tensor.h"

namespace wick {

void save(const Tensor& tensor, const std::string& path);
void save(const std::vector<Tensor>& tensors, const std::string& path);
void save(const nn::Module& module, const std::string& path);
void save(const optim::Optimizer& optimizer, const std::string& path);
template <class M>
void save(const nn::ModuleHolder<M>& module, const std::string& path) {
  save(static_cast<const nn::Module&>(*module), path);
}
template <class M, std::enable_if_t<std::is_base_of_v<nn::Module, M>, int> = 0>
void save(const std::shared_ptr<M>& module, const std::string& path) {
  save(static_cast<const nn::Module&>(*module), path);
}

// The saved tensor(s), each onto device, or when none is given onto the device it was saved
// from.
void load(Tensor& tensor, const std::string& path, std::optional<Device> device = std::nullopt);
void load(std::vector<Tensor>& tensors, const std::string& path, std::optional<Device> device = std::nullopt);
// The saved state copied into the module's parameters and buffers (their dtypes and devices
// stay); strict, as load_state_dict.
void load(nn::Module& module, const std::string& path);
void load(optim::Optimizer& optimizer, const std::string& path);
template <class M>
void load(const nn::ModuleHolder<M>& module, const std::string& path) {
  load(static_cast<nn::Module&>(*module), path);
}
template <class M, std::enable_if_t<std::is_base_of_v<nn::Module, M>, int> = 0>
void load(const std::shared_ptr<M>& module, const std::string& path) {
  load(static_cast<nn::Module&>(*module), path);
}

}  // namespace wick
