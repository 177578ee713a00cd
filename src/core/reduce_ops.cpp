// max min argmax argmin var std norm, over all elements or some dims. Core plans the input as
// [outer, n, inner] (dim_plan.h; no copy for contiguous inputs reduced over adjacent dims, nor
// for permuted ones that are contiguous in some dim order) and the backend's reduce runs. With
// grad, the result is computed once and then recorded (autograd/hooks.h).
#include <cmath>

#include "autograd/hooks.h"
#include "core/autocast.h"
#include "core/dim_plan.h"
#include "core/kernel_table.h"
#include "core/checks.h"
#include "core/tensor_ops.h"
#include "wick/ops.h"

namespace wick {

using namespace detail;

namespace {

// Runs op over dims; values and/or indices are allocated as requested.
void run_reduce(ReduceOp op, const DimPlan& p, const Tensor& values, const Tensor& indices, double arg,
                Device device, const char* name) {
  kernel<&KernelTable::reduce>(device, name)(op, values, indices, p.in, arg);
}

void check_nonempty(const Tensor& t, std::optional<int64_t> dim, const char* op) {
  if (!dim) {
    WICK_CHECK(t.numel() > 0, ValueError, op,
               "Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the "
               "'dim' argument.");
    return;
  }
  const int64_t d = wrap_dim(*dim, t.dim(), op);
  WICK_CHECK(t.dim() == 0 || t.size(d) > 0, IndexError, op, "Expected reduction dim ", d,
             " to have non-zero size.");
}

Tensor select_all(ReduceOp op, const Tensor& t, const char* name) {
  check_nonempty(t, std::nullopt, name);
  DimPlan p = plan_dims(t, {}, false, name);
  Tensor v = empty({}, t.options());
  run_reduce(op, p, v, {}, 0, t.device(), name);
  return v;
}

std::tuple<Tensor, Tensor> select_dim(ReduceOp op, const Tensor& t, int64_t dim, bool keepdim,
                                      const char* name) {
  check_nonempty(t, dim, name);
  DimPlan p = plan_along(t, dim, keepdim, name);
  Tensor v = empty(p.out_sizes, t.options());
  Tensor i = empty(p.out_sizes, TensorOptions(kInt64).device(t.device()));
  run_reduce(op, p, v, i, 0, t.device(), name);
  return {v, i};
}

Tensor arg_select(ReduceOp op, const Tensor& t, std::optional<int64_t> dim, bool keepdim, const char* name) {
  WICK_CHECK(t.dtype() != kBool, TypeError, name, "\"", name, "\" not implemented for 'bool'");
  check_nonempty(t, dim, name);
  DimPlan p = dim ? plan_along(t, *dim, keepdim, name) : plan_dims(t, {}, keepdim, name);
  Tensor i = empty(p.out_sizes, TensorOptions(kInt64).device(t.device()));
  run_reduce(op, p, {}, i, 0, t.device(), name);
  return i;
}

Tensor moment(ReduceOp op, const Tensor& t, IntArrayRef dims, double correction, bool keepdim,
              const char* name) {
  WICK_CHECK(is_floating_point(t.dtype()), TypeError, name,
             "std and var only support floating point and complex dtypes (got ", t.dtype(), ")");
  DimPlan p = plan_dims(t, dims, keepdim, name);
  Tensor v = empty(p.out_sizes, t.options());
  run_reduce(op, p, v, {}, correction, t.device(), name);
  return v;
}

Tensor norm_impl(const Tensor& t, const Scalar& p, IntArrayRef dims, bool keepdim) {
  WICK_CHECK(is_floating_point(t.dtype()), TypeError, "norm",
             "input dtype should be either floating point or complex. Got ", t.dtype(), " instead.");
  const double ord = p.to<double>();
  DimPlan plan = plan_dims(t, dims, keepdim, "norm");
  WICK_CHECK(plan.n > 0 || !(ord < 0 || std::isinf(ord)), IndexError, "norm",
             "cannot compute the ", ord, " norm on an empty tensor because the operation does not have an identity");
  Tensor v = empty(plan.out_sizes, t.options());
  run_reduce(ReduceOp::Norm, plan, v, {}, ord, t.device(), "norm");
  return v;
}

// var, std and norm computed once, then recorded when t needs grad.
// amax / amin: the values of max / min over dims (empty: all), NaN propagating, no indices.
Tensor extremum_values(ReduceOp op, const Tensor& t, IntArrayRef dims, bool keepdim, const char* name) {
  DimPlan p = plan_dims(t, dims, keepdim, name);
  if (p.n == 0) [[unlikely]] {  // nothing to take the max of: a named dim of size 0, or an empty t
    for (int64_t d : dims) check_nonempty(t, d, name);
    check_nonempty(t, std::nullopt, name);
  }
  Tensor v = empty(p.out_sizes, t.options());
  run_reduce(op, p, v, {}, 0, t.device(), name);
  return v;
}

Tensor amax_amin(const Tensor& t, IntArrayRef dims, bool keepdim, bool is_max) {
  const char* name = is_max ? "amax" : "amin";
  check_defined(t, name, "self");
  const bool grad = needs_grad(t);
  Tensor out = forward_once(
      grad, [&] { return extremum_values(is_max ? ReduceOp::Max : ReduceOp::Min, t, dims, keepdim, name); });
  if (grad) [[unlikely]] autograd::record_amax(t, out, dims, keepdim, is_max);
  return out;
}

Tensor var_recorded(const Tensor& t, IntArrayRef dims, double correction, bool keepdim) {
  const bool grad = needs_grad(t);
  Tensor out = forward_once(grad, [&] { return moment(ReduceOp::Var, t, dims, correction, keepdim, "var"); });
  if (grad) [[unlikely]] autograd::record_var(t, out, dims, correction, keepdim);
  return out;
}
Tensor std_recorded(const Tensor& t, IntArrayRef dims, double correction, bool keepdim) {
  const bool grad = needs_grad(t);
  Tensor out = forward_once(grad, [&] { return moment(ReduceOp::Std, t, dims, correction, keepdim, "std"); });
  if (grad) [[unlikely]] autograd::record_std(t, out, dims, correction, keepdim);
  return out;
}
Tensor norm_recorded(const Tensor& t, const Scalar& p, IntArrayRef dims, bool keepdim) {
  const bool grad = needs_grad(t);
  Tensor out = forward_once(grad, [&] { return norm_impl(t, p, dims, keepdim); });
  if (grad) [[unlikely]] autograd::record_norm(t, out, p, dims, keepdim);
  return out;
}

}  // namespace

Tensor max(const Tensor& t) {
  check_defined(t, "max", "self");
  const bool grad = needs_grad(t);
  Tensor out = forward_once(grad, [&] { return select_all(ReduceOp::Max, t, "max"); });
  if (grad) [[unlikely]] autograd::record_max(t, out);
  return out;
}
Tensor min(const Tensor& t) {
  check_defined(t, "min", "self");
  const bool grad = needs_grad(t);
  Tensor out = forward_once(grad, [&] { return select_all(ReduceOp::Min, t, "min"); });
  if (grad) [[unlikely]] autograd::record_min(t, out);
  return out;
}
std::tuple<Tensor, Tensor> max(const Tensor& t, int64_t dim, bool keepdim) {
  check_defined(t, "max", "self");
  const bool grad = needs_grad(t);
  auto r = forward_once(grad, [&] { return select_dim(ReduceOp::Max, t, dim, keepdim, "max"); });
  if (grad) [[unlikely]] autograd::record_max(t, std::get<0>(r), std::get<1>(r), dim, keepdim);
  return r;
}
std::tuple<Tensor, Tensor> min(const Tensor& t, int64_t dim, bool keepdim) {
  check_defined(t, "min", "self");
  const bool grad = needs_grad(t);
  auto r = forward_once(grad, [&] { return select_dim(ReduceOp::Min, t, dim, keepdim, "min"); });
  if (grad) [[unlikely]] autograd::record_min(t, std::get<0>(r), std::get<1>(r), dim, keepdim);
  return r;
}
Tensor argmax(const Tensor& t, std::optional<int64_t> dim, bool keepdim) {
  check_defined(t, "argmax", "self");
  return arg_select(ReduceOp::ArgMax, t, dim, keepdim, "argmax");
}
Tensor argmin(const Tensor& t, std::optional<int64_t> dim, bool keepdim) {
  check_defined(t, "argmin", "self");
  return arg_select(ReduceOp::ArgMin, t, dim, keepdim, "argmin");
}

Tensor var(const Tensor& t, IntArrayRef dims, bool unbiased, bool keepdim) {
  check_defined(t, "var", "self");
  return var_recorded(t, dims, unbiased ? 1.0 : 0.0, keepdim);
}
Tensor var(const Tensor& t, IntArrayRef dims, double correction, bool keepdim) {
  check_defined(t, "var", "self");
  return var_recorded(t, dims, correction, keepdim);
}
Tensor std(const Tensor& t, IntArrayRef dims, bool unbiased, bool keepdim) {
  check_defined(t, "std", "self");
  return std_recorded(t, dims, unbiased ? 1.0 : 0.0, keepdim);
}
Tensor std(const Tensor& t, IntArrayRef dims, double correction, bool keepdim) {
  check_defined(t, "std", "self");
  return std_recorded(t, dims, correction, keepdim);
}

Tensor norm(const Tensor& t, const Scalar& p) {
  check_defined(t, "norm", "self");
  if (autocast::active()) [[unlikely]]
    return autocast::run(
        autocast::Policy::Fp32, autocast::Policy::None, "norm",
        [&](const Tensor& x) { return wick::norm(x, p); }, t);
  return norm_recorded(t, p, {}, false);
}
Tensor amax(const Tensor& t, IntArrayRef dims, bool keepdim) { return amax_amin(t, dims, keepdim, true); }
Tensor amin(const Tensor& t, IntArrayRef dims, bool keepdim) { return amax_amin(t, dims, keepdim, false); }
Tensor Tensor::amax(IntArrayRef dims, bool keepdim) const { return wick::amax(*this, dims, keepdim); }
Tensor Tensor::amin(IntArrayRef dims, bool keepdim) const { return wick::amin(*this, dims, keepdim); }

Tensor norm(const Tensor& t, const Scalar& p, IntArrayRef dims, bool keepdim) {
  check_defined(t, "norm", "self");
  if (autocast::active()) [[unlikely]]
    return autocast::run(
        autocast::Policy::Fp32, autocast::Policy::None, "norm",
        [&](const Tensor& x) { return wick::norm(x, p, dims, keepdim); }, t);
  return norm_recorded(t, p, dims, keepdim);
}

// ---- methods

Tensor Tensor::max() const { return wick::max(*this); }
Tensor Tensor::min() const { return wick::min(*this); }
std::tuple<Tensor, Tensor> Tensor::max(int64_t dim, bool keepdim) const {
  return wick::max(*this, dim, keepdim);
}
std::tuple<Tensor, Tensor> Tensor::min(int64_t dim, bool keepdim) const {
  return wick::min(*this, dim, keepdim);
}
Tensor Tensor::argmax(std::optional<int64_t> dim, bool keepdim) const {
  return wick::argmax(*this, dim, keepdim);
}
Tensor Tensor::argmin(std::optional<int64_t> dim, bool keepdim) const {
  return wick::argmin(*this, dim, keepdim);
}
Tensor Tensor::var(IntArrayRef dims, bool unbiased, bool keepdim) const {
  return wick::var(*this, dims, unbiased, keepdim);
}
Tensor Tensor::var(IntArrayRef dims, double correction, bool keepdim) const {
  check_defined(*this, "var", "self");
  return wick::var(*this, dims, correction, keepdim);
}
Tensor Tensor::std(IntArrayRef dims, bool unbiased, bool keepdim) const {
  return wick::std(*this, dims, unbiased, keepdim);
}
Tensor Tensor::std(IntArrayRef dims, double correction, bool keepdim) const {
  check_defined(*this, "std", "self");
  return wick::std(*this, dims, correction, keepdim);
}
Tensor Tensor::norm(const Scalar& p) const { return wick::norm(*this, p); }
Tensor Tensor::norm(const Scalar& p, IntArrayRef dims, bool keepdim) const {
  return wick::norm(*this, p, dims, keepdim);
}

}  // namespace wick
