/* GELU's derivative times the incoming gradient, in the arithmetic type M (float or double):
 * the exact form, Phi(x) + x phi(x), and the tanh approximation's. The elementwise backward
 * (unary.cu) and the linear layer's backward with its bias gradient (gelu_bias_backward.cu)
 * share them, so that both round the same values.
 */
#pragma once

#include <cuda_runtime.h>

#include "cuda/kernels/device_math.cuh"

namespace wick::detail::gpu {

// g * d/dx [x Phi(x)] = g (Phi(x) + x phi(x)).
template <class M>
__device__ __forceinline__ M gelu_grad(M g, M x) {
  const M cdf = M(0.5) * (M(1) + m_erf(x * M(0.70710678118654752440)));
  const M pdf = m_exp(M(-0.5) * x * x) * M(0.39894228040143267794);  // 1 / sqrt(2 pi)
  return g * (cdf + x * pdf);
}

// g * d/dx [x/2 (1 + tanh(k (x + a x^3)))], k = sqrt(2 / pi), a = 0.044715.
template <class M>
__device__ __forceinline__ M gelu_tanh_grad(M g, M x) {
  const M k = M(0.79788456080286535588), a = M(0.044715);
  const M x2 = x * x, th = m_tanh(k * (x + a * x2 * x));
  return g * (M(0.5) * (M(1) + th) + M(0.5) * x * (M(1) - th * th) * k * (M(1) + M(3) * a * x2));
}

}  // namespace wick::detail::gpu
