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

Tensor max_gather(const Tensor& x, const Tensor& offsets, DimVector x_sizes, const Pool2dGeometry& g);

// max_pool2d's input gradient for dy.
Tensor max_scatter(const Tensor& dy, const Tensor& offsets, DimVector x_sizes, const Pool2dGeometry& g) {
  Tensor dx;
  {
    NoGradGuard no_grad;
    dx = wick::detail::max_pool2d_backward(dy, offsets, x_sizes, g);
  }
  if (!wick::detail::needs_grad(dy)) return dx;
  return record("MaxPool2DWithIndicesBackwardBackward0", {dy}, dx, {offsets},
                [g, x_sizes](BackwardContext& c) -> variable_list {
                  return {max_gather(c.grad(), c.saved(0), x_sizes, g)};
                });
}

// Its adjoint: x's values at the offsets.
Tensor max_gather(const Tensor& x, const Tensor& offsets, DimVector x_sizes, const Pool2dGeometry& g) {
  Tensor y;
  {
    NoGradGuard no_grad;
    y = wick::detail::max_pool2d_gather(x, offsets, g);
  }
  if (!wick::detail::needs_grad(x)) return y;
  return record("MaxPoolDoubleBackwardBackward0", {x}, y, {offsets},
                [g, x_sizes](BackwardContext& c) -> variable_list {
                  return {max_scatter(c.grad(), c.saved(0), x_sizes, g)};
                });
}

Tensor avg_average(const Tensor& x, const Tensor& divisor, DimVector x_sizes, const Pool2dGeometry& g);

// avg_pool2d's input gradient for dy.
Tensor avg_spread(const Tensor& dy, const Tensor& divisor, DimVector x_sizes, const Pool2dGeometry& g) {
  Tensor dx;
  {
    NoGradGuard no_grad;
    dx = wick::detail::avg_pool2d_backward(dy, divisor, x_sizes, g);
  }
  if (!wick::detail::needs_grad(dy)) return dx;
  return record("AvgPool2DBackwardBackward0", {dy}, dx, {divisor}, [g, x_sizes](BackwardContext& c) -> variable_list {
    return {avg_average(c.grad(), c.saved(0), x_sizes, g)};
  });
}

// Its adjoint: avg_pool2d of x with the forward's divisor.
Tensor avg_average(const Tensor& x, const Tensor& divisor, DimVector x_sizes, const Pool2dGeometry& g) {
  Tensor y;
  {
    NoGradGuard no_grad;
    y = wick::detail::avg_pool2d_with_divisor(x, divisor, g);
  }
  if (!wick::detail::needs_grad(x)) return y;
  return record("AvgPool2DBackward0", {x}, y, {divisor}, [g, x_sizes](BackwardContext& c) -> variable_list {
    return {avg_spread(c.grad(), c.saved(0), x_sizes, g)};
  });
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
