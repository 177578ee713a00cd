// The backward of a 2-D convolution: one ConvolutionBackward0 node over (input, weight, bias),
// recorded by core's conv2d after its forward, whose formula is the device's conv2d_backward
// entry (cuDNN on CUDA where built, im2col + BLAS on the CPU, else the generic col2im + GEMM in
// src/core/conv.cpp).
//
// Under create_graph the formula computes the three gradients one by one instead, each
// recording its own node: the input gradient is linear in (g, w) and the weight gradient in
// (g, x), and the derivatives of each are a convolution (conv2d itself) and the other gradient,
// so that gradients of any order record.
#include "autograd/function.h"
#include "autograd/hooks.h"
#include "core/conv.h"

namespace wick::autograd {

namespace {

using wick::detail::Conv2dParams;

Tensor conv_weight_grad(const Tensor& g, const Tensor& x, const Tensor& w_like, const Conv2dParams& p);

// The input gradient of conv2d(x, w) for the output gradient g (x_like: a tensor of x's sizes).
Tensor conv_input_grad(const Tensor& g, const Tensor& x_like, const Tensor& w, const Conv2dParams& p) {
  Tensor gx;
  {
    NoGradGuard no_grad;
    gx = wick::detail::conv2d_backward(g, x_like, w, p, {true, false, false})[0];
  }
  if (!wick::detail::needs_grad(g, w)) return gx;
  return record("ConvolutionBackwardBackward0", {g, w}, gx, {g, x_like, w}, [p](BackwardContext& c) -> variable_list {
    const Tensor& gg = c.grad();  // the gradient of gx: of x's sizes
    return {c.needs(0) ? wick::detail::conv2d(gg, c.saved(2), Tensor(), p) : Tensor(),
            c.needs(1) ? conv_weight_grad(c.saved(0), gg, c.saved(2), p) : Tensor()};
  });
}

// The weight gradient of conv2d(x, w) for the output gradient g (w_like: a tensor of w's sizes).
Tensor conv_weight_grad(const Tensor& g, const Tensor& x, const Tensor& w_like, const Conv2dParams& p) {
  Tensor gw;
  {
    NoGradGuard no_grad;
    gw = wick::detail::conv2d_backward(g, x, w_like, p, {false, true, false})[1];
  }
  if (!wick::detail::needs_grad(g, x)) return gw;
  return record("ConvolutionBackwardBackward0", {g, x}, gw, {g, x, w_like}, [p](BackwardContext& c) -> variable_list {
    const Tensor& gg = c.grad();  // the gradient of gw: of w's sizes
    return {c.needs(0) ? wick::detail::conv2d(c.saved(1), gg, Tensor(), p) : Tensor(),
            c.needs(1) ? conv_input_grad(c.saved(0), c.saved(1), gg, p) : Tensor()};
  });
}

}  // namespace

void record_conv2d(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y,
                   const wick::detail::Conv2dParams& p) {
  record("ConvolutionBackward0", {x, w, b}, y, {x, w}, [p](BackwardContext& c) -> variable_list {
    if (creating_graph()) {
      const Tensor &g = c.grad(), x = c.saved(0), w = c.saved(1);
      return {c.needs(0) ? conv_input_grad(g, x, w, p) : Tensor(), c.needs(1) ? conv_weight_grad(g, x, w, p) : Tensor(),
              c.needs(2) ? g.sum({0, 2, 3}) : Tensor()};
    }
    auto r = wick::detail::conv2d_backward(c.grad(), c.saved(0), c.saved(1), p,
                                           {c.needs(0), c.needs(1), c.needs(2)});
    return {r[0], r[1], r[2]};
  });
}

void record_conv1d(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y,
                   const wick::detail::Conv2dParams& p) {
  record("ConvolutionBackward0", {x, w, b}, y, {x, w}, [p](BackwardContext& c) -> variable_list {
    const Tensor g = c.grad().unsqueeze(2), x = c.saved(0).unsqueeze(2), w = c.saved(1).unsqueeze(2);
    if (creating_graph()) {
      return {c.needs(0) ? conv_input_grad(g, x, w, p).squeeze(2) : Tensor(),
              c.needs(1) ? conv_weight_grad(g, x, w, p).squeeze(2) : Tensor(),
              c.needs(2) ? c.grad().sum({0, 2}) : Tensor()};
    }
    auto r = wick::detail::conv2d_backward(g, x, w, p, {c.needs(0), c.needs(1), c.needs(2)});
    return {c.needs(0) ? r[0].squeeze(2) : Tensor(), c.needs(1) ? r[1].squeeze(2) : Tensor(), r[2]};
  });
}

// The transposed convolution's node has PyTorch's name too; its formulas swap conv2d's
// forward and input-gradient kernels (core/conv.h).
void record_conv_transpose2d(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y,
                             const wick::detail::Conv2dParams& p) {
  record("ConvolutionBackward0", {x, w, b}, y, {x, w}, [p](BackwardContext& c) -> variable_list {
    auto r = wick::detail::conv_transpose2d_backward(c.grad(), c.saved(0), c.saved(1), p,
                                                     {c.needs(0), c.needs(1), c.needs(2)});
    return {r[0], r[1], r[2]};
  });
}

}  // namespace wick::autograd
