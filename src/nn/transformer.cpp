// MultiheadAttention and the transformer layers, as torch.nn's: the same parameters under the
// same names, the same masks (bool: true is masked out; float: added), the same order of
// projections, softmax, dropout and residuals. Written with differentiable ops and
// scaled_dot_product_attention, so autograd and every device come with them.
#include "wick/nn/transformer.h"

#include <cmath>

#include "core/as_op.h"
#include "core/checks.h"
#include "wick/autograd.h"
#include "wick/nn/attention.h"
#include "wick/nn/functional.h"
#include "wick/nn/init.h"
#include "wick/ops.h"

namespace wick::nn {

namespace F = functional;

namespace {

constexpr const char* kMha = "MultiheadAttention";

// PyTorch's _canonical_mask: a bool mask becomes a float one of dtype, -inf where true.
Tensor canonical_mask(const Tensor& mask, const char* name, Dtype dtype, const char* op) {
  if (!mask.defined()) return mask;
  if (mask.dtype() == kBool) return wick::zeros_like(mask, TensorOptions(dtype)).masked_fill(mask, -INFINITY);
  WICK_CHECK(is_floating_point(mask.dtype()), TypeError, op, "only bool and floating types of ", name,
             " are supported");
  return mask;
}

TransformerActivation activation_of(const std::string& name, const TransformerActivation& fn, const char* op) {
  if (fn) return fn;
  if (name == "relu") return [](const Tensor& x) { return F::relu(x); };
  if (name == "gelu") return [](const Tensor& x) { return F::gelu(x); };
  wick::detail::raise<ValueError>(op, "activation should be relu/gelu, not ", name);
}

// A copy of layer: the same class and options, the same parameter values, device and dtype.
template <class Holder>
std::shared_ptr<Module> clone_layer(const Holder& layer) {
  std::shared_ptr<Module> copy = layer->replicate();
  auto params = layer->parameters();
  if (!params.empty()) copy->to(params[0].device(), params[0].dtype());
  copy->load_state_dict(layer->state_dict());
  copy->train(layer->is_training());
  return copy;
}

}  // namespace

// ---- MultiheadAttention

MultiheadAttentionImpl::MultiheadAttentionImpl(const MultiheadAttentionOptions& options)
    : Module("MultiheadAttention"), options(options) {
  const int64_t e = options.embed_dim(), h = options.num_heads();
  WICK_CHECK(e > 0 && h > 0, ValueError, kMha, "embed_dim and num_heads must be greater than 0, got embed_dim=", e,
             " and num_heads=", h, " instead");
  WICK_CHECK(e % h == 0, ValueError, kMha, "embed_dim must be divisible by num_heads");
  kdim = options.kdim().value_or(e);
  vdim = options.vdim().value_or(e);
  // PyTorch takes 0 (empty projections) and fails creating a [embed_dim, -1] weight below 0.
  WICK_CHECK(kdim >= 0 && vdim >= 0, ValueError, kMha, "kdim and vdim must not be negative, got kdim=", kdim,
             " and vdim=", vdim);
  head_dim = e / h;
  const bool same = kdim == e && vdim == e;
  auto empty = [](IntArrayRef s) { return wick::zeros(s); };
  if (same) {
    in_proj_weight = register_parameter("in_proj_weight", empty({3 * e, e}));
    register_parameter("q_proj_weight", Tensor());
    register_parameter("k_proj_weight", Tensor());
    register_parameter("v_proj_weight", Tensor());
  } else {
    q_proj_weight = register_parameter("q_proj_weight", empty({e, e}));
    k_proj_weight = register_parameter("k_proj_weight", empty({e, kdim}));
    v_proj_weight = register_parameter("v_proj_weight", empty({e, vdim}));
    register_parameter("in_proj_weight", Tensor());
  }
  if (options.bias()) in_proj_bias = register_parameter("in_proj_bias", empty({3 * e}));
  else register_parameter("in_proj_bias", Tensor());
  if (options.add_bias_kv()) {
    bias_k = register_parameter("bias_k", empty({1, 1, e}));
    bias_v = register_parameter("bias_v", empty({1, 1, e}));
  }
  out_proj = register_module("out_proj", Linear(LinearOptions(e, e).bias(options.bias())));
  reset_parameters();
}

void MultiheadAttentionImpl::reset_parameters() {
  if (in_proj_weight.defined()) init::xavier_uniform_(in_proj_weight);
  else {
    init::xavier_uniform_(q_proj_weight);
    init::xavier_uniform_(k_proj_weight);
    init::xavier_uniform_(v_proj_weight);
  }
  if (in_proj_bias.defined()) {
    init::zeros_(in_proj_bias);
    init::zeros_(out_proj->bias);
  }
  if (bias_k.defined()) {
    init::xavier_normal_(bias_k);
    init::xavier_normal_(bias_v);
  }
}

std::tuple<Tensor, Tensor> MultiheadAttentionImpl::forward(const Tensor& query_in, const Tensor& key_in,
                                                           const Tensor& value_in, const Tensor& key_padding_mask,
                                                           bool need_weights, const Tensor& attn_mask_in,
                                                           bool average_attn_weights, bool is_causal) {
  return wick::detail::as_op(kMha, [&]() -> std::tuple<Tensor, Tensor> {
    wick::detail::check_defined(query_in, kMha, "query");
    wick::detail::check_defined(key_in, kMha, "key");
    wick::detail::check_defined(value_in, kMha, "value");
    const int64_t qd = query_in.dim();
    WICK_CHECK(qd == 2 || qd == 3, ValueError, kMha, "query should be unbatched 2D or batched 3D tensor but received ",
               qd, "-D query tensor");
    const bool batched = qd == 3;
    WICK_CHECK(key_in.dim() == qd && value_in.dim() == qd, ValueError, kMha, "For ", batched ? "batched" : "unbatched",
               " (", qd, "-D) `query`, expected `key` and `value` to be ", qd, "-D but found ", key_in.dim(),
               "-D and ", value_in.dim(), "-D tensors respectively");
    WICK_CHECK(!key_padding_mask.defined() || key_padding_mask.dim() == qd - 1, ValueError, kMha, "For ",
               batched ? "batched" : "unbatched", " (", qd, "-D) `query`, expected `key_padding_mask` to be `None` or ",
               qd - 1, "-D but found ", key_padding_mask.dim(), "-D tensor instead");
    WICK_CHECK(!attn_mask_in.defined() || attn_mask_in.dim() == 2 || attn_mask_in.dim() == 3, ValueError, kMha,
               "attn_mask's dimension ", attn_mask_in.dim(), " is not supported");
    Tensor query = query_in, key = key_in, value = value_in, kpm = key_padding_mask;
    if (options.batch_first() && batched) {
      query = query.transpose(1, 0);
      key = key.transpose(1, 0);
      value = value.transpose(1, 0);
    }
    if (!batched) {
      query = query.unsqueeze(1);
      key = key.unsqueeze(1);
      value = value.unsqueeze(1);
      if (kpm.defined()) kpm = kpm.unsqueeze(0);
    }
    const int64_t L = query.size(0), bsz = query.size(1), e = query.size(2), h = options.num_heads();
    WICK_CHECK(e == options.embed_dim(), ValueError, kMha, "was expecting embedding dimension of ",
               options.embed_dim(), ", but got ", e);
    const bool separate = !in_proj_weight.defined();
    if (separate)
      WICK_CHECK(key.size(0) == value.size(0) && key.size(1) == value.size(1), ValueError, kMha,
                 "key's sequence and batch dims ", IntArrayRef({key.size(0), key.size(1)}),
                 " do not match value's ", IntArrayRef({value.size(0), value.size(1)}));
    else
      WICK_CHECK(key.sizes().equals(value.sizes()), ValueError, kMha, "key shape ", key.sizes(),
                 " does not match value shape ", value.sizes());
    kpm = canonical_mask(kpm, "key_padding_mask", query.dtype(), kMha);
    Tensor attn_mask;
    if (is_causal) {
      WICK_CHECK(attn_mask_in.defined(), ValueError, kMha,
                 "Need attn_mask if specifying the is_causal hint. You may use the Transformer module method "
                 "`generate_square_subsequent_mask` to create this mask.");
      // Without a padding mask or weights, the hint goes to attention as is_causal.
      if (kpm.defined() || need_weights) attn_mask = canonical_mask(attn_mask_in, "attn_mask", query.dtype(), kMha);
    } else {
      attn_mask = canonical_mask(attn_mask_in, "attn_mask", query.dtype(), kMha);
    }
    if (kpm.defined()) is_causal = false;

    // Input projections.
    Tensor bq, bk, bv;
    if (in_proj_bias.defined()) {
      auto b = in_proj_bias.chunk(3);
      bq = b[0], bk = b[1], bv = b[2];
    }
    Tensor q, k, v;
    if (!separate) {
      auto w = in_proj_weight.chunk(3);
      q = F::linear(query, w[0], bq);
      k = F::linear(key, w[1], bk);
      v = F::linear(value, w[2], bv);
    } else {
      q = F::linear(query, q_proj_weight, bq);
      k = F::linear(key, k_proj_weight, bk);
      v = F::linear(value, v_proj_weight, bv);
    }
    if (attn_mask.defined()) {
      if (attn_mask.dim() == 2) {
        WICK_CHECK(attn_mask.size(0) == L && attn_mask.size(1) == key.size(0), ValueError, kMha,
                   "The shape of the 2D attn_mask is ", attn_mask.sizes(), ", but should be ",
                   IntArrayRef({L, key.size(0)}), ".");
        attn_mask = attn_mask.unsqueeze(0);
      } else {
        WICK_CHECK(attn_mask.size(0) == bsz * h && attn_mask.size(1) == L && attn_mask.size(2) == key.size(0),
                   ValueError, kMha, "The shape of the 3D attn_mask is ", attn_mask.sizes(), ", but should be ",
                   IntArrayRef({bsz * h, L, key.size(0)}), ".");
      }
    }
    const int64_t hd = head_dim;
    int64_t S = key.size(0);
    // add_bias_kv, then add_zero_attn: one more key and value each, and a mask column of zeros
    // (the extra key attends), as PyTorch's multi_head_attention_forward.
    auto pad_masks = [&] {
      if (attn_mask.defined()) attn_mask = F::pad(attn_mask, {0, 1});
      if (kpm.defined()) kpm = F::pad(kpm, {0, 1});
      ++S;
    };
    if (bias_k.defined()) {
      k = wick::cat({k, bias_k.expand({1, bsz, e})});
      v = wick::cat({v, bias_v.expand({1, bsz, e})});
      pad_masks();
    }
    q = q.reshape({L, bsz * h, hd}).transpose(0, 1);
    k = k.reshape({S, bsz * h, hd}).transpose(0, 1);
    v = v.reshape({S, bsz * h, hd}).transpose(0, 1);
    if (options.add_zero_attn()) {
      k = wick::cat({k, wick::zeros({bsz * h, 1, hd}, k.options())}, 1);
      v = wick::cat({v, wick::zeros({bsz * h, 1, hd}, v.options())}, 1);
      pad_masks();
    }
    if (kpm.defined()) {
      WICK_CHECK(kpm.dim() == 2 && kpm.size(0) == bsz && kpm.size(1) == S, ValueError, kMha,
                 "expecting key_padding_mask shape of ", IntArrayRef({bsz, S}), ", but got ", kpm.sizes());
      kpm = kpm.view({bsz, 1, 1, S}).expand({bsz, h, 1, S}).reshape({bsz * h, 1, S});
      attn_mask = attn_mask.defined() ? attn_mask + kpm : kpm;
    }
    const double p = is_training() ? options.dropout() : 0.0;
    Tensor out, weights;
    if (need_weights) {
      // Scores, softmax and weights made here, as PyTorch's need_weights path (a row that
      // attends nothing gives NaN there).
      Tensor scores = wick::matmul(q * std::sqrt(1.0 / double(hd)), k.transpose(-2, -1));
      if (attn_mask.defined()) scores = scores + attn_mask;
      weights = F::softmax(scores, -1);
      if (p > 0) weights = F::dropout(weights, p, true);
      out = wick::matmul(weights, v).transpose(0, 1).contiguous().view({L * bsz, e});
      out = out_proj(out).view({L, bsz, e});
      weights = weights.view({bsz, h, L, S});
      if (average_attn_weights) weights = weights.mean({1});
      if (!batched) weights = weights.squeeze(0);
    } else {
      if (attn_mask.defined()) {
        if (attn_mask.size(0) == 1 && attn_mask.dim() == 3) attn_mask = attn_mask.unsqueeze(0);
        else attn_mask = attn_mask.view({bsz, h, -1, S});
      }
      q = q.view({bsz, h, L, hd});
      k = k.view({bsz, h, S, hd});
      v = v.view({bsz, h, S, hd});
      out = F::scaled_dot_product_attention(q, k, v, attn_mask, p, is_causal);
      out = out.permute({2, 0, 1, 3}).contiguous().view({bsz * L, e});
      out = out_proj(out).view({L, bsz, e});
    }
    if (!batched) out = out.squeeze(1);
    else if (options.batch_first()) out = out.transpose(1, 0);
    return {out, weights};
  });
}

// ---- encoder and decoder layers

namespace {
LayerNorm make_norm(const TransformerEncoderLayerOptions& o) {
  return LayerNorm(LayerNormOptions({o.d_model()}).eps(o.layer_norm_eps()).bias(o.bias()));
}
MultiheadAttention make_attention(const TransformerEncoderLayerOptions& o) {
  return MultiheadAttention(
      MultiheadAttentionOptions(o.d_model(), o.nhead()).dropout(o.dropout()).bias(o.bias()).batch_first(o.batch_first()));
}
}  // namespace

TransformerEncoderLayerImpl::TransformerEncoderLayerImpl(const TransformerEncoderLayerOptions& options)
    : options(options) {
  const auto& o = options;
  activation_of(o.activation(), o.activation_fn(), "TransformerEncoderLayer");
  self_attn = register_module("self_attn", make_attention(o));
  linear1 = register_module("linear1", Linear(LinearOptions(o.d_model(), o.dim_feedforward()).bias(o.bias())));
  dropout = register_module("dropout", Dropout(o.dropout()));
  linear2 = register_module("linear2", Linear(LinearOptions(o.dim_feedforward(), o.d_model()).bias(o.bias())));
  norm1 = register_module("norm1", make_norm(o));
  norm2 = register_module("norm2", make_norm(o));
  dropout1 = register_module("dropout1", Dropout(o.dropout()));
  dropout2 = register_module("dropout2", Dropout(o.dropout()));
}

Tensor TransformerEncoderLayerImpl::forward(const Tensor& src, const Tensor& src_mask,
                                            const Tensor& src_key_padding_mask, bool is_causal) {
  const auto act = activation_of(options.activation(), options.activation_fn(), "TransformerEncoderLayer");
  auto sa = [&](const Tensor& x) {
    return dropout1(std::get<0>(self_attn(x, x, x, src_key_padding_mask, false, src_mask, true, is_causal)));
  };
  auto ff = [&](const Tensor& x) { return dropout2(linear2(dropout(act(linear1(x))))); };
  Tensor x = src;
  if (options.norm_first()) {
    x = x + sa(norm1(x));
    x = x + ff(norm2(x));
  } else {
    x = norm1(x + sa(x));
    x = norm2(x + ff(x));
  }
  return x;
}

TransformerDecoderLayerImpl::TransformerDecoderLayerImpl(const TransformerDecoderLayerOptions& options)
    : options(options) {
  const auto& o = options;
  activation_of(o.activation(), o.activation_fn(), "TransformerDecoderLayer");
  self_attn = register_module("self_attn", make_attention(o));
  multihead_attn = register_module("multihead_attn", make_attention(o));
  linear1 = register_module("linear1", Linear(LinearOptions(o.d_model(), o.dim_feedforward()).bias(o.bias())));
  dropout = register_module("dropout", Dropout(o.dropout()));
  linear2 = register_module("linear2", Linear(LinearOptions(o.dim_feedforward(), o.d_model()).bias(o.bias())));
  norm1 = register_module("norm1", make_norm(o));
  norm2 = register_module("norm2", make_norm(o));
  norm3 = register_module("norm3", make_norm(o));
  dropout1 = register_module("dropout1", Dropout(o.dropout()));
  dropout2 = register_module("dropout2", Dropout(o.dropout()));
  dropout3 = register_module("dropout3", Dropout(o.dropout()));
}

Tensor TransformerDecoderLayerImpl::forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask,
                                            const Tensor& memory_mask, const Tensor& tgt_key_padding_mask,
                                            const Tensor& memory_key_padding_mask, bool tgt_is_causal,
                                            bool memory_is_causal) {
  const auto act = activation_of(options.activation(), options.activation_fn(), "TransformerDecoderLayer");
  auto sa = [&](const Tensor& x) {
    return dropout1(std::get<0>(self_attn(x, x, x, tgt_key_padding_mask, false, tgt_mask, true, tgt_is_causal)));
  };
  auto mha = [&](const Tensor& x) {
    return dropout2(std::get<0>(
        multihead_attn(x, memory, memory, memory_key_padding_mask, false, memory_mask, true, memory_is_causal)));
  };
  auto ff = [&](const Tensor& x) { return dropout3(linear2(dropout(act(linear1(x))))); };
  Tensor x = tgt;
  if (options.norm_first()) {
    x = x + sa(norm1(x));
    x = x + mha(norm2(x));
    x = x + ff(norm3(x));
  } else {
    x = norm1(x + sa(x));
    x = norm2(x + mha(x));
    x = norm3(x + ff(x));
  }
  return x;
}

// ---- stacks

TransformerEncoderImpl::TransformerEncoderImpl(const TransformerEncoderLayer& layer, int64_t num_layers,
                                               const AnyModule& norm)
    : num_layers(num_layers) {
  WICK_CHECK(num_layers >= 0, ValueError, "TransformerEncoder", "num_layers must be non-negative, got ", num_layers);
  layers = register_module("layers", ModuleList());
  for (int64_t i = 0; i < num_layers; ++i) layers->push_back(clone_layer(layer));
  if (norm) {
    this->norm = norm;
    register_module("norm", norm.ptr());
  }
}

Tensor TransformerEncoderImpl::forward(const Tensor& src, const Tensor& mask, const Tensor& src_key_padding_mask,
                                       bool is_causal) {
  Tensor x = src;
  for (const auto& m : *layers)
    x = static_cast<TransformerEncoderLayerImpl&>(*m).forward(x, mask, src_key_padding_mask, is_causal);
  return norm ? norm.forward(x) : x;
}

TransformerDecoderImpl::TransformerDecoderImpl(const TransformerDecoderLayer& layer, int64_t num_layers,
                                               const AnyModule& norm)
    : num_layers(num_layers) {
  WICK_CHECK(num_layers >= 0, ValueError, "TransformerDecoder", "num_layers must be non-negative, got ", num_layers);
  layers = register_module("layers", ModuleList());
  for (int64_t i = 0; i < num_layers; ++i) layers->push_back(clone_layer(layer));
  if (norm) {
    this->norm = norm;
    register_module("norm", norm.ptr());
  }
}

Tensor TransformerDecoderImpl::forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask,
                                       const Tensor& memory_mask, const Tensor& tgt_key_padding_mask,
                                       const Tensor& memory_key_padding_mask, bool tgt_is_causal,
                                       bool memory_is_causal) {
  Tensor x = tgt;
  for (const auto& m : *layers)
    x = static_cast<TransformerDecoderLayerImpl&>(*m).forward(x, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
                                                              memory_key_padding_mask, tgt_is_causal,
                                                              memory_is_causal);
  return norm ? norm.forward(x) : x;
}

// ---- Transformer

TransformerImpl::TransformerImpl(const TransformerOptions& options) : options(options) {
  const auto& o = options;
  auto layer_options = TransformerEncoderLayerOptions(o.d_model(), o.nhead())
                           .dim_feedforward(o.dim_feedforward())
                           .dropout(o.dropout())
                           .activation(o.activation())
                           .activation_fn(o.activation_fn())
                           .layer_norm_eps(o.layer_norm_eps())
                           .batch_first(o.batch_first())
                           .norm_first(o.norm_first())
                           .bias(o.bias());
  encoder = register_module(
      "encoder", TransformerEncoder(TransformerEncoderLayer(layer_options), o.num_encoder_layers(), make_norm(layer_options)));
  decoder = register_module(
      "decoder", TransformerDecoder(TransformerDecoderLayer(layer_options), o.num_decoder_layers(), make_norm(layer_options)));
  for (auto& p : parameters())
    if (p.dim() > 1) init::xavier_uniform_(p);
}

Tensor TransformerImpl::forward(const Tensor& src, const Tensor& tgt, const Tensor& src_mask, const Tensor& tgt_mask,
                                const Tensor& memory_mask, const Tensor& src_key_padding_mask,
                                const Tensor& tgt_key_padding_mask, const Tensor& memory_key_padding_mask,
                                bool src_is_causal, bool tgt_is_causal, bool memory_is_causal) {
  wick::detail::check_defined(src, "Transformer", "src");
  wick::detail::check_defined(tgt, "Transformer", "tgt");
  const bool batched = src.dim() == 3;
  const int64_t bd = options.batch_first() ? 0 : 1;
  WICK_CHECK(!batched || tgt.dim() != 3 || src.size(bd) == tgt.size(bd), ValueError, "Transformer",
             "the batch number of src and tgt must be equal");
  WICK_CHECK(src.size(-1) == options.d_model() && tgt.size(-1) == options.d_model(), ValueError, "Transformer",
             "the feature number of src and tgt must be equal to d_model");
  Tensor memory = encoder(src, src_mask, src_key_padding_mask, src_is_causal);
  return decoder(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask, tgt_is_causal,
                 memory_is_causal);
}

Tensor generate_square_subsequent_mask(int64_t sz, TensorOptions options) {
  WICK_CHECK(sz >= 0, ValueError, "generate_square_subsequent_mask", "sz must be non-negative, got ", sz);
  const TensorOptions idx = TensorOptions(kInt64).device(options.device());
  Tensor above = wick::arange(sz, idx).unsqueeze(0) > wick::arange(sz, idx).unsqueeze(1);
  return wick::zeros({sz, sz}, options).masked_fill(above, -INFINITY);
}

Tensor TransformerImpl::generate_square_subsequent_mask(int64_t sz, TensorOptions options) {
  return nn::generate_square_subsequent_mask(sz, options);
}

}  // namespace wick::nn
