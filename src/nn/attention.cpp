// scaled_dot_product_attention and the choice of its backend. The math path is composed of
// differentiable ops (matmul, where, softmax or its one-kernel causal form, dropout), so
// autograd records it piece by piece and it runs on every device and dtype. A fused path joins
// by answering `usable` for its backend and computing in `run`: the selection, the forcing by
// sdpa_kernel and the reasons in "No available kernel" already go through them
// (docs/design.md, "Attention and the transformer layers").
#include "wick/nn/attention.h"

#include <atomic>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <ostream>
#include <string>

#include "autograd/hooks.h"
#include "core/as_op.h"
#include "core/backend_settings.h"
#include "core/checks.h"
#include "core/cudnn_attention.h"
#include "core/flash_attention.h"
#include "core/softmax.h"
#include "wick/autograd.h"
#include "wick/nn/functional.h"
#include "wick/ops.h"

namespace wick::nn::attention {

namespace {

constexpr SDPBackend kBackends[] = {SDPBackend::Math, SDPBackend::FlashAttention, SDPBackend::EfficientAttention,
                                    SDPBackend::CuDNNAttention};
constexpr unsigned bit(SDPBackend b) { return 1u << unsigned(b); }
constexpr unsigned kAllBackends = 0xFu;
// Set while an sdpa_kernel scope names the backends: the flash path is taken only then (or
// with WICK_NEW_CUDA_KERNELS=1) until its kernels have passed their tests on a GPU (docs/design.md,
// "The flash path").
constexpr unsigned kChosen = 0x10u;

// Process-wide, as PyTorch's torch.backends.cuda flags.
std::atomic<unsigned> g_enabled{kAllBackends};
thread_local std::optional<SDPBackend> t_last;

}  // namespace

const char* to_string(SDPBackend backend) {
  switch (backend) {
    case SDPBackend::Math: return "MATH";
    case SDPBackend::FlashAttention: return "FLASH_ATTENTION";
    case SDPBackend::EfficientAttention: return "EFFICIENT_ATTENTION";
    case SDPBackend::CuDNNAttention: return "CUDNN_ATTENTION";
  }
  return "UNKNOWN";
}

std::ostream& operator<<(std::ostream& os, SDPBackend backend) { return os << to_string(backend); }

sdpa_kernel::sdpa_kernel(const std::vector<SDPBackend>& backends) {
  unsigned mask = 0;
  for (SDPBackend b : backends) {
    WICK_CHECK(unsigned(b) < 4, ValueError, "sdpa_kernel", "invalid backend (", int(b), ")");
    mask |= bit(b);
  }
  previous_ = g_enabled.exchange(mask | kChosen);
}

sdpa_kernel::~sdpa_kernel() { g_enabled.store(previous_); }

std::vector<SDPBackend> enabled_sdpa_backends() {
  const unsigned mask = g_enabled.load();
  std::vector<SDPBackend> out;
  for (SDPBackend b : kBackends)
    if (mask & bit(b)) out.push_back(b);
  return out;
}

std::optional<SDPBackend> last_sdpa_backend() { return t_last; }

namespace {

constexpr const char* kOp = "scaled_dot_product_attention";

struct Params {
  const Tensor& q;
  const Tensor& k;
  const Tensor& v;
  const Tensor& mask;
  double dropout_p;
  bool is_causal;
  double scale;
  // enable_gqa: k's and v's heads each serve this many query heads in a row (1: none)
  int64_t gqa_k = 1, gqa_v = 1;
};

// What both fused paths (flash, cuDNN) need of the inputs, or nullptr when they have it: 16-bit
// floats, no mask, 4-D operands of one batch, key and value of one head count dividing the
// query's, value's head dim equal to query's, head dims 8..128 in multiples of 8 (PyTorch's
// fused kernels have limits of the same kind).
const char* fused_unusable(const Params& p) {
  if (p.q.dtype() != kFloat16 && p.q.dtype() != kBFloat16) return "needs float16 or bfloat16 inputs";
  if (p.mask.defined()) return "does not take an attn_mask";
  if (p.q.dim() != 4 || p.k.dim() != 4 || p.v.dim() != 4) return "needs 4-D query, key and value";
  if (p.k.size(0) != p.q.size(0) || p.v.size(0) != p.q.size(0)) return "needs one batch size for query, key and value";
  if (p.k.size(1) != p.v.size(1) || p.k.size(1) == 0 || p.q.size(1) % p.k.size(1) != 0)
    return "needs key and value of one number of heads, dividing the query's";
  const int64_t e = p.q.size(3);
  if (p.v.size(3) != e) return "needs value's head dim equal to query's";
  if (e < 8 || e > 128 || e % 8 != 0) return "needs a head dim between 8 and 128 and a multiple of 8";
  return nullptr;
}

// Why the flash path cannot take these inputs, or nullptr when it can.
const char* flash_unusable(const Params& p) {
  if (const char* no = fused_unusable(p)) return no;
  // the kernels' grids: batch * heads blocks in x, 64-row tiles of a sequence in y
  constexpr int64_t kMaxSeq = int64_t(65535) * 64;
  if (p.q.size(2) > kMaxSeq || p.k.size(2) > kMaxSeq || p.q.size(0) * p.q.size(1) > INT32_MAX)
    return "needs sequences of at most 65535 * 64 and batch * heads below 2^31";
  if (!p.q.is_cuda()) return "needs CUDA tensors";
  return nullptr;
}

// Why cuDNN's fused attention cannot take these inputs, or "" when it can: the limits wick's graphs
// have, then cuDNN's own answer for the problem.
std::string cudnn_unusable(const Params& p) {
  if (const char* no = fused_unusable(p)) return no;
  if (p.dropout_p > 0) return "does not take dropout (the flash and math paths do)";
  if (p.q.numel() == 0 || p.k.numel() == 0) return "needs non-empty inputs";
  if (p.q.size(2) > INT32_MAX || p.k.size(2) > INT32_MAX) return "needs sequences shorter than 2^31";
  if (!p.q.is_cuda()) return "needs CUDA tensors";
  const bool grad = wick::detail::needs_grad(p.q, p.k, p.v);
  // GQA with a gradient: the heads repeated first (cudnn below), as cuDNN's grouped backward
  // gave wrong key and value gradients (docs/design.md, "The cuDNN attention path").
  if (grad && p.gqa_k > 1) return wick::detail::cudnn_attention_unusable_repeated(p.q, p.k, p.v, p.is_causal);
  return wick::detail::cudnn_attention_unusable(p.q, p.k, p.v, p.is_causal, grad);
}

// Whether backend b can compute these inputs; why not, when it cannot.
bool usable(SDPBackend b, const Params& p, std::string& why) {
  switch (b) {
    case SDPBackend::Math: return true;
    case SDPBackend::FlashAttention:
      if (const char* no = flash_unusable(p)) {
        why = no;
        return false;
      }
      return true;
    case SDPBackend::EfficientAttention: why = "memory-efficient attention is not built into wick yet"; return false;
    case SDPBackend::CuDNNAttention: why = cudnn_unusable(p); return why.empty();
  }
  return false;
}


// Whether the default selection takes cuDNN for these lengths: each new problem costs a plan
// (a graph built, its engine compiled at run time), so by default only lengths that are
// multiples of 64 take it, as training's fixed block sizes are. A generation loop whose length
// grows one token at a time then builds at most one plan per 64 tokens, and decoding with one
// query runs on the other paths. An sdpa_kernel scope naming cuDNN takes it for any length.
bool cudnn_default_lengths(const Params& p) {
  return p.q.size(-2) % 64 == 0 && p.k.size(-2) % 64 == 0;
}

// The fused backends first, as PyTorch prefers them, cuDNN's before wick's own flash kernels
// (the faster on the benchmark rows: docs/design.md, "The cuDNN attention path"); math last.
SDPBackend select(const Params& p) {
  const unsigned enabled = g_enabled.load();
  std::string reasons;
  for (SDPBackend b : {SDPBackend::CuDNNAttention, SDPBackend::FlashAttention, SDPBackend::EfficientAttention,
                       SDPBackend::Math}) {
    std::string why;
    if (!(enabled & bit(b))) why = "disabled (sdpa_kernel)";
    else if (b == SDPBackend::FlashAttention && !(enabled & kChosen) && !wick::detail::new_cuda_kernels())
      why = "not taken by default yet (ask for it with sdpa_kernel, or set WICK_NEW_CUDA_KERNELS=1)";
    else if (b == SDPBackend::CuDNNAttention && !(enabled & kChosen) && !cudnn_default_lengths(p))
      why = "not taken by default for sequence lengths that are not multiples of 64 (each new length builds a "
            "cuDNN plan; ask for it with sdpa_kernel)";
    else if (usable(b, p, why)) return b;
    reasons += std::string(reasons.empty() ? "" : "; ") + to_string(b) + ": " + why;
  }
  wick::detail::raise<Error>(kOp, "No available kernel. Aborting execution. (", reasons, ")");
}

// softmax over the last dim whose rows of only -inf give zeros, not NaN (PyTorch's math path,
// _safe_softmax): such rows go through softmax as zeros, so no NaN reaches the gradient either.
Tensor safe_softmax(const Tensor& scores) {
  Tensor dead = std::get<0>(scores.detach().max(-1, true)) == -INFINITY;
  return wick::where(dead, 0.0, wick::softmax(wick::where(dead, 0.0, scores), -1));
}

// k or v with each of its heads (dim -3) repeated r times in a row (repeat_interleave).
Tensor repeat_heads(const Tensor& t, int64_t r) {
  if (r == 1) return t;
  DimVector sizes(t.sizes());
  sizes.insert(sizes.end() - 2, r);
  DimVector out(t.sizes());
  out[out.size() - 3] *= r;
  return t.unsqueeze(-3).expand(sizes).reshape(out);
}

Tensor math(const Params& p) {
  const Tensor k = repeat_heads(p.k, p.gqa_k), v = repeat_heads(p.v, p.gqa_v);
  // q and k each scaled by sqrt(scale), as PyTorch's math path (no overflow in 16-bit types).
  const double s = std::sqrt(p.scale);
  Tensor scores = wick::matmul(p.q * s, k.transpose(-2, -1) * s);
  Tensor attn;
  if (p.is_causal) {
    // Upper-left aligned: query i attends keys 0..i. One kernel masks and normalizes (no
    // mask tensor, no filled copy of the scores); is_causal excludes attn_mask.
    attn = wick::detail::causal_softmax(scores);
  } else if (p.mask.defined()) {
    if (p.mask.dtype() == kBool) scores = wick::where(p.mask, scores, -INFINITY);
    else scores = scores + (p.mask.dtype() == scores.dtype() ? p.mask : p.mask.to(scores.dtype()));
    attn = safe_softmax(scores);
  } else {
    attn = wick::softmax(scores, -1);
  }
  if (p.dropout_p > 0) attn = functional::dropout(attn, p.dropout_p, true);
  return wick::matmul(attn, v);
}

// The flash path: one kernel each way, k and v read per kv head (no repeat for GQA), and one
// node (ScaledDotProductFlashAttentionBackward0) whose backward recomputes the weights.
Tensor flash(const Params& p) {
  const bool grad = wick::detail::needs_grad(p.q, p.k, p.v);
  wick::detail::FlashForward f = wick::detail::forward_once(grad, [&] {
    return wick::detail::flash_attention_forward(p.q, p.k, p.v, p.scale, p.is_causal, p.dropout_p);
  });
  if (grad) [[unlikely]]
    wick::autograd::record_flash_attention(p.q, p.k, p.v, f.out, f.lse, p.scale, p.is_causal, p.dropout_p, f.seed,
                                           f.offset);
  return f.out;
}

// The cuDNN path: one graph each way, and one node (ScaledDotProductCudnnAttentionBackward0)
// whose backward graph recomputes the weights from the saved statistics. GQA: the forward alone
// reads each key/value head for its group; with a gradient, k and v are repeated to the query's
// heads first (recorded, so their gradients are summed over each group by the repeat's backward).
Tensor cudnn(const Params& p) {
  const bool grad = wick::detail::needs_grad(p.q, p.k, p.v);
  const Tensor k = grad ? repeat_heads(p.k, p.gqa_k) : p.k, v = grad ? repeat_heads(p.v, p.gqa_v) : p.v;
  wick::detail::CudnnAttentionForward f = wick::detail::forward_once(grad, [&] {
    return wick::detail::cudnn_attention_forward(p.q, k, v, p.scale, p.is_causal);
  });
  if (grad) [[unlikely]]
    wick::autograd::record_cudnn_attention(p.q, k, v, f.out, f.stats, p.scale, p.is_causal);
  return f.out;
}

Tensor run(SDPBackend b, const Params& p) {
  switch (b) {
    case SDPBackend::Math: return math(p);
    case SDPBackend::FlashAttention: return flash(p);
    case SDPBackend::CuDNNAttention: return cudnn(p);
    default: wick::detail::raise<Error>(kOp, "backend ", to_string(b), " has no implementation");
  }
}

}  // namespace

}  // namespace wick::nn::attention

namespace wick::nn::functional {

Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& attn_mask, double dropout_p, bool is_causal,
                                    std::optional<double> scale, bool enable_gqa) {
  using namespace wick::nn::attention;
  return wick::detail::as_op(kOp, [&]() -> Tensor {
    wick::detail::check_defined(query, kOp, "query");
    wick::detail::check_defined(key, kOp, "key");
    wick::detail::check_defined(value, kOp, "value");
    WICK_CHECK(query.dtype() == key.dtype() && query.dtype() == value.dtype(), TypeError, kOp,
               "Expected query, key, and value to have the same dtype, but got query.dtype: ", query.dtype(),
               " key.dtype: ", key.dtype(), " and value.dtype: ", value.dtype(), " instead.");
    WICK_CHECK(query.device() == key.device() && query.device() == value.device(), DeviceError, kOp,
               "Expected query, key, and value to have the same device type, but got query.device: ",
               query.device(), " key.device: ", key.device(), " and value.device: ", value.device(), " instead.");
    WICK_CHECK(query.dim() >= 2 && key.dim() >= 2 && value.dim() >= 2, ValueError, kOp,
               "Expected query, key, and value to all be  at least 2 dimensional, but got query.dim: ",
               query.dim(), " key.dim: ", key.dim(), " and value.dim: ", value.dim(), " instead.");
    WICK_CHECK(is_floating_point(query.dtype()), TypeError, kOp,
               "Expected query, key, and value to be floating point tensors, but got ", query.dtype());
    WICK_CHECK(dropout_p >= 0 && dropout_p <= 1, ValueError, kOp,
               "dropout probability has to be between 0 and 1, but got ", dropout_p);
    WICK_CHECK(query.size(-1) == key.size(-1), ValueError, kOp,
               "Expected query and key to have the same embedding size (last dim), but got query: ",
               query.sizes(), " and key: ", key.sizes());
    WICK_CHECK(key.size(-2) == value.size(-2), ValueError, kOp,
               "Expected key and value to have the same sequence length (dim -2), but got key: ", key.sizes(),
               " and value: ", value.sizes());
    if (attn_mask.defined()) {
      WICK_CHECK(!is_causal, ValueError, kOp, "Explicit attn_mask should not be set when is_causal=True");
      WICK_CHECK(attn_mask.dtype() == kBool || attn_mask.dtype() == kFloat32 || attn_mask.dtype() == query.dtype(),
                 TypeError, kOp,
                 "Expected attn_mask dtype to be bool or float or to match query dtype, but got attn_mask.dtype: ",
                 attn_mask.dtype(), " and  query.dtype: ", query.dtype(), " instead.");
      WICK_CHECK(attn_mask.device() == query.device(), DeviceError, kOp,
                 "Expected attn_mask to be on the device of query (", query.device(), "), but got ",
                 attn_mask.device());
    }
    int64_t gqa_k = 1, gqa_v = 1;
    const bool heads = query.dim() >= 3 && key.dim() >= 3 && value.dim() >= 3;
    if (heads) {
      const int64_t hq = query.size(-3), hk = key.size(-3), hv = value.size(-3);
      if (enable_gqa) {
        WICK_CHECK(hq % hk == 0 && hq % hv == 0, ValueError, kOp,
                   "Number of heads in key and value must divide the number of heads in query (query: ", hq,
                   ", key: ", hk, ", value: ", hv, ")");
        gqa_k = hq / hk;
        gqa_v = hq / hv;
      } else {
        WICK_CHECK((hk == hq || hk == 1) && (hv == hq || hv == 1), ValueError, kOp,
                   "query has ", hq, " heads (dim -3) but key ", hk, " and value ", hv,
                   ": they must match (or broadcast); pass enable_gqa=true for grouped-query attention");
      }
    }
    // The mask must broadcast to the scores [..., L, S] without growing them (PyTorch adds it in place).
    if (attn_mask.defined()) {
      DimVector qb(query.sizes()), kb(key.sizes());
      if (heads) kb[kb.size() - 3] *= gqa_k;
      qb.pop_back();
      qb.pop_back();
      kb.pop_back();
      kb.pop_back();
      DimVector scores = wick::detail::broadcast_shapes(qb, kb, kOp);
      scores.push_back(query.size(-2));
      scores.push_back(key.size(-2));
      bool fits = attn_mask.dim() <= int64_t(scores.size());
      for (int64_t i = 1; fits && i <= attn_mask.dim(); ++i) {
        const int64_t m = attn_mask.size(-i), s = scores[scores.size() - size_t(i)];
        fits = m == s || m == 1;
      }
      WICK_CHECK(fits, ValueError, kOp, "attn_mask of shape ", attn_mask.sizes(),
                 " does not broadcast to the attention scores' shape ", IntArrayRef(scores));
    }
    const double sc = scale ? *scale : 1.0 / std::sqrt(double(query.size(-1)));
    Params p{query, key, value, attn_mask, dropout_p, is_causal, sc, gqa_k, gqa_v};
    const SDPBackend b = select(p);
    t_last = b;
    return run(b, p);
  });
}

}  // namespace wick::nn::functional
