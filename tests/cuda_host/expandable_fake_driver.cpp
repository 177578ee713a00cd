// The caching allocator's expandable segments checked on the host, without a GPU: the CUDA
// runtime calls the allocator makes are defined in this program, which exports them, so they
// take the place of libcudart's for libwick; the driver's virtual memory calls it gets from
// cudaGetDriverEntryPointByVersion are fakes over mmap and mprotect, so that block memory can be
// written and read, an unmapped page faults, and a remapped one comes back zeroed.
// Checked: the growth in place and the unmapping of docs/memory.md's rules (exact addresses
// and sizes), the fragmentation pattern of tests/cuda/cuda_expandable_test.cpp (out of memory
// with fixed segments, not with expandable ones), and a long random sequence of allocations and
// frees on three streams with empty_cache now and then: live blocks never overlap and keep
// their contents, and the statistics match what the fake driver holds.
// Its own program (ctest cuda_expandable_fake_driver): it replaces runtime functions, which
// the test binary must not do.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <vector>

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <sys/mman.h>

#include "cuda/caching_allocator.h"
#include "wick/error.h"

static const size_t kTotal = size_t(4) << 30;  // fake GPU: 4 GiB
static size_t g_phys = 0;                      // bytes of physical handles alive
static size_t g_malloc = 0;                    // bytes cudaMalloc'd
static std::map<void*, size_t> g_mallocs;
static std::map<unsigned long long, size_t> g_handles;
static std::map<uintptr_t, size_t> g_mapped;  // page start -> size
static std::map<uintptr_t, size_t> g_reserved;
static unsigned long long g_next_handle = 1;
static int g_syncs = 0;

#define FAIL(...)                      \
  do {                                 \
    std::fprintf(stderr, __VA_ARGS__); \
    std::fprintf(stderr, "\n");        \
    std::abort();                      \
  } while (0)

extern "C" {
cudaError_t cudaGetDeviceCount(int* n) {
  *n = 1;
  return cudaSuccess;
}
cudaError_t cudaGetDevice(int* d) {
  *d = 0;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int) { return cudaSuccess; }
cudaError_t cudaGetLastError() { return cudaSuccess; }
cudaError_t cudaMemGetInfo(size_t* f, size_t* t) {
  *t = kTotal;
  *f = kTotal - g_phys - g_malloc;
  return cudaSuccess;
}
cudaError_t cudaMalloc(void** p, size_t n) {
  if (getenv("EXPANDABLE_RUN")) FAIL("cudaMalloc called in expandable mode");
  if (g_phys + g_malloc + n > kTotal) return cudaErrorMemoryAllocation;
  *p = std::malloc(n);
  g_malloc += n;
  g_mallocs[*p] = n;
  return cudaSuccess;
}
cudaError_t cudaFree(void* p) {
  g_malloc -= g_mallocs.at(p);
  g_mallocs.erase(p);
  std::free(p);
  return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize() {
  ++g_syncs;
  return cudaSuccess;
}
cudaError_t cudaDeviceCanAccessPeer(int* c, int, int) {
  *c = 0;
  return cudaSuccess;
}
cudaError_t cudaThreadExchangeStreamCaptureMode(cudaStreamCaptureMode*) { return cudaSuccess; }
}

static CUresult f_err_name(CUresult, const char** s) {
  *s = "FAKE";
  return CUDA_SUCCESS;
}
static CUresult f_device_get(CUdevice* d, int o) {
  *d = o;
  return CUDA_SUCCESS;
}
static CUresult f_attr(int* v, CUdevice_attribute, CUdevice) {
  *v = 1;
  return CUDA_SUCCESS;
}
static CUresult f_gran(size_t* g, const CUmemAllocationProp*, CUmemAllocationGranularity_flags) {
  *g = 2 << 20;
  return CUDA_SUCCESS;
}
static CUresult f_reserve(CUdeviceptr* p, size_t size, size_t, CUdeviceptr, unsigned long long) {
  void* a = mmap(nullptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (a == MAP_FAILED) FAIL("mmap reserve failed");
  *p = CUdeviceptr(a);
  g_reserved[uintptr_t(a)] = size;
  return CUDA_SUCCESS;
}
static CUresult f_free(CUdeviceptr p, size_t size) {
  auto it = g_reserved.find(uintptr_t(p));
  if (it == g_reserved.end() || it->second != size) FAIL("address free of unknown range");
  for (auto& [a, s] : g_mapped)
    if (a >= uintptr_t(p) && a < uintptr_t(p) + size) FAIL("address free with pages mapped");
  munmap(reinterpret_cast<void*>(p), size);
  g_reserved.erase(it);
  return CUDA_SUCCESS;
}
static CUresult f_create(CUmemGenericAllocationHandle* h, size_t size, const CUmemAllocationProp*,
                         unsigned long long) {
  if (g_phys + g_malloc + size > kTotal) return CUDA_ERROR_OUT_OF_MEMORY;
  *h = g_next_handle++;
  g_handles[*h] = size;
  g_phys += size;
  return CUDA_SUCCESS;
}
static CUresult f_release(CUmemGenericAllocationHandle h) {
  auto it = g_handles.find(h);
  if (it == g_handles.end()) FAIL("release of unknown handle %llu", h);
  g_phys -= it->second;
  g_handles.erase(it);
  return CUDA_SUCCESS;
}
static CUresult f_map(CUdeviceptr p, size_t size, size_t, CUmemGenericAllocationHandle h,
                      unsigned long long) {
  if (!g_handles.count(h) || g_handles[h] != size) FAIL("map with a bad handle");
  if (g_mapped.count(uintptr_t(p))) FAIL("map over a mapped page");
  bool inside = false;
  for (auto& [a, s] : g_reserved)
    if (uintptr_t(p) >= a && uintptr_t(p) + size <= a + s) inside = true;
  if (!inside) FAIL("map outside reserved ranges");
  if (mprotect(reinterpret_cast<void*>(p), size, PROT_READ | PROT_WRITE) != 0) FAIL("mprotect");
  g_mapped[uintptr_t(p)] = size;
  return CUDA_SUCCESS;
}
static CUresult f_unmap(CUdeviceptr p, size_t size) {
  auto it = g_mapped.find(uintptr_t(p));
  if (it == g_mapped.end() || it->second != size) FAIL("unmap of an unmapped page");
  // Drop the contents, back to no access.
  mmap(reinterpret_cast<void*>(p), size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE,
       -1, 0);
  g_mapped.erase(it);
  return CUDA_SUCCESS;
}
static CUresult f_access(CUdeviceptr p, size_t size, const CUmemAccessDesc*, size_t count) {
  if (count != 1) FAIL("access count");
  for (size_t off = 0; off < size; off += 2 << 20) {
    bool found = false;
    for (auto& [a, s] : g_mapped)
      if (uintptr_t(p) + off >= a && uintptr_t(p) + off < a + s) found = true;
    if (!found) FAIL("set access on unmapped memory");
  }
  return CUDA_SUCCESS;
}

extern "C" cudaError_t cudaGetDriverEntryPointByVersion(const char* name, void** fn, unsigned int,
                                                        unsigned long long,
                                                        cudaDriverEntryPointQueryResult* q) {
  std::map<std::string, void*> t = {{"cuGetErrorName", (void*)&f_err_name},
                                    {"cuDeviceGet", (void*)&f_device_get},
                                    {"cuDeviceGetAttribute", (void*)&f_attr},
                                    {"cuMemGetAllocationGranularity", (void*)&f_gran},
                                    {"cuMemAddressReserve", (void*)&f_reserve},
                                    {"cuMemAddressFree", (void*)&f_free},
                                    {"cuMemCreate", (void*)&f_create},
                                    {"cuMemRelease", (void*)&f_release},
                                    {"cuMemMap", (void*)&f_map},
                                    {"cuMemUnmap", (void*)&f_unmap},
                                    {"cuMemSetAccess", (void*)&f_access}};
  auto it = t.find(name);
  if (it == t.end()) {
    *q = cudaDriverEntryPointSymbolNotFound;
    return cudaSuccess;
  }
  *fn = it->second;
  *q = cudaDriverEntryPointSuccess;
  return cudaSuccess;
}

using namespace wick::detail::gpu;

static size_t mapped_total() {
  size_t n = 0;
  for (auto& [a, s] : g_mapped) n += s;
  return n;
}

struct Live {
  Block* b;
  size_t n;
  unsigned char tag;
};

// The tag at the block's first and last bytes and every 64 KiB between (writing every byte
// would make the run slow for nothing more).
constexpr size_t kStride = 64 << 10;
static void tag_block(void* ptr, size_t n, unsigned char tag) {
  unsigned char* p = static_cast<unsigned char*>(ptr);
  for (size_t i = 0; i < n; i += kStride) p[i] = tag;
  p[n - 1] = tag;
}

static void check_live(const std::vector<Live>& live) {
  std::map<uintptr_t, size_t> ranges;
  for (const Live& l : live) {
    const unsigned char* p = static_cast<const unsigned char*>(l.b->ptr);
    for (size_t i = 0; i < l.n; i += kStride)
      if (p[i] != l.tag) FAIL("live block lost its contents at %zu of %zu", i, l.n);
    if (p[l.n - 1] != l.tag) FAIL("live block lost its last byte");
    ranges[uintptr_t(p)] = l.b->size;
  }
  uintptr_t end = 0;
  for (auto& [a, s] : ranges) {
    if (a < end) FAIL("live blocks overlap");
    end = a + s;
  }
}

static void check_stats(DeviceCachingAllocator& a, const std::vector<Live>& live) {
  DeviceStats s = a.stats();
  int64_t alloc = 0;
  for (const Live& l : live) alloc += int64_t(l.b->size);
  if (s.allocated_bytes[kStatAll].current != alloc)
    FAIL("allocated_bytes %lld != %lld", (long long)s.allocated_bytes[kStatAll].current, (long long)alloc);
  if (s.reserved_bytes[kStatAll].current != int64_t(mapped_total()))
    FAIL("reserved %lld != mapped %zu", (long long)s.reserved_bytes[kStatAll].current, mapped_total());
  if (s.reserved_bytes[kStatAll].current !=
      s.reserved_bytes[kStatSmallPool].current + s.reserved_bytes[kStatLargePool].current)
    FAIL("pool split of reserved");
  if (s.allocation[kStatAll].current != int64_t(live.size())) FAIL("allocation count");
  if (s.num_device_alloc - s.num_device_free != int64_t(g_handles.size()))
    FAIL("device alloc/free vs handles");
  if (s.inactive_split[kStatAll].current != 0) FAIL("inactive split for expandable");
}

// Fixed segments: the segments' block lists agree with the statistics (after stats(), which
// puts parked blocks back in the pool): every segment's free blocks merged, the inactive split
// counts those of split segments, the reserved bytes what cudaMalloc handed out.
static void check_segments(DeviceCachingAllocator& a, const std::vector<Live>& live) {
  DeviceStats s = a.stats();
  int64_t seg_bytes = 0, allocated = 0, splits = 0, split_bytes = 0, nseg = 0;
  for (const auto& [total, blocks] : a.segments()) {
    ++nseg;
    seg_bytes += int64_t(total);
    for (size_t i = 0; i < blocks.size(); ++i) {
      if (blocks[i].second) ++allocated;
      if (!blocks[i].second && i > 0 && !blocks[i - 1].second) FAIL("two free neighbours not merged");
      if (!blocks[i].second && blocks.size() > 1) {
        ++splits;
        split_bytes += int64_t(blocks[i].first);
      }
    }
  }
  // segments() lists the segments with a free block: a wholly allocated one is left out.
  if (seg_bytes > int64_t(g_malloc)) FAIL("segments %lld > cudaMalloc'd %zu", (long long)seg_bytes, g_malloc);
  if (s.reserved_bytes[kStatAll].current != int64_t(g_malloc)) FAIL("reserved != cudaMalloc'd");
  if (s.inactive_split[kStatAll].current != splits)
    FAIL("inactive_split %lld != %lld", (long long)s.inactive_split[kStatAll].current, (long long)splits);
  if (s.inactive_split_bytes[kStatAll].current != split_bytes)
    FAIL("inactive_split_bytes %lld != %lld", (long long)s.inactive_split_bytes[kStatAll].current,
         (long long)split_bytes);
  if (s.active[kStatAll].current != int64_t(live.size()) || s.allocation[kStatAll].current != int64_t(live.size()))
    FAIL("active %lld, allocation %lld, live %zu", (long long)s.active[kStatAll].current,
         (long long)s.allocation[kStatAll].current, live.size());
  int64_t bytes = 0;
  for (const Live& l : live) bytes += int64_t(l.b->size);
  if (s.active_bytes[kStatAll].current != bytes || s.allocated_bytes[kStatAll].current != bytes)
    FAIL("active/allocated bytes");
  if (allocated > int64_t(live.size())) FAIL("more allocated blocks than live ones");
  if (nseg > s.segment[kStatAll].current) FAIL("segment count");
}

// A freed small block waits, parked, for the next request of its size on its stream.
static void park_run() {
  DeviceCachingAllocator a(0);
  cudaStream_t s1 = reinterpret_cast<cudaStream_t>(0x1000), s2 = reinterpret_cast<cudaStream_t>(0x2000);
  const int64_t MiB = 1 << 20;
  {
    Block* x = a.malloc(1000, s1);
    void* px = x->ptr;
    a.free(x);
    Block* y = a.malloc(600, s1);  // 1024 B too: x's block
    if (y->ptr != px) FAIL("park: not reused");
    a.free(y);
    Block* z = a.malloc(1000, s2);  // another stream: a segment of its own
    if (z->ptr == px) FAIL("park: reused across streams");
    if (a.stats().num_device_alloc != 2) FAIL("park: %lld segments", (long long)a.stats().num_device_alloc);
    Block* w = a.malloc(1024, s1);  // x's block again (the stats call put it back in the pool)
    if (w->ptr != px) FAIL("park: not reused after a flush");
    a.free(w);
    a.free(z);
    DeviceStats st = a.stats();
    if (st.active[kStatAll].allocated != 4 || st.active[kStatAll].freed != 4 || st.active[kStatAll].peak != 2)
      FAIL("park: active totals");
    a.empty_cache();
    if (g_malloc != 0 || a.stats().reserved_bytes[kStatAll].current != 0) FAIL("park: not all returned");
  }
  {
    // One 2 MiB segment holds them all, in order.
    const size_t req[] = {1, 512, 513, 1000, 4096, 100000, 1 << 20};
    std::vector<Block*> b;
    for (size_t n : req) b.push_back(a.malloc(n, s1));
    for (size_t i = 1; i < b.size(); ++i)
      if (static_cast<char*>(b[i]->ptr) != static_cast<char*>(b[i - 1]->ptr) + b[i - 1]->size) FAIL("mix: order");
    for (size_t i : {1, 3, 5}) a.free(b[i]);
    DeviceStats st = a.stats();
    if (st.allocation[kStatAll].current != 4 || st.active[kStatAll].current != 4) FAIL("mix: counts");
    if (st.allocated_bytes[kStatAll].current != 512 + 1024 + 4096 + MiB) FAIL("mix: allocated");
    if (st.active_bytes[kStatAll].current != 512 + 1024 + 4096 + MiB) FAIL("mix: active");
    if (st.requested_bytes[kStatAll].current != 1 + 513 + 4096 + MiB) FAIL("mix: requested");
    if (st.inactive_split[kStatSmallPool].current != 4) FAIL("mix: inactive_split");
    const int64_t rest = 2 * MiB - (512 + 512 + 1024 + 1024 + 4096 + 100352 + MiB);
    if (st.inactive_split_bytes[kStatSmallPool].current != 512 + 1024 + 100352 + rest)
      FAIL("mix: inactive_split_bytes %lld", (long long)st.inactive_split_bytes[kStatSmallPool].current);
    for (size_t i : {0, 2, 4, 6}) a.free(b[i]);
    auto segs = a.segments();
    if (segs.size() != 1 || segs[0].second.size() != 1 || segs[0].second[0].second ||
        segs[0].first != size_t(2 * MiB))
      FAIL("mix: not one free segment");
    st = a.stats();
    if (st.inactive_split[kStatAll].current != 0 || st.allocation[kStatAll].current != 0 ||
        st.active_bytes[kStatAll].current != 0)
      FAIL("mix: not all free");
    a.empty_cache();
    if (g_malloc != 0) FAIL("mix: not returned");
  }
  // Random: more than the parking list holds, two streams, both pools.
  std::mt19937_64 rng(7);
  std::vector<Live> live;
  for (int step = 0; step < 30000; ++step) {
    if (rng() % 100 < 50 || live.empty()) {
      const size_t n = rng() % 20 == 0 ? 1 + rng() % (30 << 20) : 1 + rng() % (rng() % 2 ? 2048 : (1 << 20));
      Block* b = a.malloc(n, rng() % 4 == 0 ? s2 : s1);
      const unsigned char tag = (unsigned char)(rng() % 250 + 1);
      tag_block(b->ptr, n, tag);
      live.push_back({b, n, tag});
    } else {
      const size_t k = rng() % live.size();
      a.free(live[k].b);
      live.erase(live.begin() + std::ptrdiff_t(k));
    }
    if (live.size() > 60)
      while (live.size() > 20) {
        const size_t k = rng() % live.size();
        a.free(live[k].b);
        live.erase(live.begin() + std::ptrdiff_t(k));
      }
    if (step % 997 == 0) a.empty_cache();
    if (step % 53 == 0) {
      check_live(live);
      check_segments(a, live);
    }
  }
  for (auto& l : live) a.free(l.b);
  live.clear();
  check_segments(a, live);
  for (const auto& [total, blocks] : a.segments())
    if (blocks.size() != 1) FAIL("random: a segment not merged back");
  a.empty_cache();
  if (g_malloc != 0) FAIL("random: not all returned");
  std::printf("park: ok (%lld allocations)\n", (long long)a.stats().allocation[kStatAll].allocated);
}

int main(int argc, char** argv) {
  const size_t MiB0 = 1 << 20;
  if (argc > 1 && std::strcmp(argv[1], "park") == 0) {
    park_run();
    return 0;
  }
  if (argc > 1) {  // fixed segments: the fragmentation pattern runs out of memory
    DeviceCachingAllocator a(0);
    cudaStream_t s1 = reinterpret_cast<cudaStream_t>(0x2000);
    a.set_memory_fraction(double(1100 * MiB0) / double(kTotal));
    Block* big = a.malloc(1024 * MiB0, s1);
    a.free(big);
    std::vector<Block*> parts;
    for (int i = 0; i < 8; ++i) parts.push_back(a.malloc(100 * MiB0, s1));
    for (int i = 0; i < 8; i += 2) a.free(parts[size_t(i)]);
    try {
      a.malloc(600 * MiB0, s1);
      FAIL("fixed: no OOM");
    } catch (const wick::OutOfMemoryError& e) {
      std::printf("fixed: OOM as expected: %.120s\n", e.what());
    }
    return 0;
  }
  setenv("WICK_CUDA_ALLOC_CONF", "expandable_segments:True", 1);
  setenv("EXPANDABLE_RUN", "1", 1);
  DeviceCachingAllocator a(0);
  std::mt19937_64 rng(1);
  cudaStream_t streams[3] = {reinterpret_cast<cudaStream_t>(0x1000), reinterpret_cast<cudaStream_t>(0x2000),
                             nullptr};
  std::vector<Live> live;
  const size_t MiB = 1 << 20;

  // Scripted: growth in place, as the GPU test expects.
  {
    Block* x = a.malloc(30 * MiB, streams[0]);
    if (mapped_total() != 40 * MiB) FAIL("30 MiB maps %zu", mapped_total());
    Block* y = a.malloc(25 * MiB, streams[0]);
    if (static_cast<char*>(y->ptr) != static_cast<char*>(x->ptr) + 30 * MiB) FAIL("y not after x");
    if (mapped_total() != 60 * MiB) FAIL("after y %zu", mapped_total());
    Block* z = a.malloc(100 * MiB, streams[0]);
    if (static_cast<char*>(z->ptr) != static_cast<char*>(x->ptr) + 55 * MiB) FAIL("z not after y");
    if (mapped_total() != 160 * MiB) FAIL("after z %zu", mapped_total());
    tag_block(x->ptr, 30 * MiB, (unsigned char)(1));
    tag_block(y->ptr, 25 * MiB, (unsigned char)(2));
    tag_block(z->ptr, 100 * MiB, (unsigned char)(3));
    a.free(x);
    a.empty_cache();
    if (mapped_total() != 140 * MiB) FAIL("after empty_cache %zu", mapped_total());
    check_live({{y, 25 * MiB, 2}, {z, 100 * MiB, 3}});
    Block* w = a.malloc(20 * MiB, streams[0]);
    tag_block(w->ptr, 20 * MiB, (unsigned char)(4));
    check_live({{y, 25 * MiB, 2}, {z, 100 * MiB, 3}, {w, 20 * MiB, 4}});
    a.free(w);
    a.free(y);
    a.free(z);
    a.empty_cache();
    if (mapped_total() != 0 || !g_reserved.empty() || !g_handles.empty()) FAIL("not all returned");
    DeviceStats s = a.stats();
    if (s.segment[kStatAll].current != 0 || s.reserved_bytes[kStatAll].current != 0) FAIL("stats not zero");
    std::printf("scripted growth: ok\n");
  }
  // Fragmentation under a fraction.
  {
    a.set_memory_fraction(double(1100 * MiB) / double(kTotal));
    Block* big = a.malloc(1024 * MiB, streams[1]);
    a.free(big);
    std::vector<Block*> parts;
    for (int i = 0; i < 8; ++i) {
      parts.push_back(a.malloc(100 * MiB, streams[1]));
      tag_block(parts.back()->ptr, 100 * MiB, (unsigned char)(10 + i));
    }
    for (int i = 0; i < 8; i += 2) a.free(parts[size_t(i)]);
    Block* x = a.malloc(600 * MiB, streams[1]);
    if (mapped_total() != 1000 * MiB) FAIL("fragmentation: mapped %zu", mapped_total() / MiB);
    if (a.stats().num_alloc_retries != 1) FAIL("retries");
    tag_block(x->ptr, 600 * MiB, (unsigned char)(99));
    std::vector<Live> l;
    for (int i = 1; i < 8; i += 2) l.push_back({parts[size_t(i)], 100 * MiB, (unsigned char)(10 + i)});
    l.push_back({x, 600 * MiB, 99});
    check_live(l);
    // A request over the fraction is refused.
    try {
      a.malloc(200 * MiB, streams[1]);
      FAIL("no OOM");
    } catch (const wick::OutOfMemoryError& e) {
      if (!std::strstr(e.what(), "set_per_process_memory_fraction")) FAIL("message: %s", e.what());
    }
    check_live(l);
    for (auto& x2 : l) a.free(x2.b);
    a.set_memory_fraction(1.0);
    a.empty_cache();
    if (mapped_total() != 0 || !g_reserved.empty()) FAIL("fragmentation: not all returned");
    std::printf("fragmentation: ok\n");
  }
  // Random.
  for (int step = 0; step < 40000; ++step) {
    const int r = int(rng() % 100);
    if (r < 50 || live.empty()) {
      size_t n;
      switch (rng() % 4) {
        case 0:
          n = 1 + rng() % 4096;
          break;
        case 1:
          n = 1 + rng() % (1 << 20);
          break;
        case 2:
          n = 1 + rng() % (12 << 20);
          break;
        default:
          n = 1 + rng() % (90 << 20);
          break;
      }
      Block* b;
      try {
        b = a.malloc(n, streams[rng() % 3]);
      } catch (const wick::OutOfMemoryError&) {
        continue;
      }
      const unsigned char tag = (unsigned char)(rng() % 250 + 1);
      tag_block(b->ptr, n, (unsigned char)(tag));
      live.push_back({b, n, tag});
    } else {
      const size_t k = rng() % live.size();
      a.free(live[k].b);
      live.erase(live.begin() + std::ptrdiff_t(k));
    }
    if (live.size() > 40) {
      for (int i = 0; i < 20; ++i) {
        const size_t k = rng() % live.size();
        a.free(live[k].b);
        live.erase(live.begin() + std::ptrdiff_t(k));
      }
    }
    if (step % 499 == 0) a.empty_cache();
    if (step % 101 == 0) {
      check_live(live);
      check_stats(a, live);
    }
  }
  check_live(live);
  check_stats(a, live);
  for (auto& l : live) a.free(l.b);
  live.clear();
  a.empty_cache();
  check_stats(a, live);
  if (mapped_total() != 0 || !g_reserved.empty() || !g_handles.empty()) FAIL("random: not all returned");
  DeviceStats s = a.stats();
  std::printf("random: ok (%lld allocations, %lld pages mapped, peak reserved %lld MiB, syncs %d)\n",
              (long long)s.allocation[kStatAll].allocated, (long long)s.num_device_alloc,
              (long long)(s.reserved_bytes[kStatAll].peak >> 20), g_syncs);
  return 0;
}
