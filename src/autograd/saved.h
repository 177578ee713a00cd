// SavedVariable: a tensor a backward formula needs, with the storage version it had when it
// was saved, so that backward can refuse to use a tensor changed in place since.
//
// It holds an alias of the tensor without autograd meta. Holding the tensor itself would make
// a cycle for saved outputs (tensor -> grad_fn -> saved tensor); PyTorch breaks it with a weak
// reference to the grad_fn, which double backward needs and wick does not support.
#pragma once

#include <cstdint>
#include <memory>

#include "wick/autograd.h"

namespace wick::autograd {

class SavedVariable {
 public:
  SavedVariable() = default;
  // is_output: t is a result of the node saving it (named in errors as PyTorch does).
  SavedVariable(const Tensor& t, bool is_output);

  // The tensor, after checking that it was neither released nor modified in place;
  // saver is the node unpacking it.
  Tensor unpack(const Node& saver) const;
  void release() {
    data_ = Tensor();
    released_ = true;
  }
  bool defined() const { return data_.defined() || released_; }
  // Whether this holds t's values: the same storage, offset, sizes, strides and dtype.
  bool holds(const Tensor& t) const;

 private:
  Tensor data_;
  uint32_t version_ = 0;
  bool released_ = false;
  bool is_output_ = false;
  uint32_t output_nr_ = 0;
  std::weak_ptr<Node> producer_;  // the grad_fn of a saved input, for the error message
};

}  // namespace wick::autograd
