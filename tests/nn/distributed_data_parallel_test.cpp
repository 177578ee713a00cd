// nn::parallel::DistributedDataParallel in one process: bucket assignment (PyTorch's
// compute_bucket_assignment_by_size, by hand), and the DDP itself with 1, 2 and 3 ranks that are
// threads over a ProcessGroup of this process (tests/nn/thread_process_group.h). Gradients are
// compared with those of a plain copy of the model on the full batch (float64, to 1e-12): the
// mean over ranks of shard means is the full-batch mean. Multi-process runs over the mpi
// backend are in tests/distributed.
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/comm_plan.h"
#include "nn_test_util.h"
#include "thread_process_group.h"
#include "wick/optim.h"
#include "wick/wick.h"

using namespace wick;
using nn::parallel::DistributedDataParallel;
using nn::parallel::DistributedDataParallelImpl;
using nn::parallel::DistributedDataParallelOptions;
using wick::testing::error_of;
using wick::testing::make_thread_groups;
using wick::testing::run_ranks;

namespace {

// fc2(tanh(fc1(x))) + fc3(tanh(fc1(x))), fc2 only while use_fc2.
struct NetImpl : nn::Module {
  NetImpl(int64_t in, int64_t hidden, int64_t out, bool with_fc3 = false) {
    fc1 = register_module("fc1", nn::Linear(in, hidden));
    fc2 = register_module("fc2", nn::Linear(hidden, out));
    if (with_fc3) fc3 = register_module("fc3", nn::Linear(hidden, out));
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

// fc2(relu(bn(fc1(x)))): BatchNorm's running statistics are buffers.
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

Net make_net(uint64_t seed, bool with_fc3 = false, int64_t in = 4, int64_t hidden = 6, int64_t out = 3) {
  manual_seed(seed);
  Net n(in, hidden, out, with_fc3);
  n->to(kFloat64);
  return n;
}

// A copy of src's parameters and buffers in a new module made by make.
template <class H, class F>
H copy_of(const H& src, F make) {
  H dst = make();
  dst->load_state_dict(src->state_dict());
  return dst;
}

Tensor loss_of(const Tensor& out, const Tensor& y) {
  Tensor d = out - y;
  return (d * d).mean();
}

std::map<std::string, Tensor> grads_of(const nn::Module& m) {
  std::map<std::string, Tensor> g;
  for (const auto& [name, p] : m.named_parameters())
    g[name] = p.grad().defined() ? p.grad().clone() : Tensor();
  return g;
}

void expect_same_grads(const std::map<std::string, Tensor>& got, const std::map<std::string, Tensor>& want,
                       const std::string& what, double tol = 1e-12) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (const auto& [name, w] : want) {
    const Tensor& g = got.at(name);
    ASSERT_EQ(g.defined(), w.defined()) << what << " " << name;
    if (w.defined()) wick::testing::expect_close(g, w, tol, 0, what + " " + name);
  }
}

Tensor rows(const Tensor& t, int rank, int world) {
  const int64_t n = t.size(0) / world;
  return t.narrow(0, rank * n, n);
}

// ---- bucket assignment

TEST(DdpBuckets, AssignmentBySize) {
  using wick::detail::compute_bucket_assignment_by_size;
  auto f64 = [](int64_t n) { return zeros({n}, kFloat64); };
  auto f32 = [](int64_t n) { return zeros({n}, kFloat32); };
  // bytes: 800000, 400000 | 40 (f32) | 80, 160 | 1200000 (f32) | 8
  std::vector<Tensor> t = {f64(100000), f64(50000), f32(10), f64(10), f64(20), f32(300000), f64(1)};
  const int64_t mib = 1024 * 1024;
  auto b = compute_bucket_assignment_by_size(t, {mib, 200});
  // float64: 0+1 reach 1 MiB (first cap); then 3+4 reach 200 bytes; 6 is left over. float32 has
  // its own first cap of 1 MiB: 2+5. Buckets ordered by their first tensor.
  EXPECT_EQ(b, (std::vector<std::vector<size_t>>{{0, 1}, {2, 5}, {3, 4}, {6}}));
  // One limit: every bucket capped by it; a tensor larger than the cap is a bucket of its own.
  b = compute_bucket_assignment_by_size({f64(10), f64(100), f64(5), f64(5)}, {400});
  EXPECT_EQ(b, (std::vector<std::vector<size_t>>{{0, 1}, {2, 3}}));
  b = compute_bucket_assignment_by_size({f64(100), f64(1), f64(100)}, {400, 800});
  EXPECT_EQ(b, (std::vector<std::vector<size_t>>{{0}, {1, 2}}));
  EXPECT_TRUE(compute_bucket_assignment_by_size({}, {400}).empty());
  EXPECT_NE(error_of([&] { compute_bucket_assignment_by_size(t, {}); }), "");
  EXPECT_NE(error_of([&] { compute_bucket_assignment_by_size(t, {0}); }), "");
}

TEST(DdpBuckets, ReverseRegistrationOrderFirstBucketOneMiB) {
  auto groups = make_thread_groups(1);
  // fc2.weight: 256 * 520 float64 = 1064960 bytes, past 1 MiB with fc2.bias before it.
  auto net = make_net(0, false, 8, 256, 520);
  // A cap below the first bucket's 1 MiB caps the first bucket too: a tiny cap gives one bucket
  // per parameter, as PyTorch's explicit bucket_cap_mb does.
  DistributedDataParallel ddp(net,
                              DistributedDataParallelOptions().process_group(groups[0]).bucket_cap_mb(0.001));
  EXPECT_EQ(ddp->bucket_parameter_names(), (std::vector<std::vector<std::string>>{
                                               {"fc2.bias"}, {"fc2.weight"}, {"fc1.bias"}, {"fc1.weight"}}));
  // With the default cap of 25 MiB the rest is one bucket.
  auto net2 = make_net(0, false, 8, 256, 520);
  DistributedDataParallel ddp2(net2, DistributedDataParallelOptions().process_group(groups[0]));
  EXPECT_EQ(ddp2->bucket_parameter_names(),
            (std::vector<std::vector<std::string>>{{"fc2.bias", "fc2.weight"}, {"fc1.bias", "fc1.weight"}}));
  // Small: all in the first bucket, last registered first.
  auto small = make_net(0);
  DistributedDataParallel ddp3(small, DistributedDataParallelOptions().process_group(groups[0]));
  EXPECT_EQ(ddp3->bucket_parameter_names(),
            (std::vector<std::vector<std::string>>{{"fc2.bias", "fc2.weight", "fc1.bias", "fc1.weight"}}));
}

TEST(DdpBuckets, DtypesApartFrozenSkippedSharedOnce) {
  struct MixedImpl : nn::Module {
    MixedImpl() {
      a = register_parameter("a", zeros({3}, kFloat64));
      b = register_parameter("b", zeros({2}, kFloat32));
      register_parameter("frozen", zeros({4}, kFloat64), /*requires_grad=*/false);
      register_parameter("a_again", a);
      c = register_parameter("c", zeros({5}, kFloat64));
    }
    Tensor forward(const Tensor& x) { return x; }
    Tensor a, b, c;
  };
  auto m = std::make_shared<MixedImpl>();
  auto groups = make_thread_groups(1);
  DistributedDataParallel ddp(m, DistributedDataParallelOptions().process_group(groups[0]));
  EXPECT_EQ(ddp->bucket_parameter_names(), (std::vector<std::vector<std::string>>{{"c", "a"}, {"b"}}));
}

// ---- gradients

void check_full_batch_gradients(int world) {
  manual_seed(1);
  const Tensor x = randn({12, 4}, kFloat64), y = randn({12, 3}, kFloat64);
  Net ref = make_net(0);
  loss_of(ref(x), y).backward();
  const auto want = grads_of(*ref);
  const auto want_params = ref->state_dict();

  auto groups = make_thread_groups(world);
  std::vector<Net> nets;
  for (int r = 0; r < world; ++r) nets.push_back(make_net(r == 0 ? 0 : uint64_t(100 + r)));  // others differ
  std::vector<std::map<std::string, Tensor>> got(static_cast<size_t>(world));
  std::vector<std::vector<std::string>> keys(static_cast<size_t>(world));
  run_ranks(world, [&](int r) {
    DistributedDataParallel ddp(nets[size_t(r)],
                                DistributedDataParallelOptions().process_group(groups[size_t(r)]));
    for (const auto& [k, v] : ddp->state_dict()) keys[size_t(r)].push_back(k);
    Tensor loss = loss_of(ddp(rows(x, r, world)), rows(y, r, world));
    loss.backward();
    got[size_t(r)] = grads_of(*nets[size_t(r)]);
  });
  for (int r = 0; r < world; ++r) {
    const std::string what = "rank " + std::to_string(r) + " of " + std::to_string(world);
    expect_same_grads(got[size_t(r)], want, what);
    // rank 0's initial parameters everywhere
    for (const auto& [name, p] : want_params)
      for (const auto& [n2, q] : nets[size_t(r)]->named_parameters())
        if (n2 == name) wick::testing::expect_close(q, p, 0, 0, what + " " + name);
    EXPECT_EQ(keys[size_t(r)], (std::vector<std::string>{"module.fc1.weight", "module.fc1.bias",
                                                         "module.fc2.weight", "module.fc2.bias"}));
    // a broadcast at construction (one float64 buffer), then one all_reduce AVG per bucket
    const auto& log = groups[size_t(r)]->log;
    if (world > 1) {
      // the check that every rank has the same parameters, then the broadcast, then the bucket
      EXPECT_EQ(log, (std::vector<std::string>{"all_reduce MAX 6 int64", "broadcast 51 float64",
                                               "all_reduce AVG 51 float64"}))
          << what;
    } else {
      EXPECT_EQ(log, (std::vector<std::string>{"all_reduce AVG 51 float64"})) << what;
    }
  }
}

TEST(Ddp, GradientsEqualFullBatchOneRank) { check_full_batch_gradients(1); }
TEST(Ddp, GradientsEqualFullBatchTwoRanks) { check_full_batch_gradients(2); }
TEST(Ddp, GradientsEqualFullBatchThreeRanks) { check_full_batch_gradients(3); }

TEST(Ddp, GradientsAreViewsOfOneBucket) {
  auto groups = make_thread_groups(1);
  Net net = make_net(0);
  DistributedDataParallel ddp(net, DistributedDataParallelOptions().process_group(groups[0]));
  loss_of(ddp(ones({2, 4}, kFloat64)), zeros({2, 3}, kFloat64)).backward();
  const auto params = net->parameters();
  for (const auto& p : params) {
    ASSERT_TRUE(p.grad().defined());
    EXPECT_EQ(p.grad().impl()->storage().get(), params[0].grad().impl()->storage().get());
  }
  // Reverse registration order in the bucket: fc2.bias first.
  EXPECT_EQ(net->fc2->bias.grad().storage_offset(), 0);
  EXPECT_EQ(net->fc2->weight.grad().storage_offset(), 3);
  EXPECT_EQ(net->fc1->bias.grad().storage_offset(), 21);
  EXPECT_EQ(net->fc1->weight.grad().storage_offset(), 27);
}

TEST(Ddp, NoSyncThenSyncEqualsOneStepOverBoth) {
  const int world = 2;
  manual_seed(2);
  const Tensor a = randn({8, 4}, kFloat64), ya = randn({8, 3}, kFloat64);
  const Tensor b = randn({8, 4}, kFloat64), yb = randn({8, 3}, kFloat64);
  Net ref = make_net(0);
  // Two iterations; the second starts from zeroed (not undefined) gradients.
  std::vector<std::map<std::string, Tensor>> want;
  for (int it = 0; it < 2; ++it) {
    ref->zero_grad(/*set_to_none=*/it == 0);
    Tensor total = zeros({}, kFloat64);
    for (int r = 0; r < world; ++r)
      total = total + loss_of(ref(rows(a, r, world)), rows(ya, r, world)) +
              loss_of(ref(rows(b, r, world)), rows(yb, r, world));
    (total / double(world)).backward();
    want.push_back(grads_of(*ref));
  }

  auto groups = make_thread_groups(world);
  std::vector<Net> nets = {make_net(0), make_net(0)};
  std::vector<std::vector<std::map<std::string, Tensor>>> got(world);
  std::vector<size_t> collectives_in_no_sync(world);
  run_ranks(world, [&](int r) {
    auto& g = *groups[size_t(r)];
    DistributedDataParallel ddp(nets[size_t(r)],
                                DistributedDataParallelOptions().process_group(groups[size_t(r)]));
    for (int it = 0; it < 2; ++it) {
      ddp->zero_grad(/*set_to_none=*/it == 0);
      const size_t before = g.log.size();
      {
        auto guard = ddp->no_sync();
        loss_of(ddp(rows(a, r, world)), rows(ya, r, world)).backward();
      }
      collectives_in_no_sync[size_t(r)] += g.log.size() - before;
      loss_of(ddp(rows(b, r, world)), rows(yb, r, world)).backward();
      got[size_t(r)].push_back(grads_of(*nets[size_t(r)]));
    }
  });
  for (int r = 0; r < world; ++r) {
    EXPECT_EQ(collectives_in_no_sync[size_t(r)], 0u);
    for (int it = 0; it < 2; ++it)
      expect_same_grads(got[size_t(r)][size_t(it)], want[size_t(it)],
                        "rank " + std::to_string(r) + " iteration " + std::to_string(it));
  }
}

TEST(Ddp, FindUnusedParameters) {
  const int world = 2;
  manual_seed(3);
  const Tensor x = randn({6, 4}, kFloat64), y = randn({6, 3}, kFloat64);
  auto make = [] { return make_net(0, /*with_fc3=*/true); };
  Net base = make();

  // 1. fc2 used on rank 0 only: it gets rank 0's gradient over 2, the rest the mean.
  Net ref = copy_of(base, make);
  ref->use_fc2 = true;
  Tensor l0 = loss_of(ref(rows(x, 0, world)), rows(y, 0, world));
  ref->use_fc2 = false;
  Tensor l1 = loss_of(ref(rows(x, 1, world)), rows(y, 1, world));
  ((l0 + l1) / 2.0).backward();
  const auto want_mixed = grads_of(*ref);
  // 2. fc2 used nowhere (fresh gradients): fc2's grads stay undefined.
  Net ref2 = copy_of(base, make);
  ref2->use_fc2 = false;
  ((loss_of(ref2(rows(x, 0, world)), rows(y, 0, world)) +
    loss_of(ref2(rows(x, 1, world)), rows(y, 1, world))) /
   2.0)
      .backward();
  const auto want_none = grads_of(*ref2);
  ASSERT_FALSE(want_none.at("fc2.weight").defined());

  auto groups = make_thread_groups(world);
  std::vector<Net> nets = {copy_of(base, make), copy_of(base, make)};
  std::vector<std::map<std::string, Tensor>> got_mixed(world), got_none(world), got_kept(world);
  run_ranks(world, [&](int r) {
    Net& net = nets[size_t(r)];
    DistributedDataParallel ddp(
        net, DistributedDataParallelOptions().process_group(groups[size_t(r)]).find_unused_parameters(true));
    net->use_fc2 = r == 0;
    loss_of(ddp(rows(x, r, world)), rows(y, r, world)).backward();
    got_mixed[size_t(r)] = grads_of(*net);

    net->zero_grad();
    net->use_fc2 = false;
    loss_of(ddp(rows(x, r, world)), rows(y, r, world)).backward();
    got_none[size_t(r)] = grads_of(*net);

    // 3. A gradient already there (3s) of a parameter no rank uses is left as it was.
    net->zero_grad();
    net->fc2->weight.set_grad(full({3, 6}, 3.0, kFloat64));
    loss_of(ddp(rows(x, r, world)), rows(y, r, world)).backward();
    got_kept[size_t(r)] = grads_of(*net);
  });
  for (int r = 0; r < world; ++r) {
    const std::string what = "rank " + std::to_string(r);
    expect_same_grads(got_mixed[size_t(r)], want_mixed, what + " fc2 used on rank 0");
    expect_same_grads(got_none[size_t(r)], want_none, what + " fc2 unused");
    auto want_kept = want_none;
    want_kept["fc2.weight"] = full({3, 6}, 3.0, kFloat64);
    expect_same_grads(got_kept[size_t(r)], want_kept, what + " fc2 unused, grad kept");
    // the parameters' check and broadcast, then each backward: one bucket, then the used map
    const auto& log = groups[size_t(r)]->log;
    ASSERT_EQ(log.size(), 8u);
    EXPECT_EQ(log[0], "all_reduce MAX 6 int64");
    EXPECT_EQ(log[2], "all_reduce AVG 72 float64");
    EXPECT_EQ(log[3], "all_reduce MAX 6 int32");
  }
}

TEST(Ddp, UnusedParameterWithoutFindUnusedIsAnErrorNamingIt) {
  const int world = 2;
  manual_seed(4);
  const Tensor x = randn({6, 4}, kFloat64), y = randn({6, 3}, kFloat64);
  auto make = [] { return make_net(0, /*with_fc3=*/true); };
  Net base = make();
  Net ref = copy_of(base, make);
  loss_of(ref(x), y).backward();
  const auto want = grads_of(*ref);

  auto groups = make_thread_groups(world);
  std::vector<Net> nets = {copy_of(base, make), copy_of(base, make)};
  std::vector<std::string> errors(world);
  std::vector<std::map<std::string, Tensor>> got(world);
  run_ranks(world, [&](int r) {
    Net& net = nets[size_t(r)];
    DistributedDataParallel ddp(net, DistributedDataParallelOptions().process_group(groups[size_t(r)]));
    net->use_fc2 = false;
    errors[size_t(r)] = error_of([&] { loss_of(ddp(rows(x, r, world)), rows(y, r, world)).backward(); });
    // Usable again: the next forward starts afresh.
    net->zero_grad();
    net->use_fc2 = true;
    loss_of(ddp(rows(x, r, world)), rows(y, r, world)).backward();
    got[size_t(r)] = grads_of(*net);
  });
  for (int r = 0; r < world; ++r) {
    EXPECT_NE(errors[size_t(r)].find("[DistributedDataParallel] "), std::string::npos) << errors[size_t(r)];
    EXPECT_NE(errors[size_t(r)].find(": fc2.weight, fc2.bias."), std::string::npos) << errors[size_t(r)];
    EXPECT_NE(errors[size_t(r)].find("find_unused_parameters = true"), std::string::npos)
        << errors[size_t(r)];
    expect_same_grads(got[size_t(r)], want, "rank " + std::to_string(r) + " after the error");
  }
}

TEST(Ddp, BuffersFromRankZeroBeforeEachForward) {
  const int world = 2;
  manual_seed(5);
  const Tensor x = randn({8, 4}, kFloat64);
  auto make = [] {
    BnNet n;
    n->to(kFloat64);
    return n;
  };
  manual_seed(0);
  BnNet base = make();
  {
    NoGradGuard g;
    base->bn->running_mean.fill_(0.5);
    base->bn->running_var.fill_(2.0);
  }
  for (bool broadcast : {true, false}) {
    // What each rank's statistics become after one forward of its shard from rank 0's (with
    // broadcast_buffers) or from its own (7s on rank 1).
    std::vector<Tensor> want_mean;
    for (int r = 0; r < world; ++r) {
      BnNet ref = copy_of(base, make);
      if (r == 1 && !broadcast) {
        NoGradGuard g;
        ref->bn->running_mean.fill_(7.0);
      }
      ref(rows(x, r, world));
      want_mean.push_back(ref->bn->running_mean.clone());
    }
    auto groups = make_thread_groups(world);
    std::vector<BnNet> nets = {copy_of(base, make), copy_of(base, make)};
    std::vector<Tensor> got_mean(world), got_var0(world);
    run_ranks(world, [&](int r) {
      BnNet& net = nets[size_t(r)];
      DistributedDataParallel ddp(
          net,
          DistributedDataParallelOptions().process_group(groups[size_t(r)]).broadcast_buffers(broadcast));
      if (r == 1) {
        NoGradGuard g;
        net->bn->running_mean.fill_(7.0);  // after construction's broadcast
      }
      ddp(rows(x, r, world)).sum().backward();
      got_mean[size_t(r)] = net->bn->running_mean.clone();
    });
    for (int r = 0; r < world; ++r)
      wick::testing::expect_close(got_mean[size_t(r)], want_mean[size_t(r)], 1e-12, 0,
                                  "rank " + std::to_string(r) + (broadcast ? " broadcast" : " own buffers"));
  }
}

TEST(Ddp, SgdStepsStayIdenticalAcrossRanks) {
  const int world = 3, steps = 4;
  manual_seed(6);
  const Tensor x = randn({9, 4}, kFloat64), y = randn({9, 3}, kFloat64);
  Net ref = make_net(0);
  optim::SGD ref_opt(ref->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  for (int s = 0; s < steps; ++s) {
    ref_opt.zero_grad();
    loss_of(ref(x), y).backward();
    ref_opt.step();
  }
  auto groups = make_thread_groups(world);
  std::vector<Net> nets = {make_net(0), make_net(11), make_net(12)};
  run_ranks(world, [&](int r) {
    DistributedDataParallel ddp(nets[size_t(r)],
                                DistributedDataParallelOptions().process_group(groups[size_t(r)]));
    optim::SGD opt(ddp->parameters(), optim::SGDOptions(0.1).momentum(0.9));
    for (int s = 0; s < steps; ++s) {
      opt.zero_grad();
      loss_of(ddp(rows(x, r, world)), rows(y, r, world)).backward();
      opt.step();
    }
  });
  for (int r = 0; r < world; ++r) {
    const auto want = ref->parameters(), got = nets[size_t(r)]->parameters();
    for (size_t i = 0; i < want.size(); ++i) {
      wick::testing::expect_close(got[i], want[i], 1e-12, 0, "rank " + std::to_string(r));
      wick::testing::expect_close(got[i], nets[0]->parameters()[i], 0, 0, "rank " + std::to_string(r));
    }
  }
}

TEST(Ddp, FirstBucketLaunchesBeforeTheBackwardEnds) {
  const int world = 2;
  manual_seed(7);
  const Tensor x = randn({4, 8}, kFloat64), y = randn({4, 520}, kFloat64);
  setenv("WICK_TIMELINE", "1", 1);
  auto groups = make_thread_groups(world);
  std::vector<Net> nets = {make_net(0, false, 8, 256, 520), make_net(0, false, 8, 256, 520)};
  Net ref = make_net(0, false, 8, 256, 520);
  loss_of(ref(x), y).backward();
  const auto want = grads_of(*ref);
  std::vector<size_t> launched_at_fc1_weight(world);
  std::vector<std::vector<DistributedDataParallelImpl::TimelineMark>> marks(world);
  std::vector<std::map<std::string, Tensor>> got(world);
  run_ranks(world, [&](int r) {
    auto& g = *groups[size_t(r)];
    Net& net = nets[size_t(r)];
    DistributedDataParallel ddp(
        net, DistributedDataParallelOptions().process_group(groups[size_t(r)]).bucket_cap_mb(0.001));
    // runs after DDP's own hook of fc1.weight (registered later)
    autograd::register_post_accumulate_grad_hook(
        net->fc1->weight, [&, r](const Tensor&) { launched_at_fc1_weight[size_t(r)] = g.log.size(); });
    loss_of(ddp(rows(x, r, world)), rows(y, r, world)).backward();
    marks[size_t(r)] = ddp->timeline();
    got[size_t(r)] = grads_of(*net);
  });
  unsetenv("WICK_TIMELINE");
  for (int r = 0; r < world; ++r) {
    expect_same_grads(got[size_t(r)], want, "rank " + std::to_string(r));
    // the construction's check and broadcast, then at least fc2's buckets before fc1's gradient
    // was in
    EXPECT_GE(launched_at_fc1_weight[size_t(r)], 4u);
    std::vector<std::string> phases;
    for (const auto& m : marks[size_t(r)]) phases.push_back(m.phase);
    EXPECT_EQ(phases, (std::vector<std::string>{"forward.begin", "bucket[0].launch", "bucket[1].launch",
                                                "bucket[2].launch", "bucket[3].launch", "backward.end"}));
    for (size_t i = 1; i < marks[size_t(r)].size(); ++i)
      EXPECT_LE(marks[size_t(r)][i - 1].host_ms, marks[size_t(r)][i].host_ms);
  }
}

TEST(Ddp, NoTimelineByDefaultNoReductionWithoutGradModeHooksRemoved) {
  unsetenv("WICK_TIMELINE");
  auto groups = make_thread_groups(1);
  Net net = make_net(0);
  {
    DistributedDataParallel ddp(net, DistributedDataParallelOptions().process_group(groups[0]));
    {
      NoGradGuard g;
      ddp(ones({2, 4}, kFloat64));
    }
    EXPECT_TRUE(groups[0]->log.empty());
    // A backward pass of a forward made without the DDP reduces nothing.
    loss_of(net(ones({2, 4}, kFloat64)), zeros({2, 3}, kFloat64)).backward();
    EXPECT_TRUE(groups[0]->log.empty());
    loss_of(ddp(ones({2, 4}, kFloat64)), zeros({2, 3}, kFloat64)).backward();
    EXPECT_EQ(groups[0]->log.size(), 1u);
    EXPECT_TRUE(ddp->timeline().empty());
  }
  // The DDP is gone: its hooks are too.
  net->zero_grad();
  loss_of(net(ones({2, 4}, kFloat64)), zeros({2, 3}, kFloat64)).backward();
  EXPECT_EQ(groups[0]->log.size(), 1u);
  EXPECT_TRUE(net->fc1->weight.grad().defined());
}

TEST(Ddp, RanksWithOtherParametersRefusedOnEveryRank) {
  const int world = 3;
  auto groups = make_thread_groups(world);
  for (int variant = 0; variant < 3; ++variant) {
    std::vector<std::string> msgs(world);
    std::vector<Net> nets;
    for (int r = 0; r < world; ++r) {
      // variant 0: rank 2's hidden width differs; 1: rank 1 has fc3 too; 2: rank 0 is float32.
      Net n = make_net(0, variant == 1 && r == 1, 4, variant == 0 && r == 2 ? 7 : 6);
      if (variant == 2 && r == 0) n->to(kFloat32);
      nets.push_back(n);
    }
    std::vector<Tensor> before;
    for (const Tensor& p : nets[1]->parameters()) before.push_back(p.clone());
    run_ranks(world, [&](int r) {
      msgs[size_t(r)] = error_of([&] {
        DistributedDataParallel(nets[size_t(r)],
                                DistributedDataParallelOptions().process_group(groups[size_t(r)]));
      });
    });
    for (int r = 0; r < world; ++r) {
      EXPECT_EQ(msgs[size_t(r)].rfind("[DistributedDataParallel] DDP expects the same model on every rank", 0), 0u)
          << "variant " << variant << " rank " << r << ": " << msgs[size_t(r)];
      if (variant == 1) {
        EXPECT_NE(msgs[size_t(r)].find("in number: from 4 to 6"), std::string::npos);
      }
    }
    // Nothing was broadcast over the mismatched parameters.
    const auto after = nets[1]->parameters();
    for (size_t i = 0; i < before.size(); ++i) wick::testing::expect_close(after[i], before[i], 0, 0, "unchanged");
  }
}

TEST(Ddp, NoParameterThatRequiresGradAndParametersChangedAfterWrapping) {
  auto groups = make_thread_groups(1);
  Net frozen = make_net(0);
  for (Tensor& p : frozen->parameters()) p.requires_grad_(false);
  EXPECT_EQ(error_of([&] {
              DistributedDataParallel(frozen, DistributedDataParallelOptions().process_group(groups[0]));
            }),
            "[DistributedDataParallel] DistributedDataParallel is not needed when a module doesn't have any "
            "parameter that requires a gradient");
  Net net = make_net(0);
  DistributedDataParallel ddp(net, DistributedDataParallelOptions().process_group(groups[0]));
  (void)ddp(ones({2, 4}, kFloat64));
  net->to(kFloat32);
  const std::string msg = error_of([&] { (void)ddp(ones({2, 4}, kFloat32)); });
  EXPECT_EQ(msg.rfind("[DistributedDataParallel] the parameter fc1.weight is now float32 on cpu but was float64 on cpu", 0),
            0u)
      << msg;
}

TEST(Ddp, Errors) {
  Net net = make_net(0);
  auto mpi = make_thread_groups(1, "mpi");
  auto nccl = make_thread_groups(1, "nccl");
  auto msg = error_of(
      [&] { DistributedDataParallel(net, DistributedDataParallelOptions().process_group(nccl[0])); });
  EXPECT_EQ(msg,
            "[DistributedDataParallel] the module is on cpu but the nccl backend takes CUDA tensors: move "
            "the module "
            "to this process's GPU first");
  msg = error_of([&] {
    DistributedDataParallel(net, DistributedDataParallelOptions().process_group(mpi[0]).device_ids({0}));
  });
  EXPECT_EQ(msg, "[DistributedDataParallel] device_ids names cuda:0 but the module is on cpu");
  msg = error_of([&] {
    DistributedDataParallel(net, DistributedDataParallelOptions().process_group(mpi[0]).bucket_cap_mb(0));
  });
  EXPECT_EQ(msg, "[DistributedDataParallel] bucket_cap_mb must be positive, got 0");
  // A failed construction changed nothing: no hooks left behind.
  loss_of(net(ones({2, 4}, kFloat64)), zeros({2, 3}, kFloat64)).backward();
  EXPECT_TRUE(mpi[0]->log.empty());
  if (cuda::is_available()) {
    Net gpu = make_net(0);
    gpu->fc1->to(Device("cuda:0"));
    msg = error_of(
        [&] { DistributedDataParallel(gpu, DistributedDataParallelOptions().process_group(mpi[0])); });
    EXPECT_NE(msg.find("must all be on one device"), std::string::npos) << msg;
  }
}

// ---- CUDA: the module on cuda:0 over a group taking CUDA tensors (as nccl); the reference on
// the CPU. Both ranks share the GPU.

TEST(DdpCuda, GradientsAndUnusedParametersOnTheGpu) {
  if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const Device gpu("cuda:0");
  manual_seed(8);
  const Tensor x = randn({6, 4}, kFloat64), y = randn({6, 3}, kFloat64);
  for (int world : {1, 2}) {
    for (bool unused : {false, true}) {
      // With unused: fc2 on rank 0 only, found by find_unused_parameters.
      Net ref = make_net(0, /*with_fc3=*/true);
      Tensor total = zeros({}, kFloat64);
      for (int r = 0; r < world; ++r) {
        ref->use_fc2 = !unused || r == 0;
        total = total + loss_of(ref(rows(x, r, world)), rows(y, r, world));
      }
      (total / double(world)).backward();
      const auto want = grads_of(*ref);

      auto groups = make_thread_groups(world, "nccl");
      std::vector<Net> nets;
      for (int r = 0; r < world; ++r) {
        nets.push_back(make_net(r == 0 ? 0 : 40, /*with_fc3=*/true));
        nets.back()->to(gpu);
      }
      std::vector<std::map<std::string, Tensor>> got(static_cast<size_t>(world));
      run_ranks(world, [&](int r) {
        Net& net = nets[size_t(r)];
        DistributedDataParallel ddp(net, DistributedDataParallelOptions()
                                             .process_group(groups[size_t(r)])
                                             .device_ids({0})
                                             .find_unused_parameters(unused));
        net->use_fc2 = !unused || r == 0;
        loss_of(ddp(rows(x, r, world).to(gpu)), rows(y, r, world).to(gpu)).backward();
        for (const auto& [name, p] : net->named_parameters()) {
          EXPECT_TRUE(!p.grad().defined() || p.grad().is_cuda()) << name;
          got[size_t(r)][name] = p.grad().defined() ? p.grad().cpu() : Tensor();
        }
      });
      for (int r = 0; r < world; ++r)
        expect_same_grads(
            got[size_t(r)], want,
            "rank " + std::to_string(r) + " of " + std::to_string(world) + (unused ? " unused" : ""));
    }
  }
}

}  // namespace
