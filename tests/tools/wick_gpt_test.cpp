// wick-gpt run as a program on the CPU: the tiny model on the Book of Genesis learns (its
// validation loss falls below a measured bound), a run stopped half way and resumed logs the
// same losses bit for bit as one that ran through, the checkpoint holds what it should,
// sampling works with and without the KV cache alike, and bad requests get clear errors.
//
// The runs use one CPU thread (--threads 1): ctest runs tests side by side, and OpenMP teams
// of several threads on shared cores lose more to waiting than they gain.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <sys/wait.h>

#include "../data/idx_files.h"
#include "run_program.h"
#include "wick/wick.h"

using wick::testing_data::TempDir;

namespace {

using wick::testing::Output;

Output run_gpt(const std::string& args) {
#ifdef WICK_GPT_PATH
  return wick::testing::run_program(WICK_GPT_PATH, args);
#else
  (void)args;
  return {};
#endif
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string read(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

// The "step N val X" lines' values, in order.
std::vector<double> val_losses(const std::string& log) {
  std::vector<double> out;
  std::regex re(R"(step \d+ val ([0-9.]+))");
  for (auto it = std::sregex_iterator(log.begin(), log.end(), re); it != std::sregex_iterator(); ++it)
    out.push_back(std::stod((*it)[1]));
  return out;
}

// Genesis as a text file (about 200 KB); empty when bible-kjv is not installed.
std::string write_genesis(const TempDir& dir) {
  std::string text;
  try {
    text = wick::text::bible_kjv("gen1:1-gen50:26");
  } catch (const wick::Error&) {
    return "";
  }
  std::ofstream(dir.file("genesis.txt")) << text;
  return dir.file("genesis.txt");
}

}  // namespace

class WickGpt : public ::testing::Test {
 protected:
  void SetUp() override {
#ifndef WICK_GPT_PATH
    GTEST_SKIP() << "wick-gpt is not built (WICK_BUILD_TOOLS=OFF)";
#endif
  }
};

// 60 steps of 8 x 64 tokens with dropout 0.1: the validation loss goes from ln(512) = 6.24 to
// 4.18 (measured); the bound leaves room for other BLAS libraries' rounding.
TEST_F(WickGpt, TrainsResumesExactlyAndSamples) {
  TempDir dir;
  const std::string genesis = write_genesis(dir);
  if (genesis.empty()) GTEST_SKIP() << "bible-kjv is not installed";
  const std::string base = "train --model tiny --device cpu --threads 1 --data '" + genesis +
                           "' --vocab-size 512 --seq-len 64 --max-steps 60 --warmup 10 --lr 3e-3 "
                           "--dropout 0.1 --eval-every 30 --eval-iters 4 ";
  const std::string common = base + "--batch-size 8 ";
  const std::string a = dir.file("a"), b = dir.file("b");
  Output full = run_gpt(common + "--out '" + a + "' --log '" + dir.file("a.log") + "' --plot '" + dir.file("a.svg") + "'");
  ASSERT_EQ(full.status, 0) << full.text;
  EXPECT_TRUE(has(full.text, "tokenizer: training a 512-piece BPE model on 1 file(s)")) << full.text;
  EXPECT_TRUE(has(full.text, "tiny model, 0.86M parameters (n_layer=4, n_head=4, n_embd=128, block_size=128, "
                             "vocab_size=512, dropout=0.1, bias=true)"))
      << full.text;
  EXPECT_TRUE(has(full.text, "512 tokens a step (8 x 64 x 1 process(es) x 1 micro-steps)")) << full.text;
  EXPECT_TRUE(has(full.text, "MFU n/a")) << full.text;
  const std::string log = read(dir.file("a.log"));
  const auto vals = val_losses(log);
  ASSERT_EQ(vals.size(), 2u) << log;
  EXPECT_LT(vals[1], 4.5) << log;
  EXPECT_LT(vals[1], vals[0]) << log;
  EXPECT_TRUE(has(log, "step 1 loss 6.")) << log;  // starts near ln(512)
  const std::string svg = read(dir.file("a.svg"));
  EXPECT_TRUE(has(svg, "validation loss")) << svg.substr(0, 200);
  EXPECT_TRUE(has(svg, ">step</text>"));

  // The checkpoint: the model (wte once), AdamW's state, the scheduler, the generators, and where
  // the run stands.
  const std::string ckpt = a + "/ckpt.safetensors";
  auto meta = wick::load_metadata(ckpt);
  EXPECT_EQ(meta.at("run.step"), "60");
  EXPECT_EQ(meta.at("gpt.n_layer"), "4");
  EXPECT_EQ(meta.at("gpt.vocab_size"), "512");
  EXPECT_EQ(meta.at("optim.optimizer"), "AdamW");
  EXPECT_TRUE(has(meta.at("sched.scheduler"), "LambdaLR"));
  auto state = wick::load(ckpt);
  EXPECT_EQ(state.at("model.wte.weight").sizes().vec(), (std::vector<int64_t>{512, 128}));
  EXPECT_EQ(state.count("model.lm_head.weight"), 0u);
  EXPECT_EQ(state.at("optim.state.0.exp_avg").sizes().vec(), (std::vector<int64_t>{512, 128}));
  EXPECT_EQ(state.at("rng.cpu").numel(), 16);

  // Half the steps, then a resume: the same losses, bit for bit.
  Output first = run_gpt(common + "--out '" + b + "' --stop-at 30 --log '" + dir.file("b.log") + "'");
  ASSERT_EQ(first.status, 0) << first.text;
  EXPECT_EQ(wick::load_metadata(b + "/ckpt.safetensors").at("run.step"), "30");
  Output second = run_gpt(common + "--resume '" + b + "' --log '" + dir.file("b.log") + "'");
  ASSERT_EQ(second.status, 0) << second.text;
  EXPECT_TRUE(has(second.text, "resumed at step 30")) << second.text;
  EXPECT_EQ(read(dir.file("b.log")), log);

  // Sampling: greedy and seeded draws, the same with and without the cache.
  const std::string sample = "sample --threads 1 --checkpoint '" + a + "' --prompt 'And God said' --max-new-tokens 40 ";
  for (const std::string how : {"--temperature 0", "--temperature 0.9 --top-k 40 --top-p 0.95 --seed 7"}) {
    Output cached = run_gpt(sample + how);
    ASSERT_EQ(cached.status, 0) << cached.text;
    EXPECT_TRUE(cached.text.starts_with("And God said")) << cached.text;
    EXPECT_GT(cached.text.size(), 60u) << cached.text;
    Output uncached = run_gpt(sample + how + " --no-cache");
    ASSERT_EQ(uncached.status, 0) << uncached.text;
    EXPECT_EQ(cached.text, uncached.text) << how;
  }

  // A checkpoint of another shape: the tensor and both shapes are named.
  Output wider = run_gpt(common + "--n-embd 64 --resume '" + b + "'");
  EXPECT_EQ(wider.status, 1) << wider.text;
  EXPECT_TRUE(has(wider.text, "size mismatch for wte.weight")) << wider.text;
  EXPECT_TRUE(has(wider.text, "[512, 128]")) << wider.text;
  EXPECT_TRUE(has(wider.text, "[512, 64]")) << wider.text;
  // Resuming with another batch would not continue the same run.
  Output other = run_gpt(base + "--batch-size 4 --resume '" + b + "'");
  EXPECT_EQ(other.status, 1) << other.text;
  EXPECT_TRUE(has(other.text, "trained with --batch-size 8, this run has 4")) << other.text;
}

// --distributed --zero 1 on two CPU processes (mpirun): the same losses as plain DDP bit for
// bit, a checkpoint of the whole AdamW state written by rank 0, and a resume with the same losses.
TEST_F(WickGpt, ZeroOneLogsTheLossesOfDdpAndResumes) {
#if !defined(WICK_MPIEXEC_PATH) || !defined(WICK_GPT_PATH)
  GTEST_SKIP() << "needs MPI";
#else
  TempDir dir;
  const std::string genesis = write_genesis(dir);
  if (genesis.empty()) GTEST_SKIP() << "bible-kjv is not installed";
  const std::string d = dir.file("d");
  auto mpirun = [&](const std::string& args) {
    return wick::testing::run_shell(
        "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 '" WICK_MPIEXEC_PATH
        "' --oversubscribe -np 2 '" WICK_GPT_PATH "' train --model tiny --device cpu --threads 1 "
        "--distributed --data '" + genesis + "' --vocab-size 512 --seq-len 32 --batch-size 4 "
        "--max-steps 12 --warmup 4 --lr 3e-3 --eval-every 6 --eval-iters 2 " + args);
  };
  Output plain = mpirun("--out '" + d + "' --log '" + dir.file("plain.log") + "'");
  ASSERT_EQ(plain.status, 0) << plain.text;
  std::filesystem::copy_file(d + "/ckpt.safetensors", dir.file("plain.safetensors"));
  Output zero = mpirun("--zero 1 --out '" + d + "' --log '" + dir.file("zero.log") + "'");
  ASSERT_EQ(zero.status, 0) << zero.text;
  const std::string log = read(dir.file("plain.log"));
  EXPECT_EQ(val_losses(log).size(), 2u) << log;
  EXPECT_EQ(read(dir.file("zero.log")), log);
  // The checkpoint is the plain run's, AdamW's state of every parameter included (rank 0
  // gathered the other's share).
  auto want = wick::load(dir.file("plain.safetensors"));
  auto got = wick::load(d + "/ckpt.safetensors");
  EXPECT_EQ(wick::load_metadata(d + "/ckpt.safetensors").at("optim.optimizer"), "AdamW");
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [name, t] : want) {
    ASSERT_EQ(got.count(name), 1u) << name;
    EXPECT_EQ(got.at(name).sizes().vec(), t.sizes().vec()) << name;
    EXPECT_EQ(got.at(name).to(wick::kFloat64).contiguous().to_vector<double>(),
              t.to(wick::kFloat64).contiguous().to_vector<double>())
        << name;
  }
  // Stopped half way and resumed: the same losses.
  Output first = mpirun("--zero 1 --stop-at 6 --out '" + d + "' --log '" + dir.file("resumed.log") + "'");
  ASSERT_EQ(first.status, 0) << first.text;
  Output second = mpirun("--zero 1 --resume '" + d + "' --log '" + dir.file("resumed.log") + "'");
  ASSERT_EQ(second.status, 0) << second.text;
  EXPECT_EQ(read(dir.file("resumed.log")), log);
  Output alone = run_gpt("train --device cpu --zero 1");
  EXPECT_EQ(alone.status, 1) << alone.text;
  EXPECT_TRUE(has(alone.text, "--zero 1 shards the optimizer state over the processes of a --distributed run"))
      << alone.text;
#endif
}

TEST_F(WickGpt, ClearErrors) {
  TempDir dir;
  struct Case {
    std::string args, message;
  };
  const std::string missing = dir.file("missing.txt");
  const Case cases[] = {
      {"train --device cpu --graph", "--graph captures the step as a CUDA graph: it needs a GPU"},
      {"train --device cpu --amp bf16", "--amp bf16 is for GPUs"},
      {"train --device cpu --amp fp16", "--amp fp16: only bf16 is offered"},
      {"train --device cpu --distributed --gpus 0", "--distributed runs one process per GPU"},
      {"train --device cpu --out '" + dir.file("o") + "' --data '" + missing + "'", "[read_corpus]"},
      {"train --device cpu --resume '" + dir.file("nothing") + "'", "no checkpoint at"},
      {"sample --checkpoint '" + dir.file("nothing") + "'", "no checkpoint at"},
  };
  for (const Case& c : cases) {
    Output o = run_gpt(c.args);
    EXPECT_EQ(o.status, 1) << c.args << "\n" << o.text;
    EXPECT_TRUE(has(o.text, "wick-gpt: ")) << o.text;
    EXPECT_TRUE(has(o.text, c.message)) << c.args << "\n" << o.text;
  }
  // A file that is not a wick-gpt checkpoint.
  wick::save(wick::TensorMap{{"w", wick::zeros({2})}}, dir.file("other.safetensors"));
  Output o = run_gpt("sample --checkpoint '" + dir.file("other.safetensors") + "'");
  EXPECT_EQ(o.status, 1) << o.text;
  EXPECT_TRUE(has(o.text, "is not a wick-gpt checkpoint")) << o.text;
}

// --synthetic: random tokens below the vocabulary, no text and no tokenizer. The loss stays at
// ln(vocab) (nothing to learn), the run reports its steady-state speed, and sampling refuses
// a checkpoint without a tokenizer.
TEST_F(WickGpt, SyntheticTokensTrainAtChanceAndReportTheirSpeed) {
  TempDir dir;
  const std::string out = dir.file("syn");
  Output o = run_gpt("train --device cpu --threads 1 --synthetic --vocab-size 256 --out '" + out +
                     "' --n-layer 1 --n-head 2 --n-embd 32 --block-size 32 --batch-size 4 --max-steps 6 "
                     "--eval-every 3 --eval-iters 2 --log '" + dir.file("log.txt") + "'");
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_TRUE(has(o.text, "random train tokens below 256 (--synthetic)")) << o.text;
  const std::vector<double> val = val_losses(read(dir.file("log.txt")));
  ASSERT_EQ(val.size(), 2u) << o.text;
  for (double v : val) EXPECT_NEAR(v, std::log(256.0), 0.3) << o.text;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(o.text, m, std::regex(R"(speed: ([0-9.]+) ms a step, ([0-9]+) tokens/s)"))) << o.text;
  EXPECT_GT(std::stod(m[1]), 0.0);
  EXPECT_NEAR(std::stod(m[2]), 4 * 32 / (std::stod(m[1]) * 1e-3), 0.01 * std::stod(m[2]) + 1);
  EXPECT_FALSE(std::filesystem::exists(out + "/tokenizer.model"));

  o = run_gpt("sample --checkpoint '" + out + "'");
  EXPECT_EQ(o.status, 1) << o.text;
  EXPECT_TRUE(has(o.text, "was trained on random tokens (--synthetic)")) << o.text;
  o = run_gpt("train --device cpu --synthetic --data '" + dir.file("a.txt") + "' --out '" + dir.file("o2") + "'");
  EXPECT_EQ(o.status, 1) << o.text;
  EXPECT_TRUE(has(o.text, "--synthetic trains on random tokens: it takes no --data")) << o.text;
}
