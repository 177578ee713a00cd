// MultiheadAttention and the transformer layers, with PyTorch's parameter names (a PyTorch
// state_dict loads strictly) and semantics.
//
//   wick::nn::TransformerEncoderLayer layer(
//       wick::nn::TransformerEncoderLayerOptions(512, 8).dim_feedforward(2048).batch_first(true));
//   wick::nn::TransformerEncoder encoder(layer, 6);      // layers.0. ... layers.5., copies of layer
//   // or LibTorch's: TransformerEncoder(TransformerEncoderOptions(layer_options, 6).norm(LayerNorm(...)))
//   auto y = encoder(x, wick::nn::generate_square_subsequent_mask(x.size(1)));
//   wick::nn::MultiheadAttention mha(64, 4);
//   auto [out, weights] = mha(q, k, v);                   // weights averaged over heads
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "wick/nn/any.h"
#include "wick/nn/container.h"
#include "wick/nn/dropout.h"
#include "wick/nn/linear.h"
#include "wick/nn/module.h"
#include "wick/nn/normalization.h"
#include "wick/nn/options.h"

namespace wick::nn {

struct MultiheadAttentionOptions {
  MultiheadAttentionOptions(int64_t embed_dim, int64_t num_heads) : embed_dim_(embed_dim), num_heads_(num_heads) {}
  WICK_ARG(int64_t, embed_dim);
  WICK_ARG(int64_t, num_heads);
  WICK_ARG(double, dropout) = 0.0;
  WICK_ARG(bool, bias) = true;
  // Sizes of key and value features (unset: embed_dim); either set and different from
  // embed_dim gives separate q_proj_weight, k_proj_weight, v_proj_weight.
  WICK_ARG(std::optional<int64_t>, kdim);
  WICK_ARG(std::optional<int64_t>, vdim);
  // Inputs [batch, seq, feature] instead of [seq, batch, feature].
  WICK_ARG(bool, batch_first) = false;
  // Learned bias_k, bias_v [1, 1, embed_dim] appended to the projected keys and values (one
  // more key: masks get a column that attends).
  WICK_ARG(bool, add_bias_kv) = false;
  // A key and value of zeros appended per head after the projections (one more key too).
  WICK_ARG(bool, add_zero_attn) = false;
};

class MultiheadAttentionImpl : public Module {
 public:
  MultiheadAttentionImpl(int64_t embed_dim, int64_t num_heads)
      : MultiheadAttentionImpl(MultiheadAttentionOptions(embed_dim, num_heads)) {}
  explicit MultiheadAttentionImpl(const MultiheadAttentionOptions& options);
  // {output, weights}: weights [batch, L, S] (averaged over heads) or [batch, heads, L, S], or
  // undefined without need_weights. Masks: bool (true: masked out) or float (added);
  // key_padding_mask [batch, S], attn_mask [L, S] or [batch * heads, L, S]. is_causal is a
  // hint that attn_mask is the causal mask (attn_mask is then required).
  std::tuple<Tensor, Tensor> forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                     const Tensor& key_padding_mask = {}, bool need_weights = true,
                                     const Tensor& attn_mask = {}, bool average_attn_weights = true,
                                     bool is_causal = false);
  // xavier_uniform_ input projections, zero biases, xavier_normal_ bias_k and bias_v, as
  // PyTorch's _reset_parameters.
  void reset_parameters();
  std::string extra_repr() const override { return ""; }

  MultiheadAttentionOptions options;
  int64_t kdim, vdim, head_dim;
  Tensor in_proj_weight, q_proj_weight, k_proj_weight, v_proj_weight, in_proj_bias;
  Linear out_proj{nullptr};
  Tensor bias_k, bias_v;  // with add_bias_kv only
};
WICK_MODULE(MultiheadAttention);

// The activation of a transformer layer: "relu", "gelu", or a function.
using TransformerActivation = std::function<Tensor(const Tensor&)>;

struct TransformerEncoderLayerOptions {
  TransformerEncoderLayerOptions(int64_t d_model, int64_t nhead) : d_model_(d_model), nhead_(nhead) {}
  WICK_ARG(int64_t, d_model);
  WICK_ARG(int64_t, nhead);
  WICK_ARG(int64_t, dim_feedforward) = 2048;
  WICK_ARG(double, dropout) = 0.1;
  // "relu" or "gelu"; activation_fn, when set, is used instead.
  WICK_ARG(std::string, activation) = "relu";
  WICK_ARG(TransformerActivation, activation_fn);
  WICK_ARG(double, layer_norm_eps) = 1e-5;
  WICK_ARG(bool, batch_first) = false;
  WICK_ARG(bool, norm_first) = false;
  WICK_ARG(bool, bias) = true;
};
// The decoder layer takes the same options.
using TransformerDecoderLayerOptions = TransformerEncoderLayerOptions;

// Self-attention then a feed-forward block, each with dropout, a residual and a LayerNorm
// (after the residual, or before the block with norm_first).
class TransformerEncoderLayerImpl : public Module {
 public:
  TransformerEncoderLayerImpl(int64_t d_model, int64_t nhead)
      : TransformerEncoderLayerImpl(TransformerEncoderLayerOptions(d_model, nhead)) {}
  explicit TransformerEncoderLayerImpl(const TransformerEncoderLayerOptions& options);
  Tensor forward(const Tensor& src, const Tensor& src_mask = {}, const Tensor& src_key_padding_mask = {},
                 bool is_causal = false);

  TransformerEncoderLayerOptions options;
  MultiheadAttention self_attn{nullptr};
  Linear linear1{nullptr}, linear2{nullptr};
  Dropout dropout{nullptr}, dropout1{nullptr}, dropout2{nullptr};
  LayerNorm norm1{nullptr}, norm2{nullptr};
};
WICK_MODULE(TransformerEncoderLayer);

// Self-attention, attention over memory (the encoder's output), then a feed-forward block.
class TransformerDecoderLayerImpl : public Module {
 public:
  TransformerDecoderLayerImpl(int64_t d_model, int64_t nhead)
      : TransformerDecoderLayerImpl(TransformerDecoderLayerOptions(d_model, nhead)) {}
  explicit TransformerDecoderLayerImpl(const TransformerDecoderLayerOptions& options);
  Tensor forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask = {},
                 const Tensor& memory_mask = {}, const Tensor& tgt_key_padding_mask = {},
                 const Tensor& memory_key_padding_mask = {}, bool tgt_is_causal = false,
                 bool memory_is_causal = false);

  TransformerDecoderLayerOptions options;
  MultiheadAttention self_attn{nullptr}, multihead_attn{nullptr};
  Linear linear1{nullptr}, linear2{nullptr};
  Dropout dropout{nullptr}, dropout1{nullptr}, dropout2{nullptr}, dropout3{nullptr};
  LayerNorm norm1{nullptr}, norm2{nullptr}, norm3{nullptr};
};
WICK_MODULE(TransformerDecoderLayer);

// LibTorch's options of TransformerEncoder: the layer (or the options of a new one), how many
// copies, and the final norm (an AnyModule: norm(nn::AnyModule(nn::LayerNorm(...))), or the
// module itself: norm(nn::LayerNorm(...)); any module whose forward takes one Tensor).
struct TransformerEncoderOptions {
  TransformerEncoderOptions(TransformerEncoderLayer encoder_layer, int64_t num_layers)
      : encoder_layer_(std::move(encoder_layer)), num_layers_(num_layers) {}
  TransformerEncoderOptions(const TransformerEncoderLayerOptions& encoder_layer_options, int64_t num_layers)
      : encoder_layer_(encoder_layer_options), num_layers_(num_layers) {}
  WICK_ARG(TransformerEncoderLayer, encoder_layer);
  WICK_ARG(int64_t, num_layers);
  WICK_ARG(AnyModule, norm) = {};
};

struct TransformerDecoderOptions {
  TransformerDecoderOptions(TransformerDecoderLayer decoder_layer, int64_t num_layers)
      : decoder_layer_(std::move(decoder_layer)), num_layers_(num_layers) {}
  TransformerDecoderOptions(const TransformerDecoderLayerOptions& decoder_layer_options, int64_t num_layers)
      : decoder_layer_(decoder_layer_options), num_layers_(num_layers) {}
  WICK_ARG(TransformerDecoderLayer, decoder_layer);
  WICK_ARG(int64_t, num_layers);
  WICK_ARG(AnyModule, norm) = {};
};

// num_layers copies of layer (parameters copied: equal at the start, then each its own) in
// `layers`, then norm when given.
class TransformerEncoderImpl : public Module {
 public:
  TransformerEncoderImpl(const TransformerEncoderLayer& layer, int64_t num_layers, const AnyModule& norm = {});
  explicit TransformerEncoderImpl(const TransformerEncoderOptions& options)
      : TransformerEncoderImpl(options.encoder_layer(), options.num_layers(), options.norm()) {}
  Tensor forward(const Tensor& src, const Tensor& mask = {}, const Tensor& src_key_padding_mask = {},
                 bool is_causal = false);
  ModuleList layers{nullptr};
  // The final norm; empty when there is none (norm.is_empty(), !norm).
  AnyModule norm;
  int64_t num_layers;
};
WICK_MODULE(TransformerEncoder);

class TransformerDecoderImpl : public Module {
 public:
  TransformerDecoderImpl(const TransformerDecoderLayer& layer, int64_t num_layers, const AnyModule& norm = {});
  explicit TransformerDecoderImpl(const TransformerDecoderOptions& options)
      : TransformerDecoderImpl(options.decoder_layer(), options.num_layers(), options.norm()) {}
  Tensor forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask = {},
                 const Tensor& memory_mask = {}, const Tensor& tgt_key_padding_mask = {},
                 const Tensor& memory_key_padding_mask = {}, bool tgt_is_causal = false,
                 bool memory_is_causal = false);
  ModuleList layers{nullptr};
  // The final norm; empty when there is none (norm.is_empty(), !norm).
  AnyModule norm;
  int64_t num_layers;
};
WICK_MODULE(TransformerDecoder);

struct TransformerOptions {
  TransformerOptions() = default;
  // LibTorch's constructors: TransformerOptions(d_model, nhead) and (d_model, nhead,
  // num_encoder_layers, num_decoder_layers); the other arguments keep their defaults.
  TransformerOptions(int64_t d_model, int64_t nhead) : d_model_(d_model), nhead_(nhead) {}
  TransformerOptions(int64_t d_model, int64_t nhead, int64_t num_encoder_layers, int64_t num_decoder_layers)
      : d_model_(d_model),
        nhead_(nhead),
        num_encoder_layers_(num_encoder_layers),
        num_decoder_layers_(num_decoder_layers) {}
  WICK_ARG(int64_t, d_model) = 512;
  WICK_ARG(int64_t, nhead) = 8;
  WICK_ARG(int64_t, num_encoder_layers) = 6;
  WICK_ARG(int64_t, num_decoder_layers) = 6;
  WICK_ARG(int64_t, dim_feedforward) = 2048;
  WICK_ARG(double, dropout) = 0.1;
  WICK_ARG(std::string, activation) = "relu";
  WICK_ARG(TransformerActivation, activation_fn);
  WICK_ARG(double, layer_norm_eps) = 1e-5;
  WICK_ARG(bool, batch_first) = false;
  WICK_ARG(bool, norm_first) = false;
  WICK_ARG(bool, bias) = true;
};

// An encoder and a decoder (each ending in a LayerNorm); every parameter of 2 or more dims
// starts xavier_uniform_, as PyTorch's nn.Transformer.
class TransformerImpl : public Module {
 public:
  explicit TransformerImpl(const TransformerOptions& options = {});
  Tensor forward(const Tensor& src, const Tensor& tgt, const Tensor& src_mask = {}, const Tensor& tgt_mask = {},
                 const Tensor& memory_mask = {}, const Tensor& src_key_padding_mask = {},
                 const Tensor& tgt_key_padding_mask = {}, const Tensor& memory_key_padding_mask = {},
                 bool src_is_causal = false, bool tgt_is_causal = false, bool memory_is_causal = false);
  // nn.Transformer.generate_square_subsequent_mask (a static method in Python and LibTorch too):
  // the free function below.
  static Tensor generate_square_subsequent_mask(int64_t sz, TensorOptions options = {});
  TransformerOptions options;
  TransformerEncoder encoder{nullptr};
  TransformerDecoder decoder{nullptr};
};
WICK_MODULE(Transformer);

// [sz, sz] float mask: 0 on and below the diagonal, -inf above (nn.Transformer's).
Tensor generate_square_subsequent_mask(int64_t sz, TensorOptions options = {});

}  // namespace wick::nn
