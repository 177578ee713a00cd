// Memory (the API contract, part 4): the caching allocator's figures as a tensor comes and
// goes, its statistics and summary, and a non-blocking copy from pinned memory. It prints
//   allocated with x: 4194304 bytes (at least), after: 0 more
//   reserved: ... bytes; after empty_cache: ... bytes
//   peak: ... bytes
//   memory_stats()["allocation.all.current"]: ...
//   the memory_summary() table
//   pinned: true; copied non-blocking: 1048576 ones
// Without a GPU it says so and exits 0.
#include <iostream>

#include <wick/wick.h>

int main() {
  if (!wick::cuda::is_available()) {
    std::cout << "this example needs a GPU (wick::cuda::is_available() is false)\n";
    return 0;
  }
  // [doc:allocator_stats]
  const int64_t before = wick::cuda::memory_allocated();  // bytes held by live tensors
  {
    auto x = wick::empty({1024, 1024}, wick::Device("cuda"));  // 4 MiB of float32
    std::cout << "allocated with x: " << wick::cuda::memory_allocated() - before << " bytes";
  }
  std::cout << ", after: " << wick::cuda::memory_allocated() - before << " more\n";
  std::cout << "reserved: " << wick::cuda::memory_reserved() << " bytes";  // what the cache holds
  wick::cuda::empty_cache();  // give unused cached blocks back to the driver
  std::cout << "; after empty_cache: " << wick::cuda::memory_reserved() << " bytes\n";
  std::cout << "peak: " << wick::cuda::max_memory_allocated() << " bytes\n";
  wick::cuda::reset_peak_memory_stats();
  auto stats = wick::cuda::memory_stats();  // PyTorch's key names
  std::cout << "memory_stats()[\"allocation.all.current\"]: " << stats["allocation.all.current"] << "\n";
  std::cout << wick::cuda::memory_summary() << "\n";
  // [doc:end]

  // [doc:pinned]
  // Pinned host memory: a copy with non_blocking=true returns before it ends.
  auto host = wick::ones({1 << 20}).pin_memory();
  auto dev = host.to(wick::Device("cuda"), /*non_blocking=*/true);
  wick::cuda::synchronize();
  std::cout << std::boolalpha << "pinned: " << host.is_pinned()
            << "; copied non-blocking: " << dev.sum().item<int64_t>() << " ones\n";
  // [doc:end]
}
