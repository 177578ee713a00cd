// 2-D convolution: the op (its forward computed once, then recorded as ConvolutionBackward0 when
// an input requires grad), and the generic implementation of the kernel table's conv2d entries.
//
// The generic implementation: im2col as a strided view of the padded input (no kernel:
// [N, C, kh, kw, OH, OW] with strides picking each window element), one copy to make it a
// matrix, then GEMM. Backward: dW = dY @ cols^T, dX = col2im(W^T @ dY), where col2im adds each
// of the kh * kw column blocks into a strided view of the padded input gradient.
//
// It runs on any device that has copy, GEMM and add kernels: CUDA's entries when the build has
// no cuDNN, and the CPU's for the dtypes BLAS lacks. Its cost is the cols matrix
// (C * kh * kw * OH * OW per image, for the whole batch); cuDNN avoids it on CUDA
// (src/cuda/cudnn_conv.cpp fills CUDA's entries then, and hands back here what cuDNN refuses:
// integer dtypes, sizes past its 32-bit counts), and the CPU's float32/float64 kernel
// (src/cpu/conv.cpp) keeps one image's cols per thread.
#include "core/as_op.h"
#include "core/conv.h"

#include "autograd/hooks.h"
#include "core/autocast.h"
#include "core/checks.h"
#include "core/tensor_ops.h"
#include "wick/ops.h"

namespace wick::detail {

namespace {

// x zero-padded by (ph, pw), or x itself.
Tensor pad(const Tensor& x, int64_t ph, int64_t pw) {
  if (ph == 0 && pw == 0) return x;
  Tensor out = wick::zeros({x.size(0), x.size(1), x.size(2) + 2 * ph, x.size(3) + 2 * pw}, x.options());
  out.narrow(2, ph, x.size(2)).narrow(3, pw, x.size(3)).copy_(x);
  return out;
}

// The [N, C, kh, kw, OH, OW] window view of a padded input.
Tensor windows(const Tensor& xp, int64_t kh, int64_t kw, int64_t oh, int64_t ow, const Conv2dParams& p) {
  const int64_t sn = xp.stride(0), sc = xp.stride(1), sh = xp.stride(2), sw = xp.stride(3);
  return make_view(xp, {xp.size(0), xp.size(1), kh, kw, oh, ow},
                   {sn, sc, sh * p.dilation[0], sw * p.dilation[1], sh * p.stride[0], sw * p.stride[1]},
                   xp.storage_offset());
}

struct Geometry {
  int64_t n, c, h, w, o, kh, kw, oh, ow, g, cg, og;
};

Geometry geometry(const Tensor& x, const Tensor& w, const Conv2dParams& p) {
  Geometry s;
  s.n = x.size(0), s.c = x.size(1), s.h = x.size(2), s.w = x.size(3);
  s.o = w.size(0), s.kh = w.size(2), s.kw = w.size(3);
  s.oh = conv_out_size(s.h, s.kh, p.stride[0], p.padding[0], p.dilation[0]);
  s.ow = conv_out_size(s.w, s.kw, p.stride[1], p.padding[1], p.dilation[1]);
  s.g = p.groups, s.cg = s.c / s.g, s.og = s.o / s.g;
  return s;
}

// cols of group gi: [N, cg * kh * kw, OH * OW], contiguous.
Tensor group_cols(const Tensor& win, const Geometry& s, int64_t gi) {
  return win.narrow(1, gi * s.cg, s.cg).reshape({s.n, s.cg * s.kh * s.kw, s.oh * s.ow});
}

}  // namespace

Tensor generic_conv2d_forward(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dParams& p) {
  const Geometry s = geometry(x, w, p);
  Tensor win = windows(pad(x, p.padding[0], p.padding[1]), s.kh, s.kw, s.oh, s.ow, p);
  Tensor y = wick::empty({s.n, s.o, s.oh * s.ow}, x.options());
  for (int64_t gi = 0; gi < s.g; ++gi) {
    Tensor wg = w.narrow(0, gi * s.og, s.og).reshape({s.og, s.cg * s.kh * s.kw});
    y.narrow(1, gi * s.og, s.og).copy_(wick::matmul(wg, group_cols(win, s, gi)));
  }
  y = y.view({s.n, s.o, s.oh, s.ow});
  if (b.defined()) y.add_(b.view({1, s.o, 1, 1}));
  return y;
}

std::array<Tensor, 3> generic_conv2d_backward(const Tensor& dy, const Tensor& x, const Tensor& w,
                                              const Conv2dParams& p, std::array<bool, 3> needs) {
  const Geometry s = geometry(x, w, p);
  std::array<Tensor, 3> r;
  Tensor dy3 = dy.reshape({s.n, s.o, s.oh * s.ow});
  if (needs[2]) r[2] = dy.sum({0, 2, 3});
  if (needs[1]) {
    Tensor win = windows(pad(x, p.padding[0], p.padding[1]), s.kh, s.kw, s.oh, s.ow, p);
    Tensor dw = wick::empty({s.o, s.cg * s.kh * s.kw}, w.options());
    for (int64_t gi = 0; gi < s.g; ++gi) {
      // Sum over images of dY[n] @ cols[n]^T as one GEMM over [og, N * L] x [N * L, cg k k].
      Tensor dyg = dy3.narrow(1, gi * s.og, s.og).permute({1, 0, 2}).reshape({s.og, s.n * s.oh * s.ow});
      Tensor cols =
          group_cols(win, s, gi).permute({1, 0, 2}).reshape({s.cg * s.kh * s.kw, s.n * s.oh * s.ow});
      dw.narrow(0, gi * s.og, s.og).copy_(wick::mm(dyg, cols.t()));
    }
    r[1] = dw.view(w.sizes());
  }
  if (needs[0]) {
    Tensor dxp = wick::zeros({s.n, s.c, s.h + 2 * p.padding[0], s.w + 2 * p.padding[1]}, x.options());
    Tensor dwin = windows(dxp, s.kh, s.kw, s.oh, s.ow, p);
    for (int64_t gi = 0; gi < s.g; ++gi) {
      Tensor wg = w.narrow(0, gi * s.og, s.og).reshape({s.og, s.cg * s.kh * s.kw});
      Tensor dcols =
          wick::matmul(wg.t(), dy3.narrow(1, gi * s.og, s.og)).view({s.n, s.cg, s.kh, s.kw, s.oh, s.ow});
      Tensor dwin_g = dwin.narrow(1, gi * s.cg, s.cg);
      // Windows overlap, so each kernel offset is added separately (no two writes collide).
      for (int64_t i = 0; i < s.kh; ++i)
        for (int64_t j = 0; j < s.kw; ++j)
          dwin_g.select(2, i).select(2, j).add_(dcols.select(2, i).select(2, j));
    }
    r[0] = dxp.narrow(2, p.padding[0], s.h).narrow(3, p.padding[1], s.w);
  }
  return r;
}

Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dParams& p) {
  // The geometry first: the output-size arithmetic divides by the stride.
  WICK_CHECK(p.stride[0] > 0 && p.stride[1] > 0, ValueError, "conv2d", "non-positive stride is not supported");
  WICK_CHECK(p.dilation[0] > 0 && p.dilation[1] > 0, ValueError, "conv2d", "dilation should be greater than zero");
  WICK_CHECK(p.padding[0] >= 0 && p.padding[1] >= 0, ValueError, "conv2d", "negative padding is not supported");
  WICK_CHECK(p.groups > 0, ValueError, "conv2d", "non-positive groups is not supported");
  WICK_CHECK(w.dim() != 4 || (w.size(2) > 0 && w.size(3) > 0), ValueError, "conv2d",
             "kernel size should be greater than zero, but got kH: ", w.size(2), " kW: ", w.size(3));
  if (autocast::active()) [[unlikely]]
    return autocast::run(
        autocast::Policy::Lower, autocast::Policy::Lower, "conv2d",
        [&](const Tensor& i, const Tensor& k, const Tensor& c) { return conv2d(i, k, c, p); }, x, w, b);
  WICK_CHECK(x.dim() == 4, ValueError, "conv2d", "Expected 4D input to conv2d, but got input of size: ",
             x.sizes());
  WICK_CHECK(w.dim() == 4, ValueError, "conv2d", "weight must be 4-D [out, in / groups, kh, kw], got ",
             w.sizes());
  WICK_CHECK(p.groups > 0 && w.size(0) % p.groups == 0, ValueError, "conv2d",
             "out_channels must be divisible by groups");
  WICK_CHECK(x.size(1) == w.size(1) * p.groups, ValueError, "conv2d", "Given groups=", p.groups,
             ", weight of size ", w.sizes(), ", expected input", x.sizes(), " to have ", w.size(1) * p.groups,
             " channels, but got ", x.size(1), " channels instead");
  check_same_device(w, x.device(), "conv2d", "weight");
  if (b.defined()) check_same_device(b, x.device(), "conv2d", "bias");
  WICK_CHECK(!b.defined() || (b.dim() == 1 && b.size(0) == w.size(0)), ValueError, "conv2d",
             "Given weight of size ", w.sizes(), ", expected bias to be 1-dimensional with ", w.size(0),
             " elements, but got bias of size ", b.sizes(), " instead");
  WICK_CHECK(w.dtype() == x.dtype(), TypeError, "conv2d", "Input type (", x.dtype(), ") and weight type (",
             w.dtype(), ") should be the same");
  const int64_t oh = conv_out_size(x.size(2), w.size(2), p.stride[0], p.padding[0], p.dilation[0]);
  const int64_t ow = conv_out_size(x.size(3), w.size(3), p.stride[1], p.padding[1], p.dilation[1]);
  WICK_CHECK(oh > 0 && ow > 0, ValueError, "conv2d", "Calculated output size: (", oh, "x", ow,
             "). Output size is too small");
  auto run = kernel<&KernelTable::conv2d_forward>(x.device(), "conv2d");
  const bool grad = needs_grad(x, w, b);
  Tensor y = forward_once(grad, [&] { return run(x, w, b, p); });
  if (grad) [[unlikely]] autograd::record_conv2d(x, w, b, y, p);
  return y;
}

Tensor conv1d(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dParams& p) {
  if (autocast::active()) [[unlikely]]
    return autocast::run(
        autocast::Policy::Lower, autocast::Policy::Lower, "conv1d",
        [&](const Tensor& i, const Tensor& k, const Tensor& c) { return conv1d(i, k, c, p); }, x, w, b);
  const bool grad = needs_grad(x, w, b);
  Tensor y = forward_once(grad, [&] {
    return as_op("conv1d", [&] { return conv2d(x.unsqueeze(2), w.unsqueeze(2), b, p).squeeze(2); });
  });
  if (grad) [[unlikely]] autograd::record_conv1d(x, w, b, y, p);
  return y;
}

std::array<Tensor, 3> conv2d_backward(const Tensor& dy, const Tensor& x, const Tensor& w,
                                      const Conv2dParams& p, std::array<bool, 3> needs) {
  return kernel<&KernelTable::conv2d_backward>(x.device(), "conv2d_backward")(dy, x, w, p, needs);
}

namespace {

// x grown with zeros at the bottom and right to [N, C, eh, ew], or x itself.
Tensor grow(const Tensor& x, int64_t eh, int64_t ew) {
  if (eh == x.size(2) && ew == x.size(3)) return x;
  Tensor out = wick::zeros({x.size(0), x.size(1), eh, ew}, x.options());
  out.narrow(2, 0, x.size(2)).narrow(3, 0, x.size(3)).copy_(x);
  return out;
}

// Where conv2d over an input of (h, w) puts its output: (H, W) of the transposed
// convolution's input, or more when an output padding reaches a whole stride (it may where the
// dilation exceeds the stride); the extra rows and columns meet zeros.
std::array<int64_t, 2> conv_rows(int64_t h, int64_t w, const Tensor& k, const Conv2dParams& p) {
  return {conv_out_size(h, k.size(2), p.stride[0], p.padding[0], p.dilation[0]),
          conv_out_size(w, k.size(3), p.stride[1], p.padding[1], p.dilation[1])};
}

}  // namespace

Tensor conv_transpose2d(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dParams& p,
                        std::array<int64_t, 2> op) {
  const char* name = "conv_transpose2d";
  WICK_CHECK(p.stride[0] > 0 && p.stride[1] > 0, ValueError, name, "non-positive stride is not supported");
  WICK_CHECK(p.dilation[0] > 0 && p.dilation[1] > 0, ValueError, name, "dilation should be greater than zero");
  WICK_CHECK(p.padding[0] >= 0 && p.padding[1] >= 0, ValueError, name, "negative padding is not supported");
  WICK_CHECK(op[0] >= 0 && op[1] >= 0, ValueError, name, "negative output_padding is not supported");
  WICK_CHECK(p.groups > 0, ValueError, name, "non-positive groups is not supported");
  WICK_CHECK(w.dim() != 4 || (w.size(2) > 0 && w.size(3) > 0), ValueError, name,
             "kernel size should be greater than zero, but got kH: ", w.size(2), " kW: ", w.size(3));
  if (autocast::active()) [[unlikely]]
    return autocast::run(
        autocast::Policy::Lower, autocast::Policy::Lower, name,
        [&](const Tensor& i, const Tensor& k, const Tensor& c) { return conv_transpose2d(i, k, c, p, op); }, x,
        w, b);
  WICK_CHECK(x.dim() == 4, ValueError, name, "Expected 4D input to conv_transpose2d, but got input of size: ",
             x.sizes());
  WICK_CHECK(w.dim() == 4, ValueError, name, "weight must be 4-D [in, out / groups, kh, kw], got ", w.sizes());
  WICK_CHECK(w.size(0) % p.groups == 0, ValueError, name, "Given groups=", p.groups,
             ", expected weight to be divisible by ", p.groups, " at dimension 0, but got weight of size ",
             w.sizes(), " instead");
  WICK_CHECK(x.size(1) == w.size(0), ValueError, name, "Given transposed=1, weight of size ", w.sizes(),
             ", expected input", x.sizes(), " to have ", w.size(0), " channels, but got ", x.size(1),
             " channels instead");
  check_same_device(w, x.device(), name, "weight");
  if (b.defined()) check_same_device(b, x.device(), name, "bias");
  const int64_t cout = w.size(1) * p.groups;
  WICK_CHECK(!b.defined() || (b.dim() == 1 && b.size(0) == cout), ValueError, name,
             "Given transposed=1, weight of size ", w.sizes(), ", expected bias to be 1-dimensional with ", cout,
             " elements, but got bias of size ", b.sizes(), " instead");
  WICK_CHECK(w.dtype() == x.dtype(), TypeError, name, "Input type (", x.dtype(), ") and weight type (",
             w.dtype(), ") should be the same");
  WICK_CHECK((op[0] < p.stride[0] || op[0] < p.dilation[0]) && (op[1] < p.stride[1] || op[1] < p.dilation[1]),
             ValueError, name, "output padding must be smaller than either stride or dilation, but got "
             "output_padding_height: ", op[0], " output_padding_width: ", op[1], " stride_height: ", p.stride[0],
             " stride_width: ", p.stride[1], " dilation_height: ", p.dilation[0], " dilation_width: ",
             p.dilation[1]);
  const int64_t h = x.size(2), wd = x.size(3);
  const int64_t oh = (h - 1) * p.stride[0] - 2 * p.padding[0] + p.dilation[0] * (w.size(2) - 1) + op[0] + 1;
  const int64_t ow = (wd - 1) * p.stride[1] - 2 * p.padding[1] + p.dilation[1] * (w.size(3) - 1) + op[1] + 1;
  WICK_CHECK(oh > 0 && ow > 0, ValueError, name, "Given input size per channel: (", h, " x ", wd,
             "). Calculated output size per channel: (", oh, " x ", ow, "). Output size is too small");
  auto run = kernel<&KernelTable::conv2d_backward>(x.device(), name);
  const bool grad = needs_grad(x, w, b);
  Tensor y = forward_once(grad, [&] {
    // conv2d's input gradient only reads its input's shape, dtype and device.
    const Tensor shape = wick::empty({x.size(0), cout, oh, ow}, x.options());
    const auto rows = conv_rows(oh, ow, w, p);
    Tensor out = run(grow(x, rows[0], rows[1]), shape, w, p, {true, false, false})[0];
    if (b.defined()) out.add_(b.view({1, cout, 1, 1}));
    return out;
  });
  if (grad) [[unlikely]] autograd::record_conv_transpose2d(x, w, b, y, p);
  return y;
}

std::array<Tensor, 3> conv_transpose2d_backward(const Tensor& dy, const Tensor& x, const Tensor& w,
                                                const Conv2dParams& p, std::array<bool, 3> needs) {
  std::array<Tensor, 3> r;
  if (needs[2]) r[2] = dy.sum({0, 2, 3});
  if (needs[0]) {
    Tensor dx = kernel<&KernelTable::conv2d_forward>(x.device(), "conv_transpose2d_backward")(dy, w, {}, p);
    if (dx.size(2) != x.size(2) || dx.size(3) != x.size(3)) dx = dx.narrow(2, 0, x.size(2)).narrow(3, 0, x.size(3));
    r[0] = dx;
  }
  if (needs[1]) {
    const auto rows = conv_rows(dy.size(2), dy.size(3), w, p);
    r[1] = kernel<&KernelTable::conv2d_backward>(x.device(), "conv_transpose2d_backward")(
        grow(x, rows[0], rows[1]), dy, w, p, {false, true, false})[1];
  }
  return r;
}

}  // namespace wick::detail
