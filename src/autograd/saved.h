// SavedVariable: a tensor a backward formula needs, with the storage version it had when it
// was saved, so that backward can refuse to use a tensor changed in place since.
//
// A saved input is held as it is (its autograd identity included: a formula that records, under
// create_graph, reaches the input's own history). A saved output is held as an alias without
// autograd meta: holding the output itself would make a cycle (tensor -> grad_fn -> saved
// tensor). When a formula records, unpacking it gives an alias whose grad_fn is the node
// unpacking it, as PyTorch's SavedVariable does with its weak reference to the grad_fn.
#pragma once

#include <cstdint>
#include <memory>

#include "wick/autograd.h"

namespace wick::autograd {

class SavedVariable {
 public:
  SavedVariable() = default;
  // is_output: t is output output_nr of the node saving it (named in errors as PyTorch does).
  SavedVariable(const Tensor& t, bool is_output, uint32_t output_nr = 0);

  // The tensor, after checking that it was neither released nor modified in place;
  // saver is the node unpacking it. With grad mode on, a saved output comes back as output
  // output_nr of saver.
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
  uint32_t output_nr_ = 0;        // of the saver (an output) or of producer_ (an input)
  std::weak_ptr<Node> producer_;  // the grad_fn of a saved input, for the error message
};

}  // namespace wick::autograd
