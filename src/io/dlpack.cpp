// DLPack export and import (wick/io/dlpack.h): a DLManagedTensor that keeps a wick tensor alive,
// and a wick storage whose deleter hands a foreign DLManagedTensor back to its owner.
#include "wick/io/dlpack.h"

#if !__has_include(<dlpack/dlpack.h>)
#error "DLPack's header is missing: apt-get install libdlpack-dev (scripts/setup.sh installs it)"
#endif
#include <sstream>
#include <string>
#include <vector>

#include <dlpack/dlpack.h>

#include "core/tensor_ops.h"
#include "wick/cuda.h"

namespace wick {

namespace {

// DLPack 0.8 added kDLBool (code 6, one byte per element); the packaged 0.6 header predates it.
constexpr uint8_t kBoolCode = 6;

DLDataType to_dl_dtype(Dtype t) {
  DLDataType d{};
  d.lanes = 1;
  d.bits = uint8_t(element_size(t) * 8);
  switch (t) {
    case kBool:
      d.code = kBoolCode;
      break;
    case kUInt8:
      d.code = kDLUInt;
      break;
    case kInt8:
    case kInt16:
    case kInt32:
    case kInt64:
      d.code = kDLInt;
      break;
    case kFloat16:
    case kFloat32:
    case kFloat64:
      d.code = kDLFloat;
      break;
    case kBFloat16:
      d.code = kDLBfloat;
      break;
    default:
      detail::raise<TypeError>("to_dlpack", "unsupported dtype ", t);
  }
  return d;
}

std::string dl_dtype_name(DLDataType d) {
  std::ostringstream os;
  switch (d.code) {
    case kDLInt:
      os << "int";
      break;
    case kDLUInt:
      os << "uint";
      break;
    case kDLFloat:
      os << "float";
      break;
    case kDLBfloat:
      os << "bfloat";
      break;
    case kDLComplex:
      os << "complex";
      break;
    case kDLOpaqueHandle:
      os << "opaque handle ";
      break;
    case kBoolCode:
      os << "bool";
      break;
    default:
      os << "code " << int(d.code) << " with bits ";
  }
  os << int(d.bits);
  if (d.lanes != 1) os << "x" << int(d.lanes);
  return os.str();
}

Dtype from_dl_dtype(DLDataType d) {
  WICK_CHECK(d.lanes == 1, TypeError, "from_dlpack", "unsupported DLPack dtype ", dl_dtype_name(d),
             ": vector types (lanes = ", int(d.lanes), ") are not supported, only lanes = 1");
  switch (d.code) {
    case kDLInt:
      if (d.bits == 8) return kInt8;
      if (d.bits == 16) return kInt16;
      if (d.bits == 32) return kInt32;
      if (d.bits == 64) return kInt64;
      break;
    case kDLUInt:
      if (d.bits == 8) return kUInt8;
      break;
    case kDLFloat:
      if (d.bits == 16) return kFloat16;
      if (d.bits == 32) return kFloat32;
      if (d.bits == 64) return kFloat64;
      break;
    case kDLBfloat:
      if (d.bits == 16) return kBFloat16;
      break;
    case kBoolCode:
      if (d.bits == 8) return kBool;
      break;
    default:
      break;
  }
  detail::raise<TypeError>("from_dlpack", "unsupported DLPack dtype ", dl_dtype_name(d),
                           "; wick has bool, uint8, int8, int16, int32, int64, float16, bfloat16, "
                           "float32 and float64");
}

const char* dl_device_name(int type) {
  switch (type) {
    case kDLCPU:
      return "CPU";
    case kDLCUDA:
      return "CUDA";
    case kDLCUDAHost:
      return "CUDAHost";
    case kDLOpenCL:
      return "OpenCL";
    case kDLVulkan:
      return "Vulkan";
    case kDLMetal:
      return "Metal";
    case kDLVPI:
      return "VPI";
    case kDLROCM:
      return "ROCm";
    case kDLROCMHost:
      return "ROCmHost";
    case kDLExtDev:
      return "ExtDev";
    case kDLCUDAManaged:
      return "CUDAManaged";
    default:
      return "unknown";
  }
}

// What a wick export owns: the tensor (its memory stays alive) and the arrays DLTensor points to.
struct ExportContext {
  DLManagedTensor managed{};
  Tensor tensor;
  std::vector<int64_t> shape, strides;
};

void delete_export(DLManagedTensor* self) { delete static_cast<ExportContext*>(self->manager_ctx); }

// The special stream handles of the CUDA runtime are the specification's integers.
constexpr std::intptr_t kNoSync = -1, kLegacyDefault = 1;

void sync_consumer(const Tensor& t, std::intptr_t stream) {
  if (!t.is_cuda() || stream == kNoSync) return;
  WICK_CHECK(stream != 0, ValueError, "to_dlpack",
             "stream 0 is ambiguous (the DLPack specification forbids it): pass 1 for the legacy default "
             "stream, 2 for the per-thread default stream, -1 for no synchronization");
  WICK_CHECK(stream > 0, ValueError, "to_dlpack", "invalid stream ", stream,
             ": expected -1, 1, 2 or a cudaStream_t");
  const int device = int(t.device().index());
  cuda::Stream consumer(device, reinterpret_cast<cudaStream_t>(stream));
  cuda::Stream producer = cuda::current_stream(device);
  if (consumer != producer) {
    cuda::Event done;
    done.record(producer);
    consumer.wait_event(done);  // the wait is queued now; the event may go
  }
  t.record_stream(consumer);
}

DLManagedTensor* export_tensor(const Tensor& t, std::intptr_t stream) {
  detail::check_defined(t, "to_dlpack", "tensor");
  WICK_CHECK(!t.requires_grad(), Error, "to_dlpack",
             "Can't export tensors that require gradient, use tensor.detach()");
  DLDevice device{};
  if (t.is_cpu()) {
    device.device_type = kDLCPU;
    device.device_id = 0;
  } else if (t.is_cuda()) {
    device.device_type = kDLCUDA;
    device.device_id = int(t.device().index());
  } else {
    detail::raise<DeviceError>("to_dlpack", "unsupported device ", t.device());
  }
  const DLDataType dtype = to_dl_dtype(t.dtype());
  sync_consumer(t, stream);

  auto* ctx = new ExportContext;
  ctx->tensor = t;
  ctx->shape.assign(t.sizes().begin(), t.sizes().end());
  ctx->strides.assign(t.strides().begin(), t.strides().end());
  DLTensor& d = ctx->managed.dl_tensor;
  d.data = t.data_ptr();  // element 0; byte_offset stays 0, as PyTorch exports
  d.device = device;
  d.ndim = int(t.dim());
  d.dtype = dtype;
  d.shape = ctx->shape.data();
  d.strides = ctx->strides.data();
  d.byte_offset = 0;
  ctx->managed.manager_ctx = ctx;
  ctx->managed.deleter = &delete_export;
  return &ctx->managed;
}

// The storage's deleter: gives the managed tensor back to its producer.
void release_import(void* ctx) {
  auto* m = static_cast<DLManagedTensor*>(ctx);
  if (m->deleter) m->deleter(m);
}

}  // namespace

DLManagedTensor* to_dlpack(const Tensor& t) { return export_tensor(t, kLegacyDefault); }

DLManagedTensor* to_dlpack(const Tensor& t, const cuda::Stream& consumer_stream) {
  if (t.defined() && t.is_cuda()) {
    WICK_CHECK(consumer_stream.device_index() == t.device().index(), ValueError, "to_dlpack",
               "the consumer's stream is on ", consumer_stream.device(), " but the tensor on ", t.device());
  }
  return export_tensor(t, reinterpret_cast<std::intptr_t>(consumer_stream.native()));
}

DLManagedTensor* to_dlpack(const Tensor& t, std::intptr_t consumer_stream) {
  return export_tensor(t, consumer_stream);
}

Tensor from_dlpack(DLManagedTensor* m) {
  WICK_CHECK(m != nullptr, ValueError, "from_dlpack", "expected a DLManagedTensor, got a null pointer");
  const DLTensor& d = m->dl_tensor;
  Device device;
  switch (d.device.device_type) {
    case kDLCPU:
    case kDLCUDAHost:
      device = detail::resolve_device(Device(kCPU), "from_dlpack");
      break;
    case kDLCUDA:
      WICK_CHECK(d.device.device_id >= 0, DeviceError, "from_dlpack", "invalid CUDA device id ",
                 d.device.device_id);
      device = detail::resolve_device(Device(kCUDA, d.device.device_id), "from_dlpack");
      break;
    default:
      detail::raise<DeviceError>("from_dlpack", "unsupported DLPack device type ",
                                 dl_device_name(d.device.device_type), " (", int(d.device.device_type),
                                 "); wick takes CPU, CUDAHost and CUDA tensors");
  }
  const Dtype dtype = from_dl_dtype(d.dtype);
  WICK_CHECK(d.ndim >= 0, ValueError, "from_dlpack", "invalid number of dimensions ", d.ndim);
  WICK_CHECK(d.ndim == 0 || d.shape != nullptr, ValueError, "from_dlpack", "the shape is a null pointer");
  IntArrayRef sizes(d.shape, size_t(d.ndim));
  detail::check_sizes(sizes, "from_dlpack");
  const int64_t numel = detail::checked_numel(sizes, "from_dlpack");
  DimVector strides =
      d.strides ? DimVector(d.strides, d.strides + d.ndim) : detail::contiguous_strides(sizes);
  detail::check_strides(sizes, strides, "from_dlpack");
  // The bytes from element 0 to the last element (strides are not negative).
  uint64_t span = 0;
  if (numel > 0) {
    uint64_t last = 0;
    for (int64_t i = 0; i < d.ndim; ++i) {
      uint64_t step = 0;
      WICK_CHECK(!__builtin_mul_overflow(uint64_t(sizes[i] - 1), uint64_t(strides[i]), &step) &&
                     !__builtin_add_overflow(last, step, &last),
                 ValueError, "from_dlpack", "the tensor's extent overflows");
    }
    WICK_CHECK(!__builtin_add_overflow(last, uint64_t(1), &span) &&
                   !__builtin_mul_overflow(span, uint64_t(element_size(dtype)), &span),
               ValueError, "from_dlpack", "the tensor's extent overflows");
  }
  WICK_CHECK(d.data != nullptr || numel == 0, ValueError, "from_dlpack",
             "data is a null pointer but the tensor has ", numel, " elements");
  void* base = d.data ? static_cast<char*>(d.data) + d.byte_offset : nullptr;

  // The storage takes m (only an allocation failure past this point would hand m to its deleter).
  detail::Storage storage =
      detail::Storage::make(detail::DataPtr(base, m, &release_import, device), size_t(span), nullptr);
  return detail::make_tensor(std::move(storage), dtype, sizes, strides, 0);
}

}  // namespace wick
