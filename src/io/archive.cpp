// LibTorch's serialize::OutputArchive and InputArchive over one .safetensors file, and the
// archive forms of Module::save/load and Optimizer::save/load (wick/serialize.h). The file's
// layout: docs/design.md, "Archives".
#include <charconv>
#include <cstring>
#include <istream>
#include <iterator>
#include <ostream>

#include "core/as_op.h"
#include "io/archive_internal.h"
#include "io/safetensors_internal.h"
#include "wick/autograd.h"
#include "wick/serialize.h"

namespace wick::serialize {

namespace {

constexpr const char* kKind = "wick.kind";
constexpr const char* kArchiveKind = "archive";
constexpr const char* kDevice = "wick.device.";
constexpr const char* kBuffer = "wick.buffer.";
constexpr const char* kNested = "wick.archive.";
constexpr const char* kValue = "wick.value.";

void check_key(const std::string& key) {
  WICK_CHECK(!key.empty() && key.find('.') == std::string::npos, ValueError, "OutputArchive.write",
             "a key must be non-empty and hold no \".\", which separates nested archives (got \"", key, "\")");
}

bool below(const std::string& path, const std::string& key) {
  return path.size() > key.size() && path.compare(0, key.size(), key) == 0 && path[key.size()] == '.';
}

// "int:3", "double:0.1" (the shortest text that reads back as the same double), "bool:true",
// "str:text".
std::string encode(const IValue& v) {
  if (v.isInt()) return "int:" + std::to_string(v.toInt());
  if (v.isBool()) return v.toBool() ? "bool:true" : "bool:false";
  if (v.isString()) return "str:" + v.toStringRef();
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), v.toDouble());
  return "double:" + std::string(buf, r.ptr);
}

IValue decode(const std::string& path, const std::string& text) {
  const auto colon = text.find(':');
  const std::string type = text.substr(0, colon);
  const std::string body = colon == std::string::npos ? "" : text.substr(colon + 1);
  auto bad = [&]() -> IValue {
    detail::raise<ValueError>("InputArchive.load_from", "the value '", path, "' is malformed (\"", text, "\")");
  };
  if (colon == std::string::npos) return bad();
  if (type == "str") return IValue(body);
  if (type == "bool") return body == "true" ? IValue(true) : body == "false" ? IValue(false) : bad();
  const char* end = body.data() + body.size();
  if (type == "int") {
    int64_t x = 0;
    auto r = std::from_chars(body.data(), end, x);
    return r.ec == std::errc() && r.ptr == end && !body.empty() ? IValue(x) : bad();
  }
  if (type == "double") {
    double x = 0;
    auto r = std::from_chars(body.data(), end, x);
    return r.ec == std::errc() && r.ptr == end && !body.empty() ? IValue(x) : bad();
  }
  return bad();
}

}  // namespace

struct InputArchive::Contents {
  std::map<std::string, Tensor> tensors;  // by dotted path, on the devices asked for
  std::set<std::string> buffers;
  std::map<std::string, IValue> values;
  std::set<std::string> archives;
  // Written by an OutputArchive: buffers and nested archives are recorded (in other files any
  // dotted prefix is a nested archive and no tensor is known to be a buffer).
  bool recorded = false;
};

// What Module's and Optimizer's archive forms need beyond the public interface.
struct ArchiveAccess {
  static std::shared_ptr<const InputArchive::Contents> build(const Checkpoint& c, std::optional<Device> device);
  static InputArchive from(const Checkpoint& c) {
    InputArchive a;
    a.contents_ = build(c, std::nullopt);
    return a;
  }
  // A tensor under a dotted path (the optimizer's "state.0.exp_avg"), each nested archive on
  // the way recorded.
  static void put(OutputArchive& a, const std::string& path, const Tensor& t) {
    a.erase(path);
    for (size_t dot = path.find('.'); dot != std::string::npos; dot = path.find('.', dot + 1))
      a.archives_.insert(path.substr(0, dot));
    a.tensors_[path] = t.detach();
  }
  static const Tensor* find(const InputArchive& a, const std::string& key) {
    if (!a.contents_) return nullptr;
    auto it = a.contents_->tensors.find(a.prefix_ + key);
    return it == a.contents_->tensors.end() ? nullptr : &it->second;
  }
  static bool is_buffer(const InputArchive& a, const std::string& key) {
    return a.contents_ && a.contents_->buffers.count(a.prefix_ + key);
  }
  static bool recorded(const InputArchive& a) { return a.contents_ && a.contents_->recorded; }
  static std::string path(const InputArchive& a, const std::string& key) { return a.prefix_ + key; }
  // The nested archive under key, whether or not the file records it (a module without tensors
  // leaves nothing in a state dict's file).
  static InputArchive child(const InputArchive& a, const std::string& key) {
    InputArchive out;
    out.contents_ = a.contents_;
    out.prefix_ = a.prefix_ + key + ".";
    return out;
  }
  // Everything below the archive's path, as a checkpoint: tensors by their path below it, and
  // string values of this level as metadata.
  static Checkpoint checkpoint(const InputArchive& a) {
    Checkpoint c;
    if (!a.contents_) return c;
    const std::string& p = a.prefix_;
    for (auto it = a.contents_->tensors.lower_bound(p); it != a.contents_->tensors.end() && it->first.starts_with(p);
         ++it)
      c.tensors.emplace(it->first.substr(p.size()), it->second);
    for (auto it = a.contents_->values.lower_bound(p); it != a.contents_->values.end() && it->first.starts_with(p);
         ++it) {
      const std::string rest = it->first.substr(p.size());
      if (rest.find('.') == std::string::npos && it->second.isString()) c.metadata.emplace(rest, it->second.toStringRef());
    }
    return c;
  }
};

// ---- OutputArchive

void OutputArchive::erase(const std::string& key) {
  auto drop = [&](auto& container) {
    for (auto it = container.lower_bound(key); it != container.end();) {
      const std::string& k = [&]() -> const std::string& {
        if constexpr (requires { it->first; }) return it->first;
        else return *it;
      }();
      if (k == key || below(k, key)) it = container.erase(it);
      else if (k.compare(0, key.size(), key) == 0) ++it;  // "key0" sorts between "key" and "key.x"
      else break;
    }
  };
  drop(tensors_);
  drop(buffers_);
  drop(values_);
  drop(archives_);
}

void OutputArchive::write(const std::string& key, const Tensor& tensor, bool is_buffer) {
  check_key(key);
  WICK_CHECK(tensor.defined(), ValueError, "OutputArchive.write", "the tensor for key \"", key, "\" is undefined");
  erase(key);
  tensors_[key] = tensor.detach();
  if (is_buffer) buffers_.insert(key);
}

void OutputArchive::write(const std::string& key, const IValue& value) {
  if (value.isTensor()) return write(key, value.toTensor());
  check_key(key);
  WICK_CHECK(!value.isNone(), ValueError, "OutputArchive.write", "the value for key \"", key,
             "\" is None; an archive holds tensors, ints, doubles, bools and strings");
  erase(key);
  values_[key] = value;
}

void OutputArchive::write(const std::string& key, OutputArchive& archive) {
  check_key(key);
  // Copies first: archive may be this one.
  auto tensors = archive.tensors_;
  auto buffers = archive.buffers_;
  auto values = archive.values_;
  auto archives = archive.archives_;
  erase(key);
  const std::string p = key + ".";
  archives_.insert(key);
  for (auto& [k, t] : tensors) tensors_[p + k] = t;
  for (auto& k : buffers) buffers_.insert(p + k);
  for (auto& [k, v] : values) values_[p + k] = v;
  for (auto& k : archives) archives_.insert(p + k);
}

namespace {

Checkpoint to_checkpoint(const std::map<std::string, Tensor>& tensors, const std::set<std::string>& buffers,
                         const std::map<std::string, IValue>& values, const std::set<std::string>& archives) {
  Checkpoint c;
  c.metadata[kKind] = kArchiveKind;
  for (const auto& [k, t] : tensors) {
    c.tensors[k] = t;
    c.metadata[kDevice + k] = t.device().str();
  }
  for (const auto& k : buffers) c.metadata[kBuffer + k] = "";
  for (const auto& k : archives) c.metadata[kNested + k] = "";
  for (const auto& [k, v] : values) c.metadata[kValue + k] = encode(v);
  return c;
}

}  // namespace

void OutputArchive::save_to(const std::string& filename) {
  const Checkpoint c = to_checkpoint(tensors_, buffers_, values_, archives_);
  detail::as_op("OutputArchive.save_to", [&] { save_checkpoint(c, filename); });
}

void OutputArchive::save_to(std::ostream& stream) {
  const Checkpoint c = to_checkpoint(tensors_, buffers_, values_, archives_);
  const std::string bytes = detail::as_op("OutputArchive.save_to", [&] { return detail::save_checkpoint_bytes(c, "<stream>"); });
  stream.write(bytes.data(), std::streamsize(bytes.size()));
  WICK_CHECK(stream.good(), ValueError, "OutputArchive.save_to", "writing ", bytes.size(), " bytes to the stream failed");
}

void OutputArchive::save_to(const std::function<size_t(const void*, size_t)>& func) {
  const Checkpoint c = to_checkpoint(tensors_, buffers_, values_, archives_);
  const std::string bytes = detail::as_op("OutputArchive.save_to", [&] { return detail::save_checkpoint_bytes(c, "<function>"); });
  const size_t n = func(bytes.data(), bytes.size());
  WICK_CHECK(n == bytes.size(), ValueError, "OutputArchive.save_to", "the writer function took ", n, " of ",
             bytes.size(), " bytes");
}

// ---- InputArchive

// The contents of a loaded file: the layout's metadata read back, each tensor onto its device.
std::shared_ptr<const InputArchive::Contents> ArchiveAccess::build(const Checkpoint& c, std::optional<Device> device) {
    auto out = std::make_shared<InputArchive::Contents>();
    auto kind = c.metadata.find(kKind);
    out->recorded = kind != c.metadata.end() && kind->second == kArchiveKind;
    for (const auto& [k, v] : c.metadata) {
      if (out->recorded) {
        if (k.starts_with(kBuffer)) out->buffers.insert(k.substr(std::strlen(kBuffer)));
        else if (k.starts_with(kNested)) out->archives.insert(k.substr(std::strlen(kNested)));
        else if (k.starts_with(kValue)) out->values[k.substr(std::strlen(kValue))] = decode(k.substr(std::strlen(kValue)), v);
      } else if (!k.starts_with("wick.")) {
        out->values[k] = IValue(v);
      }
    }
    detail::as_op("InputArchive.load_from", [&] {
      for (const auto& [k, t] : c.tensors) {
        std::optional<Device> to = device;
        if (!to) {
          auto d = c.metadata.find(kDevice + k);
          if (d != c.metadata.end()) to = Device(d->second);
        }
        out->tensors[k] = to && *to != t.device() ? t.to(*to) : t;
      }
    });
  return out;
}

void InputArchive::load_from(const std::string& filename, std::optional<Device> device) {
  const Checkpoint c = detail::as_op("InputArchive.load_from", [&] { return load_checkpoint(filename); });
  contents_ = ArchiveAccess::build(c, device);
  prefix_.clear();
}

void InputArchive::load_from(const char* data, size_t size, std::optional<Device> device) {
  const Checkpoint c = detail::as_op("InputArchive.load_from", [&] {
    return detail::load_checkpoint_bytes(std::string_view(data, size), "<memory>");
  });
  contents_ = ArchiveAccess::build(c, device);
  prefix_.clear();
}

void InputArchive::load_from(std::istream& stream, std::optional<Device> device) {
  std::string bytes((std::istreambuf_iterator<char>(stream)), std::istreambuf_iterator<char>());
  WICK_CHECK(!stream.bad(), ValueError, "InputArchive.load_from", "reading the stream failed");
  const Checkpoint c = detail::as_op("InputArchive.load_from", [&] {
    return detail::load_checkpoint_bytes(bytes, "<stream>");
  });
  contents_ = ArchiveAccess::build(c, device);
  prefix_.clear();
}

bool InputArchive::try_read(const std::string& key, Tensor& tensor, bool is_buffer) {
  const Tensor* found = ArchiveAccess::find(*this, key);
  if (!found) return false;
  const std::string path = prefix_ + key;
  if (contents_->recorded) {
    const bool buffer = contents_->buffers.count(path) > 0;
    WICK_CHECK(buffer == is_buffer, ValueError, "InputArchive.read", "the tensor '", path, "' was written as a ",
               buffer ? "buffer" : "parameter", " and is read as a ", is_buffer ? "buffer" : "parameter",
               " (is_buffer=", is_buffer ? "true" : "false", ")");
  }
  if (tensor.defined() && tensor.sizes().equals(found->sizes())) {
    NoGradGuard no_grad;
    detail::as_op("InputArchive.read", [&] { tensor.copy_(*found); });
  } else {
    tensor = *found;
  }
  return true;
}

void InputArchive::read(const std::string& key, Tensor& tensor, bool is_buffer) {
  WICK_CHECK(try_read(key, tensor, is_buffer), KeyError, "InputArchive.read", "no tensor '", prefix_ + key,
             "' in the archive");
}

bool InputArchive::try_read(const std::string& key, InputArchive& archive) {
  if (!contents_) return false;
  const std::string path = prefix_ + key;
  bool found = contents_->archives.count(path) > 0;
  if (!found && !contents_->recorded) {
    auto starts = [&](const auto& m) {
      auto it = m.lower_bound(path + ".");
      return it != m.end() && below(it->first, path);
    };
    found = starts(contents_->tensors) || starts(contents_->values);
  }
  if (!found) return false;
  archive = ArchiveAccess::child(*this, key);
  return true;
}

void InputArchive::read(const std::string& key, InputArchive& archive) {
  WICK_CHECK(try_read(key, archive), KeyError, "InputArchive.read", "no archive '", prefix_ + key,
             "' in the archive");
}

bool InputArchive::try_read(const std::string& key, IValue& value) {
  if (!contents_) return false;
  const std::string path = prefix_ + key;
  if (auto it = contents_->values.find(path); it != contents_->values.end()) {
    value = it->second;
    return true;
  }
  if (auto it = contents_->tensors.find(path); it != contents_->tensors.end()) {
    value = IValue(it->second);
    return true;
  }
  return false;
}

void InputArchive::read(const std::string& key, IValue& value) {
  WICK_CHECK(try_read(key, value), KeyError, "InputArchive.read", "no value '", prefix_ + key, "' in the archive");
}

std::vector<std::string> InputArchive::keys() {
  std::set<std::string> out;
  if (!contents_) return {};
  auto add = [&](const std::string& path) {
    if (!path.starts_with(prefix_) || path.size() == prefix_.size()) return;
    const std::string rest = path.substr(prefix_.size());
    out.insert(rest.substr(0, rest.find('.')));
  };
  for (const auto& [k, t] : contents_->tensors) add(k);
  for (const auto& [k, v] : contents_->values) add(k);
  for (const auto& k : contents_->archives) add(k);
  return {out.begin(), out.end()};
}

}  // namespace wick::serialize

namespace wick::detail {

serialize::InputArchive input_archive(const Checkpoint& checkpoint) {
  return serialize::ArchiveAccess::from(checkpoint);
}

}  // namespace wick::detail

// ---- Module and Optimizer

namespace wick::nn {

void Module::save(serialize::OutputArchive& archive) const {
  for (const auto& [n, t] : parameters_)
    if (t.defined()) archive.write(n, t, false);
  for (const auto& [n, t] : buffers_)
    if (t.defined()) archive.write(n, t, true);
  for (const auto& [n, c] : children_) {
    if (!c) continue;
    serialize::OutputArchive child;
    c->save(child);
    archive.write(n, child);
  }
}

namespace {

using serialize::ArchiveAccess;

// Every tensor the module tree would read is there, of the same shape, written as what it is
// read as: checked before anything is copied, so that a failed load changes nothing.
void check_loadable(const Module& m, const serialize::InputArchive& archive, const NamedList<Tensor>& params,
                    const NamedList<Tensor>& buffers, const NamedList<std::shared_ptr<Module>>& children,
                    const std::function<void(const Module&, const serialize::InputArchive&)>& recurse) {
  auto check = [&](const std::string& n, const Tensor& t, bool is_buffer) {
    if (!t.defined()) return;
    const std::string path = ArchiveAccess::path(archive, n);
    const Tensor* found = ArchiveAccess::find(archive, n);
    WICK_CHECK(found != nullptr, KeyError, "load", "no tensor '", path, "' in the archive (the ",
               is_buffer ? "buffer" : "parameter", " '", n, "' of ", m.name(), ")");
    WICK_CHECK(found->sizes().equals(t.sizes()), ValueError, "load", "size mismatch for ", path,
               ": copying a param with shape ", found->sizes(), " from the archive, the shape in current model is ",
               t.sizes());
    WICK_CHECK(!ArchiveAccess::recorded(archive) || ArchiveAccess::is_buffer(archive, n) == is_buffer, ValueError,
               "load", "the tensor '", path, "' was written as a ", is_buffer ? "parameter" : "buffer",
               " and is read as a ", is_buffer ? "buffer" : "parameter");
  };
  for (const auto& [n, t] : params) check(n, t, false);
  for (const auto& [n, t] : buffers) check(n, t, true);
  for (const auto& [n, c] : children)
    if (c) recurse(*c, ArchiveAccess::child(archive, n));
}

}  // namespace

void Module::load(serialize::InputArchive& archive) {
  std::function<void(const Module&, const serialize::InputArchive&)> recurse;
  recurse = [&](const Module& m, const serialize::InputArchive& a) {
    check_loadable(m, a, m.parameters_, m.buffers_, m.children_, recurse);
  };
  recurse(*this, archive);
  for (auto& [n, t] : parameters_) {
    if (!t.defined()) continue;
    Tensor handle = t;  // the same tensor: read copies into it (the shapes match)
    archive.read(n, handle, false);
  }
  for (auto& [n, t] : buffers_) {
    if (!t.defined()) continue;
    Tensor handle = t;
    archive.read(n, handle, true);
  }
  for (auto& [n, c] : children_) {
    if (!c) continue;
    serialize::InputArchive child = ArchiveAccess::child(archive, n);
    c->load(child);
  }
}

}  // namespace wick::nn

namespace wick::optim {

void Optimizer::save(serialize::OutputArchive& archive) const {
  const Checkpoint c = state_dict();
  for (const auto& [k, v] : c.metadata) archive.write(k, IValue(v));
  for (const auto& [k, t] : c.tensors) serialize::ArchiveAccess::put(archive, k, t);
}

void Optimizer::load(serialize::InputArchive& archive) {
  const Checkpoint c = serialize::ArchiveAccess::checkpoint(archive);
  WICK_CHECK(c.metadata.count("optimizer"), KeyError, "load",
             "the archive holds no optimizer state (no value 'optimizer')");
  detail::as_op("load", [&] { load_state_dict(c); });
}

}  // namespace wick::optim
