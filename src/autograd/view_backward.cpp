// Backward formulas of the view ops, recorded by them after the view is made (hooks.h): the
// output gradient put back into the input's geometry (reshaped, permuted back, summed over
// expanded dims, or written into zeros at the slice).
//
// A view records a node like any op. PyTorch also tracks views' bases so that an in-place
// change of a view rewrites the base's history; wick does not, so an in-place op on a view of
// a tensor that requires grad is not seen by the base's gradient (the version counter still
// refuses saved tensors changed that way).
#include "autograd/function.h"
#include "autograd/hooks.h"
#include "core/checks.h"
#include "core/host_upload.h"
#include "core/tensor_ops.h"
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

void record_view(const Tensor& t, const Tensor& out) {
  record("ViewBackward0", {t}, out, {},
         [s = DimVector(t.sizes())](BackwardContext& c) -> variable_list { return {c.grad().reshape(s)}; });
}

void record_reshape(const Tensor& t, const Tensor& out) {
  const bool aliased = out.impl()->storage() == t.impl()->storage();
  record(aliased ? "ViewBackward0" : "UnsafeViewBackward0", {t}, out, {},
         [s = DimVector(t.sizes())](BackwardContext& c) -> variable_list { return {c.grad().reshape(s)}; });
}

void record_permute(const Tensor& t, const Tensor& out, IntArrayRef dims) {
  DimVector inverse(dims.size(), 0);
  for (size_t i = 0; i < dims.size(); ++i)
    inverse[size_t(wick::detail::wrap_dim(dims[i], t.dim(), "permute"))] = int64_t(i);
  record("PermuteBackward0", {t}, out, {},
         [inverse](BackwardContext& c) -> variable_list { return {c.grad().permute(inverse)}; });
}

void record_transpose(const Tensor& t, const Tensor& out, int64_t d0, int64_t d1, const char* name) {
  record(name, {t}, out, {},
         [d0, d1](BackwardContext& c) -> variable_list { return {c.grad().transpose(d0, d1)}; });
}

void record_t(const Tensor& self, const Tensor& out, const char* name) {
  record(name, {self}, out, {}, [](BackwardContext& c) -> variable_list { return {c.grad().t()}; });
}

void record_unsqueeze(const Tensor& t, const Tensor& out, const char* name) {
  record(name, {t}, out, {},
         [s = DimVector(t.sizes())](BackwardContext& c) -> variable_list { return {c.grad().reshape(s)}; });
}

void record_squeeze(const Tensor& t, const Tensor& out, const char* name) {
  record(name, {t}, out, {},
         [s = DimVector(t.sizes())](BackwardContext& c) -> variable_list { return {c.grad().reshape(s)}; });
}

void record_squeeze(const Tensor& t, const Tensor& out, int64_t, const char* name) {
  record(name, {t}, out, {},
         [s = DimVector(t.sizes())](BackwardContext& c) -> variable_list { return {c.grad().reshape(s)}; });
}

void record_expand(const Tensor& t, const Tensor& out) {
  record("ExpandBackward0", {t}, out, {},
         [s = DimVector(t.sizes())](BackwardContext& c) -> variable_list { return {sum_to(c.grad(), s)}; });
}

void record_narrow(const Tensor& t, const Tensor& out, int64_t d, int64_t start, int64_t length) {
  d = wick::detail::wrap_dim(d, t.dim(), "narrow");
  if (start < 0) start += t.size(d);
  record(
      "SliceBackward0", {t}, out, {},
      [s = DimVector(t.sizes()), d, start, length](BackwardContext& c) -> variable_list {
        return {scatter_into_zeros(c.grad(), s, [&](const Tensor& z) { return z.narrow(d, start, length); })};
      });
}

// The gradient written on the same diagonal of zeros of t's sizes (a copy into a view, which
// records under create_graph).
void record_diagonal(const Tensor& t, const Tensor& out, int64_t offset, int64_t d1, int64_t d2) {
  record("DiagonalBackward0", {t}, out, {},
         [s = DimVector(t.sizes()), offset, d1, d2](BackwardContext& c) -> variable_list {
           Tensor gin = wick::zeros(s, c.grad().options());
           gin.diagonal(offset, d1, d2).copy_(c.grad());
           return {gin};
         });
}

// Each window's gradient added back at its elements' positions (windows overlap when step <
// size): the window dim moved beside d and merged with it, then index_add at w step + j.
void record_unfold(const Tensor& t, const Tensor& out, int64_t d, int64_t size, int64_t step) {
  record("UnfoldBackward0", {t}, out, {},
         [s = DimVector(t.sizes()), d, size, step](BackwardContext& c) -> variable_list {
           const Tensor& g = c.grad();
           if (s.empty()) return {g.sum()};  // a 0-dim t unfolded as [size], size 0 or 1
           const DimVector& in = s;
           const int64_t k = int64_t(in.size()), windows = g.size(d);
           DimVector order;
           for (int64_t i = 0; i < k; ++i) {
             order.push_back(i);
             if (i == d) order.push_back(k);
           }
           DimVector merged(in);
           merged[size_t(d)] = windows * size;
           const Tensor flat = g.permute(order).reshape(merged);
           std::vector<int64_t> pos;
           pos.reserve(size_t(windows * size));
           for (int64_t w = 0; w < windows; ++w)
             for (int64_t j = 0; j < size; ++j) pos.push_back(w * step + j);
           const Tensor index = wick::detail::to_device_async(wick::tensor(pos), g.device());
           const Tensor gin = wick::zeros(in, g.options()).index_add(d, index, flat);
           return {gin};
         });
}

void record_select(const Tensor& t, const Tensor& out, int64_t d, int64_t index) {
  record("SelectBackward0", {t}, out, {},
         [s = DimVector(t.sizes()), d, index](BackwardContext& c) -> variable_list {
           return {scatter_into_zeros(c.grad(), s, [&](const Tensor& z) { return z.select(d, index); })};
         });
}

namespace {

// One node for every piece of t (output i is outs[i]): join(grads) puts the pieces' gradients
// back together, a piece without one (not used on the way to the loss) given zeros. One pass
// over the input's gradient, where a node per piece wrote each into zeros of the whole and the
// engine added them up.
template <class Join>
void record_pieces(const char* name, const Tensor& t, const std::vector<Tensor>& outs, Join join) {
  if (outs.empty() || !detail::any_recordable({outs[0]}, {t})) return;
  for (const Tensor& o : outs)
    if (o.is_same(t)) return;
  std::vector<DimVector> shapes;
  shapes.reserve(outs.size());
  for (const Tensor& o : outs) shapes.emplace_back(o.sizes());
  auto formula = [shapes = std::move(shapes), join](BackwardContext& c) -> variable_list {
    TensorOptions opts;
    for (size_t i = 0; i < shapes.size(); ++i)
      if (c.grad(i).defined()) opts = c.grad(i).options();
    std::vector<Tensor> parts;
    parts.reserve(shapes.size());
    for (size_t i = 0; i < shapes.size(); ++i)
      parts.push_back(c.grad(i).defined() ? c.grad(i) : wick::zeros(shapes[i], opts));
    return {join(parts)};
  };
  auto node = std::make_shared<FunctionNode<decltype(formula)>>(name, std::move(formula));
  node->num_outputs_ = uint32_t(outs.size());
  detail::init_node(*node, {t});
  for (size_t i = 0; i < outs.size(); ++i) set_history(outs[i], node, uint32_t(i));
}

}  // namespace

namespace {

// The pieces' gradients as one tensor without a copy when they already lie side by side in one
// buffer as split would have cut it (cuDNN attention's dq, dk, dv of a fused qkv projection,
// core/cudnn_attention.cpp): one storage and dtype, the same strides and sizes but along d,
// piece i + 1 starting where piece i ends along d, the whole non-overlapping and dense. cat
// would copy those same values into a new tensor. Not under create_graph (the pieces have a
// history then, which a view made here would not carry).
Tensor side_by_side(const std::vector<Tensor>& parts, int64_t d) {
  if (parts.size() < 2 || creating_graph()) return {};
  const Tensor& a = parts[0];
  if (!a.defined() || d < 0 || d >= a.dim()) return {};
  int64_t next = a.storage_offset(), total = 0;
  for (const Tensor& p : parts) {
    if (!p.defined() || p.dim() != a.dim() || p.dtype() != a.dtype() ||
        p.impl()->storage().get() != a.impl()->storage().get() || p.storage_offset() != next)
      return {};
    for (int64_t i = 0; i < a.dim(); ++i)
      if (p.stride(i) != a.stride(i) || (i != d && p.size(i) != a.size(i))) return {};
    next += p.size(d) * p.stride(d);
    total += p.size(d);
  }
  DimVector sizes(a.sizes());
  sizes[size_t(d)] = total;
  Tensor whole = wick::detail::make_view(a, sizes, a.strides(), a.storage_offset());
  return wick::detail::is_non_overlapping_and_dense(whole) ? whole : Tensor();
}

}  // namespace

void record_split(const Tensor& t, const std::vector<Tensor>& outs, int64_t d, const char* name) {
  record_pieces(name, t, outs, [d](const std::vector<Tensor>& g) {
    const Tensor whole = side_by_side(g, d);
    return whole.defined() ? whole : wick::cat(g, d);
  });
}

void record_unbind(const Tensor& t, const std::vector<Tensor>& outs, int64_t d) {
  record_pieces("UnbindBackward0", t, outs, [d](const std::vector<Tensor>& g) { return wick::stack(g, d); });
}

void record_slice(const Tensor& t, const Tensor& out, int64_t d, std::optional<int64_t> start,
                  std::optional<int64_t> end, int64_t step) {
  record("SliceBackward0", {t}, out, {},
         [s = DimVector(t.sizes()), d, start, end, step](BackwardContext& c) -> variable_list {
           return {scatter_into_zeros(c.grad(), s,
                                      [&](const Tensor& z) { return z.slice(d, start, end, step); })};
         });
}

}  // namespace wick::autograd
