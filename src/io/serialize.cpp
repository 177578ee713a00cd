// save/load of a tensor, a list of tensors, a module and an optimizer (wick/serialize.h): one
// .safetensors file each, with the metadata key "wick.kind" naming what it holds.
#include "wick/serialize.h"

#include <istream>
#include <iterator>
#include <map>
#include <ostream>
#include <string>

#include "core/as_op.h"
#include "io/archive_internal.h"
#include "io/safetensors_internal.h"

namespace wick {

namespace {

constexpr const char* kKind = "wick.kind";
// Each saved tensor's device, so that load puts it back there.
std::string device_key(const std::string& name) { return "wick.device." + name; }

std::string phrase(const std::string& kind) {
  if (kind == "tensors") return "a list of tensors";
  return (kind == "optimizer" || kind == "archive" ? "an " : "a ") + kind;
}

// ValueError "[load] 'path' holds a module, not a tensor" when the file says it holds another
// kind (a file without the key passes: the tensors are checked instead).
void check_kind(const std::map<std::string, std::string>& metadata, const std::string& path,
                const char* expected) {
  auto it = metadata.find(kKind);
  if (it == metadata.end() || it->second == expected) return;
  detail::raise<ValueError>("load", "'", path, "' holds ", phrase(it->second), ", not ", phrase(expected));
}

// A checkpoint file written or read by save_checkpoint / load_checkpoint, their errors named as
// the call made (save, load).
void write(const Checkpoint& c, const std::string& path) {
  detail::as_op("save", [&] { save_checkpoint(c, path); });
}
Checkpoint read(const std::string& path) {
  return detail::as_op("load", [&] { return load_checkpoint(path); });
}

// The same, to and from a stream ("<stream>" stands for the path in messages).
void write(const Checkpoint& c, std::ostream& stream) {
  const std::string bytes = detail::as_op("save", [&] { return detail::save_checkpoint_bytes(c, "<stream>"); });
  stream.write(bytes.data(), std::streamsize(bytes.size()));
  WICK_CHECK(stream.good(), ValueError, "save", "writing ", bytes.size(), " bytes to the stream failed");
}
Checkpoint read(std::istream& stream) {
  std::string bytes((std::istreambuf_iterator<char>(stream)), std::istreambuf_iterator<char>());
  WICK_CHECK(!stream.bad(), ValueError, "load", "reading the stream failed");
  return detail::as_op("load", [&] { return detail::load_checkpoint_bytes(bytes, "<stream>"); });
}

Checkpoint tensors_file(const std::vector<Tensor>& tensors, const char* kind) {
  Checkpoint c;
  c.metadata[kKind] = kind;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const std::string name = std::to_string(i);
    WICK_CHECK(tensors[i].defined(), ValueError, "save", "tensor ", i, " is undefined");
    c.tensors[name] = tensors[i];
    c.metadata[device_key(name)] = tensors[i].device().str();
  }
  return c;
}

Tensor placed(const Tensor& t, const std::map<std::string, std::string>& metadata, const std::string& name,
              std::optional<Device> device) {
  if (device) return t.to(*device);
  auto it = metadata.find(device_key(name));
  return it == metadata.end() ? t : t.to(Device(it->second));
}

}  // namespace

namespace {

template <class Sink>
void save_tensor(const Tensor& tensor, Sink& sink) {
  WICK_CHECK(tensor.defined(), ValueError, "save", "the tensor is undefined");
  write(tensors_file({tensor}, "tensor"), sink);
}

Checkpoint module_file(const nn::Module& module) {
  Checkpoint c;
  c.metadata[kKind] = "module";
  for (const auto& [name, t] : module.state_dict()) c.tensors[name] = t;
  return c;
}

Checkpoint optimizer_file(const optim::Optimizer& optimizer) {
  Checkpoint c = optimizer.state_dict();
  c.metadata[kKind] = "optimizer";
  return c;
}

void tensor_from(Checkpoint c, Tensor& tensor, const std::string& path, std::optional<Device> device) {
  check_kind(c.metadata, path, "tensor");
  WICK_CHECK(c.tensors.size() == 1, ValueError, "load", "'", path, "' holds ", c.tensors.size(),
             " tensors, not one");
  const auto& [name, t] = *c.tensors.begin();
  tensor = placed(t, c.metadata, name, device);
}

void tensors_from(Checkpoint c, std::vector<Tensor>& tensors, const std::string& path, std::optional<Device> device) {
  check_kind(c.metadata, path, "tensors");
  std::vector<Tensor> out(c.tensors.size());
  for (size_t i = 0; i < out.size(); ++i) {
    const std::string name = std::to_string(i);
    auto it = c.tensors.find(name);
    WICK_CHECK(it != c.tensors.end(), ValueError, "load", "'", path, "' is not a list of tensors (no tensor '",
               name, "')");
    out[i] = placed(it->second, c.metadata, name, device);
  }
  tensors = std::move(out);
}

// An OutputArchive's file (a module's or an optimizer's save(archive)): loaded through an
// InputArchive, as LibTorch's torch::load does.
bool is_archive(const Checkpoint& c) {
  auto it = c.metadata.find(kKind);
  return it != c.metadata.end() && it->second == "archive";
}

void module_from(Checkpoint c, nn::Module& module, const std::string& path) {
  if (is_archive(c)) {
    serialize::InputArchive archive = detail::input_archive(c);
    return module.load(archive);
  }
  check_kind(c.metadata, path, "module");
  detail::as_op("load", [&] { module.load_state_dict(c.tensors); });
}

void optimizer_from(Checkpoint c, optim::Optimizer& optimizer, const std::string& path) {
  if (is_archive(c)) {
    serialize::InputArchive archive = detail::input_archive(c);
    return optimizer.load(archive);
  }
  check_kind(c.metadata, path, "optimizer");
  WICK_CHECK(c.metadata.count(kKind), ValueError, "load", "'", path, "' holds no optimizer state");
  c.metadata.erase(kKind);
  detail::as_op("load", [&] { optimizer.load_state_dict(c); });
}

}  // namespace

void save(const Tensor& tensor, const std::string& path) { save_tensor(tensor, path); }
void save(const std::vector<Tensor>& tensors, const std::string& path) { write(tensors_file(tensors, "tensors"), path); }
void save(const nn::Module& module, const std::string& path) { write(module_file(module), path); }
void save(const optim::Optimizer& optimizer, const std::string& path) { write(optimizer_file(optimizer), path); }

void load(Tensor& tensor, const std::string& path, std::optional<Device> device) {
  tensor_from(read(path), tensor, path, device);
}
void load(std::vector<Tensor>& tensors, const std::string& path, std::optional<Device> device) {
  tensors_from(read(path), tensors, path, device);
}
void load(nn::Module& module, const std::string& path) { module_from(read(path), module, path); }
void load(optim::Optimizer& optimizer, const std::string& path) { optimizer_from(read(path), optimizer, path); }

void save(const Tensor& tensor, std::ostream& stream) { save_tensor(tensor, stream); }
void save(const std::vector<Tensor>& tensors, std::ostream& stream) { write(tensors_file(tensors, "tensors"), stream); }
void save(const nn::Module& module, std::ostream& stream) { write(module_file(module), stream); }
void save(const optim::Optimizer& optimizer, std::ostream& stream) { write(optimizer_file(optimizer), stream); }

void load(Tensor& tensor, std::istream& stream, std::optional<Device> device) {
  tensor_from(read(stream), tensor, "<stream>", device);
}
void load(std::vector<Tensor>& tensors, std::istream& stream, std::optional<Device> device) {
  tensors_from(read(stream), tensors, "<stream>", device);
}
void load(nn::Module& module, std::istream& stream) { module_from(read(stream), module, "<stream>"); }
void load(optim::Optimizer& optimizer, std::istream& stream) { optimizer_from(read(stream), optimizer, "<stream>"); }

}  // namespace wick
