// The autograd engine: graph recording, node names, backward with and without a gradient,
// accumulation, retain_graph, retain_grad, detach, grad mode, autograd::grad and the version
// counter check. Gradient values are checked against hand-derived formulas evaluated on the
// inputs (float64), or against central differences.
#include <pthread.h>

#include <cmath>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "gradcheck.h"
#include "../nn/nn_test_util.h"
#include "wick/wick.h"

using namespace wick;
using wick::testing::rnd;

namespace {

void expect_values(const Tensor& got, const std::vector<double>& want, double tol = 1e-12) {
  auto g = got.cpu().to_vector<double>();
  ASSERT_EQ(g.size(), want.size());
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], want[i], tol) << "element " << i;
}

using wick::testing::error_of;

TEST(Autograd, LeafAndNonLeaf) {
  auto x = rnd({3});
  EXPECT_TRUE(x.requires_grad());
  EXPECT_TRUE(x.is_leaf());
  EXPECT_EQ(x.grad_fn(), nullptr);
  auto y = x * 2;
  EXPECT_TRUE(y.requires_grad());
  EXPECT_FALSE(y.is_leaf());
  ASSERT_NE(y.grad_fn(), nullptr);
  EXPECT_EQ(y.grad_fn()->name(), "MulBackward1");
  auto z = zeros({3}, kFloat64);
  EXPECT_FALSE(z.requires_grad());
  EXPECT_FALSE((z + z).requires_grad());
  EXPECT_EQ((z + z).grad_fn(), nullptr);
}

TEST(Autograd, NodeNames) {
  auto a = rnd({2, 3}), b = rnd({2, 3}), m = rnd({3, 4});
  EXPECT_EQ((a + b).grad_fn()->name(), "AddBackward0");
  EXPECT_EQ((a + 1).grad_fn()->name(), "AddBackward1");
  EXPECT_EQ((a - b).grad_fn()->name(), "SubBackward0");
  EXPECT_EQ((a * b).grad_fn()->name(), "MulBackward0");
  EXPECT_EQ((a / b).grad_fn()->name(), "DivBackward0");
  EXPECT_EQ(a.sum().grad_fn()->name(), "SumBackward0");
  EXPECT_EQ(a.sum({1}).grad_fn()->name(), "SumBackward1");
  EXPECT_EQ(a.mean().grad_fn()->name(), "MeanBackward0");
  EXPECT_EQ(mm(a, m).grad_fn()->name(), "MmBackward0");
  EXPECT_EQ(matmul(a, m).grad_fn()->name(), "MmBackward0");
  EXPECT_EQ(a.view({6}).grad_fn()->name(), "ViewBackward0");
  EXPECT_EQ(a.t().grad_fn()->name(), "TBackward0");
  EXPECT_EQ(a.transpose(0, 1).grad_fn()->name(), "TransposeBackward0");
  EXPECT_EQ(a.permute({1, 0}).grad_fn()->name(), "PermuteBackward0");
  EXPECT_EQ(a.unsqueeze(0).grad_fn()->name(), "UnsqueezeBackward0");
  EXPECT_EQ(a.select(0, 1).grad_fn()->name(), "SelectBackward0");
  EXPECT_EQ(a.slice(1, 0, 2).grad_fn()->name(), "SliceBackward0");
  EXPECT_EQ(a.expand({4, 2, 3}).grad_fn()->name(), "ExpandBackward0");
  EXPECT_EQ(a.clone().grad_fn()->name(), "CloneBackward0");
  EXPECT_EQ(a.to(kFloat32).grad_fn()->name(), "ToCopyBackward0");
  // Edges lead to the inputs' nodes: a leaf's is its AccumulateGrad.
  auto y = (a * b).sum();
  auto mulnode = y.grad_fn()->next_edges()[0].function;
  ASSERT_NE(mulnode, nullptr);
  EXPECT_EQ(mulnode->name(), "MulBackward0");
  EXPECT_EQ(mulnode->next_edges()[0].function->name(), "AccumulateGrad");
}

TEST(Autograd, SimpleGradients) {
  // y = sum(a * b + a / 2): dy/da = b + 1/2, dy/db = a.
  auto a = rnd({4}), b = rnd({4});
  ((a * b + a / 2).sum()).backward();
  auto av = a.to_vector<double>(), bv = b.to_vector<double>();
  std::vector<double> ga, gb;
  for (size_t i = 0; i < 4; ++i) {
    ga.push_back(bv[i] + 0.5);
    gb.push_back(av[i]);
  }
  expect_values(a.grad(), ga);
  expect_values(b.grad(), gb);
}

// t() records TBackward0 as PyTorch does, and is a view for every rank it takes (of a 1-D or
// 0-d tensor: a new tensor of the same layout, not the input itself).
TEST(Autograd, TransposeOfUpToTwoDims) {
  auto a = rnd({2, 3}), w = rnd({3, 2});
  auto y = a.t();
  EXPECT_EQ(y.grad_fn()->name(), "TBackward0");
  (y * w).sum().backward();
  expect_values(a.grad(), w.t().contiguous().to_vector<double>());
  for (auto sizes : {std::vector<int64_t>{3}, std::vector<int64_t>{}}) {
    auto v = rnd(sizes);
    auto vt = v.t();
    EXPECT_EQ(vt.grad_fn()->name(), "TBackward0");
    EXPECT_FALSE(vt.is_same(v));
    EXPECT_EQ(vt.data_ptr(), v.data_ptr());
    EXPECT_TRUE(vt.sizes() == v.sizes());
    (vt * 3.0).sum().backward();
    expect_values(v.grad(), std::vector<double>(size_t(v.numel()), 3.0));
  }
  NoGradGuard no_grad;
  auto plain = ones({4});
  auto pt = plain.t();
  EXPECT_FALSE(pt.is_same(plain));
  pt.fill_(2.0);  // a view: the write reaches the input
  expect_values(plain, std::vector<double>(4, 2.0));
  EXPECT_THROW(ones({2, 2, 2}).t(), ValueError);
}

TEST(Autograd, AccumulatesAcrossCalls) {
  auto x = rnd({3});
  auto y = (x * x).sum();
  y.backward({}, /*retain_graph=*/true);
  y.backward();
  auto xv = x.to_vector<double>();
  expect_values(x.grad(), {4 * xv[0], 4 * xv[1], 4 * xv[2]});
  // A second backward without retain_graph fails: the saved tensors are gone.
  EXPECT_NE(error_of([&] { y.backward(); }).find("backward through the graph a second time"),
            std::string::npos);
}

TEST(Autograd, LeafGradIsNotSharedWithOtherLeaves) {
  // a + b hands the same gradient to both leaves; zeroing one must not zero the other.
  auto a = rnd({3}), b = rnd({3});
  (a + b).sum().backward();
  a.mutable_grad().zero_();
  expect_values(b.grad(), {1, 1, 1});
}

TEST(Autograd, NonScalarNeedsGradient) {
  auto x = rnd({2, 2});
  auto y = x * 3;
  EXPECT_NE(error_of([&] { y.backward(); }).find("grad can be implicitly created only for scalar outputs"),
            std::string::npos);
  auto g = tensor({{1., 2.}, {3., 4.}}, kFloat64);
  y.backward(g);
  expect_values(x.grad(), {3, 6, 9, 12});
}

TEST(Autograd, BackwardOfTensorWithoutGradThrows) {
  auto x = zeros({1}, kFloat64);
  EXPECT_NE(error_of([&] { x.sum().backward(); }).find("does not require grad"), std::string::npos);
}

TEST(Autograd, NoGradGuard) {
  auto x = rnd({2});
  {
    NoGradGuard g;
    EXPECT_FALSE(GradMode::is_enabled());
    auto y = x * 2;
    EXPECT_FALSE(y.requires_grad());
    EXPECT_EQ(y.grad_fn(), nullptr);
    {
      AutoGradMode on(true);
      EXPECT_TRUE((x * 2).requires_grad());
    }
  }
  EXPECT_TRUE(GradMode::is_enabled());
  EXPECT_TRUE((x * 2).requires_grad());
}

TEST(Autograd, Detach) {
  auto x = rnd({3});
  auto y = x * 2;
  auto d = y.detach();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_EQ(d.grad_fn(), nullptr);
  EXPECT_EQ(d.data_ptr(), y.data_ptr());
  // The graph through d is cut: x gets only the gradient of the path through y.
  auto z = (y + d * 5).sum();
  z.backward();
  expect_values(x.grad(), {2, 2, 2});
}

TEST(Autograd, RetainGrad) {
  auto x = rnd({3});
  auto y = x * 2;
  y.retain_grad();
  auto z = y * y;
  EXPECT_TRUE(y.retains_grad());
  EXPECT_FALSE(z.retains_grad());
  z.sum().backward();
  auto yv = y.detach().to_vector<double>();
  expect_values(y.grad(), {2 * yv[0], 2 * yv[1], 2 * yv[2]});
  EXPECT_FALSE(z.grad().defined());
}

TEST(Autograd, RequiresGradChecks) {
  auto i = zeros({2}, kInt64);
  EXPECT_NE(error_of([&] { i.requires_grad_(); }).find("only Tensors of floating point dtype"),
            std::string::npos);
  auto x = rnd({2});
  auto y = x * 2;
  EXPECT_NE(error_of([&] { y.requires_grad_(false); }).find("leaf variables"), std::string::npos);
  EXPECT_TRUE(ones({2}, TensorOptions(kFloat32).requires_grad(true)).requires_grad());
}

TEST(Autograd, InplaceOnLeafThrows) {
  auto x = rnd({2});
  EXPECT_NE(
      error_of([&] { x.add_(1); }).find("a leaf Variable that requires grad is being used in an in-place"),
      std::string::npos);
  NoGradGuard g;
  x.add_(1);  // allowed without grad mode (optimizer updates)
}

TEST(Autograd, VersionCounterRejectsModifiedSavedTensor) {
  auto a = rnd({2, 3});
  auto b = ones({2, 3}, kFloat64);
  auto y = (a * b).sum();
  b.add_(1);
  std::string e = error_of([&] { y.backward(); });
  EXPECT_EQ(e.rfind("[backward] one of the variables needed for gradient computation has been modified by an "
                    "inplace operation: [DoubleTensor [2, 3]]",
                    0),
            0u)
      << e;
  EXPECT_NE(e.find("is at version 1; expected version 0 instead"), std::string::npos) << e;
  // Unmodified saved tensors pass.
  auto y2 = (a * b).sum();
  y2.backward();
  expect_values(a.grad(), std::vector<double>(6, 2.0));
}

TEST(Autograd, InplaceOnNonLeafIsRecorded) {
  auto x = rnd({3});
  auto y = x * 1;
  y.mul_(x);  // y = x * x
  EXPECT_EQ(y.grad_fn()->name(), "MulBackward0");
  y.add_(x, 3);  // y = x^2 + 3x
  y.sum().backward();
  auto xv = x.to_vector<double>();
  expect_values(x.grad(), {2 * xv[0] + 3, 2 * xv[1] + 3, 2 * xv[2] + 3});
}

TEST(Autograd, InplaceIntoTensorWithoutGrad) {
  auto x = rnd({3});
  auto buf = zeros({3}, kFloat64);
  buf.add_(x * 2);
  EXPECT_TRUE(buf.requires_grad());
  EXPECT_FALSE(buf.is_leaf());
  buf.sum().backward();
  expect_values(x.grad(), {2, 2, 2});
}

TEST(Autograd, BroadcastAndDtypeOfGradients) {
  auto a = rnd({2, 3});
  auto b = randn({3}, TensorOptions(kFloat32)).requires_grad_();
  auto y = (a * b).sum();  // float64 result
  y.backward();
  EXPECT_EQ(b.grad().dtype(), kFloat32);
  EXPECT_EQ(b.grad().sizes(), b.sizes());
  auto av = a.to_vector<double>();
  std::vector<double> want{av[0] + av[3], av[1] + av[4], av[2] + av[5]};
  expect_values(b.grad(), want, 1e-5);
}

TEST(Autograd, SharedSubgraphRunsOnceWithSummedGradient) {
  // y used by two branches: dz/dx = d(y*y + 3y)/dx with y = 2x.
  auto x = rnd({2});
  auto y = x * 2;
  auto z = (y * y + y * 3).sum();
  z.backward();
  auto xv = x.to_vector<double>();
  expect_values(x.grad(), {8 * xv[0] + 6, 8 * xv[1] + 6}, 1e-12);
}

TEST(Autograd, GradFunction) {
  auto x = rnd({3}), w = rnd({3}), unused = rnd({1});
  auto y = (x * w).sum();
  auto g = autograd::grad({y}, {x, w}, {}, /*retain_graph=*/true);
  expect_values(g[0], w.to_vector<double>());
  expect_values(g[1], x.to_vector<double>());
  EXPECT_FALSE(x.grad().defined());  // grad() does not accumulate
  EXPECT_NE(error_of([&] { autograd::grad({y}, {unused}, {}, true); }).find("not have been used"),
            std::string::npos);
  auto r = autograd::grad({y}, {unused}, {}, true, /*create_graph=*/false, /*allow_unused=*/true);
  EXPECT_FALSE(r[0].defined());
  // Gradient of a non-leaf input.
  auto h = x * 2;
  auto s = (h * h).sum();
  auto gh = autograd::grad({s}, {h});
  auto hv = h.detach().to_vector<double>();
  expect_values(gh[0], {2 * hv[0], 2 * hv[1], 2 * hv[2]});
}

TEST(Autograd, SetGrad) {
  auto x = rnd({2});
  x.set_grad(ones({2}, kFloat64));
  (x * 3).sum().backward();
  expect_values(x.grad(), {4, 4});
  EXPECT_NE(error_of([&] { x.set_grad(ones({3}, kFloat64)); }).find("different size"), std::string::npos);
}

TEST(Autograd, MultipleRoots) {
  auto x = rnd({2});
  auto a = (x * 2).sum(), b = (x * x).sum();
  autograd::backward({a, b});
  auto xv = x.to_vector<double>();
  expect_values(x.grad(), {2 + 2 * xv[0], 2 + 2 * xv[1]});
}

TEST(Autograd, NestedBackwardThroughNodesTheOuterPassHasYetToRun) {
  // A hook on h runs a backward pass of its own through y's node and the accumulators of x and
  // w while the outer pass has still to run them (h's accumulator is the latest node, so it
  // runs first). Each pass keeps its own count of what each node is waiting for.
  auto x = rnd({2}), w = rnd({2}), h = rnd({2});
  auto y = x * w;
  auto outer = (y * y).sum() + (h * 1).sum();
  auto inner = (y * 3).sum();
  int nested = 0;
  autograd::register_post_accumulate_grad_hook(h, [&](const Tensor&) {
    ++nested;
    inner.backward({}, /*retain_graph=*/true);
  });
  outer.backward();
  EXPECT_EQ(nested, 1);
  auto xv = x.to_vector<double>(), wv = w.to_vector<double>();
  std::vector<double> want_x, want_w;
  for (size_t i = 0; i < 2; ++i) {
    const double yi = xv[i] * wv[i];
    want_x.push_back((2 * yi + 3) * wv[i]);
    want_w.push_back((2 * yi + 3) * xv[i]);
  }
  expect_values(x.grad(), want_x);
  expect_values(w.grad(), want_w);
  expect_values(h.grad(), {1, 1});
}

TEST(Autograd, GradOfTheSameInputTwiceAndOfAnUnreachedOne) {
  auto x = rnd({2}), u = rnd({2});
  auto y = (x * x).sum();
  auto g = autograd::grad({y}, {x, u, x}, {}, /*retain_graph=*/false, /*create_graph=*/false, /*allow_unused=*/true);
  auto xv = x.to_vector<double>();
  expect_values(g[0], {2 * xv[0], 2 * xv[1]});
  EXPECT_FALSE(g[1].defined());
  expect_values(g[2], {2 * xv[0], 2 * xv[1]});
}

TEST(Autograd, LargeGraphThenSmallOne) {
  // About 40000 nodes (a balanced sum of x * k, k = 1..n), then a small pass on the same thread.
  constexpr int n = 20000;
  auto x = rnd({2});
  std::vector<Tensor> terms;
  for (int k = 1; k <= n; ++k) terms.push_back(x * double(k));
  while (terms.size() > 1) {
    std::vector<Tensor> next;
    for (size_t i = 0; i + 1 < terms.size(); i += 2) next.push_back(terms[i] + terms[i + 1]);
    if (terms.size() % 2) next.push_back(terms.back());
    terms = std::move(next);
  }
  terms[0].sum().backward();
  const double want = double(n) * (n + 1) / 2;
  expect_values(x.grad(), {want, want});
  auto z = rnd({2});
  (z * z).sum().backward();
  auto zv = z.to_vector<double>();
  expect_values(z.grad(), {2 * zv[0], 2 * zv[1]});
}

// Dropping the last tensor of a long chain frees its nodes in a loop: on a thread with a 256
// KiB stack (a few thousand nested destructors at most), chains of 200,000 ops with and without
// saved tensors go away, and so does a chain after a backward pass that retained it.
TEST(Autograd, LongChainIsFreedWithoutDeepRecursion) {
  const int64_t n = 200000;
  auto drop_on_small_stack = [](Tensor t) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    pthread_t th;
    auto run = [](void* p) -> void* {
      delete static_cast<Tensor*>(p);
      return nullptr;
    };
    auto* boxed = new Tensor(std::move(t));
    ASSERT_EQ(pthread_create(&th, &attr, run, boxed), 0);
    pthread_join(th, nullptr);
    pthread_attr_destroy(&attr);
  };
  Tensor x = full({2}, 1.5).requires_grad_();
  Tensor y = x;
  for (int64_t i = 0; i < n; ++i) y = y * 1.0;
  EXPECT_EQ(y.grad_fn()->name(), "MulBackward1");
  drop_on_small_stack(std::move(y));
  Tensor z = x;
  for (int64_t i = 0; i < n; ++i) z = (z * z).sqrt();  // every node saves a tensor
  drop_on_small_stack(std::move(z));
  Tensor w = x;
  for (int64_t i = 0; i < n; ++i) w = w + 0.0;
  w.sum().backward({}, true);
  EXPECT_EQ(x.grad().to_vector<float>(), std::vector<float>({1.0f, 1.0f}));
  drop_on_small_stack(std::move(w));
  EXPECT_FALSE(x.grad_fn());
}

TEST(Autograd, ConcurrentBackwardOnSeparateGraphs) {
  // Two threads, each with its own leaves, run many backward passes at once.
  constexpr int threads = 2, steps = 200;
  std::vector<Tensor> xs, ws;
  for (int t = 0; t < threads; ++t) {
    xs.push_back(rnd({3}));
    ws.push_back(rnd({3}));
  }
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (int s = 0; s < steps; ++s) ((xs[t] * ws[t]).exp() + xs[t]).sum().backward();
    });
  }
  for (auto& th : pool) th.join();
  for (int t = 0; t < threads; ++t) {
    auto xv = xs[t].to_vector<double>(), wv = ws[t].to_vector<double>();
    std::vector<double> want_x, want_w;
    for (size_t i = 0; i < 3; ++i) {
      const double e = std::exp(xv[i] * wv[i]);
      want_x.push_back(steps * (wv[i] * e + 1));
      want_w.push_back(steps * xv[i] * e);
    }
    expect_values(xs[t].grad(), want_x, 1e-9);
    expect_values(ws[t].grad(), want_w, 1e-9);
  }
}

TEST(Autograd, ConcurrentGradThroughASharedSubgraph) {
  // Two threads differentiate, at once and many times, graphs that share y = w * w (kept with
  // retain_graph) and the accumulator of the leaf w.
  constexpr int threads = 2, steps = 200;
  auto w = rnd({3});
  auto y = w * w;
  std::vector<Tensor> cs;
  for (int t = 0; t < threads; ++t) cs.push_back(rnd({3}));
  std::vector<std::vector<Tensor>> last(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      AutoGradMode on(true);
      for (int s = 0; s < steps; ++s) {
        auto loss = (y * cs[t]).sum();
        auto g = autograd::grad({loss}, {w, cs[t]}, {}, /*retain_graph=*/true);
        if (s == 0 || s == steps - 1) last[t].insert(last[t].end(), g.begin(), g.end());
      }
    });
  }
  for (auto& th : pool) th.join();
  auto wv = w.to_vector<double>();
  for (int t = 0; t < threads; ++t) {
    auto cv = cs[t].to_vector<double>();
    ASSERT_EQ(last[t].size(), 4u);
    for (int r = 0; r < 2; ++r) {
      expect_values(last[t][2 * r], {2 * wv[0] * cv[0], 2 * wv[1] * cv[1], 2 * wv[2] * cv[2]});
      expect_values(last[t][2 * r + 1], {wv[0] * wv[0], wv[1] * wv[1], wv[2] * wv[2]});
    }
  }
  EXPECT_FALSE(w.grad().defined());
}

}  // namespace
