// Sequential and ModuleList: submodules named 0, 1, 2, ...; ModuleDict: submodules by name;
// ParameterList and ParameterDict: parameters named 0, 1, ... or by key.
//
//   wick::nn::Sequential seq(wick::nn::Linear(4, 8), wick::nn::ReLU(), wick::nn::Linear(8, 2));
//   auto y = seq(x);                       // parameters: 0.weight, 0.bias, 2.weight, 2.bias
//   wick::nn::ModuleList blocks;
//   blocks->push_back(wick::nn::Linear(8, 8));
//   for (auto& m : *blocks) ...            // std::shared_ptr<Module>
//   wick::nn::ParameterList scales(wick::ones({4}, wick::requires_grad()));
//   for (auto& p : *scales) p.value() ...  // p.key(): "0"
#pragma once

#include <concepts>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "wick/nn/any.h"
#include "wick/nn/module.h"

namespace wick::nn {

// Runs its modules in order, each one's output the next one's input. A module without
// Tensor forward(const Tensor&) (a block taking two tensors) may be held and called through
// seq[i]->as<Block>(), as LibTorch's; forward() then raises TypeError when it reaches it.
class SequentialImpl : public Module {
 public:
  SequentialImpl() = default;
  template <class... Ms>
  explicit SequentialImpl(Ms&&... modules) {
    (push_back(std::forward<Ms>(modules)), ...);
  }

  // A holder (nn::Linear(...)), a std::shared_ptr to a module or an AnyModule.
  template <class M>
  void push_back(M&& module) {
    push_back(std::to_string(size()), std::forward<M>(module));
  }
  template <class M>
  void push_back(std::string name, M&& module) {
    if constexpr (std::is_same_v<std::decay_t<M>, AnyModule>) {
      push_back_any(std::move(name), module);
      return;
    } else {
      push_back_module(std::move(name), std::forward<M>(module));
    }
  }

  Tensor forward(const Tensor& x);
  size_t size() const { return modules_.size(); }
  bool is_empty() const { return modules_.empty(); }
  std::shared_ptr<Module> operator[](size_t i) const { return checked_at(i); }
  // TypeError "[Sequential] ...": module `name` has no forward of one tensor.
  [[noreturn]] static void not_callable(const std::string& name, const Module& module);
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
  void push_back_module(const std::string& name, M&& module) {
    auto ptr = as_shared(std::forward<M>(module));
    register_module(name, ptr);
    modules_.push_back(ptr);
    using Concrete = typename decltype(ptr)::element_type;
    if constexpr (requires(Concrete& m, const Tensor& x) {
                    { m.forward(x) } -> std::convertible_to<Tensor>;
                  })
      calls_.push_back([](Module& m, const Tensor& x) { return Tensor(static_cast<Concrete&>(m).forward(x)); });
    else
      calls_.push_back([name](Module& m, const Tensor&) -> Tensor { not_callable(name, m); });
    classes_.push_back(&typeid(Concrete));
  }
  // The module an AnyModule holds, called through the AnyModule's forward (on the module or a
  // replica of it); ValueError "[AnyModule] ..." when it is empty.
  void push_back_any(const std::string& name, const AnyModule& module) {
    auto ptr = module.ptr();
    register_module(name, ptr);
    modules_.push_back(ptr);
    calls_.push_back([module](Module& m, const Tensor& x) { return module.forward_with(m, x); });
    classes_.push_back(&module.type_info());
  }
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

// LibTorch's nn::Functional: a function of one tensor as a module, for a Sequential
// (nn::Functional(wick::relu)); further arguments are bound after the input
// (nn::Functional(wick::leaky_relu, 0.2) runs leaky_relu(x, 0.2)). It has no parameters.
class FunctionalImpl : public Module {
 public:
  using Function = std::function<Tensor(Tensor)>;
  explicit FunctionalImpl(Function function) : function_(std::move(function)) {}
  template <class SomeFunction, class... Args>
  requires(sizeof...(Args) > 0)
  explicit FunctionalImpl(SomeFunction function, Args&&... args)
      : function_([function, ... bound = std::forward<Args>(args)](Tensor x) -> Tensor {
          return function(std::move(x), bound...);
        }) {}
  Tensor forward(const Tensor& x) { return function_(x); }

 private:
  Function function_;
};
WICK_MODULE(Functional);

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

// Holds modules by name, in insertion order (torch.nn.ModuleDict); each is registered under its
// key, so parameters(), state_dict() and to() see it. It has no forward of its own.
//   wick::nn::ModuleDict heads;
//   heads->insert("cls", wick::nn::Linear(8, 10));
//   auto y = heads->at<wick::nn::LinearImpl>("cls").forward(x);
class ModuleDictImpl : public Module {
 public:
  using Item = std::pair<std::string, std::shared_ptr<Module>>;
  ModuleDictImpl() = default;
  explicit ModuleDictImpl(const std::vector<Item>& modules) { update(modules); }

  // Adds module (a holder or a std::shared_ptr) under key, or replaces the one there (Python's
  // d[key] = module). Keys follow register_module's rules (non-empty, no ".").
  template <class M>
  void insert(const std::string& key, M&& module) {
    std::shared_ptr<Module> ptr;
    if constexpr (requires { module.ptr(); }) ptr = module.ptr();
    else ptr = module;
    insert_ptr(key, std::move(ptr));
  }
  // insert for each (key, module) in order.
  void update(const std::vector<Item>& modules) {
    for (const auto& [key, module] : modules) insert_ptr(key, module);
  }
  // The module under key; IndexError "[ModuleDict] ..." when there is none.
  std::shared_ptr<Module> operator[](const std::string& key) const { return checked_at(key); }
  // The module under key as an M (LibTorch's at<M>); TypeError when it is not an M.
  template <class M>
  M& at(const std::string& key) const {
    auto p = std::dynamic_pointer_cast<M>(checked_at(key));
    WICK_CHECK(p != nullptr, TypeError, "ModuleDict", "module \"", key, "\" is not of the type asked for");
    return *p;
  }
  bool contains(const std::string& key) const { return find(key) < items_.size(); }
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  bool is_empty() const { return items_.empty(); }
  std::vector<std::string> keys() const;
  std::vector<std::shared_ptr<Module>> values() const;
  // (key, module) pairs in insertion order.
  const std::vector<Item>& items() const { return items_; }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }

 private:
  void insert_ptr(const std::string& key, std::shared_ptr<Module> module);
  size_t find(const std::string& key) const;
  const std::shared_ptr<Module>& checked_at(const std::string& key) const;
  void replacing_child(size_t index, const std::shared_ptr<Module>& replacement) override;
  std::vector<Item> items_;
};
WICK_MODULE(ModuleDict);

// Parameters in a list, registered as 0, 1, ... (torch.nn.ParameterList, LibTorch's spelling):
// each keeps its own requires_grad, as LibTorch's (Python's makes every tensor a Parameter that
// requires grad). Iterating yields (name, tensor) items with key() and value().
class ParameterListImpl : public Module {
 public:
  ParameterListImpl() = default;
  template <class... Ts>
    requires(sizeof...(Ts) > 0 && (std::is_convertible_v<Ts, Tensor> && ...))
  explicit ParameterListImpl(Ts&&... params) {
    (append(Tensor(std::forward<Ts>(params))), ...);
  }
  void append(const Tensor& param);
  // LibTorch's append of a named item (another list's or dict's): its tensor, named by index.
  void append(const NamedList<Tensor>::Item& item) { append(item.second); }
  template <class Container>
  void extend(const Container& params) {
    for (const auto& p : params) append(p);
  }
  // The parameter at index; IndexError "[ParameterList] ..." past the end.
  Tensor& at(size_t index);
  const Tensor& at(size_t index) const;
  Tensor& operator[](size_t index) { return at(index); }
  const Tensor& operator[](size_t index) const { return at(index); }
  size_t size() const { return items_.size(); }
  bool is_empty() const { return items_.empty(); }
  auto begin() { return items_.begin(); }
  auto end() { return items_.end(); }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }
  // "(0): Parameter containing: [torch.float32 of size 2x3]" a line, as PyTorch prints it.
  std::string extra_repr() const override;

 private:
  NamedList<Tensor> items_;
};
WICK_MODULE(ParameterList);

// Parameters by key, in insertion order (torch.nn.ParameterDict, LibTorch's spelling): each
// keeps its own requires_grad, as ParameterList's; inserting under a key that is there replaces
// its parameter (Python's d[key] = p). Keys follow register_parameter's rules.
class ParameterDictImpl : public Module {
 public:
  ParameterDictImpl() = default;
  explicit ParameterDictImpl(const NamedList<Tensor>& params) { update(params); }
  Tensor& insert(const std::string& key, const Tensor& param);
  void update(const NamedList<Tensor>& params) {
    for (const auto& [key, p] : params) insert(key, p);
  }
  // The parameter under key; KeyError "[ParameterDict] ..." when there is none.
  Tensor& get(const std::string& key);
  const Tensor& get(const std::string& key) const;
  Tensor& operator[](const std::string& key) { return get(key); }
  const Tensor& operator[](const std::string& key) const { return get(key); }
  bool contains(const std::string& key) const { return items_.contains(key); }
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  bool is_empty() const { return items_.empty(); }
  std::vector<std::string> keys() const { return items_.keys(); }
  std::vector<Tensor> values() const { return items_.values(); }
  const NamedList<Tensor>& items() const { return items_; }
  auto begin() { return items_.begin(); }
  auto end() { return items_.end(); }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }
  // "(key): Parameter containing: [torch.float32 of size 2x3]" a line, as PyTorch prints it.
  std::string extra_repr() const override;

 private:
  NamedList<Tensor> items_;
};
WICK_MODULE(ParameterDict);

}  // namespace wick::nn
