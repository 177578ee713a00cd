// sum and mean over all or some dims. Core plans the input as [outer, n, inner] (dim_plan.h:
// a view of t whenever its layout allows) and the backend's reduce runs over n. Accumulation
// dtypes follow PyTorch: integers and bool sum in int64, 16-bit floats accumulate in float32.
// With grad, the result is computed once and then recorded (autograd/hooks.h).
#include "autograd/hooks.h"
#include "core/autocast.h"
#include "core/dim_plan.h"
#include "core/kernel_table.h"
#include "core/tensor_ops.h"
#include "wick/ops.h"

namespace wick {

using namespace detail;

namespace {

Tensor reduce(ReduceOp op, const Tensor& t, IntArrayRef dims, bool keepdim, std::optional<Dtype> dtype,
              const char* name) {
  Dtype out_dtype = dtype ? *dtype : (is_integral(t.dtype(), true) ? kInt64 : t.dtype());
  if (op == ReduceOp::Mean)
    WICK_CHECK(
        is_floating_point(out_dtype), TypeError, name,
        "could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: ",
        out_dtype);
  Tensor in = t.dtype() == out_dtype ? t : t.to(out_dtype);
  DimPlan p = plan_dims(in, dims, keepdim, name);
  Tensor out = empty_for(p.out_sizes, TensorOptions(out_dtype).device(t.device()), name);
  kernel<&KernelTable::reduce>(t.device(), name)(op, out, Tensor(), p.in, 0);
  return out;
}

}  // namespace

Tensor sum(const Tensor& t, std::optional<Dtype> dtype) {
  check_defined(t, "sum", "self");
  if (autocast::active() && !dtype) [[unlikely]]
    return autocast::run(
        autocast::Policy::Fp32, autocast::Policy::None, "sum", [&](const Tensor& x) { return wick::sum(x); },
        t);
  const bool grad = needs_grad(t);
  Tensor out = forward_once(grad, [&] { return reduce(ReduceOp::Sum, t, {}, false, dtype, "sum"); });
  if (grad) [[unlikely]] autograd::record_sum(t, out);
  return out;
}
Tensor sum(const Tensor& t, IntArrayRef dims, bool keepdim, std::optional<Dtype> dtype) {
  check_defined(t, "sum", "self");
  if (autocast::active() && !dtype) [[unlikely]]
    return autocast::run(
        autocast::Policy::Fp32, autocast::Policy::None, "sum",
        [&](const Tensor& x) { return wick::sum(x, dims, keepdim); }, t);
  const bool grad = needs_grad(t);
  Tensor out = forward_once(grad, [&] { return reduce(ReduceOp::Sum, t, dims, keepdim, dtype, "sum"); });
  if (grad) [[unlikely]] autograd::record_sum(t, out, dims, keepdim);
  return out;
}
Tensor mean(const Tensor& t, std::optional<Dtype> dtype) {
  check_defined(t, "mean", "self");
  const bool grad = needs_grad(t);
  Tensor out = forward_once(grad, [&] { return reduce(ReduceOp::Mean, t, {}, false, dtype, "mean"); });
  if (grad) [[unlikely]] autograd::record_mean(t, out);
  return out;
}
Tensor mean(const Tensor& t, IntArrayRef dims, bool keepdim, std::optional<Dtype> dtype) {
  check_defined(t, "mean", "self");
  const bool grad = needs_grad(t);
  Tensor out = forward_once(grad, [&] { return reduce(ReduceOp::Mean, t, dims, keepdim, dtype, "mean"); });
  if (grad) [[unlikely]] autograd::record_mean(t, out, dims, keepdim);
  return out;
}

Tensor Tensor::sum(std::optional<Dtype> dtype) const { return wick::sum(*this, dtype); }
Tensor Tensor::sum(IntArrayRef dims, bool keepdim, std::optional<Dtype> dtype) const {
  check_defined(*this, "sum", "self");
  return wick::sum(*this, dims, keepdim, dtype);
}
Tensor Tensor::mean(std::optional<Dtype> dtype) const { return wick::mean(*this, dtype); }
Tensor Tensor::mean(IntArrayRef dims, bool keepdim, std::optional<Dtype> dtype) const {
  check_defined(*this, "mean", "self");
  return wick::mean(*this, dims, keepdim, dtype);
}

}  // namespace wick
