// A small C interface to wick's DLPack functions for tests/interop/dlpack_torch.py, which loads
// it with ctypes and exchanges tensors with PyTorch (torch.utils.dlpack) through it.
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>

#include <dlpack/dlpack.h>

#include "wick/wick.h"

namespace {

wick::Dtype dtype_of(const char* name) {
  const std::string n = name;
  for (wick::Dtype t : {wick::kBool, wick::kUInt8, wick::kInt8, wick::kInt16, wick::kInt32, wick::kInt64,
                        wick::kFloat16, wick::kBFloat16, wick::kFloat32, wick::kFloat64}) {
    std::ostringstream os;
    os << t;
    if (os.str() == n) return t;
  }
  throw wick::ValueError("[dlpack_torch_shim] unknown dtype " + n);
}

wick::Device device_of(int device) {
  return device < 0 ? wick::Device("cpu") : wick::Device(wick::kCUDA, device);
}

}  // namespace

extern "C" {

// The DLPack integer of wick's current stream on a device: 1 for the legacy default stream.
std::intptr_t wick_shim_current_stream(int device) {
  auto native = reinterpret_cast<std::intptr_t>(wick::cuda::current_stream(device).native());
  return native == 0 ? 1 : native;
}

int64_t wick_shim_memory_allocated(int device) { return wick::cuda::memory_allocated(device); }

// arange(rows * cols) (0/1 alternating for bool) as a [rows, cols] tensor of dtype on device
// (-1: the CPU), transposed when asked, exported for a consumer whose stream is `stream`. On a
// GPU the values are made on a side stream of wick's, which the consumer's stream must wait for.
DLManagedTensor* wick_shim_export(const char* dtype, int64_t rows, int64_t cols, int device,
                                  std::intptr_t stream, int transpose) {
  const wick::Dtype t = dtype_of(dtype);
  auto make = [&] {
    auto v = wick::arange(double(rows * cols), wick::TensorOptions(wick::kFloat64).device(device_of(device)));
    if (t == wick::kBool) v = v.remainder(2.);
    auto x = v.to(t).view({rows, cols});
    return transpose ? x.t() : x;
  };
  if (device < 0) return wick::to_dlpack(make(), stream);
  auto side = wick::cuda::Stream::create(device);
  side.wait_stream(wick::cuda::current_stream(device));
  wick::cuda::StreamGuard guard(side);
  return wick::to_dlpack(make(), stream);
}

// n elements of value 1, after `adds` in-place additions of 1 queued on wick's side stream:
// 1 + adds everywhere once that work is done.
DLManagedTensor* wick_shim_export_filled(int64_t n, int adds, int device, std::intptr_t stream) {
  auto side = wick::cuda::Stream::create(device);
  side.wait_stream(wick::cuda::current_stream(device));
  wick::cuda::StreamGuard guard(side);
  auto x = wick::full({n}, 1.0, wick::TensorOptions(wick::kFloat32).device(device_of(device)));
  for (int i = 0; i < adds; ++i) x.add_(1.0);
  return wick::to_dlpack(x, stream);
}

void* wick_shim_data(DLManagedTensor* m) {
  return static_cast<char*>(m->dl_tensor.data) + m->dl_tensor.byte_offset;
}

// Imports m (taking it), writes its data pointer, sizes and strides (up to 8 dimensions) and its
// dtype's name, returns the sum of its elements as float64; the import is dropped on return, so
// m's deleter runs before this returns. -1e300 when wick raised (message on stderr).
double wick_shim_import(DLManagedTensor* m, void** data, int64_t* sizes, int64_t* strides, char* dtype_name,
                        int add_one) {
  try {
    wick::Tensor t = wick::from_dlpack(m);
    *data = t.data_ptr();
    for (int64_t i = 0; i < t.dim() && i < 8; ++i) {
      sizes[i] = t.size(i);
      strides[i] = t.stride(i);
    }
    std::ostringstream os;
    os << t.dtype();
    std::snprintf(dtype_name, 32, "%s", os.str().c_str());
    double sum = t.to(wick::kFloat64).sum().item<double>();
    if (add_one) {
      t.add_(1);  // seen by the producer: the memory is shared
      if (t.is_cuda()) wick::cuda::synchronize(int(t.device().index()));
    }
    return sum;
  } catch (const wick::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return -1e300;
  }
}

}  // extern "C"
