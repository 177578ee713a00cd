// Backward formulas of copies: to() sends the gradient back to the input's device and dtype;
// clone passes it through; copy_ routes it to the source (self's old value gets none); fill_
// and zero_ give self's old value none.
#include "autograd/function.h"
#include "autograd/hooks.h"
#include "wick/ops.h"

namespace wick::autograd {

Tensor to(const Tensor& t, Device device, Dtype dtype, bool non_blocking, bool copy,
          std::optional<MemoryFormat> memory_format) {
  Tensor out = forward([&] { return t.to(device, dtype, non_blocking, copy, memory_format); });
  return record("ToCopyBackward0", {t}, out, {},
                [in_device = t.device(), in_dtype = t.dtype()](BackwardContext& c) -> variable_list {
                  return {c.grad().to(in_device, in_dtype)};
                });
}

Tensor clone(const Tensor& t, std::optional<MemoryFormat> memory_format) {
  Tensor out = forward([&] { return t.clone(memory_format); });
  return record("CloneBackward0", {t}, out, {},
                [](BackwardContext& c) -> variable_list { return {c.grad()}; });
}

// ---- in place: an out-of-place form of each recorded on self, then adopted (see inplace in
// hooks.h). Their node names are PyTorch's for the in-place ops.

Tensor& copy_(Tensor& self, const Tensor& src, bool non_blocking) {
  return inplace(self, "copy_", [&](const Tensor& t) {
    Tensor out = forward([&] {
      Tensor o = wick::empty_like(t);
      o.copy_(src, non_blocking);
      return o;
    });
    return record("CopyBackwards", {t, src}, out, {},
                  [src_device = src.device(), src_dtype = src.dtype()](BackwardContext& c) -> variable_list {
                    variable_list r(2);
                    if (c.needs(0)) r[0] = wick::zeros_like(c.grad());
                    if (c.needs(1)) r[1] = c.grad().to(src_device, src_dtype);
                    return r;
                  });
  });
}

namespace {
Tensor& fill_with(Tensor& self, const Scalar& value, const char* op, const char* node) {
  return inplace(self, op, [&](const Tensor& t) {
    Tensor out = forward([&] { return wick::full_like(t, value); });
    return record(node, {t}, out, {},
                  [](BackwardContext& c) -> variable_list { return {wick::zeros_like(c.grad())}; });
  });
}
}  // namespace

Tensor& fill_(Tensor& self, const Scalar& value) { return fill_with(self, value, "fill_", "FillBackward2"); }
Tensor& zero_(Tensor& self) { return fill_with(self, 0, "zero_", "ZeroBackward0"); }

}  // namespace wick::autograd
