// Storage: the memory behind one or more tensors, with the allocator interface each device
// implements. A DataPtr owns a block through a plain function deleter so that the CPU, the
// CUDA caching allocator, pinned memory and from_blob share one handle type.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "wick/detail/intrusive_ptr.h"
#include "wick/device.h"

namespace wick::detail {

class DataPtr {
 public:
  using Deleter = void (*)(void* ctx);
  DataPtr() = default;
  DataPtr(void* ptr, void* ctx, Deleter deleter, Device device)
      : ptr_(ptr), ctx_(ctx), deleter_(deleter), device_(device) {}
  DataPtr(const DataPtr&) = delete;
  DataPtr& operator=(const DataPtr&) = delete;
  DataPtr(DataPtr&& o) noexcept { *this = std::move(o); }
  DataPtr& operator=(DataPtr&& o) noexcept {
    if (this != &o) {
      reset();
      ptr_ = std::exchange(o.ptr_, nullptr);
      ctx_ = std::exchange(o.ctx_, nullptr);
      deleter_ = std::exchange(o.deleter_, nullptr);
      device_ = o.device_;
    }
    return *this;
  }
  ~DataPtr() { reset(); }
  void reset() {
    if (deleter_) deleter_(ctx_);
    ptr_ = ctx_ = nullptr;
    deleter_ = nullptr;
  }
  void* get() const { return ptr_; }
  void* context() const { return ctx_; }
  Deleter deleter() const { return deleter_; }
  Device device() const { return device_; }

 private:
  void* ptr_ = nullptr;
  void* ctx_ = nullptr;
  Deleter deleter_ = nullptr;
  Device device_;
};

// Each device kind provides one; a CUDA allocator serves its device's current stream.
class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual DataPtr allocate(size_t nbytes) = 0;
};

// The allocator for a device with a concrete index (cpu, cuda:N), and the pinned host one.
Allocator* cpu_allocator();
Allocator* cuda_allocator(int device);    // src/cuda, or a "built without CUDA" error
Allocator* pinned_allocator();             // likewise
bool is_pinned_ptr(const void* ptr);       // false without CUDA

class StorageImpl : public IntrusiveTarget {
 public:
  StorageImpl(DataPtr data, size_t nbytes, Allocator* allocator)
      : data_(std::move(data)), nbytes_(nbytes), allocator_(allocator) {}
  void* data() const { return data_.get(); }
  const DataPtr& data_ptr() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return data_.device(); }
  Allocator* allocator() const { return allocator_; }  // null for from_blob memory
  // Bumped by every in-place write; autograd compares it with the version it saved.
  uint32_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }

 private:
  DataPtr data_;
  size_t nbytes_;
  Allocator* allocator_;
  std::atomic<uint32_t> version_{0};
};

using Storage = IntrusivePtr<StorageImpl>;

// Allocates nbytes on a device (index resolved to the current device for CUDA).
Storage make_storage(size_t nbytes, Device device, bool pinned = false);

}  // namespace wick::detail
