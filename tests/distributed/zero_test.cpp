// distributed::optim::ZeroRedundancyOptimizer over the default group (1 to 4 processes, mpi or
// gloo): DDP with ZeRO-1 takes bitwise the steps of DDP with the plain optimizer (float64), each
// rank's state covers only its partition, the partitions are PyTorch's greedy ones, and the
// consolidated state_dict is the plain optimizer's (and resumes a run exactly).
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "dist_test_util.h"
#include "wick/autograd.h"
#include "wick/cuda.h"
#include "wick/distributed.h"
#include "wick/distributed/zero.h"
#include "wick/nn.h"
#include "wick/ops.h"
#include "wick/optim.h"
#include "wick/random.h"

namespace wick {
namespace {

namespace dist = wick::distributed;
using dist::optim::optimizer_class;
using dist::optim::ZeroRedundancyOptimizer;
using nn::parallel::DistributedDataParallel;

int rank() { return dist::get_rank(); }
int world() { return dist::get_world_size(); }

// Parameters of several sizes: 40+8, 24+3, 8*5+5 (odd sizes so that partitions differ in size).
struct ZNetImpl : nn::Module {
  ZNetImpl() {
    fc1 = register_module("fc1", nn::Linear(5, 8));
    fc2 = register_module("fc2", nn::Linear(8, 8));
    fc3 = register_module("fc3", nn::Linear(8, 3));
  }
  Tensor forward(const Tensor& x) { return fc3(tanh(fc2(tanh(fc1(x))))); }
  nn::Linear fc1{nullptr}, fc2{nullptr}, fc3{nullptr};
};
WICK_MODULE(ZNet);

ZNet make_net() {
  manual_seed(3);
  ZNet n;
  n->to(kFloat64);
  return n;
}

Tensor loss_of(const Tensor& out, const Tensor& y) {
  Tensor d = out - y;
  return (d * d).mean();
}

std::pair<Tensor, Tensor> batch(uint64_t seed) {
  manual_seed(seed);
  Tensor x = randn({int64_t(2 * world()), 5}, kFloat64);
  Tensor y = randn({int64_t(2 * world()), 3}, kFloat64);
  return {x.narrow(0, 2 * rank(), 2), y.narrow(0, 2 * rank(), 2)};
}

// The bits of every parameter, flattened.
std::vector<double> values(const nn::Module& m) {
  std::vector<double> out;
  for (const Tensor& p : m.parameters()) {
    auto v = p.detach().contiguous().to_vector<double>();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

// DDP + opt for steps steps; the losses.
template <class Opt>
std::vector<double> train(DistributedDataParallel& ddp, Opt& opt, int steps, uint64_t seed0) {
  std::vector<double> losses;
  for (int s = 0; s < steps; ++s) {
    auto [x, y] = batch(seed0 + uint64_t(s));
    opt.zero_grad();
    Tensor loss = loss_of(ddp(x), y);
    loss.backward();
    opt.step();
    losses.push_back(loss.item<double>());
  }
  return losses;
}

int64_t state_numel(const optim::Optimizer& o) {
  int64_t n = 0;
  for (const auto& [key, st] : o.state())
    for (const auto& [name, t] : st.tensors) n += t.numel();
  return n;
}

template <class Opt, class Options>
void expect_equals_ddp(const Options& options, int64_t state_per_element) {
  const int steps = 4;
  ZNet ref = make_net();
  DistributedDataParallel ref_ddp(ref);
  Opt ref_opt(ref_ddp->parameters(), options);
  const auto want = train(ref_ddp, ref_opt, steps, 100);

  ZNet net = make_net();
  DistributedDataParallel ddp(net);
  ZeroRedundancyOptimizer opt(ddp->parameters(), optimizer_class<Opt>(options));
  const auto got = train(ddp, opt, steps, 100);
  for (int s = 0; s < steps; ++s) EXPECT_EQ(got[size_t(s)], want[size_t(s)]) << "loss of step " << s;
  EXPECT_EQ(values(*net), values(*ref)) << "parameters after " << steps << " steps (rank " << rank() << ")";

  // This rank's state: its partition's parameters only; the partitions cover every parameter once.
  int64_t mine = 0, total = 0;
  const auto params = net->parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    total += params[i].numel();
    if (opt.owner(i) == rank()) mine += params[i].numel();
  }
  EXPECT_EQ(state_numel(opt.local_optimizer()), state_per_element * mine);
  EXPECT_EQ(state_numel(opt), 0);
  Tensor sum = full({1}, double(mine), kFloat64);
  dist::all_reduce(sum);
  EXPECT_EQ(sum.item<double>(), double(total));
  if (world() > 1) {
    EXPECT_LT(mine, total);
  }
}

TEST(ZeroRedundancyOptimizer, AdamWStepsEqualDdp) {
  expect_equals_ddp<optim::AdamW>(optim::AdamWOptions(0.01).weight_decay(0.1), 2);
}

TEST(ZeroRedundancyOptimizer, AdamAmsgradStepsEqualDdp) {
  expect_equals_ddp<optim::Adam>(optim::AdamOptions(0.01).amsgrad(true), 3);
}

TEST(ZeroRedundancyOptimizer, SgdMomentumStepsEqualDdp) {
  expect_equals_ddp<optim::SGD>(optim::SGDOptions(0.1).momentum(0.9).nesterov(true), 1);
}

TEST(ZeroRedundancyOptimizer, GreedyPartitionAsPyTorch) {
  // Sizes 40, 8, 64, 8, 24, 3 (fc1.weight, fc1.bias, fc2.weight, ...): largest first, each to the
  // rank with the fewest elements so far (the lowest on ties).
  ZNet net = make_net();
  ZeroRedundancyOptimizer opt(net->parameters(), optimizer_class<optim::SGD>(optim::SGDOptions(0.1)));
  const std::vector<int64_t> sizes{40, 8, 64, 8, 24, 3};
  std::vector<size_t> order{2, 0, 4, 1, 3, 5};
  std::vector<int64_t> load(size_t(world()), 0);
  for (size_t i : order) {
    const size_t r = size_t(std::min_element(load.begin(), load.end()) - load.begin());
    EXPECT_EQ(opt.owner(i), int(r)) << "parameter " << i;
    load[r] += sizes[i];
  }
}

TEST(ZeroRedundancyOptimizer, ConsolidatedStateDictIsThePlainOptimizersAndResumes) {
  const auto options = optim::AdamWOptions(0.01).weight_decay(0.1);
  // A plain run of 3 + 2 steps.
  ZNet ref = make_net();
  DistributedDataParallel ref_ddp(ref);
  optim::AdamW ref_opt(ref_ddp->parameters(), options);
  train(ref_ddp, ref_opt, 3, 200);
  Checkpoint ref_sd = ref_opt.state_dict();
  for (auto& [key, t] : ref_sd.tensors) t = t.clone();  // the optimizer's own tensors go on changing
  const auto ref_tail = train(ref_ddp, ref_opt, 2, 300);

  // ZeRO: 3 steps, consolidate onto the last rank.
  ZNet net = make_net();
  DistributedDataParallel ddp(net);
  ZeroRedundancyOptimizer opt(ddp->parameters(), optimizer_class<optim::AdamW>(options));
  train(ddp, opt, 3, 200);
  const int to = world() - 1;
  opt.consolidate_state_dict(to);
  if (rank() == to) {
    const Checkpoint sd = opt.state_dict();
    EXPECT_EQ(sd.metadata.at("optimizer"), "AdamW");
    EXPECT_EQ(sd.metadata.at("state"), ref_sd.metadata.at("state"));
    EXPECT_EQ(sd.metadata.at("param_groups"), ref_sd.metadata.at("param_groups"));
    ASSERT_EQ(sd.tensors.size(), ref_sd.tensors.size());
    for (const auto& [key, t] : ref_sd.tensors) {
      ASSERT_TRUE(sd.tensors.count(key)) << key;
      EXPECT_EQ(sd.tensors.at(key).contiguous().to_vector<double>(), t.contiguous().to_vector<double>()) << key;
    }
  } else {
    dist_test::expect_error_prefix([&] { (void)opt.state_dict(); }, "[state_dict] Optimizer state has not been");
  }

  // Every rank loads the plain state into a fresh ZeRO over a fresh copy of the parameters,
  // and the next 2 steps are the plain run's.
  ZNet net2 = make_net();
  {
    NoGradGuard g;
    const auto dst = net2->parameters(), mid = net->parameters();
    for (size_t i = 0; i < dst.size(); ++i) dst[i].detach().copy_(mid[i]);
  }
  DistributedDataParallel ddp2(net2);
  ZeroRedundancyOptimizer opt2(ddp2->parameters(), optimizer_class<optim::AdamW>(optim::AdamWOptions(0.5)));
  opt2.load_state_dict(ref_sd);
  EXPECT_EQ(opt2.param_groups()[0].options().get_lr(), 0.01);
  const auto tail = train(ddp2, opt2, 2, 300);
  EXPECT_EQ(tail, ref_tail);
  EXPECT_EQ(values(*net2), values(*ref));

  // A state of another kind is refused and changes nothing.
  optim::SGD sgd(make_net()->parameters(), optim::SGDOptions(0.1));
  dist_test::expect_error_prefix([&] { opt2.load_state_dict(sgd.state_dict()); }, "[load_state_dict]");
  EXPECT_EQ(opt2.param_groups()[0].options().get_lr(), 0.01);
}

TEST(ZeroRedundancyOptimizer, SchedulerLearningRateReachesTheLocalOptimizer) {
  ZNet ref = make_net();
  DistributedDataParallel ref_ddp(ref);
  optim::Adam ref_opt(ref_ddp->parameters(), optim::AdamOptions(0.05));
  optim::StepLR ref_sched(ref_opt, 1, 0.5);
  ZNet net = make_net();
  DistributedDataParallel ddp(net);
  ZeroRedundancyOptimizer opt(ddp->parameters(), optimizer_class<optim::Adam>(optim::AdamOptions(0.05)));
  optim::StepLR sched(opt, 1, 0.5);
  for (int s = 0; s < 3; ++s) {
    train(ref_ddp, ref_opt, 1, 400 + uint64_t(s));
    ref_sched.step();
    train(ddp, opt, 1, 400 + uint64_t(s));
    sched.step();
  }
  EXPECT_EQ(values(*net), values(*ref));
  EXPECT_EQ(opt.param_groups()[0].options().get_lr(), 0.05 / 8);
}

TEST(ZeroRedundancyOptimizer, AddParamGroupPartitionsItAfterTheOthers) {
  ZNet ref = make_net();
  DistributedDataParallel ref_ddp(ref);
  ZNet net = make_net();
  DistributedDataParallel ddp(net);
  auto split = [](ZNet& n) {
    return std::pair<std::vector<Tensor>, std::vector<Tensor>>{
        {n->fc1->weight, n->fc1->bias, n->fc2->weight, n->fc2->bias}, {n->fc3->weight, n->fc3->bias}};
  };
  auto [ra, rb] = split(ref);
  auto [za, zb] = split(net);
  optim::SGD ref_opt(ra, optim::SGDOptions(0.1).momentum(0.5));
  ref_opt.add_param_group(optim::OptimizerParamGroup(rb, optim::SGDOptions(0.02).clone()));
  ZeroRedundancyOptimizer opt(za, optimizer_class<optim::SGD>(optim::SGDOptions(0.1).momentum(0.5)));
  // Through the base class, as a program holding any optimizer calls it: the wrapped
  // optimizer gets its share of the group too.
  optim::Optimizer& base = opt;
  base.add_param_group(optim::OptimizerParamGroup(zb, optim::SGDOptions(0.02).clone()));
  ASSERT_EQ(opt.param_groups().size(), 2u);
  ASSERT_EQ(opt.local_optimizer().param_groups().size(), 2u);
  EXPECT_EQ(train(ddp, opt, 3, 500), train(ref_ddp, ref_opt, 3, 500));
  EXPECT_EQ(values(*net), values(*ref));
  // A parameter already in a group is refused; nothing changes.
  dist_test::expect_error_prefix([&] { opt.add_param_group(optim::OptimizerParamGroup({net->fc3->bias})); },
                                 "[add_param_group]");
  EXPECT_EQ(opt.param_groups().size(), 2u);
}

TEST(ZeroRedundancyOptimizer, Errors) {
  dist_test::expect_error_prefix(
      [] { ZeroRedundancyOptimizer(std::vector<Tensor>{}, optimizer_class<optim::SGD>(optim::SGDOptions(0.1))); },
      "[ZeroRedundancyOptimizer] ZeroRedundancyOptimizer did not receive any parameters");
  Tensor a = zeros({3}, kFloat64).requires_grad_(), b = zeros({3}, kFloat32).requires_grad_();
  dist_test::expect_error_prefix(
      [&] { ZeroRedundancyOptimizer({a, b}, optimizer_class<optim::SGD>(optim::SGDOptions(0.1))); },
      "[ZeroRedundancyOptimizer] ZeroRedundancyOptimizer only supports using the same dense type");
  dist_test::expect_error_prefix(
      [&] { ZeroRedundancyOptimizer({a}, optimizer_class<optim::SGD>(optim::SGDOptions(-1))); }, "[SGD]");
  ZeroRedundancyOptimizer opt({a}, optimizer_class<optim::SGD>(optim::SGDOptions(0.1)));
  dist_test::expect_error_prefix([&] { opt.consolidate_state_dict(world()); }, "[consolidate_state_dict]");
  dist_test::expect_error_prefix([&] { opt.add_param_group(optim::OptimizerParamGroup({b})); },
                                 "[add_param_group] ZeroRedundancyOptimizer only supports");
  if (cuda::is_available() && dist::get_backend() != "nccl") {
    Tensor c = zeros({3}, TensorOptions(kFloat64).device(kCUDA)).requires_grad_();
    dist_test::expect_error_prefix(
        [&] { ZeroRedundancyOptimizer({c}, optimizer_class<optim::SGD>(optim::SGDOptions(0.1))); },
        "[ZeroRedundancyOptimizer] the parameters are on cuda");
  }
}

}  // namespace
}  // namespace wick
