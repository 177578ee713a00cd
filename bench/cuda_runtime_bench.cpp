// The CUDA runtime's micro-benchmarks: allocating and freeing a cached block (raw and as a
// tensor), host<->device copies from pageable and pinned memory, and pin_memory().
//   build/bin/wick_cuda_runtime_bench --benchmark_filter=Copy
#include <benchmark/benchmark.h>

#include "wick/detail/storage.h"
#include "wick/wick.h"

using namespace wick;

namespace {

bool need_cuda(benchmark::State& st) {
  if (cuda::is_available()) return true;
  st.SkipWithError("no CUDA device");
  return false;
}

// The allocator's fast path: a 1 MiB block that the cache already holds.
void BM_CachedAllocFree(benchmark::State& st) {
  if (!need_cuda(st)) return;
  auto* alloc = detail::cuda_allocator(cuda::current_device());
  const size_t n = size_t(st.range(0));
  { auto warm = alloc->allocate(n); }
  for (auto _ : st) {
    auto p = alloc->allocate(n);
    benchmark::DoNotOptimize(p.get());
  }
}
BENCHMARK(BM_CachedAllocFree)->Arg(512)->Arg(1 << 20)->Arg(64 << 20);

// The target row: empty({262144}) on CUDA and free it (tensor and storage objects included).
void BM_EmptyFree(benchmark::State& st) {
  if (!need_cuda(st)) return;
  { auto warm = empty({262144}, Device("cuda")); }
  for (auto _ : st) {
    auto t = empty({262144}, Device("cuda"));
    benchmark::DoNotOptimize(t.data_ptr());
  }
}
BENCHMARK(BM_EmptyFree);

// Host to device and back, Arg(0): bytes, Arg(1): 1 for pinned host memory (non_blocking copy
// followed by a synchronize), 0 for pageable (synchronous). Fresh random data, never zeros.
void copy_bench(benchmark::State& st, bool to_device) {
  if (!need_cuda(st)) return;
  const int64_t n = st.range(0) / 4;
  const bool pinned = st.range(1) != 0;
  auto host = rand({n});
  if (pinned) host = host.pin_memory();
  auto dev = host.to("cuda");
  cuda::synchronize();
  for (auto _ : st) {
    if (to_device) dev.copy_(host, pinned);
    else host.copy_(dev, pinned);
    cuda::synchronize();
  }
  st.SetBytesProcessed(int64_t(st.iterations()) * n * 4);
  st.SetLabel(pinned ? "pinned" : "pageable");
}

void BM_CopyHostToDevice(benchmark::State& st) { copy_bench(st, true); }
void BM_CopyDeviceToHost(benchmark::State& st) { copy_bench(st, false); }
BENCHMARK(BM_CopyHostToDevice)->Args({1 << 20, 0})->Args({1 << 20, 1})->Args({256 << 20, 0})->Args({256 << 20, 1})
    ->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CopyDeviceToHost)->Args({1 << 20, 0})->Args({1 << 20, 1})->Args({256 << 20, 0})->Args({256 << 20, 1})
    ->UseRealTime()->Unit(benchmark::kMicrosecond);

// pin_memory() of 256 MB: a pinned block from the cache plus one host copy.
void BM_PinMemory(benchmark::State& st) {
  if (!need_cuda(st)) return;
  auto host = rand({int64_t(64) << 20});
  { auto warm = host.pin_memory(); }
  for (auto _ : st) {
    auto p = host.pin_memory();
    benchmark::DoNotOptimize(p.data_ptr());
  }
  st.SetBytesProcessed(int64_t(st.iterations()) * (int64_t(256) << 20));
}
BENCHMARK(BM_PinMemory)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
