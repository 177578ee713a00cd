#include "cuda/cuda_check.h"

#include <cuda.h>  // the driver's types only: cuLaunchKernel comes from the runtime

#include <cstdlib>
#include <cstring>

#include "wick/error.h"

namespace wick::detail::gpu {

namespace {

bool is_sticky(cudaError_t e) {
  // Errors after which the context is unusable; every later call returns them again.
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
      return true;
    default:
      return false;
  }
}

const char* basename_of(const char* path) {
  const char* s = std::strstr(path, "src/");
  return s ? s : path;
}

}  // namespace

void raise_cuda_error(cudaError_t err, const char* op, const char* expr, const char* file, int line) {
  if (!is_sticky(err)) (void)cudaGetLastError();  // leave the runtime usable for recovery
  const char* hint = launch_blocking()
                         ? ""
                         : "\nCUDA kernel errors may be reported asynchronously at a later call; "
                           "run with CUDA_LAUNCH_BLOCKING=1 to see the op that failed.";
  if (!is_sticky(err)) hint = "";
  if (err == cudaErrorMemoryAllocation)
    raise<OutOfMemoryError>(op, "CUDA out of memory (", cudaGetErrorName(err), ") at ", basename_of(file), ":",
                            line, ": ", expr);
  raise<DeviceError>(op, "CUDA error: ", cudaGetErrorString(err), " (", cudaGetErrorName(err), ") at ",
                     basename_of(file), ":", line, ": ", expr, hint);
}

bool launch_blocking() {
  static const bool blocking = [] {
    const char* v = std::getenv("CUDA_LAUNCH_BLOCKING");
    return v != nullptr && std::strcmp(v, "1") == 0;
  }();
  return blocking;
}

void after_launch_impl(const char* op, cudaStream_t stream, const char* file, int line) {
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) [[unlikely]]
    raise_cuda_error(e, op, "kernel launch", file, line);
  if (launch_blocking()) [[unlikely]] {
    e = cudaStreamSynchronize(stream);
    if (e != cudaSuccess) raise_cuda_error(e, op, "kernel (CUDA_LAUNCH_BLOCKING=1)", file, line);
  }
}

void* driver_entry_point(const char* name) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
  cudaError_t e = cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &q);
#else
  cudaError_t e = cudaGetDriverEntryPoint(name, &p, cudaEnableDefault, &q);
#endif
  if (e != cudaSuccess) (void)cudaGetLastError();
  return e == cudaSuccess && q == cudaDriverEntryPointSuccess ? p : nullptr;
}

namespace {

using DriverLaunch = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                  CUstream, void**, void**);

// cuLaunchKernel, as the runtime hands it out (wick does not link libcuda), or null.
DriverLaunch driver_launch() {
  static const DriverLaunch fn = [] {
    if (const char* v = std::getenv("WICK_CUDA_DRIVER_LAUNCH"); v && std::strcmp(v, "0") == 0) return DriverLaunch{};
    return reinterpret_cast<DriverLaunch>(driver_entry_point("cuLaunchKernel"));
  }();
  return fn;
}

}  // namespace

void launch_kernel(const void* kernel, std::atomic<void*>& handle, dim3 grid, dim3 block, cudaStream_t stream,
                   void** args, const char* op) {
  const DriverLaunch launch = driver_launch();
  void* fn = handle.load(std::memory_order_acquire);
  if (launch && !fn) [[unlikely]] {
    cudaFunction_t h = nullptr;
    if (cudaGetFuncBySymbol(&h, kernel) == cudaSuccess && h) {
      fn = reinterpret_cast<void*>(h);
      handle.store(fn, std::memory_order_release);
    } else {
      (void)cudaGetLastError();
    }
  }
  if (launch && fn &&
      launch(static_cast<CUfunction>(fn), grid.x, grid.y, grid.z, block.x, block.y, block.z, 0,
             reinterpret_cast<CUstream>(stream), args, nullptr) == CUDA_SUCCESS) [[likely]] {
    if (launch_blocking()) [[unlikely]]
      after_launch_impl(op, stream, __FILE__, __LINE__);
    return;
  }
  WICK_CUDA_CHECK(cudaLaunchKernel(kernel, grid, block, args, 0, stream), op);
  after_launch_impl(op, stream, __FILE__, __LINE__);
}

}  // namespace wick::detail::gpu
