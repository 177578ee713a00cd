// scaled_dot_product_attention's cuDNN path: cuDNN's fused flash attention, reached through its
// graph (backend) API as one operation graph each way (docs/design.md, "The cuDNN attention
// path"). src/nn/attention.cpp asks cudnn_attention_unusable, runs the forward once and records
// ScaledDotProductCudnnAttentionBackward0 (autograd/hooks.h), whose backward is the graph below.
#pragma once

#include <string>
#include <tuple>

#include "wick/tensor.h"

namespace wick::detail {

// What the graphs take: q [B, H, L, E], k and v [B, Hkv, S, E] (H a multiple of Hkv: query head
// h reads kv head h / (H / Hkv)) on one CUDA device, float16 or bfloat16, E a multiple of 8 up to
// 128, every operand's last dim of stride 1, its other strides multiples of 8 elements and its
// data 16-byte aligned (made so by a copy where not).
struct CudnnAttentionForward {
  Tensor out;    // [B, H, L, E], laid out as q is (CudnnAttentionProblem)
  Tensor stats;  // float32 [B, H, L, 1]: each row's log-sum-exp of its scaled scores
};

// Why cuDNN's fused attention cannot take these operands, or "" when it can: the build, the
// device (compute capability 8.0 or newer), and cuDNN's own answer for this problem (the graphs
// are built, and kept, here: the backward one too when with_backward). Shapes and dtypes are
// checked by the caller (attention.cpp's usable).
std::string cudnn_attention_unusable(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                                     bool with_backward);
// The same for k and v with each head repeated (query heads / key heads) times in a row into a
// contiguous copy, forward and backward: the problem GQA with a gradient becomes (attention.cpp
// repeats the heads, and their gradients sum back through the repeat).
std::string cudnn_attention_unusable_repeated(const Tensor& q, const Tensor& k, const Tensor& v, bool causal);

// out = softmax(q k^T scale [causal: query i attends keys 0..i]) v, and the rows' statistics.
CudnnAttentionForward cudnn_attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, double scale,
                                              bool causal);

// The gradients wrt q, k, v (of their shapes and dtype, laid out as the problem says) of the
// forward above from dout.
std::tuple<Tensor, Tensor, Tensor> cudnn_attention_backward(const Tensor& dout, const Tensor& q, const Tensor& k,
                                                            const Tensor& v, const Tensor& out, const Tensor& stats,
                                                            double scale, bool causal);

// The CUDA side (src/cuda/cudnn_attention.cpp; a build without CUDA or cuDNN answers "wick was
// built without cuDNN" and raises).
//
// A problem as the graphs see it: sizes, the operands' strides (last dim stride 1), dtype,
// device, causal. The graphs are built once per problem and kept.
// out (and dout) and dq, dk, dv are laid out as their operand is: its dims in its stride order,
// packed (PyTorch's matching layout). For q a [B, H, L, E] view of a [B, L, 3, H, E] projection,
// out is [B, L, H, E] in memory: out.transpose(1, 2) is contiguous, and the gradient that
// arrives for it is already in out's layout.
struct CudnnAttentionProblem {
  int64_t B = 0, H = 0, Hkv = 0, L = 0, S = 0, E = 0;
  int64_t q_strides[4] = {}, k_strides[4] = {}, v_strides[4] = {};
  int64_t o_strides[4] = {}, dq_strides[4] = {}, dk_strides[4] = {}, dv_strides[4] = {};
  Dtype dtype = kFloat16;
  int device = 0;
  bool causal = false;
};
// Operands already as the graphs take them (their strides the problem's); outputs allocated.
struct CudnnAttentionArgs {
  CudnnAttentionProblem problem;
  Tensor q, k, v, out, stats;
  Tensor dout, dq, dk, dv;  // backward only: dout in out's layout, dq, dk, dv in theirs
  float scale = 1;
};
std::string cuda_cudnn_attention_unusable(const CudnnAttentionProblem& p, bool with_backward);
void cuda_cudnn_attention_forward(const CudnnAttentionArgs& a);
void cuda_cudnn_attention_backward(const CudnnAttentionArgs& a);

}  // namespace wick::detail
