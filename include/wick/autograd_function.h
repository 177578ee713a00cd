// Custom autograd functions, as LibTorch spells them: a struct with a static forward and a
// static backward, called through apply, which records one node (named after the struct, as
// "MulConstantBackward") whose formula is the struct's backward.
//
//   struct MulConstant : wick::autograd::Function<MulConstant> {
//     static variable_list forward(AutogradContext* ctx, const Tensor& x, double c) {
//       ctx->saved_data["c"] = c;
//       return {x * c};
//     }
//     static variable_list backward(AutogradContext* ctx, variable_list g) {
//       return {g[0] * ctx->saved_data["c"].toDouble(), Tensor()};  // one per forward argument
//     }
//   };
//   Tensor y = MulConstant::apply(x, 5.0)[0];
//
// forward runs with grad mode off. Its tensor arguments (a Tensor, a std::optional<Tensor>, each
// tensor of a std::vector<Tensor>) are the node's inputs; other arguments pass through and get an
// undefined gradient. forward returns a variable_list or a Tensor (apply then returns the same).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "wick/autograd.h"

namespace wick::detail {
class CustomNode;
}  // namespace wick::detail

namespace wick::autograd {

class SavedVariable;

// LibTorch's name for a tensor in autograd code.
using Variable = Tensor;

// What AutogradContext::saved_data holds: nothing, an int64, a double, a bool, a Tensor or a
// string. The to* accessors throw TypeError for a value of another kind.
class IValue {
 public:
  IValue() = default;
  template <class I, std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>, int> = 0>
  IValue(I v) : v_(int64_t(v)) {}
  IValue(double v) : v_(v) {}
  IValue(bool v) : v_(v) {}
  IValue(Tensor v) : v_(std::move(v)) {}
  IValue(std::string v) : v_(std::move(v)) {}
  IValue(const char* v) : v_(std::string(v)) {}

  bool isNone() const { return v_.index() == 0; }
  bool isInt() const { return v_.index() == 1; }
  bool isDouble() const { return v_.index() == 2; }
  bool isBool() const { return v_.index() == 3; }
  bool isTensor() const { return v_.index() == 4; }
  bool isString() const { return v_.index() == 5; }
  int64_t toInt() const;
  double toDouble() const;
  bool toBool() const;
  const Tensor& toTensor() const;
  const std::string& toStringRef() const;

 private:
  std::variant<std::monostate, int64_t, double, bool, Tensor, std::string> v_;
};

// What forward hands on to backward (LibTorch's torch::autograd::AutogradContext).
class AutogradContext {
 public:
  AutogradContext();
  ~AutogradContext();
  AutogradContext(const AutogradContext&) = delete;
  AutogradContext& operator=(const AutogradContext&) = delete;

  // Values forward keeps for backward (tensors in it are kept as they are: no version check).
  std::unordered_map<std::string, IValue> saved_data;

  // Tensors backward reads through get_saved_variables (inputs or outputs of forward), checked
  // there for in-place changes made since forward.
  void save_for_backward(variable_list to_save);
  // The saved tensors; an output among them has this function's node as grad_fn when backward
  // records (create_graph). Throws once backward without retain_graph has freed them.
  variable_list get_saved_variables() const;
  // Inputs forward changed in place (and returns): they become outputs of this node.
  void mark_dirty(const variable_list& inputs);
  // Outputs that get no gradient: they do not require grad and backward gets zeros for them.
  void mark_non_differentiable(const variable_list& outputs);
  // Whether backward gets zeros (true, the default) or undefined tensors for the gradients of
  // outputs that got none.
  void set_materialize_grads(bool value);
  // Whether the gradient of forward's tensor input i (counting tensor inputs only) is wanted.
  bool needs_input_grad(size_t output_edge_index) const;
  // Whether any of these inputs' gradients is wanted.
  bool needs_input_grad(std::initializer_list<size_t> output_edge_indices) const;

 private:
  friend class wick::detail::CustomNode;
  variable_list to_save_;
  std::vector<SavedVariable> saved_;
  variable_list dirty_;
  variable_list non_differentiable_;
  bool materialize_grads_ = true;
  bool has_freed_buffers_ = false;
  const Node* node_ = nullptr;
};

}  // namespace wick::autograd

// Custom functions' internals: wick::detail, as the other public headers' (a namespace detail
// inside wick::autograd would hide wick::detail from code in wick::autograd).
namespace wick::detail {

using autograd::AutogradContext;
using autograd::InputMetadata;
using autograd::variable_list;

// The node of a custom function: backward's gradients checked (one per forward argument,
// undefined for the arguments that are not tensors) and handed on for the tensor inputs.
class CustomNode : public autograd::Node {
 public:
  explicit CustomNode(std::string name);
  ~CustomNode() override;
  std::string name() const override { return name_; }
  variable_list apply(variable_list&& grads) override;
  void release_variables() override;

  AutogradContext ctx_;

  // Before forward: the node's edges to the tensor arguments; is_tensor_arg tells, per forward
  // argument, whether it was a tensor. Returns whether the node records (grad mode on and an
  // input requiring grad).
  bool begin(const variable_list& inputs, std::vector<bool> is_tensor_arg);
  // After forward: the outputs with their history, the saved tensors saved.
  static variable_list finish(const std::shared_ptr<CustomNode>& node, const variable_list& inputs,
                              variable_list outputs, bool recording);

 protected:
  virtual variable_list call_backward(variable_list grads) = 0;

 private:
  std::string name_;
  std::vector<bool> is_tensor_arg_;
  std::vector<InputMetadata> output_info_;  // for the zeros of missing output gradients
  std::vector<bool> output_defined_;        // forward's outputs that were tensors
};

// T's name without namespaces, and "Backward": PyTorch's name for a custom function's node.
std::string custom_node_name(const std::type_info& t);

inline void collect_arg(variable_list& in, std::vector<bool>& is_tensor, const Tensor& t) {
  in.push_back(t);
  is_tensor.push_back(true);
}
inline void collect_arg(variable_list& in, std::vector<bool>& is_tensor, const std::optional<Tensor>& t) {
  in.push_back(t ? *t : Tensor());
  is_tensor.push_back(true);
}
inline void collect_arg(variable_list& in, std::vector<bool>& is_tensor, const std::vector<Tensor>& ts) {
  for (const Tensor& t : ts) collect_arg(in, is_tensor, t);
}
template <class A>
void collect_arg(variable_list&, std::vector<bool>& is_tensor, const A&) {
  is_tensor.push_back(false);
}

template <class T>
class CppNode final : public CustomNode {
 public:
  using CustomNode::CustomNode;

 protected:
  variable_list call_backward(variable_list grads) override { return T::backward(&ctx_, std::move(grads)); }
};

}  // namespace wick::detail

namespace wick::autograd {

// LibTorch's torch::autograd::Function: derive T from Function<T>, define T::forward and
// T::backward, call T::apply(args...).
template <class T>
struct Function {
  template <class... Args>
  static auto apply(Args&&... args) {
    auto node = std::make_shared<wick::detail::CppNode<T>>(wick::detail::custom_node_name(typeid(T)));
    variable_list inputs;
    std::vector<bool> is_tensor;
    (wick::detail::collect_arg(inputs, is_tensor, args), ...);
    const bool recording = node->begin(inputs, std::move(is_tensor));
    using R = std::decay_t<decltype(T::forward(&node->ctx_, std::forward<Args>(args)...))>;
    static_assert(std::is_same_v<R, variable_list> || std::is_same_v<R, Tensor>,
                  "forward must return a variable_list or a Tensor");
    R out;
    {
      AutoGradMode no_grad(false);
      out = T::forward(&node->ctx_, std::forward<Args>(args)...);
    }
    std::shared_ptr<wick::detail::CustomNode> base = std::move(node);
    if constexpr (std::is_same_v<R, Tensor>) {
      return wick::detail::CustomNode::finish(base, inputs, variable_list{std::move(out)}, recording)[0];
    } else {
      return wick::detail::CustomNode::finish(base, inputs, std::move(out), recording);
    }
  }
};

}  // namespace wick::autograd

namespace wick {
// LibTorch's c10::IValue, as the values of AutogradContext::saved_data.
using autograd::IValue;
}  // namespace wick
