// Backward formulas of 2-D max and average pooling, recorded by core's ops after their forward
// (core/pool.h): max pooling's gradient goes to the window offsets the forward saved (the
// device's max_pool2d_backward entry, or the generic one), average pooling's is spread over
// each window by its divisor.
//
// Both gradients are linear in the output gradient alone. Under create_graph each records a
// node whose formula is the map's adjoint (the values at the offsets, the windows' averages),
// which records the same way in turn: gradients of any order.
#include "autograd/function.h"
#include "autograd/hooks.h"
#include "core/pool.h"

namespace wick::autograd {

using wick::detail::Pool2dGeometry;

namespace {

// in's image under a linear map (kernel, run once with grad off), recorded when in requires
// grad as node name, whose formula is the map's adjoint applied to the output gradient.
template <class Kernel, class Adjoint>
Tensor linear_map(const char* name, const Tensor& in, const Tensor& saved, Kernel kernel, Adjoint adjoint) {
  Tensor out;
  {
    NoGradGuard no_grad;
    out = kernel();
  }
  if (!wick::detail::needs_grad(in)) return out;
  return record(name, {in}, out, {saved},
                [adjoint](BackwardContext& c) -> variable_list { return {adjoint(c.grad(), c.saved(0))}; });
}

Tensor max_gather(const Tensor& x, const Tensor& offsets, DimVector x_sizes, const Pool2dGeometry& g);
Tensor avg_average(const Tensor& x, const Tensor& divisor, DimVector x_sizes, const Pool2dGeometry& g);

// max_pool2d's input gradient for dy.
Tensor max_scatter(const Tensor& dy, const Tensor& offsets, DimVector x_sizes, const Pool2dGeometry& g) {
  return linear_map(
      "MaxPool2DWithIndicesBackwardBackward0", dy, offsets,
      [&] { return wick::detail::max_pool2d_backward(dy, offsets, x_sizes, g); },
      [g, x_sizes](const Tensor& grad, const Tensor& o) { return max_gather(grad, o, x_sizes, g); });
}

// Its adjoint: x's values at the offsets.
Tensor max_gather(const Tensor& x, const Tensor& offsets, DimVector x_sizes, const Pool2dGeometry& g) {
  return linear_map(
      "MaxPoolDoubleBackwardBackward0", x, offsets, [&] { return wick::detail::max_pool2d_gather(x, offsets, g); },
      [g, x_sizes](const Tensor& grad, const Tensor& o) { return max_scatter(grad, o, x_sizes, g); });
}

// avg_pool2d's input gradient for dy.
Tensor avg_spread(const Tensor& dy, const Tensor& divisor, DimVector x_sizes, const Pool2dGeometry& g) {
  return linear_map(
      "AvgPool2DBackwardBackward0", dy, divisor,
      [&] { return wick::detail::avg_pool2d_backward(dy, divisor, x_sizes, g); },
      [g, x_sizes](const Tensor& grad, const Tensor& d) { return avg_average(grad, d, x_sizes, g); });
}

// Its adjoint: avg_pool2d of x with the forward's divisor.
Tensor avg_average(const Tensor& x, const Tensor& divisor, DimVector x_sizes, const Pool2dGeometry& g) {
  return linear_map(
      "AvgPool2DBackward0", x, divisor, [&] { return wick::detail::avg_pool2d_with_divisor(x, divisor, g); },
      [g, x_sizes](const Tensor& grad, const Tensor& d) { return avg_spread(grad, d, x_sizes, g); });
}

}  // namespace

void record_max_pool2d(const Tensor& x, const Tensor& values, const Tensor& offsets,
                       const Pool2dGeometry& g) {
  record("MaxPool2DWithIndicesBackward0", {x}, values, {offsets},
         [g, sizes = DimVector(x.sizes())](BackwardContext& c) -> variable_list {
           if (creating_graph()) return {max_scatter(c.grad(), c.saved(0), sizes, g)};
           return {wick::detail::max_pool2d_backward(c.grad(), c.saved(0), sizes, g)};
         });
}

void record_avg_pool2d(const Tensor& x, const Tensor& y, const Tensor& divisor, const Pool2dGeometry& g) {
  record("AvgPool2DBackward0", {x}, y, {divisor},
         [g, sizes = DimVector(x.sizes())](BackwardContext& c) -> variable_list {
           if (creating_graph()) return {avg_spread(c.grad(), c.saved(0), sizes, g)};
           return {wick::detail::avg_pool2d_backward(c.grad(), c.saved(0), sizes, g)};
         });
}

}  // namespace wick::autograd
