// Devices: count, properties, the current device, guards. Nothing here makes a CUDA context
// except set_device, DeviceGuard and the calls that need one (mem_get_info, synchronize).
#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>

#include <cuda.h>  // the driver's types only: cuCtxGetCurrent comes from the runtime

#include "core/cuda_hooks.h"
#include "cuda/cuda_check.h"
#include "cuda/kernels/op_kernels.h"
#include "cuda/runtime.h"
#include "wick/cuda.h"
#include "wick/error.h"

namespace wick::detail::gpu {

namespace {

std::string visible_devices_env() {
  const char* v = std::getenv("CUDA_VISIBLE_DEVICES");
  return v ? std::string(v) : std::string();
}

struct DeviceCount {
  int count = 0;
  cudaError_t error = cudaSuccess;  // why count is 0, when it is
  bool driver_missing = false;       // no libcuda.so.1 at all
  bool visible_set = false;          // CUDA_VISIBLE_DEVICES when the driver read it
  std::string visible;
};

const DeviceCount& device_count_info() {
  static const DeviceCount info = [] {
    DeviceCount c;
    const char* v = std::getenv("CUDA_VISIBLE_DEVICES");
    c.visible_set = v != nullptr;
    c.visible = visible_devices_env();
    int n = 0;
    // Without a driver or a GPU this fails (cudaErrorInsufficientDriver, cudaErrorNoDevice):
    // that is "not available", not an error.
    c.error = cudaGetDeviceCount(&n);
    if (c.error != cudaSuccess) {
      (void)cudaGetLastError();
      n = 0;
      // The runtime reports a missing driver as an old one; tell the two apart.
      if (c.error == cudaErrorInsufficientDriver) {
        void* lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
        c.driver_missing = lib == nullptr;
        if (lib) dlclose(lib);
      }
    }
    c.count = n < kMaxCudaDevices ? n : kMaxCudaDevices;
    return c;
  }();
  return info;
}

std::string describe_visible() {
  const DeviceCount& c = device_count_info();
  if (!c.visible_set) return "CUDA_VISIBLE_DEVICES is not set";
  return "CUDA_VISIBLE_DEVICES='" + c.visible + "'";
}

// The driver reads CUDA_VISIBLE_DEVICES once; a later setenv changes nothing. Say so once.
void warn_if_visible_devices_changed() {
  static std::atomic<bool> warned{false};
  const DeviceCount& c = device_count_info();
  const char* v = std::getenv("CUDA_VISIBLE_DEVICES");
  bool same = (v != nullptr) == c.visible_set && (!v || c.visible == v);
  if (!same && !warned.exchange(true))
    std::fprintf(stderr,
                 "wick: warning: CUDA_VISIBLE_DEVICES changed after CUDA was initialized (from %s to %s%s%s); "
                 "the change has no effect in this process\n",
                 c.visible_set ? ("'" + c.visible + "'").c_str() : "unset", v ? "'" : "", v ? v : "unset",
                 v ? "'" : "");
}

// The runtime's current device is the device of the thread's current driver context, when one
// is current. cudaGetDevice costs about four times cuCtxGetCurrent, and every op asks (a device
// scope, a tensor made on "cuda"): the thread remembers the context it last asked about and
// its device, and asks the runtime again only when another context is current (a device
// switched by cudaSetDevice here or in code beside wick, a context of the user's own). A
// context's address names it for as long as it lives; after cudaDeviceReset (which wick's
// cached memory does not survive either) another device's context could take it.
using CtxGetCurrent = CUresult (*)(CUcontext*);

CtxGetCurrent ctx_get_current() {
  static const CtxGetCurrent fn = reinterpret_cast<CtxGetCurrent>(driver_entry_point("cuCtxGetCurrent"));
  return fn;
}

thread_local CUcontext tl_known_ctx = nullptr;
thread_local int tl_known_ctx_device = -1;

int runtime_device() {
  const CtxGetCurrent get = ctx_get_current();
  CUcontext ctx = nullptr;
  if (get && get(&ctx) == CUDA_SUCCESS && ctx && ctx == tl_known_ctx) [[likely]]
    return tl_known_ctx_device;
  int d = 0;
  WICK_CUDA_CHECK(cudaGetDevice(&d), "current_device");
  // Remembered only with a context current, which cudaGetDevice does not create.
  ctx = nullptr;
  if (get && get(&ctx) == CUDA_SUCCESS && ctx) {
    tl_known_ctx = ctx;
    tl_known_ctx_device = d;
  }
  return d;
}

void set_runtime_device(int d, const char* op) {
  WICK_CUDA_CHECK(cudaSetDevice(d), op);
  mark_device_used(d);
}

}  // namespace

int device_count() { return device_count_info().count; }

void check_cuda_device(int d, const char* op) {
  const DeviceCount& c = device_count_info();
  if (d >= 0 && d < c.count) [[likely]]
    return;
  if (c.count == 0 && c.driver_missing)
    raise<DeviceError>(op, "no CUDA device is available (no NVIDIA driver: libcuda.so.1 was not found; ",
                       describe_visible(), ")");
  if (c.count == 0)
    raise<DeviceError>(op, "no CUDA device is available (", cudaGetErrorName(c.error), ": ",
                       cudaGetErrorString(c.error), "; ", describe_visible(), ")");
  raise<DeviceError>(op, "invalid device cuda:", d, ": ", c.count, c.count == 1 ? " CUDA device is" : " CUDA devices are",
                     " visible (cuda:0 to cuda:", c.count - 1, "; ", describe_visible(), ")");
}

void switch_device(int device, bool create) {
  if (create || device_used(device)) {
    if (runtime_device() != device) set_runtime_device(device, "set_device");
    mark_device_used(device);
    tl_target_device = -1;
  } else {
    tl_target_device = runtime_device() == device ? -1 : device;
  }
}

int sm_count(int d) {
  static std::atomic<int> counts[kMaxCudaDevices] = {};
  int n = counts[d].load(std::memory_order_relaxed);
  if (n == 0) [[unlikely]] {
    WICK_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, d), "cuda");
    counts[d].store(n, std::memory_order_relaxed);
  }
  return n;
}

}  // namespace wick::detail::gpu

namespace wick::detail {

CudaDeviceScope::CudaDeviceScope(int device) {
  const int runtime = gpu::runtime_device();
  const int wick_current = gpu::tl_target_device >= 0 ? gpu::tl_target_device : runtime;
  if (runtime != device) gpu::set_runtime_device(device, "cuda");
  else gpu::mark_device_used(device);
  // Inside the scope the current device is device, for nested scopes too (a pending switch to
  // another device, gpu::tl_target_device, is what the scope restores at its end).
  gpu::tl_target_device = -1;
  if (wick_current != device) restore_ = wick_current;
}

CudaDeviceScope::~CudaDeviceScope() {
  if (restore_ < 0) return;
  if (gpu::device_used(restore_)) {
    (void)cudaSetDevice(restore_);
    gpu::tl_target_device = -1;
  } else {
    gpu::tl_target_device = restore_;
  }
}

Device resolve_cuda_device(Device d, const char* op) {
  int index = d.index();
  if (index < 0) {
    if (gpu::tl_target_device >= 0) return Device(kCUDA, gpu::tl_target_device);
    gpu::check_cuda_device(0, op);  // a clear error when there is no device at all
    index = gpu::runtime_device();
  }
  gpu::check_cuda_device(index, op);
  return Device(kCUDA, index);
}

}  // namespace wick::detail

namespace wick::cuda {

using namespace wick::detail::gpu;

bool is_available() {
  warn_if_visible_devices_changed();
  return detail::gpu::device_count() > 0;
}

int device_count() {
  warn_if_visible_devices_changed();
  return detail::gpu::device_count();
}

int current_device() {
  check_cuda_device(0, "current_device");
  if (tl_target_device >= 0) return tl_target_device;
  return runtime_device();
}

void set_device(int device) {
  warn_if_visible_devices_changed();
  WICK_CHECK(device >= -1, ValueError, "set_device", "Device index must be -1 or non-negative, got ", device);
  if (device < 0) return;  // as torch.cuda.set_device: -1 changes nothing
  check_cuda_device(device, "set_device");
  switch_device(device, /*create=*/true);
}

std::string get_device_name(int device) {
  (void)detail::resolve_cuda_device(Device(kCUDA, device), "get_device_name");  // errors name this op
  return get_device_properties(device).name;
}

DeviceProperties get_device_properties(int device) {
  const int d = detail::resolve_cuda_device(Device(kCUDA, device), "get_device_properties").index();
  static std::mutex mu;
  static std::optional<DeviceProperties> cache[kMaxCudaDevices];
  std::lock_guard<std::mutex> lock(mu);
  if (!cache[d]) {
    cudaDeviceProp p{};
    WICK_CUDA_CHECK(cudaGetDeviceProperties(&p, d), "get_device_properties");
    DeviceProperties out;
    out.name = p.name;
    out.total_memory = int64_t(p.totalGlobalMem);
    out.multi_processor_count = p.multiProcessorCount;
    out.major = p.major;
    out.minor = p.minor;
    const auto* u = reinterpret_cast<const unsigned char*>(p.uuid.bytes);
    char buf[64];
    std::snprintf(buf, sizeof buf, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
                  u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
    out.uuid = buf;
    std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.0", unsigned(p.pciDomainID), unsigned(p.pciBusID),
                  unsigned(p.pciDeviceID));
    out.pci_bus_id = buf;
    cache[d] = std::move(out);
  }
  return *cache[d];
}

std::pair<int64_t, int64_t> mem_get_info(int device) {
  const int d = detail::resolve_cuda_device(Device(kCUDA, device), "mem_get_info").index();
  CudaDeviceScope scope(d);
  size_t free_b = 0, total_b = 0;
  WICK_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b), "mem_get_info");
  return {int64_t(free_b), int64_t(total_b)};
}

void synchronize(int device) {
  const int d = detail::resolve_cuda_device(Device(kCUDA, device), "synchronize").index();
  detail::gpu::check_device_not_capturing(d, "synchronize");
  CudaDeviceScope scope(d);
  WICK_CUDA_CHECK(cudaDeviceSynchronize(), "synchronize");
  raise_pending_target_error();  // a bad nll_loss target that a kernel met (loss.cu)
}

DeviceGuard::DeviceGuard(int device) : DeviceGuard(Device(kCUDA, device)) {}

DeviceGuard::DeviceGuard(Device device) {
  WICK_CHECK(device.is_cuda(), DeviceError, "DeviceGuard", "expected a CUDA device, got ", device);
  check_cuda_device(device.index() < 0 ? 0 : device.index(), "DeviceGuard");
  previous_ = current_device();
  const int d = device.index() < 0 ? previous_ : device.index();
  // As `with torch.cuda.device(i)`: entering makes i current (a context on first use);
  // leaving restores the previous device without making a context on it.
  if (d != previous_) switch_device(d, /*create=*/true);
  else previous_ = -1;
}

DeviceGuard::~DeviceGuard() {
  if (previous_ < 0) return;
  try {
    switch_device(previous_, /*create=*/false);
  } catch (...) {
  }
}

}  // namespace wick::cuda
