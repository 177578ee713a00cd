// How much host memory a request may ask for. A request larger than the machine's memory and
// swap can never be backed; where the kernel overcommits (vm.overcommit_memory=1) malloc or
// new would still hand out the address space and the process would be killed once the pages
// were touched, so such requests raise OutOfMemoryError before anything is allocated.
#pragma once

#include <cstddef>
#include <cstdint>

#include "wick/error.h"

namespace wick::detail {

// The memory and swap this process can have, in bytes: the machine's, or its cgroup's memory
// limit (a container's) plus swap where that is lower (SIZE_MAX when unknown).
size_t host_memory_ceiling();

// OutOfMemoryError "[op] failed to allocate ..." when a request of bytes exceeds
// host_memory_ceiling().
inline void check_host_bytes(uint64_t bytes, const char* op) {
  if (bytes > host_memory_ceiling()) [[unlikely]]
    raise<OutOfMemoryError>(op, "failed to allocate ", bytes, " bytes of host memory (more than the ",
                            host_memory_ceiling(), " bytes of memory and swap this process can have)");
}

// The same for n items of item_bytes each (n <= 0: nothing to check).
inline void check_host_request(int64_t n, size_t item_bytes, const char* op) {
  if (n > 0 && uint64_t(n) > host_memory_ceiling() / item_bytes) [[unlikely]]
    raise<OutOfMemoryError>(op, "failed to allocate ", n, " items of ", item_bytes,
                            " bytes of host memory (more than the ", host_memory_ceiling(),
                            " bytes of memory and swap this process can have)");
}

}  // namespace wick::detail
