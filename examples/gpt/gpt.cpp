// The GPT of gpt.h. Reading order: the config, attention, MLP, block, then GPT's forward,
// its initialisation, the optimizer's groups, and sampling with the KV cache.
#include "gpt.h"

#include <cmath>
#include <limits>
#include <numbers>
#include <sstream>

#include "wick/autograd.h"
#include "wick/error.h"
#include "wick/ops.h"
#include "wick/random.h"

namespace gpt {

namespace nn = wick::nn;
namespace F = wick::nn::functional;
using wick::Tensor;

// ---- config

GPTConfig GPTConfig::gpt2(int64_t vocab) {
  return GPTConfig{.block_size = 1024, .vocab_size = padded_vocab(vocab), .n_layer = 12, .n_head = 12,
                   .n_embd = 768};
}

GPTConfig GPTConfig::tiny(int64_t vocab) {
  return GPTConfig{.block_size = 128, .vocab_size = padded_vocab(vocab), .n_layer = 4, .n_head = 4,
                   .n_embd = 128};
}

void GPTConfig::check() const {
  auto fail = [&](const std::string& what) { throw wick::ValueError("[GPTConfig] " + what + " (" + str() + ")"); };
  if (block_size < 1 || vocab_size < 1 || n_layer < 1 || n_head < 1 || n_embd < 1)
    fail("every size must be at least 1");
  if (n_embd % n_head != 0) fail("n_embd must be a multiple of n_head");
  if (!(dropout >= 0 && dropout < 1)) fail("dropout must lie in [0, 1)");
}

std::string GPTConfig::str() const {
  std::ostringstream os;
  os << "n_layer=" << n_layer << ", n_head=" << n_head << ", n_embd=" << n_embd << ", block_size=" << block_size
     << ", vocab_size=" << vocab_size << ", dropout=" << dropout << ", bias=" << (bias ? "true" : "false");
  return os.str();
}

// ---- attention

CausalSelfAttentionImpl::CausalSelfAttentionImpl(const GPTConfig& c)
    : n_head(c.n_head), n_embd(c.n_embd), dropout(c.dropout) {
  c_attn = register_module("c_attn", nn::Linear(nn::LinearOptions(c.n_embd, 3 * c.n_embd).bias(c.bias)));
  c_proj = register_module("c_proj", nn::Linear(nn::LinearOptions(c.n_embd, c.n_embd).bias(c.bias)));
  resid_dropout = register_module("resid_dropout", nn::Dropout(c.dropout));
}

Tensor CausalSelfAttentionImpl::forward(const Tensor& x, LayerCache* cache) {
  // [doc:gpt_attention]
  const int64_t B = x.size(0), T = x.size(1), hd = n_embd / n_head;
  // [B, T, 3C] -> q, k, v as [B, n_head, T, hd]
  auto qkv = c_attn(x).split(n_embd, 2);
  auto heads = [&](const Tensor& t) { return t.view({B, T, n_head, hd}).transpose(1, 2); };
  Tensor q = heads(qkv[0]), k = heads(qkv[1]), v = heads(qkv[2]);
  const int64_t past = cache ? cache->length() : 0;
  if (cache) {
    if (past > 0) {
      k = wick::cat({cache->k, k}, 2);
      v = wick::cat({cache->v, v}, 2);
    }
    cache->k = k.detach();
    cache->v = v.detach();
  }
  const double p = is_training() ? dropout : 0.0;
  Tensor y;
  if (past == 0) {
    y = F::scaled_dot_product_attention(q, k, v, {}, p, /*is_causal=*/true);
  } else if (T == 1) {
    y = F::scaled_dot_product_attention(q, k, v, {}, p);  // the newest token sees everything
  } else {
    // New query i sits at position past + i: it sees keys 0 .. past + i.
    Tensor rows = wick::arange(past, past + T, 1, wick::TensorOptions(wick::kInt64).device(x.device()));
    Tensor cols = wick::arange(past + T, wick::TensorOptions(wick::kInt64).device(x.device()));
    Tensor mask = cols.unsqueeze(0).le(rows.unsqueeze(1));
    y = F::scaled_dot_product_attention(q, k, v, mask, p);
  }
  y = y.transpose(1, 2).contiguous().view({B, T, n_embd});
  return resid_dropout(c_proj(y));
  // [doc:end]
}

// ---- MLP and block

MLPImpl::MLPImpl(const GPTConfig& c) {
  c_fc = register_module("c_fc", nn::Linear(nn::LinearOptions(c.n_embd, 4 * c.n_embd).bias(c.bias)));
  c_proj = register_module("c_proj", nn::Linear(nn::LinearOptions(4 * c.n_embd, c.n_embd).bias(c.bias)));
  dropout = register_module("dropout", nn::Dropout(c.dropout));
}

Tensor MLPImpl::forward(const Tensor& x) {
  if (!c_fc->bias.defined()) return dropout(c_proj(F::gelu(c_fc(x), "tanh")));
  // F::gelu(c_fc(x), "tanh") as one op: on a GPU one GEMM whose epilogue adds the bias and applies
  // GELU, instead of a GEMM and a pass of GELU over the widest activation.
  std::vector<int64_t> sizes = x.sizes().vec();
  sizes.back() = c_fc->weight.size(0);
  Tensor h = wick::_addmm_activation(c_fc->bias, x.reshape({-1, x.size(-1)}), c_fc->weight.t(), 1, 1,
                                     /*use_gelu=*/true);
  return dropout(c_proj(h.view(sizes)));
}

BlockImpl::BlockImpl(const GPTConfig& c) {
  ln_1 = register_module("ln_1", nn::LayerNorm(nn::LayerNormOptions({c.n_embd}).bias(c.bias)));
  attn = register_module("attn", CausalSelfAttention(c));
  ln_2 = register_module("ln_2", nn::LayerNorm(nn::LayerNormOptions({c.n_embd}).bias(c.bias)));
  mlp = register_module("mlp", MLP(c));
}

namespace {
// {x + delta, ln(x + delta)}: the sum and its LayerNorm from one call.
std::pair<Tensor, Tensor> add_norm(const nn::LayerNorm& ln, const Tensor& x, const Tensor& delta) {
  return F::add_layer_norm(x, delta, ln->options.normalized_shape(), ln->weight, ln->bias, ln->options.eps());
}
}  // namespace

std::pair<Tensor, Tensor> BlockImpl::forward(const Tensor& x, const Tensor& pending, LayerCache* cache) {
  auto [r, a] = add_norm(ln_1, x, pending);
  auto [h, b] = add_norm(ln_2, r, attn->forward(a, cache));
  return {h, mlp(b)};
}

// ---- GPT

GPTImpl::GPTImpl(const GPTConfig& c) : config(c) {
  config.check();
  wte = register_module("wte", nn::Embedding(c.vocab_size, c.n_embd));
  wpe = register_module("wpe", nn::Embedding(c.block_size, c.n_embd));
  drop = register_module("drop", nn::Dropout(c.dropout));
  h = register_module("h", nn::ModuleList());
  for (int64_t i = 0; i < c.n_layer; ++i) {
    blocks.push_back(Block(c));
    h->push_back(blocks.back());
  }
  ln_f = register_module("ln_f", nn::LayerNorm(nn::LayerNormOptions({c.n_embd}).bias(c.bias)));
  lm_head = register_module("lm_head", nn::Linear(nn::LinearOptions(c.n_embd, c.vocab_size).bias(false)));
  // The head reads the logits off the token embeddings: one matrix, trained by both ends.
  lm_head->weight = lm_head->replace_parameter("weight", wte->weight);

  // GPT-2's initialisation: N(0, 0.02) for every matrix, zero biases, and the projections that
  // add into the residual stream scaled down by sqrt(2 * n_layer) (two per block), so that the
  // stream's variance does not grow with depth.
  wick::NoGradGuard no_grad;
  for (auto& [name, p] : named_parameters()) {
    const bool residual = name.ends_with("c_proj.weight");
    if (name.ends_with("ln_1.weight") || name.ends_with("ln_2.weight") || name == "ln_f.weight") p.fill_(1.0);
    else if (p.dim() >= 2) p.normal_(0.0, residual ? 0.02 / std::sqrt(2.0 * double(c.n_layer)) : 0.02);
    else p.zero_();
  }
}

Output GPTImpl::forward(const Tensor& idx, const Tensor& targets, KVCache* cache) {
  // [doc:gpt_forward]
  if (idx.dim() != 2) throw wick::ValueError("[GPT] expected token ids of shape [B, T]");
  const int64_t T = idx.size(1), past = cache ? cache->length() : 0;
  if (past + T > config.block_size)
    throw wick::ValueError("[GPT] a context of " + std::to_string(past + T) + " tokens is longer than block_size " +
                           std::to_string(config.block_size));
  if (cache && cache->layers.empty()) cache->layers.resize(blocks.size());
  Tensor pos = wick::arange(past, past + T, 1, wick::TensorOptions(wick::kInt64).device(idx.device()));
  Tensor x = drop(wte(idx) + wpe(pos)), pending;  // pending: the last block's output, still to add
  for (size_t i = 0; i < blocks.size(); ++i)
    std::tie(x, pending) = blocks[i]->forward(x, pending, cache ? &cache->layers[i] : nullptr);
  x = add_norm(ln_f, x, pending).second;
  if (!targets.defined()) return {lm_head(x.slice(1, T - 1, T)), {}};  // only what sampling needs
  Tensor logits = lm_head(x);
  Tensor loss = F::cross_entropy(logits.view({-1, logits.size(-1)}), targets.reshape({-1}));
  return {logits, loss};
  // [doc:end]
}

std::unique_ptr<wick::optim::AdamW> GPTImpl::configure_optimizer(double weight_decay, double lr, double beta1,
                                                                 double beta2) const {
  std::vector<Tensor> decay, no_decay;
  for (const Tensor& p : parameters()) (p.dim() >= 2 ? decay : no_decay).push_back(p);
  auto options = [&](double wd) {
    auto o = std::make_unique<wick::optim::AdamWOptions>(lr);
    o->betas({beta1, beta2}).eps(1e-8).weight_decay(wd);
    return o;
  };
  std::vector<wick::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decay, options(weight_decay));
  groups.emplace_back(no_decay, options(0.0));
  return std::make_unique<wick::optim::AdamW>(std::move(groups), *options(weight_decay));
}

int64_t GPTImpl::num_parameters(bool non_embedding) const {
  int64_t n = 0;
  for (const Tensor& p : parameters()) n += p.numel();
  return non_embedding ? n - wpe->weight.numel() : n;
}

double GPTImpl::flops_per_token(int64_t T) const {
  const auto& c = config;
  return 6.0 * double(num_parameters()) + 12.0 * double(c.n_layer) * double(c.n_embd) * double(T);
}

// ---- sampling

Tensor GPTImpl::next_token(const Tensor& last, const GenerateOptions& o) const {
  Tensor logits = last.to(wick::kFloat32);  // [B, V]
  const int64_t V = logits.size(-1);
  const double inf = std::numeric_limits<double>::infinity();
  if (o.vocab_limit > 0 && o.vocab_limit < V)
    logits = logits.masked_fill(wick::arange(V, logits.device()).ge(o.vocab_limit), -inf);
  if (o.temperature == 0) return logits.argmax(-1, /*keepdim=*/true);
  logits = logits / o.temperature;
  if (o.top_k > 0 && o.top_k < V) {
    auto [top, _] = wick::topk(logits, o.top_k);
    logits = logits.masked_fill(logits.lt(top.slice(1, o.top_k - 1, o.top_k)), -inf);
  }
  if (o.top_p < 1.0) {
    // Keep the most likely tokens until their probability reaches top_p (at least one).
    auto [sorted, order] = wick::sort(logits, -1, /*descending=*/true);
    Tensor probs = sorted.softmax(-1);
    Tensor before = probs.cumsum(-1) - probs;  // probability of the tokens ranked above
    Tensor drop_sorted = before.ge(o.top_p);
    Tensor dropped = wick::scatter(wick::zeros_like(drop_sorted), 1, order, drop_sorted);
    logits = logits.masked_fill(dropped, -inf);
  }
  return wick::multinomial(logits.softmax(-1), 1);
}

Tensor GPTImpl::generate(const Tensor& idx, const GenerateOptions& o) {
  // NaN fails every comparison: the checks are written so that it fails them.
  if (!(o.temperature >= 0 && std::isfinite(o.temperature)))
    throw wick::ValueError("[generate] temperature must be finite and >= 0, got " + std::to_string(o.temperature));
  if (o.top_k < 0) throw wick::ValueError("[generate] top_k must be >= 0");
  if (!(o.top_p > 0 && o.top_p <= 1)) throw wick::ValueError("[generate] top_p must lie in (0, 1]");
  if (o.max_new_tokens < 0) throw wick::ValueError("[generate] max_new_tokens must be >= 0");
  if (o.vocab_limit < 0) throw wick::ValueError("[generate] vocab_limit must be >= 0 (0: no limit)");
  if (!idx.defined() || idx.dim() != 2 || idx.size(1) < 1)
    throw wick::ValueError("[generate] expected a prompt of shape [B, T], T >= 1");
  if (idx.dtype() != wick::kInt64 && idx.dtype() != wick::kInt32) {
    std::ostringstream msg;
    msg << "[generate] expected a prompt of token ids (int64 or int32), got " << idx.dtype();
    throw wick::TypeError(msg.str());
  }
  wick::NoGradGuard no_grad;
  const bool was_training = is_training();
  eval();
  // A seed of its own: the device's generator starts from it and is put back afterwards.
  std::optional<Tensor> saved;
  if (o.seed) {
    saved = wick::get_rng_state(idx.device());
    Tensor seeded = wick::zeros({16}, wick::kUInt8);  // seed, then offset 0 (little-endian)
    for (int b = 0; b < 8; ++b) seeded[b].fill_(int64_t((*o.seed >> (8 * b)) & 0xff));
    wick::set_rng_state(seeded, idx.device());
  }
  KVCache cache;
  Tensor out = idx;
  Tensor fresh = idx;  // the tokens the cache has not seen
  const int64_t W = config.block_size;
  try {
    for (int64_t i = 0; i < o.max_new_tokens; ++i) {
      Tensor logits;
      if (!o.use_cache || out.size(1) > W) {
        // Without the cache, or once the context slides: the last W tokens from the start.
        cache.clear();
        const int64_t n = out.size(1);
        logits = forward(out.slice(1, std::max<int64_t>(0, n - W), n)).logits;
      } else {
        logits = forward(fresh, {}, &cache).logits;
      }
      Tensor next = next_token(logits.select(1, 0), o);
      out = wick::cat({out, next}, 1);
      fresh = next;
      if (cache.length() >= W) cache.clear();  // the next step slides the window
    }
  } catch (...) {
    if (saved) wick::set_rng_state(*saved, idx.device());
    train(was_training);
    throw;
  }
  if (saved) wick::set_rng_state(*saved, idx.device());
  train(was_training);
  return out;
}

// ---- learning rate

double lr_at(const LRSchedule& s, int64_t step) {
  if (step < s.warmup) return s.lr * double(step + 1) / double(s.warmup);
  if (step >= s.max_steps) return s.min_lr;
  const double progress = double(step - s.warmup) / double(std::max<int64_t>(1, s.max_steps - s.warmup));
  return s.min_lr + 0.5 * (s.lr - s.min_lr) * (1.0 + std::cos(std::numbers::pi * progress));
}

}  // namespace gpt
