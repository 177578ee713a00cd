// Pinned host memory, cached by power-of-two size: cudaHostAlloc costs about a millisecond per
// megabyte (the pages are locked one by one), so freed blocks are kept and reused. A block that
// an asynchronous copy used is reused only after that copy's event completes; the event is
// recorded when the copy is queued (pinned_record_stream), so no stream needs to be tracked.
//
// One process-wide mutex: pinned memory belongs to no device, and allocations are rare
// (batches, staging buffers), so a finer scheme would buy nothing.
#include "cuda/pinned_allocator.h"

#include <bit>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "core/cuda_hooks.h"
#include "cuda/caching_allocator.h"
#include "cuda/cuda_check.h"
#include "cuda/event_pool.h"
#include "cuda/runtime.h"
#include "wick/cuda.h"
#include "wick/error.h"

namespace wick::detail::gpu {

namespace {

struct HostBlock {
  void* ptr = nullptr;
  size_t size = 0;
  bool allocated = false;
  struct Use {
    cudaEvent_t event;
    int device;
    cudaStream_t stream;
  };
  // The last copy queued on each stream that uses it: work on one stream runs in order, so a
  // newer copy's event stands for the older ones (a block reused for many copies keeps a few).
  std::vector<Use> events;
};

void pinned_deleter(void* ctx);

class PinnedAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes) override {
    if (nbytes == 0) return DataPtr(nullptr, nullptr, nullptr, Device(kCPU));
    const size_t size = std::bit_ceil(nbytes < 512 ? size_t(512) : nbytes);
    const int bucket = std::countr_zero(size);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!pending_.empty()) process_pending();
      auto& list = free_[bucket];
      if (!list.empty()) {
        HostBlock* b = list.back();
        list.pop_back();
        b->allocated = true;
        return DataPtr(b->ptr, b, &pinned_deleter, Device(kCPU));
      }
    }
    // cudaHostAlloc needs a context: the current device's.
    const int d = resolve_cuda_device(Device(kCUDA, -1), "pin_memory").index();
    void* p = nullptr;
    cudaError_t err;
    {
      CudaDeviceScope scope(d);
      err = cudaHostAlloc(&p, size, cudaHostAllocDefault);  // portable to every GPU under UVA
      if (err == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        empty_cache();
        err = cudaHostAlloc(&p, size, cudaHostAllocDefault);
        if (err == cudaErrorMemoryAllocation) {
          (void)cudaGetLastError();
          raise<OutOfMemoryError>("pin_memory", "failed to allocate ", format_bytes(int64_t(nbytes)),
                                  " of pinned host memory (cudaHostAlloc of ", format_bytes(int64_t(size)), ")");
        }
      }
    }
    WICK_CUDA_CHECK(err, "pin_memory");
    auto* b = new HostBlock{p, size, true, {}};
    std::lock_guard<std::mutex> lock(mu_);
    blocks_[uintptr_t(p)] = b;
    return DataPtr(p, b, &pinned_deleter, Device(kCPU));
  }

  void free(HostBlock* b) {
    std::lock_guard<std::mutex> lock(mu_);
    b->allocated = false;
    if (b->events.empty()) free_[std::countr_zero(b->size)].push_back(b);
    else pending_.push_back(b);
  }

  void record(HostBlock* b, int device, cudaStream_t stream) {
    std::lock_guard<std::mutex> lock(mu_);
    HostBlock::Use* use = nullptr;
    for (auto& u : b->events)
      if (u.device == device && u.stream == stream) use = &u;
    if (!use) use = &b->events.emplace_back(HostBlock::Use{acquire_event(device), device, stream});
    CudaDeviceScope scope(device);
    WICK_CUDA_CHECK(cudaEventRecord(use->event, stream), "copy_");
  }

  bool contains(const void* p) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = blocks_.upper_bound(uintptr_t(p));
    if (it == blocks_.begin()) return false;
    --it;
    return uintptr_t(p) < it->first + it->second->size;
  }

  // Frees every cached block that no copy is using.
  void empty_cache() {
    std::lock_guard<std::mutex> lock(mu_);
    if (!pending_.empty()) process_pending();
    for (auto& list : free_) {
      for (HostBlock* b : list) {
        (void)cudaFreeHost(b->ptr);
        blocks_.erase(uintptr_t(b->ptr));
        delete b;
      }
      list.clear();
    }
  }

 private:
  void process_pending() {
    for (size_t i = 0; i < pending_.size();) {
      HostBlock* b = pending_[i];
      auto& ev = b->events;
      for (size_t j = 0; j < ev.size();) {
        cudaError_t r = cudaEventQuery(ev[j].event);
        if (r == cudaErrorNotReady) {
          (void)cudaGetLastError();
          ++j;
          continue;
        }
        WICK_CUDA_CHECK(r, "pin_memory");
        release_event(ev[j].device, ev[j].event);
        ev[j] = ev.back();
        ev.pop_back();
      }
      if (ev.empty()) {
        free_[std::countr_zero(b->size)].push_back(b);
        pending_[i] = pending_.back();
        pending_.pop_back();
      } else {
        ++i;
      }
    }
  }

  std::mutex mu_;
  std::map<uintptr_t, HostBlock*> blocks_;  // every block, by address (is_pinned_ptr of views)
  std::vector<HostBlock*> free_[64];        // unused blocks by log2(size)
  std::vector<HostBlock*> pending_;         // freed, waiting for their copies' events
};

PinnedAllocator& pinned() {
  static PinnedAllocator* a = new PinnedAllocator();  // never destroyed: tensors may outlive main
  return *a;
}

void pinned_deleter(void* ctx) { pinned().free(static_cast<HostBlock*>(ctx)); }

}  // namespace

bool is_cached_pinned_ptr(const void* p) { return p != nullptr && pinned().contains(p); }

bool pinned_record_stream(const DataPtr& p, int device, cudaStream_t stream) {
  if (p.deleter() != &pinned_deleter) return false;
  pinned().record(static_cast<HostBlock*>(p.context()), device, stream);
  return true;
}

}  // namespace wick::detail::gpu

namespace wick::detail {

Allocator* pinned_allocator() { return &gpu::pinned(); }

bool is_pinned_ptr(const void* p) {
  if (p == nullptr) return false;
  if (gpu::pinned().contains(p)) return true;
  // Pinned memory from elsewhere (cudaHostAlloc, cudaHostRegister) needs a context to exist;
  // ask CUDA only when wick has made one, so that this never makes one.
  const uint64_t used = gpu::g_used_devices.load(std::memory_order_relaxed);
  if (used == 0 || gpu::device_count() == 0) return false;
  gpu::CudaDeviceScope scope(std::countr_zero(used));
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return attr.type == cudaMemoryTypeHost;
}

}  // namespace wick::detail
