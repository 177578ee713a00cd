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

}  // namespace wick::autograd
