// Post-accumulate-grad hooks on leaves and the engine's final callbacks (queue_callback): when
// they run, what they see, their order, removal and errors. Values are hand-derived (float64).
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../nn/nn_test_util.h"
#include "wick/wick.h"

using namespace wick;
using wick::testing::error_of;

namespace {

Tensor leaf(std::initializer_list<double> v) { return tensor(v, kFloat64).requires_grad_(); }

TEST(PostAccumulateGradHook, SeesTheAccumulatedGradient) {
  auto w = leaf({1, 2, 3});
  std::vector<std::vector<double>> seen;
  std::vector<bool> grad_mode;
  auto h = autograd::register_post_accumulate_grad_hook(w, [&](const Tensor& t) {
    EXPECT_TRUE(t.is_same(w));
    seen.push_back(t.grad().to_vector<double>());
    grad_mode.push_back(GradMode::is_enabled());
  });
  // d/dw sum(w * w * 2) = 4 w; the second backward accumulates on top of the first.
  (w * w * 2).sum().backward();
  (w * 3).sum().backward();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], (std::vector<double>{4, 8, 12}));
  EXPECT_EQ(seen[1], (std::vector<double>{7, 11, 15}));
  EXPECT_EQ(grad_mode, (std::vector<bool>{false, false}));
}

TEST(PostAccumulateGradHook, OncePerBackwardForALeafUsedTwice) {
  auto w = leaf({1, 2});
  int calls = 0;
  std::vector<double> seen;
  autograd::register_post_accumulate_grad_hook(w, [&](const Tensor& t) {
    ++calls;
    seen = t.grad().to_vector<double>();
  });
  (w * 2 + w * w).sum().backward();  // 2 + 2w
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(seen, (std::vector<double>{4, 6}));
}

TEST(PostAccumulateGradHook, RegistrationOrderAndRemoval) {
  auto w = leaf({1});
  std::string order;
  auto a = autograd::register_post_accumulate_grad_hook(w, [&](const Tensor&) { order += "a"; });
  auto b = autograd::register_post_accumulate_grad_hook(w, [&](const Tensor&) { order += "b"; });
  auto c = autograd::register_post_accumulate_grad_hook(w, [&](const Tensor&) { order += "c"; });
  (w * 1).sum().backward();
  EXPECT_EQ(order, "abc");
  b.remove();
  b.remove();  // again: nothing
  order.clear();
  (w * 1).sum().backward();
  EXPECT_EQ(order, "ac");
  autograd::HookHandle copy = a;
  copy.remove();
  a.remove();
  order.clear();
  (w * 1).sum().backward();
  EXPECT_EQ(order, "c");
  // A hook that removes itself runs this time, not the next.
  autograd::HookHandle self;
  self = autograd::register_post_accumulate_grad_hook(w, [&](const Tensor&) {
    order += "s";
    self.remove();
  });
  order.clear();
  (w * 1).sum().backward();
  (w * 1).sum().backward();
  EXPECT_EQ(order, "csc");
  EXPECT_NEAR(w.grad().item<double>(), 5.0, 0);  // five backward passes of d w / d w = 1
}

TEST(PostAccumulateGradHook, CanReplaceTheGradient) {
  // What DistributedDataParallel does: the gradient moves into a view of a larger buffer.
  auto w = leaf({1, 2, 3});
  auto flat = zeros({5}, kFloat64);
  auto view = flat.narrow(0, 1, 3);
  autograd::register_post_accumulate_grad_hook(w, [&](const Tensor& t) {
    if (t.grad().is_same(view)) return;
    view.copy_(t.grad());
    t.set_grad(view);
  });
  (w * w).sum().backward();  // 2w
  EXPECT_TRUE(w.grad().is_same(view));
  EXPECT_EQ(flat.to_vector<double>(), (std::vector<double>{0, 2, 4, 6, 0}));
  (w * 10).sum().backward();  // accumulates in place into the view
  EXPECT_EQ(flat.to_vector<double>(), (std::vector<double>{0, 12, 14, 16, 0}));
}

TEST(PostAccumulateGradHook, NotRunByAutogradGrad) {
  auto w = leaf({1, 2});
  int calls = 0;
  autograd::register_post_accumulate_grad_hook(w, [&](const Tensor&) { ++calls; });
  auto g = autograd::grad({(w * w).sum()}, {w});
  EXPECT_EQ(g[0].to_vector<double>(), (std::vector<double>{2, 4}));
  EXPECT_EQ(calls, 0);
  EXPECT_FALSE(w.grad().defined());
}

TEST(PostAccumulateGradHook, Errors) {
  auto plain = tensor({1.0, 2.0}, kFloat64);
  EXPECT_EQ(error_of([&] { autograd::register_post_accumulate_grad_hook(plain, [](const Tensor&) {}); }),
            "[register_post_accumulate_grad_hook] cannot register a hook on a tensor that doesn't require "
            "gradient");
  auto w = leaf({1, 2});
  auto y = w * 2;
  EXPECT_EQ(error_of([&] { autograd::register_post_accumulate_grad_hook(y, [](const Tensor&) {}); }),
            "[register_post_accumulate_grad_hook] post accumulate grad hooks cannot be registered on "
            "non-leaf tensors");
  // An exception from a hook leaves backward(), after the accumulation.
  autograd::register_post_accumulate_grad_hook(w, [](const Tensor&) { throw ValueError("[hook] boom"); });
  EXPECT_EQ(error_of([&] { (w * 3).sum().backward(); }), "[hook] boom");
  EXPECT_EQ(w.grad().to_vector<double>(), (std::vector<double>{3, 3}));
}

TEST(QueueCallback, RunsAfterEveryNode) {
  auto a = leaf({1, 2}), b = leaf({3});
  std::string log;
  std::vector<double> a_grad_seen, b_grad_seen;
  autograd::register_post_accumulate_grad_hook(a, [&](const Tensor&) {
    log += "a";
    if (log.find('q') == std::string::npos) {
      log += "q";
      autograd::queue_callback([&] {
        log += "1";
        // Every gradient of the pass is there by now.
        a_grad_seen = a.grad().to_vector<double>();
        b_grad_seen = b.grad().to_vector<double>();
        EXPECT_FALSE(GradMode::is_enabled());
        autograd::queue_callback([&] { log += "3"; });  // runs after the ones already queued
      });
      autograd::queue_callback([&] { log += "2"; });
    }
  });
  autograd::register_post_accumulate_grad_hook(b, [&](const Tensor&) { log += "b"; });
  // loss = sum(a) * b: d/da = b, d/db = sum(a).
  (a.sum() * b.sum()).backward();
  EXPECT_EQ(log.size(), 6u);
  EXPECT_EQ(log.substr(log.size() - 3), "123");
  EXPECT_NE(log.find('b'), std::string::npos);
  EXPECT_EQ(a_grad_seen, (std::vector<double>{3, 3}));
  EXPECT_EQ(b_grad_seen, (std::vector<double>{3}));
  // Callbacks belong to one pass: the next runs none of them.
  log.clear();
  b.mutable_grad() = Tensor();
  (b * 1).sum().backward();
  EXPECT_EQ(log, "b");
}

TEST(QueueCallback, OnlyDuringBackward) {
  EXPECT_EQ(error_of([] { autograd::queue_callback([] {}); }),
            "[queue_callback] Final callbacks can only be installed during backward pass.");
  // Still not after a pass has ended.
  auto w = leaf({1});
  int runs = 0;
  autograd::register_post_accumulate_grad_hook(
      w, [&](const Tensor&) { autograd::queue_callback([&] { ++runs; }); });
  (w * 2).sum().backward();
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(error_of([] { autograd::queue_callback([] {}); }),
            "[queue_callback] Final callbacks can only be installed during backward pass.");
}

TEST(QueueCallback, ExceptionLeavesBackward) {
  auto w = leaf({1, 2});
  bool later_ran = false;
  auto h = autograd::register_post_accumulate_grad_hook(w, [&](const Tensor&) {
    autograd::queue_callback([] { throw DistributedError("[callback] failed"); });
    autograd::queue_callback([&] { later_ran = true; });
  });
  try {
    (w * 2).sum().backward();
    FAIL() << "no exception";
  } catch (const DistributedError& e) {
    EXPECT_EQ(std::string(e.what()), "[callback] failed");
  }
  EXPECT_FALSE(later_ran);
  EXPECT_EQ(w.grad().to_vector<double>(), (std::vector<double>{2, 2}));
  // The engine is usable afterwards, and outside a pass queue_callback fails again.
  h.remove();
  (w * 1).sum().backward();
  EXPECT_EQ(w.grad().to_vector<double>(), (std::vector<double>{3, 3}));
  EXPECT_NE(error_of([] { autograd::queue_callback([] {}); }), "");
}

TEST(QueueCallback, NestedBackwardHasItsOwnCallbacks) {
  auto w = leaf({2});
  auto v = leaf({5});
  std::string log;
  autograd::register_post_accumulate_grad_hook(w, [&](const Tensor&) {
    autograd::queue_callback([&] { log += "outer"; });
    // A backward pass inside a hook: its callback runs at its own end.
    autograd::register_post_accumulate_grad_hook(
        v, [&](const Tensor&) { autograd::queue_callback([&] { log += "inner,"; }); });
    AutoGradMode on(true);
    (v * 1).sum().backward();
  });
  (w * 1).sum().backward();
  EXPECT_EQ(log, "inner,outer");
}

}  // namespace
