// wick-gpt: trains a GPT language model on text, resumes it, and samples from it.
//
//   wick-gpt train --model tiny --device cpu                 # the King James Bible, a few minutes
//   wick-gpt train --model tiny --max-steps 600 --resume wick-gpt-out   # continue where it stopped
//   wick-gpt sample --checkpoint wick-gpt-out --prompt "In the beginning" --top-k 40
//   wick-gpt train --model gpt2 --data a.txt b.txt --amp bf16 --global-batch 524288
//   wick-launch --nproc-per-node 8 wick-gpt train --model gpt2 --distributed --amp bf16
//   wick-launch --nproc-per-node 8 wick-gpt train --model gpt2 --distributed --zero 1 --amp bf16
//
// train: the text (--data files, or Debian's bible-kjv) is tokenized by a SentencePiece BPE model
// trained on it and written once as token shards (train and validation) into --out, beside
// the checkpoints; both are reused by later runs into the same folder. Each step takes
// --grad-accum micro-batches of --batch-size windows of --seq-len tokens (per process), clips
// the gradient norm, and steps AdamW with a warm-up then cosine learning rate. Every
// --eval-every steps the mean loss over --eval-iters validation batches is printed; every
// --save-every steps and at the end the checkpoint (docs/gpt.md, "Checkpoints") is written.
// --resume continues a run exactly: the same batches, learning rates, random numbers and
// therefore, on the CPU, the same losses bit for bit. --zero 1 (with --distributed) shards the
// AdamW state over the processes (ZeroRedundancyOptimizer): the same losses as plain DDP, each
// process holding the moments of 1/N of the parameters; the checkpoint is consolidated onto
// rank 0 and is the same file a plain run writes (either kind of run resumes it).
//
// sample: the model, its configuration and the tokenizer come from the checkpoint; the prompt
// runs once and each new token costs one step of the model (the KV cache).
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "gpt/gpt.h"
#include "train/progress.h"
#include "train/svg_plot.h"
#include "wick/distributed/zero.h"
#include "wick/wick.h"

namespace {

using namespace wick;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

[[noreturn]] void fail(const std::string& what) { throw ValueError("[wick-gpt] " + what); }

// ---- options

struct TrainConfig {
  std::string model = "tiny";  // tiny, gpt2, or custom (the sizes below)
  int64_t n_layer = 0, n_head = 0, n_embd = 0, block_size = 0;
  double dropout = 0.0;
  bool no_bias = false;
  std::vector<std::string> data;
  bool synthetic = false;  // uniformly random tokens, no text and no tokenizer (benchmarks)
  int64_t vocab_size = 0;  // tokenizer's; 0: 4096 (tiny, custom) or 8192 (gpt2; 50257 synthetic)
  double val_fraction = 0.1;
  std::string out = "wick-gpt-out";
  int64_t batch_size = 16, seq_len = 0, grad_accum = 1, global_batch = 0;
  double lr = 0, min_lr = -1, weight_decay = 0.1, clip = 1.0, beta2 = 0.95;
  int64_t warmup = -1, max_steps = 0, eval_every = 0, eval_iters = 10, save_every = 0;
  int64_t stop_at = 0;  // end this run after this step (the schedule still spans max_steps)
  std::string device = "auto";
  std::string amp;
  std::string gpus_arg;
  bool distributed = false, graph = false;
  bool phases = false;  // each step's host and device time, phase by phase (waits for the GPU each step)
  int zero = 0;  // 1: ZeRO-1 over the DDP processes
  double peak_tflops = 0;
  std::string plot, log, resume;
  uint64_t seed = 1337;
  int workers = 1;
  int threads = 0;  // CPU threads of the ops (0: wick's default)
};

struct SampleConfig {
  std::string checkpoint = "wick-gpt-out";
  std::string prompt = "In the beginning";
  int64_t max_new_tokens = 200, num_samples = 1, top_k = 0;
  double temperature = 0.8, top_p = 1.0;
  uint64_t seed = 1337;
  std::string device = "cpu";
  bool no_cache = false;
  int threads = 0;
};

// A checkpoint path from --resume or --checkpoint: a file, or the folder holding ckpt.safetensors.
std::string checkpoint_file(const std::string& path) {
  return fs::is_directory(path) ? (fs::path(path) / "ckpt.safetensors").string() : path;
}

Device pick_device(const std::string& arg) {
  if (arg == "auto") return cuda::is_available() ? Device(kCUDA, 0) : Device(kCPU);
  Device d(arg);  // "[Device] invalid device string ..." for anything else
  if (d.is_cuda() && !cuda::is_available()) fail("--device " + arg + ": no CUDA device is available; use --device cpu");
  if (d.is_cuda() && !d.has_index()) d = Device(kCUDA, cuda::current_device());
  return d;
}

std::vector<int> parse_gpus(const std::string& arg) {
  std::vector<int> out;
  if (arg.empty()) return out;
  if (!cuda::is_available()) fail("--gpus " + arg + ": no CUDA device is available; use --device cpu");
  if (arg == "all") {
    for (int i = 0; i < cuda::device_count(); ++i) out.push_back(i);
    return out;
  }
  std::stringstream ss(arg);
  for (std::string item; std::getline(ss, item, ',');) {
    if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos)
      fail("--gpus " + arg + ": expected GPU indices such as 0,1, or all");
    const int g = std::stoi(item);
    if (g >= cuda::device_count() || std::find(out.begin(), out.end(), g) != out.end())
      fail("--gpus " + arg + ": GPU " + item + " is not visible or listed twice");
    out.push_back(g);
  }
  return out;
}

// The model's sizes: the preset's, then whatever was given explicitly.
gpt::GPTConfig model_config(const TrainConfig& c, int64_t tokenizer_vocab) {
  gpt::GPTConfig g = c.model == "gpt2" ? gpt::GPTConfig::gpt2(std::max<int64_t>(tokenizer_vocab, 50257))
                                       : gpt::GPTConfig::tiny(tokenizer_vocab);
  if (c.n_layer) g.n_layer = c.n_layer;
  if (c.n_head) g.n_head = c.n_head;
  if (c.n_embd) g.n_embd = c.n_embd;
  if (c.block_size) g.block_size = c.block_size;
  g.dropout = c.dropout;
  g.bias = !c.no_bias;
  g.check();
  return g;
}

// ---- the model's configuration in a checkpoint's metadata

void put_config(std::map<std::string, std::string>& m, const gpt::GPTConfig& g) {
  m["gpt.n_layer"] = std::to_string(g.n_layer);
  m["gpt.n_head"] = std::to_string(g.n_head);
  m["gpt.n_embd"] = std::to_string(g.n_embd);
  m["gpt.block_size"] = std::to_string(g.block_size);
  m["gpt.vocab_size"] = std::to_string(g.vocab_size);
  m["gpt.bias"] = g.bias ? "1" : "0";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", g.dropout);
  m["gpt.dropout"] = buf;
}

const std::string& meta(const std::map<std::string, std::string>& m, const std::string& key, const std::string& file) {
  auto it = m.find(key);
  if (it == m.end()) fail("'" + file + "' is not a wick-gpt checkpoint: its metadata has no " + key);
  return it->second;
}

gpt::GPTConfig read_config(const std::map<std::string, std::string>& m, const std::string& file) {
  gpt::GPTConfig g;
  g.n_layer = std::stoll(meta(m, "gpt.n_layer", file));
  g.n_head = std::stoll(meta(m, "gpt.n_head", file));
  g.n_embd = std::stoll(meta(m, "gpt.n_embd", file));
  g.block_size = std::stoll(meta(m, "gpt.block_size", file));
  g.vocab_size = std::stoll(meta(m, "gpt.vocab_size", file));
  g.bias = meta(m, "gpt.bias", file) == "1";
  g.dropout = std::stod(meta(m, "gpt.dropout", file));
  g.check();
  return g;
}

// The model's tensors for a checkpoint: lm_head.weight is wte.weight, stored once.
nn::StateDict model_state(const gpt::GPT& model) {
  nn::StateDict out;
  for (auto& [name, t] : model->state_dict())
    if (name != "lm_head.weight") out.emplace_back(name, t);
  return out;
}

// Loads a checkpoint's model tensors; a tensor of another shape raises load_state_dict's error,
// which names it and both shapes.
void load_model(gpt::GPT& model, const Checkpoint& part, const std::string& file) {
  TensorMap state = part.tensors;
  auto wte = state.find("wte.weight");
  if (wte == state.end()) fail("'" + file + "' holds no model.wte.weight");
  state["lm_head.weight"] = wte->second;
  try {
    model->load_state_dict(state);
  } catch (const Error& e) {
    fail("'" + file + "' does not fit this model (" + model->config.str() + "): " + e.what());
  }
}

// ---- text to token shards

// The tokenizer in out: read when a previous run left it, else trained on the text; the
// shards likewise (the last val_fraction of the tokens is the validation set). Only the lead
// process writes; the others wait for it.
text::Tokenizer prepare_corpus(const TrainConfig& c, int64_t vocab, bool lead, bool distributed) {
  const fs::path dir(c.out);
  const std::string model_path = (dir / "tokenizer.model").string();
  const std::string train_path = (dir / "train.tokens").string(), val_path = (dir / "val.tokens").string();
  if (lead && !(fs::exists(model_path) && fs::exists(train_path) && fs::exists(val_path))) {
    fs::create_directories(dir);
    const auto t0 = Clock::now();
    const std::string text = c.data.empty() ? text::bible_kjv() : text::read_corpus(c.data);
    const std::string source = c.data.empty() ? "the King James Bible (bible-kjv)"
                                              : std::to_string(c.data.size()) + " file(s)";
    std::optional<text::Tokenizer> tok;
    if (fs::exists(model_path)) {
      tok.emplace(text::Tokenizer::load(model_path));
    } else {
      std::cout << "tokenizer: training a " << vocab << "-piece BPE model on " << source << " ("
                << text.size() / 1024 << " KiB)" << std::endl;
      tok.emplace(text::Tokenizer::train(text, {.vocab_size = vocab}));
      tok->save(model_path);
    }
    std::vector<int64_t> ids = tok->encode(text);
    const auto n_val = int64_t(double(ids.size()) * c.val_fraction);
    if (n_val < 2 || int64_t(ids.size()) - n_val < 2)
      fail("the text gives " + std::to_string(ids.size()) + " tokens: too few to split off " +
           std::to_string(c.val_fraction) + " for validation");
    const auto split = ids.end() - n_val;
    text::write_shard(train_path, std::vector<int64_t>(ids.begin(), split), tok->vocab_size());
    text::write_shard(val_path, std::vector<int64_t>(split, ids.end()), tok->vocab_size());
    std::printf("tokens: %lld train, %lld validation, written to %s (%.1f s)\n", (long long)(ids.size() - n_val),
                (long long)n_val, dir.c_str(), std::chrono::duration<double>(Clock::now() - t0).count());
  }
  if (distributed) distributed::barrier();
  return text::Tokenizer::load(model_path);
}

// --synthetic: shards of uniformly random tokens below vocab (the same for a seed), enough for
// steps of tokens_per_step, and no tokenizer. What a benchmark against another framework's
// random tokens trains on. Only the lead process writes; the others wait for it.
void prepare_synthetic(const TrainConfig& c, int64_t vocab, int64_t train_tokens, bool lead, bool distributed) {
  const fs::path dir(c.out);
  if (lead) {
    fs::create_directories(dir);
    manual_seed(c.seed);  // the model's initialisation seeds again after this
    auto draw = [&](int64_t n) { return randint(vocab, {n}).to_vector<int64_t>(); };
    text::write_shard((dir / "train.tokens").string(), draw(train_tokens), vocab);
    text::write_shard((dir / "val.tokens").string(), draw(std::max<int64_t>(train_tokens / 64, 1 << 16)), vocab);
    std::printf("tokens: %lld random train tokens below %lld (--synthetic), written to %s\n",
                (long long)train_tokens, (long long)vocab, dir.c_str());
  }
  if (distributed) distributed::barrier();
}

// An epoch's order of a DistributedSampler, less its first `skip` samples once: the batches a
// resumed run took before it stopped (the loader starts at the next one without reading them).
class ResumeSampler : public data::Sampler {
 public:
  explicit ResumeSampler(std::shared_ptr<data::DistributedSampler> inner) : inner_(std::move(inner)) {}
  std::vector<int64_t> indices() const override {
    std::vector<int64_t> order = inner_->indices();
    order.erase(order.begin(), order.begin() + std::min<int64_t>(skip_, int64_t(order.size())));
    skip_ = 0;
    return order;
  }
  int64_t size() const override { return inner_->size(); }
  void skip_next(int64_t samples) { skip_ = samples; }
  data::DistributedSampler& inner() { return *inner_; }

 private:
  std::shared_ptr<data::DistributedSampler> inner_;
  mutable int64_t skip_ = 0;  // indices() is const, as the loader calls it
};

// --phases: where a step's time goes. Each phase's host time (from its first call to its last
// returning) beside its device time (CUDA events recorded at the same points). A phase whose host
// time exceeds its device time keeps the GPU waiting. The host waits for the GPU at each step's
// end, so that a phase's events measure that phase alone. The first three steps are left out.
// With gradient accumulation, "forward" is the first micro-batch's, "backward" the rest.
class PhaseClock {
 public:
  static constexpr const char* kNames[] = {"data", "forward", "backward", "clip", "optimizer"};
  static constexpr int kPhases = 5;

  explicit PhaseClock(bool cuda) : cuda_(cuda) {
    if (cuda_)
      for (int i = 0; i <= kPhases; ++i) events_.emplace_back(/*enable_timing=*/true);
  }
  // The start of phase i (kPhases: the end of the step).
  void mark(int i) {
    if (cuda_) events_[size_t(i)].record();
    host_[size_t(i)] = Clock::now();
  }
  // After mark(kPhases): waits for the device, then adds this step (unless it is a warm-up one).
  void end_step(bool counted) {
    if (cuda_) events_[kPhases].synchronize();
    const auto done = Clock::now();
    if (!counted) return;
    for (int i = 0; i < kPhases; ++i) {
      host_ms_[size_t(i)] += std::chrono::duration<double, std::milli>(host_[size_t(i) + 1] - host_[size_t(i)]).count();
      if (cuda_) device_ms_[size_t(i)] += events_[size_t(i)].elapsed_time(events_[size_t(i) + 1]);
    }
    wall_ms_ += std::chrono::duration<double, std::milli>(done - host_[0]).count();
    ++steps_;
  }
  void print() const {
    if (steps_ == 0) return;
    const double n = double(steps_);
    std::printf("phases (ms a step, mean of %lld steps):\n%-10s %8s %8s\n", (long long)steps_, "phase", "host",
                cuda_ ? "device" : "");
    for (int i = 0; i < kPhases; ++i)
{
      char device[32] = "";
      if (cuda_) std::snprintf(device, sizeof device, "%.2f", device_ms_[size_t(i)] / n);
      std::printf("%-10s %8.2f %8s\n", kNames[i], host_ms_[size_t(i)] / n, device);
    }
    std::printf("%-10s %8.2f\n", "step", wall_ms_ / n);
  }

 private:
  bool cuda_;
  std::vector<cuda::Event> events_;
  std::array<Clock::time_point, kPhases + 1> host_{};
  std::array<double, kPhases> host_ms_{}, device_ms_{};
  double wall_ms_ = 0;
  int64_t steps_ = 0;
};

// The training batches, epoch after epoch, with their position (epoch, batch within it) so that
// a resumed run starts at the batch an uninterrupted one would take next.
class Batches {
 public:
  Batches(const text::TokenWindows& windows, int64_t batch, uint64_t seed, int world, int rank, bool pin,
          int workers)
      : batch_(batch),
        sampler_(std::make_shared<ResumeSampler>(std::make_shared<data::DistributedSampler>(
            windows, data::DistributedSamplerOptions{
                         .num_replicas = world, .rank = rank, .shuffle = true, .seed = seed, .drop_last = true}))),
        loader_(windows, {.batch_size = batch,
                          .sampler = sampler_,
                          .num_workers = workers,
                          .pin_memory = pin,
                          .drop_last = true}) {
    if (loader_.size() < 1)
      fail("the training shard holds " + std::to_string(windows.size()) + " windows: fewer than a batch of " +
           std::to_string(batch) + " for each of " + std::to_string(world) + " process(es)");
  }

  // Starts at batch `index` of epoch `epoch`.
  void seek(uint64_t epoch, int64_t index) {
    if (index < 0 || index > loader_.size())
      fail("the checkpoint's data position (batch " + std::to_string(index) + ") lies outside an epoch of " +
           std::to_string(loader_.size()) + " batches");
    epoch_ = epoch;
    sampler_->skip_next(index * batch_);
    start_epoch();
    index_ = index;
  }

  data::Example<>& next() {
    if (!started_ || it_ == loader_.end()) {
      if (started_) ++epoch_;
      start_epoch();
    }
    current_ = *it_;
    ++it_;
    ++index_;
    return current_;
  }

  uint64_t epoch() const { return epoch_; }
  int64_t index() const { return index_; }  // batches taken in this epoch

 private:
  void start_epoch() {
    sampler_->inner().set_epoch(epoch_);
    it_ = loader_.begin();
    index_ = 0;
    started_ = true;
  }

  int64_t batch_;
  std::shared_ptr<ResumeSampler> sampler_;
  data::DataLoader loader_;
  data::DataLoader::Iterator it_;
  data::Example<> current_;
  uint64_t epoch_ = 0;
  int64_t index_ = 0;
  bool started_ = false;
};

// The loss of the model over x and y stacked as [B, 2, T]: the one-tensor forward that
// DistributedDataParallel and DataParallel call.
class LossOfImpl : public nn::Module {
 public:
  explicit LossOfImpl(const gpt::GPTConfig& config) { gpt = register_module("gpt", gpt::GPT(config)); }
  Tensor forward(const Tensor& xy) { return gpt->forward(xy.select(1, 0), xy.select(1, 1)).loss.unsqueeze(0); }
  gpt::GPT gpt{nullptr};
};
WICK_MODULE(LossOf);

// Peak dense FLOP/s of the device for MFU: --peak-tflops, else the bf16 tensor-core peak of the
// GPUs whose figure is known when training in bf16; 0 (MFU not shown) otherwise.
double peak_flops(const TrainConfig& c, Device device, bool bf16) {
  if (c.peak_tflops > 0) return c.peak_tflops * 1e12;
  if (!device.is_cuda() || !bf16) return 0;
  const std::string name = cuda::get_device_name(int(device.index()));
  if (name.find("H100") != std::string::npos || name.find("H200") != std::string::npos) return 989.4e12;
  if (name.find("A100") != std::string::npos) return 312e12;
  return 0;
}

std::string format(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// ---- train

int run_train(TrainConfig c) {
  const auto start = Clock::now();
  if (c.threads > 0) set_num_threads(c.threads);
  bool bf16 = false;
  if (c.amp == "bf16" || c.amp == "bfloat16") bf16 = true;
  else if (!c.amp.empty()) fail("--amp " + c.amp + ": only bf16 is offered (GPT training needs no loss scaling)");
  if (c.batch_size < 1 || c.grad_accum < 1) fail("--batch-size and --grad-accum must be at least 1");
  if (!(c.val_fraction > 0 && c.val_fraction < 1)) fail("--val-fraction must lie in (0, 1)");
  if (c.zero != 0 && c.zero != 1) fail("--zero " + std::to_string(c.zero) + ": only 0 and 1 (ZeRO-1) are offered");
  if (c.zero && !c.distributed) fail("--zero 1 shards the optimizer state over the processes of a --distributed run");
  if (c.distributed && !c.gpus_arg.empty()) fail("--distributed runs one process per GPU: give --device, not --gpus");

  // Devices and processes.
  Device device(kCPU);
  int world = 1, rank = 0;
  std::vector<int> gpus;
  if (c.distributed) {
    const Device kind = pick_device(c.device == "auto" ? "auto" : c.device);
    distributed::init_process_group(kind.is_cuda() ? "nccl" : "mpi");
    world = distributed::get_world_size();
    rank = distributed::get_rank();
    if (kind.is_cuda()) {
      const int local = distributed::get_local_rank();
      if (local >= cuda::device_count()) fail("--distributed: local rank " + std::to_string(local) + " has no GPU");
      cuda::set_device(local);
      device = Device(kCUDA, local);
    }
  } else {
    gpus = parse_gpus(c.gpus_arg);
    if (!gpus.empty() && c.device != "auto") fail("give either --device or --gpus, not both");
    device = gpus.empty() ? pick_device(c.device) : Device(kCUDA, gpus[0]);
  }
  const bool lead = rank == 0;
  if (bf16 && device.is_cpu()) fail("--amp bf16 is for GPUs (autocast on CUDA); train on the CPU in float32");
  if (c.graph) {
    if (device.is_cpu()) fail("--graph captures the step as a CUDA graph: it needs a GPU (--device cuda)");
    if (c.distributed || gpus.size() > 1) fail("--graph runs on one GPU: not with --distributed or several --gpus");
    if (c.dropout > 0) fail("--graph: a captured step cannot draw random numbers; use --dropout 0");
  }

  // The run's previous state, when resuming.
  std::optional<Checkpoint> ckpt;
  std::string ckpt_file;
  if (!c.resume.empty()) {
    ckpt_file = checkpoint_file(c.resume);
    if (!fs::exists(ckpt_file)) fail("--resume " + c.resume + ": no checkpoint at '" + ckpt_file + "'");
    ckpt = load_checkpoint(ckpt_file);
    // The tokenizer and shards are the checkpoint's neighbours unless --out says otherwise.
    if (c.out == "wick-gpt-out") c.out = fs::path(ckpt_file).parent_path().string();
    if (c.out.empty()) c.out = ".";
  }

  // Text, tokenizer, shards (--synthetic: random tokens, below, once the step's size is known).
  const int64_t vocab = c.vocab_size ? c.vocab_size : c.model != "gpt2" ? 4096 : c.synthetic ? 50257 : 8192;
  if (c.synthetic && !c.data.empty()) fail("--synthetic trains on random tokens: it takes no --data");
  std::optional<text::Tokenizer> tokenizer;
  if (!c.synthetic) tokenizer.emplace(prepare_corpus(c, vocab, lead, c.distributed));
  gpt::GPTConfig config = model_config(c, tokenizer ? tokenizer->vocab_size() : vocab);
  const int64_t T = c.seq_len ? c.seq_len : config.block_size;
  if (T > config.block_size) fail("--seq-len " + std::to_string(T) + " exceeds the block size " + std::to_string(config.block_size));
  if (c.global_batch) {
    const int64_t per_micro = c.batch_size * T * world;
    if (c.global_batch % per_micro)
      fail("--global-batch " + std::to_string(c.global_batch) + " tokens is not a multiple of batch-size x seq-len x processes = " +
           std::to_string(per_micro));
    c.grad_accum = c.global_batch / per_micro;
  }
  const int64_t tokens_per_step = c.batch_size * T * world * c.grad_accum;
  const bool tiny = c.model != "gpt2";
  if (c.lr <= 0) c.lr = tiny ? 1e-3 : 6e-4;
  if (c.min_lr < 0) c.min_lr = c.lr / 10;
  if (c.max_steps <= 0) c.max_steps = tiny ? 300 : 5000;
  if (c.warmup < 0) c.warmup = tiny ? 20 : 700;
  if (c.eval_every <= 0) c.eval_every = tiny ? 50 : 250;
  if (c.save_every <= 0) c.save_every = c.eval_every;
  if (c.synthetic && !fs::exists(fs::path(c.out) / "train.tokens"))
    prepare_synthetic(c, vocab, std::min<int64_t>(tokens_per_step * (c.max_steps + 1), int64_t(1) << 24), lead,
                      c.distributed);

  text::TokenWindows train_windows({(fs::path(c.out) / "train.tokens").string()}, T);
  text::TokenWindows val_windows({(fs::path(c.out) / "val.tokens").string()}, T);
  if (train_windows.vocab_size() > config.vocab_size)
    fail("the shards' vocabulary (" + std::to_string(train_windows.vocab_size()) + ") exceeds the model's (" +
         std::to_string(config.vocab_size) + ")");

  // The model: the same initial weights on every process.
  manual_seed(c.seed);
  LossOf net(config);
  gpt::GPT model = net->gpt;
  model->to(device);
  std::unique_ptr<optim::Optimizer> optimizer;
  distributed::optim::ZeroRedundancyOptimizer* zero = nullptr;
  {
    auto adamw = model->configure_optimizer(c.weight_decay, c.lr, 0.9, c.beta2);
    if (c.zero == 1) {
      const auto& defaults = static_cast<const optim::AdamOptions&>(adamw->defaults());
      auto z = std::make_unique<distributed::optim::ZeroRedundancyOptimizer>(
          adamw->param_groups(), distributed::optim::optimizer_class<optim::AdamW>(defaults));
      zero = z.get();
      optimizer = std::move(z);
    } else {
      optimizer = std::move(adamw);
    }
  }
  const gpt::LRSchedule schedule{.lr = c.lr, .min_lr = c.min_lr, .warmup = c.warmup, .max_steps = c.max_steps};
  optim::LambdaLR scheduler(*optimizer, [schedule](int64_t step) { return gpt::lr_at(schedule, step) / schedule.lr; });

  Batches batches(train_windows, c.batch_size, c.seed, world, rank, device.is_cuda(), c.workers);
  int64_t step = 0;
  train::Curves curves;
  if (ckpt) {
    const auto& m = ckpt->metadata;
    auto expect_same = [&](const std::string& key, int64_t now, const std::string& flag) {
      const int64_t then = std::stoll(meta(m, key, ckpt_file));
      if (then != now)
        fail("--resume: the checkpoint was trained with " + flag + " " + std::to_string(then) + ", this run has " +
             std::to_string(now) + "; give the same to continue it exactly");
    };
    expect_same("run.batch_size", c.batch_size, "--batch-size");
    expect_same("run.seq_len", T, "--seq-len");
    expect_same("run.world_size", world, "processes:");
    load_model(model, ckpt->part("model."), ckpt_file);
    optimizer->load_state_dict(ckpt->part("optim."));
    scheduler.load_state_dict(ckpt->part("sched."));
    step = std::stoll(meta(m, "run.step", ckpt_file));
    batches.seek(std::stoull(meta(m, "run.epoch", ckpt_file)), std::stoll(meta(m, "run.batch", ckpt_file)));
    set_rng_state(ckpt->tensors.at("rng.cpu"));
    if (device.is_cuda() && ckpt->tensors.count("rng.cuda")) set_rng_state(ckpt->tensors.at("rng.cuda"), device);
    ckpt.reset();
    // The learning rate of the next step under this run's schedule (the same as the saved one
    // when the run continues unchanged; the new one when --max-steps grew).
    for (auto& group : optimizer->param_groups()) group.options().set_lr(gpt::lr_at(schedule, step));
  }
  const int64_t end = c.stop_at > 0 ? std::min(c.stop_at, c.max_steps) : c.max_steps;
  if (step >= end) fail("nothing to do: the run is at step " + std::to_string(step) + ", --max-steps is " +
                        std::to_string(end));

  nn::DataParallel parallel{nullptr};
  if (gpus.size() > 1) parallel = nn::DataParallel(net, gpus);
  nn::parallel::DistributedDataParallel ddp{nullptr};
  if (c.distributed) {
    nn::parallel::DistributedDataParallelOptions options;
    if (device.is_cuda()) options.device_ids({int(device.index())});
    ddp = nn::parallel::DistributedDataParallel(net, options);
  }
  auto loss_of = [&](const Tensor& xy) {
    std::optional<AutocastGuard> autocast;
    if (bf16) autocast.emplace(device.type(), kBFloat16);
    Tensor l = ddp ? ddp(xy) : parallel ? parallel(xy) : net(xy);
    return l.mean();
  };

  std::string where = device.str();
  if (parallel) where = std::to_string(gpus.size()) + " GPUs (DataParallel)";
  if (c.distributed) where = std::to_string(world) + " processes (" + distributed::get_backend() + ", DistributedDataParallel)";
  if (bf16) where += ", amp bf16";
  if (lead) {
    std::printf("wick-gpt: %s model, %.2fM parameters (%s)\n", c.model.c_str(), double(model->num_parameters()) / 1e6,
                config.str().c_str());
    std::printf("training on %s: %lld tokens a step (%lld x %lld x %d process(es) x %lld micro-steps), "
                "%lld steps, lr %g -> %g (warm-up %lld), seed %llu%s\n",
                where.c_str(), (long long)tokens_per_step, (long long)c.batch_size, (long long)T, world,
                (long long)c.grad_accum, (long long)c.max_steps, c.lr, c.min_lr, (long long)c.warmup,
                (unsigned long long)c.seed, step ? (", resumed at step " + std::to_string(step)).c_str() : "");
    std::fflush(stdout);
  }

  std::ofstream log;
  if (lead && !c.log.empty()) {
    log.open(c.log, step ? std::ios::app : std::ios::trunc);
    if (!log) fail("--log " + c.log + ": cannot open it for writing");
  }

  auto evaluate = [&]() {
    NoGradGuard no_grad;
    model->eval();
    data::DataLoader val(val_windows, {.batch_size = c.batch_size, .drop_last = false});
    double sum = 0;
    int64_t n = 0;
    for (auto& b : val) {
      if (n == c.eval_iters) break;
      std::optional<AutocastGuard> autocast;
      if (bf16) autocast.emplace(device.type(), kBFloat16);
      sum += model->forward(b.data.to(device), b.target.to(device)).loss.item<double>();
      ++n;
    }
    model->train();
    return n ? sum / double(n) : std::nan("");
  };

  auto save = [&](const std::string& path, int64_t steps_done) {
    Checkpoint out;
    out.put("model.", model_state(model));
    out.put("optim.", optimizer->state_dict());
    out.put("sched.", scheduler.state_dict());
    out.tensors["rng.cpu"] = get_rng_state();
    if (device.is_cuda()) out.tensors["rng.cuda"] = get_rng_state(device);
    auto& m = out.metadata;
    put_config(m, config);
    m["run.step"] = std::to_string(steps_done);
    m["run.epoch"] = std::to_string(batches.epoch());
    m["run.batch"] = std::to_string(batches.index());
    m["run.batch_size"] = std::to_string(c.batch_size);
    m["run.seq_len"] = std::to_string(T);
    m["run.world_size"] = std::to_string(world);
    m["run.grad_accum"] = std::to_string(c.grad_accum);
    m["run.seed"] = std::to_string(c.seed);
    m["run.model"] = c.model;
    if (tokenizer) m["tokenizer"] = "tokenizer.model";
    save_checkpoint(out, path);
  };
  const std::string ckpt_path = (fs::path(c.out) / "ckpt.safetensors").string();

  // --graph: the forward and backward of one micro-batch captured once, replayed each step on
  // static input buffers; clipping and AdamW run outside the graph. The gradients are the
  // graph's own tensors, overwritten by each replay.
  std::unique_ptr<cuda::Graph> graph;
  Tensor static_xy, static_loss;
  if (c.graph && c.grad_accum != 1) fail("--graph captures one micro-batch a step: give --grad-accum 1");

  const double peak = peak_flops(c, device, bf16);
  const double flops_per_token = model->flops_per_token(T);
  std::optional<train::Progress> bar;
  if (lead) {
    bar.emplace("train", end - step);
    bar->set_unit("tokens");
  }
  const int64_t read_every = device.is_cuda() ? 10 : 1;  // reading a loss waits for the GPU
  // The speed of the steady state: the time between two loss reads (each waits for the device)
  // over the steps between them, for the spans without a validation pass or a checkpoint; the
  // first span (warm-up, a graph's capture) is left out.
  std::vector<double> span_ms;
  auto span_start = Clock::now();
  int64_t span_steps = 0;
  bool span_clean = false;
  std::vector<Tensor> params = model->parameters();
  std::optional<PhaseClock> phases;
  if (c.phases && lead && !c.graph) phases.emplace(device.is_cuda());
  const int64_t first_step = step;
  for (; step < end; ++step) {
    const double lr = optimizer->param_groups()[0].options().get_lr();
    if (phases) phases->mark(0);
    Tensor loss_sum = zeros({}, TensorOptions(kFloat32).device(device));
    if (!graph) optimizer->zero_grad();
    for (int64_t micro = 0; micro < c.grad_accum; ++micro) {
      data::Example<>& b = batches.next();
      // Inputs and targets go over one by one from the loader's pinned memory, without the host
      // waiting; stacked on the CPU, they would be a pageable tensor whose copy waits.
      Tensor xy = stack({b.data.to(device, /*non_blocking=*/true), b.target.to(device, /*non_blocking=*/true)}, 1);
      if (phases && micro == 0) phases->mark(1);
      if (c.graph) {
        if (!graph) {
          // Warm up on a side stream (allocations settle), then capture.
          static_xy = xy.clone();
          cuda::Stream side = cuda::Stream::create(int(device.index()));
          {
            cuda::StreamGuard guard(side);
            for (int i = 0; i < 3; ++i) {
              optimizer->zero_grad();
              loss_of(static_xy).backward();
            }
          }
          cuda::current_stream(int(device.index())).wait_stream(side);
          optimizer->zero_grad();
          graph = std::make_unique<cuda::Graph>();
          {
            cuda::GraphCapture capture(*graph);
            static_loss = loss_of(static_xy);
            static_loss.backward();
          }
        }
        static_xy.copy_(xy);
        graph->replay();
        loss_sum += static_loss.detach();
        continue;
      }
      std::optional<nn::parallel::DistributedDataParallelImpl::NoSyncGuard> no_sync;
      if (ddp && micro + 1 < c.grad_accum) no_sync.emplace(*ddp);
      Tensor loss = loss_of(xy) / double(c.grad_accum);
      if (phases && micro == 0) phases->mark(2);
      loss.backward();
      loss_sum += loss.detach();
    }
    if (phases) phases->mark(3);
    const Tensor norm = nn::utils::clip_grad_norm_(params, c.clip);
    if (phases) phases->mark(4);
    optimizer->step();
    scheduler.step();
    if (phases) {
      phases->mark(PhaseClock::kPhases);
      phases->end_step(/*counted=*/step - first_step >= 3);
    }
    if (c.distributed) distributed::all_reduce(loss_sum, distributed::ReduceOp::AVG);

    const bool last = step + 1 == end;
    std::optional<double> loss;
    if (lead && ((step + 1) % read_every == 0 || last || log.is_open())) loss = loss_sum.item<double>();
    if (lead && loss) {
      curves.loss.push_back({double(step + 1), *loss});
      if (log.is_open()) {
        char line[128];
        std::snprintf(line, sizeof line, "step %lld loss %.9g lr %.9g norm %.6g\n", (long long)(step + 1), *loss, lr,
                      norm.item<double>());
        log << line << std::flush;
      }
      const double rate = bar->samples_per_second();
      const std::string mfu = peak > 0 ? format("MFU %.1f%%", 100 * rate * flops_per_token / peak) : "MFU n/a";
      bar->set_note(format("loss %.4f", *loss) + "  lr " + format("%.2e", lr) + "  " + mfu, true);
    }
    if (bar) bar->step(tokens_per_step, loss);
    ++span_steps;
    if (loss) {
      const auto now = Clock::now();
      if (span_clean) span_ms.push_back(std::chrono::duration<double, std::milli>(now - span_start).count() / double(span_steps));
      span_start = now;
      span_steps = 0;
      span_clean = true;
    }

    if (((step + 1) % c.eval_every == 0 || last) && lead) {
      span_clean = false;
      const double val = evaluate();
      curves.epoch_loss.push_back({double(step + 1), val});
      bar->finish();
      std::printf("step %lld: train loss %.4f, val loss %.4f\n", (long long)(step + 1),
                  loss ? *loss : std::nan(""), val);
      if (log.is_open()) log << "step " << step + 1 << " val " << format("%.9g", val) << "\n" << std::flush;
      std::fflush(stdout);
      if (!last) {
        bar.emplace("train", end - step - 1);
        bar->set_unit("tokens");
      }
    }
    const bool save_now = (step + 1) % c.save_every == 0 || last;
    if (save_now && zero) zero->consolidate_state_dict(0);  // every rank takes part
    if (save_now && lead) {
      span_clean = false;
      save(ckpt_path, step + 1);
    }
  }

  if (c.distributed) distributed::destroy_process_group();
  if (!lead) return 0;
  if (bar) bar->finish();
  if (phases) phases->print();
  if (!c.plot.empty() && !curves.loss.empty()) {
    curves.title = "wick-gpt: " + c.model + " (" + std::to_string(model->num_parameters()) + " parameters), " + where;
    curves.epochs = int(c.max_steps);
    curves.x_label = "step";
    curves.loss_label = "training loss";
    curves.epoch_loss_label = "validation loss";
    curves.accuracy_panel = false;
    train::write_svg(curves, c.plot);
    std::cout << "plot: " << c.plot << "\n";
  }
  std::printf("checkpoint: %s (step %lld), %s in all\n", ckpt_path.c_str(), (long long)end,
              train::format_duration(std::chrono::duration<double>(Clock::now() - start).count()).c_str());
  if (!span_ms.empty()) {
    std::sort(span_ms.begin(), span_ms.end());
    const double ms = span_ms[span_ms.size() / 2];
    const double rate = double(tokens_per_step) / (ms * 1e-3);
    std::printf("speed: %.2f ms a step, %.0f tokens/s%s (the median of %zu spans of %lld steps)\n", ms, rate,
                peak > 0 ? format(", MFU %.1f%%", 100 * rate * flops_per_token / peak).c_str() : "", span_ms.size(),
                (long long)read_every);
  }
  if (device.is_cuda()) std::cout << "peak GPU memory: " << cuda::max_memory_allocated(int(device.index())) / (1 << 20) << " MiB\n";
  return 0;
}

// ---- sample

int run_sample(const SampleConfig& c) {
  if (c.threads > 0) set_num_threads(c.threads);
  const std::string file = checkpoint_file(c.checkpoint);
  if (!fs::exists(file)) fail("--checkpoint " + c.checkpoint + ": no checkpoint at '" + file + "'");
  const Device device = pick_device(c.device);
  Checkpoint ckpt = load_checkpoint(file);
  const gpt::GPTConfig config = read_config(ckpt.metadata, file);
  if (!ckpt.metadata.count("tokenizer"))
    fail("'" + file + "' was trained on random tokens (--synthetic): it has no tokenizer to sample with");
  const fs::path tok_path = fs::path(file).parent_path() / meta(ckpt.metadata, "tokenizer", file);
  text::Tokenizer tokenizer = text::Tokenizer::load(tok_path.string());
  gpt::GPT model(config);
  load_model(model, ckpt.part("model."), file);
  model->to(device);
  model->eval();

  std::vector<int64_t> ids = tokenizer.encode(c.prompt);
  if (ids.empty()) fail("--prompt is empty: give some text to continue");
  Tensor prompt = from_blob(ids.data(), {1, int64_t(ids.size())}, kInt64).clone().to(device);
  for (int64_t i = 0; i < c.num_samples; ++i) {
    Tensor out = model->generate(prompt, {.max_new_tokens = c.max_new_tokens,
                                          .temperature = c.temperature,
                                          .top_k = c.top_k,
                                          .top_p = c.top_p,
                                          .seed = c.seed + uint64_t(i),
                                          .vocab_limit = tokenizer.vocab_size(),
                                          .use_cache = !c.no_cache});
    std::cout << tokenizer.decode(out[0].cpu().to_vector<int64_t>()) << "\n";
    if (i + 1 < c.num_samples) std::cout << "---\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"wick-gpt: trains a GPT language model on text, resumes it, and samples from it."};
  app.require_subcommand(1);

  TrainConfig t;
  CLI::App* tr = app.add_subcommand("train", "train (or --resume) a GPT on text");
  tr->add_option("--model", t.model, "tiny (4 layers, 128 wide, context 128) or gpt2 (GPT-2 small)")
      ->check(CLI::IsMember({"tiny", "gpt2"}))
      ->capture_default_str();
  tr->add_option("--n-layer", t.n_layer, "layers (instead of the preset's)");
  tr->add_option("--n-head", t.n_head, "attention heads");
  tr->add_option("--n-embd", t.n_embd, "width");
  tr->add_option("--block-size", t.block_size, "the longest context");
  tr->add_option("--dropout", t.dropout, "dropout probability")->capture_default_str();
  tr->add_flag("--no-bias", t.no_bias, "no biases in the Linear layers and LayerNorms");
  tr->add_option("--data", t.data, "text files (default: the King James Bible of Debian's bible-kjv)");
  tr->add_flag("--synthetic", t.synthetic, "uniformly random tokens instead of text, no tokenizer (for benchmarks)");
  tr->add_option("--vocab-size", t.vocab_size, "pieces of the tokenizer (default 4096; gpt2: 8192)");
  tr->add_option("--val-fraction", t.val_fraction, "the share of the tokens held out for validation")
      ->capture_default_str();
  tr->add_option("--out", t.out, "folder of the tokenizer, token shards and checkpoint")->capture_default_str();
  tr->add_option("--batch-size", t.batch_size, "sequences of a micro-batch, per process")->capture_default_str();
  tr->add_option("--seq-len", t.seq_len, "tokens of a sequence (default: the block size)");
  tr->add_option("--grad-accum", t.grad_accum, "micro-batches a step")->capture_default_str();
  tr->add_option("--global-batch", t.global_batch, "tokens a step (sets --grad-accum)");
  tr->add_option("--lr", t.lr, "peak learning rate (default 1e-3; gpt2: 6e-4)");
  tr->add_option("--min-lr", t.min_lr, "learning rate at the end of the cosine decay (default lr / 10)");
  tr->add_option("--warmup", t.warmup, "steps of linear warm-up (default 20; gpt2: 700)");
  tr->add_option("--max-steps", t.max_steps, "optimizer steps in all (default 300; gpt2: 5000)");
  tr->add_option("--stop-at", t.stop_at, "end this run after this step, checkpointed (--resume continues it)");
  tr->add_option("--clip", t.clip, "gradient norm clipping")->capture_default_str();
  tr->add_option("--weight-decay", t.weight_decay, "AdamW weight decay of the matrices")->capture_default_str();
  tr->add_option("--eval-every", t.eval_every, "steps between validation losses (default 50; gpt2: 250)");
  tr->add_option("--eval-iters", t.eval_iters, "validation batches a validation loss averages")->capture_default_str();
  tr->add_option("--save-every", t.save_every, "steps between checkpoints (default: --eval-every)");
  tr->add_option("--device", t.device, "auto, cpu, cuda or cuda:N")->capture_default_str();
  tr->add_option("--amp", t.amp, "bf16: autocast on the GPU");
  tr->add_option("--gpus", t.gpus_arg, "GPU indices (0,1) or all: nn::DataParallel over them");
  tr->add_flag("--distributed", t.distributed,
               "one process of a run started by wick-launch, mpirun or srun: DistributedDataParallel");
  tr->add_option("--zero", t.zero, "1: ZeRO-1, the AdamW state sharded over the --distributed processes");
  tr->add_flag("--graph", t.graph, "replay the forward and backward pass as a CUDA graph");
  tr->add_flag("--phases", t.phases,
               "print where a step's time goes: host and GPU time of its data, forward, backward, clipping and "
               "optimizer (waits for the GPU after each step)");
  tr->add_option("--peak-tflops", t.peak_tflops, "the device's peak TFLOP/s, for MFU");
  tr->add_option("--plot", t.plot, "write the training and validation losses to this SVG file");
  tr->add_option("--log", t.log, "append each step's loss, learning rate and gradient norm to this file");
  tr->add_option("--resume", t.resume, "continue the run of this checkpoint (a file, or a folder holding ckpt.safetensors)");
  tr->add_option("--seed", t.seed, "seed of the weights, the batches' order and dropout")->capture_default_str();
  tr->add_option("--workers", t.workers, "data loader worker threads")->capture_default_str();
  tr->add_option("--threads", t.threads, "CPU threads of the ops (default: wick's)");

  SampleConfig s;
  CLI::App* sa = app.add_subcommand("sample", "continue a prompt with a trained model");
  sa->add_option("--checkpoint", s.checkpoint, "a checkpoint, or the folder holding ckpt.safetensors")
      ->capture_default_str();
  sa->add_option("--prompt", s.prompt, "the text to continue")->capture_default_str();
  sa->add_option("--max-new-tokens", s.max_new_tokens, "tokens to add")->capture_default_str();
  sa->add_option("--num-samples", s.num_samples, "continuations (seeds seed, seed + 1, ...)")->capture_default_str();
  sa->add_option("--temperature", s.temperature, "0 takes the most likely token")->capture_default_str();
  sa->add_option("--top-k", s.top_k, "draw among the k most likely tokens (0: all)")->capture_default_str();
  sa->add_option("--top-p", s.top_p, "draw among the most likely tokens holding this probability")
      ->capture_default_str();
  sa->add_option("--seed", s.seed, "seed of the draws")->capture_default_str();
  sa->add_option("--device", s.device, "cpu, cuda or cuda:N")->capture_default_str();
  sa->add_option("--threads", s.threads, "CPU threads of the ops (default: wick's)");
  sa->add_flag("--no-cache", s.no_cache, "run the whole context again for each token (slow; for checking)");

  CLI11_PARSE(app, argc, argv);
  try {
    return tr->parsed() ? run_train(t) : run_sample(s);
  } catch (const std::exception& e) {
    std::cerr << "wick-gpt: " << e.what() << "\n";
    return 1;
  }
}
