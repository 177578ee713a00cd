// nn::Module: registration, traversal, in-place moves, modes, state dicts and printing.
#include "wick/nn/module.h"

#include <cstdlib>
#include <optional>
#include <ostream>
#include <set>
#include <sstream>

#include <cxxabi.h>

#include "autograd/meta.h"
#include "core/generator.h"
#include "wick/autograd.h"
#include "wick/ops.h"

namespace wick::nn {

namespace {

// "wick::nn::LinearImpl" -> "Linear"; "FooNetImpl" -> "FooNet".
std::string class_name(const char* mangled) {
  int status = 0;
  char* d = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string s = status == 0 && d ? d : mangled;
  std::free(d);
  if (auto lt = s.find('<'); lt != std::string::npos) s = s.substr(0, lt);
  if (auto colon = s.rfind("::"); colon != std::string::npos) s = s.substr(colon + 2);
  if (s.size() > 4 && s.compare(s.size() - 4, 4, "Impl") == 0) s.resize(s.size() - 4);
  return s;
}

// Gives t the storage, geometry and dtype of moved: every handle to t's TensorImpl sees it.
void swap_in(const Tensor& t, const Tensor& moved) {
  if (moved.impl()->storage() == t.impl()->storage() && moved.dtype() == t.dtype()) return;
  t.impl()->set_storage(moved.impl()->storage());
  t.impl()->set_dtype(moved.dtype());
  t.impl()->set_geometry(DimVector(moved.sizes()), DimVector(moved.strides()), moved.storage_offset());
}

void move_tensor(const Tensor& t, std::optional<Device> device, std::optional<Dtype> dtype,
                 bool non_blocking) {
  if (!t.defined()) return;
  NoGradGuard no_grad;
  const Dtype dt = dtype && t.is_floating_point() ? *dtype : t.dtype();
  const Device dev = device ? *device : t.device();
  swap_in(t, t.detach().to(dev, dt, non_blocking));
  if (auto* m = autograd::meta(t)) {
    m->grad_accumulator.reset();  // a live graph's accumulator keeps the old metadata
    if (m->grad.defined()) swap_in(m->grad, m->grad.detach().to(dev, dt, non_blocking));
  }
}

std::string add_indent(const std::string& s, int n) {
  std::string out;
  for (char c : s) {
    out += c;
    if (c == '\n') out += std::string(size_t(n), ' ');
  }
  return out;
}

}  // namespace

namespace detail {
// Named by the module's class, the op the user called (a call or a member of nn::Linear(nullptr)),
// and a TypeError as PyTorch's call of a child set to None ('NoneType' object is not callable).
void throw_empty_holder(const std::string& type) {
  const std::string name = class_name(type.c_str());
  wick::detail::raise<TypeError>(name.c_str(), "the module is None: accessing an empty ModuleHolder of ", name,
                                 "Impl; construct it or assign a module first");
}
}  // namespace detail

Module::Module(std::string name) : name_(std::move(name)) {}

const std::string& Module::name() const {
  if (name_.empty()) name_ = class_name(typeid(*this).name());
  return name_;
}

void Module::check_new_name(const std::string& name, const char* what) const {
  WICK_CHECK(!name.empty() && name.find('.') == std::string::npos, ValueError, what,
             "name must be non-empty and contain no \".\" (got \"", name, "\")");
  auto taken = [&](const auto& list) {
    for (const auto& [n, v] : list)
      if (n == name) return true;
    return false;
  };
  WICK_CHECK(!taken(parameters_) && !taken(buffers_) && !taken(children_), ValueError, what, "attribute '",
             name, "' already exists in ", this->name());
}

Tensor& Module::register_parameter(std::string name, Tensor tensor, bool requires_grad) {
  check_new_name(name, "register_parameter");
  if (tensor.defined()) {
    WICK_CHECK(tensor.is_leaf(), ValueError, "register_parameter", "cannot assign '", name,
               "' as a parameter: it is not a leaf (detach it first)");
    WICK_CHECK(!requires_grad || is_floating_point(tensor.dtype()), TypeError, "register_parameter",
               "only Tensors of floating point dtype can require gradients (got ", tensor.dtype(), ")");
    tensor.requires_grad_(requires_grad);
  }
  parameters_.emplace_back(std::move(name), std::move(tensor));
  return parameters_.back().second;
}

Tensor& Module::register_buffer(std::string name, Tensor tensor) {
  check_new_name(name, "register_buffer");
  buffers_.emplace_back(std::move(name), std::move(tensor));
  return buffers_.back().second;
}

void Module::check_not_below(const Module* module, const std::string& name, const char* op) const {
  if (module == nullptr) return;
  // Depth first over module's tree (each module once: shared submodules are common).
  std::set<const Module*> seen;
  std::vector<const Module*> todo{module};
  while (!todo.empty()) {
    const Module* m = todo.back();
    todo.pop_back();
    WICK_CHECK(m != this, ValueError, op, "cannot register ", module->name(), " as '", name, "' of ",
               this->name(), ": ", module == this ? "it is that module itself" : "that module lies below it",
               ", and a module cannot be its own descendant");
    if (!seen.insert(m).second) continue;
    for (const auto& [n, c] : m->children_)
      if (c) todo.push_back(c.get());
  }
}

void Module::add_child(std::string name, std::shared_ptr<Module> module) {
  check_new_name(name, "register_module");
  check_not_below(module.get(), name, "register_module");
  children_.emplace_back(std::move(name), std::move(module));
}

Tensor& Module::replace_parameter(const std::string& name, Tensor tensor) {
  for (auto& [n, t] : parameters_) {
    if (n != name) continue;
    WICK_CHECK(!tensor.defined() || tensor.is_leaf(), ValueError, "replace_parameter", "cannot assign '", name,
               "' as a parameter: it is not a leaf (detach it first)");
    t = std::move(tensor);
    return t;
  }
  wick::detail::raise<ValueError>("replace_parameter", "no parameter named '", name, "' in ", this->name());
}

void Module::replace_module(const std::string& name, std::shared_ptr<Module> module) {
  for (size_t i = 0; i < children_.size(); ++i) {
    if (children_[i].first == name) {
      check_not_below(module.get(), name, "replace_module");
      replacing_child(i, module);
      children_[i].second = std::move(module);
      return;
    }
  }
  wick::detail::raise<ValueError>("replace_module", "no submodule named '", name, "' in ", this->name());
}

// ---- traversal

namespace {
// A module not owned by a shared_ptr (made on the stack) still gets a non-owning one.
std::shared_ptr<Module> self_ptr(Module* m) {
  if (auto p = m->weak_from_this().lock()) return p;
  return std::shared_ptr<Module>(std::shared_ptr<Module>(), m);
}
}  // namespace

NamedList<std::shared_ptr<Module>> Module::named_modules(bool include_self) {
  NamedList<std::shared_ptr<Module>> out;
  std::set<const Module*> seen;  // a module registered twice is listed once, as PyTorch does
  auto visit = [&](auto&& self, const std::string& prefix, const std::shared_ptr<Module>& m) -> void {
    if (!seen.insert(m.get()).second) return;
    out.emplace_back(prefix, m);
    for (const auto& [n, c] : m->children_)
      if (c) self(self, prefix.empty() ? n : prefix + "." + n, c);
  };
  visit(visit, "", self_ptr(this));
  if (!include_self) out.erase(out.begin());
  return out;
}

std::vector<std::shared_ptr<Module>> Module::modules(bool include_self) {
  std::vector<std::shared_ptr<Module>> out;
  for (auto& [n, m] : named_modules(include_self)) out.push_back(m);
  return out;
}

namespace {
// Named tensors of one kind (params or buffers) over the tree, each tensor once.
template <class Get>
NamedList<Tensor> collect(const Module& root, bool recurse, Get get) {
  NamedList<Tensor> out;
  std::set<const void*> seen_tensors;
  std::set<const Module*> seen_modules;
  auto visit = [&](auto&& self, const std::string& prefix, const Module& m) -> void {
    if (!seen_modules.insert(&m).second) return;
    for (const auto& [n, t] : get(m))
      if (t.defined() && seen_tensors.insert(t.impl()).second) out.emplace_back(prefix + n, t);
    if (!recurse) return;
    for (const auto& [n, c] : m.named_children()) self(self, prefix + n + ".", *c);
  };
  visit(visit, "", root);
  return out;
}
std::vector<Tensor> values(const NamedList<Tensor>& l) {
  std::vector<Tensor> out;
  for (const auto& [n, t] : l) out.push_back(t);
  return out;
}
}  // namespace

NamedList<Tensor> Module::named_parameters(bool recurse) const {
  return collect(*this, recurse, [](const Module& m) -> const NamedList<Tensor>& { return m.parameters_; });
}
NamedList<Tensor> Module::named_buffers(bool recurse) const {
  return collect(*this, recurse, [](const Module& m) -> const NamedList<Tensor>& { return m.buffers_; });
}
std::vector<Tensor> Module::parameters(bool recurse) const { return values(named_parameters(recurse)); }
std::vector<Tensor> Module::buffers(bool recurse) const { return values(named_buffers(recurse)); }

// As PyTorch's named_children: null children are left out, a child under two names is listed
// under the first.
NamedList<std::shared_ptr<Module>> Module::named_children() const {
  NamedList<std::shared_ptr<Module>> out;
  for (const auto& [n, c] : children_) {
    if (!c) continue;
    bool listed = false;
    for (const auto& [n2, c2] : out) listed |= c2 == c;
    if (!listed) out.emplace_back(n, c);
  }
  return out;
}
std::vector<std::shared_ptr<Module>> Module::children() const {
  std::vector<std::shared_ptr<Module>> out;
  for (const auto& [n, c] : named_children()) out.push_back(c);
  return out;
}

// ---- devices and dtypes

template <class F>
void Module::apply_to_tensors(F&& f) {
  for (auto& m : modules()) {
    for (auto& [n, t] : m->parameters_) f(t);
    for (auto& [n, t] : m->buffers_) f(t);
  }
}

Module& Module::to(Device device, bool non_blocking) {
  apply_to_tensors([&](Tensor& t) { move_tensor(t, device, std::nullopt, non_blocking); });
  return *this;
}
Module& Module::to(Dtype dtype, bool non_blocking) {
  WICK_CHECK(int(dtype) >= 0 && int(dtype) < kNumDtypes, ValueError, "to", "invalid dtype (", int(dtype), ")");
  WICK_CHECK(is_floating_point(dtype), TypeError, "to",
             "nn.Module.to only accepts floating point dtypes, but got desired dtype=", dtype);
  apply_to_tensors([&](Tensor& t) { move_tensor(t, std::nullopt, dtype, non_blocking); });
  return *this;
}
Module& Module::to(Device device, Dtype dtype, bool non_blocking) {
  WICK_CHECK(int(dtype) >= 0 && int(dtype) < kNumDtypes, ValueError, "to", "invalid dtype (", int(dtype), ")");
  WICK_CHECK(is_floating_point(dtype), TypeError, "to",
             "nn.Module.to only accepts floating point dtypes, but got desired dtype=", dtype);
  apply_to_tensors([&](Tensor& t) { move_tensor(t, device, dtype, non_blocking); });
  return *this;
}

// ---- modes and gradients

Module& Module::train(bool on) {
  training_ = on;
  for (auto& c : children()) c->train(on);
  return *this;
}

Module& Module::apply(const std::function<void(Module&)>& fn) {
  for (auto& c : children()) c->apply(fn);
  fn(*this);
  return *this;
}

void Module::apply(const std::function<void(const std::string&, Module&)>& fn, const std::string& name_prefix) {
  for (auto& [name, module] : named_modules(true)) {
    if (name.empty()) fn(name_prefix, *module);
    else fn(name_prefix.empty() ? name : name_prefix + "." + name, *module);
  }
}

void Module::zero_grad(bool set_to_none) {
  NoGradGuard no_grad;
  for (auto& p : parameters()) {
    if (!p.grad().defined()) continue;
    if (set_to_none) p.mutable_grad() = Tensor();
    else p.mutable_grad().zero_();
  }
}

// ---- state

StateDict Module::state_dict() const {
  // As PyTorch: every name of every submodule (a module under two names is listed under both,
  // so checkpoints of such models load strictly); null submodules are skipped. Registration
  // keeps the tree free of cycles, so the walk ends.
  StateDict out;
  auto visit = [&](auto&& self, const std::string& prefix, const Module& m) -> void {
    for (const auto& [n, t] : m.parameters_)
      if (t.defined()) out.emplace_back(prefix + n, t.detach());
    for (const auto& [n, t] : m.buffers_)
      if (t.defined()) out.emplace_back(prefix + n, t.detach());
    for (const auto& [n, c] : m.children_)
      if (c) self(self, prefix + n + ".", *c);
  };
  visit(visit, "", *this);
  return out;
}

void Module::load_state_dict(const std::map<std::string, Tensor>& state, bool strict) {
  StateDict own = state_dict();
  std::vector<std::string> missing, unexpected, mismatched;
  std::set<std::string> expected;
  for (const auto& [name, t] : own) {
    expected.insert(name);
    auto it = state.find(name);
    if (it == state.end()) {
      missing.push_back(name);
      continue;
    }
    WICK_CHECK(it->second.defined(), ValueError, "load_state_dict", "expected a defined tensor for key \"",
               name, "\" but got an undefined one (Tensor())");
    if (!it->second.sizes().equals(t.sizes())) {
      std::ostringstream os;
      os << "size mismatch for " << name << ": copying a param with shape " << it->second.sizes()
         << " from checkpoint, the shape in current model is " << t.sizes() << ".";
      mismatched.push_back(os.str());
    }
  }
  for (const auto& [name, t] : state)
    if (!expected.count(name)) unexpected.push_back(name);
  if (!mismatched.empty() || (strict && (!missing.empty() || !unexpected.empty()))) {
    std::ostringstream os;
    os << "Error(s) in loading state_dict for " << name() << ":";
    auto keys = [&](const char* what, const std::vector<std::string>& ks) {
      if (ks.empty()) return;
      os << "\n\t" << what << " key(s) in state_dict: ";
      for (size_t i = 0; i < ks.size(); ++i) os << (i ? ", " : "") << '"' << ks[i] << '"';
      os << ".";
    };
    if (strict) {
      keys("Unexpected", unexpected);
      keys("Missing", missing);
    }
    for (const auto& m : mismatched) os << "\n\t" << m;
    wick::detail::raise<ValueError>("load_state_dict", os.str());
  }
  NoGradGuard no_grad;
  for (auto& [name, t] : own) {
    auto it = state.find(name);
    if (it != state.end()) Tensor(t).copy_(it->second);
  }
}

void Module::load_state_dict(const StateDict& state, bool strict) {
  std::map<std::string, Tensor> m;
  for (const auto& [n, t] : state) {
    WICK_CHECK(!m.count(n), ValueError, "load_state_dict", "key \"", n, "\" appears twice");
    m.emplace(n, t);
  }
  load_state_dict(m, strict);
}

// ---- printing

std::string Module::repr() const {
  std::vector<std::string> lines;
  std::string extra = extra_repr();
  size_t extra_lines = 0;
  if (!extra.empty()) {
    std::istringstream is(extra);
    for (std::string l; std::getline(is, l);) lines.push_back(l);
    extra_lines = lines.size();
  }
  for (const auto& [n, c] : children_) lines.push_back("(" + n + "): " + (c ? add_indent(c->repr(), 2) : "None"));
  std::string s = name() + "(";
  if (lines.size() == 1 && extra_lines == 1) {
    s += lines[0];
  } else if (!lines.empty()) {
    s += "\n";
    for (const auto& l : lines) s += "  " + l + "\n";
  }
  return s + ")";
}

std::ostream& operator<<(std::ostream& os, const Module& m) { return os << m.repr(); }

// ---- replication

std::shared_ptr<Module> Module::replicate() const {
  WICK_CHECK(replicator_ != nullptr, ValueError, "replicate", "cannot replicate ", name(),
             ": it was not made through a module holder from copyable arguments (a holder such as "
             "nn::Linear(3, 2) or FooNet(3, 3), whose constructor takes no modules or tensors)");
  // The constructor draws the new module's initial values; the generator is put back so that
  // replicating changes no random number of the program.
  const Device cpu(kCPU);
  const auto state = wick::detail::get_state(cpu);
  std::shared_ptr<Module> copy;
  try {
    copy = replicator_();
  } catch (...) {
    wick::detail::set_state(cpu, state);
    throw;
  }
  wick::detail::set_state(cpu, state);
  return copy;
}

}  // namespace wick::nn

// ---- cloning (docs/design.md, "Cloning modules")

namespace wick::nn {

std::shared_ptr<Module> Module::clone(const std::optional<Device>& device) const {
  // A module replicate() can rebuild (made through a holder from copyable arguments, or a
  // container that rebuilds its children) is cloned from that rebuild; any other is LibTorch's
  // plain Module, which cannot clone.
  std::shared_ptr<Module> copy;
  try {
    copy = replicate();
  } catch (const ValueError&) {
    wick::detail::raise<NotImplementedError>("clone", "clone() has not been implemented for ", name(),
                                             ". Subclass wick::nn::Cloneable<", name(),
                                             "> instead of wick::nn::Module to inherit the ability to clone.");
  }
  copy->clone_state_from(*this, device);
  return copy;
}

void Module::clone_state_from(const Module& original, const std::optional<Device>& device) {
  NoGradGuard no_grad;
  // Both trees are walked together; the structure is checked module by module before that
  // module's tensors are given their copies.
  auto names = [](const auto& list) {
    std::vector<std::string> out;
    for (const auto& [n, v] : list) out.push_back(n);
    return out;
  };
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& n : v) s += (s.empty() ? "" : ", ") + n;
    return "(" + s + ")";
  };
  auto visit = [&](auto&& self, Module& copy, const Module& orig, const std::string& path) -> void {
    auto same = [&](const char* what, const std::vector<std::string>& c, const std::vector<std::string>& o,
                    const char* registrar) {
      const std::string where = path.empty() ? "" : " at '" + path.substr(0, path.size() - 1) + "'";
      WICK_CHECK(c == o, ValueError, "clone", "the clone of ", orig.name(), where, " has the ", what, " ", join(c), " after reset(), where the original has ",
                 join(o), ": reset() must call ", registrar, " for each of them (not the constructor)");
    };
    same("parameters", names(copy.parameters_), names(orig.parameters_), "register_parameter()");
    same("buffers", names(copy.buffers_), names(orig.buffers_), "register_buffer()");
    same("submodules", names(copy.children_), names(orig.children_), "register_module()");
    auto give = [&](const Tensor& c, const Tensor& o, const std::string& n) {
      WICK_CHECK(c.defined() == o.defined(), ValueError, "clone", "the clone's tensor '", path, n, "' is ",
                 c.defined() ? "defined" : "undefined", " after reset(), where the original's is not");
      if (!o.defined()) return;
      Tensor value = device && o.device() != *device ? o.detach().to(*device) : o.detach().clone();
      swap_in(c, value);
      Tensor(c).requires_grad_(o.requires_grad());
    };
    for (size_t i = 0; i < orig.parameters_.size(); ++i)
      give(copy.parameters_[i].second, orig.parameters_[i].second, orig.parameters_[i].first);
    for (size_t i = 0; i < orig.buffers_.size(); ++i)
      give(copy.buffers_[i].second, orig.buffers_[i].second, orig.buffers_[i].first);
    copy.training_ = orig.training_;
    for (size_t i = 0; i < orig.children_.size(); ++i) {
      const auto& [n, o] = orig.children_[i];
      const auto& c = copy.children_[i].second;
      WICK_CHECK(bool(c) == bool(o), ValueError, "clone", "the clone's submodule '", path, n, "' is ",
                 c ? "a module" : "None", " after reset(), where the original's is not");
      if (o) self(self, *c, *o, path + n + ".");
    }
  };
  visit(visit, *this, original, "");
}

}  // namespace wick::nn
