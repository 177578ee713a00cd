// Backward formulas of 2-D max and average pooling, recorded by core's ops after their forward
// (core/pool.h): max pooling's gradient goes to the window offsets the forward saved (the
// device's max_pool2d_backward entry, or the generic one), average pooling's is spread over
// each window by its divisor.
#include "autograd/function.h"
#include "autograd/hooks.h"
#include "core/pool.h"

namespace wick::autograd {

using wick::detail::Pool2dGeometry;

void record_max_pool2d(const Tensor& x, const Tensor& values, const Tensor& offsets,
                       const Pool2dGeometry& g) {
  record("MaxPool2DWithIndicesBackward0", {x}, values, {offsets},
         [g, sizes = DimVector(x.sizes())](BackwardContext& c) -> variable_list {
           return {wick::detail::max_pool2d_backward(c.grad(), c.saved(0), sizes, g)};
         });
}

void record_avg_pool2d(const Tensor& x, const Tensor& y, const Tensor& divisor, const Pool2dGeometry& g) {
  record("AvgPool2DBackward0", {x}, y, {divisor},
         [g, sizes = DimVector(x.sizes())](BackwardContext& c) -> variable_list {
           return {wick::detail::avg_pool2d_backward(c.grad(), c.saved(0), sizes, g)};
         });
}

}  // namespace wick::autograd
