// Tensor: a cheap, shared handle to an n-dimensional array on a device.
//
//   auto a = wick::ones({2, 3});
//   auto b = a.to("cuda");            // a new tensor on cuda:0; a stays on cpu
//   auto c = (a * 2 + 1).sum();       // ops return new tensors; *_ forms write in place
//   float v = c.item<float>();
#pragma once

#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "wick/detail/op_list.h"
#include "wick/detail/tensor_impl.h"
#include "wick/device.h"
#include "wick/dtype.h"
#include "wick/error.h"
#include "wick/scalar.h"

namespace wick {

namespace autograd {
class Node;
}
class Generator;  // wick/random.h
namespace cuda {
class Stream;
}

// How a new tensor lays its elements out in memory (torch.memory_format). Preserve, the default
// of clone, to and the *_like factories, keeps the source's strides when its elements fill one
// block without gaps or repeats (a transposed or channels-last tensor), else packs them densely
// in the order of the source's strides. ChannelsLast is NHWC for 4-D tensors, ChannelsLast3d
// NDHWC for 5-D ones.
enum class MemoryFormat : int8_t { Contiguous, Preserve, ChannelsLast, ChannelsLast3d };

// What a factory makes: dtype, device, requires_grad, pinned memory (each optional).
class TensorOptions {
 public:
  TensorOptions() = default;
  TensorOptions(Dtype d) { dtype_ = d; }
  TensorOptions(Device d) { device_ = d; }
  TensorOptions(const char* d) { device_ = Device(d); }
  TensorOptions(DeviceType t) { device_ = Device(t); }

  TensorOptions dtype(Dtype d) const { auto o = *this; o.dtype_ = d; return o; }
  TensorOptions device(Device d) const { auto o = *this; o.device_ = d; return o; }
  TensorOptions requires_grad(bool r) const { auto o = *this; o.requires_grad_ = r; return o; }
  TensorOptions pinned_memory(bool p) const { auto o = *this; o.pinned_ = p; return o; }

  std::optional<Dtype> dtype_opt() const { return dtype_; }
  std::optional<Device> device_opt() const { return device_; }
  Dtype dtype() const { return dtype_ ? *dtype_ : get_default_dtype(); }
  Device device() const { return device_ ? *device_ : get_default_device(); }
  bool requires_grad() const { return requires_grad_; }
  bool pinned_memory() const { return pinned_; }

 private:
  std::optional<Dtype> dtype_;
  std::optional<Device> device_;
  bool requires_grad_ = false;
  bool pinned_ = false;
};

// ---- LibTorch's option helpers (aliases of TensorOptions' setters; docs/porting.md):
// wick::dtype(kF32).requires_grad(true), wick::device(kCUDA), wick::requires_grad().
inline TensorOptions dtype(Dtype d) { return TensorOptions().dtype(d); }
inline TensorOptions device(Device d) { return TensorOptions().device(d); }
inline TensorOptions requires_grad(bool r = true) { return TensorOptions().requires_grad(r); }

template <class T, size_t N>
class TensorAccessor;

namespace indexing {
class TensorIndex;  // wick/indexing.h
}

namespace detail {
// ValueError "[op] expected a defined tensor but got an undefined one (Tensor())".
[[noreturn]] void raise_undefined(const char* op);
}  // namespace detail

class Tensor {
 public:
  using Impl = detail::TensorImpl;
  Tensor() = default;
  explicit Tensor(detail::IntrusivePtr<Impl> impl) : impl_(std::move(impl)) {}
  Tensor(const Tensor&) = default;
  Tensor(Tensor&&) noexcept = default;
  ~Tensor() = default;
  // Assigning to a named tensor makes it refer to other's data, as in Python.
  Tensor& operator=(const Tensor&) & = default;
  Tensor& operator=(Tensor&&) & noexcept = default;
  // Assigning to a temporary writes into the data it refers to, as LibTorch does: the values of
  // src (broadcast, as copy_) or the number v (as fill_), so that `w.grad().data() = g / n` and
  // `x[0] = 1` change w's gradient and x's first row.
  Tensor& operator=(const Tensor& src) &&;
  Tensor& operator=(const Scalar& v) &&;

  // ---- properties (of an undefined Tensor(), each raises ValueError naming itself)
  bool defined() const { return bool(impl_); }
  IntArrayRef sizes() const { return checked("sizes")->sizes(); }
  IntArrayRef strides() const { return checked("strides")->strides(); }
  int64_t size(int64_t d) const;
  int64_t stride(int64_t d) const;
  int64_t dim() const { return checked("dim")->dim(); }
  int64_t ndimension() const { return dim(); }
  int64_t numel() const { return checked("numel")->numel(); }
  Dtype dtype() const { return checked("dtype")->dtype(); }
  Dtype scalar_type() const { return dtype(); }
  Device device() const { return checked("device")->device(); }
  TensorOptions options() const { return TensorOptions(dtype()).device(device()); }
  bool is_cuda() const { return device().is_cuda(); }
  bool is_cpu() const { return device().is_cpu(); }
  bool is_pinned() const;
  bool is_contiguous() const { return checked("is_contiguous")->is_contiguous(); }
  // Whether the strides are those memory_format gives a new tensor of these sizes, dims of
  // size 1 aside (Preserve: as is_contiguous()).
  bool is_contiguous(MemoryFormat memory_format) const;
  bool is_floating_point() const { return wick::is_floating_point(dtype()); }
  int64_t element_size() const { return wick::element_size(dtype()); }
  int64_t nbytes() const { return numel() * element_size(); }
  int64_t storage_offset() const { return checked("storage_offset")->storage_offset(); }
  // Bumped by every in-place op on this tensor's storage.
  uint32_t _version() const { return checked("_version")->storage()->version(); }
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }
  Impl* impl() const { return impl_.get(); }
  const detail::IntrusivePtr<Impl>& impl_ptr() const { return impl_; }
  int64_t use_count() const { return impl_.use_count(); }

  // ---- element access
  // Address of element 0 (a device pointer for CUDA tensors); T must match dtype().
  template <class T>
  T* data_ptr() const;
  void* data_ptr() const { return checked("data_ptr")->data(); }
  // The value of a one-element tensor (copied from the device for CUDA tensors).
  template <class T>
  T item() const {
    return item().checked_to<T>("item");
  }
  Scalar item() const;
  // Host view with [] indexing; throws for CUDA tensors.
  template <class T, size_t N>
  TensorAccessor<T, N> accessor() const;
  // All elements in row-major order, converted to T; throws for CUDA tensors.
  template <class T>
  std::vector<T> to_vector() const;

  // ---- moves and casts (return *this when nothing changes)
  // A copy, when one is made, is laid out as memory_format says (none: Preserve).
  Tensor to(Device device, bool non_blocking = false, bool copy = false,
            std::optional<MemoryFormat> memory_format = std::nullopt) const;
  Tensor to(Dtype dtype, bool non_blocking = false, bool copy = false,
            std::optional<MemoryFormat> memory_format = std::nullopt) const;
  Tensor to(Device device, Dtype dtype, bool non_blocking = false, bool copy = false,
            std::optional<MemoryFormat> memory_format = std::nullopt) const;
  Tensor to(const char* device, bool non_blocking = false) const { return to(Device(device), non_blocking); }
  Tensor to(const Tensor& other, bool non_blocking = false) const;
  // LibTorch's to(TensorOptions): to the options' device and dtype, each the tensor's own where
  // the options leave it unset (x.to(y.options()) is x.to(y)). A template so that to(kCUDA) and
  // to(kFloat32) stay the device and dtype forms.
  template <class Options, std::enable_if_t<std::is_same_v<Options, TensorOptions>, int> = 0>
  Tensor to(const Options& options, bool non_blocking = false, bool copy = false) const {
    return to(options.device_opt().value_or(device()), options.dtype_opt().value_or(dtype()), non_blocking, copy);
  }
  Tensor cuda(int index = -1, bool non_blocking = false) const;
  Tensor cpu() const;
  Tensor half() const { return to(kFloat16); }
  Tensor bfloat16() const { return to(kBFloat16); }
  Tensor to_float() const { return to(kFloat32); }
  Tensor to_double() const { return to(kFloat64); }
  Tensor to_long() const { return to(kInt64); }
  Tensor pin_memory() const;
  // Marks this CUDA tensor's memory as used by work queued on stream s: when the tensor is
  // freed, its memory is not reused until that work is done (torch.Tensor.record_stream).
  // A tensor not on a CUDA device throws NotImplementedError.
  void record_stream(const cuda::Stream& s) const;
  // A copy laid out as memory_format says (none: Preserve, the source's layout when dense).
  Tensor clone(std::optional<MemoryFormat> memory_format = std::nullopt) const;
  // *this when is_contiguous(memory_format), else clone(memory_format).
  Tensor contiguous(MemoryFormat memory_format = MemoryFormat::Contiguous) const;

  // ---- views (share storage)
  Tensor view(IntArrayRef sizes) const;
  Tensor reshape(IntArrayRef sizes) const;
  Tensor permute(IntArrayRef dims) const;
  Tensor transpose(int64_t d0, int64_t d1) const;
  Tensor t() const;
  Tensor unsqueeze(int64_t d) const;
  Tensor squeeze() const;
  Tensor squeeze(int64_t d) const;
  // The same views in place: self takes the view's sizes and strides (torch.Tensor.unsqueeze_,
  // squeeze_, transpose_, t_); with grad, self's history gains the view's node.
  Tensor& unsqueeze_(int64_t d);
  const Tensor& unsqueeze_(int64_t d) const { return const_cast<Tensor&>(*this).unsqueeze_(d); }
  Tensor& squeeze_();
  const Tensor& squeeze_() const { return const_cast<Tensor&>(*this).squeeze_(); }
  Tensor& squeeze_(int64_t d);
  const Tensor& squeeze_(int64_t d) const { return const_cast<Tensor&>(*this).squeeze_(d); }
  Tensor& transpose_(int64_t d0, int64_t d1);
  const Tensor& transpose_(int64_t d0, int64_t d1) const { return const_cast<Tensor&>(*this).transpose_(d0, d1); }
  Tensor& t_();
  const Tensor& t_() const { return const_cast<Tensor&>(*this).t_(); }
  Tensor flatten(int64_t start = 0, int64_t end = -1) const;
  Tensor expand(IntArrayRef sizes) const;
  Tensor expand_as(const Tensor& other) const;
  Tensor view_as(const Tensor& other) const;
  Tensor narrow(int64_t d, int64_t start, int64_t length) const;
  // torch.Tensor.unfold: a view of every slice of `size` elements along dimension, `step`
  // apart, as a new last dim (node UnfoldBackward0).
  Tensor unfold(int64_t dimension, int64_t size, int64_t step) const;
  // torch.Tensor.diagonal: a view of the offset-th diagonal of the planes of dims dim1 and dim2
  // (both removed), as a new last dim (node DiagonalBackward0). offset > 0: above the main one.
  Tensor diagonal(int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1) const;
  Tensor select(int64_t d, int64_t index) const;
  Tensor slice(int64_t d, std::optional<int64_t> start = std::nullopt,
               std::optional<int64_t> end = std::nullopt, int64_t step = 1) const;
  Tensor operator[](int64_t index) const { return select(0, index); }
  std::vector<Tensor> chunk(int64_t chunks, int64_t d = 0) const;
  std::vector<Tensor> split(int64_t split_size, int64_t d = 0) const;
  std::vector<Tensor> split(IntArrayRef split_sizes, int64_t d = 0) const;
  std::vector<Tensor> unbind(int64_t d = 0) const;

  // ---- in-place
  // Every in-place method has a const twin returning const Tensor&, as LibTorch declares its
  // in-place methods (a Tensor is a handle: `for (const auto& p : model->parameters())
  // p.mul_(0.5)` modifies the parameters); the twin calls the method.
  Tensor& fill_(const Scalar& v);
  const Tensor& fill_(const Scalar& v) const { return const_cast<Tensor&>(*this).fill_(v); }
  Tensor& zero_();
  const Tensor& zero_() const { return const_cast<Tensor&>(*this).zero_(); }
  Tensor& copy_(const Tensor& src, bool non_blocking = false);
  const Tensor& copy_(const Tensor& src, bool non_blocking = false) const {
    return const_cast<Tensor&>(*this).copy_(src, non_blocking);
  }
  Tensor& normal_(double mean = 0, double std = 1);
  const Tensor& normal_(double mean = 0, double std = 1) const {
    return const_cast<Tensor&>(*this).normal_(mean, std);
  }
  Tensor& uniform_(double from = 0, double to = 1);
  const Tensor& uniform_(double from = 0, double to = 1) const {
    return const_cast<Tensor&>(*this).uniform_(from, to);
  }
  // add_ sub_ mul_ div_ for a tensor or scalar other, and += -= *= /= (wick/detail/op_list.h)
#define WICK_X(Name, name, op, alpha)                                               \
  Tensor& name##_(const Tensor& other WICK_OP_ALPHA_DECL_##alpha);                  \
  Tensor& name##_(const Scalar& other WICK_OP_ALPHA_DECL_##alpha);                  \
  const Tensor& name##_(const Tensor& other WICK_OP_ALPHA_DECL_##alpha) const {     \
    return const_cast<Tensor&>(*this).name##_(other WICK_OP_ALPHA_ARG_COMMA_##alpha); \
  }                                                                                 \
  const Tensor& name##_(const Scalar& other WICK_OP_ALPHA_DECL_##alpha) const {     \
    return const_cast<Tensor&>(*this).name##_(other WICK_OP_ALPHA_ARG_COMMA_##alpha); \
  }                                                                                 \
  Tensor& operator op##=(const Tensor& other) { return name##_(other); }           \
  Tensor& operator op##=(const Scalar& other) { return name##_(other); }
  WICK_BINARY_OPS(WICK_X)
#undef WICK_X

  // ---- math (method forms of the free functions in ops.h)
#define WICK_X(Name, name, op, alpha) Tensor name(const Tensor& other WICK_OP_ALPHA_DECL_##alpha) const;
  WICK_BINARY_OPS(WICK_X)
#undef WICK_X
  Tensor sum(std::optional<Dtype> dtype = std::nullopt) const;
  Tensor sum(IntArrayRef dims, bool keepdim = false, std::optional<Dtype> dtype = std::nullopt) const;
  Tensor mean(std::optional<Dtype> dtype = std::nullopt) const;
  Tensor mean(IntArrayRef dims, bool keepdim = false, std::optional<Dtype> dtype = std::nullopt) const;
  Tensor matmul(const Tensor& other) const;
  Tensor mm(const Tensor& other) const;
  Tensor bmm(const Tensor& other) const;
  Tensor addmm(const Tensor& mat1, const Tensor& mat2, const Scalar& beta = 1, const Scalar& alpha = 1) const;
  // neg() neg_() abs() abs_() ... (wick/detail/op_list.h, the lines of form Methods)
#define WICK_X(Name, name, kind, autocast, form) WICK_OP_UNARY_METHODS_##form(name)
  WICK_UNARY_OPS(WICK_X)
#undef WICK_X
  Tensor pow(const Scalar& exponent) const;
  Tensor pow(const Tensor& exponent) const;
  Tensor remainder(const Scalar& other) const;
  Tensor remainder(const Tensor& other) const;
  Tensor fmod(const Scalar& other) const;
  Tensor fmod(const Tensor& other) const;
  Tensor div(const Tensor& other, std::optional<std::string_view> rounding_mode) const;
  Tensor div(const Scalar& other, std::optional<std::string_view> rounding_mode) const;
  Tensor floor_divide(const Tensor& other) const;
  Tensor floor_divide(const Scalar& other) const;
  Tensor polygamma(int64_t n) const;
  Tensor atan2(const Tensor& other) const;
  Tensor clamp(const std::optional<Scalar>& min, const std::optional<Scalar>& max = std::nullopt) const;
  Tensor clamp(const std::optional<Tensor>& min = {}, const std::optional<Tensor>& max = {}) const;
  Tensor clamp_min(const Scalar& min) const;
  Tensor clamp_max(const Scalar& max) const;
#define WICK_X(Name, name, op, mirror) \
  Tensor name(const Tensor& other) const; \
  Tensor name(const Scalar& other) const;
  WICK_COMPARE_OPS(WICK_X)
#undef WICK_X
  // logical_and logical_or logical_xor, logical_not; the in-place forms write 0 or 1 in this
  // tensor's dtype (wick/detail/op_list.h)
#define WICK_X(Name, name)                                                                                    \
  Tensor name(const Tensor& other) const;                                                                     \
  Tensor& name##_(const Tensor& other);                                                                       \
  const Tensor& name##_(const Tensor& other) const { return const_cast<Tensor&>(*this).name##_(other); }
  WICK_LOGICAL_OPS(WICK_X)
#undef WICK_X
  Tensor logical_not() const;
  Tensor& logical_not_();
  const Tensor& logical_not_() const { return const_cast<Tensor&>(*this).logical_not_(); }
  // bitwise_and bitwise_or bitwise_xor and the shifts, for a tensor or scalar other; bitwise_not;
  // &= |= ^= (bool and integer tensors; wick/detail/op_list.h)
#define WICK_X(Name, name)                                                                                    \
  Tensor name(const Tensor& other) const;                                                                     \
  Tensor name(const Scalar& other) const;                                                                     \
  Tensor& name##_(const Tensor& other);                                                                       \
  Tensor& name##_(const Scalar& other);                                                                       \
  const Tensor& name##_(const Tensor& other) const { return const_cast<Tensor&>(*this).name##_(other); }      \
  const Tensor& name##_(const Scalar& other) const { return const_cast<Tensor&>(*this).name##_(other); }
  WICK_BITWISE_OPS(WICK_X)
#undef WICK_X
  Tensor bitwise_not() const;
  Tensor& bitwise_not_();
  const Tensor& bitwise_not_() const { return const_cast<Tensor&>(*this).bitwise_not_(); }
  Tensor& operator&=(const Tensor& other) { return bitwise_and_(other); }
  Tensor& operator&=(const Scalar& other) { return bitwise_and_(other); }
  Tensor& operator|=(const Tensor& other) { return bitwise_or_(other); }
  Tensor& operator|=(const Scalar& other) { return bitwise_or_(other); }
  Tensor& operator^=(const Tensor& other) { return bitwise_xor_(other); }
  Tensor& operator^=(const Scalar& other) { return bitwise_xor_(other); }
  // self where cond is true, other elsewhere (torch.Tensor.where).
  Tensor where(const Tensor& cond, const Tensor& other) const;
  Tensor masked_fill(const Tensor& mask, const Scalar& value) const;
  Tensor masked_fill(const Tensor& mask, const Tensor& value) const;
  Tensor max() const;
  Tensor min() const;
  // {values, indices} along dim.
  std::tuple<Tensor, Tensor> max(int64_t dim, bool keepdim = false) const;
  std::tuple<Tensor, Tensor> min(int64_t dim, bool keepdim = false) const;
  Tensor argmax(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor argmin(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  // var/std: the overloads of wick::var in ops.h (var(false): biased, all dims).
  Tensor var(IntArrayRef dims = {}, bool unbiased = true, bool keepdim = false) const;
  Tensor var(IntArrayRef dims, double correction, bool keepdim = false) const;
  template <class Bool, std::enable_if_t<std::is_same_v<Bool, bool>, int> = 0>
  Tensor var(Bool unbiased) const { return var(IntArrayRef{}, bool(unbiased)); }
  Tensor std(IntArrayRef dims = {}, bool unbiased = true, bool keepdim = false) const;
  Tensor std(IntArrayRef dims, double correction, bool keepdim = false) const;
  template <class Bool, std::enable_if_t<std::is_same_v<Bool, bool>, int> = 0>
  Tensor std(Bool unbiased) const { return std(IntArrayRef{}, bool(unbiased)); }
  Tensor norm(const Scalar& p = 2) const;
  Tensor norm(const Scalar& p, IntArrayRef dims, bool keepdim = false) const;
  Tensor softmax(int64_t dim, std::optional<Dtype> dtype = std::nullopt) const;
  Tensor log_softmax(int64_t dim, std::optional<Dtype> dtype = std::nullopt) const;
  Tensor index_select(int64_t dim, const Tensor& index) const;
  // A copy with the order of elements along each of dims reversed (torch.flip).
  Tensor flip(IntArrayRef dims) const;
  // torch.Tensor.equal: wick::equal(*this, other).
  bool equal(const Tensor& other) const;
  Tensor gather(int64_t dim, const Tensor& index) const;
  // Python's self[indices] (wick/indexing.h): a view for integers, slices, None, Ellipsis and
  // bools; a copy when an index is a tensor (IndexBackward0).
  Tensor index(std::initializer_list<indexing::TensorIndex> indices) const;
  Tensor index(const std::vector<indexing::TensorIndex>& indices) const;
  // Python's self[indices] = values (broadcast to the indexed shape; with accumulate, added,
  // every repeated index adding). Returns *this (IndexPutBackward0).
  Tensor& index_put_(std::initializer_list<indexing::TensorIndex> indices, const Tensor& values,
                     bool accumulate = false);
  const Tensor& index_put_(std::initializer_list<indexing::TensorIndex> indices, const Tensor& values, bool accumulate = false) const {
    return const_cast<Tensor&>(*this).index_put_(indices, values, accumulate);
  }
  Tensor& index_put_(const std::vector<indexing::TensorIndex>& indices, const Tensor& values,
                     bool accumulate = false);
  const Tensor& index_put_(const std::vector<indexing::TensorIndex>& indices, const Tensor& values, bool accumulate = false) const {
    return const_cast<Tensor&>(*this).index_put_(indices, values, accumulate);
  }
  Tensor& index_put_(std::initializer_list<indexing::TensorIndex> indices, const Scalar& value);
  const Tensor& index_put_(std::initializer_list<indexing::TensorIndex> indices, const Scalar& value) const {
    return const_cast<Tensor&>(*this).index_put_(indices, value);
  }
  Tensor& index_put_(const std::vector<indexing::TensorIndex>& indices, const Scalar& value);
  const Tensor& index_put_(const std::vector<indexing::TensorIndex>& indices, const Scalar& value) const {
    return const_cast<Tensor&>(*this).index_put_(indices, value);
  }
  // index_put_ on a copy (torch.Tensor.index_put).
  Tensor index_put(const std::vector<indexing::TensorIndex>& indices, const Tensor& values,
                   bool accumulate = false) const;
  // The elements where mask (bool, broadcast with self) is true, as a 1-D tensor.
  Tensor masked_select(const Tensor& mask) const;
  // The indices of the non-zero elements, one row each: int64 [count, dim()].
  Tensor nonzero() const;
  Tensor argwhere() const;

  // ---- shape, scan and reduction methods (the free functions of ops.h)
  Tensor tril(int64_t diagonal = 0) const;
  Tensor triu(int64_t diagonal = 0) const;
  Tensor& tril_(int64_t diagonal = 0);
  const Tensor& tril_(int64_t diagonal = 0) const { return const_cast<Tensor&>(*this).tril_(diagonal); }
  Tensor& triu_(int64_t diagonal = 0);
  const Tensor& triu_(int64_t diagonal = 0) const { return const_cast<Tensor&>(*this).triu_(diagonal); }
  Tensor cumsum(int64_t dim, std::optional<Dtype> dtype = std::nullopt) const;
  Tensor cumprod(int64_t dim, std::optional<Dtype> dtype = std::nullopt) const;
  Tensor& cumsum_(int64_t dim, std::optional<Dtype> dtype = std::nullopt);
  const Tensor& cumsum_(int64_t dim, std::optional<Dtype> dtype = std::nullopt) const {
    return const_cast<Tensor&>(*this).cumsum_(dim, dtype);
  }
  Tensor& cumprod_(int64_t dim, std::optional<Dtype> dtype = std::nullopt);
  const Tensor& cumprod_(int64_t dim, std::optional<Dtype> dtype = std::nullopt) const {
    return const_cast<Tensor&>(*this).cumprod_(dim, dtype);
  }
  Tensor logsumexp(IntArrayRef dims, bool keepdim = false) const;
  Tensor norm(const char* p, IntArrayRef dims = {}, bool keepdim = false) const;
  // The tensor tiled sizes[i] times along dim i; more sizes than dims prepends dims of size 1.
  Tensor repeat(IntArrayRef sizes) const;
  Tensor repeat_interleave(int64_t repeats, std::optional<int64_t> dim = std::nullopt) const;
  Tensor repeat_interleave(const Tensor& repeats, std::optional<int64_t> dim = std::nullopt) const;
  Tensor outer(const Tensor& other) const;
  Tensor ger(const Tensor& other) const;
  Tensor lerp(const Tensor& end, const Scalar& weight) const;
  Tensor lerp(const Tensor& end, const Tensor& weight) const;
  Tensor& lerp_(const Tensor& end, const Scalar& weight);
  const Tensor& lerp_(const Tensor& end, const Scalar& weight) const {
    return const_cast<Tensor&>(*this).lerp_(end, weight);
  }
  Tensor& lerp_(const Tensor& end, const Tensor& weight);
  const Tensor& lerp_(const Tensor& end, const Tensor& weight) const {
    return const_cast<Tensor&>(*this).lerp_(end, weight);
  }
  Tensor baddbmm(const Tensor& batch1, const Tensor& batch2, const Scalar& beta = 1, const Scalar& alpha = 1) const;

  // ---- more in-place math (the result dtype must cast to this tensor's)
  Tensor& pow_(const Scalar& exponent);
  const Tensor& pow_(const Scalar& exponent) const { return const_cast<Tensor&>(*this).pow_(exponent); }
  Tensor& pow_(const Tensor& exponent);
  const Tensor& pow_(const Tensor& exponent) const { return const_cast<Tensor&>(*this).pow_(exponent); }
  Tensor& remainder_(const Scalar& other);
  const Tensor& remainder_(const Scalar& other) const { return const_cast<Tensor&>(*this).remainder_(other); }
  Tensor& remainder_(const Tensor& other);
  const Tensor& remainder_(const Tensor& other) const { return const_cast<Tensor&>(*this).remainder_(other); }
  Tensor& fmod_(const Scalar& other);
  const Tensor& fmod_(const Scalar& other) const { return const_cast<Tensor&>(*this).fmod_(other); }
  Tensor& fmod_(const Tensor& other);
  const Tensor& fmod_(const Tensor& other) const { return const_cast<Tensor&>(*this).fmod_(other); }
  Tensor& div_(const Tensor& other, std::optional<std::string_view> rounding_mode);
  const Tensor& div_(const Tensor& other, std::optional<std::string_view> rounding_mode) const {
    return const_cast<Tensor&>(*this).div_(other, rounding_mode);
  }
  Tensor& div_(const Scalar& other, std::optional<std::string_view> rounding_mode);
  const Tensor& div_(const Scalar& other, std::optional<std::string_view> rounding_mode) const {
    return const_cast<Tensor&>(*this).div_(other, rounding_mode);
  }
  Tensor& floor_divide_(const Tensor& other);
  const Tensor& floor_divide_(const Tensor& other) const { return const_cast<Tensor&>(*this).floor_divide_(other); }
  Tensor& floor_divide_(const Scalar& other);
  const Tensor& floor_divide_(const Scalar& other) const { return const_cast<Tensor&>(*this).floor_divide_(other); }
  Tensor& polygamma_(int64_t n);
  const Tensor& polygamma_(int64_t n) const { return const_cast<Tensor&>(*this).polygamma_(n); }
  Tensor& atan2_(const Tensor& other);
  const Tensor& atan2_(const Tensor& other) const { return const_cast<Tensor&>(*this).atan2_(other); }
  Tensor& operator%=(const Scalar& other) { return remainder_(other); }
  Tensor& operator%=(const Tensor& other) { return remainder_(other); }
  Tensor& clamp_(const std::optional<Scalar>& min, const std::optional<Scalar>& max = std::nullopt);
  const Tensor& clamp_(const std::optional<Scalar>& min, const std::optional<Scalar>& max = std::nullopt) const {
    return const_cast<Tensor&>(*this).clamp_(min, max);
  }
  Tensor& clamp_(const std::optional<Tensor>& min = {}, const std::optional<Tensor>& max = {});
  const Tensor& clamp_(const std::optional<Tensor>& min = {}, const std::optional<Tensor>& max = {}) const {
    return const_cast<Tensor&>(*this).clamp_(min, max);
  }
  Tensor& clamp_min_(const Scalar& min);
  const Tensor& clamp_min_(const Scalar& min) const { return const_cast<Tensor&>(*this).clamp_min_(min); }
  Tensor& clamp_max_(const Scalar& max);
  const Tensor& clamp_max_(const Scalar& max) const { return const_cast<Tensor&>(*this).clamp_max_(max); }
  Tensor& masked_fill_(const Tensor& mask, const Scalar& value);
  const Tensor& masked_fill_(const Tensor& mask, const Scalar& value) const {
    return const_cast<Tensor&>(*this).masked_fill_(mask, value);
  }
  Tensor& masked_fill_(const Tensor& mask, const Tensor& value);
  const Tensor& masked_fill_(const Tensor& mask, const Tensor& value) const {
    return const_cast<Tensor&>(*this).masked_fill_(mask, value);
  }

  // ---- sorting, sampling and scattering (the free functions of ops.h; *_ forms write in place)
  std::tuple<Tensor, Tensor> sort(int64_t dim = -1, bool descending = false, bool stable = false) const;
  Tensor argsort(int64_t dim = -1, bool descending = false, bool stable = false) const;
  std::tuple<Tensor, Tensor> topk(int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true) const;
  Tensor multinomial(int64_t num_samples, bool replacement = false) const;
  Tensor multinomial(int64_t num_samples, bool replacement, Generator& generator) const;
  Tensor scatter(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor scatter(int64_t dim, const Tensor& index, const Scalar& value) const;
  Tensor scatter(int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce) const;
  Tensor scatter(int64_t dim, const Tensor& index, const Scalar& value, std::string_view reduce) const;
  Tensor scatter_reduce(int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce,
                        bool include_self = true) const;
  Tensor scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor index_add(int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha = 1) const;
  Tensor index_copy(int64_t dim, const Tensor& index, const Tensor& source) const;
  Tensor& scatter_(int64_t dim, const Tensor& index, const Tensor& src);
  const Tensor& scatter_(int64_t dim, const Tensor& index, const Tensor& src) const {
    return const_cast<Tensor&>(*this).scatter_(dim, index, src);
  }
  Tensor& scatter_(int64_t dim, const Tensor& index, const Scalar& value);
  const Tensor& scatter_(int64_t dim, const Tensor& index, const Scalar& value) const {
    return const_cast<Tensor&>(*this).scatter_(dim, index, value);
  }
  Tensor& scatter_(int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce);
  const Tensor& scatter_(int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce) const {
    return const_cast<Tensor&>(*this).scatter_(dim, index, src, reduce);
  }
  Tensor& scatter_(int64_t dim, const Tensor& index, const Scalar& value, std::string_view reduce);
  const Tensor& scatter_(int64_t dim, const Tensor& index, const Scalar& value, std::string_view reduce) const {
    return const_cast<Tensor&>(*this).scatter_(dim, index, value, reduce);
  }
  Tensor& scatter_reduce_(int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce,
                          bool include_self = true);
  const Tensor& scatter_reduce_(int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce, bool include_self = true) const {
    return const_cast<Tensor&>(*this).scatter_reduce_(dim, index, src, reduce, include_self);
  }
  Tensor& scatter_add_(int64_t dim, const Tensor& index, const Tensor& src);
  const Tensor& scatter_add_(int64_t dim, const Tensor& index, const Tensor& src) const {
    return const_cast<Tensor&>(*this).scatter_add_(dim, index, src);
  }
  Tensor& index_add_(int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha = 1);
  const Tensor& index_add_(int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha = 1) const {
    return const_cast<Tensor&>(*this).index_add_(dim, index, source, alpha);
  }
  Tensor& index_copy_(int64_t dim, const Tensor& index, const Tensor& source);
  const Tensor& index_copy_(int64_t dim, const Tensor& index, const Tensor& source) const {
    return const_cast<Tensor&>(*this).index_copy_(dim, index, source);
  }

  // ---- Scalar forms, in-place comparisons, all/any and data(), as PyTorch and LibTorch spell
  // them (src/core/tensor_spellings.cpp)
  // self + alpha other, self - alpha other, self * other, self / other for a Scalar other (an
  // integer tensor divided gives the default float dtype, as PyTorch).
  Tensor add(const Scalar& other, const Scalar& alpha = 1) const;
  Tensor sub(const Scalar& other, const Scalar& alpha = 1) const;
  Tensor mul(const Scalar& other) const;
  Tensor div(const Scalar& other) const;
  // self = (self op other), as 1 or 0 in self's dtype (torch.Tensor.eq_ ...).
#define WICK_X(Name, name, op, mirror)                                                                 \
  Tensor& name##_(const Tensor& other);                                                               \
  Tensor& name##_(const Scalar& other);                                                               \
  const Tensor& name##_(const Tensor& other) const { return const_cast<Tensor&>(*this).name##_(other); } \
  const Tensor& name##_(const Scalar& other) const { return const_cast<Tensor&>(*this).name##_(other); }
  WICK_COMPARE_OPS(WICK_X)
#undef WICK_X
  // Whether every / any element is non-zero: bool (uint8 for a uint8 tensor), over all
  // elements or along dim.
  Tensor all() const;
  Tensor all(int64_t dim, bool keepdim = false) const;
  Tensor any() const;
  Tensor any(int64_t dim, bool keepdim = false) const;
  // LibTorch's Tensor::data(): this tensor's data cut from the graph (detach()).
  Tensor data() const;
  // LibTorch's deprecated spellings: data<T>() is data_ptr<T>(), toType(t) is to(t).
  template <class T>
  T* data() const {
    return data_ptr<T>();
  }
  Tensor toType(Dtype t) const { return to(t); }
  // The composites of src/core/composite_ops.cpp (wick/ops.h says what each does).
  Tensor square() const;
  Tensor& square_();
  const Tensor& square_() const { return const_cast<Tensor&>(*this).square_(); }
  Tensor isnan() const;
  Tensor isinf() const;
  Tensor isfinite() const;
  Tensor isclose(const Tensor& other, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false) const;
  bool allclose(const Tensor& other, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false) const;
  Tensor maximum(const Tensor& other) const;
  Tensor minimum(const Tensor& other) const;
  // torch.Tensor.max(other) / min(other): maximum / minimum (node MaximumBackward0 ...).
  Tensor max(const Tensor& other) const;
  Tensor min(const Tensor& other) const;
  Tensor amax(IntArrayRef dims = {}, bool keepdim = false) const;
  Tensor amin(IntArrayRef dims = {}, bool keepdim = false) const;
  Tensor count_nonzero(IntArrayRef dims = {}) const;
  Tensor prod(std::optional<Dtype> dtype = std::nullopt) const;
  Tensor prod(int64_t dim, bool keepdim = false, std::optional<Dtype> dtype = std::nullopt) const;
  Tensor roll(IntArrayRef shifts, IntArrayRef dims = {}) const;
  Tensor fliplr() const;
  Tensor flipud() const;
  // This tensor in other's dtype (to(other.dtype())); LibTorch's type(dtype) is to(dtype).
  Tensor type_as(const Tensor& other) const;
  Tensor type(Dtype dtype) const;
  Tensor round(int64_t decimals) const;
  Tensor& round_(int64_t decimals);
  const Tensor& round_(int64_t decimals) const { return const_cast<Tensor&>(*this).round_(decimals); }
  Tensor median() const;
  std::tuple<Tensor, Tensor> median(int64_t dim, bool keepdim = false) const;
  Tensor index_fill(int64_t dim, const Tensor& index, const Scalar& value) const;
  Tensor index_fill(int64_t dim, const Tensor& index, const Tensor& value) const;
  Tensor& index_fill_(int64_t dim, const Tensor& index, const Scalar& value);
  const Tensor& index_fill_(int64_t dim, const Tensor& index, const Scalar& value) const {
    return const_cast<Tensor&>(*this).index_fill_(dim, index, value);
  }
  Tensor& index_fill_(int64_t dim, const Tensor& index, const Tensor& value);
  const Tensor& index_fill_(int64_t dim, const Tensor& index, const Tensor& value) const {
    return const_cast<Tensor&>(*this).index_fill_(dim, index, value);
  }
  Tensor masked_scatter(const Tensor& mask, const Tensor& source) const;
  Tensor& masked_scatter_(const Tensor& mask, const Tensor& source);
  const Tensor& masked_scatter_(const Tensor& mask, const Tensor& source) const {
    return const_cast<Tensor&>(*this).masked_scatter_(mask, source);
  }
  Tensor dot(const Tensor& other) const;
  Tensor mv(const Tensor& vec) const;
  Tensor diag(int64_t diagonal = 0) const;
  Tensor trace() const;
  // wick/random.h: bernoulli(*this) (its elements the probabilities) or bernoulli(*this, p); in
  // place, self filled with the draws (p a scalar or a tensor broadcast to self).
  Tensor bernoulli() const;
  Tensor bernoulli(double p) const;
  Tensor& bernoulli_(double p = 0.5);
  const Tensor& bernoulli_(double p = 0.5) const { return const_cast<Tensor&>(*this).bernoulli_(p); }
  Tensor& bernoulli_(const Tensor& p);
  const Tensor& bernoulli_(const Tensor& p) const { return const_cast<Tensor&>(*this).bernoulli_(p); }
  // LibTorch's print(): "[CPUFloatType [2, 3]]" (the backend, the dtype, the sizes) on stderr.
  void print() const;
  // LibTorch's toString(): the backend and dtype print() shows ("CPUFloatType"; "UndefinedType").
  std::string toString() const;
  // LibTorch's deprecated type(): the dtype and the device's type as one value, printed as
  // toString() ("CPUFloatType"): x.type().scalarType(), x.type().is_cuda().
  class DeprecatedTypeProperties type() const;

  // ---- autograd (src/autograd; see wick/autograd.h)
  bool requires_grad() const { return checked("requires_grad")->requires_grad(); }
  // Makes a leaf record the ops applied to it (floating dtypes only).
  Tensor& requires_grad_(bool requires_grad = true);
  const Tensor& requires_grad_(bool requires_grad = true) const {
    return const_cast<Tensor&>(*this).requires_grad_(requires_grad);
  }
  // LibTorch's set_requires_grad(r) (Python's `x.requires_grad = r`): requires_grad_(r).
  Tensor& set_requires_grad(bool requires_grad) { return requires_grad_(requires_grad); }
  const Tensor& set_requires_grad(bool requires_grad) const { return requires_grad_(requires_grad); }
  // The gradient accumulated by backward() (undefined until then).
  const Tensor& grad() const;
  Tensor& mutable_grad() const;
  void set_grad(const Tensor& grad) const;
  // The node that made this tensor (null for leaves); grad_fn()->name() is PyTorch's name.
  std::shared_ptr<autograd::Node> grad_fn() const;
  // Without gradient, this tensor must hold one element (d self / d self = 1). create_graph:
  // the gradients computed record their own graph (double backward); retain_graph defaults to it.
  void backward(const Tensor& gradient = {}, std::optional<bool> retain_graph = std::nullopt,
                bool create_graph = false) const;
  // The same data, cut from the graph (shares storage and version counter).
  Tensor detach() const;
  // Raises for a view (is_view()), as PyTorch does.
  Tensor& detach_();
  const Tensor& detach_() const { return const_cast<Tensor&>(*this).detach_(); }
  // Whether a view op (view, select, slice, transpose, expand, ...) made this tensor: it shares
  // its storage with the tensor it was taken from. detach() and data() give no view.
  bool is_view() const;
  // Keeps grad() of a non-leaf after backward().
  void retain_grad() const;
  bool retains_grad() const;
  bool is_leaf() const;
  int64_t output_nr() const;
  // Tensor.register_hook: hook(grad) runs each time a gradient of this tensor is computed,
  // before it is used (a leaf's before it is accumulated into grad(); a non-leaf's, summed over
  // its uses, before its grad_fn runs and before retain_grad() keeps it), hooks in registration
  // order. A hook returning a Tensor replaces the gradient with it (same sizes); one returning
  // void, or an undefined tensor, keeps it. Returns the hook's position for remove_hook, as
  // LibTorch. ValueError when this tensor does not require grad.
  template <class F>
  unsigned register_hook(F&& hook) const {
    if constexpr (std::is_void_v<std::invoke_result_t<F&, const Tensor&>>)
      return add_grad_hook([h = std::forward<F>(hook)](const Tensor& g) mutable {
        h(g);
        return Tensor();
      });
    else
      return add_grad_hook(std::function<Tensor(const Tensor&)>(std::forward<F>(hook)));
  }
  // Unregisters the hook at pos (ValueError when there is none there).
  void remove_hook(unsigned pos) const;

  // ---- factories keeping this tensor's dtype and device
  Tensor new_empty(IntArrayRef sizes, TensorOptions o = {}) const;
  Tensor new_zeros(IntArrayRef sizes, TensorOptions o = {}) const;
  Tensor new_ones(IntArrayRef sizes, TensorOptions o = {}) const;
  Tensor new_full(IntArrayRef sizes, const Scalar& v, TensorOptions o = {}) const;
  template <class T> Tensor new_tensor(std::initializer_list<T> values) const;
  template <class T> Tensor new_tensor(std::initializer_list<std::initializer_list<T>> values) const;

 private:
  TensorOptions merge(TensorOptions o) const;
  unsigned add_grad_hook(std::function<Tensor(const Tensor&)> hook) const;  // register_hook's
  Impl* checked(const char* op) const {
    if (!impl_) [[unlikely]]
      detail::raise_undefined(op);
    return impl_.get();
  }
  detail::IntrusivePtr<Impl> impl_;
};

// PyTorch's repr: tensor([[0.0024, 0.6778], ...], device='cuda:0')
std::ostream& operator<<(std::ostream& os, const Tensor& t);

// What Tensor::type() returns (LibTorch's at::DeprecatedTypeProperties).
class DeprecatedTypeProperties {
 public:
  explicit DeprecatedTypeProperties(const Tensor& t)
      : defined_(t.defined()), dtype_(defined_ ? t.dtype() : kFloat32),
        device_(defined_ ? t.device().type() : DeviceType::CPU), name_(t.toString()) {}
  // ValueError "[type] ..." for an undefined tensor's.
  Dtype scalarType() const {
    WICK_CHECK(defined_, ValueError, "type", "an undefined tensor has no scalar type");
    return dtype_;
  }
  DeviceType device_type() const { return device_; }
  bool is_cuda() const { return defined_ && device_ == DeviceType::CUDA; }
  const std::string& toString() const { return name_; }
  // The options of a tensor of this type (dtype and device type).
  TensorOptions options() const { return TensorOptions(scalarType()).device(Device(device_)); }
  bool operator==(const DeprecatedTypeProperties& o) const { return name_ == o.name_; }

 private:
  bool defined_;
  Dtype dtype_;
  DeviceType device_;
  std::string name_;
};
std::ostream& operator<<(std::ostream& os, const DeprecatedTypeProperties& t);
inline DeprecatedTypeProperties Tensor::type() const { return DeprecatedTypeProperties(*this); }
std::string repr(const Tensor& t);

// ---- host accessor
template <class T, size_t N>
class TensorAccessor {
 public:
  TensorAccessor(T* data, const int64_t* sizes, const int64_t* strides)
      : data_(data), sizes_(sizes), strides_(strides) {}
  decltype(auto) operator[](int64_t i) const {
    if constexpr (N == 1) return data_[i * strides_[0]];
    else return TensorAccessor<T, N - 1>(data_ + i * strides_[0], sizes_ + 1, strides_ + 1);
  }
  int64_t size(size_t d) const { return sizes_[d]; }
  int64_t stride(size_t d) const { return strides_[d]; }
  T* data() const { return data_; }

 private:
  T* data_;
  const int64_t* sizes_;
  const int64_t* strides_;
};

namespace detail {
void check_data_ptr_dtype(const Tensor& t, Dtype expected, const char* op);
void check_host_access(const Tensor& t, const char* op);
Tensor tensor_from_values(const void* values, Dtype dtype, IntArrayRef sizes, TensorOptions o,
                          const char* op = "tensor");
// Initializer-list values widened to one of bool (as uint8), int64 or double.
template <class T>
using Wide = std::conditional_t<std::is_same_v<T, bool>, uint8_t,
                                std::conditional_t<std::is_integral_v<T>, int64_t, double>>;
template <class T> constexpr Dtype wide_dtype() {
  if constexpr (std::is_same_v<T, bool>) return kBool;
  else if constexpr (std::is_integral_v<T>) return kInt64;
  else return kFloat64;
}
// The dtype LibTorch's torch::tensor gives values of C++ type T: bool, the default float for
// float and double, int8, uint8 and int16 their own, other integers int64.
template <class T> Dtype list_dtype() {
  if constexpr (std::is_same_v<T, int8_t>) return kInt8;
  else if constexpr (std::is_same_v<T, uint8_t>) return kUInt8;
  else if constexpr (std::is_same_v<T, int16_t>) return kInt16;
  else return std::is_floating_point_v<T> ? get_default_dtype() : wide_dtype<T>();
}
// Appends the values of a nested list to out and its sizes (from depth on) to sizes, checking
// that every list at a depth is as long as the first one there.
template <class T, class Out>
void flatten_nested(const T& value, size_t, DimVector&, std::vector<Out>& out) {
  out.push_back(Out(value));
}
template <class T, class Out>
void flatten_nested(std::initializer_list<T> values, size_t depth, DimVector& sizes, std::vector<Out>& out) {
  if (sizes.size() == depth) sizes.push_back(int64_t(values.size()));
  WICK_CHECK(sizes[depth] == int64_t(values.size()), ValueError, "tensor", "expected sequence of length ",
             sizes[depth], " at dim ", depth, " (got ", values.size(), ")");
  for (const T& v : values) flatten_nested(v, depth + 1, sizes, out);
}
template <class T>
std::vector<Wide<T>> flatten_list(std::initializer_list<std::initializer_list<T>> values) {
  std::vector<Wide<T>> v;
  size_t cols = values.size() ? values.begin()->size() : 0;
  for (auto& row : values) {
    WICK_CHECK(row.size() == cols, ValueError, "tensor", "expected sequence of length ", cols,
               " at dim 1 (got ", row.size(), ")");
    v.insert(v.end(), row.begin(), row.end());
  }
  return v;
}
}  // namespace detail

template <class T>
T* Tensor::data_ptr() const {
  detail::check_data_ptr_dtype(*this, dtype_of<std::remove_cv_t<T>>(), "data_ptr");
  return static_cast<T*>(impl_->data());
}

template <class T, size_t N>
TensorAccessor<T, N> Tensor::accessor() const {
  detail::check_host_access(*this, "accessor");
  detail::check_data_ptr_dtype(*this, dtype_of<std::remove_cv_t<T>>(), "accessor");
  WICK_CHECK(dim() == int64_t(N), ValueError, "accessor", "expected ", N, " dims but the tensor has ", dim());
  return TensorAccessor<T, N>(static_cast<T*>(impl_->data()), sizes().data(), strides().data());
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  detail::check_host_access(*this, "to_vector");
  Tensor c = to(dtype_of<T>()).contiguous();
  const T* p = static_cast<const T*>(c.impl()->data());
  return std::vector<T>(p, p + c.numel());
}

template <class T>
Tensor Tensor::new_tensor(std::initializer_list<T> values) const {
  std::vector<detail::Wide<T>> v(values.begin(), values.end());
  return detail::tensor_from_values(v.data(), detail::wide_dtype<T>(), {int64_t(v.size())}, options());
}

template <class T>
Tensor Tensor::new_tensor(std::initializer_list<std::initializer_list<T>> values) const {
  auto v = detail::flatten_list(values);
  if (values.size() == 0)
    return detail::tensor_from_values(v.data(), detail::wide_dtype<T>(), {0}, options());
  int64_t cols = int64_t(values.begin()->size());
  return detail::tensor_from_values(v.data(), detail::wide_dtype<T>(), {int64_t(values.size()), cols},
                                    options());
}

// LibTorch's TensorList (at::ArrayRef<Tensor>), as the list of tensors wick's functions take:
// torch::cat(torch::TensorList{a, b}) and functions of one's own taking a TensorList port as they are.
using TensorList = std::vector<Tensor>;

}  // namespace wick

#include "wick/indexing.h"  // TensorIndex, for Tensor::index and index_put_
