// The view and shape functions on small tensors with sizes, strides, dims and dtypes decoded
// from the input: view, reshape, expand, narrow, permute, transpose, select, squeeze,
// unsqueeze, flatten, as well as broadcasting add and sum. Each result is checked to lie within
// its storage; a wick::Error is an acceptable answer, anything else is a bug.
#include <cstdint>
#include <cstdlib>
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
  if (t.numel() == 0) return;
  int64_t lo = t.storage_offset(), hi = t.storage_offset();
  for (int64_t d = 0; d < t.dim(); ++d) {
    const int64_t span = (t.size(d) - 1) * t.stride(d);
    (span < 0 ? lo : hi) += span;
  }
  const int64_t elems = int64_t(t.impl()->storage()->nbytes()) / t.element_size();
  if (lo < 0 || hi >= elems) std::abort();
}

wick::Tensor step(Bytes& in, const wick::Tensor& t) {
  switch (in.u8() % 13) {
    case 0:
      return t.view(dims_of(in));
    case 1:
      return t.reshape(dims_of(in));
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
      const wick::Tensor other = wick::ones(dims_of(in), wick::Dtype(in.range(0, wick::kNumDtypes - 1)));
      return wick::add(t, other);
    }
    default:
      return t.sum(dims_of(in), in.u8() % 2);
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
      t = wick::empty_strided(sizes, strides, dtype);
      check_in_bounds(t);
    }
    for (int i = 0; i < 6 && !in.empty(); ++i) {
      t = step(in, t);
      check_in_bounds(t);
    }
  } catch (const wick::Error&) {}
  return 0;
}
