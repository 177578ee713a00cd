// wick-train run as a program on a small synthetic Fashion-MNIST (each class a bright bar at its
// own rows, plus noise): it must learn it, write the plot and the checkpoint, resume from it,
// and refuse what it can't do with a clear message.
#include <cstdio>
#include <fstream>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <sys/wait.h>

#include "../data/idx_files.h"
#include "run_program.h"
#include "wick/distributed.h"
#include "wick/io/safetensors.h"
#include "wick/wick.h"

using namespace wick::testing_data;

namespace {

using wick::testing::Output;
using wick::testing::run_shell;

Output run_train(const std::string& args) {
#ifdef WICK_TRAIN_PATH
  return wick::testing::run_program(WICK_TRAIN_PATH, args);
#else
  (void)args;
  return {};
#endif
}

// n images of 28x28: label k lights rows 2k+4 and 2k+5, over uniform noise up to 60.
void write_split(const TempDir& dir, const std::string& prefix, int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> pixels, labels;
  for (int i = 0; i < n; ++i) {
    uint8_t k = uint8_t(rng() % 10);
    labels.push_back(k);
    for (int r = 0; r < 28; ++r)
      for (int c = 0; c < 28; ++c)
        pixels.push_back(r == 2 * k + 4 || r == 2 * k + 5 ? uint8_t(200 + rng() % 56) : uint8_t(rng() % 60));
  }
  write_fashion_mnist(dir, prefix, pixels, labels);
}

double final_accuracy(const std::string& text) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex(R"(test accuracy ([0-9.]+)% after)"))) return -1;
  return std::stod(m[1]);
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

class WickTrain : public ::testing::Test {
 protected:
  void SetUp() override {
#ifndef WICK_TRAIN_PATH
    GTEST_SKIP() << "wick-train is not built (WICK_BUILD_TOOLS=OFF)";
#endif
  }
};

TEST_F(WickTrain, LearnsPlotsSavesResumes) {
  const std::string backend = wick::distributed::is_gloo_available() ? "gloo" : "mpi";
  TempDir dir;
  write_split(dir, "train", 640, 1);
  write_split(dir, "t10k", 200, 2);
  const std::string common = "--device cpu --data-dir '" + dir.str() + "' --batch-size 32 --workers 2 ";
  Output o = run_train(common + "--epochs 2 --plot '" + dir.file("p.svg") + "' --save '" +
                       dir.file("m.safetensors") + "'");
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_TRUE(has(o.text, "mlp on Fashion-MNIST (640 train, 200 test images), cpu, 2 epochs")) << o.text;
  EXPECT_TRUE(has(o.text, "epoch 1/2: train loss")) << o.text;
  EXPECT_TRUE(has(o.text, "epoch 2/2: train loss")) << o.text;
  EXPECT_GE(final_accuracy(o.text), 95.0) << o.text;

  std::ifstream svg(dir.file("p.svg"));
  std::string plot((std::istreambuf_iterator<char>(svg)), {});
  EXPECT_TRUE(plot.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\"")) << plot.substr(0, 100);
  EXPECT_TRUE(plot.ends_with("</svg>\n"));
  for (const char* part : {"training loss (per step)", "test accuracy", "<polyline", ">epoch</text>"})
    EXPECT_TRUE(has(plot, part)) << part;

  // The checkpoint: the MLP's four tensors, and the epoch in the metadata.
  auto state = wick::load(dir.file("m.safetensors"));
  ASSERT_EQ(state.size(), 4u);
  EXPECT_EQ(state.at("1.weight").sizes().vec(), (std::vector<int64_t>{128, 784}));
  EXPECT_EQ(state.at("3.bias").sizes().vec(), (std::vector<int64_t>{10}));
  EXPECT_EQ(wick::load_metadata(dir.file("m.safetensors")).at("epoch"), "2");

  Output r = run_train(common + "--epochs 1 --plot '' --resume '" + dir.file("m.safetensors") + "'");
  ASSERT_EQ(r.status, 0) << r.text;
  EXPECT_TRUE(has(r.text, "epoch 3/3: train loss")) << r.text;
  EXPECT_GE(final_accuracy(r.text), 95.0) << r.text;

  // A checkpoint of another model is refused.
  Output bad =
      run_train(common + "--model cnn --epochs 1 --plot '' --resume '" + dir.file("m.safetensors") + "'");
  EXPECT_EQ(bad.status, 1) << bad.text;
}

// --amp: bfloat16 autocast by default, float16 with the GradScaler; both learn on the CPU.
TEST_F(WickTrain, MixedPrecisionCpu) {
  const std::string backend = wick::distributed::is_gloo_available() ? "gloo" : "mpi";
  TempDir dir;
  write_split(dir, "train", 640, 1);
  write_split(dir, "t10k", 200, 2);
  const std::string common =
      "--device cpu --data-dir '" + dir.str() + "' --batch-size 32 --epochs 2 --plot '' ";
  Output bf = run_train(common + "--amp");
  ASSERT_EQ(bf.status, 0) << bf.text;
  EXPECT_TRUE(has(bf.text, "cpu, amp bf16, 2 epochs")) << bf.text;
  EXPECT_GE(final_accuracy(bf.text), 90.0) << bf.text;
  Output fp = run_train(common + "--amp fp16");
  ASSERT_EQ(fp.status, 0) << fp.text;
  EXPECT_TRUE(has(fp.text, "cpu, amp fp16 (GradScaler), 2 epochs")) << fp.text;
  EXPECT_GE(final_accuracy(fp.text), 90.0) << fp.text;
}

TEST_F(WickTrain, MixedPrecisionCuda) {
  if (!wick::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const std::string backend = wick::distributed::is_gloo_available() ? "gloo" : "mpi";
  TempDir dir;
  write_split(dir, "train", 640, 1);
  write_split(dir, "t10k", 200, 2);
  const std::string common =
      "--device cuda --model cnn --data-dir '" + dir.str() + "' --batch-size 32 --epochs 2 --plot '' ";
  for (const char* amp : {"--amp", "--amp fp16", "--amp bf16"}) {
    Output o = run_train(common + amp);
    ASSERT_EQ(o.status, 0) << amp << "\n" << o.text;
    EXPECT_TRUE(has(o.text, ", amp ")) << o.text;
    EXPECT_GE(final_accuracy(o.text), 90.0) << amp << "\n" << o.text;
  }
  if (wick::cuda::device_count() >= 2) {  // DataParallel's replicas take the autocast state
    Output o = run_train("--gpus 0,1 --model cnn --data-dir '" + dir.str() +
                         "' --batch-size 32 --epochs 2 --plot '' --amp");
    ASSERT_EQ(o.status, 0) << o.text;
    EXPECT_TRUE(has(o.text, "(DataParallel), amp bf16")) << o.text;
    EXPECT_GE(final_accuracy(o.text), 90.0) << o.text;
  }
}

TEST_F(WickTrain, ClearErrors) {
  TempDir dir;
  struct Case {
    std::string args, message;
  };
  const Case cases[] = {
      {"--amp fp8", "--amp fp8: expected bf16 (the default) or fp16"},
      {"--gpus 0,0", "--gpus 0,0: GPU 0 is listed twice"},
      {"--gpus one", "--gpus one: expected GPU indices such as 0,1, or all"},
      {"--disable-cuda --device cuda", "--disable-cuda contradicts --device cuda"},
      {"--device tpu", "[Device] invalid device string"},
      {"--epochs 0", "--epochs must be at least 1"},
      {"--distributed --gpus 0,1",
       "--distributed runs one process per GPU: give --device cuda or cpu, not --gpus"},
      {"--distributed --device cuda:1", "--distributed: each process uses cuda:LOCAL_RANK"},
      {"--data-dir '" + dir.str() + "'", "[FashionMNIST] cannot find"},
  };
  for (const Case& c : cases) {
    Output o = run_train(c.args + " --plot ''");
    EXPECT_EQ(o.status, 1) << c.args << "\n" << o.text;
    EXPECT_TRUE(has(o.text, "wick-train: ")) << o.text;
    EXPECT_TRUE(has(o.text, c.message)) << c.args << "\n" << o.text;
  }
  if (!wick::cuda::is_available()) {
    Output o = run_train("--device cuda --plot ''");
    EXPECT_EQ(o.status, 1) << o.text;
    EXPECT_TRUE(has(o.text, "use --device cpu")) << o.text;
  }
}

// Several GPUs through nn::DataParallel: it learns as on one GPU.
TEST_F(WickTrain, LearnsOnTwoGpus) {
  if (wick::cuda::device_count() < 2) GTEST_SKIP() << "needs 2 CUDA devices";
  const std::string backend = wick::distributed::is_gloo_available() ? "gloo" : "mpi";
  TempDir dir;
  write_split(dir, "train", 640, 1);
  write_split(dir, "t10k", 200, 2);
  const std::string common =
      "--data-dir '" + dir.str() + "' --batch-size 32 --workers 2 --epochs 2 --plot '' ";
  Output o = run_train(common + "--gpus 0,1");
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_TRUE(has(o.text, "cuda:0,cuda:1 (DataParallel), 2 epochs")) << o.text;
  EXPECT_GE(final_accuracy(o.text), 95.0) << o.text;
  Output all = run_train(common + "--gpus all");
  ASSERT_EQ(all.status, 0) << all.text;
  EXPECT_TRUE(has(all.text, "(DataParallel)")) << all.text;
  EXPECT_GE(final_accuracy(all.text), 95.0) << all.text;
}

namespace {

// The lines an mpirun --tag-output run printed for rank r: "[job,r]<stdout>:text".
std::vector<std::string> tagged(const std::string& text, int rank, const std::string& stream) {
  std::vector<std::string> out;
  const std::regex line("\\[[0-9]+," + std::to_string(rank) + "\\]<" + stream + ">:(.*)");
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t end = std::min(text.find('\n', pos), text.size());
    std::smatch m;
    const std::string l = text.substr(pos, end - pos);
    if (std::regex_match(l, m, line)) out.push_back(m[1]);
    pos = end + 1;
  }
  return out;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

}  // namespace

// --distributed on two CPU processes (the "gloo" backend, "mpi" in a build without Gloo;
// DistributedDataParallel), started by mpirun and by wick-launch: it learns, rank 0 alone
// reports, plots and saves.
TEST_F(WickTrain, DistributedOnTwoCpuProcesses) {
#if !defined(WICK_MPIEXEC_PATH) || !defined(WICK_LAUNCH_PATH) || !defined(WICK_TRAIN_PATH)
  GTEST_SKIP() << "needs MPI and wick-launch";
#else
  const std::string backend = wick::distributed::is_gloo_available() ? "gloo" : "mpi";
  TempDir dir;
  write_split(dir, "train", 640, 1);
  write_split(dir, "t10k", 200, 2);
  // A step's batch of 32 (16 per process), as the one-process run above.
  auto args = [&](int epochs) {
    return "--distributed --device cpu --data-dir '" + dir.str() + "' --batch-size 32 --workers 1 --epochs " +
           std::to_string(epochs) + " --plot '" + dir.file("p.svg") + "' --save '" +
           dir.file("m.safetensors") + "'";
  };
  Output o = run_shell("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 '" WICK_MPIEXEC_PATH
                       "' --oversubscribe -np 2 --tag-output '" WICK_TRAIN_PATH "' " +
                       args(2));
  ASSERT_EQ(o.status, 0) << o.text;
  const std::string rank0 = joined(tagged(o.text, 0, "stdout"));
  EXPECT_TRUE(has(rank0, "mlp on Fashion-MNIST (640 train, 200 test images), 2 processes (" + backend +
                             ", cpu, DistributedDataParallel), 2 epochs, batch 32 (16 per process)"))
      << o.text;
  EXPECT_TRUE(has(rank0, "epoch 1/2: train loss")) << o.text;
  EXPECT_TRUE(has(rank0, "epoch 2/2: train loss")) << o.text;
  EXPECT_GE(final_accuracy(rank0), 90.0) << o.text;
  EXPECT_TRUE(tagged(o.text, 1, "stdout").empty()) << o.text;
  EXPECT_FALSE(has(joined(tagged(o.text, 1, "stderr")), "epoch")) << o.text;
  // The checkpoint holds the model's own names, as a one-process run's.
  auto state = wick::load(dir.file("m.safetensors"));
  EXPECT_EQ(state.size(), 4u);
  EXPECT_EQ(state.count("1.weight"), 1u);
  std::ifstream svg(dir.file("p.svg"));
  EXPECT_TRUE(std::string((std::istreambuf_iterator<char>(svg)), {}).ends_with("</svg>\n"));

  // wick-launch (the processes meet through the TCP store, or through ompi-server for mpi):
  // each writes to its own file.
  Output l = run_shell("'" WICK_LAUNCH_PATH
                       "' --standalone --nproc-per-node 2 sh -c "
                       "'o=$1; shift; exec \"$@\" > \"$o.$RANK\" 2>&1' sh '" +
                       dir.file("out") + "' '" WICK_TRAIN_PATH "' " + args(1));
  ASSERT_EQ(l.status, 0) << l.text << "\nrank 0:\n"
                         << read_text(dir.file("out.0")) << "\nrank 1:\n"
                         << read_text(dir.file("out.1"));
  const std::string out0 = read_text(dir.file("out.0"));
  EXPECT_TRUE(has(out0, "2 processes (" + backend + ", cpu, DistributedDataParallel)")) << out0;
  EXPECT_GE(final_accuracy(out0), 90.0) << out0;
  EXPECT_EQ(read_text(dir.file("out.1")), "");
#endif
}
