// The CUDA caching allocator, one per device, after PyTorch's (c10/cuda/CUDACachingAllocator):
// memory is taken from the driver in segments and handed out in blocks that are split,
// merged and reused within the stream they were allocated on, so that a freed block can be
// reused by the next allocation on that stream without waiting for the GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

#include "cuda/expandable_segment.h"

namespace wick::detail::gpu {

inline constexpr size_t kMinBlockSize = 512;      // every size is rounded up to this
inline constexpr size_t kSmallSize = 1 << 20;     // up to this: the small pool
inline constexpr size_t kSmallBuffer = 2 << 20;   // small-pool segments
inline constexpr size_t kLargeBuffer = 20 << 20;  // segments for requests under kMinLargeAlloc
inline constexpr size_t kMinLargeAlloc = 10 << 20;
inline constexpr size_t kRoundLarge = 2 << 20;  // larger requests are rounded to this

// One counter with PyTorch's four figures.
struct Stat {
  int64_t current = 0, peak = 0, allocated = 0, freed = 0;
  void increase(int64_t n) {
    current += n;
    allocated += n;
    if (current > peak) peak = current;
  }
  void decrease(int64_t n) {
    current -= n;
    freed += n;
  }
};

enum StatType { kStatAll = 0, kStatSmallPool = 1, kStatLargePool = 2, kNumStatTypes = 3 };
using StatArray = Stat[kNumStatTypes];

struct DeviceStats {
  StatArray allocation, segment, active, inactive_split;
  StatArray allocated_bytes, reserved_bytes, active_bytes, inactive_split_bytes, requested_bytes;
  Stat oversize_allocations, oversize_segments;
  int64_t num_alloc_retries = 0, num_ooms = 0, num_sync_all_streams = 0;
  int64_t num_device_alloc = 0, num_device_free = 0;
  int64_t max_split_size = 0;
};

struct AllocConfig;
struct BlockPool;
struct ExpandableChain;

struct StreamUse {
  int device;
  cudaStream_t stream;
  bool operator==(const StreamUse&) const = default;
};

struct Block {
  int device = 0;
  cudaStream_t stream = nullptr;  // the stream it was allocated on
  size_t size = 0;                // rounded
  size_t requested = 0;           // what the caller asked for, while allocated
  void* ptr = nullptr;
  BlockPool* pool = nullptr;  // null when caching is off
  Block* prev = nullptr;      // neighbours within the segment
  Block* next = nullptr;
  bool allocated = false;
  int event_count = 0;                 // events to complete before it returns to the pool
  uint64_t freed_at = 0;               // tick of entering the pool (garbage collection age)
  std::vector<StreamUse> stream_uses;  // other streams that used it (record_stream)
  // In an expandable segment (WICK_CUDA_ALLOC_CONF=expandable_segments:True): the segment, and
  // whether the block's range has physical memory mapped. Unmapped blocks are never in a pool:
  // they sit in their segment's `unmapped` set. Null for blocks of cudaMalloc'd segments.
  ExpandableChain* segment = nullptr;
  bool mapped = true;
  // Freed but parked (DeviceCachingAllocator::park): in no pool, and not a free neighbour to
  // merge with until it is flushed into the pool.
  bool parked = false;
  bool is_split() const { return prev != nullptr || next != nullptr; }
};

struct BlockLess {
  bool operator()(const Block* a, const Block* b) const {
    if (a->stream != b->stream) return uintptr_t(a->stream) < uintptr_t(b->stream);
    if (a->size != b->size) return a->size < b->size;
    return uintptr_t(a->ptr) < uintptr_t(b->ptr);
  }
};

// Recycles the set's nodes: the fast path erases and inserts a node or two per allocation, and
// a free list turns each of those mallocs into a pop. Used under the device's mutex only.
template <class T>
struct NodeAllocator {
  using value_type = T;
  std::vector<void*>* free_list;
  explicit NodeAllocator(std::vector<void*>* l) : free_list(l) {}
  template <class U>
  NodeAllocator(const NodeAllocator<U>& o) : free_list(o.free_list) {}
  T* allocate(size_t n) {
    if (n == 1 && !free_list->empty()) {
      void* p = free_list->back();
      free_list->pop_back();
      return static_cast<T*>(p);
    }
    return static_cast<T*>(::operator new(n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) {
    if (n == 1) free_list->push_back(p);
    else ::operator delete(p);
  }
  template <class U>
  bool operator==(const NodeAllocator<U>& o) const {
    return free_list == o.free_list;
  }
};

struct BlockPool {
  std::vector<void*> spare_nodes;  // before `blocks`, which allocates from it
  std::set<Block*, BlockLess, NodeAllocator<Block*>>
      blocks;  // free blocks by (stream, size, address): best fit per stream
  bool small;
  // A graph's private pool that no graph uses any more: its segments go back to the driver as
  // soon as they are wholly free.
  bool retired = false;
  explicit BlockPool(bool is_small)
      : blocks(BlockLess(), NodeAllocator<Block*>(&spare_nodes)), small(is_small) {}
};

// With expandable_segments:True, one per (stream, pool kind) of the device's own pools (never
// for graphs' private pools): an ExpandableSegment (pages of 2 MiB for the small pool and
// 20 MiB for the large one, rounded up to the driver's granularity), mapped where blocks need
// memory and unmapped by empty_cache (and before an out-of-memory retry) where whole pages are
// free. The range is covered by one chain of blocks, mapped ones (allocated, or free in the
// pool) and unmapped ones (kept in `unmapped`, best fit by size), so a block can grow across
// what would be the boundary of two fixed segments.
struct ExpandableChain : ExpandableSegment {
  ExpandableChain(int device, BlockPool* p, cudaStream_t s, size_t min_page, const char* op)
      : ExpandableSegment(device, min_page, op), pool(p), stream(s) {}
  BlockPool* pool;
  cudaStream_t stream;
  std::set<Block*, BlockLess> unmapped;  // the chain's unmapped blocks
};

class DeviceCachingAllocator {
 public:
  explicit DeviceCachingAllocator(int device);
  // A block of at least size bytes for use on stream; throws OutOfMemoryError.
  Block* malloc(size_t size, cudaStream_t stream);
  void free(Block* block);
  // Block is also used on (device, stream): it returns to the pool only once that work is done.
  void record_stream(Block* block, int device, cudaStream_t stream);
  // Waits for pending frees and gives every unused whole segment back to the driver.
  void empty_cache();
  DeviceStats stats();
  void reset_peak_stats();
  void reset_accumulated_stats();
  void set_memory_fraction(double fraction);
  // Segment sizes and their blocks (allocated or not), for tests and the summary.
  std::vector<std::pair<size_t, std::vector<std::pair<size_t, bool>>>> segments();

  // CUDA graphs (graph.cpp, docs/design.md section 8): from begin_capture to end_capture,
  // allocations on stream come from the private pool id (made on first use; each
  // begin_capture counts one more graph using it), cudaMalloc runs in relaxed capture mode,
  // and nothing is given back to the driver. release_pool: one graph less uses the pool.
  void begin_capture(std::pair<uint64_t, uint64_t> id, cudaStream_t stream);
  void end_capture(cudaStream_t stream);
  void release_pool(std::pair<uint64_t, uint64_t> id);
  bool capturing();

 private:
  Block* find_free_block(BlockPool& pool, size_t size, cudaStream_t stream);
  Block* alloc_segment(BlockPool* pool, size_t size, cudaStream_t stream);
  void split(Block* block, size_t size);
  void free_block(Block* block);
  // Marks a pool block (split to its size) allocated for requested bytes, with its statistics.
  Block* hand_out(Block* block, size_t requested);
  // free_block after the active counts went down: merges block with its free neighbours and
  // puts the result in its pool.
  void insert_free(Block* block);
  // Parking: a freed small-pool block is kept out of the pool on a short list, as it is, so
  // that the next request of its size on its stream takes it back without the pool's tree
  // operations (the merge with its free neighbour on free, the search and split on malloc).
  // Everything that reads or changes the pools as a whole flushes the list first (in the order
  // the blocks were freed), so that what can be observed is what the pool alone would show.
  void park(Block* block);
  Block* unpark(size_t size, cudaStream_t stream);  // the newest match, or null
  void flush_parked();
  void release_segment(Block* block);
  void release_cached_blocks();
  void garbage_collect();
  void process_events();
  void synchronize_and_free_events();
  void pool_insert(Block* b);
  void pool_erase(Block* b);
  void update_stats(StatArray& s, BlockPool* pool, int64_t delta);
  Block* new_block();
  void delete_block(Block* b);
  // Expandable segments (see ExpandableChain).
  ExpandableChain& expandable_segment(BlockPool* pool, cudaStream_t stream);
  // A mapped block of at least size bytes taken from the segment's unmapped range (merged with
  // the free mapped block before it, so that the segment grows in place); null when the
  // memory fraction or the GPU has no room for the pages (nothing is changed then).
  Block* map_expandable(ExpandableChain& seg, size_t size);
  // Maps pages [first, first + n) of seg; false (nothing left mapped) when out of memory.
  bool map_pages(ExpandableChain& seg, size_t first, size_t n);
  void unmap_pages(ExpandableChain& seg, size_t first, size_t n);
  // Unmaps every whole page under free blocks of the expandable segments.
  void release_expandable_pages();
  [[noreturn]] void throw_oom(std::unique_lock<std::mutex>& lock, size_t requested, size_t alloc_size);

  const int device_;
  const AllocConfig& cfg_;  // alloc_config(), fixed for the process
  std::mutex mu_;           // see caching_allocator.cpp for why one per device
  BlockPool small_{true}, large_{false};
  struct PendingEvent {
    cudaEvent_t event;
    int device;  // the event's (the recording stream's) device
    Block* block;
  };
  std::deque<PendingEvent> events_;  // pending record_stream frees, in order
  struct PrivatePool {
    BlockPool small{true}, large{false};
    int use_count = 0;  // graphs captured into it and not yet reset
  };
  std::map<std::pair<uint64_t, uint64_t>, std::unique_ptr<PrivatePool>> private_pools_;
  std::vector<std::pair<cudaStream_t, PrivatePool*>> captures_;  // streams capturing, and their pools
  void release_retired();
  std::vector<std::unique_ptr<ExpandableChain>> expandable_;
  std::vector<Block*> spare_blocks_;  // recycled Block objects
  static constexpr size_t kMaxParked = 16;
  Block* parked_[kMaxParked] = {};  // oldest first
  size_t num_parked_ = 0;
  DeviceStats stats_;
  uint64_t tick_ = 0;
  bool fraction_set_ = false;
  size_t allowed_max_ = SIZE_MAX;
  bool fraction_limited_ = false;  // the last failed segment hit the fraction, not the GPU
};

// Device d's allocator (created on first use, never destroyed: tensors may outlive main).
DeviceCachingAllocator& device_caching_allocator(int d);
// The one if device d already has one, else null (queries that must not create state).
DeviceCachingAllocator* existing_caching_allocator(int d);
// The deleter of DataPtrs from the caching allocator (context: the Block).
void block_deleter(void* ctx);

// "2.00 GiB", as PyTorch's format_size.
std::string format_bytes(int64_t n);

}  // namespace wick::detail::gpu
