// The per-element update of the multi-tensor optimizer steps (KernelTable's sgd_step and
// adam_step), shared by the CPU loop and the CUDA kernel so that both compute the same thing.
// The operations and their order are those of the per-parameter ops in src/optim: each product
// that those ops store is rounded on its own (mul), and each "a + alpha * b" is computed as the
// binary kernels do (axpy: on the GPU a fused multiply-add, as nvcc contracts the binary kernel,
// on the CPU a product then a sum), so float32/float64 results equal the per-parameter path.
// M is the type the arithmetic runs in (opmath_t of the parameter's dtype).
#pragma once

#include <cmath>

#include "core/op_math.h"

namespace wick::detail {

#if defined(__CUDA_ARCH__)
__device__ __forceinline__ float optim_mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double optim_mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float optim_axpy(float a, float al, float b) { return fmaf(al, b, a); }
__device__ __forceinline__ double optim_axpy(double a, double al, double b) { return fma(al, b, a); }
#else
template <class M>
inline M optim_mul(M a, M b) {
  return a * b;
}
template <class M>
inline M optim_axpy(M a, M al, M b) {
  return a + al * b;
}
#endif

// SgdStepArgs with its scalars in M, as the per-parameter ops cast them.
template <class M>
struct SgdScalars {
  M weight_decay, momentum, one_minus_dampening, neg_lr;
  bool has_weight_decay, has_momentum, nesterov, maximize, init_buf;
};

// The scalars of an SgdStepArgs (core/kernel_table.h), for both backends' kernels.
template <class M, class Args>
SgdScalars<M> sgd_scalars(const Args& a) {
  return {M(a.weight_decay), M(a.momentum), M(1 - a.dampening), M(-a.lr), a.weight_decay != 0, a.momentum != 0,
          a.nesterov,        a.maximize,    a.init_buf};
}

// One element: p, g and (with momentum) buf, in M; writes p and buf.
template <class M>
WICK_HOST_DEVICE inline void sgd_update(const SgdScalars<M>& s, M& p, M g, M& buf) {
  M d = s.maximize ? -g : g;
  if (s.has_weight_decay) d = optim_axpy(d, s.weight_decay, p);
  if (s.has_momentum) {
    if (s.init_buf) buf = d;
    else buf = optim_axpy(optim_mul(buf, s.momentum), s.one_minus_dampening, d);
    d = s.nesterov ? optim_axpy(d, s.momentum, buf) : buf;
  }
  p = optim_axpy(p, s.neg_lr, d);
}

template <class M>
struct AdamScalars {
  M weight_decay, decay, beta1, one_minus_beta1, beta2, one_minus_beta2, bias_correction2_sqrt, eps,
      neg_step_size;
  bool has_weight_decay, decoupled, amsgrad, maximize;
};

// The scalars of an AdamStepArgs (core/kernel_table.h), for both backends' kernels.
template <class M, class Args>
AdamScalars<M> adam_scalars(const Args& a) {
  return {M(a.weight_decay),
          M(1 - a.lr * a.weight_decay),
          M(a.beta1),
          M(1 - a.beta1),
          M(a.beta2),
          M(1 - a.beta2),
          M(a.bias_correction2_sqrt),
          M(a.eps),
          M(-(a.lr / a.bias_correction1)),
          a.weight_decay != 0,
          a.decoupled,
          a.amsgrad,
          a.maximize};
}

// One element: p, g, m (exp_avg), v (exp_avg_sq) and vmax (amsgrad), in M.
template <class M>
WICK_HOST_DEVICE inline void adam_update(const AdamScalars<M>& s, M& p, M g, M& m, M& v, M& vmax) {
  if (s.maximize) g = -g;
  if (s.has_weight_decay) {
    if (s.decoupled) p = optim_mul(p, s.decay);
    else g = optim_axpy(g, s.weight_decay, p);
  }
  m = optim_axpy(optim_mul(m, s.beta1), s.one_minus_beta1, g);
  v = optim_axpy(optim_mul(v, s.beta2), s.one_minus_beta2, optim_mul(g, g));
  M vv = v;
  if (s.amsgrad) {
    vmax = vmax > v ? vmax : v;
    vv = vmax;
  }
#if defined(__CUDA_ARCH__)
  const M root = sqrt(vv);
#else
  const M root = std::sqrt(vv);
#endif
  const M denom = root / s.bias_correction2_sqrt + s.eps;
  p = optim_axpy(p, s.neg_step_size, m / denom);
}

}  // namespace wick::detail
