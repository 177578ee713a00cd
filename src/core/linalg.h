// What linear layers' backward formulas share with core's matrix products.
#pragma once

#include "wick/tensor.h"

namespace wick::detail {

// a @ b for matrices, and in sums the sums over k of a (which 1: a.sum(1), m values) or of b
// (which 2: b.sum(0), n values): a linear layer's weight and bias gradients. On CUDA one GEMM
// with cuBLASLt's bias-gradient epilogue where the library has it (WICK_GEMM_BIAS_GRAD=0 turns
// it off), else the GEMM and a sum. No autograd recording (backward formulas call it).
// out (optional: contiguous, m x n, a's dtype and device) receives the product, which is then
// returned; otherwise new memory.
// which 0: no sums (sums left undefined), the product alone, into out when given.
Tensor mm_with_sums(const Tensor& a, const Tensor& b, int which, Tensor& sums, const Tensor& out = Tensor());

// The gradient before a linear layer's GELU, g * gelu'(x) for the value x before it (tanh_form:
// the tanh approximation's), and in bias_grad the column sums of that gradient (the bias's
// gradient), in one pass where the device's kernel takes the problem (gelu_backward_bias:
// CUDA, 2-D g and x of one floating dtype): returns false otherwise, setting nothing, and the
// caller computes them apart. No autograd recording.
bool gelu_backward_with_bias(const Tensor& g, const Tensor& x, bool tanh_form, Tensor& grad_input,
                             Tensor& bias_grad);

}  // namespace wick::detail
