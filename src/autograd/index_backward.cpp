// Backward formulas of the indexing and joining ops: index_select, gather, embedding, cat, stack
// (recorded by their ops after the forward, hooks.h), where, masked_fill, and Tensor::index,
// index_put and masked_select.
//
// Gathering backward scatters gradients to indexed positions, adding where an index repeats:
// scatter_add for gather, index_add for index_select and embedding (the scatter family's
// kernels, core/scatter.cpp), in memory of the gradient's size.
#include "autograd/function.h"
#include "autograd/hooks.h"
#include "core/checks.h"
#include "wick/ops.h"

namespace wick::autograd {

Tensor gather_backward(const Tensor& g, int64_t dim, const Tensor& index, IntArrayRef in_sizes) {
  return wick::zeros(in_sizes, g.options()).scatter_add(dim, index, g);
}

namespace {

// The [n, m] gradient of a row lookup from its [k, m] gradient g: row j sums the rows i of g with
// idx[i] == j; rows i with skip[i] (when given) add nothing.
Tensor scatter_rows(const Tensor& idx, const Tensor& g, int64_t n, const Tensor& skip = Tensor()) {
  Tensor src = skip.defined() ? wick::masked_fill(g, skip.unsqueeze(1), 0) : g;
  return wick::zeros({n, g.size(1)}, g.options()).index_add(0, idx, src);
}

}  // namespace

void record_index_select(const Tensor& t, const Tensor& index, const Tensor& out, int64_t dim) {
  const int64_t d = wick::detail::wrap_dim(dim, t.dim(), "index_select");
  record("IndexSelectBackward0", {t}, out, {index},
         [d, sizes = DimVector(t.sizes())](BackwardContext& c) -> variable_list {
           Tensor idx = c.saved(0).reshape({-1});
           if (sizes.empty()) return {c.grad().reshape({})};
           const int64_t n = sizes[size_t(d)];
           Tensor g = c.grad().transpose(0, d).contiguous();
           DimVector rest(g.sizes());
           Tensor r = scatter_rows(idx, g.reshape({g.size(0), -1}), n);
           rest[0] = n;
           return {r.view(rest).transpose(0, d)};
         });
}

void record_index(const char* name, const Tensor& input, std::vector<indexing::TensorIndex> indices, const Tensor& out,
                  IntArrayRef in_sizes) {
  record(name, {input}, out, {},
         [indices = std::move(indices), sizes = DimVector(in_sizes)](BackwardContext& c) -> variable_list {
           Tensor g = wick::zeros(sizes, c.grad().options());
           g.index_put_(indices, c.grad(), /*accumulate=*/true);
           return {g};
         });
}

void record_index_put(const Tensor& self, const Tensor& values, std::vector<indexing::TensorIndex> indices,
                      bool accumulate, const Tensor& out) {
  record("IndexPutBackward0", {self, values}, out, {},
         [indices = std::move(indices), accumulate](BackwardContext& c) -> variable_list {
           variable_list r(2);
           // self's gradient passes where self was kept (everywhere with accumulate)
           if (c.needs(0))
             r[0] = accumulate ? c.grad() : c.grad().index_put(indices, wick::zeros({}, c.grad().options()));
           if (c.needs(1)) r[1] = c.grad().index(indices);
           return r;
         });
}

void record_gather(const Tensor& t, const Tensor& index, const Tensor& out, int64_t dim) {
  const int64_t d = wick::detail::wrap_dim(dim, t.dim(), "gather");
  record("GatherBackward0", {t}, out, {index},
         [d, sizes = DimVector(t.sizes())](BackwardContext& c) -> variable_list {
           if (sizes.empty()) return {c.grad()};
           return {gather_backward(c.grad(), d, c.saved(0), sizes)};
         });
}

void record_embedding(const Tensor& weight, const Tensor& flat_indices, const Tensor& out,
                      std::optional<int64_t> padding_idx, bool scale_grad_by_freq) {
  record("EmbeddingBackward0", {weight}, out, {flat_indices},
         [rows = weight.size(0), padding_idx, scale_grad_by_freq](BackwardContext& c) -> variable_list {
           // The padding row's lookups pass no gradient.
           Tensor idx = c.saved(0);
           Tensor g = c.grad().reshape({idx.size(0), -1});
           if (scale_grad_by_freq && idx.numel() > 0) {  // each lookup over its row's count of lookups
             Tensor counts = wick::zeros({rows}, g.options()).index_add(0, idx, wick::ones({idx.size(0)}, g.options()));
             g = g / counts.index_select(0, idx).unsqueeze(1);
           }
           return {scatter_rows(idx, g, rows, padding_idx ? idx == *padding_idx : Tensor())};
         });
}

void record_cat(const std::vector<Tensor>& tensors, const Tensor& out, int64_t dim) {
  const int64_t d = wick::detail::wrap_dim(dim, out.dim(), "cat");
  std::vector<int64_t> lengths;
  for (const Tensor& t : tensors)
    lengths.push_back(t.dim() == 1 && t.size(0) == 0 && out.dim() > 1 ? -1 : t.size(d));
  record("CatBackward0", tensors, out, {}, [d, lengths](BackwardContext& c) -> variable_list {
    variable_list r(lengths.size());
    int64_t start = 0;
    for (size_t i = 0; i < lengths.size(); ++i) {
      if (lengths[i] < 0) continue;  // a legacy empty [0] input takes no part
      if (c.needs(i)) r[i] = c.grad().narrow(d, start, lengths[i]);
      start += lengths[i];
    }
    return r;
  });
}

void record_stack(const std::vector<Tensor>& tensors, const Tensor& out, int64_t dim) {
  const int64_t d = wick::detail::wrap_dim(dim, out.dim(), "stack");
  record("StackBackward0", tensors, out, {}, [d, n = tensors.size()](BackwardContext& c) -> variable_list {
    variable_list r(n);
    for (size_t i = 0; i < n; ++i)
      if (c.needs(i)) r[i] = c.grad().select(d, int64_t(i));
    return r;
  });
}

void record_where(const Tensor& cond, const Tensor* a, const Tensor* b, const Tensor& out) {
  if (a && b) {
    record("WhereBackward0", {cond, *a, *b}, out, {cond}, [](BackwardContext& c) -> variable_list {
      Tensor m = c.saved(0), g = c.grad(), zero = wick::zeros_like(g);
      return {Tensor(), c.needs(1) ? wick::where(m, g, zero) : Tensor(),
              c.needs(2) ? wick::where(m, zero, g) : Tensor()};
    });
  } else if (a) {
    record("WhereBackward0", {cond, *a}, out, {cond}, [](BackwardContext& c) -> variable_list {
      Tensor g = c.grad();
      return {Tensor(), wick::where(c.saved(0), g, wick::zeros_like(g))};
    });
  } else {
    record("WhereBackward0", {cond, *b}, out, {cond}, [](BackwardContext& c) -> variable_list {
      Tensor g = c.grad();
      return {Tensor(), wick::where(c.saved(0), wick::zeros_like(g), g)};
    });
  }
}

void record_masked_fill(const Tensor& self, const Tensor& mask, const Tensor* value, const Tensor& out) {
  if (!value) {
    record("MaskedFillBackward0", {self, mask}, out, {mask}, [](BackwardContext& c) -> variable_list {
      Tensor g = c.grad();
      return {wick::where(c.saved(0), wick::zeros_like(g), g), Tensor()};
    });
    return;
  }
  record("MaskedFillBackward1", {self, mask, *value}, out, {mask}, [](BackwardContext& c) -> variable_list {
    Tensor g = c.grad(), m = c.saved(0), zero = wick::zeros_like(g);
    variable_list r(3);
    if (c.needs(0)) r[0] = wick::where(m, zero, g);
    if (c.needs(2)) r[2] = wick::where(m, g, zero).sum();
    return r;
  });
}

void record_index_fill(const Tensor& self, const Tensor& mask, const Tensor* value, const Tensor& out) {
  if (!value) {
    record("IndexFillBackward0", {self}, out, {mask}, [](BackwardContext& c) -> variable_list {
      Tensor g = c.grad();
      return {wick::where(c.saved(0), wick::zeros_like(g), g)};
    });
    return;
  }
  record("IndexFillBackward1", {self, *value}, out, {mask}, [](BackwardContext& c) -> variable_list {
    Tensor g = c.grad(), m = c.saved(0), zero = wick::zeros_like(g);
    variable_list r(2);
    if (c.needs(0)) r[0] = wick::where(m, zero, g);
    if (c.needs(1)) r[1] = wick::where(m, g, zero).sum();
    return r;
  });
}

void record_masked_scatter(const Tensor& self, const Tensor& mask, const Tensor& source, const Tensor& out) {
  // source's first k elements went, in order, to the k true places of mask; the rest of
  // source was not read and gets zero.
  record("MaskedScatterBackward0", {self, source}, out, {mask},
         [sizes = DimVector(source.sizes()), n = source.numel()](BackwardContext& c) -> variable_list {
           Tensor g = c.grad(), m = c.saved(0);
           variable_list r(2);
           if (c.needs(0)) r[0] = wick::where(m, wick::zeros_like(g), g);
           if (c.needs(1)) {
             Tensor taken = g.masked_select(m);
             const int64_t k = taken.numel();
             r[1] = k == n ? taken.reshape(sizes)
                           : wick::cat({taken, wick::zeros({n - k}, g.options())}).reshape(sizes);
           }
           return r;
         });
}

void record_round_decimals(const Tensor& self, const Tensor& out) {
  record("RoundBackward1", {self}, out, {}, [](BackwardContext& c) -> variable_list {
    return {wick::zeros_like(c.grad())};
  });
}

}  // namespace wick::autograd
