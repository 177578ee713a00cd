// Backward formulas of sort, topk and the scatter family (recorded by their ops after the
// forward, hooks.h), as PyTorch's derivatives:
//   sort, topk: the gradient scattered back through the indices into zeros;
//   scatter: self's gradient zero at the scattered positions, src's gathered from them;
//   scatter_add: self's the gradient itself, src's gathered;
//   index_add: self's the gradient itself, source's the indexed slices times alpha;
//   index_copy: self's zero at the copied slices, source's the indexed slices.
// Each formula is made of differentiable ops, so these gradients have gradients too. A src
// larger than the index gets zeros where it was not read (PyTorch's formula gives the index's
// shape there, which its engine then rejects).
#include <string>

#include "autograd/function.h"
#include "autograd/hooks.h"
#include "core/checks.h"
#include "wick/ops.h"

namespace wick::autograd {

namespace {

// g (of index's shape) placed at the front of zeros of src's sizes.
Tensor gathered_to(const Tensor& g, int64_t d, const Tensor& index, IntArrayRef src_sizes) {
  Tensor r = wick::gather(g, d, index);
  if (r.sizes().equals(src_sizes)) return r;
  Tensor z = wick::zeros(src_sizes, g.options());
  Tensor part = z;
  for (int64_t i = 0; i < z.dim(); ++i) part = part.narrow(i, 0, r.size(i));
  part.copy_(r);
  return z;
}

}  // namespace

void record_sort(const Tensor& t, const Tensor& values, const Tensor& indices, int64_t dim, const char* name) {
  const int64_t d = t.dim() == 0 ? 0 : wick::detail::wrap_dim(dim, t.dim(), name);
  record(name, {t}, values, {indices}, [d, sizes = DimVector(t.sizes())](BackwardContext& c) -> variable_list {
    Tensor g = c.grad();
    Tensor z = wick::zeros(sizes, g.options());
    if (sizes.empty()) return {g.numel() == 0 ? z : g.reshape({})};
    return {wick::scatter(z, d, c.saved(0), g)};
  });
}

void record_scatter(const Tensor& self, const Tensor& index, const Tensor* src, const Tensor& out, int64_t d) {
  if (!src) {
    record("ScatterBackward1", {self}, out, {index}, [d](BackwardContext& c) -> variable_list {
      return {wick::scatter(c.grad(), d, c.saved(0), 0)};
    });
    return;
  }
  record("ScatterBackward0", {self, *src}, out, {index},
         [d, sizes = DimVector(src->sizes())](BackwardContext& c) -> variable_list {
           Tensor g = c.grad(), idx = c.saved(0);
           variable_list r(2);
           if (c.needs(0)) r[0] = wick::scatter(g, d, idx, 0);
           if (c.needs(1)) r[1] = gathered_to(g, d, idx, sizes);
           return r;
         });
}

void record_scatter_add(const Tensor& self, const Tensor& index, const Tensor& src, const Tensor& out, int64_t d) {
  record("ScatterAddBackward0", {self, src}, out, {index},
         [d, sizes = DimVector(src.sizes())](BackwardContext& c) -> variable_list {
           Tensor g = c.grad();
           variable_list r(2);
           if (c.needs(0)) r[0] = g;
           if (c.needs(1)) r[1] = gathered_to(g, d, c.saved(0), sizes);
           return r;
         });
}

void record_index_add(const Tensor& self, const Tensor& index, const Tensor& source, const Scalar& alpha,
                      const Tensor& out, int64_t d) {
  record("IndexAddBackward0", {self, source}, out, {index},
         [d, alpha, sizes = DimVector(source.sizes())](BackwardContext& c) -> variable_list {
           Tensor g = c.grad();
           variable_list r(2);
           if (c.needs(0)) r[0] = g;
           if (c.needs(1)) {
             Tensor s = wick::index_select(g, d, c.saved(0));
             if (!(alpha.is_integral() && alpha.to<int64_t>() == 1)) s = s * alpha;
             r[1] = s.reshape(sizes);
           }
           return r;
         });
}

void record_index_copy(const Tensor& self, const Tensor& index, const Tensor& source, const Tensor& out, int64_t d) {
  record("IndexCopyBackward0", {self, source}, out, {index},
         [d, sizes = DimVector(source.sizes())](BackwardContext& c) -> variable_list {
           Tensor g = c.grad(), idx = c.saved(0);
           variable_list r(2);
           if (c.needs(0)) r[0] = wick::index_copy(g, d, idx, wick::zeros(sizes, g.options()));
           if (c.needs(1)) r[1] = wick::index_select(g, d, idx).reshape(sizes);
           return r;
         });
}

// ---- scatter_reduce (ScatterReduceBackward0), PyTorch's formulas per reduction:
//   sum:  self's the gradient, src's gathered;
//   mean: both divided by the count of values reduced into their position;
//   prod: the product of the other values reduced into a position (zeros handled: a value
//         that is the one zero of its position gets the product of the rest, any other value
//         at a position holding a zero gets zero);
//   amax, amin: the gradient split evenly among the values equal to the result.
// With include_self = false, self's gradient is zero wherever src wrote.
void record_scatter_reduce(const Tensor& self, const Tensor& index, const Tensor& src, std::string_view reduce,
                           bool include_self, const Tensor& out, int64_t d) {
  const std::string r(reduce);
  record("ScatterReduceBackward0", {self, src}, out, {self, index, src, out},
         [d, r, include_self, src_sizes = DimVector(src.sizes())](BackwardContext& c) -> variable_list {
           Tensor g = c.grad(), x = c.saved(0), idx = c.saved(1), s = c.saved(2), result = c.saved(3);
           // src's part that is read: index's shape.
           for (int64_t i = 0; i < s.dim(); ++i)
             if (s.size(i) != idx.size(i)) s = s.narrow(i, 0, idx.size(i));
           Tensor gs, gx;
           if (r == "sum") {
             gx = g;
             gs = wick::gather(g, d, idx);
           } else if (r == "mean") {
             Tensor n = include_self ? wick::ones_like(g) : wick::zeros_like(g);
             n = wick::scatter_add(n, d, idx, wick::ones_like(s));
             n = n.masked_fill(n == 0, 1);
             gx = g / n;
             gs = wick::gather(g, d, idx) / wick::gather(n, d, idx);
           } else if (r == "prod") {
             Tensor masked_x = x.masked_fill(x == 0, 1);
             Tensor masked_x_result = wick::scatter_reduce(masked_x, d, idx, s, "prod", include_self);
             gx = g * masked_x_result / masked_x;
             Tensor s_zero = s == 0;
             Tensor zeros_at = wick::scatter_add(wick::zeros_like(x), d, idx, s_zero.to(x.dtype()));
             Tensor s_single_zero = wick::gather(zeros_at, d, idx) * s_zero.to(x.dtype()) == 1;
             Tensor masked_s = s.masked_fill(s_single_zero, 1);
             Tensor masked_s_result = wick::scatter_reduce(x, d, idx, masked_s, "prod", include_self);
             gs = wick::where(s_single_zero, wick::gather(g * masked_s_result, d, idx),
                              wick::gather(g * result, d, idx) / s.masked_fill(s_zero, 1));
           } else {  // amax, amin
             Tensor value = wick::gather(result, d, idx);
             Tensor x_is = (x == result).to(x.dtype());
             Tensor s_is = (s == value).to(x.dtype());
             Tensor share = g / wick::scatter_add(x_is, d, idx, s_is);
             gx = x_is * share;
             gs = s_is * wick::gather(share, d, idx);
           }
           if (!include_self) gx = wick::scatter(gx, d, idx, 0);
           variable_list out(2);
           if (c.needs(0)) out[0] = gx;
           if (c.needs(1)) {
             if (gs.sizes().equals(src_sizes)) {
               out[1] = gs;
             } else {
               Tensor z = wick::zeros(src_sizes, gs.options());
               Tensor part = z;
               for (int64_t i = 0; i < z.dim(); ++i) part = part.narrow(i, 0, gs.size(i));
               part.copy_(gs);
               out[1] = z;
             }
           }
           return out;
         });
}

// scatter with reduce: PyTorch has no derivative for it, so its node raises when reached.
void record_scatter_with_reduce(const Tensor& self, const Tensor* src, const Tensor& out) {
  auto fail = [](BackwardContext&) -> variable_list {
    wick::detail::raise<NotImplementedError>("scatter", "the derivative for 'scatter' with reduce is not implemented");
  };
  if (src) record("NotImplemented", {self, *src}, out, {}, fail);
  else record("NotImplemented", {self}, out, {}, fail);
}

}  // namespace wick::autograd
