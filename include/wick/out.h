// The out= forms of torch's functions, as LibTorch spells them: add_out(out, a, b) is
// torch.add(a, b, out=out). The result is computed as the function computes it, then written
// into out: in place when out has the result's shape (cast to out's dtype, which the result
// type must be able to take, as PyTorch's "can't be cast" rule says), else out is rebound to a
// new tensor of the result's shape and out's dtype (PyTorch resizes out's own storage instead,
// which other tensors sharing it would see). As in PyTorch, out= forms do not record autograd:
// with grad mode on, an input or out that requires grad is refused. Each returns out.
#pragma once

#include <optional>
#include <vector>

#include "wick/detail/op_list.h"
#include "wick/ops.h"
#include "wick/tensor.h"

namespace wick {

namespace detail {
// out = result as described above; op names the function called (add_out ...), inputs are
// the function's tensor arguments.
Tensor& write_out(Tensor& out, const Tensor& result, const char* op, const std::vector<Tensor>& inputs);
}  // namespace detail

Tensor& add_out(Tensor& out, const Tensor& self, const Tensor& other, const Scalar& alpha = 1);
Tensor& sub_out(Tensor& out, const Tensor& self, const Tensor& other, const Scalar& alpha = 1);
Tensor& mul_out(Tensor& out, const Tensor& self, const Tensor& other);
Tensor& div_out(Tensor& out, const Tensor& self, const Tensor& other);
Tensor& pow_out(Tensor& out, const Tensor& self, const Scalar& exponent);
Tensor& pow_out(Tensor& out, const Tensor& self, const Tensor& exponent);
Tensor& matmul_out(Tensor& out, const Tensor& self, const Tensor& other);
Tensor& mm_out(Tensor& out, const Tensor& self, const Tensor& mat2);
Tensor& bmm_out(Tensor& out, const Tensor& self, const Tensor& mat2);
Tensor& addmm_out(Tensor& out, const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta = 1,
                  const Scalar& alpha = 1);
Tensor& cat_out(Tensor& out, const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor& stack_out(Tensor& out, const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor& sum_out(Tensor& out, const Tensor& self, IntArrayRef dim, bool keepdim = false,
                std::optional<Dtype> dtype = std::nullopt);
Tensor& mean_out(Tensor& out, const Tensor& self, IntArrayRef dim, bool keepdim = false,
                 std::optional<Dtype> dtype = std::nullopt);
Tensor& clamp_out(Tensor& out, const Tensor& self, const std::optional<Scalar>& min,
                  const std::optional<Scalar>& max = std::nullopt);
// neg_out, abs_out, exp_out, log_out, sqrt_out, sin_out, tanh_out, sigmoid_out ...: every
// elementwise function of one tensor (wick/detail/op_list.h).
#define WICK_OUT_UNARY_Methods(name) Tensor& name##_out(Tensor& out, const Tensor& self);
#define WICK_OUT_UNARY_Function(name) WICK_OUT_UNARY_Methods(name)
#define WICK_OUT_UNARY_Manual(name)
#define WICK_X(Name, name, kind, autocast, form) WICK_OUT_UNARY_##form(name)
WICK_UNARY_OPS(WICK_X)
#undef WICK_X

}  // namespace wick
