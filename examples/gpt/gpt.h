// A GPT language model (GPT-2's architecture) written with wick's modules: the model that
// wick-gpt trains and samples, and a readable example of a transformer in wick (docs/gpt.md).
//
//   gpt::GPT model(gpt::GPTConfig::tiny(tokenizer.vocab_size()));
//   auto [logits, loss] = model->forward(x, y);        // x, y: int64 [B, T]; loss: a scalar
//   auto optimizer = model->configure_optimizer(0.1, 1e-3);
//   loss.backward();  optimizer->step();
//   wick::Tensor out = model->generate(prompt, {.max_new_tokens = 100, .top_k = 50, .seed = 1});
//
// The parameters' names follow GPT-2's: wte, wpe, h.<i>.{ln_1, attn.c_attn, attn.c_proj, ln_2,
// mlp.c_fc, mlp.c_proj}, ln_f, lm_head (the same tensor as wte.weight).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "wick/nn.h"
#include "wick/optim.h"
#include "wick/tensor.h"

namespace gpt {

struct GPTConfig {
  int64_t block_size = 1024;  // the longest context
  int64_t vocab_size = 50304;  // GPT-2's 50257 padded to a multiple of 64
  int64_t n_layer = 12;
  int64_t n_head = 12;
  int64_t n_embd = 768;
  double dropout = 0.0;
  bool bias = true;  // biases in the Linear layers and LayerNorms

  // A vocabulary of n tokens rounded up to a multiple of 64 (the matrix shapes GPUs like).
  static int64_t padded_vocab(int64_t n) { return (n + 63) / 64 * 64; }
  // GPT-2 small: 12 layers, 12 heads, 768 wide, context 1024 (124M parameters).
  static GPTConfig gpt2(int64_t vocab = 50257);
  // 4 layers, 4 heads, 128 wide, context 128: trains on two CPU cores in minutes.
  static GPTConfig tiny(int64_t vocab);
  // ValueError "[GPTConfig] ..." for a size below 1, n_embd not a multiple of n_head, or a
  // dropout outside [0, 1).
  void check() const;
  std::string str() const;  // "n_layer=4, n_head=4, n_embd=128, block_size=128, vocab_size=4096, ..."
};

// The keys and values of one attention layer for the tokens seen so far (sampling).
struct LayerCache {
  wick::Tensor k, v;  // [B, n_head, length, head_dim]; undefined while empty
  int64_t length() const { return k.defined() ? k.size(2) : 0; }
};

// One LayerCache per block; model->forward(idx, cache) appends the new tokens' keys and values,
// so that each new token of a generation costs one step of the model.
struct KVCache {
  std::vector<LayerCache> layers;
  int64_t length() const { return layers.empty() ? 0 : layers.front().length(); }
  void clear() { layers.clear(); }
};

// Multi-head causal self-attention: one Linear makes queries, keys and values, then
// scaled_dot_product_attention with is_causal, then the output projection.
class CausalSelfAttentionImpl : public wick::nn::Module {
 public:
  explicit CausalSelfAttentionImpl(const GPTConfig& config);
  // x: [B, T, C]. With a cache, x holds the tokens after those cached: their queries attend to
  // the cached keys and values and to each other causally; theirs are appended to the cache.
  wick::Tensor forward(const wick::Tensor& x, LayerCache* cache = nullptr);

  wick::nn::Linear c_attn{nullptr}, c_proj{nullptr};
  wick::nn::Dropout resid_dropout{nullptr};
  int64_t n_head, n_embd;
  double dropout;
};
WICK_MODULE(CausalSelfAttention);

// Linear to 4C, GELU (tanh approximation, as GPT-2), Linear back to C.
class MLPImpl : public wick::nn::Module {
 public:
  explicit MLPImpl(const GPTConfig& config);
  wick::Tensor forward(const wick::Tensor& x);

  wick::nn::Linear c_fc{nullptr}, c_proj{nullptr};
  wick::nn::Dropout dropout{nullptr};
};
WICK_MODULE(MLP);

// A pre-norm transformer block: x + attn(ln_1(x)), then x + mlp(ln_2(x)). Each addition into
// the residual stream is made by the LayerNorm that reads the sum (F::add_layer_norm: on a GPU
// one kernel for the add, the norm and, under autocast, its 16-bit output for the matmuls), so a
// block takes the stream with the previous block's output still to be added, and hands its own
// on the same way: forward(x, pending) = {h, m}, where r = x + pending (x when pending is
// undefined), h = r + attn(ln_1(r)) and m = mlp(ln_2(h)).
class BlockImpl : public wick::nn::Module {
 public:
  explicit BlockImpl(const GPTConfig& config);
  std::pair<wick::Tensor, wick::Tensor> forward(const wick::Tensor& x, const wick::Tensor& pending,
                                                LayerCache* cache = nullptr);

  wick::nn::LayerNorm ln_1{nullptr}, ln_2{nullptr};
  CausalSelfAttention attn{nullptr};
  MLP mlp{nullptr};
};
WICK_MODULE(Block);

struct Output {
  wick::Tensor logits;  // [B, T, vocab_size]; [B, 1, vocab_size] (the last position) without targets
  wick::Tensor loss;    // cross entropy over every position; undefined without targets
};

// Sampling: tokens are drawn from softmax(logits / temperature) restricted to the top_k most
// likely and to the smallest set whose probability reaches top_p. temperature 0 takes the most
// likely token (greedy).
struct GenerateOptions {
  int64_t max_new_tokens = 100;
  double temperature = 1.0;
  int64_t top_k = 0;   // 0: no limit
  double top_p = 1.0;  // 1: no limit
  // Draw from a generator seeded with this, leaving wick's generator as it was; unset: draw
  // from wick's generator.
  std::optional<uint64_t> seed = std::nullopt;
  // Only ids below this are drawn (the tokenizer's vocabulary, below the padded one); 0: all.
  int64_t vocab_limit = 0;
  // false: every step runs the whole context again (the check of the cache).
  bool use_cache = true;
};

class GPTImpl : public wick::nn::Module {
 public:
  explicit GPTImpl(const GPTConfig& config);

  // idx: int64 [B, T] with T <= block_size. With targets ([B, T]) the logits of every position
  // and the mean cross entropy; without, the logits of the last position only (sampling).
  // ValueError "[GPT] ..." for a context longer than block_size (with the cache, the cached
  // length counts).
  Output forward(const wick::Tensor& idx, const wick::Tensor& targets = {}, KVCache* cache = nullptr);

  // AdamW over two groups: weight decay on the matrices (parameters of two or more dims:
  // the Linear weights and the embeddings), none on the biases and LayerNorm weights.
  std::unique_ptr<wick::optim::AdamW> configure_optimizer(double weight_decay, double lr, double beta1 = 0.9,
                                                          double beta2 = 0.95) const;

  // idx [B, T0] followed by max_new_tokens drawn one at a time. With the cache, the prompt runs
  // once and each new token then costs one step; past block_size the context slides (the last
  // block_size tokens run again each step, exactly as without the cache).
  // ValueError "[generate] ..." for a temperature that is negative or not finite, top_k < 0,
  // top_p outside (0, 1], max_new_tokens or vocab_limit < 0, a prompt not [B, T >= 1];
  // TypeError for a prompt that is not int64 or int32. Nothing is drawn then.
  wick::Tensor generate(const wick::Tensor& idx, const GenerateOptions& options);

  // Parameters in all, without the position embedding when non_embedding (nanoGPT's count;
  // wte is shared with the head, so it counts once either way).
  int64_t num_parameters(bool non_embedding = true) const;
  // Forward and backward FLOPs of one token: 6N plus the attention's 12 * n_layer * n_embd * T
  // (PaLM's estimate, as nanoGPT's MFU).
  double flops_per_token(int64_t T) const;

  GPTConfig config;
  wick::nn::Embedding wte{nullptr}, wpe{nullptr};
  wick::nn::Dropout drop{nullptr};
  wick::nn::ModuleList h{nullptr};
  std::vector<Block> blocks;  // h's children
  wick::nn::LayerNorm ln_f{nullptr};
  wick::nn::Linear lm_head{nullptr};

 private:
  wick::Tensor next_token(const wick::Tensor& logits, const GenerateOptions& options) const;
};
WICK_MODULE(GPT);

// ---- the learning rate: linear warm-up, then cosine decay to min_lr, then min_lr.
struct LRSchedule {
  double lr = 6e-4;
  double min_lr = 6e-5;
  int64_t warmup = 0;     // steps of linear warm-up
  int64_t max_steps = 1;  // the step where the decay reaches min_lr
};

// The learning rate of step (0-based): lr * (step + 1) / warmup during the warm-up, then
// min_lr + (lr - min_lr) * (1 + cos(pi * progress)) / 2 with progress going from 0 at warmup to 1
// at max_steps, then min_lr.
double lr_at(const LRSchedule& s, int64_t step);

}  // namespace gpt
