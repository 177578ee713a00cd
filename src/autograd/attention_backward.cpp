// The backward nodes of scaled_dot_product_attention's fused paths (flash, cuDNN), named as
// PyTorch names them. Their formulas are the fused backward kernels, which recompute the
// attention weights from the saved log-sum-exp (and flash's dropout mask from the saved Philox
// draw) instead of storing them.
#include "autograd/function.h"
#include "autograd/hooks.h"
#include "core/cudnn_attention.h"
#include "core/flash_attention.h"

namespace wick::autograd {

void record_flash_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                            double scale, bool causal, double dropout_p, uint64_t seed, uint64_t offset) {
  record("ScaledDotProductFlashAttentionBackward0", {q, k, v}, out, {q, k, v, out, lse},
         [=](BackwardContext& c) -> variable_list {
           check_no_double_backward(c);
           auto [dq, dk, dv] = wick::detail::flash_attention_backward(c.grad(), c.saved(0), c.saved(1), c.saved(2),
                                                                      c.saved(3), c.saved(4), scale, causal,
                                                                      dropout_p, seed, offset);
           return {c.needs(0) ? dq : Tensor(), c.needs(1) ? dk : Tensor(), c.needs(2) ? dv : Tensor()};
         });
}

void record_cudnn_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                            const Tensor& stats, double scale, bool causal) {
  record("ScaledDotProductCudnnAttentionBackward0", {q, k, v}, out, {q, k, v, out, stats},
         [=](BackwardContext& c) -> variable_list {
           check_no_double_backward(c);
           auto [dq, dk, dv] = wick::detail::cudnn_attention_backward(c.grad(), c.saved(0), c.saved(1), c.saved(2),
                                                                      c.saved(3), c.saved(4), scale, causal);
           return {c.needs(0) ? dq : Tensor(), c.needs(1) ? dk : Tensor(), c.needs(2) ? dv : Tensor()};
         });
}

}  // namespace wick::autograd
