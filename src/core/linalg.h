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
Tensor mm_with_sums(const Tensor& a, const Tensor& b, int which, Tensor& sums, const Tensor& out = Tensor());

// (a @ b) times GELU's derivative (tanh form) at pre (a.size(0) x b.size(1), contiguous) into
// out, and its sums over rows into sums: through linear(gelu(pre), w) backward, a = the output's
// gradient and b = w give pre's gradient and the bias gradient of the layer that made pre. One
// GEMM with cuBLASLt's DGELU_BGRAD epilogue; false, with nothing written, where there is none
// (another device, dtype or layout): the caller composes. No autograd recording.
bool mm_dgelu_with_sums(const Tensor& a, const Tensor& b, const Tensor& pre, Tensor& out, Tensor& sums);

}  // namespace wick::detail
