// The GPT of examples/gpt: shapes, causality, the KV cache against the full context, weight
// tying, GPT-2's initialisation, the optimizer's decay groups, the learning rate schedule, and
// the generators' state (get_rng_state / set_rng_state) that checkpoints and seeded sampling use.
#include <cmath>
#include <numbers>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "../test_files.h"
#include "gpt/gpt.h"
#include "wick/wick.h"

namespace {

using namespace wick;
using wick::test::expect_error;

// A small float64 model: float64 keeps the cached and uncached paths' rounding far below any
// difference between tokens' logits.
gpt::GPT small_model(int64_t block = 16, double dropout = 0.0) {
  manual_seed(3);
  gpt::GPTConfig c{.block_size = block, .vocab_size = 64, .n_layer = 2, .n_head = 2, .n_embd = 16,
                   .dropout = dropout};
  gpt::GPT m(c);
  m->to(kFloat64);
  m->eval();
  return m;
}

Tensor tokens(int64_t B, int64_t T, uint64_t seed) {
  manual_seed(seed);
  return randint(64, {B, T});
}

// Same sizes and elements.
bool same(const Tensor& a, const Tensor& b) {
  return a.sizes().vec() == b.sizes().vec() && a.ne(b).sum().item<int64_t>() == 0;
}

double max_abs_diff(const Tensor& a, const Tensor& b) { return (a - b).abs().max().item<double>(); }

}  // namespace

TEST(GPT, ConfigPresetsAndChecks) {
  EXPECT_EQ(gpt::GPTConfig::padded_vocab(50257), 50304);
  EXPECT_EQ(gpt::GPTConfig::padded_vocab(64), 64);
  EXPECT_EQ(gpt::GPTConfig::padded_vocab(65), 128);
  const auto g = gpt::GPTConfig::gpt2();
  EXPECT_EQ(g.n_layer, 12);
  EXPECT_EQ(g.n_head, 12);
  EXPECT_EQ(g.n_embd, 768);
  EXPECT_EQ(g.block_size, 1024);
  EXPECT_EQ(g.vocab_size, 50304);
  EXPECT_EQ(gpt::GPTConfig::tiny(1000).vocab_size, 1024);
  gpt::GPTConfig bad = gpt::GPTConfig::tiny(64);
  bad.n_head = 3;
  expect_error<ValueError>([&] { bad.check(); }, "GPTConfig", {"multiple of n_head"});
  bad = gpt::GPTConfig::tiny(64);
  bad.dropout = 1.0;
  expect_error<ValueError>([&] { gpt::GPT m(bad); }, "GPTConfig", {"dropout"});
}

TEST(GPT, ShapesAndLoss) {
  gpt::GPT m = small_model();
  Tensor x = tokens(3, 10, 1), y = tokens(3, 10, 2);
  auto [logits, loss] = m->forward(x, y);
  EXPECT_EQ(logits.sizes().vec(), (std::vector<int64_t>{3, 10, 64}));
  EXPECT_EQ(loss.dim(), 0);
  // The loss is the mean cross entropy over every position, computed here another way.
  Tensor lp = logits.log_softmax(-1);
  double expected = 0;
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t t = 0; t < 10; ++t) expected -= lp[b][t][y[b][t].item<int64_t>()].item<double>();
  EXPECT_NEAR(loss.item<double>(), expected / 30, 1e-12);
  // Without targets: the last position's logits only, the same numbers.
  auto last = m->forward(x).logits;
  EXPECT_EQ(last.sizes().vec(), (std::vector<int64_t>{3, 1, 64}));
  EXPECT_LT(max_abs_diff(last, logits.slice(1, 9, 10)), 1e-12);
  expect_error<ValueError>([&] { m->forward(tokens(1, 17, 1)); }, "GPT", {"block_size 16"});
}

TEST(GPT, CausalLogitsAtTIgnoreLaterTokens) {
  gpt::GPT m = small_model();
  Tensor x = tokens(2, 12, 4), y = tokens(2, 12, 5);
  Tensor a = m->forward(x, y).logits;
  for (int64_t t : {0, 5, 10}) {
    Tensor changed = x.clone();
    changed.slice(1, t + 1, 12).copy_(tokens(2, 11 - t, 6 + uint64_t(t)));
    Tensor b = m->forward(changed, y).logits;
    EXPECT_LT(max_abs_diff(a.slice(1, 0, t + 1), b.slice(1, 0, t + 1)), 1e-12) << "t " << t;
    EXPECT_GT(max_abs_diff(a.slice(1, t + 1, 12), b.slice(1, t + 1, 12)), 1e-3) << "t " << t;
  }
}

TEST(GPT, KVCacheGivesTheFullContextsLogits) {
  gpt::GPT m = small_model();
  Tensor x = tokens(2, 12, 7);
  Tensor full = m->forward(x, x).logits;
  // Fed in pieces of 5, 1, 4 and 2 tokens, each piece's last logits are the full pass's.
  gpt::KVCache cache;
  int64_t at = 0;
  for (int64_t n : {5, 1, 4, 2}) {
    Tensor piece = m->forward(x.slice(1, at, at + n), {}, &cache).logits;
    at += n;
    EXPECT_EQ(cache.length(), at);
    EXPECT_LT(max_abs_diff(piece, full.slice(1, at - 1, at)), 1e-12) << "after " << at << " tokens";
  }
  expect_error<ValueError>([&] { m->forward(tokens(2, 5, 1), {}, &cache); }, "GPT", {"17 tokens"});
}

TEST(GPT, GenerateWithTheCacheEqualsWithout) {
  gpt::GPT m = small_model(/*block=*/16);
  Tensor prompt = tokens(2, 5, 8);
  // 20 new tokens: past block_size the window slides, in both.
  for (double temperature : {0.0, 1.0}) {
    gpt::GenerateOptions o{.max_new_tokens = 20, .temperature = temperature, .top_k = 10, .top_p = 0.9, .seed = 11};
    Tensor cached = m->generate(prompt, o);
    o.use_cache = false;
    Tensor uncached = m->generate(prompt, o);
    EXPECT_EQ(cached.sizes().vec(), (std::vector<int64_t>{2, 25}));
    EXPECT_TRUE(same(cached, uncached)) << "temperature " << temperature << "\n" << cached << "\n" << uncached;
    EXPECT_TRUE(same(cached.slice(1, 0, 5), prompt));
  }
  // Greedy picks the most likely token of the full context each step.
  Tensor greedy = m->generate(prompt, {.max_new_tokens = 3, .temperature = 0.0});
  for (int64_t i = 0; i < 3; ++i) {
    Tensor ctx = greedy.slice(1, 0, 5 + i);
    Tensor best = m->forward(ctx).logits.select(1, 0).argmax(-1);
    EXPECT_TRUE(same(best, greedy.select(1, 5 + i))) << i;
  }
}

TEST(GPT, SeededGenerateLeavesTheGeneratorAndRepeats) {
  gpt::GPT m = small_model();
  Tensor prompt = tokens(1, 3, 9);
  manual_seed(5);
  Tensor before = get_rng_state();
  Tensor a = m->generate(prompt, {.max_new_tokens = 8, .seed = 42});
  EXPECT_TRUE(same(get_rng_state(), before));
  Tensor b = m->generate(prompt, {.max_new_tokens = 8, .seed = 42});
  EXPECT_TRUE(same(a, b));
  // vocab_limit: no id at or above it is drawn.
  Tensor limited = m->generate(prompt, {.max_new_tokens = 30, .seed = 1, .vocab_limit = 10});
  EXPECT_LT(limited.slice(1, 3, 33).max().item<int64_t>(), 10);
  expect_error<ValueError>([&] { m->generate(prompt, {.top_p = 0.0}); }, "generate", {"top_p"});
  // Bad options and prompts are refused by generate itself, before anything is drawn (a NaN
  // temperature would otherwise reach multinomial as NaN probabilities).
  const Tensor rng = get_rng_state().clone();
  for (double t : {-1.0, std::nan(""), double(INFINITY)})
    expect_error<ValueError>([&] { m->generate(prompt, {.temperature = t}); }, "generate", {"temperature"});
  for (double p : {-0.5, 1.5, std::nan("")})
    expect_error<ValueError>([&] { m->generate(prompt, {.top_p = p}); }, "generate", {"top_p"});
  expect_error<ValueError>([&] { m->generate(prompt, {.top_k = -1}); }, "generate", {"top_k"});
  expect_error<ValueError>([&] { m->generate(prompt, {.max_new_tokens = -1}); }, "generate", {"max_new_tokens"});
  expect_error<ValueError>([&] { m->generate(prompt, {.vocab_limit = -1}); }, "generate", {"vocab_limit"});
  expect_error<ValueError>([&] { m->generate(prompt.slice(1, 0, 0), {}); }, "generate", {"prompt"});
  expect_error<ValueError>([&] { m->generate(prompt.select(0, 0), {}); }, "generate", {"prompt"});
  expect_error<ValueError>([&] { m->generate(Tensor(), {}); }, "generate", {"prompt"});
  expect_error<TypeError>([&] { m->generate(prompt.to(kFloat32), {}); }, "generate", {"token ids"});
  EXPECT_TRUE(same(get_rng_state(), rng));
}

TEST(GPT, TopKAndTopPKeepOnlyTheLikelyTokens) {
  gpt::GPT m = small_model();
  Tensor prompt = tokens(1, 4, 10);
  Tensor logits = m->forward(prompt).logits.select(1, 0)[0];
  auto [sorted, order] = sort(logits, -1, /*descending=*/true);
  std::set<int64_t> top3;
  for (int64_t i = 0; i < 3; ++i) top3.insert(order[i].item<int64_t>());
  for (uint64_t seed = 0; seed < 20; ++seed) {
    Tensor out = m->generate(prompt, {.max_new_tokens = 1, .top_k = 3, .seed = seed});
    EXPECT_TRUE(top3.count(out[0][4].item<int64_t>())) << seed;
  }
  // top_p just above the most likely token's probability keeps it and the second.
  Tensor probs = sorted.softmax(-1);
  const double p = probs[0].item<double>() + 1e-9;
  std::set<int64_t> top2{order[0].item<int64_t>(), order[1].item<int64_t>()};
  for (uint64_t seed = 0; seed < 20; ++seed) {
    Tensor out = m->generate(prompt, {.max_new_tokens = 1, .top_p = p, .seed = seed});
    EXPECT_TRUE(top2.count(out[0][4].item<int64_t>())) << seed;
  }
}

TEST(GPT, HeadIsTiedToTheTokenEmbedding) {
  gpt::GPT m = small_model();
  EXPECT_TRUE(m->lm_head->weight.is_same(m->wte->weight));
  std::set<std::string> names;
  for (auto& [name, p] : m->named_parameters()) names.insert(name);
  EXPECT_TRUE(names.count("wte.weight"));
  EXPECT_FALSE(names.count("lm_head.weight"));  // listed once
  int64_t n = 0;
  for (auto& p : m->parameters()) n += p.numel();
  // wte 64x16, wpe 16x16, per block: 2 LayerNorms (2x16 each), qkv 16x48+48, proj 16x16+16,
  // fc 16x64+64, proj 64x16+16; ln_f 2x16.
  const int64_t block = 2 * 32 + (768 + 48) + (256 + 16) + (1024 + 64) + (1024 + 16);
  EXPECT_EQ(n, 1024 + 256 + 2 * block + 32);
  EXPECT_EQ(m->num_parameters(/*non_embedding=*/false), n);
  EXPECT_EQ(m->num_parameters(), n - 256);
  // The head's gradient lands in the one matrix: both uses add up.
  m->train();
  Tensor x = tokens(2, 6, 12);
  m->forward(x, x).loss.backward();
  EXPECT_TRUE(m->wte->weight.grad().defined());
  EXPECT_TRUE(m->lm_head->weight.grad().is_same(m->wte->weight.grad()));
}

TEST(GPT, GPT2Initialisation) {
  manual_seed(0);
  gpt::GPTConfig c{.block_size = 64, .vocab_size = 512, .n_layer = 8, .n_head = 4, .n_embd = 128};
  gpt::GPT m(c);
  auto stdev = [](const Tensor& t) { return t.to(kFloat64).std().item<double>(); };
  EXPECT_NEAR(stdev(m->wte->weight), 0.02, 0.001);
  EXPECT_NEAR(stdev(m->wpe->weight), 0.02, 0.001);
  EXPECT_NEAR(stdev(m->blocks[0]->attn->c_attn->weight), 0.02, 0.001);
  EXPECT_NEAR(stdev(m->blocks[3]->mlp->c_fc->weight), 0.02, 0.001);
  const double scaled = 0.02 / std::sqrt(16.0);
  EXPECT_NEAR(stdev(m->blocks[0]->attn->c_proj->weight), scaled, 0.1 * scaled);
  EXPECT_NEAR(stdev(m->blocks[7]->mlp->c_proj->weight), scaled, 0.1 * scaled);
  EXPECT_EQ(m->blocks[2]->attn->c_attn->bias.abs().max().item<double>(), 0.0);
  EXPECT_EQ(m->blocks[2]->ln_1->weight.min().item<double>(), 1.0);
  EXPECT_EQ(m->ln_f->bias.abs().max().item<double>(), 0.0);
  // Without biases.
  c.bias = false;
  gpt::GPT nb(c);
  EXPECT_FALSE(nb->blocks[0]->attn->c_attn->bias.defined());
}

TEST(GPT, OptimizerDecaysOnlyMatrices) {
  gpt::GPT m = small_model();
  auto opt = m->configure_optimizer(0.1, 3e-4, 0.9, 0.95);
  ASSERT_EQ(opt->param_groups().size(), 2u);
  const auto& decay = opt->param_groups()[0];
  const auto& none = opt->param_groups()[1];
  for (auto& p : decay.params()) EXPECT_GE(p.dim(), 2);
  for (auto& p : none.params()) EXPECT_EQ(p.dim(), 1);
  // 2-D: wte, wpe, and 4 matrices a block; 1-D: ln_f's 2, and 2 + 2 + 4 biases and LN a block.
  EXPECT_EQ(decay.params().size(), 2u + 4 * 2);
  EXPECT_EQ(none.params().size(), 2u + 8 * 2);
  auto& d = static_cast<const optim::AdamOptions&>(decay.options());
  auto& n = static_cast<const optim::AdamOptions&>(none.options());
  EXPECT_EQ(d.weight_decay(), 0.1);
  EXPECT_EQ(n.weight_decay(), 0.0);
  EXPECT_EQ(d.lr(), 3e-4);
  EXPECT_EQ(std::get<1>(d.betas()), 0.95);
  EXPECT_EQ(opt->state_dict().metadata.at("optimizer"), "AdamW");
}

TEST(GPT, LearningRateSchedule) {
  const gpt::LRSchedule s{.lr = 1e-3, .min_lr = 1e-4, .warmup = 10, .max_steps = 110};
  EXPECT_DOUBLE_EQ(gpt::lr_at(s, 0), 1e-4);  // 1/10 of the peak
  EXPECT_DOUBLE_EQ(gpt::lr_at(s, 4), 5e-4);
  EXPECT_DOUBLE_EQ(gpt::lr_at(s, 9), 1e-3);
  EXPECT_DOUBLE_EQ(gpt::lr_at(s, 10), 1e-3);  // the decay starts at the peak
  EXPECT_DOUBLE_EQ(gpt::lr_at(s, 60), 1e-4 + 0.5 * 9e-4);  // half way: cos = 0
  EXPECT_NEAR(gpt::lr_at(s, 35), 1e-4 + 0.45e-3 * (1 + std::cos(std::numbers::pi / 4)), 1e-15);
  EXPECT_DOUBLE_EQ(gpt::lr_at(s, 110), 1e-4);
  EXPECT_DOUBLE_EQ(gpt::lr_at(s, 500), 1e-4);
}

TEST(GPT, DropoutOnlyWhileTraining) {
  gpt::GPT m = small_model(16, 0.5);
  Tensor x = tokens(1, 8, 13);
  Tensor a = m->forward(x, x).logits, b = m->forward(x, x).logits;
  EXPECT_EQ(max_abs_diff(a, b), 0.0);  // eval: no dropout
  m->train();
  manual_seed(1);
  Tensor c = m->forward(x, x).logits;
  EXPECT_GT(max_abs_diff(a, c), 1e-3);
}

TEST(GPT, CudaMatchesCpu) {
  if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  gpt::GPT m = small_model();
  Tensor x = tokens(2, 12, 14);
  Tensor cpu_logits = m->forward(x, x).logits;
  Tensor cpu_gen = m->generate(x.slice(1, 0, 4), {.max_new_tokens = 10, .temperature = 0.0});
  m->to(Device(kCUDA, 0));
  Tensor xc = x.to(Device(kCUDA, 0));
  EXPECT_LT(max_abs_diff(m->forward(xc, xc).logits.cpu(), cpu_logits), 1e-9);
  Tensor gen = m->generate(xc.slice(1, 0, 4), {.max_new_tokens = 10, .temperature = 0.0});
  EXPECT_TRUE(same(gen.cpu(), cpu_gen));
  Tensor sampled = m->generate(xc.slice(1, 0, 4), {.max_new_tokens = 10, .seed = 3});
  m->to(Device(kCPU));
  EXPECT_TRUE(same(sampled.cpu(), m->generate(x.slice(1, 0, 4), {.max_new_tokens = 10, .seed = 3})));
}

TEST(RngState, RoundTripAndErrors) {
  manual_seed(77);
  Tensor s = get_rng_state();
  EXPECT_EQ(s.dtype(), kUInt8);
  EXPECT_EQ(s.numel(), 16);
  // The seed, little-endian, then offset 0.
  EXPECT_EQ(s[0].item<int64_t>(), 77);
  EXPECT_EQ(s.slice(0, 1, 16).max().item<int64_t>(), 0);
  Tensor a = rand({100});
  Tensor after = get_rng_state();
  EXPECT_FALSE(same(after, s));  // the offset moved on
  set_rng_state(s);
  EXPECT_TRUE(same(rand({100}), a));
  EXPECT_TRUE(same(get_rng_state(), after));
  expect_error<ValueError>([&] { set_rng_state(zeros({8}, kUInt8)); }, "set_rng_state", {"16 elements"});
  expect_error<ValueError>([&] { set_rng_state(zeros({16}, kInt64)); }, "set_rng_state", {"uint8"});
}

TEST(RngState, Cuda) {
  if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const Device d(kCUDA, 0);
  manual_seed(5);
  Tensor s = get_rng_state(d);
  Tensor a = rand({64}, d);
  rand({10});  // the CPU's generator is another one
  set_rng_state(s, d);
  EXPECT_TRUE(same(rand({64}, d).cpu(), a.cpu()));
}
