// The host side of the flash attention path: operands as the kernels read them, the outputs and
// workspaces they write, and the dropout draw (docs/design.md, "The flash attention path").
#include "core/flash_attention.h"

#include <cstdint>

#include "core/cuda_hooks.h"
#include "core/generator.h"
#include "wick/ops.h"

namespace wick::detail {

namespace {

constexpr const char* kOp = "scaled_dot_product_attention";

// Whether the fused kernels can read t in place: last-dim stride 1, the other strides multiples of 8
// elements (16 bytes) wherever the dim has more than one index, data 16-byte aligned.
bool flash_readable(const Tensor& t) {
  if (t.size(3) > 1 && t.stride(3) != 1) return false;
  for (int64_t d = 0; d < 3; ++d)
    if (t.size(d) > 1 && t.stride(d) % 8 != 0) return false;
  return reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0;
}

}  // namespace

bool fused_attention_operand_in_place(const Tensor& t) { return t.numel() == 0 || flash_readable(t); }

Tensor fused_attention_operand(const Tensor& t) {
  if (t.numel() == 0 || flash_readable(t)) return t;
  Tensor c = t.contiguous();
  if (flash_readable(c)) return c;
  Tensor fresh = wick::empty(t.sizes(), TensorOptions(t.dtype()).device(t.device()));
  fresh.copy_(t);
  return fresh;
}

uint64_t flash_dropout_counters(int64_t B, int64_t H, int64_t L, int64_t S) {
  return uint64_t(B) * uint64_t(H) * uint64_t(L) * uint64_t((S + 3) / 4);
}

FlashForward flash_attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, double scale, bool causal,
                                     double dropout_p) {
  FlashAttentionArgs a;
  a.q = fused_attention_operand(q);
  a.k = fused_attention_operand(k);
  a.v = fused_attention_operand(v);
  const int64_t B = q.size(0), H = q.size(1), L = q.size(2), E = q.size(3), S = k.size(2);
  a.out = wick::empty({B, H, L, E}, TensorOptions(q.dtype()).device(q.device()));
  a.lse = wick::empty({B, H, L}, TensorOptions(kFloat32).device(q.device()));
  a.scale = scale;
  a.causal = causal;
  a.dropout_p = dropout_p;
  FlashForward r;
  if (dropout_p > 0 && a.out.numel() > 0) {
    cuda_check_not_capturing(q.device(), kOp, "every replay would draw the same dropout mask again");
    const PhiloxState s = next_offset(q.device(), flash_dropout_counters(B, H, L, S));
    a.seed = r.seed = s.seed;
    a.offset = r.offset = s.offset;
  }
  cuda_flash_attention_forward(a);
  r.out = a.out;
  r.lse = a.lse;
  return r;
}

std::tuple<Tensor, Tensor, Tensor> flash_attention_backward(const Tensor& dout, const Tensor& q, const Tensor& k,
                                                            const Tensor& v, const Tensor& out, const Tensor& lse,
                                                            double scale, bool causal, double dropout_p,
                                                            uint64_t seed, uint64_t offset) {
  FlashAttentionArgs a;
  a.q = fused_attention_operand(q);
  a.k = fused_attention_operand(k);
  a.v = fused_attention_operand(v);
  a.out = out;
  a.lse = lse;
  a.dout = fused_attention_operand(dout.dtype() == q.dtype() ? dout : dout.to(q.dtype()));
  a.scale = scale;
  a.causal = causal;
  a.dropout_p = dropout_p;
  a.seed = seed;
  a.offset = offset;
  const TensorOptions opts = TensorOptions(q.dtype()).device(q.device());
  const TensorOptions f32 = TensorOptions(kFloat32).device(q.device());
  a.dq = wick::empty(q.sizes(), opts);
  a.dk = wick::empty(k.sizes(), opts);
  a.dv = wick::empty(v.sizes(), opts);
  a.dq_accum = wick::zeros(q.sizes(), f32);
  a.delta = wick::empty(lse.sizes(), f32);
  cuda_flash_attention_backward(a);
  return {a.dq, a.dk, a.dv};
}

}  // namespace wick::detail
