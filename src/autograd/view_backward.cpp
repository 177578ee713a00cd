// Backward formulas of the view ops: the output gradient put back into the input's geometry
// (reshaped, permuted back, summed over expanded dims, or written into zeros at the slice).
//
// A view records a node like any op. PyTorch also tracks views' bases so that an in-place
// change of a view rewrites the base's history; wick does not, so an in-place op on a view of
// a tensor that requires grad is not seen by the base's gradient (the version counter still
// refuses saved tensors changed that way).
#include "autograd/function.h"
#include "autograd/hooks.h"
#include "core/checks.h"
#include "wick/ops.h"

namespace wick::autograd {

namespace {

// zeros of sizes with g written into the part view() selects.
template <class F>
Tensor scatter_into_zeros(const Tensor& g, IntArrayRef sizes, F view) {
  Tensor z = wick::zeros(sizes, g.options());
  view(z).copy_(g);
  return z;
}

}  // namespace

Tensor view(const Tensor& t, IntArrayRef sizes) {
  Tensor out = forward([&] { return t.view(sizes); });
  return record(
      "ViewBackward0", {t}, out, {},
      [s = DimVector(t.sizes())](BackwardContext& c) -> variable_list { return {c.grad().reshape(s)}; });
}

Tensor reshape(const Tensor& t, IntArrayRef sizes) {
  Tensor out = forward([&] { return t.reshape(sizes); });
  const bool aliased = out.impl()->storage() == t.impl()->storage();
  return record(
      aliased ? "ViewBackward0" : "UnsafeViewBackward0", {t}, out, {},
      [s = DimVector(t.sizes())](BackwardContext& c) -> variable_list { return {c.grad().reshape(s)}; });
}

Tensor permute(const Tensor& t, IntArrayRef dims) {
  Tensor out = forward([&] { return t.permute(dims); });
  DimVector inverse(dims.size(), 0);
  for (size_t i = 0; i < dims.size(); ++i)
    inverse[size_t(wick::detail::wrap_dim(dims[i], t.dim(), "permute"))] = int64_t(i);
  return record("PermuteBackward0", {t}, out, {},
                [inverse](BackwardContext& c) -> variable_list { return {c.grad().permute(inverse)}; });
}

Tensor transpose(const Tensor& t, int64_t d0, int64_t d1) {
  Tensor out = forward([&] { return t.transpose(d0, d1); });
  return record("TransposeBackward0", {t}, out, {},
                [d0, d1](BackwardContext& c) -> variable_list { return {c.grad().transpose(d0, d1)}; });
}

Tensor t(const Tensor& self) {
  Tensor out = forward([&] { return self.t(); });
  return record("TBackward0", {self}, out, {},
                [](BackwardContext& c) -> variable_list { return {c.grad().t()}; });
}

Tensor unsqueeze(const Tensor& t, int64_t d) {
  Tensor out = forward([&] { return t.unsqueeze(d); });
  return record(
      "UnsqueezeBackward0", {t}, out, {},
      [s = DimVector(t.sizes())](BackwardContext& c) -> variable_list { return {c.grad().reshape(s)}; });
}

Tensor squeeze(const Tensor& t) {
  Tensor out = forward([&] { return t.squeeze(); });
  return record(
      "SqueezeBackward0", {t}, out, {},
      [s = DimVector(t.sizes())](BackwardContext& c) -> variable_list { return {c.grad().reshape(s)}; });
}

Tensor squeeze(const Tensor& t, int64_t d) {
  Tensor out = forward([&] { return t.squeeze(d); });
  return record(
      "SqueezeBackward1", {t}, out, {},
      [s = DimVector(t.sizes())](BackwardContext& c) -> variable_list { return {c.grad().reshape(s)}; });
}

Tensor expand(const Tensor& t, IntArrayRef sizes) {
  Tensor out = forward([&] { return t.expand(sizes); });
  return record(
      "ExpandBackward0", {t}, out, {},
      [s = DimVector(t.sizes())](BackwardContext& c) -> variable_list { return {sum_to(c.grad(), s)}; });
}

Tensor narrow(const Tensor& t, int64_t d, int64_t start, int64_t length) {
  Tensor out = forward([&] { return t.narrow(d, start, length); });
  d = wick::detail::wrap_dim(d, t.dim(), "narrow");
  if (start < 0) start += t.size(d);
  return record(
      "SliceBackward0", {t}, out, {},
      [s = DimVector(t.sizes()), d, start, length](BackwardContext& c) -> variable_list {
        return {scatter_into_zeros(c.grad(), s, [&](const Tensor& z) { return z.narrow(d, start, length); })};
      });
}

Tensor select(const Tensor& t, int64_t d, int64_t index) {
  Tensor out = forward([&] { return t.select(d, index); });
  return record(
      "SelectBackward0", {t}, out, {},
      [s = DimVector(t.sizes()), d, index](BackwardContext& c) -> variable_list {
        return {scatter_into_zeros(c.grad(), s, [&](const Tensor& z) { return z.select(d, index); })};
      });
}

Tensor slice(const Tensor& t, int64_t d, std::optional<int64_t> start, std::optional<int64_t> end,
             int64_t step) {
  Tensor out = forward([&] { return t.slice(d, start, end, step); });
  return record("SliceBackward0", {t}, out, {},
                [s = DimVector(t.sizes()), d, start, end, step](BackwardContext& c) -> variable_list {
                  return {scatter_into_zeros(c.grad(), s,
                                             [&](const Tensor& z) { return z.slice(d, start, end, step); })};
                });
}

}  // namespace wick::autograd
