// nn::parallel::DistributedDataParallel over the default group (1 to 4 processes): CPU modules
// over the mpi backend (gloo with WICK_TEST_BACKEND=gloo), or, with WICK_TEST_BACKEND=nccl,
// modules on each process's GPU over nccl. Each rank takes its shard of a fixed batch (loss:
// mean over the shard); its gradients are compared with a full-batch backward of a plain copy
// of the model computed locally (float64, to 1e-12). Every rank runs every test in the same order.
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "wick/autograd.h"
#include "wick/distributed.h"
#include "wick/nn.h"
#include "wick/ops.h"
#include "wick/optim.h"
#include "wick/random.h"

namespace wick {
namespace {

namespace dist = wick::distributed;
using nn::parallel::DistributedDataParallel;
using nn::parallel::DistributedDataParallelOptions;

int rank() { return dist::get_rank(); }
int world() { return dist::get_world_size(); }
// Where the modules and data live: this process's GPU under nccl, else the CPU.
Device dev() { return dist::get_backend() == "nccl" ? Device(kCUDA, dist::get_local_rank()) : Device(kCPU); }
TensorOptions f64() { return TensorOptions(kFloat64).device(dev()); }

// fc2(tanh(fc1(x))) [+ fc3(tanh(fc1(x)))], fc2 only while use_fc2.
struct NetImpl : nn::Module {
  explicit NetImpl(bool with_fc3 = false) {
    fc1 = register_module("fc1", nn::Linear(4, 6));
    fc2 = register_module("fc2", nn::Linear(6, 3));
    if (with_fc3) fc3 = register_module("fc3", nn::Linear(6, 3));
  }
  Tensor forward(const Tensor& x) {
    Tensor h = tanh(fc1(x));
    if (!use_fc2) return fc3(h);
    Tensor y = fc2(h);
    return fc3 ? y + fc3(h) : y;
  }
  nn::Linear fc1{nullptr}, fc2{nullptr}, fc3{nullptr};
  bool use_fc2 = true;
};
WICK_MODULE(Net);

struct BnNetImpl : nn::Module {
  BnNetImpl() {
    fc1 = register_module("fc1", nn::Linear(4, 5));
    bn = register_module("bn", nn::BatchNorm1d(5));
    fc2 = register_module("fc2", nn::Linear(5, 3));
  }
  Tensor forward(const Tensor& x) { return fc2(relu(bn(fc1(x)))); }
  nn::Linear fc1{nullptr}, fc2{nullptr};
  nn::BatchNorm1d bn{nullptr};
};
WICK_MODULE(BnNet);

Net make_net(uint64_t seed, bool with_fc3 = false) {
  manual_seed(seed);
  Net n(with_fc3);
  n->to(dev());
  n->to(kFloat64);
  return n;
}

Tensor loss_of(const Tensor& out, const Tensor& y) {
  Tensor d = out - y;
  return (d * d).mean();
}

Tensor shard(const Tensor& t, int r) {
  const int64_t n = t.size(0) / world();
  return t.narrow(0, r * n, n);
}

// The same data on every rank.
std::pair<Tensor, Tensor> batch(uint64_t seed, int64_t rows_per_rank) {
  manual_seed(seed);
  Tensor x = randn({rows_per_rank * world(), 4}, kFloat64).to(dev());
  Tensor y = randn({rows_per_rank * world(), 3}, kFloat64).to(dev());
  return {x, y};
}

void expect_close(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  ASSERT_EQ(got.defined(), want.defined()) << what << " (rank " << rank() << ")";
  if (!want.defined()) return;
  ASSERT_EQ(got.sizes().vec(), want.sizes().vec()) << what;
  auto g = got.detach().cpu().contiguous().to_vector<double>();
  auto w = want.detach().cpu().contiguous().to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i)
    EXPECT_NEAR(g[i], w[i], tol) << what << " element " << i << " (rank " << rank() << " of " << world()
                                 << ")";
}

void expect_grads(const nn::Module& got, const nn::Module& want, const std::string& what) {
  const auto g = got.named_parameters(), w = want.named_parameters();
  ASSERT_EQ(g.size(), w.size());
  for (size_t i = 0; i < g.size(); ++i)
    expect_close(g[i].second.grad(), w[i].second.grad(), 1e-12, what + " " + g[i].first);
}

TEST(DistributedDataParallel, GradientsEqualFullBatchAndRankZeroInit) {
  auto [x, y] = batch(1, 4);
  Net ref = make_net(0);
  loss_of(ref(x), y).backward();

  // Every rank but 0 starts from other values: construction broadcasts rank 0's.
  Net net = make_net(rank() == 0 ? 0 : uint64_t(100 + rank()));
  DistributedDataParallel ddp(net);
  const auto ref_params = ref->parameters(), params = net->parameters();
  for (size_t i = 0; i < params.size(); ++i) expect_close(params[i], ref_params[i], 0, "initial parameter");
  const auto sd = ddp->state_dict();
  ASSERT_EQ(sd.size(), 4u);
  EXPECT_EQ(sd[0].first, "module.fc1.weight");

  loss_of(ddp(shard(x, rank())), shard(y, rank())).backward();
  expect_grads(*net, *ref, "grad");
  // A second iteration (gradients now views of the bucket) after zero_grad.
  net->zero_grad(/*set_to_none=*/false);
  ref->zero_grad(false);
  loss_of(ref(x * 2), y).backward();
  loss_of(ddp(shard(x * 2, rank())), shard(y, rank())).backward();
  expect_grads(*net, *ref, "second grad");
}

TEST(DistributedDataParallel, NoSyncThenSyncEqualsOneStepOverBoth) {
  auto [a, ya] = batch(2, 3);
  auto [b, yb] = batch(3, 3);
  // Reference: the mean over ranks of (rank's loss on A + rank's loss on B).
  Net ref = make_net(0);
  Tensor total = zeros({}, f64());
  for (int r = 0; r < world(); ++r)
    total = total + loss_of(ref(shard(a, r)), shard(ya, r)) + loss_of(ref(shard(b, r)), shard(yb, r));
  (total / double(world())).backward();

  Net net = make_net(0);
  DistributedDataParallel ddp(net);
  {
    auto guard = ddp->no_sync();
    loss_of(ddp(shard(a, rank())), shard(ya, rank())).backward();
  }
  // Only the local gradient so far: that of this rank's loss on A.
  Net local = make_net(0);
  loss_of(local(shard(a, rank())), shard(ya, rank())).backward();
  expect_grads(*net, *local, "within no_sync");

  loss_of(ddp(shard(b, rank())), shard(yb, rank())).backward();
  expect_grads(*net, *ref, "after the synchronized step");
}

TEST(DistributedDataParallel, FindUnusedParameters) {
  auto [x, y] = batch(4, 2);
  // fc2 used by rank 0 only.
  Net ref = make_net(0, true);
  Tensor total = zeros({}, f64());
  for (int r = 0; r < world(); ++r) {
    ref->use_fc2 = r == 0;
    total = total + loss_of(ref(shard(x, r)), shard(y, r));
  }
  (total / double(world())).backward();

  Net net = make_net(0, true);
  DistributedDataParallel ddp(net, DistributedDataParallelOptions().find_unused_parameters(true));
  net->use_fc2 = rank() == 0;
  loss_of(ddp(shard(x, rank())), shard(y, rank())).backward();
  expect_grads(*net, *ref, "fc2 used on rank 0");

  // fc2 used nowhere: its grads stay undefined, or as they were.
  net->zero_grad();
  net->fc2->weight.set_grad(full({3, 6}, 3.0, f64()));
  net->use_fc2 = false;
  loss_of(ddp(shard(x, rank())), shard(y, rank())).backward();
  expect_close(net->fc2->weight.grad(), full({3, 6}, 3.0, f64()), 0, "kept fc2.weight");
  EXPECT_FALSE(net->fc2->bias.grad().defined());
  Net ref2 = make_net(0, true);
  ref2->use_fc2 = false;
  loss_of(ref2(x), y).backward();
  expect_close(net->fc1->weight.grad(), ref2->fc1->weight.grad(), 1e-12, "fc1.weight, fc2 unused");
  expect_close(net->fc3->bias.grad(), ref2->fc3->bias.grad(), 1e-12, "fc3.bias, fc2 unused");
}

TEST(DistributedDataParallel, UnusedParameterWithoutFindUnusedNamesIt) {
  auto [x, y] = batch(5, 2);
  Net net = make_net(0, true);
  DistributedDataParallel ddp(net);
  net->use_fc2 = false;
  std::string msg;
  try {
    loss_of(ddp(shard(x, rank())), shard(y, rank())).backward();
  } catch (const ValueError& e) {
    msg = e.what();
  }
  EXPECT_EQ(msg.rfind("[DistributedDataParallel] ", 0), 0u) << msg;
  EXPECT_NE(msg.find(": fc2.weight, fc2.bias."), std::string::npos) << msg;
  EXPECT_NE(msg.find("find_unused_parameters = true"), std::string::npos) << msg;
  // Usable again at the next forward.
  Net ref = make_net(0, true);
  loss_of(ref(x), y).backward();
  net->zero_grad();
  net->use_fc2 = true;
  loss_of(ddp(shard(x, rank())), shard(y, rank())).backward();
  expect_grads(*net, *ref, "after the error");
}

TEST(DistributedDataParallel, BuffersFromRankZero) {
  manual_seed(6);
  Tensor x = randn({4 * world(), 4}, kFloat64).to(dev());
  auto make = [] {
    manual_seed(0);
    BnNet n;
    n->to(dev());
    n->to(kFloat64);
    return n;
  };
  for (bool broadcast : {true, false}) {
    BnNet net = make();
    DistributedDataParallel ddp(net, DistributedDataParallelOptions().broadcast_buffers(broadcast));
    {
      NoGradGuard g;
      net->bn->running_mean.fill_(7.0 + rank());  // differs from rank to rank after construction
    }
    ddp(shard(x, rank())).sum().backward();
    BnNet ref = make();
    {
      NoGradGuard g;
      ref->bn->running_mean.fill_(broadcast ? 7.0 : 7.0 + rank());
    }
    ref(shard(x, rank()));
    expect_close(net->bn->running_mean, ref->bn->running_mean, 1e-12,
                 broadcast ? "running_mean from rank 0" : "own running_mean");
  }
}

TEST(DistributedDataParallel, SgdStepsStayIdenticalAcrossRanks) {
  auto [x, y] = batch(7, 3);
  const int steps = 4;
  Net ref = make_net(0);
  optim::SGD ref_opt(ref->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  Net net = make_net(rank() == 0 ? 0 : uint64_t(50 + rank()));
  DistributedDataParallel ddp(net);
  optim::SGD opt(ddp->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  for (int s = 0; s < steps; ++s) {
    ref_opt.zero_grad();
    loss_of(ref(x), y).backward();
    ref_opt.step();
    opt.zero_grad();
    loss_of(ddp(shard(x, rank())), shard(y, rank())).backward();
    opt.step();
  }
  std::vector<Tensor> flat;
  for (const Tensor& p : net->parameters()) flat.push_back(p.detach().reshape({-1}));
  Tensor mine = cat(flat);
  std::vector<Tensor> all;
  for (int r = 0; r < world(); ++r) all.push_back(empty_like(mine));
  dist::all_gather(all, mine);
  for (int r = 0; r < world(); ++r)
    expect_close(all[size_t(r)], all[0], 0, "rank " + std::to_string(r) + "'s parameters");
  const auto want = ref->parameters(), got = net->parameters();
  for (size_t i = 0; i < want.size(); ++i) expect_close(got[i], want[i], 1e-12, "parameter after SGD");
}

// Three buckets (a first one of 1 MiB that fc2's weight fills, then one per parameter): on the
// nccl backend every bucket but the last runs on the group's second communicator of few thread
// blocks, the last on its own; the averages are the same.
TEST(DistributedDataParallel, ManyBucketsOverlappedAndLastEqualFullBatch) {
  struct WideImpl : nn::Module {
    WideImpl() {
      fc1 = register_module("fc1", nn::Linear(4, 300));
      fc2 = register_module("fc2", nn::Linear(300, 600));
      fc3 = register_module("fc3", nn::Linear(600, 3));
    }
    Tensor forward(const Tensor& x) { return fc3(tanh(fc2(tanh(fc1(x))))); }
    nn::Linear fc1{nullptr}, fc2{nullptr}, fc3{nullptr};
  };
  auto make = [](uint64_t seed) {
    manual_seed(seed);
    auto m = std::make_shared<WideImpl>();
    m->to(dev());
    m->to(kFloat64);
    return m;
  };
  auto [x, y] = batch(11, 3);
  auto ref = make(0);
  auto net = make(rank() == 0 ? 0 : uint64_t(70 + rank()));
  DistributedDataParallel ddp(net, DistributedDataParallelOptions().bucket_cap_mb(0.001));
  const auto buckets = ddp->bucket_parameter_names();
  // A cap below 1 MiB caps the first bucket too: a bucket closes once it holds 1048 bytes, so
  // only fc3.bias (24 bytes) shares one.
  ASSERT_EQ(buckets.size(), 5u);
  EXPECT_EQ(buckets[0], (std::vector<std::string>{"fc3.bias", "fc3.weight"}));
  EXPECT_EQ(buckets[1], (std::vector<std::string>{"fc2.bias"}));
  EXPECT_EQ(buckets[4], (std::vector<std::string>{"fc1.weight"}));
  for (int step = 0; step < 3; ++step) {
    ref->zero_grad();
    net->zero_grad();
    const Tensor xs = x * double(step + 1);
    loss_of(ref->forward(xs), y).backward();
    loss_of(ddp(shard(xs, rank())), shard(y, rank())).backward();
    expect_grads(*net, *ref, "grad of step " + std::to_string(step));
  }
}

// Modules that differ across ranks are refused on every rank at construction (no rank hangs,
// no broadcast writes past a tensor); the same module on every rank wraps after that.
TEST(DistributedDataParallel, ModulesThatDifferAcrossRanksAreRefusedEverywhere) {
  if (world() < 2) GTEST_SKIP() << "needs 2 processes";
  Net net(/*with_fc3=*/rank() == world() - 1);
  net->to(dev());
  const Tensor w = net->fc1->weight.detach().clone();
  std::string msg;
  try {
    DistributedDataParallel ddp(net);
  } catch (const ValueError& e) {
    msg = e.what();
  }
  EXPECT_EQ(msg.rfind("[DistributedDataParallel] DDP expects the same model on every rank", 0), 0u) << msg;
  EXPECT_EQ(net->fc1->weight.cpu().to_vector<float>(), w.cpu().to_vector<float>());  // nothing broadcast
  Net same;
  same->to(dev());
  DistributedDataParallel ok(same);
  EXPECT_EQ(ok->bucket_parameter_names().size(), 1u);
}

}  // namespace
}  // namespace wick
