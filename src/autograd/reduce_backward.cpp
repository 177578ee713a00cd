// Backward formulas of sum and mean (recorded by core's ops after their forward, see hooks.h):
// the output gradient, with reduced dims restored as size 1, expanded over the input (divided
// by the count for mean).
#include <algorithm>

#include "autograd/function.h"
#include "autograd/hooks.h"
#include "core/checks.h"
#include "wick/ops.h"

namespace wick::autograd {

namespace {

// The reduced dims, wrapped and sorted; all of them when dims is empty.
DimVector reduced_dims(const Tensor& t, IntArrayRef dims) {
  DimVector r;
  if (dims.empty()) {
    for (int64_t d = 0; d < t.dim(); ++d) r.push_back(d);
  } else {
    for (int64_t d : dims) r.push_back(wick::detail::wrap_dim(d, t.dim(), "sum"));
    std::sort(r.begin(), r.end());
  }
  return r;
}

// g of the reduced shape back to the input's sizes (a broadcast view, no copy).
Tensor expand_reduced(Tensor g, IntArrayRef dims, bool keepdim, IntArrayRef sizes) {
  if (!keepdim && !sizes.empty())
    for (int64_t d : dims) g = g.unsqueeze(d);
  return g.expand(sizes);
}

}  // namespace

void record_sum(const Tensor& t, const Tensor& out) {
  record("SumBackward0", {t}, out, {}, [sizes = DimVector(t.sizes())](BackwardContext& c) -> variable_list {
    return {c.grad().expand(sizes)};
  });
}

void record_trace(const Tensor& t, const Tensor& out) {
  record("TraceBackward0", {t}, out, {}, [n = t.size(0), m = t.size(1)](BackwardContext& c) -> variable_list {
    // g on the main diagonal: differentiable in g (double backward).
    return {wick::eye(n, m, TensorOptions(c.grad().dtype()).device(c.grad().device())) * c.grad()};
  });
}

void record_sum(const Tensor& t, const Tensor& out, IntArrayRef dims, bool keepdim) {
  record("SumBackward1", {t}, out, {},
         [red = reduced_dims(t, dims), keepdim, sizes = DimVector(t.sizes())](BackwardContext& c)
             -> variable_list { return {expand_reduced(c.grad(), red, keepdim, sizes)}; });
}

void record_mean(const Tensor& t, const Tensor& out) {
  record("MeanBackward0", {t}, out, {},
         [sizes = DimVector(t.sizes()), n = t.numel()](BackwardContext& c) -> variable_list {
           return {(c.grad() / double(n)).expand(sizes)};
         });
}

void record_mean(const Tensor& t, const Tensor& out, IntArrayRef dims, bool keepdim) {
  const int64_t n = out.numel() ? t.numel() / out.numel() : 0;
  record("MeanBackward1", {t}, out, {},
         [red = reduced_dims(t, dims), keepdim, sizes = DimVector(t.sizes()), n](BackwardContext& c)
             -> variable_list { return {expand_reduced(c.grad() / double(n), red, keepdim, sizes)}; });
}

}  // namespace wick::autograd
