// The CPU kernel of the random ops: fills a contiguous tensor from the Philox stream.
//
// Work is split by Philox block (4 or 2 elements each, src/core/philox.h): block b depends
// only on (seed, offset + b), so OpenMP threads take contiguous ranges of blocks and the
// result does not depend on how many threads ran. The per-block code is the same
// WICK_HOST_DEVICE code the CUDA kernel runs.
#include "cpu/random.h"

#include <algorithm>

#include "core/philox.h"
#include "cpu/loops.h"

namespace wick::detail::cpu {
namespace {

// fill(block, out + b * per, count) for every block of an n-element draw.
template <class T, class F>
void for_each_block(T* out, int64_t n, int per, uint64_t seed, uint64_t offset, const F& fill) {
  const int64_t blocks = int64_t(philox::blocks_for(n, per));
#pragma omp parallel for if (n >= kParallelGrain && !omp_in_parallel()) schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    const philox::Block r = philox::draw_block(seed, offset, uint64_t(b));
    fill(r, out + b * per, int(std::min<int64_t>(per, n - b * per)));
  }
}

}  // namespace

void random(RandomOp op, const Tensor& out, uint64_t seed, uint64_t offset, double a, double b) {
  const int64_t n = out.numel();
  if (n == 0) return;
  switch (op) {
    case RandomOp::Uniform:
      WICK_DISPATCH_FLOATING(out.dtype(), "uniform_", [&]<class T>() {
        for_each_block(
            static_cast<T*>(out.data_ptr()), n, philox::kUniformPerBlock<T>, seed, offset,
            [a, b](const philox::Block& r, T* p, int count) { philox::uniform_block(r, p, count, a, b); });
      });
      return;
    case RandomOp::Normal:
      WICK_DISPATCH_FLOATING(out.dtype(), "normal_", [&]<class T>() {
        for_each_block(
            static_cast<T*>(out.data_ptr()), n, philox::kNormalPerBlock, seed, offset,
            [a, b](const philox::Block& r, T* p, int count) { philox::normal_block(r, p, count, a, b); });
      });
      return;
    case RandomOp::RandInt: {
      // a = low, b = high, both exact integers (core checks |a|, |b| <= 2^53).
      const int64_t low = int64_t(a);
      const uint64_t range = uint64_t(int64_t(b)) - uint64_t(low);
      WICK_DISPATCH_ALL(out.dtype(), "randint", [&]<class T>() {
        for_each_block(static_cast<T*>(out.data_ptr()), n, philox::kRandIntPerBlock, seed, offset,
                       [low, range](const philox::Block& r, T* p, int count) {
                         philox::randint_block(r, p, count, low, range);
                       });
      });
      return;
    }
  }
}

}  // namespace wick::detail::cpu
