// The view and shape functions on small tensors with sizes, strides, dims and dtypes decoded
// from the input: view, reshape, expand, narrow, permute, transpose, select, squeeze,
// unsqueeze, flatten, as well as broadcasting add and sum. Each result is checked to lie within
// its storage; a wick::Error is an acceptable answer, anything else is a bug.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <vector>

#include "fuzz_util.h"
#include "wick/error.h"
#include "wick/ops.h"

namespace {

using wick_fuzz::Bytes;

std::vector<int64_t> dims_of(Bytes& in) {
  std::vector<int64_t> d(size_t(in.range(0, 5)));
  for (auto& x : d) x = in.dim();
  return d;
}

// Every element a view can reach lies in its storage.
void check_in_bounds(const wick::Tensor& t) {
  // WICK_FUZZ_TRACE=1 prints each step's result, to see what a crashing input did.
  static const bool trace = std::getenv("WICK_FUZZ_TRACE") != nullptr;
  if (trace)
    std::cerr << t.dtype() << " sizes " << t.sizes() << " strides " << t.strides() << " offset "
              << t.storage_offset() << " storage " << t.impl()->storage()->nbytes() << " bytes" << std::endl;
  if (t.numel() == 0) return;
  int64_t lo = t.storage_offset(), hi = t.storage_offset();
  for (int64_t d = 0; d < t.dim(); ++d) {
    int64_t span = 0;
    // An extent beyond int64 can't lie within a storage that was allocated.
    if (__builtin_mul_overflow(t.size(d) - 1, t.stride(d), &span) ||
        __builtin_add_overflow(span < 0 ? lo : hi, span, span < 0 ? &lo : &hi))
      std::abort();
  }
  const int64_t elems = int64_t(t.impl()->storage()->nbytes()) / t.element_size();
  if (lo < 0 || hi >= elems) std::abort();
}

// Ops that allocate or visit every element run only on small tensors: an expanded view may
// have 2^62 elements, and copying it is an out-of-memory error or a very long loop, not a bug.
constexpr int64_t kMaxElements = 1 << 16;

bool small(const std::vector<int64_t>& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes)
    if (s < 0 || __builtin_mul_overflow(n, s, &n) || n > kMaxElements) return s < 0;
  return true;
}

wick::Tensor step(Bytes& in, const wick::Tensor& t) {
  const uint8_t op = in.u8() % 13;
  if (op >= 10 && t.numel() > kMaxElements) return t;
  switch (op) {
    case 0:
      return t.view(dims_of(in));
    case 1:
      return t.numel() <= kMaxElements ? t.reshape(dims_of(in)) : t;
    case 2:
      return t.expand(dims_of(in));
    case 3: {
      const int64_t d = in.dim(), start = in.dim();
      return t.narrow(d, start, in.dim());
    }
    case 4:
      return t.permute(dims_of(in));
    case 5: {
      const int64_t a = in.dim();
      return t.transpose(a, in.dim());
    }
    case 6: {
      const int64_t d = in.dim();
      return t.select(d, in.dim());
    }
    case 7:
      return t.squeeze(in.dim());
    case 8:
      return t.unsqueeze(in.dim());
    case 9: {
      const int64_t a = in.dim();
      return t.flatten(a, in.dim());
    }
    case 10:
      return t.contiguous();
    case 11: {
      const auto sizes = dims_of(in);
      const auto dtype = wick::Dtype(in.range(0, wick::kNumDtypes - 1));
      if (!small(sizes)) return t;
      const wick::Tensor other = wick::ones(sizes, dtype);
      // The broadcast result may still be large: [2^16, 1] + [1, 2^16].
      std::vector<int64_t> out(std::max(t.dim(), other.dim()), 1);
      for (int64_t i = 0; i < t.dim(); ++i) out[out.size() - 1 - i] = t.size(-1 - i);
      for (int64_t i = 0; i < other.dim(); ++i) {
        int64_t& o = out[out.size() - 1 - i];
        o = std::max(o, other.size(-1 - i));
      }
      if (!small(out)) return t;
      return wick::add(t, other);
    }
    default: {
      // An empty tensor's other dims may be huge: summing away its 0 leaves a large result.
      int64_t nonzero = 1;
      for (int64_t d = 0; d < t.dim(); ++d)
        if (t.size(d) != 0 &&
            (__builtin_mul_overflow(nonzero, t.size(d), &nonzero) || nonzero > kMaxElements))
          return t;
      return t.sum(dims_of(in), in.u8() % 2);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Bytes in(data, size);
  try {
    const auto dtype = wick::Dtype(in.range(0, wick::kNumDtypes - 1));
    std::vector<int64_t> sizes(size_t(in.range(0, 4)));
    for (auto& s : sizes) s = in.range(0, 4);
    int64_t n = 1;
    for (int64_t s : sizes) n *= s;
    wick::Tensor t = wick::arange(n).to(dtype).reshape(sizes);
    if (in.u8() % 2) {
      // A start with strides of the input's choosing (negative, zero, huge: those must fail).
      std::vector<int64_t> strides(sizes.size());
      for (auto& s : strides) s = in.dim();
      // A layout that fits in int64 but spans terabytes is skipped (its allocation would fail,
      // which is fine, but libFuzzer counts huge mallocs as crashes); one whose extent
      // overflows int64 must be refused by wick.
      int64_t extent = 1;
      bool overflow = false;
      for (size_t i = 0; i < sizes.size(); ++i) {
        int64_t span = 0;
        overflow |= __builtin_mul_overflow(std::max<int64_t>(sizes[i] - 1, 0), strides[i], &span);
        overflow |= __builtin_add_overflow(extent, span, &extent);
      }
      if (overflow || extent <= kMaxElements) {
        t = wick::empty_strided(sizes, strides, dtype);
        check_in_bounds(t);
        // empty_strided leaves memory as it was; a bool byte that isn't 0 or 1 is undefined behavior.
        t.fill_(1);
      }
    }
    for (int i = 0; i < 6 && !in.empty(); ++i) {
      t = step(in, t);
      check_in_bounds(t);
    }
  } catch (const wick::Error&) {}
  return 0;
}
