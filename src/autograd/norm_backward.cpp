// The backward of the fused normalizations (layer_norm, rms_norm, and batch_norm through cuDNN),
// recorded by nn::functional after their one-call forward (hooks.h): the norm_backward entry or
// cuDNN's backward, or, when the backward is itself recorded (create_graph), the same gradients
// from differentiable ops of x, which recompute the statistics so that their dependence on x is
// part of the recorded graph.
#include "autograd/function.h"
#include "autograd/hooks.h"
#include "core/cudnn_batch_norm.h"
#include "core/kernel_table.h"
#include "wick/ops.h"

namespace wick::autograd {

namespace {

// Gradients of y = layer_norm(x) (rms_norm when rms) over x's last k dims, in ops that record.
// 16-bit floats compute in float32 as the kernels do.
variable_list composed_grads(bool rms, const Tensor& g, const Tensor& x, const Tensor& w, Dtype bias_dtype,
                             bool need_x, bool need_w, bool need_b, int64_t k, double eps) {
  const bool low = x.dtype() == kFloat16 || x.dtype() == kBFloat16;
  const Dtype c = low ? kFloat32 : x.dtype();
  const Tensor xf = x.dtype() == c ? x : x.to(c);
  const Tensor gf = g.dtype() == c ? g : g.to(c);
  DimVector dims, lead;
  for (int64_t d = x.dim() - k; d < x.dim(); ++d) dims.push_back(d);
  for (int64_t d = 0; d < x.dim() - k; ++d) lead.push_back(d);
  const Tensor xc = rms ? xf : xf - xf.mean(dims, true);
  const Tensor rs = wick::rsqrt((xc * xc).mean(dims, true) + eps);
  const Tensor xhat = xc * rs;
  auto over_rows = [&](const Tensor& t) { return lead.empty() ? t : t.sum(lead); };
  Tensor dx, dw, db;
  if (need_x) {
    const Tensor gw = w.defined() ? gf * (w.dtype() == c ? w : w.to(c)) : gf;
    Tensor inner = gw - xhat * (gw * xhat).mean(dims, true);
    if (!rms) inner = inner - gw.mean(dims, true);
    dx = rs * inner;
    if (dx.dtype() != x.dtype()) dx = dx.to(x.dtype());
  }
  if (need_w) {
    dw = over_rows(gf * xhat);
    if (dw.dtype() != w.dtype()) dw = dw.to(w.dtype());
  }
  if (need_b) {
    db = over_rows(gf);
    if (db.dtype() != bias_dtype) db = db.to(bias_dtype);
  }
  if (rms) return {dx, dw};
  return {dx, dw, db};
}

// Gradients of y = batch_norm(x) in training mode (statistics over every dim but 1), in ops
// that record; 16-bit floats compute in float32 as cuDNN does.
variable_list composed_batch_norm_grads(const Tensor& g, const Tensor& x, const Tensor& w, Dtype bias_dtype,
                                        bool need_x, bool need_w, bool need_b, double eps) {
  const bool low = x.dtype() == kFloat16 || x.dtype() == kBFloat16;
  const Dtype c = low ? kFloat32 : x.dtype();
  const Tensor xf = x.dtype() == c ? x : x.to(c);
  const Tensor gf = g.dtype() == c ? g : g.to(c);
  DimVector dims, shape(size_t(x.dim()), 1);
  shape[1] = x.size(1);
  for (int64_t d = 0; d < x.dim(); ++d)
    if (d != 1) dims.push_back(d);
  const Tensor xc = xf - xf.mean(dims, true);
  const Tensor rs = wick::rsqrt((xc * xc).mean(dims, true) + eps);
  const Tensor xhat = xc * rs;
  Tensor dx, dw, db;
  if (need_x) {
    const Tensor gw = w.defined() ? gf * (w.dtype() == c ? w : w.to(c)).view(shape) : gf;
    dx = rs * (gw - gw.mean(dims, true) - xhat * (gw * xhat).mean(dims, true));
    if (dx.dtype() != x.dtype()) dx = dx.to(x.dtype());
  }
  if (need_w) {
    dw = (gf * xhat).sum(dims);
    if (dw.dtype() != w.dtype()) dw = dw.to(w.dtype());
  }
  if (need_b) {
    db = gf.sum(dims);
    if (db.dtype() != bias_dtype) db = db.to(bias_dtype);
  }
  return {dx, dw, db};
}

// The rows m and row length n of x over its last k dims, and the parameters' gradients of the
// fused backward kernels allocated (zeros without rows: nothing is summed into them).
struct NormShape {
  int64_t m, n;
  Tensor dw, db;
};
NormShape norm_shape(const Tensor& x, int64_t k, const Tensor& w, bool need_w, bool need_b, Dtype bias_dtype) {
  int64_t n = 1, m = 1;
  for (int64_t d = x.dim() - k; d < x.dim(); ++d) n *= x.size(d);
  for (int64_t d = 0; d < x.dim() - k; ++d) m *= x.size(d);
  const IntArrayRef shape(x.sizes().data() + (x.dim() - k), size_t(k));
  auto make = [&](TensorOptions o) { return m == 0 ? zeros(shape, o) : empty(shape, o); };
  return {m, n, need_w ? make(w.options()) : Tensor(), need_b ? make(x.options().dtype(bias_dtype)) : Tensor()};
}

}  // namespace

void record_batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& y,
                       const Tensor& save_mean, const Tensor& save_invstd, double eps) {
  const bool has_w = weight.defined(), has_b = bias.defined();
  const Dtype bias_dtype = has_b ? bias.dtype() : kFloat32;
  auto formula = [has_w, has_b, bias_dtype, eps](BackwardContext& c) -> variable_list {
    const Tensor x = c.saved(0), w = c.saved(1);
    const bool need_x = c.needs(0), need_w = has_w && c.needs(1), need_b = has_b && c.needs(2);
    if (creating_graph()) return composed_batch_norm_grads(c.grad(), x, w, bias_dtype, need_x, need_w, need_b, eps);
    const Tensor& g = c.grad();
    const Tensor dy = (g.dtype() == x.dtype() ? g : g.to(x.dtype())).expand(x.sizes()).contiguous();
    auto [dx, dw, db] = wick::detail::cuda_cudnn_batch_norm_backward(dy, x, w, c.saved(2), c.saved(3), eps);
    return {need_x ? dx : Tensor(), need_w ? dw : Tensor(), need_b ? db : Tensor()};
  };
  record("CudnnBatchNormBackward0", {x, weight, bias}, y, {x, weight, save_mean, save_invstd}, std::move(formula));
}

void record_norm_layer(bool rms, const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& y,
                       const Tensor& mean, const Tensor& rstd, int64_t k, double eps) {
  const bool has_w = weight.defined(), has_b = bias.defined();
  const Dtype bias_dtype = has_b ? bias.dtype() : x.dtype();
  auto formula = [rms, has_w, has_b, bias_dtype, k, eps](BackwardContext& c) -> variable_list {
    const Tensor x = c.saved(0), w = c.saved(1);
    const bool need_x = c.needs(0), need_w = has_w && c.needs(1), need_b = has_b && c.needs(2);
    if (creating_graph()) return composed_grads(rms, c.grad(), x, w, bias_dtype, need_x, need_w, need_b, k, eps);
    auto [m, n, dw, db] = norm_shape(x, k, w, need_w, need_b, bias_dtype);
    Tensor dx;
    if (need_x) dx = empty(x.sizes(), x.options());
    if (m > 0 && n > 0 && (need_x || need_w || need_b)) {
      const Tensor& g = c.grad();
      const Tensor dy = (g.dtype() == x.dtype() ? g : g.to(x.dtype())).expand(x.sizes()).contiguous();
      const Tensor xc = x.contiguous();
      auto flat = [](const Tensor& t, int64_t size) { return t.defined() ? t.view({size}) : t; };
      const Tensor wc = w.defined() ? w.contiguous() : w;
      wick::detail::kernel<&wick::detail::KernelTable::norm_backward>(
          x.device(), rms ? "rms_norm_backward" : "layer_norm_backward")(
          rms, need_x ? dx.view({m, n}) : Tensor(), flat(dw, n), flat(db, n), dy.view({m, n}), xc.view({m, n}),
          c.saved(2), c.saved(3), flat(wc, n));
    }
    if (rms) return {dx, dw};
    return {dx, dw, db};
  };
  if (rms) record("FusedRmsNormBackward0", {x, weight}, y, {x, weight, mean, rstd}, std::move(formula));
  else record("NativeLayerNormBackward0", {x, weight, bias}, y, {x, weight, mean, rstd}, std::move(formula));
}

void record_add_norm(bool rms, const Tensor& x, const Tensor& delta, const Tensor& weight, const Tensor& bias,
                     const Tensor& s, const Tensor& y, const Tensor& mean, const Tensor& rstd, int64_t k, double eps) {
  // Inputs x, delta, weight, bias (any may be undefined but x); outputs s then y, or y alone
  // when delta is undefined (s is then x, which the node saves as the kernel read it).
  const bool has_d = delta.defined(), has_w = weight.defined(), has_b = bias.defined();
  if (!wick::autograd::detail::any_recordable({y}, {x, delta, weight, bias})) return;
  const Dtype bias_dtype = has_b ? bias.dtype() : kFloat32, d_dtype = has_d ? delta.dtype() : y.dtype();
  const Dtype y_dtype = y.dtype();
  auto formula = [rms, has_d, has_w, has_b, bias_dtype, d_dtype, y_dtype, k, eps](BackwardContext& c) -> variable_list {
    const Tensor s = c.saved(0), w = c.saved(1);
    const bool need_x = c.needs(0), need_d = has_d && c.needs(1), need_w = has_w && c.needs(2),
               need_b = has_b && c.needs(3);
    const Tensor gs = has_d ? c.grad(0) : Tensor();
    const Tensor& gy = c.grad(has_d ? 1 : 0);
    Tensor dx, dd, dw, db;
    if (!gy.defined() || creating_graph()) {
      // The composed gradients: gs, plus layer_norm's (in ops that record under create_graph).
      Tensor t = gs;
      if (gy.defined()) {
        variable_list g = composed_grads(rms, gy, s, w, bias_dtype, need_x || need_d, need_w, need_b, k, eps);
        if (g[0].defined()) t = t.defined() ? t + g[0] : g[0];
        dw = g[1];
        if (!rms) db = g[2];
      }
      if (need_x) dx = t;
      if (need_d && t.defined()) dd = t.dtype() == d_dtype ? t : t.to(d_dtype);
      return {dx, dd, dw, db};
    }
    const NormShape ns = norm_shape(s, k, w, need_w, need_b, bias_dtype);
    const int64_t m = ns.m, n = ns.n;
    dw = ns.dw;
    db = ns.db;
    if (need_x) dx = empty(s.sizes(), s.options());
    if (need_d) dd = empty(s.sizes(), s.options().dtype(d_dtype));
    if (m > 0 && n > 0 && (need_x || need_d || need_w || need_b)) {
      const Tensor gyc = (gy.dtype() == y_dtype ? gy : gy.to(y_dtype)).expand(s.sizes()).contiguous();
      Tensor gsc;
      if (gs.defined()) gsc = (gs.dtype() == s.dtype() ? gs : gs.to(s.dtype())).expand(s.sizes()).contiguous();
      auto flat = [](const Tensor& t, int64_t size) { return t.defined() ? t.view({size}) : t; };
      auto rows = [&](const Tensor& t) { return t.defined() ? t.view({m, n}) : t; };
      const Tensor wc = w.defined() ? w.contiguous() : w;
      wick::detail::kernel<&wick::detail::KernelTable::add_norm_backward>(
          s.device(), rms ? "add_rms_norm_backward" : "add_layer_norm_backward")(
          rms, rows(dx), rows(dd), flat(dw, n), flat(db, n), rows(gyc), rows(gsc), rows(s), c.saved(2), c.saved(3),
          flat(wc, n));
    }
    return {dx, dd, dw, db};
  };
  const char* name = rms ? "AddRmsNormBackward0" : "AddLayerNormBackward0";
  auto node = std::make_shared<FunctionNode<decltype(formula)>>(name, std::move(formula));
  node->num_outputs_ = has_d ? 2 : 1;
  node->saved_.emplace_back(wick::autograd::detail::to_save(s), has_d, 0);
  node->saved_.emplace_back(wick::autograd::detail::to_save(weight), false);
  node->saved_.emplace_back(mean, false);
  node->saved_.emplace_back(rstd, false);
  wick::autograd::detail::init_node(*node, {x, delta, weight, bias});
  if (has_d) set_history(s, node, 0);
  set_history(y, node, has_d ? 1 : 0);
}

}  // namespace wick::autograd
