// The node of nn::functional's composed elementwise functions (elementwise_node.h).
#include "autograd/elementwise_node.h"

#include "autograd/function.h"
#include "wick/ops.h"

namespace wick::autograd {

void record_elementwise(const char* name, const Tensor& x, const Tensor& out,
                        std::function<Tensor(const Tensor&)> derivative) {
  record(name, {x}, out, {x}, [d = std::move(derivative)](BackwardContext& c) -> variable_list {
    return {c.grad() * d(c.saved(0))};
  });
}

void record_prelu(const Tensor& x, const Tensor& w, const Tensor& out) {
  record("PreluKernelBackward0", {x, w}, out, {x, w}, [](BackwardContext& c) -> variable_list {
    const Tensor &g = c.grad(), &x = c.saved(0), &w = c.saved(1);
    Tensor positive = x > 0;
    return {c.needs(0) ? g * wick::where(positive, wick::ones_like(x), w) : Tensor(),
            c.needs(1) ? sum_to(g * wick::where(positive, wick::zeros_like(x), x), w.sizes()) : Tensor()};
  });
}

}  // namespace wick::autograd
