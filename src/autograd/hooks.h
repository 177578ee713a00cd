// What core's op functions include to hand a differentiable call to autograd. Each such op
// begins with one line:
//
//   if (detail::needs_grad(a, b)) [[unlikely]] return autograd::add(a, b, alpha);
//
// needs_grad reads a flag on each TensorImpl, then the thread's grad mode: no allocation, and
// nothing else on the path of tensors that do not require grad. The autograd:: form runs the
// op again with grad mode off and records its node (src/autograd/*_backward.cpp).
#pragma once

#include <optional>
#include <vector>

#include "wick/autograd.h"
#include "wick/tensor.h"

namespace wick::detail {

template <class... Ts>
inline bool needs_grad(const Ts&... ts) {
  return ((ts.defined() && ts.impl()->requires_grad()) || ...) && GradMode::is_enabled();
}

inline bool needs_grad(const std::vector<Tensor>& ts) {
  for (const Tensor& t : ts)
    if (t.defined() && t.impl()->requires_grad()) return GradMode::is_enabled();
  return false;
}

}  // namespace wick::detail

namespace wick::autograd {

// ---- arithmetic (arith_backward.cpp)
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha);
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha);
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha);
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Scalar& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Scalar& b);
Tensor& add_(Tensor& self, const Tensor& other, const Scalar& alpha);
Tensor& add_(Tensor& self, const Scalar& other, const Scalar& alpha);
Tensor& sub_(Tensor& self, const Tensor& other, const Scalar& alpha);
Tensor& sub_(Tensor& self, const Scalar& other, const Scalar& alpha);
Tensor& mul_(Tensor& self, const Tensor& other);
Tensor& mul_(Tensor& self, const Scalar& other);
Tensor& div_(Tensor& self, const Tensor& other);
Tensor& div_(Tensor& self, const Scalar& other);

// ---- reductions (reduce_backward.cpp)
Tensor sum(const Tensor& t, std::optional<Dtype> dtype);
Tensor sum(const Tensor& t, IntArrayRef dims, bool keepdim, std::optional<Dtype> dtype);
Tensor mean(const Tensor& t, std::optional<Dtype> dtype);
Tensor mean(const Tensor& t, IntArrayRef dims, bool keepdim, std::optional<Dtype> dtype);

// ---- linear algebra (linalg_backward.cpp)
Tensor mm(const Tensor& a, const Tensor& b);
Tensor matmul(const Tensor& a, const Tensor& b);

// ---- views (view_backward.cpp)
Tensor view(const Tensor& t, IntArrayRef sizes);
Tensor reshape(const Tensor& t, IntArrayRef sizes);
Tensor permute(const Tensor& t, IntArrayRef dims);
Tensor transpose(const Tensor& t, int64_t d0, int64_t d1);
Tensor unsqueeze(const Tensor& t, int64_t d);
Tensor squeeze(const Tensor& t);
Tensor squeeze(const Tensor& t, int64_t d);
Tensor expand(const Tensor& t, IntArrayRef sizes);
Tensor narrow(const Tensor& t, int64_t d, int64_t start, int64_t length);
Tensor select(const Tensor& t, int64_t d, int64_t index);
Tensor slice(const Tensor& t, int64_t d, std::optional<int64_t> start, std::optional<int64_t> end,
             int64_t step);

// ---- copies (copy_backward.cpp)
Tensor to(const Tensor& t, Device device, Dtype dtype, bool non_blocking, bool copy);
Tensor clone(const Tensor& t);
Tensor& copy_(Tensor& self, const Tensor& src, bool non_blocking);
Tensor& fill_(Tensor& self, const Scalar& value);

}  // namespace wick::autograd
