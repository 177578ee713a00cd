// The host side of the cuDNN attention path: operands as the graphs read them and the outputs
// they write (docs/design.md, "The cuDNN attention path").
#include "core/cudnn_attention.h"

#include <algorithm>

#include "core/flash_attention.h"
#include "core/tensor_ops.h"
#include "wick/ops.h"

namespace wick::detail {

namespace {

// The layout of an output of an operand's shape: PyTorch's matching layout for cuDNN attention's
// output and gradients, its dense strides in the operand's stride order (core/tensor_ops.h).
void dense_like(const int64_t (&strides)[4], const int64_t (&sizes)[4], int64_t (&out)[4]) {
  const DimVector d = infer_dense_strides(IntArrayRef(sizes, 4), IntArrayRef(strides, 4));
  std::copy(d.begin(), d.end(), out);
}

// The layouts of out and the gradients, from q's, k's and v's.
void output_layouts(CudnnAttentionProblem& p) {
  const int64_t qs[4] = {p.B, p.H, p.L, p.E}, ks[4] = {p.B, p.Hkv, p.S, p.E};
  dense_like(p.q_strides, qs, p.o_strides);
  dense_like(p.q_strides, qs, p.dq_strides);
  dense_like(p.k_strides, ks, p.dk_strides);
  dense_like(p.v_strides, ks, p.dv_strides);
}

Tensor empty_as(const Tensor& like, IntArrayRef sizes, const int64_t (&strides)[4]) {
  return wick::empty_strided(sizes, IntArrayRef(strides, 4), TensorOptions(like.dtype()).device(like.device()));
}

// Whether t has these strides wherever its size is not 1.
bool has_strides(const Tensor& t, const int64_t (&strides)[4]) {
  for (int64_t d = 0; d < 4; ++d)
    if (t.size(d) != 1 && t.stride(d) != strides[d]) return false;
  return true;
}

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
  output_layouts(p);
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

// dq, dk and dv in one buffer, each with its operand's strides and as far from the others as
// its operand is, when q, k and v are views of one storage of the same sizes and strides (a
// fused qkv projection split in three, as GPT's): split's backward then joins the gradients
// without a copy (autograd/view_backward.cpp). cuDNN takes an operand's strides for its gradient
// as it takes them for the operand. False, with nothing set, otherwise.
bool grads_side_by_side(CudnnAttentionArgs& a) {
  const Tensor* ops[3] = {&a.q, &a.k, &a.v};
  int64_t lo = a.q.storage_offset(), hi = lo;
  for (const Tensor* t : ops) {
    if (t->impl()->storage().get() != a.q.impl()->storage().get() || !t->sizes().equals(a.q.sizes()) ||
        !t->strides().equals(a.q.strides()))
      return false;
    int64_t extent = 1;
    for (int64_t d = 0; d < 4; ++d) {
      if (t->size(d) == 0 || t->stride(d) < 0) return false;
      extent += (t->size(d) - 1) * t->stride(d);
    }
    lo = std::min(lo, t->storage_offset());
    hi = std::max(hi, t->storage_offset() + extent);
  }
  if (a.q.storage_offset() == a.k.storage_offset() || a.k.storage_offset() == a.v.storage_offset() ||
      a.q.storage_offset() == a.v.storage_offset())
    return false;
  for (const Tensor* t : ops)
    if ((t->storage_offset() - lo) * int64_t(element_size(a.q.dtype())) % 16 != 0) return false;
  const Tensor buffer = wick::empty({hi - lo}, TensorOptions(a.q.dtype()).device(a.q.device()));
  Tensor* grads[3] = {&a.dq, &a.dk, &a.dv};
  int64_t* strides[3] = {a.problem.dq_strides, a.problem.dk_strides, a.problem.dv_strides};
  for (int i = 0; i < 3; ++i) {
    *grads[i] = make_view(buffer, ops[i]->sizes(), ops[i]->strides(), ops[i]->storage_offset() - lo);
    for (int64_t d = 0; d < 4; ++d) strides[i][d] = ops[i]->stride(d);
  }
  return true;
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
  output_layouts(p);
  return cuda_cudnn_attention_unusable(p, true);
}

CudnnAttentionForward cudnn_attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, double scale,
                                              bool causal) {
  CudnnAttentionArgs a = operands(q, k, v, scale, causal);
  const int64_t B = q.size(0), H = q.size(1), L = q.size(2), E = q.size(3);
  a.out = empty_as(q, {B, H, L, E}, a.problem.o_strides);
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
  a.dout = dout;
  if (dout.dtype() != q.dtype() || !has_strides(dout, a.problem.o_strides) ||
      uintptr_t(dout.data_ptr()) % 16 != 0) {
    a.dout = empty_as(q, out.sizes(), a.problem.o_strides);
    a.dout.copy_(dout);
  }
  if (!grads_side_by_side(a)) {
    a.dq = empty_as(q, q.sizes(), a.problem.dq_strides);
    a.dk = empty_as(q, k.sizes(), a.problem.dk_strides);
    a.dv = empty_as(q, v.sizes(), a.problem.dv_strides);
  }
  cuda_cudnn_attention_backward(a);
  return {a.dq, a.dk, a.dv};
}

}  // namespace wick::detail
