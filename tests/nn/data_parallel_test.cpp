// nn::DataParallel and Module::replicate. Without GPUs: replicate's structure and generator
// behaviour, DataParallel calling the module directly. On 2 or more GPUs: outputs, parameter
// and input gradients equal to the one-GPU run (even and uneven batches, dim 1, a few SGD
// steps), the seed's FooNet (8 rows per replica, [16, 3] on cuda:0), the device_ids[0] error
// word for word, an exception in one replica, replicas built once, scalar outputs, eval and
// no_grad, CUDA_VISIBLE_DEVICES=1,0 (in a child process), and BatchNorm's running statistics
// against PyTorch's nn.DataParallel (tests/fixtures/data_parallel_bn.safetensors, written by
// tests/gen/data_parallel_bn.py on a 2-GPU machine; the test skips when it is absent).
#include <algorithm>
#include <atomic>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../cuda/cuda_test_util.h"
#include "wick/io/safetensors.h"
#include "wick/optim.h"
#include "wick/wick.h"

using namespace wick;

namespace {

// The seed's FooNet: a Linear whose forward records the batch it sees.
std::mutex g_seen_mu;
std::vector<std::pair<int64_t, int>> g_seen;  // (rows, device index)
std::atomic<int> g_foo_constructed{0};

struct FooNetImpl : nn::Module {
  FooNetImpl(int64_t in, int64_t out) {
    ++g_foo_constructed;
    fc = register_module("fc", nn::Linear(in, out));
  }
  Tensor forward(const Tensor& x) {
    {
      std::lock_guard<std::mutex> lock(g_seen_mu);
      g_seen.emplace_back(x.size(0), x.is_cuda() ? x.device().index() : -1);
    }
    return fc(x);
  }
  nn::Linear fc{nullptr};
};
WICK_MODULE(FooNet);

// A module that fails on one device.
struct FailOnImpl : nn::Module {
  explicit FailOnImpl(int64_t device) : device(device) { fc = register_module("fc", nn::Linear(2, 2)); }
  Tensor forward(const Tensor& x) {
    WICK_CHECK(x.device().index() != device, ValueError, "FailOn", "refusing a batch on cuda:", device);
    return fc(x);
  }
  int64_t device;
  nn::Linear fc{nullptr};
};
WICK_MODULE(FailOn);

nn::Sequential mlp() { return nn::Sequential(nn::Linear(5, 7), nn::ReLU(), nn::Linear(7, 3)); }

// A copy of net's values in a new Sequential of the same structure on device.
nn::Sequential copy_of(const nn::Sequential& net, Device device) {
  nn::Sequential c = mlp();
  c->to(device);
  c->load_state_dict(net->state_dict());
  return c;
}

std::vector<double> values(const Tensor& t) {
  Tensor c = t.detach().to(Device(kCPU)).to(kFloat64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

// Elementwise |a - b| <= atol + rtol |b| (float32 rounding of a different summation order).
void expect_close(const Tensor& a, const Tensor& b, const std::string& what, double rtol = 1e-5,
                  double atol = 1e-6) {
  ASSERT_TRUE(a.defined()) << what;
  ASSERT_TRUE(b.defined()) << what;
  ASSERT_EQ(std::vector<int64_t>(a.sizes().begin(), a.sizes().end()),
            std::vector<int64_t>(b.sizes().begin(), b.sizes().end()))
      << what;
  auto va = values(a), vb = values(b);
  for (size_t i = 0; i < va.size(); ++i)
    ASSERT_LE(std::abs(va[i] - vb[i]), atol + rtol * std::abs(vb[i])) << what << " element " << i;
}

Device gpu(int i) { return Device(kCUDA, i); }

}  // namespace

// ---- Module::replicate (no GPU needed)

TEST(ModuleReplicate, RebuildsTheStructureWithItsOwnTensors) {
  FooNet net(3, 4);
  auto copy = net->replicate();
  auto a = net->named_parameters(), b = copy->named_parameters();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first);
    EXPECT_TRUE(a[i].second.sizes().equals(b[i].second.sizes()));
    EXPECT_NE(a[i].second.impl(), b[i].second.impl());
  }
  EXPECT_NE(dynamic_cast<FooNetImpl*>(copy.get()), nullptr);
}

TEST(ModuleReplicate, LeavesTheGeneratorAlone) {
  manual_seed(3);
  Tensor want = rand({4});
  manual_seed(3);
  FooNet net(3, 4);  // draws its initial values
  Tensor after_net = rand({4});
  manual_seed(3);
  FooNet net2(3, 4);
  (void)net2->replicate();
  EXPECT_EQ(values(rand({4})), values(after_net));
  EXPECT_NE(values(want), values(after_net));
}

TEST(ModuleReplicate, SequentialReplicatesItsChildren) {
  nn::Sequential seq = mlp();
  auto copy = std::dynamic_pointer_cast<nn::SequentialImpl>(seq->replicate());
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(copy->size(), 3u);
  auto a = seq->named_parameters(), b = copy->named_parameters();
  ASSERT_EQ(a.size(), 4u);
  ASSERT_EQ(b.size(), 4u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first);
    EXPECT_NE(a[i].second.impl(), b[i].second.impl());
  }
  // the copy runs its own modules
  copy->load_state_dict(seq->state_dict());
  Tensor x = rand({2, 5});
  EXPECT_EQ(values(copy->forward(x)), values(seq(x)));
}

TEST(ModuleReplicate, AModuleNotMadeThroughAHolderThrows) {
  auto m = std::make_shared<nn::LinearImpl>(2, 2);
  EXPECT_THROW(m->replicate(), ValueError);
}

// ---- DataParallel without GPUs

TEST(DataParallel, WithoutGpusCallsTheModule) {
  if (cuda::is_available()) GTEST_SKIP() << "GPUs present; the multi-GPU tests cover this";
  FooNet net(3, 3);
  nn::DataParallel dp(net);
  EXPECT_TRUE(dp->device_ids().empty());
  Tensor x = rand({4, 3});
  EXPECT_EQ(values(dp(x)), values(net(x)));
  // registered as "module", as PyTorch names it
  auto names = dp->named_parameters();
  ASSERT_EQ(names.size(), 2u);
  EXPECT_EQ(names[0].first, "module.fc.weight");
  EXPECT_EQ(names[1].first, "module.fc.bias");
  EXPECT_THROW(nn::DataParallel(net, std::vector<int>{0}), DeviceError);
}

// ---- DataParallel on several GPUs

TEST(DataParallelGpu, SeedProgramSplitsTheBatch) {
  WICK_REQUIRE_GPUS(2);
  Device device("cuda:0");
  auto inputs = randn({16, 3}).to(device);
  FooNet net(3, 3);
  nn::DataParallel dp(net, std::vector<int>{0, 1});
  dp->to(device);
  {
    std::lock_guard<std::mutex> lock(g_seen_mu);
    g_seen.clear();
  }
  auto outputs = dp(inputs);
  EXPECT_EQ(outputs.device(), gpu(0));
  EXPECT_EQ(std::vector<int64_t>(outputs.sizes().begin(), outputs.sizes().end()),
            (std::vector<int64_t>{16, 3}));
  std::vector<std::pair<int64_t, int>> seen;
  {
    std::lock_guard<std::mutex> lock(g_seen_mu);
    seen = g_seen;
  }
  std::sort(seen.begin(), seen.end(), [](auto& a, auto& b) { return a.second < b.second; });
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], std::make_pair(int64_t(8), 0));
  EXPECT_EQ(seen[1], std::make_pair(int64_t(8), 1));
  expect_close(outputs, net(inputs), "outputs");
  EXPECT_EQ(outputs.grad_fn()->name(), "GatherBackward");
}

TEST(DataParallelGpu, DefaultDeviceIdsAreAllVisibleGpus) {
  WICK_REQUIRE_GPUS(2);
  FooNet net(3, 3);
  nn::DataParallel dp(net);
  std::vector<int> all;
  for (int i = 0; i < cuda::device_count(); ++i) all.push_back(i);
  EXPECT_EQ(dp->device_ids(), all);
  EXPECT_EQ(dp->output_device(), 0);
}

namespace {
// Output, parameter gradients and input gradient of DataParallel over devices against one GPU.
void check_against_one_gpu(int64_t rows, int64_t dim, const std::vector<int>& devices) {
  manual_seed(11);
  nn::Sequential net = mlp();
  net->to(gpu(devices[0]));
  nn::Sequential ref = copy_of(net, gpu(devices[0]));
  nn::DataParallel dp(net, devices, -1, dim);
  // dim 1: the batch is the second dimension of a [5-feature-last] input, [2, rows, 5]
  Tensor x = dim == 0 ? randn({rows, 5}) : randn({2, rows, 5});
  Tensor w = dim == 0 ? randn({rows, 3}) : randn({2, rows, 3});
  x = x.to(gpu(devices[0])).requires_grad_();
  w = w.to(gpu(devices[0]));
  Tensor x_ref = x.detach().clone().requires_grad_();

  Tensor y = dp(x);
  Tensor y_ref = ref(x_ref);
  expect_close(y, y_ref, "output");
  (y * w).sum().backward();
  (y_ref * w).sum().backward();
  auto p = net->named_parameters(), q = ref->named_parameters();
  for (size_t i = 0; i < p.size(); ++i) {
    EXPECT_EQ(p[i].second.grad().device(), gpu(devices[0])) << p[i].first;
    expect_close(p[i].second.grad(), q[i].second.grad(), "grad of " + p[i].first);
  }
  expect_close(x.grad(), x_ref.grad(), "input grad");
}
}  // namespace

TEST(DataParallelGpu, EvenBatchMatchesOneGpu) {
  WICK_REQUIRE_GPUS(2);
  check_against_one_gpu(16, 0, {0, 1});
}

TEST(DataParallelGpu, UnevenBatchMatchesOneGpu) {
  WICK_REQUIRE_GPUS(2);
  check_against_one_gpu(33, 0, {0, 1});  // 17 + 16 rows
}

TEST(DataParallelGpu, ScatterAlongDimOne) {
  WICK_REQUIRE_GPUS(2);
  check_against_one_gpu(9, 1, {0, 1});
}

TEST(DataParallelGpu, DeviceIdsInAnotherOrder) {
  WICK_REQUIRE_GPUS(2);
  check_against_one_gpu(10, 0, {1, 0});
}

TEST(DataParallelGpu, AllGpusAndFewerRowsThanGpus) {
  WICK_REQUIRE_GPUS(2);
  std::vector<int> all;
  for (int i = 0; i < cuda::device_count(); ++i) all.push_back(i);
  check_against_one_gpu(37, 0, all);
  check_against_one_gpu(1, 0, all);  // one piece: the module alone, then the gather
}

namespace {
// Four SGD steps through DataParallel over devices against the same steps on devices[0] alone.
void check_training_against_one_gpu(const std::vector<int>& devices) {
  manual_seed(5);
  const Device first = gpu(devices[0]);
  nn::Sequential net = mlp();
  net->to(first);
  nn::Sequential ref = copy_of(net, first);
  nn::DataParallel dp(net, devices);
  optim::SGD opt(net->parameters(), optim::SGDOptions(0.05).momentum(0.9));
  optim::SGD opt_ref(ref->parameters(), optim::SGDOptions(0.05).momentum(0.9));
  for (int step = 0; step < 4; ++step) {
    Tensor x = randn({21, 5}).to(first), t = randn({21, 3}).to(first);
    opt.zero_grad();
    opt_ref.zero_grad();
    nn::functional::mse_loss(dp(x), t).backward();
    nn::functional::mse_loss(ref(x), t).backward();
    opt.step();
    opt_ref.step();
  }
  auto p = net->named_parameters(), q = ref->named_parameters();
  for (size_t i = 0; i < p.size(); ++i) {
    EXPECT_EQ(p[i].second.device(), first) << p[i].first;
    expect_close(p[i].second, q[i].second, p[i].first, 1e-4, 1e-5);
  }
}
}  // namespace

TEST(DataParallelGpu, FourGpusMatchOneGpu) {
  WICK_REQUIRE_GPUS(4);
  check_against_one_gpu(64, 0, {0, 1, 2, 3});
  check_against_one_gpu(35, 0, {0, 1, 2, 3});  // 9 + 9 + 9 + 8 rows
  check_against_one_gpu(3, 0, {0, 1, 2, 3});   // fewer rows than GPUs: three pieces
  check_against_one_gpu(11, 1, {0, 1, 2, 3});
  check_against_one_gpu(23, 0, {3, 1, 0, 2});  // output on cuda:3
  check_against_one_gpu(19, 0, {2, 3});        // a pair without cuda:0
}

TEST(DataParallelGpu, FourGpusTrainingStepsMatchOneGpu) {
  WICK_REQUIRE_GPUS(4);
  check_training_against_one_gpu({0, 1, 2, 3});
  check_training_against_one_gpu({2, 0, 3, 1});
}

TEST(DataParallelGpu, TrainingStepsMatchOneGpu) {
  WICK_REQUIRE_GPUS(2);
  check_training_against_one_gpu({0, 1});
}

TEST(DataParallelGpu, ParametersElsewhereThanTheFirstDeviceThrowWordForWord) {
  WICK_REQUIRE_GPUS(2);
  FooNet net(3, 3);
  net->to(gpu(1));
  nn::DataParallel dp(net, std::vector<int>{0, 1});
  try {
    dp(randn({4, 3}).to(gpu(0)));
    FAIL() << "expected an error";
  } catch (const DeviceError& e) {
    EXPECT_EQ(
        std::string(e.what()),
        "[DataParallel] module must have its parameters and buffers on device cuda:0 (device_ids[0]) but "
        "found one of them on device: cuda:1");
  }
  if (cuda::device_count() >= 3) {
    FooNet net2(3, 3);
    net2->to(gpu(2));
    nn::DataParallel dp2(net2, std::vector<int>{1, 2});
    try {
      dp2(randn({4, 3}).to(gpu(1)));
      FAIL() << "expected an error";
    } catch (const DeviceError& e) {
      EXPECT_EQ(
          std::string(e.what()),
          "[DataParallel] module must have its parameters and buffers on device cuda:1 (device_ids[0]) but "
          "found one of them on device: cuda:2");
    }
  }
}

TEST(DataParallelGpu, AnExceptionInOneReplicaReachesTheCaller) {
  WICK_REQUIRE_GPUS(2);
  FailOn net(1);
  net->to(gpu(0));
  nn::DataParallel dp(net, std::vector<int>{0, 1});
  try {
    dp(randn({4, 2}).to(gpu(0)));
    FAIL() << "expected an error";
  } catch (const ValueError& e) {
    std::string m = e.what();
    EXPECT_EQ(m.rfind("[DataParallel] Caught ValueError in replica 1 on device cuda:1: ", 0), 0u) << m;
    EXPECT_NE(m.find("[FailOn] refusing a batch on cuda:1"), std::string::npos) << m;
  }
  // the DataParallel still works afterwards (its worker is alive)
  FailOn ok(7);
  ok->to(gpu(0));
  nn::DataParallel dp_ok(ok, std::vector<int>{0, 1});
  EXPECT_EQ(dp_ok(randn({4, 2}).to(gpu(0))).size(0), 4);
  EXPECT_THROW(dp(randn({4, 2}).to(gpu(0))), ValueError);
}

TEST(DataParallelGpu, ReplicasAreBuiltOnceAndRebuiltWhenTheStructureChanges) {
  WICK_REQUIRE_GPUS(2);
  FooNet net(3, 3);
  net->to(gpu(0));
  nn::DataParallel dp(net, std::vector<int>{0, 1});
  const int before = g_foo_constructed.load();
  Tensor x = randn({6, 3}).to(gpu(0));
  for (int i = 0; i < 3; ++i) dp(x).sum().backward();
  EXPECT_EQ(g_foo_constructed.load() - before, 1);  // one replica, once
  // parameters changed in place are broadcast again: the output follows them
  {
    NoGradGuard g;
    net->fc->weight.fill_(0.5);
    net->fc->bias.zero_();
  }
  expect_close(dp(x), net(x), "after an in-place change");
  EXPECT_EQ(g_foo_constructed.load() - before, 1);
  // another dtype is another structure
  net->to(kFloat64);
  Tensor xd = x.to(kFloat64);
  expect_close(dp(xd), net(xd), "float64");
  EXPECT_EQ(g_foo_constructed.load() - before, 2);
}

TEST(DataParallelGpu, GradientsAccumulateOverForwards) {
  WICK_REQUIRE_GPUS(2);
  manual_seed(2);
  nn::Sequential net = mlp();
  net->to(gpu(0));
  nn::Sequential ref = copy_of(net, gpu(0));
  nn::DataParallel dp(net, std::vector<int>{0, 1});
  Tensor a = randn({8, 5}).to(gpu(0)), b = randn({7, 5}).to(gpu(0));
  // two forwards, one backward of their sum
  (dp(a).sum() + dp(b).pow(2).sum()).backward();
  (ref(a).sum() + ref(b).pow(2).sum()).backward();
  auto p = net->named_parameters(), q = ref->named_parameters();
  for (size_t i = 0; i < p.size(); ++i) expect_close(p[i].second.grad(), q[i].second.grad(), p[i].first);
}

TEST(DataParallelGpu, NoGradAndEvalForwards) {
  WICK_REQUIRE_GPUS(2);
  nn::Sequential net = mlp();
  net->to(gpu(0));
  nn::DataParallel dp(net, std::vector<int>{0, 1});
  Tensor x = randn({6, 5}).to(gpu(0));
  {
    NoGradGuard g;
    Tensor y = dp(x);
    EXPECT_FALSE(y.requires_grad());
    expect_close(y, net(x), "no_grad");
  }
  dp->eval();
  EXPECT_FALSE(net->is_training());
  expect_close(dp(x), net(x), "eval");
}

TEST(DataParallelGpu, ScalarOutputsAreGatheredIntoAVector) {
  WICK_REQUIRE_GPUS(2);
  struct SumImpl : nn::Module {
    SumImpl() { fc = register_module("fc", nn::Linear(3, 1)); }
    Tensor forward(const Tensor& x) { return fc(x).sum(); }
    nn::Linear fc{nullptr};
  };
  auto net = std::make_shared<SumImpl>();
  net->to(gpu(0));
  // a module made with make_shared: the replica cannot be rebuilt
  nn::DataParallel dp(net, std::vector<int>{0, 1});
  EXPECT_THROW(dp(randn({4, 3}).to(gpu(0))), ValueError);
  // through a holder it can
  struct Holder : nn::ModuleHolder<SumImpl> {
    using nn::ModuleHolder<SumImpl>::ModuleHolder;
  };
  Holder h;
  h->to(gpu(0));
  nn::DataParallel dp2(h, std::vector<int>{0, 1});
  Tensor x = randn({4, 3}).to(gpu(0));
  Tensor y = dp2(x);
  EXPECT_EQ(std::vector<int64_t>(y.sizes().begin(), y.sizes().end()), (std::vector<int64_t>{2}));
  EXPECT_NEAR(y.sum().item<double>(), h(x).item<double>(), 1e-4);
  y.sum().backward();
  Tensor g = h->fc->weight.grad();
  // d/dW of sum over all rows of x W^T: the column sums of x
  expect_close(g, x.sum({0}, true), "weight grad");
}

TEST(DataParallelGpu, BatchNormStatisticsFollowReplicaZero) {
  WICK_REQUIRE_GPUS(2);
  auto bn = nn::BatchNorm1d(4);
  bn->to(gpu(0));
  nn::DataParallel dp(bn, std::vector<int>{0, 1});
  Tensor x = randn({10, 4}).to(gpu(0));
  dp(x);
  // running_mean = 0.9 * 0 + 0.1 * mean of the first 5 rows (replica 0's piece)
  expect_close(bn->running_mean, x.narrow(0, 0, 5).mean({0}) * 0.1, "running_mean");
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);
}

TEST(DataParallelGpu, BatchNormStatisticsMatchPyTorch) {
  WICK_REQUIRE_GPUS(2);
  const std::string path = std::string(WICK_TEST_FIXTURES_DIR) + "/data_parallel_bn.safetensors";
  if (!std::filesystem::exists(path))
    GTEST_SKIP() << path
                 << " is absent: run tests/gen/data_parallel_bn.py on a machine with 2 GPUs and PyTorch";
  auto data = load(path);
  // the model of tests/gen/data_parallel_bn.py: Linear(4, 6), BatchNorm1d(6), ReLU, Linear(6, 2)
  nn::Sequential net(nn::Linear(4, 6), nn::BatchNorm1d(6), nn::ReLU(), nn::Linear(6, 2));
  nn::StateDict init;
  for (const auto& [name, t] : net->state_dict()) init.emplace_back(name, data.at("init." + name));
  net->load_state_dict(init);
  net->to(gpu(0));
  nn::DataParallel dp(net, std::vector<int>{0, 1});
  optim::SGD opt(net->parameters(), optim::SGDOptions(0.1));
  const int steps = int(data.at("steps").item<int64_t>());
  for (int s = 0; s < steps; ++s) {
    Tensor x = data.at("x" + std::to_string(s)).to(gpu(0));
    Tensor t = data.at("y" + std::to_string(s)).to(gpu(0));
    opt.zero_grad();
    nn::functional::mse_loss(dp(x), t).backward();
    opt.step();
  }
  for (const auto& [name, t] : net->state_dict()) {
    const Tensor& want = data.at("final." + name);
    if (t.dtype() == kInt64) EXPECT_EQ(values(t), values(want)) << name;
    else expect_close(t, want, name, 1e-4, 1e-5);
  }
}

// CUDA_VISIBLE_DEVICES=1,0: cuda:0 is the second physical GPU, as in PyTorch.
TEST(DataParallelGpu, DISABLED_ChildVisibleDevices) {
  FooNet net(3, 3);
  net->to(gpu(0));
  nn::DataParallel dp(net);
  std::cout << "\nIDS=";
  for (int d : dp->device_ids()) std::cout << d;
  std::cout << "\nUUID0=" << cuda::get_device_properties(0).uuid << "\n";
  Tensor y = dp(randn({6, 3}).to(gpu(0)));
  std::cout << "OUT=" << y.device() << "\n";
}

namespace {
// The CUDA_VISIBLE_DEVICES entries naming this process's cuda:0, cuda:1, ... in order.
std::vector<std::string> visible_entries() {
  std::vector<std::string> entries;
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) {
    std::string list = v;
    for (size_t pos = 0; pos <= list.size();) {
      const size_t comma = std::min(list.find(',', pos), list.size());
      entries.push_back(list.substr(pos, comma - pos));
      pos = comma + 1;
    }
  } else {
    for (int i = 0; i < cuda::device_count(); ++i) entries.push_back(std::to_string(i));
  }
  return entries;
}
}  // namespace

// Run in a child under CUDA_VISIBLE_DEVICES=a,b,c: what each visible device is, and DataParallel
// over all of them.
TEST(DataParallelGpu, DISABLED_ChildThreeVisibleDevices) {
  std::cout << "\nCOUNT=" << cuda::device_count() << "\n";
  for (int i = 0; i < cuda::device_count(); ++i)
    std::cout << "UUID" << i << "=" << cuda::get_device_properties(i).uuid << "\n";
  FooNet net(3, 3);
  net->to(gpu(0));
  nn::DataParallel dp(net);
  std::cout << "IDS=";
  for (int d : dp->device_ids()) std::cout << d;
  Tensor x = randn({7, 3}).to(gpu(0));
  Tensor y = dp(x);
  std::cout << "\nOUT=" << y.device() << "\nMATCH=" << ((y - net(x)).abs().max().item<double>() < 1e-5) << "\n";
}

// CUDA_VISIBLE_DEVICES=0,3,2 (of four GPUs): cuda:0, cuda:1 and cuda:2 are the physical GPUs 0, 3
// and 2, as in PyTorch, and DataParallel runs over those three.
TEST(DataParallelGpu, VisibleDevicesZeroThreeTwo) {
  WICK_REQUIRE_GPUS(4);
  const std::vector<std::string> entries = visible_entries();
  ASSERT_GE(entries.size(), 4u);
  auto r = test::run_child("DataParallelGpu.DISABLED_ChildThreeVisibleDevices",
                           "CUDA_VISIBLE_DEVICES=" + entries[0] + "," + entries[3] + "," + entries[2]);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(test::child_value(r.output, "COUNT"), "3") << r.output;
  EXPECT_EQ(test::child_value(r.output, "UUID0"), cuda::get_device_properties(0).uuid) << r.output;
  EXPECT_EQ(test::child_value(r.output, "UUID1"), cuda::get_device_properties(3).uuid) << r.output;
  EXPECT_EQ(test::child_value(r.output, "UUID2"), cuda::get_device_properties(2).uuid) << r.output;
  EXPECT_EQ(test::child_value(r.output, "IDS"), "012") << r.output;
  EXPECT_EQ(test::child_value(r.output, "OUT"), "cuda:0") << r.output;
  EXPECT_EQ(test::child_value(r.output, "MATCH"), "1") << r.output;
}

TEST(DataParallelGpu, VisibleDevicesReordered) {
  WICK_REQUIRE_GPUS(2);
  // the entries naming this process's cuda:1 and cuda:0, in that order
  const std::vector<std::string> entries = visible_entries();
  ASSERT_GE(entries.size(), 2u);
  auto r = test::run_child("DataParallelGpu.DISABLED_ChildVisibleDevices",
                           "CUDA_VISIBLE_DEVICES=" + entries[1] + "," + entries[0]);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(test::child_value(r.output, "IDS"), "01") << r.output;
  EXPECT_EQ(test::child_value(r.output, "UUID0"), cuda::get_device_properties(1).uuid) << r.output;
  EXPECT_EQ(test::child_value(r.output, "OUT"), "cuda:0") << r.output;
}
