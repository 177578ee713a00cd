// nn::Module: parameters, buffers and submodules in registration order, moved between
// devices and dtypes in place, printed as PyTorch prints a module tree.
//
//   struct NetImpl : wick::nn::Module {
//     NetImpl() { fc = register_module("fc", wick::nn::Linear(4, 2)); }
//     wick::Tensor forward(const wick::Tensor& x) { return fc(x); }
//     wick::nn::Linear fc{nullptr};
//   };
//   WICK_MODULE(Net);
//   Net net;  net->to("cuda");  auto y = net(x);   // net->named_parameters(): fc.weight, fc.bias
#pragma once

#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "wick/ordered_dict.h"
#include "wick/tensor.h"

namespace wick::serialize {
class OutputArchive;
class InputArchive;
}  // namespace wick::serialize

namespace wick::nn {

// Values by name in module order: items are (name, value) pairs that also answer LibTorch's
// key() and value(), with lookup by name (wick/ordered_dict.h).
template <class T>
using NamedList = OrderedDict<std::string, T>;
// Tensors by dotted name ("0.weight"), in module order.
using StateDict = NamedList<Tensor>;

class Module : public std::enable_shared_from_this<Module> {
 public:
  // name: shown by operator<<; empty takes the class name without its "Impl" suffix.
  explicit Module(std::string name = "");
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  const std::string& name() const;

  // ---- registration (the returned handle is the stored one; keep a copy as a member)
  // Names must be non-empty, contain no ".", and be new to this module (ValueError). A null
  // module (std::shared_ptr<M>() or an empty holder) is PyTorch's `self.fc = None`: the name is
  // kept, printed as "(fc): None", and skipped by traversals, state dicts, to() and train(). A
  // module may be registered under several names (state_dict() lists each name, as PyTorch's),
  // but never below itself: a module that would become its own descendant is refused.
  Tensor& register_parameter(std::string name, Tensor tensor, bool requires_grad = true);
  Tensor& register_buffer(std::string name, Tensor tensor);
  template <class M>
  std::shared_ptr<M> register_module(std::string name, std::shared_ptr<M> module) {
    add_child(std::move(name), module);
    return module;
  }
  // A holder (nn::Linear, ...): registers the module it holds and returns the holder.
  template <class H, class = decltype(std::declval<H>().ptr())>
  H register_module(std::string name, H holder) {
    add_child(std::move(name), holder.ptr());
    return holder;
  }
  // Replaces a registered parameter by tensor (a leaf), keeping its requires_grad: PyTorch's
  // `m.weight = other.weight`, so one parameter may live in two modules (weight tying:
  // state_dict() lists both names, parameters() yields it once). Returns the stored handle.
  //   head->weight = head->replace_parameter("weight", emb->weight);
  Tensor& replace_parameter(const std::string& name, Tensor tensor);
  // Replaces a registered submodule (a later registration of the same name is an error);
  // module may be null (PyTorch's `m.fc = None`).
  void replace_module(const std::string& name, std::shared_ptr<Module> module);

  // ---- traversal (recursive ones use dotted names: "body.0.weight")
  std::vector<Tensor> parameters(bool recurse = true) const;
  NamedList<Tensor> named_parameters(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  NamedList<Tensor> named_buffers(bool recurse = true) const;
  // The direct submodules, each once (null ones and second names of a module left out).
  std::vector<std::shared_ptr<Module>> children() const;
  NamedList<std::shared_ptr<Module>> named_children() const;
  // This module and all below it, depth first ("" names this one), each module once.
  std::vector<std::shared_ptr<Module>> modules(bool include_self = true);
  NamedList<std::shared_ptr<Module>> named_modules(bool include_self = true);

  // ---- devices and dtypes, in place: the Tensor handles held anywhere stay valid and see
  // the new storage (grads move too). Floating parameters and buffers change dtype; integer
  // buffers (BatchNorm's num_batches_tracked) keep theirs.
  Module& to(Device device, bool non_blocking = false);
  Module& to(Dtype dtype, bool non_blocking = false);
  Module& to(Device device, Dtype dtype, bool non_blocking = false);
  Module& to(const char* device, bool non_blocking = false) { return to(Device(device), non_blocking); }
  Module& cuda(int index = -1) { return to(Device(kCUDA, index)); }
  Module& cpu() { return to(Device(kCPU)); }
  Module& half() { return to(kFloat16); }
  Module& bfloat16() { return to(kBFloat16); }
  Module& float_() { return to(kFloat32); }
  Module& double_() { return to(kFloat64); }

  // ---- modes and gradients
  virtual Module& train(bool on = true);
  Module& eval() { return train(false); }
  bool is_training() const { return training_; }
  // Drops every parameter's grad (set_to_none) or zeroes it in place.
  void zero_grad(bool set_to_none = true);
  // Calls fn on every submodule (through children(), recursively) and then on this module, as
  // PyTorch's Module.apply (initialising weights, say); returns *this.
  Module& apply(const std::function<void(Module&)>& fn);
  // LibTorch's named form: fn(name, module) on this module, named name_prefix, and then on every
  // module below it (depth first, each once), named name_prefix.path ("fc", "body.0" without a
  // prefix).
  void apply(const std::function<void(const std::string&, Module&)>& fn, const std::string& name_prefix = "");

  // LibTorch's checked downcast: this module as M (a module class, or a holder: nn::Linear
  // gives LinearImpl*), or null when it is not one.
  //   if (auto* lin = m.as<nn::Linear>()) nn::init::zeros_(lin->bias);
  template <class M>
  auto* as() noexcept {
    if constexpr (requires { typename M::ContainedType; })
      return dynamic_cast<typename M::ContainedType*>(this);
    else
      return dynamic_cast<M*>(this);
  }
  template <class M>
  const auto* as() const noexcept {
    if constexpr (requires { typename M::ContainedType; })
      return dynamic_cast<const typename M::ContainedType*>(this);
    else
      return dynamic_cast<const M*>(this);
  }

  // ---- state: parameters then buffers, by dotted name (a submodule registered under two
  // names appears under both, as in PyTorch)
  StateDict state_dict() const;
  // Copies values into the registered tensors (shapes must match; dtype and device are those
  // of the module). strict: missing or unexpected keys throw, naming them all.
  void load_state_dict(const StateDict& state, bool strict = true);
  void load_state_dict(const std::map<std::string, Tensor>& state, bool strict = true);
  // LibTorch's archives (wick/serialize.h): save writes this module's parameters and buffers
  // under their names and each submodule as a nested archive under its name (the keys of
  // state_dict()); load copies them back into the registered tensors (dtypes and devices stay).
  // load checks the whole tree first, so that a missing key (KeyError "[load] ...") or a shape
  // mismatch (ValueError) changes nothing; tensors the module lacks are ignored, as LibTorch's.
  virtual void save(serialize::OutputArchive& archive) const;
  virtual void load(serialize::InputArchive& archive);

  // LibTorch's clone: a deep copy (parameters and buffers of its own, same values, same
  // requires_grad and training mode), optionally onto device. nn::Cloneable<Derived> gives it
  // to a module class; a module made through a holder from copyable arguments (nn::Linear(3, 2),
  // a Sequential of such) is rebuilt as replicate() rebuilds it. Any other module raises
  // NotImplementedError "[clone] clone() has not been implemented for Net...", as LibTorch's.
  virtual std::shared_ptr<Module> clone(const std::optional<Device>& device = std::nullopt) const;

  // ---- printing: "Name(extra_repr)" or "Name(extra_repr\n  (child): ...\n)", as PyTorch
  virtual std::string extra_repr() const { return ""; }
  virtual std::string repr() const;

  // ---- replication (nn::DataParallel): a new module of the same class and structure whose
  // parameters and buffers are its own (their values are not copied). Modules made through a
  // holder (nn::Linear(3, 2), FooNet(3, 3)) are rebuilt by calling their constructor again
  // with copies of its arguments (the CPU generator is restored afterwards); Sequential rebuilds
  // its children. A module made otherwise (std::make_shared, a constructor taking modules or
  // tensors) throws ValueError, as does one whose rebuilt structure differs.
  virtual std::shared_ptr<Module> replicate() const;
  // How replicate() rebuilds this module (set by ModuleHolder's constructors).
  void set_replicator(std::function<std::shared_ptr<Module>()> make) { replicator_ = std::move(make); }

 protected:
  bool training_ = true;
  // Every registered submodule under every name it has, null ones included (PyTorch's
  // _modules), in registration order.
  const NamedList<std::shared_ptr<Module>>& registered_children() const { return children_; }
  // Called by replace_module before registered child `index` becomes `replacement` (null or
  // not), so that a container keeping its own list of children keeps it in step; it may throw,
  // and then nothing has changed.
  virtual void replacing_child(size_t index, const std::shared_ptr<Module>& replacement) {
    (void)index, (void)replacement;
  }
  // Gives this module (freshly built with the same structure) copies of original's parameters
  // and buffers, their requires_grad and every module's training mode, moved onto device when
  // given: the second half of clone(). ValueError "[clone] ..." when the structures differ.
  void clone_state_from(const Module& original, const std::optional<Device>& device);

 private:
  void add_child(std::string name, std::shared_ptr<Module> module);
  // ValueError (naming op) when this module is module or lies below it.
  void check_not_below(const Module* module, const std::string& name, const char* op) const;
  void check_new_name(const std::string& name, const char* what) const;
  template <class F>
  void apply_to_tensors(F&& f);

  mutable std::string name_;
  NamedList<Tensor> parameters_;
  NamedList<Tensor> buffers_;
  NamedList<std::shared_ptr<Module>> children_;
  std::function<std::shared_ptr<Module>()> replicator_;
};

std::ostream& operator<<(std::ostream& os, const Module& m);

// LibTorch's Cloneable: the base of a module class that can be deep-copied. reset() builds
// (registers) every parameter, buffer and submodule; the constructor calls it. clone() makes a
// new Derived by copying this one (its plain members: options, sizes), calls reset() on it and
// then copies every parameter and buffer into it by name (docs/design.md, "Cloning modules").
//
//   struct NetImpl : wick::nn::Cloneable<NetImpl> {
//     explicit NetImpl(int64_t n) : n(n) { reset(); }
//     void reset() override { fc = register_module("fc", wick::nn::Linear(n, 2)); }
//     int64_t n;
//     wick::nn::Linear fc{nullptr};
//   };
//   WICK_MODULE(Net);
//   auto copy = std::dynamic_pointer_cast<NetImpl>(net->clone());
template <class Derived>
class Cloneable : public Module {
 public:
  using Module::Module;
  Cloneable() = default;
  // The copy clone() starts from: Derived's members copied, no parameters, buffers or
  // submodules registered yet (reset() registers them).
  Cloneable(const Cloneable& other) : Module(other.name()) { training_ = other.training_; }

  virtual void reset() = 0;

  std::shared_ptr<Module> clone(const std::optional<Device>& device = std::nullopt) const override {
    auto copy = std::make_shared<Derived>(static_cast<const Derived&>(*this));
    copy->reset();
    copy->clone_state_from(*this, device);
    return copy;
  }
};

namespace detail {
// Whether a module made from these arguments can be made again from copies of them: no
// argument holds a module or a tensor (the copy would share it with the original).
template <class T>
inline constexpr bool holds_shared = requires(const T& t) {
  t.ptr();
}
|| requires { typename T::element_type; }
|| std::is_same_v<T, Tensor>;
template <class Impl, class... A>
inline constexpr bool rebuildable = ((std::is_copy_constructible_v<std::decay_t<A>> &&
                                      !holds_shared<std::decay_t<A>>)&&...) &&
                                    std::is_constructible_v<Impl, const std::decay_t<A>&...>;
}  // namespace detail

// A shared handle to a module, as LibTorch's ModuleHolder: holder->member, holder(args...)
// calls forward. Default construction makes the module when it has a default constructor;
// Holder(nullptr) makes an empty holder to assign later.
template <class Impl>
class ModuleHolder {
 public:
  using ContainedType = Impl;

  ModuleHolder() {
    if constexpr (std::is_default_constructible_v<Impl>) {
      impl_ = std::make_shared<Impl>();
      impl_->set_replicator([] { return std::shared_ptr<Module>(std::make_shared<Impl>()); });
    }
  }
  ModuleHolder(std::nullptr_t) {}
  ModuleHolder(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  // One argument of this holder's type is a copy; with more (Sequential(inner, nn::Linear(..)))
  // the holder is the first of the module's arguments.
  template <class Head, class... Tail,
            class = std::enable_if_t<!(sizeof...(Tail) == 0 && std::is_base_of_v<ModuleHolder, std::decay_t<Head>>) &&
                                     !std::is_same_v<std::decay_t<Head>, std::nullptr_t> &&
                                     !std::is_same_v<std::decay_t<Head>, std::shared_ptr<Impl>>>>
  explicit ModuleHolder(Head&& head, Tail&&... tail) {
    if constexpr (detail::rebuildable<Impl, Head, Tail...>) {
      // copies of the arguments, taken before they are moved from, rebuild the module
      auto args = std::make_tuple(std::decay_t<Head>(head), std::decay_t<Tail>(tail)...);
      impl_ = std::make_shared<Impl>(std::forward<Head>(head), std::forward<Tail>(tail)...);
      impl_->set_replicator([args = std::move(args)] {
        return std::apply(
            [](const auto&... a) { return std::shared_ptr<Module>(std::make_shared<Impl>(a...)); }, args);
      });
    } else {
      impl_ = std::make_shared<Impl>(std::forward<Head>(head), std::forward<Tail>(tail)...);
    }
  }

  Impl* operator->() const { return get(); }
  Impl& operator*() const { return *get(); }
  Impl* get() const;
  const std::shared_ptr<Impl>& ptr() const { return impl_; }
  bool is_empty() const { return impl_ == nullptr; }
  explicit operator bool() const { return impl_ != nullptr; }

  template <class... Args>
  decltype(auto) operator()(Args&&... args) const {
    return get()->forward(std::forward<Args>(args)...);
  }
  // The module's operator[] (seq[0], dict["head"]), as LibTorch's ModuleHolder::operator[].
  template <class Arg>
  decltype(auto) operator[](Arg&& arg) const {
    return (*get())[std::forward<Arg>(arg)];
  }

 private:
  std::shared_ptr<Impl> impl_;
};

namespace detail {
[[noreturn]] void throw_empty_holder(const std::string& type);
}  // namespace detail

template <class Impl>
Impl* ModuleHolder<Impl>::get() const {
  if (!impl_) [[unlikely]]
    detail::throw_empty_holder(typeid(Impl).name());
  return impl_.get();
}

template <class Impl>
std::ostream& operator<<(std::ostream& os, const ModuleHolder<Impl>& m) {
  return os << *m;
}

}  // namespace wick::nn

// WICK_MODULE(Name): defines the holder Name of NameImpl, as LibTorch's TORCH_MODULE.
#define WICK_MODULE(Name)                                     \
  class Name : public ::wick::nn::ModuleHolder<Name##Impl> {  \
   public:                                                    \
    using ::wick::nn::ModuleHolder<Name##Impl>::ModuleHolder; \
  }
