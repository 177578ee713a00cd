// The host side of the cuDNN attention path: operands as the graphs read them and the outputs
// they write (docs/design.md, "The cuDNN attention path").
#include "core/cudnn_attention.h"

#include "core/flash_attention.h"
#include "wick/ops.h"

namespace wick::detail {

namespace {

// The problem of q, k, v once fused_attention_operand has made them readable: their own strides
// where they are, a contiguous copy's where not (the copy made then is contiguous).
CudnnAttentionProblem problem_of(const Tensor& q, const Tensor& k, const Tensor& v, bool causal) {
  CudnnAttentionProblem p;
  p.B = q.size(0);
  p.H = q.size(1);
  p.Hkv = k.size(1);
  p.L = q.size(2);
  p.S = k.size(2);
  p.E = q.size(3);
  p.dtype = q.dtype();
  p.device = q.device().index();
  p.causal = causal;
  auto strides = [](const Tensor& t, int64_t* out) {
    const bool own = fused_attention_operand_in_place(t);
    int64_t packed = 1;
    for (int64_t d = 3; d >= 0; --d) {
      out[d] = own ? t.stride(d) : packed;
      packed *= t.size(d);
    }
  };
  strides(q, p.q_strides);
  strides(k, p.k_strides);
  strides(v, p.v_strides);
  return p;
}

CudnnAttentionArgs operands(const Tensor& q, const Tensor& k, const Tensor& v, double scale, bool causal) {
  CudnnAttentionArgs a;
  a.problem = problem_of(q, k, v, causal);
  a.q = fused_attention_operand(q);
  a.k = fused_attention_operand(k);
  a.v = fused_attention_operand(v);
  a.scale = float(scale);
  return a;
}

}  // namespace

std::string cudnn_attention_unusable(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                                     bool with_backward) {
  return cuda_cudnn_attention_unusable(problem_of(q, k, v, causal), with_backward);
}

std::string cudnn_attention_unusable_repeated(const Tensor& q, const Tensor& k, const Tensor& v, bool causal) {
  CudnnAttentionProblem p = problem_of(q, k, v, causal);
  p.Hkv = p.H;
  for (int64_t* st : {p.k_strides, p.v_strides}) {  // contiguous [B, H, S, E]
    st[3] = 1;
    st[2] = p.E;
    st[1] = p.S * p.E;
    st[0] = p.H * p.S * p.E;
  }
  return cuda_cudnn_attention_unusable(p, true);
}

CudnnAttentionForward cudnn_attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, double scale,
                                              bool causal) {
  CudnnAttentionArgs a = operands(q, k, v, scale, causal);
  const int64_t B = q.size(0), H = q.size(1), L = q.size(2), E = q.size(3);
  a.out = wick::empty({B, H, L, E}, TensorOptions(q.dtype()).device(q.device()));
  a.stats = wick::empty({B, H, L, 1}, TensorOptions(kFloat32).device(q.device()));
  cuda_cudnn_attention_forward(a);
  return {a.out, a.stats};
}

std::tuple<Tensor, Tensor, Tensor> cudnn_attention_backward(const Tensor& dout, const Tensor& q, const Tensor& k,
                                                            const Tensor& v, const Tensor& out, const Tensor& stats,
                                                            double scale, bool causal) {
  CudnnAttentionArgs a = operands(q, k, v, scale, causal);
  a.out = out;
  a.stats = stats;
  a.dout = (dout.dtype() == q.dtype() ? dout : dout.to(q.dtype())).contiguous();
  const TensorOptions opts = TensorOptions(q.dtype()).device(q.device());
  a.dq = wick::empty(q.sizes(), opts);
  a.dk = wick::empty(k.sizes(), opts);
  a.dv = wick::empty(v.sizes(), opts);
  cuda_cudnn_attention_backward(a);
  return {a.dq, a.dk, a.dv};
}

}  // namespace wick::detail
