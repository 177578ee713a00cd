// Custom autograd functions (wick/autograd_function.h): the node a Function<T>::apply records,
// how forward's outputs get their history, and AutogradContext. Outputs are wrapped as
// PyTorch's _wrap_outputs does: an input returned unchanged comes back as a new alias of it,
// an input marked dirty becomes this node's output itself, an output marked non-differentiable
// does not require grad.
#include <cxxabi.h>

#include <cstdlib>
#include <string>

#include "autograd/function.h"
#include "autograd/meta.h"
#include "autograd/saved.h"
#include "core/checks.h"
#include "wick/autograd_function.h"
#include "wick/ops.h"

namespace wick::autograd {

namespace {

const char* kind_name(const IValue& v) {
  if (v.isNone()) return "None";
  if (v.isInt()) return "Int";
  if (v.isDouble()) return "Double";
  if (v.isBool()) return "Bool";
  if (v.isTensor()) return "Tensor";
  return "String";
}

[[noreturn]] void wrong_kind(const IValue& v, const char* wanted) {
  wick::detail::raise<TypeError>("IValue", "expected ", wanted, " but got ", kind_name(v));
}

bool contains(const variable_list& list, const Tensor& t) {
  for (const Tensor& x : list)
    if (x.defined() && x.is_same(t)) return true;
  return false;
}

}  // namespace

// ---- IValue

int64_t IValue::toInt() const {
  if (!isInt()) wrong_kind(*this, "Int");
  return std::get<int64_t>(v_);
}
double IValue::toDouble() const {
  if (!isDouble()) wrong_kind(*this, "Double");
  return std::get<double>(v_);
}
bool IValue::toBool() const {
  if (!isBool()) wrong_kind(*this, "Bool");
  return std::get<bool>(v_);
}
const Tensor& IValue::toTensor() const {
  if (!isTensor()) wrong_kind(*this, "Tensor");
  return std::get<Tensor>(v_);
}
const std::string& IValue::toStringRef() const {
  if (!isString()) wrong_kind(*this, "String");
  return std::get<std::string>(v_);
}

// ---- AutogradContext

AutogradContext::AutogradContext() = default;
AutogradContext::~AutogradContext() = default;

void AutogradContext::save_for_backward(variable_list to_save) { to_save_ = std::move(to_save); }

variable_list AutogradContext::get_saved_variables() const {
  WICK_CHECK(!has_freed_buffers_, ValueError, "backward",
             "Trying to backward through the graph a second time (or directly access saved tensors after they "
             "have already been freed). Saved intermediate values of the graph are freed when you call "
             ".backward() or autograd.grad(). Specify retain_graph=true if you need to backward through the "
             "graph a second time or if you need to access saved tensors after calling backward.");
  variable_list out;
  out.reserve(saved_.size());
  for (const SavedVariable& s : saved_) out.push_back(node_ ? s.unpack(*node_) : Tensor());
  return out;
}

void AutogradContext::mark_dirty(const variable_list& inputs) {
  for (const Tensor& t : inputs) dirty_.push_back(t);
}

void AutogradContext::mark_non_differentiable(const variable_list& outputs) {
  for (const Tensor& t : outputs) non_differentiable_.push_back(t);
}

void AutogradContext::set_materialize_grads(bool value) { materialize_grads_ = value; }

bool AutogradContext::needs_input_grad(size_t output_edge_index) const {
  return node_ != nullptr && node_->needs_input_grad(output_edge_index);
}

bool AutogradContext::needs_input_grad(std::initializer_list<size_t> output_edge_indices) const {
  for (size_t i : output_edge_indices)
    if (needs_input_grad(i)) return true;
  return false;
}

}  // namespace wick::autograd

namespace wick::detail {

using autograd::alias_without_grad;
using autograd::set_history;
using autograd::SavedVariable;

std::string custom_node_name(const std::type_info& t) {
  int status = 0;
  char* d = abi::__cxa_demangle(t.name(), nullptr, nullptr, &status);
  std::string s = status == 0 && d ? d : t.name();
  std::free(d);
  // the class's own name: no namespaces (a template's arguments may hold "::" too)
  size_t end = s.find('<');
  size_t colon = s.rfind("::", end == std::string::npos ? std::string::npos : end);
  if (colon != std::string::npos) s = s.substr(colon + 2);
  return s + "Backward";
}

// ---- CustomNode

CustomNode::CustomNode(std::string name) : name_(std::move(name)) { ctx_.node_ = this; }

CustomNode::~CustomNode() = default;

bool CustomNode::begin(const variable_list& inputs, std::vector<bool> is_tensor_arg) {
  is_tensor_arg_ = std::move(is_tensor_arg);
  bool any = false;
  for (const Tensor& t : inputs) any = any || (t.defined() && t.requires_grad());
  if (!(any && GradMode::is_enabled())) return false;
  autograd::detail::init_node(*this, inputs);  // src/autograd/function.h
  return true;
}

variable_list CustomNode::finish(const std::shared_ptr<CustomNode>& node, const variable_list& inputs,
                                 variable_list outputs, bool recording) {
  AutogradContext& ctx = node->ctx_;
  const variable_list raw = outputs;  // as forward returned them, to find saved outputs among
  if (recording) {
    node->num_outputs_ = uint32_t(outputs.size());
    node->output_info_.resize(outputs.size());
    node->output_defined_.assign(outputs.size(), false);
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    Tensor& var = outputs[i];
    if (!var.defined()) continue;
    const bool is_input = autograd::contains(inputs, var);
    const bool is_dirty = autograd::contains(ctx.dirty_, var);
    const bool differentiable = !autograd::contains(ctx.non_differentiable_, var) && var.is_floating_point();
    if (!recording) {
      // an input returned unchanged: a new alias of it, as a result is never its input
      if (is_input && !is_dirty) var = var.detach();
      continue;
    }
    node->output_info_[i] = {DimVector(var.sizes()), var.dtype(), var.device()};
    node->output_defined_[i] = true;
    if (!differentiable) {
      if (is_input && !is_dirty) var = var.detach();
      else if (var.requires_grad()) var = var.detach();
      continue;
    }
    if (is_dirty) {
      WICK_CHECK(!(var.is_leaf() && var.requires_grad()), ValueError, "apply",
                 "a leaf Variable that requires grad has been used in an in-place operation.");
      set_history(var, node, uint32_t(i));
    } else if (is_input) {
      var = alias_without_grad(var);
      set_history(var, node, uint32_t(i));
    } else {
      set_history(var, node, uint32_t(i));
    }
  }
  if (recording) {
    ctx.saved_.reserve(ctx.to_save_.size());
    for (const Tensor& t : ctx.to_save_) {
      size_t j = 0;
      while (j < raw.size() && !(t.defined() && raw[j].defined() && raw[j].is_same(t))) ++j;
      if (j < raw.size() && outputs[j].requires_grad() && outputs[j].grad_fn() == node)
        ctx.saved_.emplace_back(outputs[j], /*is_output=*/true, uint32_t(j));
      else
        ctx.saved_.emplace_back(t, /*is_output=*/false);
    }
  }
  ctx.to_save_.clear();
  ctx.dirty_.clear();
  ctx.non_differentiable_.clear();
  return outputs;
}

variable_list CustomNode::apply(variable_list&& grads) {
  if (ctx_.materialize_grads_) {
    for (size_t i = 0; i < grads.size() && i < output_info_.size(); ++i) {
      if (grads[i].defined() || !output_defined_[i]) continue;
      const InputMetadata& m = output_info_[i];
      grads[i] = wick::zeros(IntArrayRef(m.sizes), TensorOptions().dtype(m.dtype).device(m.device));
    }
  }
  variable_list out = call_backward(std::move(grads));
  const size_t expected = is_tensor_arg_.size();
  // More results than arguments are allowed only when the extra ones are undefined.
  if (out.size() > expected) {
    bool extra_defined = false;
    for (size_t i = expected; i < out.size(); ++i) extra_defined = extra_defined || out[i].defined();
    if (!extra_defined) out.resize(expected);
  }
  WICK_CHECK(out.size() == expected, ValueError, "backward", "function ", name(),
             " returned an incorrect number of gradients (expected ", expected, ", got ", out.size(), ")");
  variable_list result;
  result.reserve(num_inputs());
  for (size_t i = 0; i < expected; ++i) {
    if (!is_tensor_arg_[i]) {
      WICK_CHECK(!out[i].defined(), ValueError, "backward", "function ", name(),
                 " returned a gradient different than None at position ", i + 1,
                 ", but the corresponding forward input was not a Variable");
      continue;
    }
    result.push_back(std::move(out[i]));
  }
  return result;
}

void CustomNode::release_variables() {
  for (SavedVariable& s : ctx_.saved_) s.release();
  ctx_.saved_.clear();
  ctx_.has_freed_buffers_ = true;
}

}  // namespace wick::detail
