// An expandable segment's memory (expandable_segment.h).
#include "cuda/expandable_segment.h"

#include <string>

#include <cuda.h>  // the driver's types only: its functions come from cudaGetDriverEntryPoint
#include <cuda_runtime_api.h>

#include "cuda/cuda_check.h"
#include "cuda/runtime.h"
#include "wick/error.h"

namespace wick::detail::gpu {

namespace {

size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

// The driver's virtual memory calls. wick does not link libcuda: the runtime hands out the
// driver's entry points (driver_entry_point).
struct VmmDriver {
  decltype(&::cuGetErrorName) get_error_name = nullptr;
  decltype(&::cuDeviceGet) device_get = nullptr;
  decltype(&::cuDeviceGetAttribute) device_attribute = nullptr;
  decltype(&::cuMemGetAllocationGranularity) granularity = nullptr;
  decltype(&::cuMemAddressReserve) address_reserve = nullptr;
  decltype(&::cuMemAddressFree) address_free = nullptr;
  decltype(&::cuMemCreate) create = nullptr;
  decltype(&::cuMemRelease) release = nullptr;
  decltype(&::cuMemMap) map = nullptr;
  decltype(&::cuMemUnmap) unmap = nullptr;
  decltype(&::cuMemSetAccess) set_access = nullptr;
  std::string missing;  // the first entry point not found ("" when all were)
};

template <class F>
void driver_entry(const char* name, F& fn, std::string& missing) {
  void* p = driver_entry_point(name);
  if (!p) {
    if (missing.empty()) missing = name;
    return;
  }
  fn = reinterpret_cast<F>(p);
}

const VmmDriver& vmm_driver(const char* op) {
  static const VmmDriver d = [] {
    VmmDriver v;
    driver_entry("cuGetErrorName", v.get_error_name, v.missing);
    driver_entry("cuDeviceGet", v.device_get, v.missing);
    driver_entry("cuDeviceGetAttribute", v.device_attribute, v.missing);
    driver_entry("cuMemGetAllocationGranularity", v.granularity, v.missing);
    driver_entry("cuMemAddressReserve", v.address_reserve, v.missing);
    driver_entry("cuMemAddressFree", v.address_free, v.missing);
    driver_entry("cuMemCreate", v.create, v.missing);
    driver_entry("cuMemRelease", v.release, v.missing);
    driver_entry("cuMemMap", v.map, v.missing);
    driver_entry("cuMemUnmap", v.unmap, v.missing);
    driver_entry("cuMemSetAccess", v.set_access, v.missing);
    return v;
  }();
  WICK_CHECK(d.missing.empty(), DeviceError, op,
             "WICK_CUDA_ALLOC_CONF=expandable_segments:True needs the CUDA driver's ", d.missing,
             ", which the driver does not provide");
  return d;
}

// DeviceError "[op] CUDA driver error: NAME (code) in call (expandable segments)" unless r is
// CUDA_SUCCESS.
void cu_check(const VmmDriver& d, CUresult r, const char* call, const char* op) {
  if (r == CUDA_SUCCESS) [[likely]]
    return;
  const char* name = nullptr;
  if (!d.get_error_name || d.get_error_name(r, &name) != CUDA_SUCCESS || !name) name = "unknown error";
  raise<DeviceError>(op, "CUDA driver error: ", name, " (", int(r), ") in ", call, " (expandable segments)");
}

CUmemAllocationProp device_memory_prop(int cu_device) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = cu_device;
  return prop;
}

}  // namespace

ExpandableSegment::ExpandableSegment(int device, size_t min_page, const char* op) : device_(device) {
  const VmmDriver& drv = vmm_driver(op);
  CudaDeviceScope scope(device_);
  CUdevice dev = 0;
  cu_check(drv, drv.device_get(&dev, device_), "cuDeviceGet", op);
  int supported = 0;
  cu_check(drv,
           drv.device_attribute(&supported, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev),
           "cuDeviceGetAttribute", op);
  WICK_CHECK(supported != 0, DeviceError, op, "WICK_CUDA_ALLOC_CONF=expandable_segments:True: cuda:", device_,
             " does not support the driver's virtual memory management");
  cu_device_ = int(dev);
  const CUmemAllocationProp prop = device_memory_prop(cu_device_);
  size_t granularity = 0;
  cu_check(drv, drv.granularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
           "cuMemGetAllocationGranularity", op);
  WICK_CHECK(granularity > 0, DeviceError, op, "the driver reported an allocation granularity of 0");
  page_ = round_up(min_page, granularity);
  // Room for all of the GPU's memory and an eighth more, as PyTorch: the addresses cost
  // nothing until pages are mapped at them.
  size_t free_b = 0, total_b = 0;
  WICK_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b), op);
  size_ = round_up(total_b + total_b / 8, page_);
  devices_.push_back(device_);
  for (int d = 0; d < device_count(); ++d) {
    if (d == device_) continue;
    int can = 0;
    WICK_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, d, device_), op);
    if (can) devices_.push_back(d);
  }
  CUdeviceptr base = 0;
  cu_check(drv, drv.address_reserve(&base, size_, 0, 0, 0), "cuMemAddressReserve", op);
  base_ = uintptr_t(base);
  handles_.assign(size_ / page_, 0);
}

bool ExpandableSegment::map(size_t first, size_t n) {
  constexpr const char* op = "allocate";
  const VmmDriver& drv = vmm_driver(op);
  const CUmemAllocationProp prop = device_memory_prop(cu_device_);
  CudaDeviceScope scope(device_);
  // Like cudaMalloc, not part of any graph being captured by this thread.
  RelaxedCaptureMode relaxed;
  size_t done = 0;
  CUresult r = CUDA_SUCCESS;
  const char* call = "cuMemCreate";
  for (; done < n; ++done) {
    CUmemGenericAllocationHandle h = 0;
    call = "cuMemCreate";
    r = drv.create(&h, page_, &prop, 0);
    if (r != CUDA_SUCCESS) break;
    call = "cuMemMap";
    r = drv.map(CUdeviceptr(base_ + (first + done) * page_), page_, 0, h, 0);
    if (r != CUDA_SUCCESS) {
      (void)drv.release(h);
      break;
    }
    handles_[first + done] = h;
  }
  if (r == CUDA_SUCCESS) {
    std::vector<CUmemAccessDesc> access(devices_.size());
    for (size_t i = 0; i < access.size(); ++i) {
      CUdevice dev = 0;
      r = drv.device_get(&dev, devices_[i]);
      if (r != CUDA_SUCCESS) break;
      access[i].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
      access[i].location.id = int(dev);
      access[i].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    }
    call = "cuMemSetAccess";
    if (r == CUDA_SUCCESS)
      r = drv.set_access(CUdeviceptr(base_ + first * page_), n * page_, access.data(), access.size());
  }
  if (r != CUDA_SUCCESS) {
    // Undo this call's pages: a failed growth changes nothing.
    for (size_t i = 0; i < done; ++i) {
      (void)drv.unmap(CUdeviceptr(base_ + (first + i) * page_), page_);
      (void)drv.release(handles_[first + i]);
      handles_[first + i] = 0;
    }
    if (r == CUDA_ERROR_OUT_OF_MEMORY) return false;
    cu_check(drv, r, call, op);
  }
  mapped_bytes_ += n * page_;
  return true;
}

void ExpandableSegment::unmap(size_t first, size_t n) {
  constexpr const char* op = "empty_cache";
  const VmmDriver& drv = vmm_driver(op);
  CudaDeviceScope scope(device_);
  for (size_t i = first; i < first + n; ++i) {
    cu_check(drv, drv.unmap(CUdeviceptr(base_ + i * page_), page_), "cuMemUnmap", op);
    cu_check(drv, drv.release(handles_[i]), "cuMemRelease", op);
    handles_[i] = 0;
    mapped_bytes_ -= page_;
  }
}

void ExpandableSegment::release() {
  const VmmDriver& drv = vmm_driver("empty_cache");
  CudaDeviceScope scope(device_);
  cu_check(drv, drv.address_free(CUdeviceptr(base_), size_), "cuMemAddressFree", "empty_cache");
}

}  // namespace wick::detail::gpu
