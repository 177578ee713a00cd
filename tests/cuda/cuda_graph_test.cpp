// wick::cuda::Graph: capture, replay, the private pool, the calls refused while capturing, and
// a whole training step captured and replayed against the same steps run eagerly.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cuda_test_util.h"
#include "wick/cuda.h"
#include "wick/nn/functional.h"
#include "wick/optim.h"
#include "wick/wick.h"

namespace wick {
namespace {

namespace F = nn::functional;

Device gpu() { return Device(kCUDA, 0); }

std::vector<float> values(const Tensor& t) { return t.cpu().contiguous().to_vector<float>(); }

// f() must throw E whose message starts with prefix.
template <class E, class Fn>
void expect_error(Fn f, const std::string& prefix) {
  try {
    f();
    ADD_FAILURE() << "no error; expected " << prefix;
  } catch (const E& e) {
    EXPECT_EQ(std::string(e.what()).rfind(prefix, 0), 0u) << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

TEST(CudaGraph, ReplayRunsTheCapturedOpsOnNewInputs) {
  WICK_REQUIRE_CUDA();
  WICK_REQUIRE_CACHING();
  manual_seed(1);
  Tensor x = randn({1000}).to(gpu());
  Tensor w = randn({1000}).to(gpu());
  Tensor y;
  cuda::Graph g;
  {
    cuda::GraphCapture capture(g);
    EXPECT_TRUE(cuda::is_current_stream_capturing());
    y = (x * w + 1.0).relu().sum() + x.exp().mean();
  }
  EXPECT_FALSE(cuda::is_current_stream_capturing());
  const void* where = y.data_ptr();
  for (int k = 0; k < 3; ++k) {
    Tensor fresh = randn({1000});
    x.copy_(fresh.to(gpu()));
    g.replay();
    // the reference on the CPU in float64
    Tensor xc = fresh.to(kFloat64), wc = w.cpu().to(kFloat64);
    const double want = ((xc * wc + 1.0).relu().sum() + xc.exp().mean()).item<double>();
    EXPECT_NEAR(values(y)[0], want, 1e-4 * std::abs(want)) << "replay " << k;
    EXPECT_EQ(y.data_ptr(), where);  // the output stays where the graph writes it
  }
}

TEST(CudaGraph, RawGraphAfterACaptureOnly) {
  WICK_REQUIRE_CUDA();
  WICK_REQUIRE_CACHING();
  cuda::Graph g;
  EXPECT_THROW(g.raw_cuda_graph(), ValueError);
  Tensor x = ones({16}, Device("cuda")), y;
  {
    cuda::GraphCapture capture(g);
    y = (x + 1.0).relu();
  }
  EXPECT_NE(g.raw_cuda_graph(), nullptr);
  g.replay();
  for (auto v : values(y)) EXPECT_EQ(v, 2.0);
  g.reset();
  try {
    g.raw_cuda_graph();
    FAIL() << "no ValueError after reset";
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[Graph.raw_cuda_graph] ", 0), 0u) << e.what();
  }
}

TEST(CudaGraph, ReplayOnTheDefaultStreamAndTwice) {
  WICK_REQUIRE_CUDA();
  WICK_REQUIRE_CACHING();
  Tensor x = full({256}, 2.0f).to(gpu());
  Tensor y;
  cuda::Graph g;
  {
    cuda::GraphCapture capture(g);
    x.mul_(3.0);  // in place: every replay multiplies again
    y = x + 0.0;
  }
  EXPECT_EQ(values(x)[0], 2.0f);  // captured, not run
  g.replay();
  g.replay();
  EXPECT_EQ(values(x)[0], 18.0f);
  EXPECT_EQ(values(y)[255], 18.0f);
}

TEST(CudaGraph, PrivatePoolIsReturnedAfterReset) {
  WICK_REQUIRE_CUDA();
  WICK_REQUIRE_CACHING();
  Tensor x = randn({1 << 20}).to(gpu());
  cuda::synchronize();
  cuda::empty_cache();
  const int64_t reserved = cuda::memory_reserved();
  const int64_t allocated = cuda::memory_allocated();
  {
    cuda::Graph g;
    Tensor y;
    const void* temp = nullptr;
    {
      cuda::GraphCapture capture(g);
      Tensor t = x * 2.0;  // a temporary freed inside the capture
      temp = t.data_ptr();
      y = t + x;
    }
    EXPECT_GT(cuda::memory_reserved(), reserved);
    g.replay();
    EXPECT_EQ(values(y)[7], 3.0f * values(x)[7]);
    // the pool is private: an eager allocation after the capture does not take its free blocks
    Tensor eager = empty({1 << 20}, TensorOptions().device(gpu()));
    EXPECT_NE(eager.data_ptr(), temp);
    y = Tensor();
    g.reset();
  }
  cuda::synchronize();
  cuda::empty_cache();
  EXPECT_EQ(cuda::memory_allocated(), allocated);
  EXPECT_EQ(cuda::memory_reserved(), reserved);
}

TEST(CudaGraph, TwoGraphsShareAPool) {
  WICK_REQUIRE_CUDA();
  WICK_REQUIRE_CACHING();
  const cuda::MempoolId pool = cuda::graph_pool_handle();
  EXPECT_NE(pool, cuda::graph_pool_handle());
  Tensor x = full({64}, 1.0f).to(gpu());
  Tensor a, b;
  cuda::Graph g1, g2;
  {
    cuda::GraphCapture capture(g1, pool);
    a = x + 1.0;
  }
  {
    cuda::GraphCapture capture(g2, pool);
    b = a * 10.0;
  }
  EXPECT_EQ(g1.pool(), pool);
  EXPECT_EQ(g2.pool(), pool);
  x.fill_(4.0);
  g1.replay();
  g2.replay();
  EXPECT_EQ(values(b)[3], 50.0f);
}

TEST(CudaGraph, CallsThatCannotBeCapturedRaiseAndTheCaptureGoesOn) {
  WICK_REQUIRE_CUDA();
  WICK_REQUIRE_CACHING();
  Tensor x = full({16}, 3.0f).to(gpu());
  Tensor host = zeros({16});
  Tensor y;
  cuda::Graph g;
  {
    cuda::GraphCapture capture(g);
    y = x * 2.0;
    expect_error<DeviceError>([&] { (void)y.sum().item<float>(); }, "[item] ");
    expect_error<DeviceError>([&] { (void)y.cpu(); }, "[copy_] ");
    expect_error<DeviceError>([&] { x.copy_(host); }, "[copy_] ");
    expect_error<DeviceError>([&] { cuda::synchronize(); }, "[synchronize] ");
    expect_error<DeviceError>([&] { cuda::current_stream().synchronize(); }, "[Stream::synchronize] ");
    expect_error<DeviceError>([&] { cuda::empty_cache(); }, "[empty_cache] ");
    expect_error<DeviceError>([&] { (void)randn({4}, TensorOptions().device(gpu())); }, "[randn] ");
    y = y + 1.0;
  }
  g.replay();
  EXPECT_EQ(values(y)[0], 7.0f);
}

// Index checks cannot make the host wait inside a capture: they are captured as a kernel of
// their own, so an embedding's forward and backward, gather, scatter_add and index_add replay
// with new indices and give the eager results.
TEST(CudaGraph, IndexedOpsAreCapturedAndFollowNewIndices) {
  WICK_REQUIRE_CUDA();
  WICK_REQUIRE_CACHING();
  manual_seed(3);
  nn::Embedding emb(50, 8);
  emb->to(gpu());
  Tensor idx = randint(0, 50, {4, 6}).to(gpu());
  Tensor src = randn({20, 5}).to(gpu());
  Tensor rows = randint(0, 20, {7}).to(gpu());
  Tensor cols = randint(0, 5, {20, 3}).to(gpu());
  auto run = [&] {
    Tensor out = emb(idx);
    (out * out).sum().backward();
    Tensor picked = src.index_select(0, rows);
    Tensor gathered = src.gather(1, cols);
    Tensor added = zeros({20, 5}, TensorOptions().device(gpu())).index_add(0, rows, picked);
    Tensor scattered = zeros({20, 5}, TensorOptions().device(gpu())).scatter_add(1, cols, gathered);
    return std::vector<Tensor>{out.detach(), picked, gathered, added, scattered};
  };
  // warm-up on a side stream, then the capture
  cuda::Stream side = cuda::Stream::create(0);
  cuda::current_stream().synchronize();
  {
    cuda::StreamGuard guard(side);
    emb->zero_grad();
    (void)run();
  }
  cuda::current_stream().wait_stream(side);
  emb->zero_grad();
  std::vector<Tensor> captured;
  cuda::Graph g;
  {
    cuda::GraphCapture capture(g);
    captured = run();
  }
  for (int k = 0; k < 2; ++k) {
    idx.copy_(randint(0, 50, {4, 6}).to(gpu()));
    rows.copy_(randint(0, 20, {7}).to(gpu()));
    cols.copy_(randint(0, 5, {20, 3}).to(gpu()));
    emb->weight.grad().zero_();
    g.replay();
    const Tensor graph_grad = emb->weight.grad().clone();
    emb->weight.grad().zero_();
    const std::vector<Tensor> eager = run();
    for (size_t i = 0; i < eager.size(); ++i)
      EXPECT_TRUE(allclose(captured[i].cpu(), eager[i].cpu(), 1e-5, 1e-5)) << "output " << i << ", replay " << k;
    EXPECT_TRUE(allclose(graph_grad.cpu(), emb->weight.grad().cpu(), 1e-5, 1e-5)) << "replay " << k;
  }
}

TEST(CudaGraph, AdamStepRefusesToBeCaptured) {
  WICK_REQUIRE_CUDA();
  WICK_REQUIRE_CACHING();
  Tensor p = randn({8}).to(gpu()).requires_grad_();
  optim::Adam opt({p}, optim::AdamOptions(0.1));
  (p * p).sum().backward();
  opt.step();  // warm-up: the state exists
  const std::vector<float> before = values(p);
  cuda::Graph g;
  {
    cuda::GraphCapture capture(g);
    expect_error<DeviceError>([&] { opt.step(); }, "[Adam.step] ");
  }
  g.replay();
  EXPECT_EQ(values(p), before);  // the failed call changed nothing
}

TEST(CudaGraph, MisuseRaises) {
  WICK_REQUIRE_CUDA();
  WICK_REQUIRE_CACHING();
  cuda::Graph g;
  expect_error<ValueError>([&] { g.replay(); }, "[Graph.replay] ");
  expect_error<ValueError>([&] { g.capture_end(); }, "[Graph.capture_end] ");
  {
    cuda::StreamGuard guard(cuda::default_stream());
    expect_error<DeviceError>([&] { g.capture_begin(); },
                              "[Graph.capture_begin] CUDA graphs must be captured on a non-default stream.");
  }
  Tensor x = ones({4}).to(gpu());
  {
    cuda::GraphCapture capture(g);
    x.add_(1.0);
    expect_error<ValueError>([&] { g.capture_begin(); }, "[Graph.capture_begin] ");
  }
  expect_error<ValueError>([&] { g.capture_begin(); }, "[Graph.capture_begin] ");
  g.replay();
  EXPECT_EQ(values(x)[0], 2.0f);
  g.reset();
  expect_error<ValueError>([&] { g.replay(); }, "[Graph.replay] ");
}

TEST(CudaGraph, AnExceptionInsideTheScopeThrowsTheCaptureAway) {
  WICK_REQUIRE_CUDA();
  WICK_REQUIRE_CACHING();
  cuda::Graph g;
  const cuda::Stream before = cuda::current_stream();
  try {
    cuda::GraphCapture capture(g);
    throw ValueError("[test] leaving");
  } catch (const ValueError&) {}
  EXPECT_EQ(cuda::current_stream(), before);
  EXPECT_FALSE(cuda::is_current_stream_capturing());
  expect_error<ValueError>([&] { g.replay(); }, "[Graph.replay] ");
  // the device is usable, and the graph can capture again
  Tensor x = ones({4}).to(gpu());
  {
    cuda::GraphCapture capture(g);
    x.mul_(5.0);
  }
  g.replay();
  EXPECT_EQ(values(x)[1], 5.0f);
}

// The small-MLP training step (784-128-10, batch 64, SGD with momentum, cross-entropy), 100
// steps eagerly and 100 steps whose last 97 are replays of one captured step, from the same
// start on the same batches: the same losses.
TEST(CudaGraph, CapturedTrainingStepGivesTheEagerLosses) {
  WICK_REQUIRE_CUDA();
  WICK_REQUIRE_CACHING();
  const int steps = 100, warmup = 3;
  manual_seed(3);
  std::vector<Tensor> xs, ys;
  for (int k = 0; k < steps; ++k) {  // four batches, cycled: a loss that can go down
    xs.push_back(k < 4 ? randn({64, 784}).to(gpu()) : xs[k % 4]);
    ys.push_back(k < 4 ? randint(0, 10, {64}).to(gpu()) : ys[k % 4]);
  }
  auto make = [] {
    manual_seed(7);
    nn::Sequential net(nn::Linear(784, 128), nn::ReLU(), nn::Linear(128, 10));
    net->to(Device(kCUDA, 0));
    return net;
  };
  nn::Sequential eager = make();
  optim::SGD eager_opt(eager->parameters(), optim::SGDOptions(0.05).momentum(0.9));
  std::vector<float> eager_losses;
  for (int k = 0; k < steps; ++k) {
    eager_opt.zero_grad();
    Tensor loss = F::cross_entropy(eager(xs[k]), ys[k]);
    loss.backward();
    eager_opt.step();
    eager_losses.push_back(loss.item<float>());
  }

  nn::Sequential net = make();
  optim::SGD opt(net->parameters(), optim::SGDOptions(0.05).momentum(0.9));
  std::vector<float> losses;
  Tensor static_x = empty({64, 784}, TensorOptions().device(gpu()));
  Tensor static_y = empty({64}, TensorOptions(kInt64).device(gpu()));
  Tensor static_loss;
  auto step = [&] {
    opt.zero_grad();
    static_loss = F::cross_entropy(net(static_x), static_y);
    static_loss.backward();
    opt.step();
  };
  // warm-up steps on a side stream (the optimizer's state is made here), then the capture
  const cuda::Stream side = cuda::Stream::create();
  side.wait_stream(cuda::current_stream());
  {
    cuda::StreamGuard guard(side);
    for (int k = 0; k < warmup; ++k) {
      static_x.copy_(xs[k]);
      static_y.copy_(ys[k]);
      step();
      losses.push_back(static_loss.item<float>());
    }
  }
  cuda::current_stream().wait_stream(side);
  cuda::Graph g;
  {
    cuda::GraphCapture capture(g);
    step();
  }
  for (int k = warmup; k < steps; ++k) {
    static_x.copy_(xs[k]);
    static_y.copy_(ys[k]);
    g.replay();
    losses.push_back(static_loss.item<float>());
  }
  ASSERT_EQ(losses.size(), eager_losses.size());
  for (int k = 0; k < steps; ++k)
    EXPECT_NEAR(losses[k], eager_losses[k], 1e-5f * std::max(1.0f, std::abs(eager_losses[k])))
        << "step " << k;
  EXPECT_LT(losses.back(), losses.front());  // it trains
  auto p = net->parameters(), q = eager->parameters();
  for (size_t i = 0; i < p.size(); ++i) {
    const auto a = values(p[i]), b = values(q[i]);
    for (size_t j = 0; j < a.size(); j += 97) EXPECT_NEAR(a[j], b[j], 1e-5f) << "parameter " << i;
  }
}

}  // namespace
}  // namespace wick
