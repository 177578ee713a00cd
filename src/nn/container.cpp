// Sequential's forward and ModuleList's printing.
#include "wick/nn/container.h"

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
