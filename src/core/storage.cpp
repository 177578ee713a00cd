#include <cstdlib>
#include <new>

#include "wick/cuda.h"
#include "wick/detail/storage.h"
#include "wick/error.h"

namespace wick::detail {

namespace {

// 64-byte aligned host memory: whole cache lines, and room for any vector width.
class CpuAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes) override {
    if (nbytes == 0) return DataPtr(nullptr, nullptr, nullptr, Device(kCPU));
    size_t rounded = (nbytes + 63) & ~size_t(63);
    void* p = std::aligned_alloc(64, rounded);
    WICK_CHECK(p != nullptr, OutOfMemoryError, "cpu",
               "failed to allocate ", nbytes, " bytes of host memory");
    return DataPtr(p, p, &std::free, Device(kCPU));
  }
};

}  // namespace

Allocator* cpu_allocator() {
  static CpuAllocator a;
  return &a;
}

Storage make_storage(size_t nbytes, Device device, bool pinned) {
  Allocator* alloc;
  if (device.is_cpu()) {
    alloc = pinned ? pinned_allocator() : cpu_allocator();
  } else {
    WICK_CHECK(!pinned, ValueError, "empty", "only CPU tensors can be pinned (got ", device, ")");
    alloc = cuda_allocator(device.index());
  }
  return Storage::make(alloc->allocate(nbytes), nbytes, alloc);
}

}  // namespace wick::detail
