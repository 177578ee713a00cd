// Factories and ops as free functions, with PyTorch's names and broadcasting.
//
//   auto x = wick::rand({2, 3}, wick::Device("cuda"));
//   auto y = wick::matmul(x, wick::ones({3, 4}, x.device()));
//   auto s = wick::sum(y, {1}, /*keepdim=*/true);
#pragma once

#include <functional>
#include <initializer_list>
#include <optional>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "wick/detail/op_list.h"
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
// LibTorch's arange(start, end, options) (options a TensorOptions, a Dtype or a Device, never a
// number, which is the step): step 1.
template <class O>
  requires(std::is_convertible_v<const O&, TensorOptions> && !std::is_arithmetic_v<O> &&
           !std::is_convertible_v<const O&, Scalar>)
Tensor arange(const Scalar& start, const Scalar& end, const O& o) {
  return arange(start, end, 1, TensorOptions(o));
}
Tensor linspace(double start, double end, int64_t steps, TensorOptions o = {});
// base ** linspace(start, end, steps).
Tensor logspace(double start, double end, int64_t steps, double base = 10.0, TensorOptions o = {});
Tensor eye(int64_t n, TensorOptions o = {});
Tensor eye(int64_t n, int64_t m, TensorOptions o = {});
// Wraps caller memory without copying; the caller keeps it alive and frees it.
Tensor from_blob(void* data, IntArrayRef sizes, TensorOptions o = {});
Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, TensorOptions o = {});
// LibTorch's forms with a deleter: deleter(data) runs once the last tensor using the memory is
// gone (with storage_offset: the tensor starts that many elements past data).
Tensor from_blob(void* data, IntArrayRef sizes, const std::function<void(void*)>& deleter, TensorOptions o = {});
Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, const std::function<void(void*)>& deleter,
                 TensorOptions o = {});
Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, int64_t storage_offset,
                 const std::function<void(void*)>& deleter, TensorOptions o = {});

// A 0-dim tensor holding value (torch.tensor(3.)): the dtype as a list of it would have.
template <class T>
  requires std::is_arithmetic_v<T>
Tensor tensor(T value, TensorOptions o = {}) {
  detail::Wide<T> v(value);
  if (!o.dtype_opt()) o = o.dtype(detail::list_dtype<T>());
  return detail::tensor_from_values(&v, detail::wide_dtype<T>(), {}, o);
}
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
  // An empty list ({}) picks this overload; PyTorch makes it shape [0], as torch.tensor([]).
  if (values.size() == 0) return detail::tensor_from_values(v.data(), detail::wide_dtype<T>(), {0}, o);
  int64_t cols = int64_t(values.begin()->size());
  return detail::tensor_from_values(v.data(), detail::wide_dtype<T>(), {int64_t(values.size()), cols}, o);
}
// Deeper nested lists (torch::tensor({{{1, 2}, {3, 4}}})): 3 and 4 dims, every row as long as
// the first at its depth (ValueError "[tensor] expected sequence of length ..." otherwise).
namespace detail {
template <class T, class Nested>
Tensor tensor_from_nested(const Nested& values, TensorOptions o) {
  std::vector<Wide<T>> v;
  DimVector sizes;
  flatten_nested(values, 0, sizes, v);
  if (!o.dtype_opt()) o = o.dtype(list_dtype<T>());
  return tensor_from_values(v.data(), wide_dtype<T>(), sizes, o);
}
}  // namespace detail
template <class T>
Tensor tensor(std::initializer_list<std::initializer_list<std::initializer_list<T>>> values, TensorOptions o = {}) {
  return detail::tensor_from_nested<T>(values, o);
}
template <class T>
Tensor tensor(std::initializer_list<std::initializer_list<std::initializer_list<std::initializer_list<T>>>> values,
              TensorOptions o = {}) {
  return detail::tensor_from_nested<T>(values, o);
}
// LibTorch's torch::tensor(std::vector<T>) (and ArrayRef<T>): a 1-dim tensor of the values, the
// dtype as for a list of T (int and int64_t: int64, float and double: the default float, bool:
// bool; int8, uint8 and int16 keep theirs).
template <class T>
  requires std::is_arithmetic_v<T>
Tensor tensor(const std::vector<T>& values, TensorOptions o = {}) {
  std::vector<detail::Wide<T>> v(values.begin(), values.end());
  if (!o.dtype_opt()) o = o.dtype(detail::list_dtype<T>());
  return detail::tensor_from_values(v.data(), detail::wide_dtype<T>(), {int64_t(v.size())}, o);
}

// t's sizes (and dtype and device unless o names them), laid out as memory_format says (none:
// Preserve, t's strides when t is dense, as torch.empty_like).
Tensor empty_like(const Tensor& t, TensorOptions o = {}, std::optional<MemoryFormat> memory_format = std::nullopt);
Tensor zeros_like(const Tensor& t, TensorOptions o = {}, std::optional<MemoryFormat> memory_format = std::nullopt);
Tensor ones_like(const Tensor& t, TensorOptions o = {}, std::optional<MemoryFormat> memory_format = std::nullopt);
Tensor full_like(const Tensor& t, const Scalar& value, TensorOptions o = {},
                 std::optional<MemoryFormat> memory_format = std::nullopt);

// ---- arithmetic (broadcasting, PyTorch's type promotion): add, sub, mul, div for a tensor or
// scalar b, and the operators + - * / (wick/detail/op_list.h)
#define WICK_X(Name, name, op, alpha)                                         \
  Tensor name(const Tensor& a, const Tensor& b WICK_OP_ALPHA_DECL_##alpha); \
  Tensor name(const Tensor& a, const Scalar& b WICK_OP_ALPHA_DECL_##alpha); \
  Tensor operator op(const Tensor& a, const Tensor& b);                      \
  Tensor operator op(const Tensor& a, const Scalar& b);                      \
  Tensor operator op(const Scalar& a, const Tensor& b);
WICK_BINARY_OPS(WICK_X)
#undef WICK_X
Tensor operator-(const Tensor& a);

// ---- reductions: all elements, or over dims (keepdim keeps them as size 1)
// Integer and bool sums give int64; float16/bfloat16 accumulate in float32.
Tensor sum(const Tensor& t, std::optional<Dtype> dtype = std::nullopt);
Tensor sum(const Tensor& t, IntArrayRef dims, bool keepdim = false, std::optional<Dtype> dtype = std::nullopt);
Tensor mean(const Tensor& t, std::optional<Dtype> dtype = std::nullopt);
Tensor mean(const Tensor& t, IntArrayRef dims, bool keepdim = false, std::optional<Dtype> dtype = std::nullopt);

// max/min of all elements; with dim, {values, indices} (the first index among equals).
// NaN propagates: it is the max and the min of anything holding one.
Tensor max(const Tensor& t);
Tensor min(const Tensor& t);
std::tuple<Tensor, Tensor> max(const Tensor& t, int64_t dim, bool keepdim = false);
std::tuple<Tensor, Tensor> min(const Tensor& t, int64_t dim, bool keepdim = false);
// Index of the max/min of the flattened tensor, or along dim.
Tensor argmax(const Tensor& t, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor argmin(const Tensor& t, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
// Variance and standard deviation over dims (empty: all), dividing by N - correction;
// unbiased is correction 1. var(t, 1) and var(t, {1}) reduce dim 1, as in Python;
// var(t, false) is the biased variance of all; var(t, {1}, 0) is ambiguous on purpose (false
// or 0.0?) and doesn't compile.
Tensor var(const Tensor& t, IntArrayRef dims = {}, bool unbiased = true, bool keepdim = false);
Tensor var(const Tensor& t, IntArrayRef dims, double correction, bool keepdim = false);
template <class Bool, std::enable_if_t<std::is_same_v<Bool, bool>, int> = 0>
Tensor var(const Tensor& t, Bool unbiased) { return var(t, IntArrayRef{}, bool(unbiased)); }
Tensor std(const Tensor& t, IntArrayRef dims = {}, bool unbiased = true, bool keepdim = false);
Tensor std(const Tensor& t, IntArrayRef dims, double correction, bool keepdim = false);
template <class Bool, std::enable_if_t<std::is_same_v<Bool, bool>, int> = 0>
Tensor std(const Tensor& t, Bool unbiased) { return std(t, IntArrayRef{}, bool(unbiased)); }
// Vector p-norm over dims (empty: all): p = 2, 1, 0 (count of non-zeros), INFINITY (max |x|),
// -INFINITY (min |x|) or any other real p.
Tensor norm(const Tensor& t, const Scalar& p = 2);
Tensor norm(const Tensor& t, const Scalar& p, IntArrayRef dims, bool keepdim = false);

// ---- elementwise math. Float functions of integer or bool tensors give the default float.
// neg abs exp expm1 log sqrt rsqrt sin cos tan asin acos atan sinh cosh asinh acosh atanh erf
// erfinv tanh sigmoid relu sign
// floor ceil round trunc frac
// log2 log10 log1p reciprocal lgamma digamma silu (wick/detail/op_list.h)
#define WICK_X(Name, name, kind, autocast, form) WICK_OP_UNARY_FUNCTION_##form(name)
WICK_UNARY_OPS(WICK_X)
#undef WICK_X
// approximate: "none" (the erf form) or "tanh".
Tensor gelu(const Tensor& t, std::string_view approximate = "none");
Tensor pow(const Tensor& t, const Scalar& exponent);
Tensor pow(const Tensor& t, const Tensor& exponent);
Tensor pow(const Scalar& base, const Tensor& exponent);
// Python's %: the result has the sign of the divisor.
Tensor remainder(const Tensor& t, const Scalar& other);
Tensor remainder(const Tensor& t, const Tensor& other);
// The angle of the point (other, t) in (-pi, pi], elementwise, broadcast; integer inputs give
// the default float.
Tensor atan2(const Tensor& t, const Tensor& other);
// C's fmod: the remainder of the quotient rounded toward zero, with the dividend's sign
// (fmod(-7, 3) = -1 where remainder gives 2). Promotion as remainder's; an integer divisor of 0
// raises.
Tensor fmod(const Tensor& t, const Scalar& other);
Tensor fmod(const Tensor& t, const Tensor& other);
// a / b rounded as rounding_mode says: nullopt is true division (div(a, b)), "trunc" rounds
// toward zero, "floor" toward -inf. With a mode, integer operands keep their promoted integer
// dtype and an integer divisor of 0 raises; any other mode raises ValueError. No default: the
// two-argument div is the true division above.
Tensor div(const Tensor& a, const Tensor& b, std::optional<std::string_view> rounding_mode);
Tensor div(const Tensor& a, const Scalar& b, std::optional<std::string_view> rounding_mode);
// a / b rounded toward -inf (Python's //), div(a, b, "floor"); PyTorch has no derivative for it.
Tensor floor_divide(const Tensor& a, const Tensor& b);
Tensor floor_divide(const Tensor& a, const Scalar& b);
// The n-th derivative of digamma (n >= 0; polygamma(0, x) is digamma(x)). lgamma and digamma
// are among the functions of one tensor above.
Tensor polygamma(int64_t n, const Tensor& t);
// a % b: torch.Tensor.__mod__, the remainder with the divisor's sign.
inline Tensor operator%(const Tensor& a, const Scalar& b) { return remainder(a, b); }
inline Tensor operator%(const Tensor& a, const Tensor& b) { return remainder(a, b); }
// min(max(t, min), max); a missing bound is no bound. Scalars promote like PyTorch's.
Tensor clamp(const Tensor& t, const std::optional<Scalar>& min, const std::optional<Scalar>& max = std::nullopt);
Tensor clamp(const Tensor& t, const std::optional<Tensor>& min = {}, const std::optional<Tensor>& max = {});
Tensor clamp_min(const Tensor& t, const Scalar& min);
Tensor clamp_min(const Tensor& t, const Tensor& min);
Tensor clamp_max(const Tensor& t, const Scalar& max);
Tensor clamp_max(const Tensor& t, const Tensor& max);

// ---- comparisons (broadcasting, compared in the promoted dtype) give bool tensors
// eq ne lt le gt ge and the operators == != < <= > >= (wick/detail/op_list.h)
#define WICK_X(Name, name, op, mirror)                 \
  Tensor name(const Tensor& a, const Tensor& b);        \
  Tensor name(const Tensor& a, const Scalar& b);        \
  Tensor operator op(const Tensor& a, const Tensor& b); \
  Tensor operator op(const Tensor& a, const Scalar& b); \
  Tensor operator op(const Scalar& a, const Tensor& b);
WICK_COMPARE_OPS(WICK_X)
#undef WICK_X
// ---- logical ops: elements are true where not 0, results bool (wick/detail/op_list.h)
#define WICK_X(Name, name) Tensor name(const Tensor& a, const Tensor& b);
WICK_LOGICAL_OPS(WICK_X)
#undef WICK_X
Tensor logical_not(const Tensor& t);

// ---- bitwise ops of bool and integer tensors (broadcasting, PyTorch's promotion; floating
// operands raise TypeError), and the operators & | ^ ~ (wick/detail/op_list.h)
#define WICK_X(Name, name)                        \
  Tensor name(const Tensor& a, const Tensor& b); \
  Tensor name(const Tensor& a, const Scalar& b); \
  Tensor name(const Scalar& a, const Tensor& b);
WICK_BITWISE_OPS(WICK_X)
#undef WICK_X
Tensor bitwise_not(const Tensor& t);
#define WICK_X(op)                                      \
  Tensor operator op(const Tensor& a, const Tensor& b); \
  Tensor operator op(const Tensor& a, const Scalar& b); \
  Tensor operator op(const Scalar& a, const Tensor& b);
WICK_X(&)
WICK_X(|)
WICK_X(^)
#undef WICK_X
Tensor operator~(const Tensor& a);

// torch.equal: whether a and b have the same sizes and equal elements (compared in the promoted
// dtype; NaN equals nothing). DeviceError for tensors on different devices.
bool equal(const Tensor& a, const Tensor& b);

// a where cond (bool) is true, b elsewhere; a and b promote together.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& cond, const Tensor& a, const Scalar& b);
Tensor where(const Tensor& cond, const Scalar& a, const Tensor& b);
Tensor where(const Tensor& cond, const Scalar& a, const Scalar& b);
// t with value where mask (bool) is true; value is cast to t's dtype.
Tensor masked_fill(const Tensor& t, const Tensor& mask, const Scalar& value);
Tensor masked_fill(const Tensor& t, const Tensor& mask, const Tensor& value);

// ---- softmax over dim, numerically stable; with dtype the input is cast to it first
Tensor softmax(const Tensor& t, int64_t dim, std::optional<Dtype> dtype = std::nullopt);
Tensor log_softmax(const Tensor& t, int64_t dim, std::optional<Dtype> dtype = std::nullopt);

// ---- linear algebra
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor mm(const Tensor& a, const Tensor& b);
// Batched a[i] @ b[i] for 3-D a and b with equal batch sizes (no broadcasting).
Tensor bmm(const Tensor& a, const Tensor& b);
// beta * input + alpha * (a @ b), input broadcast to the result.
Tensor addmm(const Tensor& input, const Tensor& a, const Tensor& b, const Scalar& beta = 1, const Scalar& alpha = 1);
// activation(beta * input + alpha * (a @ b)): GELU (its tanh form) with use_gelu, else ReLU, as
// torch._addmm_activation. On a GPU, linear's case (input a bias row, beta 1) is one GEMM whose
// epilogue adds the bias and applies GELU (docs/design.md §8, "GEMM").
Tensor _addmm_activation(const Tensor& input, const Tensor& a, const Tensor& b, const Scalar& beta = 1,
                         const Scalar& alpha = 1, bool use_gelu = false);
// x @ weight.T + bias (bias may be undefined), as torch.nn.functional.linear.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = {});

// ---- indexing and joining
// t's slices index[0], index[1], ... along dim (index: int32 or int64, 0-d or 1-D).
Tensor index_select(const Tensor& t, int64_t dim, const Tensor& index);
// A copy of t with the order of elements along each of dims reversed (torch.flip).
Tensor flip(const Tensor& t, IntArrayRef dims);
// out[i][j][k] = t[i][index[i][j][k]][k] for dim 1 (index: int64, t's rank).
Tensor gather(const Tensor& t, int64_t dim, const Tensor& index);
// self[indices] and self[indices] = values on a copy, as Tensor::index and Tensor::index_put
// (wick/indexing.h).
Tensor index(const Tensor& t, const std::vector<indexing::TensorIndex>& indices);
Tensor index_put(const Tensor& t, const std::vector<indexing::TensorIndex>& indices, const Tensor& values,
                 bool accumulate = false);
// t's elements where mask (bool; mask and t broadcast together) is true, in row-major order, 1-D.
Tensor masked_select(const Tensor& t, const Tensor& mask);
// int64 [count, t.dim()]: the index of each non-zero element of t, in row-major order (argwhere
// is the same); it reads the count back to the host.
Tensor nonzero(const Tensor& t);
Tensor argwhere(const Tensor& t);
// Along an existing dim (cat) or a new one (stack); dtypes promote.
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
// torch.transpose(t, d0, d1): t.transpose(d0, d1).
Tensor transpose(const Tensor& t, int64_t d0, int64_t d1);
// The function forms of views and splits PyTorch also has as methods (torch.squeeze(t) is
// t.squeeze(), ...). all and any stay methods only: a free wick::all(Tensor) would make a
// program's own all(const Tensor&) helper ambiguous through argument-dependent lookup.
Tensor t(const Tensor& t);
Tensor squeeze(const Tensor& t);
Tensor squeeze(const Tensor& t, int64_t dim);
Tensor unsqueeze(const Tensor& t, int64_t dim);
Tensor narrow(const Tensor& t, int64_t dim, int64_t start, int64_t length);
// t.diagonal(offset, dim1, dim2) (torch.diagonal).
Tensor diagonal(const Tensor& t, int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1);
Tensor select(const Tensor& t, int64_t dim, int64_t index);
std::vector<Tensor> chunk(const Tensor& t, int64_t chunks, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& t, int64_t split_size, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& t, IntArrayRef split_sizes, int64_t dim = 0);
// cat after making each tensor at least 1-D and joining along dim 1 (dim 0 for 1-D tensors:
// hstack), at least 2-D along dim 0 (vstack, also row_stack), at least 3-D along dim 2
// (dstack), as torch.atleast_Nd shapes them ([n] -> [1, n] -> [1, n, 1], [m, n] -> [m, n, 1]).
Tensor hstack(const std::vector<Tensor>& tensors);
Tensor vstack(const std::vector<Tensor>& tensors);
Tensor row_stack(const std::vector<Tensor>& tensors);
Tensor dstack(const std::vector<Tensor>& tensors);
// The cross product of a and b (broadcast together) along dim, which must have size 3; without
// dim, the first dim of size 3 (torch.cross's deprecated default; linalg_cross's is -1).
Tensor cross(const Tensor& a, const Tensor& b, std::optional<int64_t> dim = std::nullopt);
Tensor linalg_cross(const Tensor& a, const Tensor& b, int64_t dim = -1);
// torch.linalg.vector_norm: norm(t, ord, dim, keepdim) (every element when dim is empty), in
// dtype when given. torch.linalg.matrix_norm over the two dims of dim: "fro" (the default) and
// the orders 1, -1 (the largest, smallest column sum of |t|), inf, -inf (row sums); 2, -2 and
// "nuc" need singular values and raise NotImplementedError. torch.linalg.norm: without ord the
// 2-norm of the elements over dim (all when empty); with ord, vector_norm over one dim (or of a
// 1-D t) and matrix_norm over two (or of a 2-D t).
Tensor linalg_vector_norm(const Tensor& t, const Scalar& ord = 2, IntArrayRef dim = {}, bool keepdim = false,
                          std::optional<Dtype> dtype = std::nullopt);
Tensor linalg_matrix_norm(const Tensor& t, const Scalar& ord, IntArrayRef dim = {-2, -1}, bool keepdim = false,
                          std::optional<Dtype> dtype = std::nullopt);
Tensor linalg_matrix_norm(const Tensor& t, const char* ord = "fro", IntArrayRef dim = {-2, -1},
                          bool keepdim = false, std::optional<Dtype> dtype = std::nullopt);
Tensor linalg_norm(const Tensor& t, const std::optional<Scalar>& ord = std::nullopt, IntArrayRef dim = {},
                   bool keepdim = false, std::optional<Dtype> dtype = std::nullopt);
Tensor linalg_norm(const Tensor& t, const char* ord, IntArrayRef dim = {}, bool keepdim = false,
                   std::optional<Dtype> dtype = std::nullopt);
inline Tensor linalg_matrix_norm(const Tensor& t, const std::string& ord, IntArrayRef dim = {-2, -1},
                                 bool keepdim = false, std::optional<Dtype> dtype = std::nullopt) {
  return linalg_matrix_norm(t, ord.c_str(), dim, keepdim, dtype);
}
inline Tensor linalg_norm(const Tensor& t, const std::string& ord, IntArrayRef dim = {}, bool keepdim = false,
                          std::optional<Dtype> dtype = std::nullopt) {
  return linalg_norm(t, ord.c_str(), dim, keepdim, dtype);
}
// LibTorch's torch::linalg:: spellings of the above.
namespace linalg {
inline Tensor cross(const Tensor& a, const Tensor& b, int64_t dim = -1) { return linalg_cross(a, b, dim); }
inline Tensor vector_norm(const Tensor& t, const Scalar& ord = 2, IntArrayRef dim = {}, bool keepdim = false,
                          std::optional<Dtype> dtype = std::nullopt) {
  return linalg_vector_norm(t, ord, dim, keepdim, dtype);
}
inline Tensor matrix_norm(const Tensor& t, const char* ord = "fro", IntArrayRef dim = {-2, -1},
                          bool keepdim = false, std::optional<Dtype> dtype = std::nullopt) {
  return linalg_matrix_norm(t, ord, dim, keepdim, dtype);
}
inline Tensor matrix_norm(const Tensor& t, const Scalar& ord, IntArrayRef dim = {-2, -1}, bool keepdim = false,
                          std::optional<Dtype> dtype = std::nullopt) {
  return linalg_matrix_norm(t, ord, dim, keepdim, dtype);
}
inline Tensor norm(const Tensor& t, const std::optional<Scalar>& ord = std::nullopt, IntArrayRef dim = {},
                   bool keepdim = false, std::optional<Dtype> dtype = std::nullopt) {
  return linalg_norm(t, ord, dim, keepdim, dtype);
}
inline Tensor norm(const Tensor& t, const char* ord, IntArrayRef dim = {}, bool keepdim = false,
                   std::optional<Dtype> dtype = std::nullopt) {
  return linalg_norm(t, ord, dim, keepdim, dtype);
}
}  // namespace linalg
// LibTorch's at::size(t, dim): t.size(dim).
int64_t size(const Tensor& t, int64_t dim);
// ATen's _unsafe_view(self, size): self.view(size) (ATen's node, UnsafeViewBackward0, also
// passes the gradient through a reshape; wick's is ViewBackward0).
Tensor _unsafe_view(const Tensor& t, IntArrayRef size);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
// int64 t of class indices -> int64 [..., num_classes] (-1: max(t) + 1).
Tensor one_hot(const Tensor& t, int64_t num_classes = -1);

// ---- shape, scan and reduction ops
// The lower (upper) triangle of the last two dims: element (i, j) is kept where j - i <= diagonal
// (j - i >= diagonal), zeroed elsewhere; any dtype, batched over leading dims.
Tensor tril(const Tensor& t, int64_t diagonal = 0);
Tensor triu(const Tensor& t, int64_t diagonal = 0);
// Running sum (product) along dim; integer and bool inputs accumulate in int64 unless dtype
// names the result's dtype (the input is cast to it first).
Tensor cumsum(const Tensor& t, int64_t dim, std::optional<Dtype> dtype = std::nullopt);
Tensor cumprod(const Tensor& t, int64_t dim, std::optional<Dtype> dtype = std::nullopt);
// log(sum(exp(t))) over dims (empty: all), with the max subtracted first; integer and bool
// inputs give the default float.
Tensor logsumexp(const Tensor& t, IntArrayRef dims, bool keepdim = false);
// {var, mean} and {std, mean} in one call, with var's and std's arguments.
std::tuple<Tensor, Tensor> var_mean(const Tensor& t, IntArrayRef dims = {}, bool unbiased = true, bool keepdim = false);
std::tuple<Tensor, Tensor> var_mean(const Tensor& t, IntArrayRef dims, double correction, bool keepdim = false);
std::tuple<Tensor, Tensor> std_mean(const Tensor& t, IntArrayRef dims = {}, bool unbiased = true, bool keepdim = false);
std::tuple<Tensor, Tensor> std_mean(const Tensor& t, IntArrayRef dims, double correction, bool keepdim = false);
// norm with p = "fro" (the 2-norm over dims, empty: all); "nuc" is not implemented.
Tensor norm(const Tensor& t, const char* p, IntArrayRef dims = {}, bool keepdim = false);
// Each element repeated repeats times (an int, or a 1-D tensor of one count per slice) along
// dim; without dim, over the flattened tensor.
Tensor repeat_interleave(const Tensor& t, int64_t repeats, std::optional<int64_t> dim = std::nullopt);
Tensor repeat_interleave(const Tensor& t, const Tensor& repeats, std::optional<int64_t> dim = std::nullopt);
// repeats[i] copies of i for each i: the indices repeat_interleave(t, repeats, 0) selects.
Tensor repeat_interleave(const Tensor& repeats);
// a[i] * b[j] for 1-D a and b (ger is the old name).
Tensor outer(const Tensor& a, const Tensor& b);
Tensor ger(const Tensor& a, const Tensor& b);
// start + weight * (end - start), broadcast; floating dtypes.
Tensor lerp(const Tensor& start, const Tensor& end, const Scalar& weight);
Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight);
// beta * input + alpha * bmm(batch1, batch2), input broadcast to the result (beta 0: input unread).
Tensor baddbmm(const Tensor& input, const Tensor& batch1, const Tensor& batch2, const Scalar& beta = 1,
               const Scalar& alpha = 1);
// Einstein summation, as torch.einsum: "ij,jk->ik", "bhqd,bhkd->bhqk", "...ij->...ji", "ii->i",
// implicit output (the letters seen once, sorted); letters absent from the output are summed.
Tensor einsum(std::string_view equation, const std::vector<Tensor>& tensors);
// ---- composites (composite_ops.cpp)
// t * t as pow(t, 2) (its node is PowBackward0, as PyTorch's); bool gives int64.
Tensor square(const Tensor& t);
// Bool tensors of t's shape: which elements are NaN, infinite (either sign), finite. Integer
// and bool tensors hold neither NaN nor infinity.
Tensor isnan(const Tensor& t);
Tensor isinf(const Tensor& t);
Tensor isfinite(const Tensor& t);
// |a - b| <= atol + rtol |b| elementwise, broadcast, for a and b of one dtype; equal elements
// (infinities too) are close, NaN only to NaN and only with equal_nan. allclose: whether all are.
Tensor isclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false);
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false);
// The elementwise max (min) of a and b, broadcast and promoted; NaN propagates.
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
// torch.max(a, b) / torch.min(a, b): maximum / minimum.
Tensor max(const Tensor& a, const Tensor& b);
Tensor min(const Tensor& a, const Tensor& b);
// torch.reshape(t, shape): t.reshape(shape).
Tensor reshape(const Tensor& t, IntArrayRef shape);
// torch.broadcast_tensors: each tensor expanded to their common broadcast shape (views).
std::vector<Tensor> broadcast_tensors(const std::vector<Tensor>& tensors);
// The max (min) over dims (empty: all) without indices; NaN propagates. The gradient is shared
// equally by the elements equal to the result.
Tensor amax(const Tensor& t, IntArrayRef dims = {}, bool keepdim = false);
Tensor amin(const Tensor& t, IntArrayRef dims = {}, bool keepdim = false);
// The lower median of all elements (a 0-d tensor), or {values, indices} along dim: the element
// of rank (n - 1) / 2 and its index. NaN propagates: a slice holding one gives NaN (the index of
// its first NaN along dim). The gradient of the all-elements form is shared equally by the
// elements equal to the result, as max's. Bool is refused; empty: NaN (all-elements form) or
// IndexError (a dim of size 0).
Tensor median(const Tensor& t);
std::tuple<Tensor, Tensor> median(const Tensor& t, int64_t dim, bool keepdim = false);
// t rounded to decimals decimal places (negative: to tens, hundreds, ...), halves to even, as
// round(t * 10^decimals) / 10^decimals in float (16-bit floats compute in float32); floating
// dtypes only.
Tensor round(const Tensor& t, int64_t decimals);
// A copy of t with the slices index[i] along dim set to value (a scalar or a 0-d tensor, cast to
// t's dtype). index: 0-d or 1-D int64, negative entries counting from the end.
Tensor index_fill(const Tensor& t, int64_t dim, const Tensor& index, const Scalar& value);
Tensor index_fill(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& value);
// t where mask (bool, broadcast with t) is false; where it is true, source's elements in order
// (row-major), source of t's dtype holding at least as many elements as mask has true ones.
Tensor masked_scatter(const Tensor& t, const Tensor& mask, const Tensor& source);
// The number of non-zero elements over dims (empty: all), int64.
Tensor count_nonzero(const Tensor& t, IntArrayRef dims = {});
// The product of all elements, or along dim; integer and bool inputs give int64 unless dtype
// names the result's dtype (the input is cast to it first); an empty product is 1.
Tensor prod(const Tensor& t, std::optional<Dtype> dtype = std::nullopt);
Tensor prod(const Tensor& t, int64_t dim, bool keepdim = false, std::optional<Dtype> dtype = std::nullopt);
// t's elements moved by shifts[i] places along dims[i], wrapping around; without dims, along
// the flattened t (shifts then holds one shift).
Tensor roll(const Tensor& t, IntArrayRef shifts, IntArrayRef dims = {});
// flip(t, {1}) for t of 2 or more dims; flip(t, {0}) for t of 1 or more.
Tensor fliplr(const Tensor& t);
Tensor flipud(const Tensor& t);
// torch.flatten: t.flatten(start_dim, end_dim).
Tensor flatten(const Tensor& t, int64_t start_dim = 0, int64_t end_dim = -1);
// The slices of t along dim, as views (t.unbind(dim)).
std::vector<Tensor> unbind(const Tensor& t, int64_t dim = 0);
// The inner product of two 1-D tensors of one size and dtype; a matrix times a vector.
Tensor dot(const Tensor& a, const Tensor& b);
Tensor mv(const Tensor& m, const Tensor& v);
// A 1-D t placed on the diagonal-th diagonal of a square matrix of zeros, or the diagonal-th
// diagonal of a 2-D t as a 1-D tensor (diagonal > 0: above the main one, < 0: below).
Tensor diag(const Tensor& t, int64_t diagonal = 0);
// The sum of a matrix's main diagonal (torch.trace), 0-d, of sum's dtype (integers give int64);
// TraceBackward0. ValueError for a t that is not 2-D.
Tensor trace(const Tensor& t);
// Coordinate grids of 1-D (or 0-d) tensors: result i holds tensors[i] along dim i ("ij") or,
// with "xy", the first two dims swapped; every result has all the tensors' sizes.
std::vector<Tensor> meshgrid(const std::vector<Tensor>& tensors, std::string_view indexing = "ij");

// ---- sorting, sampling and scattering (sort.cpp, unique.cpp, scatter.cpp)
// {values, indices (int64)} of t sorted along dim; NaN sorts as the largest value. Equal
// elements always keep their order (the result of stable = true, whichever is asked).
std::tuple<Tensor, Tensor> sort(const Tensor& t, int64_t dim = -1, bool descending = false, bool stable = false);
// The indices of sort(t, dim, descending, stable).
Tensor argsort(const Tensor& t, int64_t dim = -1, bool descending = false, bool stable = false);
// {values, indices} of the k largest (smallest) elements along dim, in sorted order (sorted =
// false gives the same order); among equal values the lower index comes first.
std::tuple<Tensor, Tensor> topk(const Tensor& t, int64_t k, int64_t dim = -1, bool largest = true,
                                bool sorted = true);
// torch.unique: {values, inverse, counts}. Without dim, the distinct values of the flattened t,
// ascending (sorted = false gives that order too); inverse (int64, t's shape) holds each
// element's index in values, counts (int64) how often each value occurs. With dim, the distinct
// slices along dim in lexicographic order, inverse and counts of t.size(dim). NaN equals nothing:
// each NaN (each slice holding one) is a value of its own. inverse and counts not asked for are
// empty int64 tensors. Not differentiable.
std::tuple<Tensor, Tensor, Tensor> unique(const Tensor& t, bool sorted = true, bool return_inverse = false,
                                          bool return_counts = false, std::optional<int64_t> dim = std::nullopt);
// As unique, without sorting: each run of equal consecutive elements (slices along dim) is one value.
std::tuple<Tensor, Tensor, Tensor> unique_consecutive(const Tensor& t, bool return_inverse = false,
                                                      bool return_counts = false,
                                                      std::optional<int64_t> dim = std::nullopt);
// LibTorch's spellings of unique and unique_consecutive: _unique ({values, inverse}) and _unique2
// without dim, unique_dim and unique_dim_consecutive with one.
std::tuple<Tensor, Tensor> _unique(const Tensor& t, bool sorted = true, bool return_inverse = false);
std::tuple<Tensor, Tensor, Tensor> _unique2(const Tensor& t, bool sorted = true, bool return_inverse = false,
                                            bool return_counts = false);
std::tuple<Tensor, Tensor, Tensor> unique_dim(const Tensor& t, int64_t dim, bool sorted = true,
                                              bool return_inverse = false, bool return_counts = false);
std::tuple<Tensor, Tensor, Tensor> unique_dim_consecutive(const Tensor& t, int64_t dim, bool return_inverse = false,
                                                          bool return_counts = false);
// int64 category indices drawn from the rows of 1-D or 2-D non-negative weights probs (see
// docs/design.md, "multinomial"): the same numbers on every device for one seed.
Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement = false);
// The same, drawing from generator (of probs' device) instead of the device's default one.
Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement, Generator& generator);
// A copy of t with src[i][j] written at [index[i][j]][j] for dim 0 (index: int64, t's rank); a
// position written twice keeps one of the values, which one unspecified.
Tensor scatter(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src);
Tensor scatter(const Tensor& t, int64_t dim, const Tensor& index, const Scalar& value);
// As scatter, reducing into the copy of t with reduce "add" or "multiply" (not differentiable).
Tensor scatter(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce);
Tensor scatter(const Tensor& t, int64_t dim, const Tensor& index, const Scalar& value, std::string_view reduce);
// As scatter, reducing src's values written to one position with reduce: "sum", "prod",
// "mean", "amax" or "amin"; include_self = false leaves t's value out wherever src writes.
Tensor scatter_reduce(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce,
                      bool include_self = true);
// As scatter, adding src's values into the copy of t (repeated indices all add).
Tensor scatter_add(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src);
// A copy of t with alpha * source's slices added at t's slices index[0], index[1], ... along dim.
Tensor index_add(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha = 1);
// A copy of t with source's slices copied to t's slices index[i] along dim (int64 index).
Tensor index_copy(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& source);

// ---- copies and views
Tensor clone(const Tensor& t, std::optional<MemoryFormat> memory_format = std::nullopt);

}  // namespace wick
