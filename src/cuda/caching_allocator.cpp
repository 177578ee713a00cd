// The caching allocator (see caching_allocator.h) and the Allocator that cuda tensors use.
//
// Locking: one mutex per device, taken on every allocate and free. The alternatives were one
// global lock (threads driving different GPUs, as DataParallel does, would serialize on it)
// and lock-free per-thread caches (a block freed on another thread, stats and record_stream
// would all need cross-thread hand-offs, for a saving of about 20 ns of uncontended lock).
// Uncontended, the lock costs less than the set lookup it protects.
#include "cuda/caching_allocator.h"

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <mutex>

#include "core/cuda_hooks.h"
#include "cuda/alloc_config.h"
#include "cuda/cuda_check.h"
#include "cuda/event_pool.h"
#include "cuda/runtime.h"
#include "wick/detail/storage.h"
#include "wick/error.h"

namespace wick::detail::gpu {

namespace {

size_t round_size(size_t n) {
  return n < kMinBlockSize ? kMinBlockSize : (n + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize;
}

size_t allocation_size(size_t size) {
  if (size <= kSmallSize) return kSmallBuffer;
  if (size < kMinLargeAlloc) return kLargeBuffer;
  return (size + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}

size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

// b takes over its neighbour n (b->prev or b->next) in the segment's list: its memory and its
// place; the caller deletes n.
void absorb(Block* b, Block* n) {
  if (n == b->prev) {
    b->ptr = n->ptr;
    b->prev = n->prev;
    if (b->prev) b->prev->next = b;
  } else {
    b->next = n->next;
    if (b->next) b->next->prev = b;
  }
  b->size += n->size;
}

}  // namespace

std::string format_bytes(int64_t n) {
  char buf[32];
  const double v = double(n);
  if (n < 1024) std::snprintf(buf, sizeof buf, "%" PRId64 " bytes", n);
  else if (n < (int64_t(1) << 20)) std::snprintf(buf, sizeof buf, "%.2f KiB", v / 1024);
  else if (n < (int64_t(1) << 30)) std::snprintf(buf, sizeof buf, "%.2f MiB", v / (1 << 20));
  else std::snprintf(buf, sizeof buf, "%.2f GiB", v / (1 << 30));
  return buf;
}

DeviceCachingAllocator::DeviceCachingAllocator(int device) : device_(device), cfg_(alloc_config()) {
  stats_.max_split_size = cfg_.max_split_size == SIZE_MAX ? -1 : int64_t(cfg_.max_split_size);
}

void DeviceCachingAllocator::update_stats(StatArray& s, BlockPool* pool, int64_t delta) {
  const int type = pool->small ? kStatSmallPool : kStatLargePool;
  if (delta >= 0) {
    s[kStatAll].increase(delta);
    s[type].increase(delta);
  } else {
    s[kStatAll].decrease(-delta);
    s[type].decrease(-delta);
  }
}

Block* DeviceCachingAllocator::new_block() {
  if (spare_blocks_.empty()) return new Block();
  Block* b = spare_blocks_.back();
  spare_blocks_.pop_back();
  return b;
}

void DeviceCachingAllocator::delete_block(Block* b) {
  *b = Block();
  spare_blocks_.push_back(b);
}

void DeviceCachingAllocator::pool_insert(Block* b) {
  b->freed_at = ++tick_;
  b->pool->blocks.insert(b);
  // A free block of an expandable segment is not "non-releasable": empty_cache unmaps its whole
  // pages. Only cudaMalloc'd segments' split blocks count.
  if (b->is_split() && !b->segment) {
    update_stats(stats_.inactive_split, b->pool, 1);
    update_stats(stats_.inactive_split_bytes, b->pool, int64_t(b->size));
  }
}

void DeviceCachingAllocator::pool_erase(Block* b) {
  b->pool->blocks.erase(b);
  if (b->is_split() && !b->segment) {
    update_stats(stats_.inactive_split, b->pool, -1);
    update_stats(stats_.inactive_split_bytes, b->pool, -int64_t(b->size));
  }
}

Block* DeviceCachingAllocator::find_free_block(BlockPool& pool, size_t size, cudaStream_t stream) {
  Block key;
  key.stream = stream;
  key.size = size;
  auto it = pool.blocks.lower_bound(&key);
  if (it == pool.blocks.end() || (*it)->stream != stream) return nullptr;
  const size_t max_split = cfg_.max_split_size;
  // An unsplittable (oversize) block serves only requests of about its size. Expandable
  // segments' blocks are always split (their free pages are given back by empty_cache).
  if (!(*it)->segment) {
    if (size < max_split && (*it)->size >= max_split) return nullptr;
    if (size >= max_split && (*it)->size >= size + kLargeBuffer) return nullptr;
  }
  Block* b = *it;
  pool_erase(b);
  return b;
}

Block* DeviceCachingAllocator::alloc_segment(BlockPool* pool, size_t size, cudaStream_t stream) {
  fraction_limited_ = false;
  const size_t reserved = size_t(stats_.reserved_bytes[kStatAll].current);
  if (fraction_set_ && reserved + size > allowed_max_) {
    fraction_limited_ = true;
    return nullptr;
  }
  void* ptr = nullptr;
  cudaError_t err;
  {
    CudaDeviceScope scope(device_);
    // While a graph is being captured, cudaMalloc counts as unsafe in the capturing thread's
    // mode; the memory is not part of the graph, so relaxed mode is right for it.
    RelaxedCaptureMode relaxed;
    err = cudaMalloc(&ptr, size);
  }
  if (err == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();  // not sticky: clear it so the next call does not see it
    return nullptr;
  }
  WICK_CUDA_CHECK(err, "allocate");
  Block* b = new_block();
  b->device = device_;
  b->stream = stream;
  b->size = size;
  b->ptr = ptr;
  b->pool = pool;
  update_stats(stats_.segment, pool, 1);
  update_stats(stats_.reserved_bytes, pool, int64_t(size));
  if (size >= cfg_.max_split_size) stats_.oversize_segments.increase(1);
  ++stats_.num_device_alloc;
  return b;
}

ExpandableChain& DeviceCachingAllocator::expandable_segment(BlockPool* pool, cudaStream_t stream) {
  for (const auto& seg : expandable_)
    if (seg->pool == pool && seg->stream == stream) return *seg;
  auto seg = std::make_unique<ExpandableChain>(device_, pool, stream,
                                               pool->small ? kSmallBuffer : kLargeBuffer, "allocate");
  Block* b = new_block();
  b->device = device_;
  b->stream = stream;
  b->size = seg->size();
  b->ptr = reinterpret_cast<void*>(seg->base());
  b->pool = pool;
  b->segment = seg.get();
  b->mapped = false;
  seg->unmapped.insert(b);
  expandable_.push_back(std::move(seg));
  return *expandable_.back();
}

bool DeviceCachingAllocator::map_pages(ExpandableChain& seg, size_t first, size_t n) {
  const bool first_pages = seg.mapped_bytes() == 0;
  if (!seg.map(first, n)) return false;
  if (first_pages) update_stats(stats_.segment, seg.pool, 1);
  update_stats(stats_.reserved_bytes, seg.pool, int64_t(n * seg.page()));
  stats_.num_device_alloc += int64_t(n);
  return true;
}

void DeviceCachingAllocator::unmap_pages(ExpandableChain& seg, size_t first, size_t n) {
  for (size_t i = first; i < first + n; ++i) {
    seg.unmap(i, 1);
    update_stats(stats_.reserved_bytes, seg.pool, -int64_t(seg.page()));
    ++stats_.num_device_free;
    if (seg.mapped_bytes() == 0) update_stats(stats_.segment, seg.pool, -1);
  }
}

Block* DeviceCachingAllocator::map_expandable(ExpandableChain& seg, size_t size) {
  fraction_limited_ = false;
  Block key;
  key.stream = seg.stream;
  key.size = size;
  auto it = seg.unmapped.lower_bound(&key);
  if (it == seg.unmapped.end()) return nullptr;  // more than the GPU's memory
  Block* u = *it;
  // Grow the free mapped block just before the range in place, when there is one.
  Block* p = u->prev;
  const bool extend = p && p->mapped && !p->allocated && !p->parked && p->event_count == 0 && p->size < size;
  const size_t need = extend ? size - p->size : size;
  const size_t bytes = round_up(need, seg.page());  // <= u->size: both are whole pages
  if (fraction_set_ && size_t(stats_.reserved_bytes[kStatAll].current) + bytes > allowed_max_) {
    fraction_limited_ = true;
    return nullptr;
  }
  const size_t first = (uintptr_t(u->ptr) - seg.base()) / seg.page();
  if (!map_pages(seg, first, bytes / seg.page())) return nullptr;
  seg.unmapped.erase(it);
  Block* m = u;
  if (bytes < u->size) {  // the front of u becomes mapped; the rest stays unmapped
    m = new_block();
    m->device = device_;
    m->stream = seg.stream;
    m->pool = seg.pool;
    m->segment = &seg;
    m->ptr = u->ptr;
    m->size = bytes;
    m->prev = u->prev;
    m->next = u;
    if (m->prev) m->prev->next = m;
    u->prev = m;
    u->ptr = static_cast<char*>(u->ptr) + bytes;
    u->size -= bytes;
    seg.unmapped.insert(u);
  }
  m->mapped = true;
  if (extend) {
    pool_erase(p);
    p->size += m->size;
    p->next = m->next;
    if (p->next) p->next->prev = p;
    delete_block(m);
    m = p;
  }
  return m;
}

void DeviceCachingAllocator::release_expandable_pages() {
  if (expandable_.empty()) return;
  flush_parked();
  // Free blocks with at least one whole page.
  std::vector<Block*> frees;
  for (BlockPool* pool : {&small_, &large_})
    for (Block* b : pool->blocks) {
      if (!b->segment) continue;
      const ExpandableChain& seg = *b->segment;
      const size_t off = uintptr_t(b->ptr) - seg.base();
      if (round_up(off, seg.page()) + seg.page() <= off + b->size) frees.push_back(b);
    }
  if (!frees.empty()) {
    // The GPU may still be working on memory freed on the host (blocks are reused in stream
    // order without waiting); unmapping it must wait, as cudaFree does.
    CudaDeviceScope scope(device_);
    WICK_CUDA_CHECK(cudaDeviceSynchronize(), "empty_cache");
  }
  for (Block* b : frees) {
    ExpandableChain& seg = *b->segment;
    const size_t off = uintptr_t(b->ptr) - seg.base(), end = off + b->size;
    const size_t a = round_up(off, seg.page()), e = end / seg.page() * seg.page();
    pool_erase(b);
    unmap_pages(seg, a / seg.page(), (e - a) / seg.page());
    // b becomes the unmapped middle; what is left of it before and after stays free and mapped.
    auto piece = [&](size_t from, size_t to) {
      Block* x = new_block();
      x->device = device_;
      x->stream = seg.stream;
      x->pool = seg.pool;
      x->segment = &seg;
      x->ptr = reinterpret_cast<void*>(seg.base() + from);
      x->size = to - from;
      return x;
    };
    if (a > off) {
      Block* h = piece(off, a);
      h->prev = b->prev;
      h->next = b;
      if (h->prev) h->prev->next = h;
      b->prev = h;
      pool_insert(h);
    }
    if (end > e) {
      Block* t = piece(e, end);
      t->next = b->next;
      t->prev = b;
      if (t->next) t->next->prev = t;
      b->next = t;
      pool_insert(t);
    }
    b->ptr = reinterpret_cast<void*>(seg.base() + a);
    b->size = e - a;
    b->mapped = false;
    for (Block* n : {b->prev, b->next}) {
      if (!n || n->mapped) continue;
      seg.unmapped.erase(n);
      absorb(b, n);
      delete_block(n);
    }
    seg.unmapped.insert(b);
  }
  // Segments with nothing mapped any more give their addresses back.
  for (auto it = expandable_.begin(); it != expandable_.end();) {
    ExpandableChain& seg = **it;
    if (seg.mapped_bytes() != 0 || seg.unmapped.size() != 1 || (*seg.unmapped.begin())->size != seg.size()) {
      ++it;
      continue;
    }
    Block* whole = *seg.unmapped.begin();
    seg.unmapped.clear();
    delete_block(whole);
    seg.release();
    it = expandable_.erase(it);
  }
}

void DeviceCachingAllocator::split(Block* b, size_t size) {
  Block* rest = new_block();
  rest->device = device_;
  rest->stream = b->stream;
  rest->pool = b->pool;
  rest->segment = b->segment;
  rest->ptr = static_cast<char*>(b->ptr) + size;
  rest->size = b->size - size;
  rest->prev = b;
  rest->next = b->next;
  if (rest->next) rest->next->prev = rest;
  b->next = rest;
  b->size = size;
  // In an expandable segment the block may have been mapped just before a free block: merge
  // the rest with it so that free space stays in one piece.
  if (Block* n = rest->next;
      rest->segment && n && n->mapped && !n->allocated && !n->parked && n->event_count == 0) {
    pool_erase(n);
    rest->size += n->size;
    rest->next = n->next;
    if (rest->next) rest->next->prev = rest;
    delete_block(n);
  }
  pool_insert(rest);
}

Block* DeviceCachingAllocator::malloc(size_t requested, cudaStream_t stream) {
  std::unique_lock<std::mutex> lock(mu_);
  PrivatePool* priv = nullptr;
  for (const auto& [s, p] : captures_)
    if (s == stream) priv = p;
  // No event queries while capturing: an event recorded in a capturing stream cannot be queried.
  if (!events_.empty() && captures_.empty()) process_events();
  const AllocConfig& cfg = cfg_;
  const size_t size = round_size(requested);

  if (num_parked_ != 0 && !priv && size <= kSmallSize) {
    // Split to this size already, its free remainder where the split would put it.
    if (Block* b = unpark(size, stream)) return hand_out(b, requested);
  }

  if (!cfg.caching) {  // one cudaMalloc per tensor, counted as a large-pool segment of its own
    Block* b = alloc_segment(&large_, size, stream);
    if (!b) throw_oom(lock, requested, size);
    b->pool = nullptr;
    b->allocated = true;
    b->requested = requested;
    update_stats(stats_.allocation, &large_, 1);
    update_stats(stats_.active, &large_, 1);
    update_stats(stats_.allocated_bytes, &large_, int64_t(size));
    update_stats(stats_.active_bytes, &large_, int64_t(size));
    update_stats(stats_.requested_bytes, &large_, int64_t(requested));
    return b;
  }

  BlockPool& pool = priv                 ? (size <= kSmallSize ? priv->small : priv->large)
                    : size <= kSmallSize ? small_
                                         : large_;
  const size_t alloc_size = allocation_size(size);
  Block* b = find_free_block(pool, size, stream);
  if (!b && num_parked_ != 0 && &pool == &small_) {
    // The parked blocks, merged with their free neighbours, may hold room for it: no new
    // segment while they do.
    flush_parked();
    b = find_free_block(pool, size, stream);
  }
  // Graphs' private pools keep cudaMalloc'd segments: a captured graph holds on to the
  // addresses it was recorded with, and those must stay mapped for as long as the graph
  // lives; fixed segments that go back only when the pool is released give that for free.
  if (!b && cfg.expandable_segments && !priv) {
    if (fraction_set_ && cfg.garbage_collection_threshold > 0 && captures_.empty()) garbage_collect();
    b = map_expandable(expandable_segment(&pool, stream), size);
    if (!b && captures_.empty()) {
      // Unmap every free page (and give back cached fixed segments), then try once more.
      release_cached_blocks();
      ++stats_.num_alloc_retries;
      b = find_free_block(pool, size, stream);
      if (!b) b = map_expandable(expandable_segment(&pool, stream), size);
    }
    if (!b) throw_oom(lock, requested, size);
  }
  if (!b && !captures_.empty()) {
    // Capturing: no cudaFree (it would synchronize), so no garbage collection and no retry.
    b = alloc_segment(&pool, alloc_size, stream);
    if (!b) throw_oom(lock, requested, alloc_size);
  }
  if (!b) {
    if (fraction_set_ && cfg.garbage_collection_threshold > 0) garbage_collect();
    b = alloc_segment(&pool, alloc_size, stream);
    if (!b) {
      // Give every cached segment back and try once more before reporting OOM.
      release_cached_blocks();
      ++stats_.num_alloc_retries;
      b = alloc_segment(&pool, alloc_size, stream);
    }
    if (!b) throw_oom(lock, requested, alloc_size);
  }

  const size_t remaining = b->size - size;
  const bool do_split = pool.small ? remaining >= kMinBlockSize
                                   : (size < cfg.max_split_size || b->segment) && remaining > kSmallSize;
  if (do_split) split(b, size);
  return hand_out(b, requested);
}

Block* DeviceCachingAllocator::hand_out(Block* b, size_t requested) {
  b->allocated = true;
  b->requested = requested;
  update_stats(stats_.allocation, b->pool, 1);
  update_stats(stats_.allocated_bytes, b->pool, int64_t(b->size));
  update_stats(stats_.active, b->pool, 1);
  update_stats(stats_.active_bytes, b->pool, int64_t(b->size));
  update_stats(stats_.requested_bytes, b->pool, int64_t(requested));
  if (b->size >= cfg_.max_split_size) stats_.oversize_allocations.increase(1);
  return b;
}

void DeviceCachingAllocator::throw_oom(std::unique_lock<std::mutex>& lock, size_t requested,
                                       size_t alloc_size) {
  flush_parked();
  ++stats_.num_ooms;
  const int64_t allocated = stats_.allocated_bytes[kStatAll].current;
  const int64_t reserved = stats_.reserved_bytes[kStatAll].current;
  const bool by_fraction = fraction_limited_;
  const size_t allowed = allowed_max_;
  lock.unlock();
  size_t free_b = 0, total_b = 0;
  {
    CudaDeviceScope scope(device_);
    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) (void)cudaGetLastError();
  }
  std::string limit;
  if (by_fraction)
    limit = " This process may use at most " + format_bytes(int64_t(allowed)) +
            " of it (set_per_process_memory_fraction).";
  raise<OutOfMemoryError>(
      "allocate", "CUDA out of memory. Tried to allocate ", format_bytes(int64_t(requested)),
      alloc_size != round_size(requested) ? " (in a segment of " + format_bytes(int64_t(alloc_size)) + ")"
                                          : "",
      ". GPU ", device_, " has a total capacity of ", format_bytes(int64_t(total_b)), " of which ",
      format_bytes(int64_t(free_b)), " is free.", limit, " Of the allocated memory ", format_bytes(allocated),
      " is allocated by wick, and ", format_bytes(reserved - allocated),
      " is reserved by wick but unallocated. Free tensors (or call wick::cuda::empty_cache()) and retry; if "
      "reserved but unallocated memory is large, WICK_CUDA_ALLOC_CONF=max_split_size_mb:N may reduce "
      "fragmentation.");
}

void DeviceCachingAllocator::free(Block* b) {
  std::lock_guard<std::mutex> lock(mu_);
  b->allocated = false;
  if (!b->pool) {  // caching off
    {
      CudaDeviceScope scope(device_);
      WICK_CUDA_CHECK(cudaFree(b->ptr), "free");
    }
    const int64_t n = int64_t(b->size);
    update_stats(stats_.allocation, &large_, -1);
    update_stats(stats_.active, &large_, -1);
    update_stats(stats_.segment, &large_, -1);
    update_stats(stats_.allocated_bytes, &large_, -n);
    update_stats(stats_.active_bytes, &large_, -n);
    update_stats(stats_.reserved_bytes, &large_, -n);
    update_stats(stats_.requested_bytes, &large_, -int64_t(b->requested));
    if (b->size >= cfg_.max_split_size) stats_.oversize_segments.decrease(1);
    ++stats_.num_device_free;
    delete_block(b);
    return;
  }
  update_stats(stats_.allocation, b->pool, -1);
  update_stats(stats_.allocated_bytes, b->pool, -int64_t(b->size));
  update_stats(stats_.requested_bytes, b->pool, -int64_t(b->requested));
  if (b->size >= cfg_.max_split_size) stats_.oversize_allocations.decrease(1);
  b->requested = 0;
  if (!b->stream_uses.empty()) {
    // Used on other streams: mark the point each of them has reached, and keep the block out of
    // the pool until all those points have passed (process_events).
    for (const StreamUse& u : b->stream_uses) {
      cudaEvent_t e = acquire_event(u.device);
      CudaDeviceScope scope(u.device);
      WICK_CUDA_CHECK(cudaEventRecord(e, u.stream), "record_stream");
      events_.push_back({e, u.device, b});
      ++b->event_count;
    }
    b->stream_uses.clear();
    return;
  }
  // Not while a graph is being captured: what a capture sees of the pools stays as it was.
  if (b->pool == &small_ && captures_.empty()) [[likely]] {
    park(b);
    return;
  }
  free_block(b);
}

void DeviceCachingAllocator::free_block(Block* b) {
  update_stats(stats_.active, b->pool, -1);
  update_stats(stats_.active_bytes, b->pool, -int64_t(b->size));
  insert_free(b);
}

void DeviceCachingAllocator::insert_free(Block* b) {
  // Merge with free neighbours (not allocated, not parked, no pending events: they are in the
  // pool).
  for (Block* n : {b->prev, b->next}) {
    if (!n || n->allocated || n->parked || n->event_count > 0 || !n->mapped) continue;
    pool_erase(n);
    absorb(b, n);
    delete_block(n);
  }
  pool_insert(b);
  if (b->pool->retired && !b->is_split() && captures_.empty()) release_segment(b);
}

// The active counts go down here, as free_block's do: a parked block is not in use, and its
// statistics must read the same whether or not an allocation in between takes it back. The
// pool's side (the merge and the inactive split counts) waits for the flush.
void DeviceCachingAllocator::park(Block* b) {
  update_stats(stats_.active, b->pool, -1);
  update_stats(stats_.active_bytes, b->pool, -int64_t(b->size));
  b->parked = true;  // before the oldest goes to the pool: it must not merge with b
  b->freed_at = ++tick_;
  if (num_parked_ == kMaxParked) {
    Block* oldest = parked_[0];
    std::copy(parked_ + 1, parked_ + num_parked_, parked_);
    --num_parked_;
    oldest->parked = false;
    const uint64_t t = oldest->freed_at;
    insert_free(oldest);
    oldest->freed_at = t;
  }
  parked_[num_parked_++] = b;
}

Block* DeviceCachingAllocator::unpark(size_t size, cudaStream_t stream) {
  for (size_t i = num_parked_; i-- > 0;) {
    Block* b = parked_[i];
    if (b->size != size || b->stream != stream) continue;
    std::copy(parked_ + i + 1, parked_ + num_parked_, parked_ + i);
    --num_parked_;
    b->parked = false;
    return b;
  }
  return nullptr;
}

void DeviceCachingAllocator::flush_parked() {
  for (size_t i = 0; i < num_parked_; ++i) {
    Block* b = parked_[i];
    b->parked = false;
    // The age garbage collection sorts by is the time of the free, as if it had not waited.
    const uint64_t t = b->freed_at;
    insert_free(b);
    b->freed_at = t;
  }
  num_parked_ = 0;
}

void DeviceCachingAllocator::release_segment(Block* b) {
  pool_erase(b);
  {
    CudaDeviceScope scope(device_);
    WICK_CUDA_CHECK(cudaFree(b->ptr), "empty_cache");
  }
  update_stats(stats_.segment, b->pool, -1);
  update_stats(stats_.reserved_bytes, b->pool, -int64_t(b->size));
  if (b->size >= cfg_.max_split_size) stats_.oversize_segments.decrease(1);
  ++stats_.num_device_free;
  delete_block(b);
}

void DeviceCachingAllocator::release_cached_blocks() {
  flush_parked();
  synchronize_and_free_events();
  for (BlockPool* pool : {&small_, &large_}) {
    std::vector<Block*> whole;
    for (Block* b : pool->blocks)
      if (!b->is_split() && !b->segment) whole.push_back(b);
    for (Block* b : whole) release_segment(b);
  }
  release_expandable_pages();
}

// Simpler than PyTorch's age-averaging: give back whole free segments, least recently freed
// first, until reserved memory is under the threshold share of the allowed memory.
void DeviceCachingAllocator::garbage_collect() {
  const double limit = cfg_.garbage_collection_threshold * double(allowed_max_);
  if (double(stats_.reserved_bytes[kStatAll].current) <= limit) return;
  flush_parked();
  // Expandable segments: all their free pages go back at once (no ages per page).
  if (!expandable_.empty()) release_expandable_pages();
  std::vector<Block*> whole;
  for (BlockPool* pool : {&small_, &large_})
    for (Block* b : pool->blocks)
      if (!b->is_split() && !b->segment) whole.push_back(b);
  std::sort(whole.begin(), whole.end(), [](Block* a, Block* b) { return a->freed_at < b->freed_at; });
  for (Block* b : whole) {
    if (double(stats_.reserved_bytes[kStatAll].current) <= limit) break;
    release_segment(b);
  }
}

void DeviceCachingAllocator::process_events() {
  for (auto it = events_.begin(); it != events_.end();) {
    cudaError_t r = cudaEventQuery(it->event);
    if (r == cudaErrorNotReady) {
      (void)cudaGetLastError();
      ++it;
      continue;
    }
    WICK_CUDA_CHECK(r, "record_stream");
    Block* b = it->block;
    release_event(it->device, it->event);
    it = events_.erase(it);
    if (--b->event_count == 0) free_block(b);
  }
}

void DeviceCachingAllocator::synchronize_and_free_events() {
  for (const PendingEvent& p : events_) {
    WICK_CUDA_CHECK(cudaEventSynchronize(p.event), "empty_cache");
    release_event(p.device, p.event);
    if (--p.block->event_count == 0) free_block(p.block);
  }
  events_.clear();
}

void DeviceCachingAllocator::record_stream(Block* b, int device, cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!b->pool) return;  // caching off: cudaFree waits for the device anyway
  if (device == b->device && stream == b->stream) return;
  StreamUse u{device, stream};
  if (std::find(b->stream_uses.begin(), b->stream_uses.end(), u) == b->stream_uses.end())
    b->stream_uses.push_back(u);
}

void DeviceCachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mu_);
  WICK_CHECK(captures_.empty(), DeviceError, "empty_cache",
             "empty_cache cannot be called while a CUDA graph is being captured on cuda:", device_);
  release_cached_blocks();
  release_retired();
}

void DeviceCachingAllocator::release_retired() {
  for (auto& [id, p] : private_pools_) {
    if (p->use_count > 0) continue;
    for (BlockPool* pool : {&p->small, &p->large}) {
      std::vector<Block*> whole;
      for (Block* b : pool->blocks)
        if (!b->is_split()) whole.push_back(b);
      for (Block* b : whole) release_segment(b);
    }
  }
}

void DeviceCachingAllocator::begin_capture(std::pair<uint64_t, uint64_t> id, cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(mu_);
  flush_parked();
  auto& p = private_pools_[id];
  if (!p) p = std::make_unique<PrivatePool>();
  ++p->use_count;
  p->small.retired = p->large.retired = false;
  captures_.push_back({stream, p.get()});
}

void DeviceCachingAllocator::end_capture(cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(mu_);
  flush_parked();
  for (auto it = captures_.begin(); it != captures_.end(); ++it)
    if (it->first == stream) {
      captures_.erase(it);
      return;
    }
}

void DeviceCachingAllocator::release_pool(std::pair<uint64_t, uint64_t> id) {
  std::lock_guard<std::mutex> lock(mu_);
  flush_parked();
  auto it = private_pools_.find(id);
  if (it == private_pools_.end() || it->second->use_count == 0) return;
  if (--it->second->use_count > 0) return;
  it->second->small.retired = it->second->large.retired = true;
  if (captures_.empty()) release_retired();
}

bool DeviceCachingAllocator::capturing() {
  std::lock_guard<std::mutex> lock(mu_);
  return !captures_.empty();
}

DeviceStats DeviceCachingAllocator::stats() {
  std::lock_guard<std::mutex> lock(mu_);
  flush_parked();  // the inactive split counts as if no block had been parked
  return stats_;
}

void DeviceCachingAllocator::reset_peak_stats() {
  std::lock_guard<std::mutex> lock(mu_);
  flush_parked();
  auto reset = [](Stat& s) { s.peak = s.current; };
  for (StatArray* a :
       {&stats_.allocation, &stats_.segment, &stats_.active, &stats_.inactive_split, &stats_.allocated_bytes,
        &stats_.reserved_bytes, &stats_.active_bytes, &stats_.inactive_split_bytes, &stats_.requested_bytes})
    for (Stat& s : *a) reset(s);
  reset(stats_.oversize_allocations);
  reset(stats_.oversize_segments);
}

void DeviceCachingAllocator::reset_accumulated_stats() {
  std::lock_guard<std::mutex> lock(mu_);
  flush_parked();
  auto reset = [](Stat& s) { s.allocated = s.freed = 0; };
  for (StatArray* a :
       {&stats_.allocation, &stats_.segment, &stats_.active, &stats_.inactive_split, &stats_.allocated_bytes,
        &stats_.reserved_bytes, &stats_.active_bytes, &stats_.inactive_split_bytes, &stats_.requested_bytes})
    for (Stat& s : *a) reset(s);
  reset(stats_.oversize_allocations);
  reset(stats_.oversize_segments);
  stats_.num_alloc_retries = stats_.num_ooms = stats_.num_sync_all_streams = 0;
  stats_.num_device_alloc = stats_.num_device_free = 0;
}

void DeviceCachingAllocator::set_memory_fraction(double fraction) {
  WICK_CHECK(fraction >= 0 && fraction <= 1, ValueError, "set_per_process_memory_fraction",
             "invalid fraction ", fraction, ": it must be between 0 and 1");
  size_t free_b = 0, total_b = 0;
  {
    CudaDeviceScope scope(device_);
    WICK_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b), "set_per_process_memory_fraction");
  }
  std::lock_guard<std::mutex> lock(mu_);
  flush_parked();
  fraction_set_ = true;
  allowed_max_ = size_t(fraction * double(total_b));
}

std::vector<std::pair<size_t, std::vector<std::pair<size_t, bool>>>> DeviceCachingAllocator::segments() {
  std::lock_guard<std::mutex> lock(mu_);
  flush_parked();
  // Segment heads are free blocks without prev in a pool, or reachable from allocated blocks;
  // walk the pools' heads and the chains of their neighbours.
  std::set<Block*> heads;
  std::vector<BlockPool*> pools{&small_, &large_};
  for (auto& [id, p] : private_pools_) {
    pools.push_back(&p->small);
    pools.push_back(&p->large);
  }
  auto add_head = [&](Block* b) {
    while (b->prev) b = b->prev;
    heads.insert(b);
  };
  for (BlockPool* pool : pools)
    for (Block* b : pool->blocks) add_head(b);
  // An expandable segment is one segment of its mapped blocks (the unmapped ranges left out).
  for (const auto& seg : expandable_)
    for (Block* b : seg->unmapped) add_head(b);
  std::vector<std::pair<size_t, std::vector<std::pair<size_t, bool>>>> out;
  for (Block* h : heads) {
    std::vector<std::pair<size_t, bool>> blocks;
    size_t total = 0;
    for (Block* b = h; b; b = b->next) {
      if (!b->mapped) continue;
      blocks.push_back({b->size, b->allocated});
      total += b->size;
    }
    if (!blocks.empty()) out.push_back({total, std::move(blocks)});
  }
  return out;
}

namespace {

std::mutex g_create_mu;
std::atomic<DeviceCachingAllocator*> g_allocators[kMaxCudaDevices];

}  // namespace

DeviceCachingAllocator& device_caching_allocator(int d) {
  DeviceCachingAllocator* a = g_allocators[d].load(std::memory_order_acquire);
  if (a) [[likely]]
    return *a;
  std::lock_guard<std::mutex> lock(g_create_mu);
  a = g_allocators[d].load(std::memory_order_relaxed);
  if (!a) {
    a = new DeviceCachingAllocator(d);  // never deleted: tensors freed after main still return here
    g_allocators[d].store(a, std::memory_order_release);
  }
  return *a;
}

DeviceCachingAllocator* existing_caching_allocator(int d) {
  return g_allocators[d].load(std::memory_order_acquire);
}

void block_deleter(void* ctx) {
  Block* b = static_cast<Block*>(ctx);
  try {
    device_caching_allocator(b->device).free(b);
  } catch (const std::exception& e) {
    // A deleter cannot throw; the error (a failed event record) is reported and the block leaks.
    std::fprintf(stderr, "wick: error while freeing CUDA memory: %s\n", e.what());
  }
}

namespace {

class CudaAllocator final : public Allocator {
 public:
  void set_device(int d) { device_ = d; }
  DataPtr allocate(size_t nbytes) override {
    if (nbytes == 0) return DataPtr(nullptr, nullptr, nullptr, Device(kCUDA, device_));
    Block* b = device_caching_allocator(device_).malloc(nbytes, current_cuda_stream(device_));
    return DataPtr(b->ptr, b, &block_deleter, Device(kCUDA, device_));
  }

 private:
  int device_ = 0;
};

}  // namespace

}  // namespace wick::detail::gpu

namespace wick::detail {

Allocator* cuda_allocator(int device) {
  static gpu::CudaAllocator* allocators = [] {
    auto* a = new gpu::CudaAllocator[gpu::kMaxCudaDevices];
    for (int i = 0; i < gpu::kMaxCudaDevices; ++i) a[i].set_device(i);
    return a;
  }();
  const int d = device < 0 ? resolve_cuda_device(Device(kCUDA, -1), "allocate").index() : device;
  gpu::check_cuda_device(d, "allocate");
  return &allocators[d];
}

}  // namespace wick::detail
