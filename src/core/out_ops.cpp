// The out= forms (wick/out.h): the function, then its result written into out.
#include "wick/out.h"

#include "core/checks.h"
#include "core/tensor_iter.h"
#include "wick/autograd.h"

namespace wick {

namespace detail {

Tensor& write_out(Tensor& out, const Tensor& result, const char* op, const std::vector<Tensor>& inputs) {
  check_defined(out, op, "out");
  bool grad = out.requires_grad();
  for (const Tensor& t : inputs) grad = grad || (t.defined() && t.requires_grad());
  WICK_CHECK(!(grad && GradMode::is_enabled()), ValueError, op,
             "functions with out=... arguments don't support automatic differentiation, but one of the arguments "
             "requires grad.");
  WICK_CHECK(out.device() == result.device(), DeviceError, op, "Expected out tensor to have device ",
             result.device(), ", but got ", out.device(), " instead");
  const Dtype from = result.dtype(), to = out.dtype();
  WICK_CHECK(can_cast(from, to), TypeError, op, "result type ", from, " can't be cast to the desired output type ",
             to);
  NoGradGuard no_grad;
  if (out.sizes().equals(result.sizes())) out.copy_(result);
  else out = result.dtype() == to ? result : result.to(to);
  return out;
}

}  // namespace detail

using detail::write_out;

Tensor& add_out(Tensor& out, const Tensor& self, const Tensor& other, const Scalar& alpha) {
  return write_out(out, wick::add(self, other, alpha), "add_out", {self, other});
}
Tensor& sub_out(Tensor& out, const Tensor& self, const Tensor& other, const Scalar& alpha) {
  return write_out(out, wick::sub(self, other, alpha), "sub_out", {self, other});
}
Tensor& mul_out(Tensor& out, const Tensor& self, const Tensor& other) {
  return write_out(out, wick::mul(self, other), "mul_out", {self, other});
}
Tensor& div_out(Tensor& out, const Tensor& self, const Tensor& other) {
  return write_out(out, wick::div(self, other), "div_out", {self, other});
}
Tensor& pow_out(Tensor& out, const Tensor& self, const Scalar& exponent) {
  return write_out(out, wick::pow(self, exponent), "pow_out", {self});
}
Tensor& pow_out(Tensor& out, const Tensor& self, const Tensor& exponent) {
  return write_out(out, wick::pow(self, exponent), "pow_out", {self, exponent});
}
Tensor& matmul_out(Tensor& out, const Tensor& self, const Tensor& other) {
  return write_out(out, wick::matmul(self, other), "matmul_out", {self, other});
}
Tensor& mm_out(Tensor& out, const Tensor& self, const Tensor& mat2) {
  return write_out(out, wick::mm(self, mat2), "mm_out", {self, mat2});
}
Tensor& bmm_out(Tensor& out, const Tensor& self, const Tensor& mat2) {
  return write_out(out, wick::bmm(self, mat2), "bmm_out", {self, mat2});
}
Tensor& addmm_out(Tensor& out, const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
                  const Scalar& alpha) {
  return write_out(out, wick::addmm(self, mat1, mat2, beta, alpha), "addmm_out", {self, mat1, mat2});
}
Tensor& cat_out(Tensor& out, const std::vector<Tensor>& tensors, int64_t dim) {
  return write_out(out, wick::cat(tensors, dim), "cat_out", tensors);
}
Tensor& stack_out(Tensor& out, const std::vector<Tensor>& tensors, int64_t dim) {
  return write_out(out, wick::stack(tensors, dim), "stack_out", tensors);
}
Tensor& sum_out(Tensor& out, const Tensor& self, IntArrayRef dim, bool keepdim, std::optional<Dtype> dtype) {
  return write_out(out, wick::sum(self, dim, keepdim, dtype), "sum_out", {self});
}
Tensor& mean_out(Tensor& out, const Tensor& self, IntArrayRef dim, bool keepdim, std::optional<Dtype> dtype) {
  return write_out(out, wick::mean(self, dim, keepdim, dtype), "mean_out", {self});
}
Tensor& clamp_out(Tensor& out, const Tensor& self, const std::optional<Scalar>& min,
                  const std::optional<Scalar>& max) {
  return write_out(out, wick::clamp(self, min, max), "clamp_out", {self});
}
#define WICK_OUT_DEFINE_Methods(name)                              \
  Tensor& name##_out(Tensor& out, const Tensor& self) {            \
    return write_out(out, wick::name(self), #name "_out", {self}); \
  }
#define WICK_OUT_DEFINE_Function(name) WICK_OUT_DEFINE_Methods(name)
#define WICK_OUT_DEFINE_Manual(name)
#define WICK_X(Name, name, kind, autocast, form) WICK_OUT_DEFINE_##form(name)
WICK_UNARY_OPS(WICK_X)
#undef WICK_X

}  // namespace wick
