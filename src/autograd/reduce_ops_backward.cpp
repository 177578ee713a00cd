// Backward formulas of softmax, log_softmax, max/min, var/std and norm, recorded by core's ops
// after their forward (hooks.h).
#include <algorithm>
#include <cmath>

#include "autograd/function.h"
#include "autograd/hooks.h"
#include "core/softmax.h"
#include "core/checks.h"
#include "wick/ops.h"

namespace wick::autograd {

namespace {

// The reduced dims of t, wrapped and sorted (all of them when dims is empty).
DimVector reduced(const Tensor& t, IntArrayRef dims, const char* op) {
  DimVector r;
  if (dims.empty()) {
    for (int64_t d = 0; d < t.dim(); ++d) r.push_back(d);
  } else {
    for (int64_t d : dims) r.push_back(wick::detail::wrap_dim(d, t.dim(), op));
    std::sort(r.begin(), r.end());
  }
  return r;
}

// A reduced result back in keepdim form, so it broadcasts against the input.
Tensor keep(Tensor r, IntArrayRef dims, bool keepdim, int64_t in_dim) {
  if (keepdim || in_dim == 0) return r;
  for (int64_t d : dims) r = r.unsqueeze(d);
  return r;
}

}  // namespace

// ---- softmax

Tensor log_softmax_grad(const Tensor& g, const Tensor& y, int64_t dim) {
  return g - wick::exp(y) * g.sum({dim}, /*keepdim=*/true);
}

void record_softmax(const Tensor& t, const Tensor& out, int64_t dim) {
  record("SoftmaxBackward0", {t}, out, {out}, [dim](BackwardContext& c) -> variable_list {
    if (creating_graph()) {  // y (g - sum(g y)), in ops that record
      Tensor g = c.grad(), y = c.saved(0);
      return {y * (g - (g * y).sum({dim}, /*keepdim=*/true))};
    }
    return {wick::detail::softmax_backward(false, c.grad(), c.saved(0), dim)};
  });
}

Tensor record_log_softmax(const Tensor& t, const Tensor& out, int64_t dim) {
  return record("LogSoftmaxBackward0", {t}, out, {out}, [dim](BackwardContext& c) -> variable_list {
    if (creating_graph()) return {log_softmax_grad(c.grad(), c.saved(0), dim)};
    return {wick::detail::softmax_backward(true, c.grad(), c.saved(0), dim)};
  });
}

// ---- max and min: the gradient goes to the selected elements (shared evenly among ties
// for the all-elements forms, to the returned index for the dim forms, as PyTorch does)

namespace {
// A NaN result was selected from the NaN elements (they are "equal" to it here).
Tensor select_all_backward(const Tensor& g, const Tensor& x, const Tensor& y) {
  Tensor mask = (x == y).to(g.dtype());
  if (is_floating_point(x.dtype())) mask = mask + x.isnan().to(g.dtype()) * y.isnan().to(g.dtype());
  return mask * (g / mask.sum());
}
}  // namespace

void record_max(const Tensor& t, const Tensor& out) {
  record("MaxBackward1", {t}, out, {t, out}, [](BackwardContext& c) -> variable_list {
    return {select_all_backward(c.grad(), c.saved(0), c.saved(1))};
  });
}

void record_min(const Tensor& t, const Tensor& out) {
  record("MinBackward1", {t}, out, {t, out}, [](BackwardContext& c) -> variable_list {
    return {select_all_backward(c.grad(), c.saved(0), c.saved(1))};
  });
}

void record_median(const Tensor& t, const Tensor& out) {
  record("MedianBackward0", {t}, out, {t, out}, [](BackwardContext& c) -> variable_list {
    return {select_all_backward(c.grad(), c.saved(0), c.saved(1))};
  });
}

namespace {
// name: the node; d: the dim, already wrapped.
void record_select_dim(const char* name, const Tensor& t, const Tensor& values, const Tensor& indices, int64_t d,
                       bool keepdim) {
  record(name, {t}, values, {indices},
         [d, keepdim, sizes = DimVector(t.sizes())](BackwardContext& c) -> variable_list {
           Tensor idx = c.saved(0), g = c.grad();
           if (sizes.empty()) return {g};
           if (!keepdim) {
             idx = idx.unsqueeze(d);
             g = g.unsqueeze(d);
           }
           return {gather_backward(g, d, idx, sizes)};
         });
}
}  // namespace

void record_median(const Tensor& t, const Tensor& values, const Tensor& indices, int64_t dim, bool keepdim) {
  record_select_dim("MedianBackward1", t, values, indices, wick::detail::wrap_dim(dim, t.dim(), "median"), keepdim);
}

void record_max(const Tensor& t, const Tensor& values, const Tensor& indices, int64_t dim, bool keepdim) {
  record_select_dim("MaxBackward0", t, values, indices, wick::detail::wrap_dim(dim, t.dim(), "max"), keepdim);
}
void record_min(const Tensor& t, const Tensor& values, const Tensor& indices, int64_t dim, bool keepdim) {
  record_select_dim("MinBackward0", t, values, indices, wick::detail::wrap_dim(dim, t.dim(), "min"), keepdim);
}

// ---- moments

void record_var(const Tensor& t, const Tensor& out, IntArrayRef dims, double correction, bool keepdim) {
  DimVector red = reduced(t, dims, "var");
  const int64_t n = out.numel() ? t.numel() / out.numel() : 0;
  record("VarBackward0", {t}, out, {t}, [red, keepdim, n, correction](BackwardContext& c) -> variable_list {
    Tensor x = c.saved(0);
    Tensor centered = x - x.mean(red, true);
    return {keep(c.grad(), red, keepdim, x.dim()) * centered * (2.0 / (double(n) - correction))};
  });
}

void record_std(const Tensor& t, const Tensor& out, IntArrayRef dims, double correction, bool keepdim) {
  DimVector red = reduced(t, dims, "std");
  const int64_t n = out.numel() ? t.numel() / out.numel() : 0;
  record("StdBackward0", {t}, out, {t, out},
         [red, keepdim, n, correction](BackwardContext& c) -> variable_list {
           Tensor x = c.saved(0);
           Tensor y = keep(c.saved(1), red, keepdim, x.dim());
           Tensor centered = x - x.mean(red, true);
           return {keep(c.grad(), red, keepdim, x.dim()) * centered / (y * (double(n) - correction))};
         });
}

// var_mean: one node for both results; each output's gradient adds its part (either may be
// missing when only one result was used).
void record_var_mean(const Tensor& t, const Tensor& var, const Tensor& mean, IntArrayRef dims, double correction,
                     bool keepdim) {
  if (!detail::any_recordable({var, mean}, {t})) return;
  DimVector red = reduced(t, dims, "var_mean");
  const int64_t n = var.numel() ? t.numel() / var.numel() : 0;
  auto formula = [red, keepdim, n, correction](BackwardContext& c) -> variable_list {
    Tensor x = c.saved(0);
    Tensor gx;
    if (c.grad(0).defined()) {
      Tensor centered = x - x.mean(red, true);
      gx = keep(c.grad(0), red, keepdim, x.dim()) * centered * (2.0 / (double(n) - correction));
    }
    if (c.grad(1).defined()) {
      Tensor gm = keep(c.grad(1), red, keepdim, x.dim()) / double(n);
      gx = gx.defined() ? gx + gm : gm.expand(x.sizes()).contiguous();
    }
    return {gx};
  };
  auto node = std::make_shared<FunctionNode<decltype(formula)>>("VarMeanBackward0", std::move(formula));
  node->num_outputs_ = 2;
  node->saved_.emplace_back(detail::to_save(t), false);
  detail::init_node(*node, {t});
  set_history(var, node, 0);
  set_history(mean, node, 1);
}

// ---- norm

void record_amax(const Tensor& t, const Tensor& out, IntArrayRef dims, bool keepdim, bool is_max) {
  DimVector red = reduced(t, dims, is_max ? "amax" : "amin");
  record(is_max ? "AmaxBackward0" : "AminBackward0", {t}, out, {t, out},
         [red, keepdim](BackwardContext& c) -> variable_list {
           Tensor x = c.saved(0);
           Tensor y = keep(c.saved(1), red, keepdim, x.dim());
           Tensor g = keep(c.grad(), red, keepdim, x.dim());
           Tensor mask = (x == y).to(g.dtype());
           Tensor count = x.dim() == 0 ? mask : mask.sum(red, true);
           return {g * mask / count};
         });
}

namespace {

// The product of every element of t along d but the one at each position, zero-safe: the
// products before it times those after it (two running products, one from each end).
Tensor prod_of_others(const Tensor& x, int64_t d) {
  const int64_t n = x.size(d);
  if (n <= 1) return wick::ones_like(x);
  Tensor one = wick::ones_like(x.narrow(d, 0, 1));
  Tensor before = wick::cat({one, wick::cumprod(x, d).narrow(d, 0, n - 1)}, d);
  Tensor after = wick::cat({wick::cumprod(x.flip({d}), d).flip({d}).narrow(d, 1, n - 1), one}, d);
  return before * after;
}

}  // namespace

void record_prod(const Tensor& t, const Tensor& out, std::optional<int64_t> dim, bool keepdim) {
  record(dim ? "ProdBackward1" : "ProdBackward0", {t}, out, {t}, [dim, keepdim](BackwardContext& c) -> variable_list {
    Tensor x = c.saved(0), g = c.grad();
    if (!dim) {
      if (x.dim() == 0) return {g.to(x.dtype())};
      return {(g * prod_of_others(x.reshape({-1}), 0)).reshape(x.sizes())};
    }
    if (!keepdim) g = g.unsqueeze(*dim);
    return {g * prod_of_others(x, *dim)};
  });
}

void record_norm(const Tensor& t, const Tensor& out, const Scalar& p, IntArrayRef dims, bool keepdim) {
  DimVector red = reduced(t, dims, "norm");
  record("NormBackward1", {t}, out, {t, out}, [red, keepdim, p](BackwardContext& c) -> variable_list {
    Tensor x = c.saved(0);
    Tensor y = keep(c.saved(1), red, keepdim, x.dim());
    Tensor g = keep(c.grad(), red, keepdim, x.dim());
    const double pv = p.to<double>();
    Tensor zero = wick::zeros_like(x);
    if (pv == 0) return {zero};
    if (pv == 1) return {g * wick::sign(x)};
    if (std::isinf(pv)) {  // the gradient goes to the elements of largest (smallest) |x|, shared
      Tensor mask = (x.abs() == y).to(x.dtype());
      return {g * wick::sign(x) * mask / mask.sum(red, true)};
    }
    if (pv == 2) return {wick::where(y == 0, zero, g * x / y)};
    Tensor scaled = wick::sign(x) * x.abs().pow(pv - 1);
    return {wick::where(y == 0, zero, g * scaled / y.pow(pv - 1))};
  });
}

}  // namespace wick::autograd
