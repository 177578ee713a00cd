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
// Each save and load also takes a stream (std::ostream, std::istream) in place of the path: the
// same bytes as the file.
//
// LibTorch's archives, wick::serialize::OutputArchive and InputArchive, hold tensors, values
// and nested archives by key, in one .safetensors file (layout: docs/design.md, "Archives"):
//
//   wick::serialize::OutputArchive out;
//   net->save(out);                     // fc.weight, fc.bias ... (nested archive "fc")
//   out.write("step", wick::IValue(int64_t(10)));
//   out.save_to("net.pt");
//   wick::serialize::InputArchive in;
//   in.load_from("net.pt");
//   net->load(in);
#pragma once

#include <cstddef>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "wick/autograd_function.h"
#include "wick/io/safetensors.h"
#include "wick/nn/module.h"
#include "wick/optim/optimizer.h"
#include "wick/tensor.h"

namespace wick::serialize {

struct ArchiveAccess;

// Tensors, values (IValue: int, double, bool, string) and nested archives by key, written to a
// file or a stream with save_to. A key is non-empty and holds no "." (the separator of nested
// archives: ValueError "[OutputArchive.write] ..."); writing a key again replaces what it held.
class OutputArchive {
 public:
  OutputArchive() = default;
  OutputArchive(OutputArchive&&) = default;
  OutputArchive& operator=(OutputArchive&&) = default;
  OutputArchive(const OutputArchive&) = delete;
  OutputArchive& operator=(const OutputArchive&) = delete;

  // The tensor (detached; saved from any device, loaded back onto it), as a parameter or a
  // buffer (InputArchive::read checks which).
  void write(const std::string& key, const Tensor& tensor, bool is_buffer = false);
  // An int, double, bool or string (a tensor IValue as write(key, tensor)).
  void write(const std::string& key, const IValue& value);
  // Everything archive holds, under key (archive itself is left as it was).
  void write(const std::string& key, OutputArchive& archive);

  // One .safetensors file, written atomically (the previous file stays whole when it fails).
  void save_to(const std::string& filename);
  void save_to(std::ostream& stream);
  // The file's bytes handed to func in pieces; func returns how many it took (all, or it fails).
  void save_to(const std::function<size_t(const void*, size_t)>& func);

 private:
  friend struct ArchiveAccess;
  void erase(const std::string& key);

  std::map<std::string, Tensor> tensors_;  // by dotted path
  std::set<std::string> buffers_;          // paths of the tensors written as buffers
  std::map<std::string, IValue> values_;   // by dotted path
  std::set<std::string> archives_;         // paths of nested archives (also empty ones)
};

// An archive read from a file, a stream or bytes; read copies out of it. Reads name the key's
// full dotted path in their errors. Loading fails with ValueError "[InputArchive.load_from] ..."
// on a missing, unreadable or malformed file, and then the archive is as it was. It also reads
// the files of wick::save (a module's, an optimizer's state) and any .safetensors file (dotted
// tensor names as nested archives, metadata strings as string values).
class InputArchive {
 public:
  InputArchive() = default;

  // Every tensor onto device; without one, onto the device it was saved from.
  void load_from(const std::string& filename, std::optional<Device> device = std::nullopt);
  void load_from(std::istream& stream, std::optional<Device> device = std::nullopt);
  void load_from(const char* data, size_t size, std::optional<Device> device = std::nullopt);

  // The tensor under key: copied into tensor (no autograd record; tensor keeps its dtype and
  // device) when tensor is defined and of the same shape, else assigned to tensor. KeyError
  // "[InputArchive.read] ..." when the archive holds no tensor under key, ValueError when it was
  // written as a buffer and is read as none or the other way round.
  void read(const std::string& key, Tensor& tensor, bool is_buffer = false);
  // read, false (tensor untouched) instead of the KeyError.
  bool try_read(const std::string& key, Tensor& tensor, bool is_buffer = false);
  // The nested archive under key (KeyError when there is none).
  void read(const std::string& key, InputArchive& archive);
  bool try_read(const std::string& key, InputArchive& archive);
  // The value under key (a tensor comes back as a tensor IValue).
  void read(const std::string& key, IValue& value);
  bool try_read(const std::string& key, IValue& value);
  // The keys at this level (tensors, values, nested archives), sorted.
  std::vector<std::string> keys();

 private:
  friend struct ArchiveAccess;
  struct Contents;
  std::shared_ptr<const Contents> contents_;
  std::string prefix_;  // this archive's path in contents_, "" or ending in "."
};

}  // namespace wick::serialize

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

// The same, to and from a stream holding the file's bytes. A stream that fails (or ends early)
// is a ValueError "[save] ..." / "[load] ...".
void save(const Tensor& tensor, std::ostream& stream);
void save(const std::vector<Tensor>& tensors, std::ostream& stream);
void save(const nn::Module& module, std::ostream& stream);
void save(const optim::Optimizer& optimizer, std::ostream& stream);
void load(Tensor& tensor, std::istream& stream, std::optional<Device> device = std::nullopt);
void load(std::vector<Tensor>& tensors, std::istream& stream, std::optional<Device> device = std::nullopt);
void load(nn::Module& module, std::istream& stream);
void load(optim::Optimizer& optimizer, std::istream& stream);
template <class M>
void save(const nn::ModuleHolder<M>& module, std::ostream& stream) {
  save(static_cast<const nn::Module&>(*module), stream);
}
template <class M, std::enable_if_t<std::is_base_of_v<nn::Module, M>, int> = 0>
void save(const std::shared_ptr<M>& module, std::ostream& stream) {
  save(static_cast<const nn::Module&>(*module), stream);
}
template <class M>
void load(const nn::ModuleHolder<M>& module, std::istream& stream) {
  load(static_cast<nn::Module&>(*module), stream);
}
template <class M, std::enable_if_t<std::is_base_of_v<nn::Module, M>, int> = 0>
void load(const std::shared_ptr<M>& module, std::istream& stream) {
  load(static_cast<nn::Module&>(*module), stream);
}

}  // namespace wick
