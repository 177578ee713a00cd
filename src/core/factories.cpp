// Factory functions: empty and friends, from_blob, tensor(), *_like and new_*.
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "core/as_op.h"
#include "core/cuda_hooks.h"
#include "core/host_memory.h"
#include "core/kernel_table.h"
#include "core/small_blocks.h"
#include "core/checks.h"
#include "core/tensor_ops.h"
#include "wick/cuda.h"
#include "wick/ops.h"

namespace wick {

namespace detail {

Device resolve_device(Device d, const char* op) {
  if (d.is_cpu()) return Device(kCPU);
  // A DeviceType made from an integer outside the enum.
  if (!d.is_cuda()) [[unlikely]]
    raise<ValueError>(op, "invalid device type ", int(d.type()), " (expected kCPU or kCUDA)");
  return resolve_cuda_device(d, op);
}

DimVector contiguous_strides(IntArrayRef sizes) {
  DimVector st(sizes.size(), 1);
  int64_t s = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    st[i] = s;
    // Only an empty tensor's sizes can overflow here ({0, 2^62, 2^62}); its strides don't
    // matter, so they stop at INT64_MAX instead of wrapping around.
    if (__builtin_mul_overflow(s, std::max<int64_t>(sizes[i], 1), &s)) s = INT64_MAX;
  }
  return st;
}

void check_sizes(IntArrayRef sizes, const char* op) {
  for (int64_t s : sizes)
    WICK_CHECK(s >= 0, ValueError, op, "Trying to create tensor with negative dimension ", s, ": ", sizes);
}

namespace {

// checked_numel's errors, out of its loop: a negative size first, then the overflow.
[[noreturn, gnu::cold, gnu::noinline]] void raise_bad_sizes(IntArrayRef sizes, const char* op) {
  check_sizes(sizes, op);
  raise<ValueError>(op, "Storage size calculation overflowed with sizes=", sizes);
}

}  // namespace

int64_t checked_numel(IntArrayRef sizes, const char* op) {
  int64_t n = 1;
  bool overflow = false, zero = false, negative = false;
  for (int64_t s : sizes) {
    negative |= s < 0;
    zero |= s == 0;
    overflow |= __builtin_mul_overflow(n, s, &n);
  }
  if (negative || (overflow && !zero)) [[unlikely]]
    raise_bad_sizes(sizes, op);
  return zero ? 0 : n;
}

size_t checked_nbytes(IntArrayRef sizes, Dtype dtype, const char* op) {
  const int64_t n = checked_numel(sizes, op);
  int64_t bytes = 0;
  WICK_CHECK(!__builtin_mul_overflow(n, int64_t(element_size(dtype)), &bytes), ValueError, op,
             "Storage size calculation overflowed with sizes=", sizes);
  return size_t(bytes);
}

Storage allocate_storage(size_t nbytes, Device dev, bool pinned, const char* op) {
  try {
    return make_storage(nbytes, dev, pinned);
  } catch (const OutOfMemoryError& e) {
    // Name the op the caller called; keep the allocator's own explanation.
    std::string what = e.what();
    if (!what.empty() && what[0] == '[') {
      const size_t close = what.find("] ");
      if (close != std::string::npos) what = what.substr(close + 2);
    }
    raise<OutOfMemoryError>(op, what);
  } catch (const DeviceError& e) {  // pinned memory without a GPU, a device that is not there
    throw DeviceError(renamed_message(e, op));
  }
}

namespace {

// ValueError for a Dtype made from an integer outside the enum.
void check_dtype(Dtype dtype, const char* op) {
  WICK_CHECK(int(dtype) >= 0 && int(dtype) < kNumDtypes, ValueError, op, "invalid dtype (", int(dtype), ")");
}

// The storage of a new dense tensor of these sizes, o's dtype, on o's device (errors name op:
// the dtype, then the sizes, the device, the memory).
Storage dense_storage(IntArrayRef sizes, const TensorOptions& o, const char* op) {
  check_dtype(o.dtype(), op);
  const size_t nbytes = checked_nbytes(sizes, o.dtype(), op);
  return allocate_storage(nbytes, resolve_device(o.device(), op), o.pinned_memory(), op);
}

}  // namespace

Tensor empty_for(IntArrayRef sizes, TensorOptions o, const char* op) {
  Storage st = dense_storage(sizes, o, op);
  const int64_t numel = int64_t(st->nbytes() / size_t(element_size(o.dtype())));
  return finish_factory(Tensor(IntrusivePtr<TensorImpl>(new Pooled<TensorImpl>(
                            std::move(st), o.dtype(), sizes, numel, TensorImpl::Contiguous{}))),
                        o);
}

Tensor empty_dense_for(IntArrayRef sizes, IntArrayRef strides, TensorOptions o, const char* op) {
  return finish_factory(make_tensor(dense_storage(sizes, o, op), o.dtype(), sizes, strides, 0), o);
}

DimVector format_strides(IntArrayRef sizes, MemoryFormat memory_format, const char* op) {
  // Products wrap instead of overflowing: sizes whose product overflows are refused when the
  // storage is sized.
  auto mul = [](int64_t a, int64_t b) { return int64_t(uint64_t(a) * uint64_t(b)); };
  switch (memory_format) {
    case MemoryFormat::ChannelsLast: {
      WICK_CHECK(sizes.size() == 4, ValueError, op, "required rank 4 tensor to use channels_last format");
      DimVector st(4, 1);
      st[3] = sizes[1];
      st[2] = mul(st[3], sizes[3]);
      st[0] = mul(st[2], sizes[2]);
      return st;
    }
    case MemoryFormat::ChannelsLast3d: {
      WICK_CHECK(sizes.size() == 5, ValueError, op, "required rank 5 tensor to use channels_last_3d format");
      DimVector st(5, 1);
      st[4] = sizes[1];
      st[3] = mul(st[4], sizes[4]);
      st[2] = mul(st[3], sizes[3]);
      st[0] = mul(st[2], sizes[2]);
      return st;
    }
    case MemoryFormat::Preserve:
      raise<ValueError>(op, "preserve memory format is unsupported here");
    case MemoryFormat::Contiguous:
      break;
    default:  // an integer cast to MemoryFormat
      raise<ValueError>(op, "invalid memory format (", int(memory_format), ")");
  }
  return contiguous_strides(sizes);
}

DimVector like_strides(const Tensor& t, std::optional<MemoryFormat> memory_format, const char* op) {
  if (memory_format && *memory_format != MemoryFormat::Preserve) return format_strides(t.sizes(), *memory_format, op);
  if (is_non_overlapping_and_dense(t)) return DimVector(t.strides());
  return infer_dense_strides(t.sizes(), t.strides());
}

Tensor full_for(IntArrayRef sizes, const Scalar& value, TensorOptions o, const char* op) {
  if (!o.dtype_opt()) o = o.dtype(value.dtype());
  check_dtype(o.dtype(), op);  // before the value is checked against it
  check_fits(value, o.dtype(), op);
  bool rg = o.requires_grad();
  Tensor t = empty_for(sizes, o.requires_grad(false), op);
  fill_values(t, value, op);
  return finish_factory(t, o.requires_grad(rg));
}

Tensor make_tensor(Storage storage, Dtype dtype, IntArrayRef sizes, IntArrayRef strides, int64_t offset) {
  return Tensor(IntrusivePtr<TensorImpl>(new Pooled<TensorImpl>(
      std::move(storage), dtype, DimVector(sizes.begin(), sizes.end()), DimVector(strides.begin(), strides.end()),
      offset)));
}

Tensor finish_factory(Tensor t, const TensorOptions& o) {
  if (o.requires_grad()) {
    WICK_CHECK(t.is_floating_point(), TypeError, "requires_grad",
               "only Tensors of floating point dtype can require gradients (got ", t.dtype(), ")");
    t.impl()->set_requires_grad(true);
  }
  return t;
}

namespace {

// A tensor of o's dtype and device holding the host values (of dtype, contiguous, sizes).
Tensor from_host_values(const void* values, Dtype dtype, IntArrayRef sizes, size_t nbytes, TensorOptions o,
                        const char* op) {
  Tensor src = make_tensor(
      Storage::make(DataPtr(const_cast<void*>(values), nullptr, nullptr, Device(kCPU)), nbytes, nullptr),
      dtype, sizes, contiguous_strides(sizes), 0);
  Tensor out =
      empty_for(sizes, TensorOptions(o.dtype()).device(o.device()).pinned_memory(o.pinned_memory()), op);
  copy_values(out, src, false);
  return finish_factory(out, o);
}

}  // namespace

Tensor tensor_from_values(const void* values, Dtype dtype, IntArrayRef sizes, TensorOptions o,
                          const char* op) {
  const size_t nbytes = checked_nbytes(sizes, dtype, op);
  // torch.tensor checks that each value fits an integer dtype asked for (300 into uint8 raises);
  // floating and bool dtypes take any value (1e300 into float32 is inf, as a C cast).
  if (o.dtype() != dtype && !is_floating_point(o.dtype()) && o.dtype() != kBool) {
    const int64_t n = int64_t(nbytes) / element_size(dtype);
    for (int64_t i = 0; i < n; ++i) {
      const Scalar v = dtype == kInt64     ? Scalar(static_cast<const int64_t*>(values)[i])
                       : dtype == kFloat64 ? Scalar(static_cast<const double*>(values)[i])
                                           : Scalar(static_cast<const uint8_t*>(values)[i] != 0);
      check_fits(v, o.dtype(), op);
    }
  }
  return from_host_values(values, dtype, sizes, nbytes, o, op);
}

}  // namespace detail

using namespace detail;

Tensor empty(IntArrayRef sizes, TensorOptions o) { return empty_for(sizes, o, "empty"); }

void detail::check_strides(IntArrayRef sizes, IntArrayRef strides, const char* op) {
  WICK_CHECK(sizes.size() == strides.size(), ValueError, op, "mismatch in length of strides and shape");
  for (int64_t s : strides) WICK_CHECK(s >= 0, ValueError, op, "negative strides are not supported");
}

namespace {

// Bytes from the first element to one past the last of a strided layout (0 when a size is 0),
// computed without wrapping around: sizes and strides whose extent overflows would otherwise
// get a small storage that the tensor reaches far beyond.
size_t strided_nbytes(IntArrayRef sizes, IntArrayRef strides, Dtype dtype, const char* op) {
  check_dtype(dtype, op);
  for (int64_t s : sizes)
    if (s == 0) return 0;
  int64_t extent = 1, nbytes = 0;
  bool overflow = false;
  for (size_t i = 0; i < sizes.size(); ++i) {
    int64_t span = 0;
    overflow |= __builtin_mul_overflow(sizes[i] - 1, strides[i], &span);
    overflow |= __builtin_add_overflow(extent, span, &extent);
  }
  overflow |= __builtin_mul_overflow(extent, int64_t(element_size(dtype)), &nbytes);
  WICK_CHECK(!overflow, ValueError, op, "Storage size calculation overflowed with sizes=", sizes,
             " and strides=", strides);
  return size_t(nbytes);
}

}  // namespace

Tensor empty_strided(IntArrayRef sizes, IntArrayRef strides, TensorOptions o) {
  check_sizes(sizes, "empty_strided");
  check_strides(sizes, strides, "empty_strided");
  Device dev = resolve_device(o.device(), "empty_strided");
  const size_t nbytes = strided_nbytes(sizes, strides, o.dtype(), "empty_strided");
  Storage st = allocate_storage(nbytes, dev, o.pinned_memory(), "empty_strided");
  return finish_factory(make_tensor(std::move(st), o.dtype(), sizes, strides, 0), o);
}

Tensor full(IntArrayRef sizes, const Scalar& value, TensorOptions o) {
  return full_for(sizes, value, o, "full");
}

Tensor zeros(IntArrayRef sizes, TensorOptions o) {
  if (!o.dtype_opt()) o = o.dtype(get_default_dtype());
  return full_for(sizes, 0, o, "zeros");
}

Tensor ones(IntArrayRef sizes, TensorOptions o) {
  if (!o.dtype_opt()) o = o.dtype(get_default_dtype());
  return full_for(sizes, 1, o, "ones");
}

Tensor arange(const Scalar& end, TensorOptions o) { return arange(0, end, 1, o); }

namespace {

// A host staging buffer of n values; running out of memory is the op's OutOfMemoryError.
template <class T>
std::vector<T> host_buffer(int64_t n, const char* op) {
  (void)checked_nbytes({n}, dtype_of<T>(), op);
  check_host_request(n, sizeof(T), op);
  try {
    return std::vector<T>(static_cast<size_t>(n));
  } catch (const std::exception&) {  // bad_alloc, length_error
    raise<OutOfMemoryError>(op, "failed to allocate ", n * int64_t(sizeof(T)), " bytes of host memory");
  }
}

}  // namespace

Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, TensorOptions o) {
  bool any_float = start.is_floating_point() || end.is_floating_point() || step.is_floating_point();
  if (!o.dtype_opt()) o = o.dtype(any_float ? get_default_dtype() : kInt64);
  WICK_CHECK(o.dtype() != kBool, TypeError, "arange", "\"arange_cpu\" not implemented for 'Bool'");
  double s = start.to<double>(), e = end.to<double>(), st = step.to<double>();
  WICK_CHECK(st != 0, ValueError, "arange", "step must be nonzero");
  WICK_CHECK(std::isfinite(s) && std::isfinite(e), ValueError, "arange", "unsupported range: ", s, " -> ", e);
  WICK_CHECK((st > 0 && e >= s) || (st < 0 && e <= s), ValueError, "arange",
             "upper bound and larger bound inconsistent with step sign");
  const double nd = std::ceil((e - s) / st);
  WICK_CHECK(nd >= 0 && nd < 9223372036854775808.0, ValueError, "arange", "invalid size, possible overflow?");
  const int64_t n = int64_t(nd);
  (void)checked_nbytes({n}, o.dtype(), "arange");
  if (!any_float && o.device().is_cuda()) {
    // Integers on a GPU are made there (start + (i - 1) step from a running sum of ones, exact in
    // int64): a copy from the host would make arange wait for the device, which a CUDA graph's
    // capture cannot hold (a GPT's positions are an arange inside its captured step).
    const int64_t si = start.to<int64_t>(), sti = step.to<int64_t>();
    Tensor v = wick::ones({n}, TensorOptions(kInt64).device(o.device())).cumsum(0);  // 1 .. n
    if (sti != 1) v = v * sti;
    if (si != sti) v = v + (si - sti);
    return finish_factory(o.dtype() == kInt64 ? v : v.to(o.dtype()), o);
  }
  if (!any_float) {
    std::vector<int64_t> iv = host_buffer<int64_t>(n, "arange");
    int64_t si = start.to<int64_t>(), sti = step.to<int64_t>();
    for (int64_t i = 0; i < n; ++i) iv[size_t(i)] = si + i * sti;
    return from_host_values(iv.data(), kInt64, {n}, size_t(n) * sizeof(int64_t), o, "arange");
  }
  std::vector<double> v = host_buffer<double>(n, "arange");
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = s + double(i) * st;
  return from_host_values(v.data(), kFloat64, {n}, size_t(n) * sizeof(double), o, "arange");
}

Tensor linspace(double start, double end, int64_t steps, TensorOptions o) {
  WICK_CHECK(steps >= 0, ValueError, "linspace", "number of steps must be non-negative");
  WICK_CHECK(o.dtype() != kBool, TypeError, "linspace", "\"linspace_cpu\" not implemented for 'Bool'");
  (void)checked_nbytes({steps}, o.dtype(), "linspace");
  std::vector<double> v = host_buffer<double>(steps, "linspace");
  if (steps == 1) {
    v[0] = start;  // PyTorch: one step gives the start
  } else {
    const double step = steps > 1 ? (end - start) / double(steps - 1) : 0;
    const int64_t half = steps / 2;
    for (int64_t i = 0; i < steps; ++i)  // symmetric from both ends, as PyTorch computes it
      v[size_t(i)] = i < half ? start + step * double(i) : end - step * double(steps - i - 1);
  }
  return from_host_values(v.data(), kFloat64, {steps}, size_t(steps) * sizeof(double), o, "linspace");
}

Tensor eye(int64_t n, TensorOptions o) { return eye(n, n, o); }

Tensor eye(int64_t n, int64_t m, TensorOptions o) {
  WICK_CHECK(n >= 0 && m >= 0, ValueError, "eye", "n and m must be non-negative (got ", n, ", ", m, ")");
  bool rg = o.requires_grad();
  if (!o.dtype_opt()) o = o.dtype(get_default_dtype());
  Tensor t = full_for({n, m}, 0, o.requires_grad(false), "eye");
  if (n && m) {
    // The diagonal as a strided view: stride m + 1 over min(n, m) elements.
    Tensor diag = make_tensor(t.impl()->storage(), t.dtype(), {std::min(n, m)}, {m + 1}, 0);
    fill_values(diag, 1, "eye");
  }
  return finish_factory(t, o.requires_grad(rg));
}

Tensor from_blob(void* data, IntArrayRef sizes, TensorOptions o) {
  return from_blob(data, sizes, contiguous_strides(sizes), o);
}

namespace {

// The caller's deleter, called with the caller's pointer when the storage goes.
struct BlobDeleter {
  std::function<void(void*)> fn;
  void* data;
  static void call(void* ctx) {
    std::unique_ptr<BlobDeleter> d(static_cast<BlobDeleter*>(ctx));
    if (d->fn) d->fn(d->data);
  }
};

// from_blob's forms: checks everything before taking the deleter, so that a call that raises
// leaves the memory to the caller.
Tensor from_blob_for(void* data, IntArrayRef sizes, IntArrayRef strides, int64_t storage_offset,
                     const std::function<void(void*)>* deleter, TensorOptions o) {
  check_sizes(sizes, "from_blob");
  check_strides(sizes, strides, "from_blob");
  WICK_CHECK(storage_offset >= 0, ValueError, "from_blob", "storage_offset must be non-negative (got ",
             storage_offset, ")");
  Device dev = resolve_device(o.device(), "from_blob");
  const int64_t numel = checked_numel(sizes, "from_blob");
  const size_t nbytes =
      numel == 0 ? 0
                 : strided_nbytes(sizes, strides, o.dtype(), "from_blob") + size_t(storage_offset) * element_size(o.dtype());
  WICK_CHECK(data != nullptr || numel == 0, ValueError, "from_blob",
             "data is a null pointer but the tensor has ", numel, " elements");
  DataPtr ptr(data, nullptr, nullptr, dev);
  if (deleter) {
    auto* d = new BlobDeleter{*deleter, data};
    ptr = DataPtr(data, d, &BlobDeleter::call, dev);
  }
  Storage st = Storage::make(std::move(ptr), nbytes, nullptr);
  return finish_factory(make_tensor(std::move(st), o.dtype(), sizes, strides, storage_offset), o);
}

}  // namespace

Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, TensorOptions o) {
  return from_blob_for(data, sizes, strides, 0, nullptr, o);
}

Tensor from_blob(void* data, IntArrayRef sizes, const std::function<void(void*)>& deleter, TensorOptions o) {
  return from_blob_for(data, sizes, contiguous_strides(sizes), 0, &deleter, o);
}

Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, const std::function<void(void*)>& deleter,
                 TensorOptions o) {
  return from_blob_for(data, sizes, strides, 0, &deleter, o);
}

Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, int64_t storage_offset,
                 const std::function<void(void*)>& deleter, TensorOptions o) {
  return from_blob_for(data, sizes, strides, storage_offset, &deleter, o);
}

Tensor empty_like(const Tensor& t, TensorOptions o, std::optional<MemoryFormat> memory_format) {
  check_defined(t, "empty_like");
  return as_op("empty_like", [&] {
    return empty_like_for(t, like_options(t, o, "empty_like"), memory_format, "empty_like");
  });
}

namespace {
// full_like and its forms: a tensor laid out as empty_like's, every element value.
Tensor full_like_for(const Tensor& t, const Scalar& value, TensorOptions o,
                     std::optional<MemoryFormat> memory_format, const char* op) {
  check_defined(t, op);
  return as_op(op, [&] {
    o = like_options(t, o, op);
    check_dtype(o.dtype(), op);  // before the value is checked against it
    check_fits(value, o.dtype(), op);
    Tensor out = empty_like_for(t, o.requires_grad(false), memory_format, op);
    fill_values(out, value, op);
    return finish_factory(out, o);
  });
}
}  // namespace

Tensor zeros_like(const Tensor& t, TensorOptions o, std::optional<MemoryFormat> memory_format) {
  return full_like_for(t, 0, o, memory_format, "zeros_like");
}
Tensor ones_like(const Tensor& t, TensorOptions o, std::optional<MemoryFormat> memory_format) {
  return full_like_for(t, 1, o, memory_format, "ones_like");
}
Tensor full_like(const Tensor& t, const Scalar& v, TensorOptions o, std::optional<MemoryFormat> memory_format) {
  return full_like_for(t, v, o, memory_format, "full_like");
}

TensorOptions detail::like_options(const Tensor& t, TensorOptions o, const char* op) {
  check_defined(t, op);
  TensorOptions r = o;
  if (!o.dtype_opt()) r = r.dtype(t.dtype());
  if (!o.device_opt()) r = r.device(t.device());
  return r;
}

TensorOptions Tensor::merge(TensorOptions o) const { return like_options(*this, o, "new_empty"); }
Tensor Tensor::new_empty(IntArrayRef sizes, TensorOptions o) const {
  return as_op("new_empty", [&] { return empty(sizes, merge(o)); });
}
Tensor Tensor::new_zeros(IntArrayRef sizes, TensorOptions o) const {
  return as_op("new_zeros", [&] { return zeros(sizes, merge(o)); });
}
Tensor Tensor::new_ones(IntArrayRef sizes, TensorOptions o) const {
  return as_op("new_ones", [&] { return ones(sizes, merge(o)); });
}
Tensor Tensor::new_full(IntArrayRef sizes, const Scalar& v, TensorOptions o) const {
  return as_op("new_full", [&] { return full(sizes, v, merge(o)); });
}

}  // namespace wick
