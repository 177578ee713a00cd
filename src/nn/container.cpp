// Sequential's forward, ModuleList's printing, ParameterList and ParameterDict.
#include "wick/nn/container.h"

#include <sstream>

#include "core/as_op.h"

namespace wick::nn {

Tensor SequentialImpl::forward(const Tensor& x) {
  Tensor y = x;
  for (size_t i = 0; i < calls_.size(); ++i) {
    // PyTorch raises calling a None module ("'NoneType' object is not callable").
    if (!modules_[i]) [[unlikely]]
      wick::detail::raise<TypeError>("Sequential", "module '", registered_children()[i].first,
                                     "' is None and cannot be called");
    y = calls_[i](*modules_[i], y);
  }
  return y;
}

void SequentialImpl::not_callable(const std::string& name, const Module& module) {
  wick::detail::raise<TypeError>("Sequential", "module '", name, "' (", module.name(),
                                 ") has no forward of one tensor; call it through seq[", name, "]->as<...>()");
}

void SequentialImpl::replacing_child(size_t index, const std::shared_ptr<Module>& replacement) {
  // Each step's forward was bound to its module's class when it was pushed: a replacement of
  // another class could not be called through it.
  if (index >= modules_.size()) return;  // a child registered by name, not a step
  if (replacement && typeid(*replacement) != *classes_[index])
    wick::detail::raise<TypeError>("replace_module", "a ", replacement->name(), " cannot replace Sequential's module '",
                                   registered_children()[index].first,
                                   "': that step runs the forward of the class it was added as");
  modules_[index] = replacement;
}

std::shared_ptr<Module> SequentialImpl::replicate() const {
  auto copy = std::make_shared<SequentialImpl>();
  // Every name, a module under two names and null ones included.
  const auto& children = registered_children();
  for (size_t i = 0; i < modules_.size(); ++i) {
    // a module under two names gets one replica, shared as the module is
    std::shared_ptr<Module> r;
    for (size_t k = 0; k < i && !r; ++k)
      if (modules_[k] == modules_[i]) r = copy->modules_[k];
    if (!r && modules_[i]) r = modules_[i]->replicate();
    copy->register_module(children[i].first, r);
    copy->modules_.push_back(r);
    copy->calls_.push_back(calls_[i]);
    copy->classes_.push_back(classes_[i]);
  }
  return copy;
}

std::string ModuleListImpl::repr() const {
  // PyTorch's ModuleList repr: consecutive children with the same repr collapse into one line.
  const auto& children = registered_children();  // every name, null ones printed as None
  std::string s = name() + "(";
  if (children.empty()) return s + ")";
  s += "\n";
  auto indent = [](const std::string& r) {
    std::string out;
    for (char c : r) {
      out += c;
      if (c == '\n') out += "  ";
    }
    return out;
  };
  size_t i = 0;
  while (i < children.size()) {
    auto repr_of = [&](size_t k) { return children[k].second ? children[k].second->repr() : std::string("None"); };
    const std::string r = repr_of(i);
    size_t j = i + 1;
    while (j < children.size() && repr_of(j) == r) ++j;
    if (j - i == 1) s += "  (" + children[i].first + "): " + indent(r) + "\n";
    else
      s += "  (" + children[i].first + "-" + children[j - 1].first + "): " + std::to_string(j - i) + " x " +
           indent(r) + "\n";
    i = j;
  }
  return s + ")";
}

}  // namespace wick::nn

// ---- ModuleDict

namespace wick::nn {

void ModuleDictImpl::insert_ptr(const std::string& key, std::shared_ptr<Module> module) {
  if (contains(key)) {
    replace_module(key, std::move(module));  // replacing_child updates items_
    return;
  }
  register_module(key, module);
  items_.emplace_back(key, std::move(module));
}

size_t ModuleDictImpl::find(const std::string& key) const {
  for (size_t i = 0; i < items_.size(); ++i)
    if (items_[i].first == key) return i;
  return items_.size();
}

const std::shared_ptr<Module>& ModuleDictImpl::checked_at(const std::string& key) const {
  const size_t i = find(key);
  WICK_CHECK(i < items_.size(), IndexError, "ModuleDict", "no module under key \"", key, "\"");
  return items_[i].second;
}

std::vector<std::string> ModuleDictImpl::keys() const {
  std::vector<std::string> r;
  for (const auto& item : items_) r.push_back(item.first);
  return r;
}

std::vector<std::shared_ptr<Module>> ModuleDictImpl::values() const {
  std::vector<std::shared_ptr<Module>> r;
  for (const auto& item : items_) r.push_back(item.second);
  return r;
}

void ModuleDictImpl::replacing_child(size_t index, const std::shared_ptr<Module>& replacement) {
  const size_t i = find(registered_children()[index].first);
  if (i < items_.size()) items_[i].second = replacement;
}

}  // namespace wick::nn

// ---- ParameterList and ParameterDict

namespace wick::nn {

namespace {
// Python's line for a parameter of a ParameterList or ParameterDict:
// "  (key): Parameter containing: [torch.float32 of size 2x3 (cuda:0)]".
std::string parameter_line(const std::string& key, const Tensor& p) {
  if (!p.defined()) return "  (" + key + "): None";
  std::ostringstream os;
  os << "  (" << key << "): Parameter containing: [torch." << p.dtype() << " of size ";
  for (int64_t d = 0; d < p.dim(); ++d) os << (d ? "x" : "") << p.size(d);
  if (p.is_cuda()) os << " (" << p.device() << ")";
  os << "]";
  return os.str();
}

std::string parameter_lines(const NamedList<Tensor>& items) {
  std::string s;
  for (const auto& [key, p] : items) {
    if (!s.empty()) s += '\n';
    s += parameter_line(key, p);
  }
  return s;
}
}  // namespace

void ParameterListImpl::append(const Tensor& param) {
  const std::string key = std::to_string(items_.size());
  Tensor& stored = wick::detail::as_op("ParameterList", [&]() -> Tensor& {
    return register_parameter(key, param, param.defined() && param.requires_grad());
  });
  items_.emplace_back(key, stored);
}

Tensor& ParameterListImpl::at(size_t index) {
  WICK_CHECK(index < items_.size(), IndexError, "ParameterList", "index ", index, " is out of range");
  return items_[index].second;
}

const Tensor& ParameterListImpl::at(size_t index) const { return const_cast<ParameterListImpl&>(*this).at(index); }

std::string ParameterListImpl::extra_repr() const { return parameter_lines(items_); }

Tensor& ParameterDictImpl::insert(const std::string& key, const Tensor& param) {
  return wick::detail::as_op("ParameterDict", [&]() -> Tensor& {
    if (Tensor* p = items_.find(key)) return *p = replace_parameter(key, param);
    Tensor& stored = register_parameter(key, param, param.defined() && param.requires_grad());
    return items_.insert(key, stored);
  });
}

Tensor& ParameterDictImpl::get(const std::string& key) {
  Tensor* p = items_.find(key);
  WICK_CHECK(p != nullptr, KeyError, "ParameterDict", "no parameter under key \"", key, "\"");
  return *p;
}

const Tensor& ParameterDictImpl::get(const std::string& key) const {
  return const_cast<ParameterDictImpl&>(*this).get(key);
}

std::string ParameterDictImpl::extra_repr() const { return parameter_lines(items_); }

}  // namespace wick::nn
