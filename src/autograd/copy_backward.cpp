// Backward formulas of copies: to() sends the gradient back to the input's device and dtype;
// clone passes it through; copy_ routes it to the source (self's old value gets none); fill_
// and zero_ give self's old value none. The node names are PyTorch's, the in-place ops' own.
#include "autograd/function.h"
#include "autograd/hooks.h"
#include "wick/ops.h"

namespace wick::autograd {

void record_copy(CopyOp op, const Tensor& self, const Tensor& src, const Tensor& out) {
  switch (op) {
    case CopyOp::To:
      record("ToCopyBackward0", {self}, out, {},
             [in_device = self.device(), in_dtype = self.dtype()](BackwardContext& c) -> variable_list {
               return {c.grad().to(in_device, in_dtype)};
             });
      return;
    case CopyOp::Clone:
      record("CloneBackward0", {self}, out, {}, [](BackwardContext& c) -> variable_list { return {c.grad()}; });
      return;
    case CopyOp::Copy:
      record("CopyBackwards", {self, src}, out, {},
             [src_device = src.device(), src_dtype = src.dtype()](BackwardContext& c) -> variable_list {
               variable_list r(2);
               if (c.needs(0)) r[0] = wick::zeros_like(c.grad());
               if (c.needs(1)) r[1] = c.grad().to(src_device, src_dtype);
               return r;
             });
      return;
    case CopyOp::Fill:
    case CopyOp::Zero:
      record(op == CopyOp::Fill ? "FillBackward2" : "ZeroBackward0", {self}, out, {},
             [](BackwardContext& c) -> variable_list { return {wick::zeros_like(c.grad())}; });
      return;
  }
}

void record_zero_gradients(const char* name, std::initializer_list<Tensor> inputs, const Tensor& out) {
  record(name, inputs, out, {}, [n = inputs.size()](BackwardContext& c) -> variable_list {
    variable_list r(n);
    for (size_t i = 0; i < n; ++i)
      if (c.needs(i)) r[i] = wick::zeros_like(c.grad());
    return r;
  });
}

}  // namespace wick::autograd
