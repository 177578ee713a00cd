// Small host blocks for the objects every op makes (a small tensor's storage, a TensorImpl):
// each thread keeps a few freed blocks of each size class and hands them out again, which
// costs a fraction of a malloc/free pair. Thread-safe: a thread's lists are its own; a block
// freed on another thread joins that thread's lists. Blocks are from and to std::malloc/free
// when a list is empty or full, after the thread's lists are gone, and always under
// AddressSanitizer (so that it sees every use after free).
#pragma once

#include <cstddef>
#include <new>

namespace wick::detail {

// Blocks of up to this many bytes are kept; larger requests go to std::malloc/free.
inline constexpr size_t kSmallBlockMax = 1280;

// A block of at least nbytes (16-byte aligned, as malloc's), or null when out of memory.
void* small_block_alloc(size_t nbytes);
// Frees a block from small_block_alloc(nbytes), nbytes as given there.
void small_block_free(void* p, size_t nbytes);

// T with its objects' blocks from the lists above: the TensorImpls and StorageImpls that every op
// makes and drops. T's destructor must be virtual when objects are deleted through a base.
template <class T>
class Pooled final : public T {
 public:
  using T::T;
  static_assert(sizeof(T) <= kSmallBlockMax);
  static void* operator new(size_t n) {
    void* p = small_block_alloc(n);
    if (!p) throw std::bad_alloc();
    return p;
  }
  static void operator delete(void* p, size_t n) { small_block_free(p, n); }
};

}  // namespace wick::detail
