// Tensor methods: properties, host access, moves between devices and dtypes, copy_ and fill_.
#include "wick/tensor.h"

#include "autograd/hooks.h"
#include "core/as_op.h"
#include "core/cuda_hooks.h"
#include "core/kernel_table.h"
#include "core/tensor_ops.h"
#include "wick/cuda.h"
#include "wick/ops.h"

namespace wick {

using namespace detail;

// As PyTorch: a 0-d tensor has no dimension to ask about, and d must be in [-dim, dim).
static size_t checked_dim(const Tensor& t, int64_t d, const char* op) {
  check_defined(t, op, "self");
  WICK_CHECK(t.dim() > 0, IndexError, op, "Dimension specified as ", d, " but tensor has no dimensions");
  return size_t(wrap_dim(d, t.dim(), op));
}

int64_t Tensor::size(int64_t d) const {
  const size_t i = checked_dim(*this, d, "size");
  return sizes()[i];
}
int64_t Tensor::stride(int64_t d) const {
  const size_t i = checked_dim(*this, d, "stride");
  return strides()[i];
}

bool Tensor::is_pinned() const {
  check_defined(*this, "is_pinned", "self");
  return is_cpu() && impl_->storage()->data() != nullptr && is_pinned_ptr(impl_->storage()->data());
}

Scalar Tensor::item() const {
  check_defined(*this, "item", "self");
  WICK_CHECK(numel() == 1, ValueError, "item", "a Tensor with ", numel(),
             " elements cannot be converted to Scalar");
  if (is_cuda()) cuda_check_not_capturing(device(), "item", "it makes the host wait for the device");
  Tensor c = is_cpu() ? *this : cpu();
  return WICK_DISPATCH_ALL(
      dtype(), "item", [&]<class T>() -> Scalar { return Scalar(*static_cast<const T*>(c.impl()->data())); });
}

namespace detail {

std::string renamed_message(const Error& e, const char* op) {
  std::string m = e.what();
  const size_t close = m.size() > 1 && m[0] == '[' ? m.find("] ") : std::string::npos;
  return close == std::string::npos ? message(op, m) : message(op, m.substr(close + 2));
}

void raise_undefined(const char* op) {
  raise<ValueError>(op, "expected a defined tensor but got an undefined one (Tensor())");
}

void check_data_ptr_dtype(const Tensor& t, Dtype expected, const char* op) {
  WICK_CHECK(t.defined(), ValueError, op, "the tensor is undefined");
  WICK_CHECK(t.dtype() == expected, TypeError, op, "expected scalar type ", expected, " but found ",
             t.dtype());
}

void check_host_access(const Tensor& t, const char* op) {
  WICK_CHECK(t.defined(), ValueError, op, "the tensor is undefined");
  WICK_CHECK(t.is_cpu(), DeviceError, op, "can't access a ", t.device(),
             " tensor from the host; copy it with .cpu() first");
}

}  // namespace detail

// ---- moves and casts

namespace {

// PyTorch's is_channels_last_strides_2d/_3d: strides ordered like a channels-last layout, C
// innermost; ambiguous layouts (a size-1 C, N111 shapes) count as row-major.
bool strides_like_channels_last(IntArrayRef sizes, IntArrayRef strides, std::initializer_list<size_t> order) {
  if (strides[1] == 0) return false;
  int64_t min = 0;
  for (size_t d : order) {
    if (sizes[d] == 0 || strides[d] < min) return false;
    if (d == 0 && min == strides[1]) return false;
    min = strides[d];
    if (sizes[d] > 1) min *= sizes[d];
  }
  return true;
}

// PyTorch's suggest_memory_format: the format a tensor's strides look like.
MemoryFormat suggest_memory_format(const Tensor& t) {
  const IntArrayRef sizes = t.sizes(), strides = t.strides();
  if (t.dim() == 4 && strides_like_channels_last(sizes, strides, {1, 3, 2, 0})) return MemoryFormat::ChannelsLast;
  if (t.dim() == 5 && strides_like_channels_last(sizes, strides, {1, 4, 3, 2, 0}))
    return MemoryFormat::ChannelsLast3d;
  return MemoryFormat::Contiguous;
}

}  // namespace

bool Tensor::is_contiguous(MemoryFormat memory_format) const {
  check_defined(*this, "is_contiguous", "self");
  check_memory_format(memory_format, "is_contiguous");
  switch (memory_format) {
    case MemoryFormat::Contiguous:
    case MemoryFormat::Preserve:  // as PyTorch: the row-major answer
      return is_contiguous();
    case MemoryFormat::ChannelsLast:
    case MemoryFormat::ChannelsLast3d: {
      // Every dim of size > 1 steps as the format's strides do (as PyTorch: sizes 1 don't count).
      const bool cl = memory_format == MemoryFormat::ChannelsLast;
      if (dim() != (cl ? 4 : 5)) return false;
      static constexpr size_t order2d[] = {1, 3, 2, 0}, order3d[] = {1, 4, 3, 2, 0};
      const IntArrayRef sizes = this->sizes(), strides = this->strides();
      int64_t expected = 1;
      for (size_t i = 0; i < size_t(dim()); ++i) {
        const size_t d = cl ? order2d[i] : order3d[i];
        if (sizes[d] == 1) continue;
        if (strides[d] != expected) return false;
        expected *= sizes[d];
      }
      return true;
    }
  }
  return is_contiguous();
}

Tensor Tensor::to(Device device, Dtype dtype, bool non_blocking, bool copy,
                  std::optional<MemoryFormat> memory_format) const {
  check_defined(*this, "to", "self");
  const bool grad = needs_grad(*this);
  Tensor out = forward_once(grad, [&]() -> Tensor {
    Device target = resolve_device(device, "to");
    WICK_CHECK(int(dtype) >= 0 && int(dtype) < kNumDtypes, ValueError, "to", "invalid dtype (", int(dtype), ")");
    // As PyTorch: no copy when nothing changes and the format asked for is the one the strides
    // suggest (a transposed tensor "is" row-major there, so to(..., Contiguous) returns it).
    const bool keeps_format = !memory_format || *memory_format == MemoryFormat::Preserve ||
                              suggest_memory_format(*this) == *memory_format;
    if (!copy && target == this->device() && dtype == this->dtype() && keeps_format) return *this;
    Tensor o = empty_like_for(*this, TensorOptions(dtype).device(target), memory_format, "to");
    copy_values(o, *this, non_blocking);
    return o;
  });
  if (grad) [[unlikely]] autograd::record_copy(autograd::CopyOp::To, *this, {}, out);
  return out;
}

Tensor Tensor::to(Device device, bool non_blocking, bool copy, std::optional<MemoryFormat> memory_format) const {
  check_defined(*this, "to", "self");
  return to(device, dtype(), non_blocking, copy, memory_format);
}
Tensor Tensor::to(Dtype dtype, bool non_blocking, bool copy, std::optional<MemoryFormat> memory_format) const {
  check_defined(*this, "to", "self");
  return to(device(), dtype, non_blocking, copy, memory_format);
}
Tensor Tensor::to(const Tensor& other, bool non_blocking) const {
  check_defined(*this, "to", "self");
  check_defined(other, "to", "other");
  return to(other.device(), other.dtype(), non_blocking);
}
Tensor Tensor::cuda(int index, bool non_blocking) const {
  check_defined(*this, "cuda", "self");
  return as_op("cuda", [&] { return to(Device(kCUDA, index), non_blocking); });
}
Tensor Tensor::cpu() const {
  check_defined(*this, "cpu", "self");
  return to(Device(kCPU));
}

Tensor Tensor::pin_memory() const {
  check_defined(*this, "pin_memory", "self");
  WICK_CHECK(is_cpu(), ValueError, "pin_memory", "cannot pin '", device(),
             "' memory: only dense CPU tensors can be pinned");
  if (is_pinned()) return *this;
  // As PyTorch: a dense tensor keeps its strides (a transposed one stays transposed).
  const TensorOptions o = TensorOptions(dtype()).pinned_memory(true);
  Tensor out = is_non_overlapping_and_dense(*this) ? empty_dense_for(sizes(), strides(), o, "pin_memory")
                                                   : empty_for(sizes(), o, "pin_memory");
  copy_values(out, *this, false);
  return out;
}

Tensor Tensor::clone(std::optional<MemoryFormat> memory_format) const {
  check_defined(*this, "clone", "self");
  const bool grad = needs_grad(*this);
  Tensor out = forward_once(grad, [&] {
    Tensor o = empty_like_for(*this, options(), memory_format, "clone");
    copy_values(o, *this, false);
    return o;
  });
  if (grad) [[unlikely]] autograd::record_copy(autograd::CopyOp::Clone, *this, {}, out);
  return out;
}
Tensor clone(const Tensor& t, std::optional<MemoryFormat> memory_format) { return t.clone(memory_format); }

Tensor Tensor::contiguous(MemoryFormat memory_format) const {
  check_defined(*this, "contiguous", "self");
  if (memory_format != MemoryFormat::Contiguous) check_memory_format(memory_format, "contiguous");
  if (memory_format == MemoryFormat::Contiguous ? is_contiguous() : is_contiguous(memory_format)) return *this;
  WICK_CHECK(memory_format != MemoryFormat::Preserve, ValueError, "contiguous",
             "preserve memory format is unsupported by the contiguous operator");
  return as_op("contiguous", [&] { return clone(memory_format); });
}

// ---- in-place writes

Tensor& Tensor::copy_(const Tensor& src, bool non_blocking) {
  check_defined(*this, "copy_", "self");
  check_defined(src, "copy_", "src");
  if (needs_grad(*this, src)) [[unlikely]]
    return autograd::inplace(*this, "copy_", [&](const Tensor& t) {
      Tensor out = forward_once(true, [&] {
        Tensor o = empty_like(t);
        o.copy_(src, non_blocking);
        return o;
      });
      autograd::record_copy(autograd::CopyOp::Copy, t, src, out);
      return out;
    });
  copy_values(*this, src, non_blocking);
  bump_version(*this);
  return *this;
}

void detail::copy_values(const Tensor& dst, const Tensor& src, bool non_blocking) {
  WICK_CHECK(dst.defined() && src.defined(), ValueError, "copy_", "undefined tensor");
  if (dst.is_same(src)) return;
  // PyTorch's checks on the operands as given (before src is broadcast).
  check_no_internal_overlap(dst, "copy_");
  check_no_partial_overlap(dst, src, "copy_");
  const Device device = dst.device();
  const Dtype dtype = dst.dtype();
  // Broadcast src to this shape (the error names the op).
  Tensor s = src.sizes().equals(dst.sizes()) ? src : as_op("copy_", [&] { return src.expand(dst.sizes()); });
  if (s.device() == device) {
    IterConfig cfg;
    cfg.op = "copy_";
    cfg.names[0] = "src";
    cfg.compute_dtype = s.dtype();
    cfg.out_dtype = dtype;
    auto it = TensorIter::build(dst, {s}, cfg);
    kernel<&KernelTable::copy>(device, "copy_")(it);
  } else {
    // Across devices: the runtime moves contiguous bytes of one dtype; cast and lay out
    // on whichever side is cheaper (before sending to a GPU, after receiving on the CPU).
    if (s.dtype() != dtype && s.is_cpu()) s = s.to(dtype);
    if (s.is_contiguous() && dst.is_contiguous() && s.dtype() == dtype) {
      cuda_copy(dst, s, non_blocking);
    } else if (s.dtype() == dtype && s.strides().equals(dst.strides()) && is_non_overlapping_and_dense(s) &&
               is_non_overlapping_and_dense(dst)) {
      // One dense layout on both sides (a transposed or channels-last tensor moved as it is,
      // as to() makes it): the same bytes, moved as one block.
      const int64_t n = dst.numel();
      cuda_copy(make_view(dst, {n}, {1}, dst.storage_offset()), make_view(s, {n}, {1}, s.storage_offset()),
                non_blocking);
    } else {
      Tensor src_c = s.contiguous();
      Tensor staging = empty(dst.sizes(), TensorOptions(src_c.dtype()).device(device));
      cuda_copy(staging, src_c, false);
      copy_values(dst, staging, false);
    }
  }
}

void detail::check_fits(const Scalar& value, Dtype dtype, const char* op) {
  WICK_DISPATCH_ALL(dtype, op, [&]<class T>() { (void)value.checked_to<T>(op); });
}

void detail::fill_values(const Tensor& out, const Scalar& value, const char* op) {
  check_fits(value, out.dtype(), op);
  if (out.numel() == 0) return;
  IterConfig cfg;
  cfg.op = "fill_";
  cfg.check_overlap = false;
  const TensorIter it = TensorIter::build(out, {}, cfg);
  kernel<&KernelTable::fill>(it.device(), "fill_")(it, value);
}

// The value fill_ or zero_ gives t, recorded (the grad path's out-of-place form, see inplace).
static Tensor recorded_fill(const Tensor& t, const Scalar& v, autograd::CopyOp op) {
  Tensor out = forward_once(true, [&] { return full_like(t, v); });
  autograd::record_copy(op, t, {}, out);
  return out;
}

Tensor& Tensor::fill_(const Scalar& v) {
  check_defined(*this, "fill_", "self");
  if (needs_grad(*this)) [[unlikely]]
    return autograd::inplace(*this, "fill_",
                             [&](const Tensor& t) { return recorded_fill(t, v, autograd::CopyOp::Fill); });
  fill_values(*this, v);
  bump_version(*this);
  return *this;
}

Tensor& Tensor::zero_() {
  check_defined(*this, "zero_", "self");
  if (needs_grad(*this)) [[unlikely]]
    return autograd::inplace(*this, "zero_",
                             [&](const Tensor& t) { return recorded_fill(t, 0, autograd::CopyOp::Zero); });
  fill_values(*this, 0);
  bump_version(*this);
  return *this;
}

void Tensor::record_stream(const cuda::Stream& s) const {
  WICK_CHECK(defined() && is_cuda(), NotImplementedError, "record_stream",
             "Could not run 'aten::record_stream' with arguments from the '", defined() ? "CPU" : "Undefined",
             "' backend.");
  cuda_record_stream(*this, s);
}

}  // namespace wick
