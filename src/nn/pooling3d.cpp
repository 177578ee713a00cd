// The 3-D poolings and transposed convolution (wick/nn/pooling3d.h), composed of existing ops
// (docs/design.md §10): a pooling pads its input (with -inf for the maxima, 0 for the means),
// views each output's window through unfold along depth, height and width (dilation by a
// strided slice of each window), and reduces over the three window dims; conv_transpose3d is
// one conv_transpose2d per depth tap, its output depths zero-stuffed by the stride and shifted
// to the tap's place.
#include "wick/nn/pooling3d.h"

#include <algorithm>
#include <limits>

#include "core/as_op.h"
#include "core/checks.h"
#include "core/tensor_ops.h"
#include "nn/conv_common.h"
#include "nn/repr.h"
#include "wick/ops.h"

namespace wick::nn {

namespace functional {

namespace {

// One spatial dim of a pooling: the output size (PyTorch's pooling_output_shape: in ceil mode
// the last window must start inside the input or its left padding) and the right padding the
// windows need (at least the symmetric padding; more where ceil mode's last window overhangs).
struct PoolDim {
  int64_t in, k, s, p, d, out, right;
};

PoolDim pool_dim(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode, const char* op) {
  WICK_CHECK(p >= 0, ValueError, op, "pad must be non-negative, but got pad: ", p);
  WICK_CHECK(p <= k / 2, ValueError, op, "pad should be smaller than or equal to half of kernel size, but got pad=", p,
             ", kernel_size=", k);
  const int64_t span = d * (k - 1) + 1;
  const int64_t num = in + 2 * p - span + (ceil_mode ? s - 1 : 0);
  int64_t out = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  WICK_CHECK(out > 0, ValueError, op, "Given input size ", in, ", the calculated output size ", out,
             " is too small");
  const int64_t right = std::max(p, (out - 1) * s + span - in - p);
  return {in, k, s, p, d, out, right};
}

struct PoolGeometry {
  PoolDim dim[3];
};

PoolGeometry pool_geometry(const Tensor& x5, Triple k, Triple s, Triple p, Triple d, bool ceil_mode, const char* op) {
  WICK_CHECK(k.d > 0 && k.h > 0 && k.w > 0, ValueError, op, "kernel size should be greater than zero, but got kT: ",
             k.d, " kH: ", k.h, " kW: ", k.w);
  WICK_CHECK(s.d > 0 && s.h > 0 && s.w > 0, ValueError, op, "stride should be greater than zero, but got dT: ", s.d,
             " dH: ", s.h, " dW: ", s.w);
  WICK_CHECK(d.d > 0 && d.h > 0 && d.w > 0, ValueError, op, "dilation should be greater than zero, but got dilationT: ",
             d.d, " dilationH: ", d.h, " dilationW: ", d.w);
  PoolGeometry g;
  g.dim[0] = pool_dim(x5.size(2), k.d, s.d, p.d, d.d, ceil_mode, op);
  g.dim[1] = pool_dim(x5.size(3), k.h, s.h, p.h, d.h, ceil_mode, op);
  g.dim[2] = pool_dim(x5.size(4), k.w, s.w, p.w, d.w, ceil_mode, op);
  return g;
}

// The 3-D ops' input check; f runs on the input made 5-D (an unbatched [C, D, H, W] gets a
// batch dim of 1, which its results lose after).
template <class F>
auto batched5(const Tensor& x, const char* op, F f) {
  wick::detail::check_defined(x, op, "self");
  WICK_CHECK(x.dim() == 4 || x.dim() == 5, ValueError, op,
             "Expected 4D (unbatched) or 5D (batched) input to ", op, ", but got input of size: ", x.sizes());
  for (int64_t i = x.dim() - 4; i < x.dim(); ++i)
    WICK_CHECK(x.size(i) > 0, ValueError, op, "Expected input's non-batch dimensions to have positive length, but "
               "input has a shape of ", x.sizes(), " and non-batch dimension ", i, " is 0");
  return f(x.dim() == 5 ? x : x.unsqueeze(0));
}

Tensor unbatch(const Tensor& y, const Tensor& x) { return x.dim() == 5 ? y : y.squeeze(0); }

// [N, C, oD, oH, oW, kD, kH, kW]: each output's window of the padded input.
Tensor windows(const Tensor& x5, const PoolGeometry& g, double pad_value) {
  const PoolDim* a = g.dim;
  Tensor xp = functional::pad(x5, {a[2].p, a[2].right, a[1].p, a[1].right, a[0].p, a[0].right}, "constant",
                              pad_value);
  for (int i = 0; i < 3; ++i) {
    const int64_t span = a[i].d * (a[i].k - 1) + 1;
    xp = xp.narrow(2 + i, 0, (a[i].out - 1) * a[i].s + span).unfold(2 + i, span, a[i].s);
    if (a[i].d > 1) xp = xp.slice(-1, 0, span, a[i].d);
  }
  return xp;
}

// The flat index into the D * H * W plane of window element (a, b, c) of output (i, j, l), as
// an int64 tensor [oD, oH, oW, kD * kH * kW] on the host; windows of a pooling stay inside the
// input where they hold a maximum, so out-of-range positions are never picked.
std::vector<int64_t> window_indices(const PoolGeometry& g) {
  const PoolDim *a = g.dim;
  std::vector<int64_t> idx;
  idx.reserve(size_t(a[0].out * a[1].out * a[2].out * a[0].k * a[1].k * a[2].k));
  for (int64_t i = 0; i < a[0].out; ++i)
    for (int64_t j = 0; j < a[1].out; ++j)
      for (int64_t l = 0; l < a[2].out; ++l)
        for (int64_t u = 0; u < a[0].k; ++u)
          for (int64_t v = 0; v < a[1].k; ++v)
            for (int64_t w = 0; w < a[2].k; ++w) {
              const int64_t z = i * a[0].s - a[0].p + u * a[0].d, y = j * a[1].s - a[1].p + v * a[1].d,
                            x = l * a[2].s - a[2].p + w * a[2].d;
              idx.push_back((z * a[1].in + y) * a[2].in + x);
            }
  return idx;
}


std::tuple<Tensor, Tensor> max_pool3d_impl(const Tensor& x, Triple kernel_size, std::optional<Triple> stride,
                                           Triple padding, Triple dilation, bool ceil_mode, const char* op,
                                           bool want_indices) {
  return batched5(x, op, [&](const Tensor& x5) {
    WICK_CHECK(is_floating_point(x5.dtype()), TypeError, op, "\"", op, "\" not implemented for '", x5.dtype(), "'");
    const PoolGeometry g =
        pool_geometry(x5, kernel_size, stride.value_or(kernel_size), padding, dilation, ceil_mode, op);
    return wick::detail::as_op(op, [&] {
      const int64_t n = x5.size(0), c = x5.size(1), od = g.dim[0].out, oh = g.dim[1].out, ow = g.dim[2].out;
      const int64_t kk = g.dim[0].k * g.dim[1].k * g.dim[2].k;
      Tensor win = windows(x5, g, -std::numeric_limits<double>::infinity()).reshape({n, c, od, oh, ow, kk});
      auto [values, local] = win.max(-1);
      Tensor indices;
      if (want_indices) {
        Tensor table = tensor(window_indices(g), TensorOptions(kInt64)).view({od, oh, ow, kk}).to(x5.device());
        indices = table.expand({n, c, od, oh, ow, kk}).gather(-1, local.unsqueeze(-1)).squeeze(-1);
        indices = unbatch(indices, x);
      }
      return std::make_tuple(unbatch(values, x), indices);
    });
  });
}

}  // namespace

Tensor max_pool3d(const Tensor& x, Triple kernel_size, std::optional<Triple> stride, Triple padding, Triple dilation,
                  bool ceil_mode) {
  return std::get<0>(max_pool3d_impl(x, kernel_size, stride, padding, dilation, ceil_mode, "max_pool3d", false));
}

std::tuple<Tensor, Tensor> max_pool3d_with_indices(const Tensor& x, Triple kernel_size, std::optional<Triple> stride,
                                                   Triple padding, Triple dilation, bool ceil_mode) {
  return max_pool3d_impl(x, kernel_size, stride, padding, dilation, ceil_mode, "max_pool3d_with_indices", true);
}

Tensor avg_pool3d(const Tensor& x, Triple kernel_size, std::optional<Triple> stride, Triple padding, bool ceil_mode,
                  bool count_include_pad, std::optional<int64_t> divisor_override) {
  constexpr const char* op = "avg_pool3d";
  return batched5(x, op, [&](const Tensor& x5) {
    WICK_CHECK(is_floating_point(x5.dtype()), TypeError, op, "\"avg_pool3d\" not implemented for '", x5.dtype(), "'");
    WICK_CHECK(!divisor_override || *divisor_override != 0, ValueError, op, "divisor must be not zero");
    const PoolGeometry g = pool_geometry(x5, kernel_size, stride.value_or(kernel_size), padding, 1, ceil_mode, op);
    return wick::detail::as_op(op, [&] {
      const PoolDim* a = g.dim;
      Tensor sums = windows(x5, g, 0.0).sum({5, 6, 7});
      // Each output's divisor, as PyTorch's: the override, else the window clipped to the
      // padded input (count_include_pad) or to the input itself.
      std::vector<double> div;
      div.reserve(size_t(a[0].out * a[1].out * a[2].out));
      auto extent = [&](const PoolDim& q, int64_t i, bool with_pad) {
        int64_t lo = i * q.s - q.p, hi = std::min(lo + q.k, q.in + q.p);
        if (!with_pad) lo = std::max<int64_t>(lo, 0), hi = std::min(hi, q.in);
        return hi - lo;
      };
      for (int64_t i = 0; i < a[0].out; ++i)
        for (int64_t j = 0; j < a[1].out; ++j)
          for (int64_t l = 0; l < a[2].out; ++l) {
            if (divisor_override) {
              div.push_back(double(*divisor_override));
            } else {
              const int64_t pd = extent(a[0], i, true) * extent(a[1], j, true) * extent(a[2], l, true);
              const int64_t vd = extent(a[0], i, false) * extent(a[1], j, false) * extent(a[2], l, false);
              div.push_back(double(count_include_pad ? pd : vd));
            }
          }
      return unbatch(sums / tensor(div, TensorOptions(kFloat64)).view({a[0].out, a[1].out, a[2].out}).to(sums.device(), sums.dtype()), x);
    });
  });
}

namespace {

// Adaptive bins: bin i of out over n covers [floor(i n / out), ceil((i + 1) n / out)).
int64_t bin_start(int64_t i, int64_t n, int64_t out) { return i * n / out; }
int64_t bin_end(int64_t i, int64_t n, int64_t out) { return ((i + 1) * n + out - 1) / out; }

void check_output_size(Triple o, const char* op) {
  WICK_CHECK(o.d > 0 && o.h > 0 && o.w > 0, ValueError, op, "output_size must be positive, got (", o.d, ", ", o.h,
             ", ", o.w, ")");
}

// Runs cell(z0, z1, y0, y1, x0, x1) for every output position and stacks the results into
// [..., oD, oH, oW].
template <class F>
Tensor adaptive_cells(const Tensor& x5, Triple o, F cell) {
  const int64_t d = x5.size(2), h = x5.size(3), w = x5.size(4);
  std::vector<Tensor> planes;
  for (int64_t i = 0; i < o.d; ++i) {
    std::vector<Tensor> rows;
    for (int64_t j = 0; j < o.h; ++j) {
      std::vector<Tensor> cells;
      for (int64_t l = 0; l < o.w; ++l)
        cells.push_back(cell(bin_start(i, d, o.d), bin_end(i, d, o.d), bin_start(j, h, o.h), bin_end(j, h, o.h),
                             bin_start(l, w, o.w), bin_end(l, w, o.w)));
      rows.push_back(wick::stack(cells, -1));
    }
    planes.push_back(wick::stack(rows, -2));
  }
  return wick::stack(planes, -3);
}

std::tuple<Tensor, Tensor> adaptive_max_impl(const Tensor& x, Triple o, const char* op, bool want_indices) {
  return batched5(x, op, [&](const Tensor& x5) {
    WICK_CHECK(is_floating_point(x5.dtype()), TypeError, op, "\"", op, "\" not implemented for '", x5.dtype(), "'");
    check_output_size(o, op);
    return wick::detail::as_op(op, [&] {
      const int64_t n = x5.size(0), c = x5.size(1), h = x5.size(3), w = x5.size(4);
      std::vector<Tensor> idx_cells;
      Tensor values = adaptive_cells(x5, o, [&](int64_t z0, int64_t z1, int64_t y0, int64_t y1, int64_t x0,
                                                int64_t x1) {
        const Tensor win = x5.narrow(2, z0, z1 - z0).narrow(3, y0, y1 - y0).narrow(4, x0, x1 - x0);
        auto [v, local] = win.reshape({n, c, -1}).max(-1);
        if (want_indices) {
          // The window's elements' flat indices into the plane, in the window's row-major order.
          std::vector<int64_t> flat;
          for (int64_t z = z0; z < z1; ++z)
            for (int64_t y = y0; y < y1; ++y)
              for (int64_t q = x0; q < x1; ++q) flat.push_back((z * h + y) * w + q);
          idx_cells.push_back(
              tensor(flat, TensorOptions(kInt64)).to(x5.device()).index_select(0, local.reshape({-1})).reshape({n, c}));
        }
        return v;
      });
      Tensor indices;
      if (want_indices) {
        size_t next = 0;
        indices = adaptive_cells(x5, o, [&](int64_t, int64_t, int64_t, int64_t, int64_t, int64_t) {
          return idx_cells[next++];
        });
        indices = unbatch(indices, x);
      }
      return std::make_tuple(unbatch(values, x), indices);
    });
  });
}

}  // namespace

Tensor adaptive_avg_pool3d(const Tensor& x, Triple output_size) {
  constexpr const char* op = "adaptive_avg_pool3d";
  return batched5(x, op, [&](const Tensor& x5) {
    WICK_CHECK(is_floating_point(x5.dtype()), TypeError, op, "\"adaptive_avg_pool3d\" not implemented for '",
               x5.dtype(), "'");
    check_output_size(output_size, op);
    return wick::detail::as_op(op, [&] {
      const Triple o = output_size;
      if (o.d == 1 && o.h == 1 && o.w == 1) return unbatch(x5.mean({2, 3, 4}, true), x);
      if (x5.size(2) % o.d == 0 && x5.size(3) % o.h == 0 && x5.size(4) % o.w == 0)
        return unbatch(avg_pool3d(x5, Triple(x5.size(2) / o.d, x5.size(3) / o.h, x5.size(4) / o.w)), x);
      return unbatch(adaptive_cells(x5, o,
                                    [&](int64_t z0, int64_t z1, int64_t y0, int64_t y1, int64_t x0, int64_t x1) {
                                      return x5.narrow(2, z0, z1 - z0)
                                          .narrow(3, y0, y1 - y0)
                                          .narrow(4, x0, x1 - x0)
                                          .mean({2, 3, 4});
                                    }),
                     x);
    });
  });
}

Tensor adaptive_max_pool3d(const Tensor& x, Triple output_size) {
  return std::get<0>(adaptive_max_impl(x, output_size, "adaptive_max_pool3d", false));
}

std::tuple<Tensor, Tensor> adaptive_max_pool3d_with_indices(const Tensor& x, Triple output_size) {
  return adaptive_max_impl(x, output_size, "adaptive_max_pool3d_with_indices", true);
}

Tensor conv_transpose3d(const Tensor& x, const Tensor& weight, const Tensor& bias, Triple stride, Triple padding,
                        Triple output_padding, int64_t groups, Triple dilation) {
  constexpr const char* op = "conv_transpose3d";
  wick::detail::check_defined(x, op, "self");
  wick::detail::check_defined(weight, op, "weight");
  WICK_CHECK(x.dim() == 4 || x.dim() == 5, ValueError, op,
             "Expected 4D (unbatched) or 5D (batched) input to conv_transpose3d, but got input of size: ", x.sizes());
  WICK_CHECK(weight.dim() == 5, ValueError, op, "weight must be 5-D [in, out / groups, kd, kh, kw], got ",
             weight.sizes());
  if (x.dim() == 4)
    return conv_transpose3d(x.unsqueeze(0), weight, bias, stride, padding, output_padding, groups, dilation)
        .squeeze(0);
  WICK_CHECK(groups > 0, ValueError, op, "non-positive groups is not supported");
  WICK_CHECK(stride.d > 0 && stride.h > 0 && stride.w > 0, ValueError, op, "non-positive stride is not supported");
  WICK_CHECK(padding.d >= 0 && padding.h >= 0 && padding.w >= 0, ValueError, op, "negative padding is not supported");
  WICK_CHECK(dilation.d > 0 && dilation.h > 0 && dilation.w > 0, ValueError, op,
             "dilation should be greater than zero");
  WICK_CHECK(output_padding.d >= 0 && output_padding.h >= 0 && output_padding.w >= 0, ValueError, op,
             "negative output_padding is not supported");
  WICK_CHECK((output_padding.d < stride.d || output_padding.d < dilation.d) &&
                 (output_padding.h < stride.h || output_padding.h < dilation.h) &&
                 (output_padding.w < stride.w || output_padding.w < dilation.w),
             ValueError, op, "output padding must be smaller than either stride or dilation, but got output_padding: (",
             output_padding.d, ", ", output_padding.h, ", ", output_padding.w, "), stride: (", stride.d, ", ",
             stride.h, ", ", stride.w, "), dilation: (", dilation.d, ", ", dilation.h, ", ", dilation.w, ")");
  const int64_t n = x.size(0), c = x.size(1), din = x.size(2), kd = weight.size(2);
  WICK_CHECK(c == weight.size(0) && c % groups == 0, ValueError, op, "Given transposed=1, weight of size ",
             weight.sizes(), ", expected input", x.sizes(), " to have ", weight.size(0), " channels, but got ", c,
             " channels instead");
  const int64_t out_c = weight.size(1) * groups;
  WICK_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == out_c), ValueError, op,
             "Given transposed=1, weight of size ", weight.sizes(), ", expected bias to be 1-dimensional with ",
             out_c, " elements, but got bias of size ", bias.sizes(), " instead");
  // The full output depth (no padding cropped) and the cropped one.
  const int64_t full = (din - 1) * stride.d + dilation.d * (kd - 1) + 1 + output_padding.d;
  const int64_t out_d = full - 2 * padding.d;
  WICK_CHECK(out_d > 0 && din > 0, ValueError, op, "Given input size per channel: (", din, " x ", x.size(3), " x ",
             x.size(4), "), calculated output depth ", out_d, " is too small");
  return wick::detail::as_op(op, [&] {
    // Input depth slices folded into the batch: [N D, C, H, W].
    const Tensor xs = x.transpose(1, 2).reshape({n * din, c, x.size(3), x.size(4)});
    const int64_t placed = (din - 1) * stride.d + 1;
    Tensor out;
    for (int64_t k = 0; k < kd; ++k) {
      Tensor yk = conv_transpose2d(xs, weight.select(2, k), Tensor(), {stride.h, stride.w}, {padding.h, padding.w},
                                   {output_padding.h, output_padding.w}, groups, {dilation.h, dilation.w});
      const int64_t ho = yk.size(2), wo = yk.size(3);
      yk = yk.reshape({n, din, out_c, ho, wo});
      // Input depth i lands on full depth i stride + k dilation: zero-stuff by the stride, shift.
      if (stride.d > 1)
        yk = wick::cat({yk.unsqueeze(2), yk.new_zeros({n, din, stride.d - 1, out_c, ho, wo})}, 2)
                 .reshape({n, din * stride.d, out_c, ho, wo})
                 .narrow(1, 0, placed);
      const int64_t before = k * dilation.d, after = full - before - placed;
      std::vector<Tensor> parts;
      if (before) parts.push_back(yk.new_zeros({n, before, out_c, ho, wo}));
      parts.push_back(yk);
      if (after) parts.push_back(yk.new_zeros({n, after, out_c, ho, wo}));
      if (parts.size() > 1) yk = wick::cat(parts, 1);
      out = out.defined() ? out + yk : yk;
    }
    out = out.narrow(1, padding.d, out_d).transpose(1, 2);
    if (bias.defined()) out = out + bias.reshape({1, out_c, 1, 1, 1});
    return out.contiguous();
  });
}

}  // namespace functional

// ---- modules

namespace {

// A triple prints as one number when all three are equal, as the int PyTorch users usually pass.
std::string triple_repr(functional::Triple t) { return detail::py_tuple({t.d, t.h, t.w}); }
std::string scalar_or_triple(functional::Triple t) {
  return t.d == t.h && t.h == t.w ? std::to_string(t.d) : triple_repr(t);
}

}  // namespace

Tensor MaxPool3dImpl::forward(const Tensor& x) {
  return functional::max_pool3d(x, options.kernel_size(), options.stride(), options.padding(), options.dilation(),
                                options.ceil_mode());
}

std::tuple<Tensor, Tensor> MaxPool3dImpl::forward_with_indices(const Tensor& x) {
  return functional::max_pool3d_with_indices(x, options.kernel_size(), options.stride(), options.padding(),
                                             options.dilation(), options.ceil_mode());
}

std::string MaxPool3dImpl::extra_repr() const {
  return "kernel_size=" + scalar_or_triple(options.kernel_size()) + ", stride=" + scalar_or_triple(options.stride()) +
         ", padding=" + scalar_or_triple(options.padding()) + ", dilation=" + scalar_or_triple(options.dilation()) +
         ", ceil_mode=" + detail::py_bool(options.ceil_mode());
}

Tensor AvgPool3dImpl::forward(const Tensor& x) {
  return functional::avg_pool3d(x, options.kernel_size(), options.stride(), options.padding(), options.ceil_mode(),
                                options.count_include_pad(), options.divisor_override());
}

std::string AvgPool3dImpl::extra_repr() const {
  return "kernel_size=" + scalar_or_triple(options.kernel_size()) + ", stride=" + scalar_or_triple(options.stride()) +
         ", padding=" + scalar_or_triple(options.padding());
}

Tensor AdaptiveAvgPool3dImpl::forward(const Tensor& x) {
  return functional::adaptive_avg_pool3d(x, options.output_size());
}

std::string AdaptiveAvgPool3dImpl::extra_repr() const {
  return "output_size=" + scalar_or_triple(options.output_size());
}

Tensor AdaptiveMaxPool3dImpl::forward(const Tensor& x) {
  return functional::adaptive_max_pool3d(x, options.output_size());
}

std::tuple<Tensor, Tensor> AdaptiveMaxPool3dImpl::forward_with_indices(const Tensor& x) {
  return functional::adaptive_max_pool3d_with_indices(x, options.output_size());
}

std::string AdaptiveMaxPool3dImpl::extra_repr() const {
  return "output_size=" + scalar_or_triple(options.output_size());
}

ConvTranspose3dImpl::ConvTranspose3dImpl(const ConvTranspose3dOptions& options) : options(options) {
  const int64_t g = options.groups();
  constexpr const char* op = "ConvTranspose3d";
  detail::check_groups(op, options.in_channels(), options.out_channels(), g);
  const auto& k = options.kernel_size();
  weight = register_parameter(
      "weight", wick::detail::empty_for({options.in_channels(), options.out_channels() / g, k.d, k.h, k.w}, {}, op));
  if (options.bias()) bias = register_parameter("bias", wick::detail::empty_for({options.out_channels()}, {}, op));
  reset_parameters();
}

void ConvTranspose3dImpl::reset_parameters() { detail::reset_conv(weight, bias); }

Tensor ConvTranspose3dImpl::forward(const Tensor& x, const std::optional<std::vector<int64_t>>& output_size) {
  const ConvTranspose3dOptions& o = options;
  functional::Triple op = o.output_padding();
  if (output_size && x.defined() && (x.dim() == 4 || x.dim() == 5)) {
    const auto& K = o.kernel_size();
    const auto& S = o.stride();
    const auto& P = o.padding();
    const auto& D = o.dilation();
    const int64_t k[3] = {K.d, K.h, K.w}, s[3] = {S.d, S.h, S.w}, p[3] = {P.d, P.h, P.w}, d[3] = {D.d, D.h, D.w};
    const auto pad = detail::transposed_output_padding(x, *output_size, k, s, p, d, 3, "ConvTranspose3d");
    op = functional::Triple(pad[0], pad[1], pad[2]);
  }
  return functional::conv_transpose3d(x, weight, bias, o.stride(), o.padding(), op, o.groups(), o.dilation());
}

std::string ConvTranspose3dImpl::extra_repr() const {
  std::string s = std::to_string(options.in_channels()) + ", " + std::to_string(options.out_channels()) +
                  ", kernel_size=" + triple_repr(options.kernel_size()) + ", stride=" + triple_repr(options.stride());
  if (!(options.padding() == functional::Triple(0))) s += ", padding=" + triple_repr(options.padding());
  if (!(options.dilation() == functional::Triple(1))) s += ", dilation=" + triple_repr(options.dilation());
  if (!(options.output_padding() == functional::Triple(0)))
    s += ", output_padding=" + triple_repr(options.output_padding());
  if (options.groups() != 1) s += ", groups=" + std::to_string(options.groups());
  if (!bias.defined()) s += ", bias=False";
  return s;
}

}  // namespace wick::nn
