// TensorIter: the plan of one elementwise op, built once in core and read by every backend.
//
// Building it checks devices (a DeviceError naming the op and the argument), broadcasts
// the shapes, works out the result dtype by PyTorch's promotion rules, casts inputs to the
// compute dtype, allocates the output when none is given, and coalesces dimensions so that
// a contiguous op becomes one flat loop. Backends see operands of one shape with per-operand
// strides in bytes (0 on broadcast dimensions).
#pragma once

#include <cstdint>
#include <optional>

#include "core/checks.h"
#include "wick/tensor.h"

namespace wick::detail {

// PyTorch's rule for writing a result of type from into an output of type to (in-place ops,
// out= forms): a float result never into an integer output, nothing but bool into bool.
inline bool can_cast(Dtype from, Dtype to) {
  return !(is_floating_point(from) && !is_floating_point(to)) && !(from != kBool && to == kBool);
}

struct IterConfig {
  const char* op = "op";
  // Names of the inputs in errors ("self", "other", ...).
  const char* names[3] = {"self", "other", "third"};
  // Integer/bool compute dtypes are promoted to the default float (true division).
  bool int_to_float = false;
  // The output dtype when it differs from the compute dtype (comparisons give bool).
  std::optional<Dtype> out_dtype;
  // The compute dtype, overriding promotion.
  std::optional<Dtype> compute_dtype;
  // A Scalar operand taking part in promotion (as a wrapped number, lowest priority).
  const Scalar* scalar = nullptr;
  // Bit i set: input i keeps its own dtype (where's condition, gather's index). Such ops
  // set compute_dtype themselves.
  uint8_t keep_dtype = 0;
  // Refuse a given output that overlaps itself or an input (PyTorch's memory-overlap checks).
  // fill_ turns it off: every element gets the same value, as PyTorch's fill_ allows.
  bool check_overlap = true;
  // A new output is row-major whatever the inputs' layout (gather, index_select, as PyTorch's),
  // instead of following the inputs' stride order as TensorIterator's outputs do.
  bool contiguous_output = false;
};

class TensorIter {
 public:
  static constexpr int kMaxOperands = 4;

  // out may be undefined (allocated here) or an existing tensor (in-place / out= forms,
  // whose shape must equal the broadcast shape).
  static TensorIter build(const Tensor& out, std::initializer_list<Tensor> inputs, const IterConfig& cfg);

  // build(out, {a} or {a, *b}, cfg) for its most common call, made without the general passes
  // (and without copying the inputs into a list): the inputs defined, on one device, contiguous,
  // of one shape with at least one element and of one dtype that is the op's compute dtype (no
  // promotion, no cast), and out either undefined (a new output) or a itself (an in-place op on
  // an input; b must not share some but not all of its memory). can_build_flat says whether a
  // call is such; build_flat then makes the same plan build() makes for it, and raises the same
  // errors (out of memory only).
  static bool can_build_flat(const Tensor& out, const Tensor& a, const Tensor* b, const IterConfig& cfg);
  static TensorIter build_flat(const Tensor& out, const Tensor& a, const Tensor* b, const IterConfig& cfg);

  const Tensor& output() const { return operand(0); }
  const Tensor& input(int i) const { return operand(i + 1); }
  int ninputs() const { return nops_ - 1; }
  int noperands() const { return nops_; }
  const Tensor& operand(int i) const { return borrowed_[i] ? *borrowed_[i] : ops_[i]; }
  Dtype dtype() const { return dtype_; }  // compute dtype of the inputs
  Device device() const { return device_; }
  int64_t numel() const { return numel_; }
  int ndim() const { return int(shape_.size()); }
  // Coalesced shape, innermost dimension last.
  IntArrayRef shape() const { return shape_; }
  // Byte strides of operand i over shape().
  const int64_t* strides(int i) const { return strides_[i].data(); }
  // True when every operand is contiguous (a single flat loop with unit strides).
  bool is_contiguous() const { return contiguous_; }
  // The result to return: output(), or, when the caller's out had another dtype, the copy
  // written back into it.
  const Tensor& result() const { return writeback_.defined() ? writeback_ : output(); }
  // result(), moved out of a plan that is done with (after finish()) where the plan owns it:
  // no reference count's round trip. The plan is not to be used again.
  Tensor take_result() {
    if (writeback_.defined()) return std::move(writeback_);
    return borrowed_[0] ? *borrowed_[0] : std::move(ops_[0]);
  }
  // Writes the computed output back into the caller's out when a temporary was used.
  void finish() const;

 private:
  Tensor ops_[kMaxOperands];
  // Operands the plan refers to without holding them (build_flat: the caller's tensors, which
  // outlive the plan); ops_[i] is unused where borrowed_[i] is set.
  const Tensor* borrowed_[kMaxOperands] = {};
  int nops_ = 0;
  Dtype dtype_ = kFloat32;
  Device device_;
  int64_t numel_ = 0;
  DimVector shape_;
  DimVector strides_[kMaxOperands];
  bool contiguous_ = true;
  Tensor writeback_;  // the caller's out when ops_[0] is a temporary of another dtype
};

// A new contiguous tensor of like's shape, on its device: the output build_flat makes, without
// empty()'s size checks (like's sizes are valid already); out of memory is raised naming op.
Tensor new_flat_output(const Tensor& like, Dtype dtype, const char* op);

}  // namespace wick::detail
