// Host memory and storage creation. Small blocks come straight from the C allocator; large
// ones (kCacheMin and up) go through a cache of freed blocks, so that a large result made on
// every call (`auto c = a + b` over 16M floats) reuses memory already mapped instead of paying
// the kernel's page faults on fresh pages each time, which cost more than the op itself: the
// C allocator hands blocks this large out as fresh mappings and unmaps them when freed.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <sys/sysinfo.h>

#include "core/host_memory.h"
#include "core/small_blocks.h"
#include "core/backend_settings.h"
#include "wick/backends.h"
#include "wick/cuda.h"
#include "wick/detail/storage.h"
#include "wick/error.h"

#if defined(__SANITIZE_ADDRESS__)
#define WICK_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WICK_ASAN 1
#endif
#endif
#ifdef WICK_ASAN
#include <sanitizer/asan_interface.h>
#define WICK_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define WICK_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define WICK_POISON(p, n) ((void)(p), (void)(n))
#define WICK_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace wick::detail {

namespace {

// The number in a cgroup's limit file ("max" or a missing file: none).
std::optional<uint64_t> cgroup_limit(const std::string& path) {
  std::ifstream in(path);
  std::string v;
  if (!(in >> v) || v.empty() || v == "max") return std::nullopt;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
  if (*end != 0) return std::nullopt;
  return uint64_t(n);
}

// The memory limit of this process's cgroup (v2: memory.max of its own group, or of the root
// of the namespace; v1: the memory controller's limit_in_bytes), if any.
std::optional<uint64_t> cgroup_memory_limit() {
  std::ifstream self("/proc/self/cgroup");
  std::string line;
  while (std::getline(self, line)) {
    if (line.rfind("0::", 0) == 0) {
      if (auto v = cgroup_limit("/sys/fs/cgroup" + line.substr(3) + "/memory.max")) return v;
    }
  }
  if (auto v = cgroup_limit("/sys/fs/cgroup/memory.max")) return v;
  return cgroup_limit("/sys/fs/cgroup/memory/memory.limit_in_bytes");
}

}  // namespace

size_t host_memory_ceiling() {
  static const size_t ceiling = [] {
    struct sysinfo si {};
    if (sysinfo(&si) != 0 || si.totalram == 0) return SIZE_MAX;
    const unsigned __int128 ram = (unsigned __int128)si.totalram * si.mem_unit;
    const unsigned __int128 swap = (unsigned __int128)si.totalswap * si.mem_unit;
    unsigned __int128 total = ram + swap;
    // A container's limit below the machine's memory is the real ceiling (its swap counted
    // generously: the machine's).
    if (auto limit = cgroup_memory_limit(); limit && *limit < ram) total = *limit + swap;
    return total > SIZE_MAX ? SIZE_MAX : size_t(total);
  }();
  return ceiling;
}

namespace {

// Blocks from 1 MiB are cached. glibc maps a block above its mmap threshold (128 KiB at first,
// raised as mapped blocks are freed, to 32 MiB at most) as fresh pages and unmaps it when
// freed. Measured on a 2-core x86 machine: `auto z = x + y` in a loop takes a page fault on
// every page of its output from 16M floats (64 MiB: 16385 faults per call) and none at 4M or
// less once the threshold has risen; but the first blocks of each size, and any size while
// other large blocks are alive, may be fresh mappings too. From 1 MiB the cache's lock (tens
// of ns) is nothing next to the op, and below it the C allocator's own free lists serve.
constexpr size_t kCacheMin = size_t(1) << 20;
// Requests beyond this are never rounded nor cached (no overflow on absurd sizes, which must
// fail as OutOfMemoryError).
constexpr size_t kCacheMax = size_t(1) << 44;
// Cached bytes at most, unless WICK_CPU_CACHE_MB says otherwise. Under AddressSanitizer the
// cache is off by default, so that every free reaches ASan (a use after free is reported as
// such); cached blocks are poisoned when it is turned on there.
#ifdef WICK_ASAN
constexpr size_t kDefaultLimit = 0;
#else
constexpr size_t kDefaultLimit = size_t(1) << 30;
#endif

// The size class of a large request: 8 classes per power of two, so at most 12.5% is unused.
size_t size_class(size_t n) {
  const size_t step = size_t(1) << (std::bit_width(n) - 1 - 3);
  return (n + step - 1) & ~(step - 1);
}


void* host_alloc(size_t nbytes) {
  size_t rounded = (nbytes + 63) & ~size_t(63);
  return rounded < nbytes ? nullptr : std::aligned_alloc(64, rounded);
}

// One large block; prev/next link the cached blocks from the least recently freed.
struct Block {
  void* ptr;
  size_t size;
  Block* prev = nullptr;
  Block* next = nullptr;
};

class HostCache {
 public:
  static HostCache& get() {
    static HostCache* c = new HostCache;  // never destroyed: tensors may outlive static destructors
    return *c;
  }

  size_t limit() {
    std::lock_guard<std::mutex> g(mu_);
    return limit_;
  }
  size_t cached_bytes() {
    std::lock_guard<std::mutex> g(mu_);
    return cached_;
  }

  // A cached block of this size class, or null.
  Block* take(size_t size) {
    std::lock_guard<std::mutex> g(mu_);
    auto it = free_.find(size);
    if (it == free_.end() || it->second.empty()) return nullptr;
    Block* b = it->second.back();  // the most recently freed: likeliest still in cache and TLB
    it->second.pop_back();
    unlink(b);
    cached_ -= b->size;
    WICK_UNPOISON(b->ptr, b->size);
    return b;
  }

  // Keeps a freed block, evicting the least recently freed ones beyond the limit; false when
  // the block itself is not kept (the caller frees it).
  bool put(Block* b) {
    std::vector<Block*> evicted;
    bool kept = false;
    {
      std::lock_guard<std::mutex> g(mu_);
      if (b->size <= limit_) {
        while (cached_ + b->size > limit_) evicted.push_back(evict_oldest());
        WICK_POISON(b->ptr, b->size);
        free_[b->size].push_back(b);
        b->prev = newest_;
        b->next = nullptr;
        (newest_ ? newest_->next : oldest_) = b;
        newest_ = b;
        cached_ += b->size;
        kept = true;
      }
    }
    for (Block* e : evicted) release(e);
    return kept;
  }

  void set_limit(size_t bytes) {
    std::lock_guard<std::mutex> g(mu_);
    limit_ = bytes;
    shrink_to(limit_);
  }
  void empty() {
    std::lock_guard<std::mutex> g(mu_);
    shrink_to(0);
  }

  static void release(Block* b) {
    WICK_UNPOISON(b->ptr, b->size);
    std::free(b->ptr);
    delete b;
  }

 private:
  HostCache() : limit_(kDefaultLimit) {
    if (const char* v = std::getenv("WICK_CPU_CACHE_MB")) {
      char* end = nullptr;
      const unsigned long long mb = std::strtoull(v, &end, 10);
      if (end != v && *end == '\0') limit_ = size_t(mb) << 20;
    }
  }

  // Frees the least recently freed blocks until at most `bytes` are cached (mu_ held; the
  // frees of large blocks are cheap next to what the lock guards against).
  void shrink_to(size_t bytes) {
    while (cached_ > bytes) release(evict_oldest());
  }

  void unlink(Block* b) {
    (b->prev ? b->prev->next : oldest_) = b->next;
    (b->next ? b->next->prev : newest_) = b->prev;
    b->prev = b->next = nullptr;
  }

  // Removes the least recently freed block from the cache (mu_ held); the caller frees it.
  Block* evict_oldest() {
    Block* b = oldest_;
    auto& v = free_[b->size];
    for (size_t i = 0; i < v.size(); ++i)
      if (v[i] == b) {
        v.erase(v.begin() + std::ptrdiff_t(i));
        break;
      }
    unlink(b);
    cached_ -= b->size;
    return b;
  }

  std::mutex mu_;
  std::unordered_map<size_t, std::vector<Block*>> free_;  // by size class
  Block* oldest_ = nullptr;
  Block* newest_ = nullptr;
  size_t cached_ = 0;
  size_t limit_;
};

void free_large(void* ctx) {
  Block* b = static_cast<Block*>(ctx);
  if (!HostCache::get().put(b)) HostCache::release(b);
}

// 64-byte aligned host memory: whole cache lines, and room for any vector width.
class CpuAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes) override {
    if (nbytes == 0) return DataPtr(nullptr, nullptr, nullptr, Device(kCPU));
    if (nbytes >= kCacheMin) check_host_bytes(nbytes, "cpu");
    if (nbytes >= kCacheMin && nbytes <= kCacheMax) {
      HostCache& cache = HostCache::get();
      if (cache.limit() > 0) {
        const size_t size = size_class(nbytes);
        Block* b = cache.take(size);
        if (!b) {
          void* p = host_alloc(size);
          if (!p) {  // memory held by the cache may be what is missing
            cache.empty();
            p = host_alloc(size);
          }
          WICK_CHECK(p != nullptr, OutOfMemoryError, "cpu", "failed to allocate ", nbytes,
                     " bytes of host memory");
          b = new Block{p, size};
        }
        return DataPtr(b->ptr, b, &free_large, Device(kCPU));
      }
    }
    // Smaller blocks: malloc's fast path (its per-thread caches), the address rounded up to
    // 64 bytes inside the block; aligned_alloc would take glibc's slower memalign path, several
    // times malloc's cost, for every small tensor.
    constexpr size_t kSlack = 64 - alignof(std::max_align_t);
    void* raw = nbytes <= SIZE_MAX - kSlack ? std::malloc(nbytes + kSlack) : nullptr;
    WICK_CHECK(raw != nullptr, OutOfMemoryError, "cpu", "failed to allocate ", nbytes,
               " bytes of host memory");
    void* p = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(raw) + 63) & ~uintptr_t(63));
    return DataPtr(p, raw, &std::free, Device(kCPU));
  }
};

// A small CPU storage is one block: the StorageImpl, then its bytes (from the first 64-byte
// boundary after it). One allocation and one free instead of two for each small tensor, and
// no deleter to call. Its DataPtr owns nothing; the block goes when the storage does.
constexpr size_t kInlineMax = 1024;

class InlineStorage final : public StorageImpl {
 public:
  static size_t block_size(size_t nbytes) { return sizeof(InlineStorage) + 63 + nbytes; }
  // nbytes in (0, kInlineMax]; OutOfMemoryError when the block cannot be had.
  static Storage make(size_t nbytes, Allocator* alloc) {
    void* block = small_block_alloc(block_size(nbytes));
    WICK_CHECK(block != nullptr, OutOfMemoryError, "cpu", "failed to allocate ", nbytes,
               " bytes of host memory");
    const uintptr_t data = (reinterpret_cast<uintptr_t>(block) + sizeof(InlineStorage) + 63) & ~uintptr_t(63);
    return Storage(::new (block) InlineStorage(
        DataPtr(reinterpret_cast<void*>(data), nullptr, nullptr, Device(kCPU)), nbytes, alloc));
  }
  // The object is at the start of its block (make puts it there); its size is read before
  // the object is destroyed.
  static void operator delete(InlineStorage* p, std::destroying_delete_t) {
    const size_t size = block_size(p->nbytes());
    p->~InlineStorage();
    small_block_free(p, size);
  }

 private:
  InlineStorage(DataPtr data, size_t nbytes, Allocator* alloc)
      : StorageImpl(std::move(data), nbytes, alloc) {}
};

// Per-thread lists of freed small blocks, by size class (steps of kStep bytes).
constexpr size_t kStep = 64;
constexpr size_t kClasses = (kSmallBlockMax + kStep - 1) / kStep;
#ifdef WICK_ASAN
constexpr unsigned kKeep = 0;
#else
constexpr unsigned kKeep = 16;  // blocks kept per class and thread
#endif

struct FreeBlock {
  FreeBlock* next;
};
// Constant-initialized and trivially destructible: reading it needs no guard. A thread's lists
// keep blocks once they are registered for release at its exit (kLive), and no longer once
// released (kDead): later frees go to std::free.
enum : unsigned char { kUnregistered = 0, kLive = 1, kDead = 2 };
struct BlockLists {
  FreeBlock* head[kClasses];
  unsigned char count[kClasses];
  unsigned char state;
};
thread_local BlockLists tl_blocks{};

// Releases the thread's lists when the thread ends; constructed on the thread's first kept block.
struct BlockListsReaper {
  BlockListsReaper() { tl_blocks.state = kLive; }
  ~BlockListsReaper() {
    BlockLists& l = tl_blocks;
    for (size_t c = 0; c < kClasses; ++c) {
      while (FreeBlock* b = l.head[c]) {
        l.head[c] = b->next;
        std::free(b);
      }
      l.count[c] = 0;
    }
    l.state = kDead;
  }
};
thread_local BlockListsReaper tl_reaper;

void push_block(BlockLists& l, size_t c, void* p) {
  auto* b = static_cast<FreeBlock*>(p);
  b->next = l.head[c];
  l.head[c] = b;
  ++l.count[c];
}

// small_block_free's rare cases: a full list, the thread's first kept block (its lists are
// registered for release at its exit first), a thread whose lists are gone.
[[gnu::noinline]] void free_block_slow(void* p, size_t c) {
  if (tl_blocks.state == kUnregistered && kKeep > 0) {
    BlockListsReaper* r = &tl_reaper;  // constructed here, once per thread
    (void)r;
  }
  BlockLists& l = tl_blocks;
  if (l.state == kLive && l.count[c] < kKeep) return push_block(l, c, p);
  std::free(p);
}

size_t block_class(size_t nbytes) { return (nbytes - 1) / kStep; }  // nbytes in [1, kSmallBlockMax]

}  // namespace

void* small_block_alloc(size_t nbytes) {
  if (nbytes == 0 || nbytes > kSmallBlockMax) return std::malloc(nbytes);
  const size_t c = block_class(nbytes);
  BlockLists& l = tl_blocks;
  if (FreeBlock* b = l.head[c]) {
    l.head[c] = b->next;
    --l.count[c];
    return b;
  }
  // The class's full size: any block of the class fits any request of it.
  return std::malloc((c + 1) * kStep);
}

void small_block_free(void* p, size_t nbytes) {
  if (!p) return;
  if (nbytes == 0 || nbytes > kSmallBlockMax) return std::free(p);
  const size_t c = block_class(nbytes);
  BlockLists& l = tl_blocks;
  if (l.state != kLive || l.count[c] >= kKeep) [[unlikely]]
    return free_block_slow(p, c);
  push_block(l, c, p);
}

Allocator* cpu_allocator() {
  static CpuAllocator a;
  return &a;
}

void set_cpu_cache_limit(size_t bytes) { HostCache::get().set_limit(bytes); }
size_t cpu_cache_limit() { return HostCache::get().limit(); }
size_t cpu_cached_bytes() { return HostCache::get().cached_bytes(); }

Storage make_storage(size_t nbytes, Device device, bool pinned) {
  Allocator* alloc;
  if (device.is_cpu()) {
    if (!pinned && nbytes > 0 && nbytes <= kInlineMax) return InlineStorage::make(nbytes, cpu_allocator());
    alloc = pinned ? pinned_allocator() : cpu_allocator();
  } else {
    WICK_CHECK(!pinned, ValueError, "empty", "only CPU tensors can be pinned (got ", device, ")");
    alloc = cuda_allocator(device.index());
  }
  return Storage(new Pooled<StorageImpl>(alloc->allocate(nbytes), nbytes, alloc));
}

}  // namespace wick::detail

namespace wick {

void empty_cpu_cache() { detail::HostCache::get().empty(); }

}  // namespace wick
