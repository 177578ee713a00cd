// Sequential and ModuleList: submodules named 0, 1, 2, ...
//
//   wick::nn::Sequential seq(wick::nn::Linear(4, 8), wick::nn::ReLU(), wick::nn::Linear(8, 2));
//   auto y = seq(x);                       // parameters: 0.weight, 0.bias, 2.weight, 2.bias
//   wick::nn::ModuleList blocks;
//   blocks->push_back(wick::nn::Linear(8, 8));
//   for (auto& m : *blocks) ...            // std::shared_ptr<Module>
#pragma once

#include <functional>
#include <typeinfo>
#include <memory>
#include <vector>

#include "wick/nn/module.h"

namespace wick::nn {

// Runs its modules in order, each one's output the next one's input. Each module needs
// Tensor forward(const Tensor&).
class SequentialImpl : public Module {
 public:
  SequentialImpl() = default;
  template <class... Ms>
  explicit SequentialImpl(Ms&&... modules) {
    (push_back(std::forward<Ms>(modules)), ...);
  }

  // A holder (nn::Linear(...)) or a std::shared_ptr to a module.
  template <class M>
  void push_back(M&& module) {
    push_back(std::to_string(size()), std::forward<M>(module));
  }
  template <class M>
  void push_back(std::string name, M&& module) {
    auto ptr = as_shared(std::forward<M>(module));
    register_module(name, ptr);
    modules_.push_back(ptr);
    using Concrete = typename decltype(ptr)::element_type;
    calls_.push_back([](Module& m, const Tensor& x) { return static_cast<Concrete&>(m).forward(x); });
    classes_.push_back(&typeid(Concrete));
  }

  Tensor forward(const Tensor& x);
  size_t size() const { return modules_.size(); }
  bool is_empty() const { return modules_.empty(); }
  std::shared_ptr<Module> operator[](size_t i) const { return checked_at(i); }
  template <class M>
  std::shared_ptr<M> ptr(size_t i) const {
    return std::dynamic_pointer_cast<M>(checked_at(i));
  }
  auto begin() const { return modules_.begin(); }
  auto end() const { return modules_.end(); }
  // A Sequential of replicas of its modules, under the same names.
  std::shared_ptr<Module> replicate() const override;

 private:
  template <class M>
  static auto as_shared(M&& m) {
    if constexpr (requires { m.ptr(); }) return m.ptr();
    else return std::shared_ptr<typename std::decay_t<M>::element_type>(m);
  }
  const std::shared_ptr<Module>& checked_at(size_t i) const {
    WICK_CHECK(i < modules_.size(), IndexError, "Sequential", "index ", i, " is out of range");
    return modules_[i];
  }
  std::vector<std::shared_ptr<Module>> modules_;
  // calls_[i] runs forward of modules_[i] (or of a replica of it, a module of the same class)
  std::vector<std::function<Tensor(Module&, const Tensor&)>> calls_;
  // the class each call was made for: a replacement (replace_module) must be of it
  std::vector<const std::type_info*> classes_;
  void replacing_child(size_t index, const std::shared_ptr<Module>& replacement) override;
};
WICK_MODULE(Sequential);

// Holds modules in a list (registered as 0, 1, ...); it has no forward of its own.
class ModuleListImpl : public Module {
 public:
  ModuleListImpl() = default;
  template <class... Ms>
  explicit ModuleListImpl(Ms&&... modules) {
    (push_back(std::forward<Ms>(modules)), ...);
  }
  template <class M>
  void push_back(M&& module) {
    std::shared_ptr<Module> ptr;
    if constexpr (requires { module.ptr(); }) ptr = module.ptr();
    else ptr = module;
    register_module(std::to_string(modules_.size()), ptr);
    modules_.push_back(ptr);
  }
  size_t size() const { return modules_.size(); }
  bool is_empty() const { return modules_.empty(); }
  std::shared_ptr<Module> operator[](size_t i) const { return checked_at(i); }
  template <class M>
  std::shared_ptr<M> ptr(size_t i) const {
    return std::dynamic_pointer_cast<M>(checked_at(i));
  }
  auto begin() const { return modules_.begin(); }
  auto end() const { return modules_.end(); }
  // Runs of identical children print once, as "(0-2): 3 x Linear(...)" (PyTorch >= 2.0).
  std::string repr() const override;

 private:
  const std::shared_ptr<Module>& checked_at(size_t i) const {
    WICK_CHECK(i < modules_.size(), IndexError, "ModuleList", "index ", i, " is out of range");
    return modules_[i];
  }
  void replacing_child(size_t index, const std::shared_ptr<Module>& replacement) override {
    if (index < modules_.size()) modules_[index] = replacement;
  }
  std::vector<std::shared_ptr<Module>> modules_;
};
WICK_MODULE(ModuleList);

}  // namespace wick::nn
