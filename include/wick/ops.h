// Factories and ops as free functions, with PyTorch's names and broadcasting.
//
//   auto x = wick::rand({2, 3}, wick::Device("cuda"));
//   auto y = wick::matmul(x, wick::ones({3, 4}, x.device()));
//   auto s = wick::sum(y, {1}, /*keepdim=*/true);
#pragma once

#include <initializer_list>
#include <optional>
#include <vector>

#include "wick/tensor.h"

namespace wick {

// ---- factories
Tensor empty(IntArrayRef sizes, TensorOptions o = {});
Tensor empty_strided(IntArrayRef sizes, IntArrayRef strides, TensorOptions o = {});
Tensor zeros(IntArrayRef sizes, TensorOptions o = {});
Tensor ones(IntArrayRef sizes, TensorOptions o = {});
// Without a dtype, the value decides: bool, int64, or the default float (as torch.full).
Tensor full(IntArrayRef sizes, const Scalar& value, TensorOptions o = {});
Tensor arange(const Scalar& end, TensorOptions o = {});
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step = 1, TensorOptions o = {});
Tensor linspace(double start, double end, int64_t steps, TensorOptions o = {});
Tensor eye(int64_t n, TensorOptions o = {});
Tensor eye(int64_t n, int64_t m, TensorOptions o = {});
// Wraps caller memory without copying; the caller keeps it alive and frees it.
Tensor from_blob(void* data, IntArrayRef sizes, TensorOptions o = {});
Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, TensorOptions o = {});

template <class T>
Tensor tensor(std::initializer_list<T> values, TensorOptions o = {}) {
  std::vector<detail::Wide<T>> v(values.begin(), values.end());
  if (!o.dtype_opt()) o = o.dtype(detail::list_dtype<T>());
  return detail::tensor_from_values(v.data(), detail::wide_dtype<T>(), {int64_t(v.size())}, o);
}
template <class T>
Tensor tensor(std::initializer_list<std::initializer_list<T>> values, TensorOptions o = {}) {
  auto v = detail::flatten_list(values);
  if (!o.dtype_opt()) o = o.dtype(detail::list_dtype<T>());
  int64_t cols = values.size() ? int64_t(values.begin()->size()) : 0;
  return detail::tensor_from_values(v.data(), detail::wide_dtype<T>(), {int64_t(values.size()), cols}, o);
}

Tensor empty_like(const Tensor& t, TensorOptions o = {});
Tensor zeros_like(const Tensor& t, TensorOptions o = {});
Tensor ones_like(const Tensor& t, TensorOptions o = {});
Tensor full_like(const Tensor& t, const Scalar& value, TensorOptions o = {});

// ---- arithmetic (broadcasting, PyTorch's type promotion)
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Scalar& b);
// True division: integer inputs give the default float dtype.
Tensor div(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Scalar& b);

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, const Scalar& b);
Tensor operator-(const Tensor& a, const Scalar& b);
Tensor operator*(const Tensor& a, const Scalar& b);
Tensor operator/(const Tensor& a, const Scalar& b);
Tensor operator+(const Scalar& a, const Tensor& b);
Tensor operator-(const Scalar& a, const Tensor& b);
Tensor operator*(const Scalar& a, const Tensor& b);
Tensor operator/(const Scalar& a, const Tensor& b);
Tensor operator-(const Tensor& a);

// ---- reductions: all elements, or over dims (keepdim keeps them as size 1)
// Integer and bool sums give int64; float16/bfloat16 accumulate in float32.
Tensor sum(const Tensor& t, std::optional<Dtype> dtype = std::nullopt);
Tensor sum(const Tensor& t, IntArrayRef dims, bool keepdim = false, std::optional<Dtype> dtype = std::nullopt);
Tensor mean(const Tensor& t, std::optional<Dtype> dtype = std::nullopt);
Tensor mean(const Tensor& t, IntArrayRef dims, bool keepdim = false, std::optional<Dtype> dtype = std::nullopt);

// ---- linear algebra
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor mm(const Tensor& a, const Tensor& b);

// ---- copies and views
Tensor clone(const Tensor& t);

}  // namespace wick
