// Sequential's forward and ModuleList's printing.
#include "wick/nn/container.h"

namespace wick::nn {

Tensor SequentialImpl::forward(const Tensor& x) {
  Tensor y = x;
  for (size_t i = 0; i < calls_.size(); ++i) y = calls_[i](*modules_[i], y);
  return y;
}

std::shared_ptr<Module> SequentialImpl::replicate() const {
  auto copy = std::make_shared<SequentialImpl>();
  const auto children = named_children();
  for (size_t i = 0; i < modules_.size(); ++i) {
    auto r = modules_[i]->replicate();
    copy->register_module(children[i].first, r);
    copy->modules_.push_back(r);
    copy->calls_.push_back(calls_[i]);
  }
  return copy;
}

std::string ModuleListImpl::repr() const {
  // PyTorch's ModuleList repr: consecutive children with the same repr collapse into one line.
  const auto children = named_children();
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
    const std::string r = children[i].second->repr();
    size_t j = i + 1;
    while (j < children.size() && children[j].second->repr() == r) ++j;
    if (j - i == 1) s += "  (" + children[i].first + "): " + indent(r) + "\n";
    else
      s += "  (" + children[i].first + "-" + children[j - 1].first + "): " + std::to_string(j - i) + " x " +
           indent(r) + "\n";
    i = j;
  }
  return s + ")";
}

}  // namespace wick::nn
