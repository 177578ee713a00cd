// nn::functional::pad, as torch.nn.functional.pad. Constant padding crops (negative pads) with
// narrow, then fills a new tensor and copies the input in; with grad it concatenates blocks of
// the value instead, so that cat records the graph. reflect, replicate and circular padding
// select source positions along each padded dim (index_select, which records its own node).
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "autograd/hooks.h"
#include "core/as_op.h"
#include "core/checks.h"
#include "wick/autograd.h"
#include "wick/nn/functional.h"
#include "wick/ops.h"

namespace wick::nn::functional {

namespace {

Tensor constant_pad(const Tensor& x, const std::vector<int64_t>& pad, double value) {
  const int64_t np = int64_t(pad.size() / 2), nd = x.dim();
  // Crop first (negative pads), checking every output size.
  Tensor y = x;
  DimVector out_sizes(x.sizes().begin(), x.sizes().end());
  for (int64_t i = 0; i < np; ++i) {
    const int64_t d = nd - 1 - i, l = pad[size_t(2 * i)], r = pad[size_t(2 * i + 1)];
    const int64_t size = x.size(d);
    int64_t out = 0;
    WICK_CHECK(!__builtin_add_overflow(size, l, &out) && !__builtin_add_overflow(out, r, &out), ValueError, "pad",
               "padding ", l, " and ", r, " of dimension ", d, " (size ", size, ") give a size that does not fit int64");
    WICK_CHECK(out >= 0, ValueError, "pad", "The input size ", size, ", plus negative padding ", l, " and ", r,
               " resulted in a negative output size, which is invalid. Check dimension ", d, " of your input.");
    out_sizes[size_t(d)] = out;
    const int64_t cl = l < 0 ? -l : 0, cr = r < 0 ? -r : 0;
    if (cl || cr) y = y.narrow(d, std::min(cl, size), std::max<int64_t>(size - cl - cr, 0));
  }
  if (!wick::detail::needs_grad(x)) {
    Tensor out = wick::full(out_sizes, value, x.options());
    Tensor inner = out;
    for (int64_t i = 0; i < np; ++i) {
      const int64_t d = nd - 1 - i, l = pad[size_t(2 * i)];
      inner = inner.narrow(d, l > 0 ? l : 0, y.size(d));
    }
    if (y.numel() > 0) inner.copy_(y);
    return out;
  }
  for (int64_t i = 0; i < np; ++i) {
    const int64_t d = nd - 1 - i, l = pad[size_t(2 * i)], r = pad[size_t(2 * i + 1)];
    std::vector<Tensor> parts;
    DimVector s(y.sizes().begin(), y.sizes().end());
    if (l > 0) {
      s[size_t(d)] = l;
      parts.push_back(wick::full(s, value, y.options()));
    }
    parts.push_back(y);
    if (r > 0) {
      s[size_t(d)] = r;
      parts.push_back(wick::full(s, value, y.options()));
    }
    if (parts.size() > 1) y = wick::cat(parts, d);
  }
  return y;
}

// The source position of output position o of a dim of size n padded by l on the left.
int64_t source(const std::string& mode, int64_t o, int64_t l, int64_t n) {
  int64_t p = o - l;
  if (mode == "replicate") return std::min(std::max<int64_t>(p, 0), n - 1);
  if (mode == "circular") return ((p % n) + n) % n;
  // reflect (pads < n): mirror about the first and the last element
  if (p < 0) p = -p;
  if (p >= n) p = 2 * (n - 1) - p;
  return p;
}

}  // namespace

Tensor pad(const Tensor& x, const std::vector<int64_t>& pad, const std::string& mode, double value) {
  wick::detail::check_defined(x, "pad", "input");
  WICK_CHECK(pad.size() % 2 == 0, ValueError, "pad", "Padding length must be divisible by 2");
  const int64_t np = int64_t(pad.size() / 2), nd = x.dim();
  WICK_CHECK(np <= nd, ValueError, "pad",
             "Padding length should be less than or equal to two times the input dimension but got padding length ",
             pad.size(), " and input of dimension ", nd);
  if (mode == "constant") return wick::detail::as_op("pad", [&] { return constant_pad(x, pad, value); });
  WICK_CHECK(mode == "reflect" || mode == "replicate" || mode == "circular", ValueError, "pad",
             "Unrecognised padding mode ", mode);
  WICK_CHECK(value == 0, ValueError, "pad", "Padding mode \"", mode, "\" doesn't take in value argument");
  WICK_CHECK(np >= 1 && np <= 3 && (nd == np + 1 || nd == np + 2), NotImplementedError, "pad",
             "Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now");
  Tensor y = x;
  for (int64_t i = 0; i < np; ++i) {
    const int64_t d = nd - 1 - i, l = pad[size_t(2 * i)], r = pad[size_t(2 * i + 1)], n = x.size(d);
    if (mode == "reflect")
      WICK_CHECK(l < n && r < n, ValueError, "pad",
                 "Argument #4: Padding size should be less than the corresponding input dimension, but got: padding (",
                 l, ", ", r, ") at dimension ", d, " of input ", x.sizes());
    if (mode == "circular")
      WICK_CHECK(l <= n && r <= n, ValueError, "pad", "Padding value causes wrapping around more than once.");
    WICK_CHECK(n > 0, ValueError, "pad", "Expected a non-empty dimension ", d, " for padding mode \"", mode,
               "\", got input of sizes ", x.sizes());
    int64_t out = 0;
    WICK_CHECK(!__builtin_add_overflow(n, l, &out) && !__builtin_add_overflow(out, r, &out), ValueError, "pad",
               "padding ", l, " and ", r, " of dimension ", d, " (size ", n, ") give a size that does not fit int64");
    WICK_CHECK(out >= 1, ValueError, "pad", "input of size ", n, " at dimension ", d, " is too small for padding (",
               l, ", ", r, "): output size ", out);
    if (l == 0 && r == 0) continue;
    // the index built in a wick tensor, so a size too large is wick's OutOfMemoryError
    Tensor index = wick::detail::as_op("pad", [&] { return wick::empty({out}, TensorOptions(kInt64)); });
    auto* idx = static_cast<int64_t*>(index.data_ptr());
    for (int64_t o = 0; o < out; ++o) idx[o] = source(mode, o, l, n);
    if (!x.device().is_cpu()) index = index.to(x.device());
    y = wick::detail::as_op("pad", [&] { return wick::index_select(y, d, index); });
  }
  return y;
}

}  // namespace wick::nn::functional
