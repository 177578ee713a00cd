// An expandable segment's memory (WICK_CUDA_ALLOC_CONF=expandable_segments:True): a virtual
// address range as large as the GPU's memory and an eighth, reserved once through the driver's
// virtual memory calls, in which physical pages are mapped and unmapped one page index at a
// time. The caching allocator (caching_allocator.h) keeps the blocks that cover the range; this
// class only owns the range and its pages. wick does not link libcuda: the driver's functions
// come from the runtime (driver_entry_point).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace wick::detail::gpu {

class ExpandableSegment {
 public:
  // Reserves the range on device, with pages of min_page bytes rounded up to the driver's
  // granularity. The devices that can reach device's memory get access to the pages too (copies
  // between GPUs take peer access, which does not extend to memory mapped this way by itself).
  // DeviceError named op where the driver or the device lacks virtual memory management.
  ExpandableSegment(int device, size_t min_page, const char* op);
  ExpandableSegment(const ExpandableSegment&) = delete;
  ExpandableSegment& operator=(const ExpandableSegment&) = delete;

  // Maps pages [first, first + n) to fresh physical memory. false, with nothing mapped by this
  // call, when the device is out of memory; DeviceError for any other driver error.
  bool map(size_t first, size_t n);
  // Unmaps pages [first, first + n) and releases their memory (DeviceError on a driver error).
  void unmap(size_t first, size_t n);
  // Gives the range back to the driver; nothing may be mapped then, nor the segment used after.
  void release();

  size_t size() const { return size_; }  // the reserved range, [base(), base() + size())
  uintptr_t base() const { return base_; }
  size_t page() const { return page_; }                  // the mapping unit, a multiple of the granularity
  size_t mapped_bytes() const { return mapped_bytes_; }  // pages mapped, in bytes

 private:
  int device_;
  int cu_device_ = 0;         // the driver's handle of the device
  std::vector<int> devices_;  // devices given access: this one and its peers
  uintptr_t base_ = 0;
  size_t size_ = 0;
  size_t page_ = 0;
  std::vector<unsigned long long> handles_;  // physical memory of each page; 0: not mapped
  size_t mapped_bytes_ = 0;
};

}  // namespace wick::detail::gpu
