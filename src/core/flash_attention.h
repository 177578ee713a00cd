// scaled_dot_product_attention's flash path (the CUDA kernels of KernelTable's flash entries):
// the operands' preparation, the dropout counters, and the forward and backward calls that
// src/nn/attention.cpp and its autograd node (src/autograd/attention_backward.cpp) make.
#pragma once

#include <cstdint>
#include <tuple>

#include "wick/tensor.h"

namespace wick::detail {

// What the kernels take: q [B, H, L, E], k and v [B, Hkv, S, E] with H a multiple of Hkv (query
// head h reads kv head h / (H / Hkv)), float16 or bfloat16, 8 <= E <= 128 and E a multiple of 8.
// q, k, v (and dout) have last-dim stride 1, every other stride a multiple of 8 elements and
// 16-byte aligned data.
struct FlashAttentionArgs {
  Tensor q, k, v;
  Tensor out;  // contiguous [B, H, L, E] of q's dtype
  Tensor lse;  // contiguous float32 [B, H, L]: each row's log-sum-exp of its scaled scores
  double scale = 1;
  bool causal = false;  // query i attends keys 0..i (upper-left aligned)
  // Dropout on the attention weights: element (b, h, i, j) is kept when the uniform of Philox
  // counter offset + ((b * H + h) * L + i) * ceil(S / 4) + j / 4 (key seed), word j % 4, is
  // below 1 - dropout_p (its 24 high bits over 2^24); kept ones are scaled by 1 / (1 - p).
  double dropout_p = 0;
  uint64_t seed = 0, offset = 0;
  // backward only: dout like q; dq, dk, dv contiguous of q's, k's, v's shapes and dtype;
  // dq_accum float32 zeros [B, H, L, E]; delta float32 [B, H, L] (written: rowsum(dout * out)).
  Tensor dout, dq, dk, dv, dq_accum, delta;
};

// The CUDA kernels (src/cuda/kernels/attention.cu), CUDA only like the hooks of cuda_hooks.h: a
// build without CUDA links src/no_cuda's, which raise DeviceError. forward writes out and lse;
// backward writes dq, dk, dv (and its workspaces) from dout, q, k, v, out and lse.
void cuda_flash_attention_forward(const FlashAttentionArgs& a);
void cuda_flash_attention_backward(const FlashAttentionArgs& a);

struct FlashForward {
  Tensor out;  // [B, H, L, E], contiguous
  Tensor lse;  // float32 [B, H, L]: the rows' log-sum-exp (+inf for a row that attends nothing)
  uint64_t seed = 0, offset = 0;  // dropout's Philox draw (when dropout_p > 0)
};

// t as the fused attention paths (flash, cuDNN) read it: t itself when its last dim has stride 1,
// its other strides are multiples of 8 elements and its data is 16-byte aligned, else a copy
// that is.
Tensor fused_attention_operand(const Tensor& t);
// Whether fused_attention_operand(t) is t itself (else it is a contiguous copy).
bool fused_attention_operand_in_place(const Tensor& t);

// Philox counters the dropout of one call uses: B * H * L rows of ceil(S / 4).
uint64_t flash_dropout_counters(int64_t B, int64_t H, int64_t L, int64_t S);

// q [B, H, L, E], k and v [B, Hkv, S, E] on CUDA, as FlashAttentionArgs describes them,
// except for the strides and alignment, which are made right here (a contiguous copy where not).
// Draws dropout's counters from q's device generator when dropout_p > 0.
FlashForward flash_attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, double scale, bool causal,
                                     double dropout_p);

// The gradients wrt q, k, v (their shapes, contiguous) of the forward above from dout.
std::tuple<Tensor, Tensor, Tensor> flash_attention_backward(const Tensor& dout, const Tensor& q, const Tensor& k,
                                                            const Tensor& v, const Tensor& out, const Tensor& lse,
                                                            double scale, bool causal, double dropout_p,
                                                            uint64_t seed, uint64_t offset);

}  // namespace wick::detail
