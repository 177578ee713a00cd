// nn::AnyModule: any module with a forward behind one type, as LibTorch's AnyModule. It shares
// the module it holds (a copy of an AnyModule holds the same module; clone() copies it) and
// calls its forward with the arguments given, checked against forward's parameters at run time.
//
//   wick::nn::AnyModule any(wick::nn::Linear(3, 4));
//   auto y = any.forward(wick::randn({2, 3}));               // a Tensor
//   auto& linear = any.get<wick::nn::LinearImpl>();           // the module (TypeError if not one)
//   wick::nn::Linear holder = any.get<wick::nn::Linear>();    // a holder sharing it
//   wick::nn::Sequential seq(any, wick::nn::ReLU());          // held as the module itself
//
// forward's arguments are matched by their types (an int where forward takes an int64_t or a
// double, a value or std::nullopt where it takes a std::optional), and forward's default
// arguments may be left out. forward<T>(...) returns a forward whose result is not a Tensor (T
// its exact type: LSTM's std::tuple<Tensor, std::tuple<Tensor, Tensor>>). Errors are
// wick::Errors "[AnyModule] ...": ValueError for an empty AnyModule, TypeError for a get<T> of
// another class or arguments forward does not take.
#pragma once

#include <any>
#include <concepts>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "wick/nn/module.h"

namespace wick::nn {

class AnyModule;

namespace detail {

// The arguments of one forward call, type-erased, and a call of forward of a module of the held
// class with them.
using AnyArgs = std::vector<std::any>;
using AnyCall = std::function<std::any(Module&, AnyArgs&)>;

// TypeError "[AnyModule] Expected argument #index to be of type want, but received value of type got".
[[noreturn]] void any_module_argument_error(size_t index, const std::type_info& want, const std::type_info& got);
// TypeError "[AnyModule] Net's forward() method expects ... argument(s), but received n."
[[noreturn]] void any_module_arity_error(const std::type_info& module, const std::vector<AnyCall>& calls, size_t n);
// TypeError "[AnyModule] forward() of Net returned a value of type ..., not the ... asked for".
[[noreturn]] void any_module_result_error(const std::type_info& module, const std::type_info& want,
                                          const std::type_info& got);
// TypeError "[AnyModule] Attempted to cast module of type Linear to type Conv2d".
[[noreturn]] void any_module_cast_error(const std::type_info& held, const std::type_info& want);
// ValueError "[AnyModule] Cannot call what() on an empty AnyModule".
[[noreturn]] void any_module_empty_error(const char* what);

template <class T>
inline constexpr bool is_std_optional = false;
template <class T>
inline constexpr bool is_std_optional<std::optional<T>> = true;

// Reads a of type P (a parameter type of forward, without reference and const), converting an
// argument of a neighbouring type in place: numbers between arithmetic types, a value or
// std::nullopt to an optional, a C string to a std::string.
template <class P>
P& any_argument(std::any& a, size_t index) {
  if (auto* p = std::any_cast<P>(&a)) return *p;
  if constexpr (std::is_arithmetic_v<P>) {
    bool done = false;
    auto from = [&]<class V>(V*) {
      if (!done)
        if (auto* v = std::any_cast<V>(&a)) {
          a = static_cast<P>(*v);
          done = true;
        }
    };
    from((int*)nullptr), from((long*)nullptr), from((long long*)nullptr), from((unsigned*)nullptr),
        from((unsigned long*)nullptr), from((unsigned long long*)nullptr), from((double*)nullptr),
        from((float*)nullptr), from((bool*)nullptr);
    if (done) return *std::any_cast<P>(&a);
  } else if constexpr (is_std_optional<P>) {
    if (std::any_cast<std::nullopt_t>(&a)) {
      a = P();
      return *std::any_cast<P>(&a);
    }
    using V = typename P::value_type;
    std::any value = a;
    if constexpr (std::is_arithmetic_v<V>) {
      // numbers convert as above; anything else is the type error below
      try {
        a = P(any_argument<V>(value, index));
        return *std::any_cast<P>(&a);
      } catch (const TypeError&) {
      }
    } else if (auto* v = std::any_cast<V>(&value)) {
      a = P(*v);
      return *std::any_cast<P>(&a);
    }
  } else if constexpr (std::is_same_v<P, std::string>) {
    if (auto* s = std::any_cast<const char*>(&a)) {
      a = std::string(*s);
      return *std::any_cast<P>(&a);
    }
  }
  any_module_argument_error(index, typeid(P), a.type());
}

// The parameters and result of a forward that is one member function (not overloaded).
template <class F>
struct ForwardSignature;
#define WICK_FORWARD_SIGNATURE(qualifiers)                \
  template <class R, class C, class... P>                 \
  struct ForwardSignature<R (C::*)(P...) qualifiers> {    \
    using Params = std::tuple<P...>;                      \
    using Result = R;                                     \
  };
WICK_FORWARD_SIGNATURE()
WICK_FORWARD_SIGNATURE(const)
WICK_FORWARD_SIGNATURE(noexcept)
WICK_FORWARD_SIGNATURE(const noexcept)
#undef WICK_FORWARD_SIGNATURE

template <class R>
std::any any_result(R&& r) {
  return std::any(std::decay_t<R>(std::forward<R>(r)));
}

// Whether M's forward can be called with the first K parameters of Params (the rest default).
template <class M, class Params, size_t... I>
constexpr bool forward_takes(std::index_sequence<I...>) {
  return requires(M& m, std::tuple_element_t<I, Params>&&... p) {
    m.forward(static_cast<std::tuple_element_t<I, Params>&&>(p)...);
  };
}

// The call of M's forward with its first K parameters, converted from the type-erased ones.
template <class M, class Params, size_t... I>
AnyCall forward_call(std::index_sequence<I...>) {
  return [](Module& module, AnyArgs& a) -> std::any {
    auto& m = dynamic_cast<M&>(module);
    using R = decltype(m.forward(std::declval<std::tuple_element_t<I, Params>>()...));
    if constexpr (std::is_void_v<R>) {
      m.forward(static_cast<std::tuple_element_t<I, Params>&&>(
          any_argument<std::remove_cvref_t<std::tuple_element_t<I, Params>>>(a[I], I))...);
      return std::any();
    } else {
      return any_result(m.forward(static_cast<std::tuple_element_t<I, Params>&&>(
          any_argument<std::remove_cvref_t<std::tuple_element_t<I, Params>>>(a[I], I))...));
    }
  };
}

template <class M, class Params, size_t K>
void add_forward_call(std::vector<AnyCall>& calls) {
  if constexpr (forward_takes<M, Params>(std::make_index_sequence<K>{})) {
    if (calls.size() <= K) calls.resize(K + 1);
    calls[K] = forward_call<M, Params>(std::make_index_sequence<K>{});
  }
}

// forward's calls of M by their number of arguments (empty where forward takes no such
// number): every count from all its parameters down to those without defaults, or, where
// forward is overloaded or a template, its calls of one to four Tensors.
template <class M>
std::vector<AnyCall> forward_calls() {
  std::vector<AnyCall> calls;
  if constexpr (requires { &M::forward; }) {
    using Params = typename ForwardSignature<decltype(&M::forward)>::Params;
    [&]<size_t... K>(std::index_sequence<K...>) {
      (add_forward_call<M, Params, K>(calls), ...);
    }(std::make_index_sequence<std::tuple_size_v<Params> + 1>{});
  } else {
    using Tensors = std::tuple<const Tensor&, const Tensor&, const Tensor&, const Tensor&>;
    [&]<size_t... K>(std::index_sequence<K...>) {
      (add_forward_call<M, Tensors, K + 1>(calls), ...);
    }(std::make_index_sequence<4>{});
  }
  return calls;
}

template <class M>
concept has_forward = requires { &M::forward; } || requires(M& m, const Tensor& x) { m.forward(x); } ||
                      requires(M& m, const Tensor& x) { m.forward(x, x); };

}  // namespace detail

class AnyModule {
 public:
  // An empty AnyModule (is_empty()); forward and get raise ValueError.
  AnyModule() = default;
  AnyModule(std::nullptr_t) {}
  // The module of a holder or a std::shared_ptr (LibTorch's constructors, which wick also takes
  // implicitly: options.norm(nn::LayerNorm(...))). An empty holder or null pointer makes an
  // empty AnyModule.
  template <class M>
    requires std::derived_from<M, Module>
  AnyModule(std::shared_ptr<M> module) {
    static_assert(detail::has_forward<M>, "AnyModule holds modules that have a forward()");
    if (!module) return;
    module_ = std::move(module);
    type_ = &typeid(M);
    static const std::vector<detail::AnyCall> calls = detail::forward_calls<M>();
    calls_ = &calls;
    clone_ = [](const Module& m, const std::optional<Device>& device) {
      auto copy = std::dynamic_pointer_cast<M>(m.clone(device));
      return AnyModule(std::move(copy));
    };
  }
  template <class M>
  AnyModule(const ModuleHolder<M>& holder) : AnyModule(holder.ptr()) {}

  // forward of the module; ReturnType (a Tensor unless given) must be what forward returns.
  template <class ReturnType = Tensor, class... Args>
  ReturnType forward(Args&&... args) const {
    if (!module_) detail::any_module_empty_error("forward()");
    return forward_with<ReturnType>(*module_, std::forward<Args>(args)...);
  }
  // wick's: any(x) is any.forward(x).
  template <class... Args>
  Tensor operator()(Args&&... args) const {
    return forward(std::forward<Args>(args)...);
  }
  // forward of module, a module of the held class (a replica of it), with these arguments.
  template <class ReturnType = Tensor, class... Args>
  ReturnType forward_with(Module& module, Args&&... args) const {
    if (!module_) detail::any_module_empty_error("forward()");
    detail::AnyArgs packed;
    packed.reserve(sizeof...(Args));
    (packed.emplace_back(std::decay_t<Args>(std::forward<Args>(args))), ...);
    const size_t n = sizeof...(Args);
    if (n >= calls_->size() || !(*calls_)[n]) detail::any_module_arity_error(*type_, *calls_, n);
    std::any result = (*calls_)[n](module, packed);
    if constexpr (std::is_void_v<ReturnType>) {
      return;
    } else {
      if (auto* r = std::any_cast<ReturnType>(&result)) return std::move(*r);
      detail::any_module_result_error(*type_, typeid(ReturnType), result.type());
    }
  }

  // The module as T: a module class (get<LinearImpl>() is a LinearImpl&) or a holder
  // (get<Linear>() is a Linear sharing it); TypeError when the module is not a T.
  template <class T>
  decltype(auto) get() const {
    if constexpr (requires { typename T::ContainedType; })
      return T(ptr<typename T::ContainedType>());
    else
      return static_cast<T&>(*ptr<T>());
  }
  std::shared_ptr<Module> ptr() const {
    if (!module_) detail::any_module_empty_error("ptr()");
    return module_;
  }
  template <class T>
  std::shared_ptr<T> ptr() const {
    if (!module_) detail::any_module_empty_error("get()");
    auto p = std::dynamic_pointer_cast<T>(module_);
    if (!p) detail::any_module_cast_error(*type_, typeid(T));
    return p;
  }
  // The class of the module (LinearImpl for a Linear).
  const std::type_info& type_info() const {
    if (!module_) detail::any_module_empty_error("type_info()");
    return *type_;
  }
  // A deep copy of the module (Module::clone), optionally onto device, in a new AnyModule.
  AnyModule clone(const std::optional<Device>& device = std::nullopt) const {
    if (!module_) detail::any_module_empty_error("clone()");
    return clone_(*module_, device);
  }
  bool is_empty() const noexcept { return module_ == nullptr; }
  explicit operator bool() const noexcept { return module_ != nullptr; }

 private:
  std::shared_ptr<Module> module_;
  const std::type_info* type_ = nullptr;
  const std::vector<detail::AnyCall>* calls_ = nullptr;
  AnyModule (*clone_)(const Module&, const std::optional<Device>&) = nullptr;
};

}  // namespace wick::nn
