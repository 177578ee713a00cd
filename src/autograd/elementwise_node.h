// The node of an elementwise function of nn::functional made of other ops (elu, softplus,
// hardtanh, ...): one node named as PyTorch's whose formula is grad * derivative(input).
#pragma once

#include <functional>

#include "wick/tensor.h"

namespace wick::autograd {

// Records out = f(x) as the node name; derivative(x) is made of ops, so that the formula
// records itself under create_graph (gradients of any order).
void record_elementwise(const char* name, const Tensor& x, const Tensor& out,
                        std::function<Tensor(const Tensor&)> derivative);

// out = prelu(x, w): x where x > 0, else w x, w broadcast against x (PreluKernelBackward0).
void record_prelu(const Tensor& x, const Tensor& w, const Tensor& out);

}  // namespace wick::autograd
