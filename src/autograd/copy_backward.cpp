// Backward formulas of copies: to() sends the gradient back to the input's device and dtype;
// clone passes it through; copy_ routes it to the source (self's old value gets none).
#include "autograd/function.h"
#include "autograd/hooks.h"
#include "wick/ops.h"

namespace wick::autograd {

Tensor to(const Tensor& t, Device device, Dtype dtype, bool non_blocking, bool copy) {
  Tensor out = forward([&] { return t.to(device, dtype, non_blocking, copy); });
  return record("ToCopyBackward0", {t}, out, {},
                [in_device = t.device(), in_dtype = t.dtype()](BackwardContext& c) -> variable_list {
                  return {c.grad().to(in_device, in_dtype)};
                });
}

Tensor clone(const Tensor& t) {
  Tensor out = forward([&] { return t.clone(); });
  return record("CloneBackward0", {t}, out, {},
                [](BackwardContext& c) -> variable_list { return {c.grad()}; });
}

Tensor& copy_(Tensor& self, const Tensor& src, bool non_blocking) {
  check_inplace(self, "copy_");
  forward([&] { self.copy_(src, non_blocking); });
  return record_inplace(
      "CopyBackwards", self, {src}, {},
      [src_device = src.device(), src_dtype = src.dtype()](BackwardContext& c) -> variable_list {
        variable_list r(2);
        if (c.needs(0)) r[0] = wick::zeros_like(c.grad());
        if (c.needs(1)) r[1] = c.grad().to(src_device, src_dtype);
        return r;
      });
}

Tensor& fill_(Tensor& self, const Scalar& value) {
  check_inplace(self, "fill_");
  forward([&] { self.fill_(value); });
  return record_inplace("FillBackward0", self, {}, {},
                        [](BackwardContext& c) -> variable_list { return {wick::zeros_like(c.grad())}; });
}

}  // namespace wick::autograd
