// The 2-D poolings of nn::functional: argument checks and output geometry here; the window
// computations are core's pooling ops (core/pool.h: the kernel table's max-pooling entries or
// the generic windows), which record MaxPool2DWithIndicesBackward0 and AvgPool2DBackward0 when
// the input needs grad.
#include <algorithm>

#include "core/as_op.h"
#include "core/pool.h"
#include "core/tensor_ops.h"
#include "nn/batched.h"
#include "wick/nn/functional.h"
#include "wick/ops.h"

namespace wick::nn::functional {

namespace {

using wick::detail::Pool2dGeometry;

// Pooling output size (PyTorch's pooling_output_shape).
int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode, const char* op) {
  WICK_CHECK(k > 0 && s > 0 && d > 0, ValueError, op,
             "kernel_size, stride and dilation must be greater than zero");
  WICK_CHECK(p >= 0 && p <= (d * (k - 1) + 1) / 2, ValueError, op,
             "pad should be at most half of effective kernel size, but got pad=", p, ", kernel_size=", k,
             " and dilation=", d);
  const int64_t num = in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  int64_t out = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  WICK_CHECK(out > 0, ValueError, op, "Given input size ", in, ", the output size ", out, " is too small");
  return out;
}

Pool2dGeometry pool_geometry(const Tensor& x, Pair k, Pair s, Pair p, Pair d, bool ceil_mode,
                             const char* op) {
  WICK_CHECK(k.h > 0 && k.w > 0, ValueError, op, "kernel size should be greater than zero, but got kH: ", k.h,
             " kW: ", k.w);
  WICK_CHECK(s.h > 0 && s.w > 0, ValueError, op, "stride should be greater than zero, but got dH: ", s.h,
             " dW: ", s.w);
  WICK_CHECK(d.h > 0 && d.w > 0, ValueError, op,
             "dilation should be greater than zero, but got dilationH: ", d.h, " dilationW: ", d.w);
  Pool2dGeometry g{k.h, k.w, s.h, s.w, p.h, p.w, d.h, d.w, 0, 0, 0, 0};
  g.oh = pool_out(x.size(2), k.h, s.h, p.h, d.h, ceil_mode, op);
  g.ow = pool_out(x.size(3), k.w, s.w, p.w, d.w, ceil_mode, op);
  g.hp = std::max(x.size(2) + 2 * p.h, (g.oh - 1) * s.h + d.h * (k.h - 1) + 1);
  g.wp = std::max(x.size(3) + 2 * p.w, (g.ow - 1) * s.w + d.w * (k.w - 1) + 1);
  return g;
}

}  // namespace

Tensor max_pool2d(const Tensor& x, Pair kernel_size, std::optional<Pair> stride, Pair padding, Pair dilation,
                  bool ceil_mode) {
  wick::detail::check_defined(x, "max_pool2d", "self");
  return detail::batched(x, "max_pool2d", [&](const Tensor& x4) {
    WICK_CHECK(is_floating_point(x4.dtype()), TypeError, "max_pool2d", "\"max_pool2d\" not implemented for '",
               x4.dtype(), "'");
    const Pool2dGeometry g = pool_geometry(x4, kernel_size, stride.value_or(kernel_size), padding, dilation,
                                           ceil_mode, "max_pool2d");
    return wick::detail::max_pool2d(x4, g);
  });
}

Tensor avg_pool2d(const Tensor& x, Pair kernel_size, std::optional<Pair> stride, Pair padding, bool ceil_mode,
                  bool count_include_pad) {
  wick::detail::check_defined(x, "avg_pool2d", "self");
  return detail::batched(x, "avg_pool2d", [&](const Tensor& x4) {
    WICK_CHECK(x4.dtype() != kBool, TypeError, "avg_pool2d", "\"avg_pool2d\" not implemented for 'bool'");
    const Pool2dGeometry g =
        pool_geometry(x4, kernel_size, stride.value_or(kernel_size), padding, 1, ceil_mode, "avg_pool2d");
    return wick::detail::avg_pool2d(x4, g, count_include_pad);
  });
}

namespace {
// The 1-D poolings: the 2-D ones over [N, C, 1, L] (PyTorch's composite forms).
template <class F>
Tensor pool1d(const Tensor& x, const char* op, F pool2d) {
  wick::detail::check_defined(x, op, "self");
  WICK_CHECK(x.dim() == 2 || x.dim() == 3, ValueError, op,
             "Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for input, but got:",
             x.sizes());
  return wick::detail::as_op(op, [&] { return pool2d(x.unsqueeze(-2)).squeeze(-2); });
}
}  // namespace

Tensor max_pool1d(const Tensor& x, int64_t kernel_size, std::optional<int64_t> stride, int64_t padding,
                  int64_t dilation, bool ceil_mode) {
  return pool1d(x, "max_pool1d", [&](const Tensor& x2) {
    return max_pool2d(x2, {1, kernel_size}, Pair(1, stride.value_or(kernel_size)), {0, padding}, {1, dilation},
                      ceil_mode);
  });
}

Tensor avg_pool1d(const Tensor& x, int64_t kernel_size, std::optional<int64_t> stride, int64_t padding,
                  bool ceil_mode, bool count_include_pad) {
  return pool1d(x, "avg_pool1d", [&](const Tensor& x2) {
    return avg_pool2d(x2, {1, kernel_size}, Pair(1, stride.value_or(kernel_size)), {0, padding}, ceil_mode,
                      count_include_pad);
  });
}

Tensor adaptive_avg_pool1d(const Tensor& x, int64_t output_size) {
  return pool1d(x, "adaptive_avg_pool1d",
                [&](const Tensor& x2) { return adaptive_avg_pool2d(x2, {1, output_size}); });
}

Tensor adaptive_avg_pool2d(const Tensor& x, Pair output_size) {
  wick::detail::check_defined(x, "adaptive_avg_pool2d", "self");
  // PyTorch refuses empty non-batch dims (an empty window has no mean) and integer inputs; the
  // checks come before the pooling below, whose ops would otherwise name themselves.
  if (x.dim() == 3 || x.dim() == 4)
    for (int64_t i = 1; i < x.dim(); ++i)
      WICK_CHECK(x.size(i) > 0, ValueError, "adaptive_avg_pool2d",
                 "adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch dimensions, "
                 "but input has sizes ",
                 x.sizes(), " with dimension ", i, " being empty");
  return detail::batched(x, "adaptive_avg_pool2d", [&](const Tensor& x4) {
    WICK_CHECK(is_floating_point(x4.dtype()), TypeError, "adaptive_avg_pool2d",
               "\"adaptive_avg_pool2d\" not implemented for '", x4.dtype(), "'");
    const int64_t h = x4.size(2), w = x4.size(3), oh = output_size.h, ow = output_size.w;
    WICK_CHECK(oh > 0 && ow > 0, ValueError, "adaptive_avg_pool2d", "output_size must be positive");
    if (oh == 1 && ow == 1) return x4.mean({2, 3}, true);
    if (h % oh == 0 && w % ow == 0) return avg_pool2d(x4, Pair(h / oh, w / ow));
    // Uneven bins: bin i covers [floor(i h / oh), ceil((i + 1) h / oh)).
    std::vector<Tensor> rows;
    for (int64_t i = 0; i < oh; ++i) {
      const int64_t h0 = i * h / oh, h1 = ((i + 1) * h + oh - 1) / oh;
      std::vector<Tensor> cells;
      for (int64_t j = 0; j < ow; ++j) {
        const int64_t w0 = j * w / ow, w1 = ((j + 1) * w + ow - 1) / ow;
        cells.push_back(x4.narrow(2, h0, h1 - h0).narrow(3, w0, w1 - w0).mean({2, 3}));
      }
      rows.push_back(wick::stack(cells, -1));
    }
    return wick::stack(rows, -2);
  });
}

}  // namespace wick::nn::functional
