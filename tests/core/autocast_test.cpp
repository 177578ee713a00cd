// Autocast: the result dtype of every op of tests/fixtures/autocast_dtypes.txt that wick has, as
// PyTorch 2.11 printed it (tests/gen/autocast_dtypes.py builds the inputs the same way), and
// the guard's state, nesting, cache and gradients.
#include "core/autocast.h"

#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "wick/wick.h"

namespace wick {
namespace {

namespace F = nn::functional;

#define REQUIRE_CUDA() \
  if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device"

// |a - b| <= atol + rtol |b| everywhere (both float64 on the CPU).
bool close(const Tensor& a, const Tensor& b, double rtol, double atol) {
  Tensor x = a.to(kFloat64).cpu(), y = b.to(kFloat64).cpu();
  return ((x - y).abs() - (y.abs() * rtol + atol)).max().item<double>() <= 0;
}

using Op = std::function<Tensor(const std::vector<Tensor>&)>;

// The cases of the generator that wick has, with the same calls.
const std::map<std::string, Op>& ops() {
  static const std::map<std::string, Op> m = {
      {"mm", [](auto& a) { return mm(a[0], a[1]); }},
      {"matmul", [](auto& a) { return matmul(a[0], a[1]); }},
      {"bmm", [](auto& a) { return bmm(a[0], a[1]); }},
      {"addmm", [](auto& a) { return addmm(a[0], a[1], a[2]); }},
      {"linear", [](auto& a) { return F::linear(a[0], a[1], a[2]); }},
      {"conv2d", [](auto& a) { return F::conv2d(a[0], a[1], a[2]); }},
      {"softmax", [](auto& a) { return softmax(a[0], 1); }},
      {"log_softmax", [](auto& a) { return log_softmax(a[0], 1); }},
      {"exp", [](auto& a) { return exp(a[0]); }},
      {"log", [](auto& a) { return log(a[0]); }},
      {"pow", [](auto& a) { return pow(a[0], 2.0); }},
      {"sum", [](auto& a) { return sum(a[0]); }},
      {"norm", [](auto& a) { return norm(a[0]); }},
      {"rsqrt", [](auto& a) { return rsqrt(a[0]); }},
      {"mse_loss", [](auto& a) { return F::mse_loss(a[0], a[1]); }},
      {"l1_loss", [](auto& a) { return F::l1_loss(a[0], a[1]); }},
      {"binary_cross_entropy_with_logits",
       [](auto& a) { return F::binary_cross_entropy_with_logits(a[0], a[1]); }},
      {"cross_entropy", [](auto& a) { return F::cross_entropy(a[0], a[1]); }},
      {"nll_loss", [](auto& a) { return F::nll_loss(a[0], a[1]); }},
      {"layer_norm", [](auto& a) { return F::layer_norm(a[0], {6}, a[1], a[2]); }},
      {"cat",
       [](auto& a) {
         return cat({a[0], a[1]});
       }},
      {"stack",
       [](auto& a) {
         return stack({a[0], a[1]});
       }},
      {"where", [](auto& a) { return where(a[0] > 1.0, a[0], a[1]); }},
      {"add", [](auto& a) { return a[0] + a[1]; }},
      {"mul", [](auto& a) { return a[0] * a[1]; }},
      {"relu", [](auto& a) { return relu(a[0]); }},
      {"sigmoid", [](auto& a) { return sigmoid(a[0]); }},
      {"tanh", [](auto& a) { return tanh(a[0]); }},
      {"max_pool2d", [](auto& a) { return F::max_pool2d(a[0], 2); }},
      {"batch_norm", [](auto& a) { return F::batch_norm(a[0], a[1], a[2], a[3], a[4], /*training=*/true); }},
      {"mean", [](auto& a) { return mean(a[0]); }},
      {"dropout", [](auto& a) { return F::dropout(a[0], 0.0); }},
  };
  return m;
}

// The generator's SHAPES ("target": int64 class indices in [0, 5) of shape [4]).
const std::map<std::string, std::vector<std::vector<int64_t>>>& shapes() {
  static const std::map<std::string, std::vector<std::vector<int64_t>>> m = {
      {"conv2d", {{2, 3, 8, 8}, {4, 3, 3, 3}, {4}}},
      {"linear", {{5, 4}, {3, 4}, {3}}},
      {"addmm", {{4, 4}, {4, 4}, {4, 4}}},
      {"bmm", {{2, 4, 4}, {2, 4, 4}}},
      {"cross_entropy", {{4, 5}, {}}},
      {"nll_loss", {{4, 5}, {}}},
      {"layer_norm", {{4, 6}, {6}, {6}}},
      {"batch_norm", {{4, 3}, {3}, {3}, {3}, {3}}},
      {"stack", {{4}, {4}}},
      {"cat", {{4}, {4}}},
      {"max_pool2d", {{1, 2, 4, 4}}},
  };
  return m;
}

Dtype parse_dtype(const std::string& s) {
  static const std::map<std::string, Dtype> m = {{"f32", kFloat32}, {"f16", kFloat16}, {"bf16", kBFloat16},
                                                 {"f64", kFloat64}, {"i64", kInt64},   {"bool", kBool}};
  auto it = m.find(s);
  if (it == m.end()) throw std::runtime_error("unknown dtype " + s);
  return it->second;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string part; std::getline(ss, part, sep);) out.push_back(part);
  return out;
}

struct Counts {
  int checked = 0;
  std::map<std::string, int> missing;  // ops of the file wick lacks
};

// Checks every line of the file for device (cpu or cuda); returns what it counted.
Counts check_file(const std::string& device) {
  std::ifstream in(std::string(WICK_TEST_FIXTURES_DIR) + "/autocast_dtypes.txt");
  EXPECT_TRUE(in.good()) << "tests/fixtures/autocast_dtypes.txt not found";
  Counts c;
  const Device dev(device);
  manual_seed(0);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::stringstream ss(line);
    std::string d, adt, op, inputs, arrow, expected;
    ss >> d >> adt >> op >> inputs >> arrow >> expected;
    if (d != device) continue;
    auto it = ops().find(op);
    if (it == ops().end()) {
      ++c.missing[op];
      continue;
    }
    std::vector<Tensor> args;
    const auto names = split(inputs, ',');
    auto sh = shapes().find(op);
    for (size_t k = 0; k < names.size(); ++k) {
      std::vector<int64_t> shape = sh != shapes().end() ? sh->second[k] : std::vector<int64_t>{4, 4};
      const Dtype dt = parse_dtype(names[k]);
      if (dt == kInt64) args.push_back(shape.empty() ? randint(0, 5, {4}, dev) : randint(0, 3, shape, dev));
      else args.push_back(rand(shape, dev).to(dt) + 0.5);
    }
    SCOPED_TRACE(line);
    AutocastGuard guard(dev.type(), parse_dtype(adt));
    if (expected == "error") {
      EXPECT_THROW(it->second(args), Error);
    } else {
      Tensor out = it->second(args);
      EXPECT_EQ(out.dtype(), parse_dtype(expected));
    }
    ++c.checked;
  }
  return c;
}

TEST(AutocastDtypes, CpuMatchesPyTorch) {
  Counts c = check_file("cpu");
  // 366 cpu lines; all but those of the ops wick lacks are checked.
  EXPECT_GT(c.checked, 260);
  std::string missing;
  for (auto& [op, n] : c.missing) missing += op + " ";
  RecordProperty("missing_ops", missing);
  RecordProperty("checked", c.checked);
}

TEST(AutocastDtypes, CudaMatchesPyTorch) {
  REQUIRE_CUDA();
  Counts c = check_file("cuda");
  EXPECT_GT(c.checked, 260);
}

TEST(Autocast, StateNestingAndDisable) {
  EXPECT_FALSE(is_autocast_enabled(kCPU));
  EXPECT_FALSE(is_autocast_enabled(kCUDA));
  EXPECT_EQ(get_autocast_dtype(kCUDA), kFloat16);
  EXPECT_EQ(get_autocast_dtype(kCPU), kBFloat16);
  Tensor a = rand({3, 4}), b = rand({4, 2});
  {
    AutocastGuard g(kCPU, kBFloat16);
    EXPECT_TRUE(is_autocast_enabled(kCPU));
    EXPECT_FALSE(is_autocast_enabled(kCUDA));
    EXPECT_EQ(mm(a, b).dtype(), kBFloat16);
    {
      AutocastGuard inner(kCPU, kFloat16);
      EXPECT_EQ(get_autocast_dtype(kCPU), kFloat16);
      EXPECT_EQ(mm(a, b).dtype(), kFloat16);
      {
        AutocastGuard off(kCPU, std::nullopt, /*enabled=*/false);
        EXPECT_FALSE(is_autocast_enabled(kCPU));
        EXPECT_EQ(mm(a, b).dtype(), kFloat32);
      }
      EXPECT_TRUE(is_autocast_enabled(kCPU));
      EXPECT_EQ(mm(a, b).dtype(), kFloat16);
    }
    EXPECT_EQ(get_autocast_dtype(kCPU), kBFloat16);
    EXPECT_EQ(mm(a, b).dtype(), kBFloat16);
    // CUDA's state is its own: a CUDA guard inside leaves CPU autocast as it was.
    {
      AutocastGuard cuda_off(kCUDA, kBFloat16, false);
      EXPECT_EQ(mm(a, b).dtype(), kBFloat16);
    }
  }
  EXPECT_FALSE(is_autocast_enabled(kCPU));
  EXPECT_EQ(get_autocast_dtype(kCPU), kBFloat16);
  EXPECT_EQ(mm(a, b).dtype(), kFloat32);
  EXPECT_THROW({ AutocastGuard bad(kCPU, kFloat64); }, ValueError);
  EXPECT_FALSE(is_autocast_enabled(kCPU));
}

TEST(Autocast, ValuesAreTheLowPrecisionOpsValues) {
  Tensor a = randn({5, 7}), b = randn({7, 3});
  Tensor got;
  {
    AutocastGuard g(kCPU, kBFloat16);
    got = mm(a, b);
  }
  // The reference: the bf16-rounded inputs multiplied in float64, rounded to bf16.
  Tensor ref = mm(a.to(kBFloat16).to(kFloat64), b.to(kBFloat16).to(kFloat64)).to(kBFloat16);
  ASSERT_EQ(got.dtype(), kBFloat16);
  EXPECT_TRUE(close(got.to(kFloat64), ref.to(kFloat64), 1e-2, 1e-2));
}

TEST(Autocast, GradientsReachFloat32Parameters) {
  manual_seed(1);
  Tensor w = randn({3, 4}).requires_grad_(), bias = randn({3}).requires_grad_();
  Tensor x = randn({5, 4});
  Tensor y, loss;
  {
    AutocastGuard g(kCPU, kBFloat16);
    y = F::linear(x, w, bias);
    loss = y.to(kFloat32).pow(2).sum();
  }
  EXPECT_EQ(y.dtype(), kBFloat16);
  loss.backward();
  ASSERT_TRUE(w.grad().defined());
  EXPECT_EQ(w.grad().dtype(), kFloat32);
  EXPECT_EQ(bias.grad().dtype(), kFloat32);
  // The casts are recorded: the addmm node's inputs come from ToCopyBackward0 nodes.
  auto node = y.grad_fn();
  ASSERT_TRUE(node);
  EXPECT_EQ(node->name(), "AddmmBackward0");
  bool saw_copy = false;
  for (auto& e : node->next_edges())
    if (e.function && e.function->name() == "ToCopyBackward0") saw_copy = true;
  EXPECT_TRUE(saw_copy);
  // d/dw sum(y^2) = 2 y^T x with y from bf16 operands: compare in float64.
  Tensor yd = y.to(kFloat64).detach();
  Tensor gw = (2 * yd).t().matmul(x.to(kBFloat16).to(kFloat64));
  EXPECT_TRUE(close(w.grad().to(kFloat64), gw, 5e-2, 5e-2));
  EXPECT_TRUE(close(bias.grad().to(kFloat64), (2 * yd).sum({0}), 5e-2, 5e-2));
}

// backward() called inside a region runs its formulas in the forward's types (no casts).
TEST(Autocast, BackwardInsideTheRegion) {
  manual_seed(2);
  Tensor w = randn({4, 4}).requires_grad_();
  Tensor x = randn({3, 4});
  AutocastGuard g(kCPU, kBFloat16);
  Tensor y = mm(x, w);
  ASSERT_EQ(y.dtype(), kBFloat16);
  y.sum().backward();
  EXPECT_EQ(w.grad().dtype(), kFloat32);
  // d sum(x w) / dw = x^T 1, from the bf16 x.
  Tensor ref = x.to(kBFloat16).to(kFloat64).t().matmul(ones({3, 4}, kFloat64));
  EXPECT_TRUE(close(w.grad(), ref, 1e-2, 1e-2));
}

// An op on no list keeps its pieces uncast: batch_norm's rsqrt and mean run in x's type, and
// the values are those of the op outside any region.
TEST(Autocast, CompositeOpsOnNoListAreUnchanged) {
  manual_seed(3);
  Tensor x = randn({6, 3}).to(kBFloat16), rm = zeros({3}), rv = ones({3}), w = rand({3}), b = rand({3});
  Tensor plain = F::batch_norm(x, rm.clone(), rv.clone(), w, b, true);
  Tensor cast;
  {
    AutocastGuard g(kCPU, kBFloat16);
    cast = F::batch_norm(x, rm.clone(), rv.clone(), w, b, true);
  }
  EXPECT_EQ(cast.dtype(), kBFloat16);
  EXPECT_TRUE(close(cast, plain, 0, 0));
}

TEST(Autocast, WeightCastsAreCachedPerOutermostRegion) {
  Tensor w = randn({3, 4}).requires_grad_();
  Tensor x = randn({4, 3});
  namespace ac = detail::autocast;
  {
    AutocastGuard g(kCPU, kBFloat16);
    Tensor c1 = ac::cast(w, kBFloat16, kCPU);
    {
      AutocastGuard inner(kCPU, kBFloat16);
      Tensor c2 = ac::cast(w, kBFloat16, kCPU);
      EXPECT_TRUE(c1.is_same(c2));
    }
    // The inner guard's end does not clear the cache.
    EXPECT_TRUE(c1.is_same(ac::cast(w, kBFloat16, kCPU)));
    // Not cached: tensors that do not require grad, non-leaves.
    EXPECT_FALSE(ac::cast(x, kBFloat16, kCPU).is_same(ac::cast(x, kBFloat16, kCPU)));
    Tensor nonleaf = w * 2;
    EXPECT_FALSE(ac::cast(nonleaf, kBFloat16, kCPU).is_same(ac::cast(nonleaf, kBFloat16, kCPU)));
    // float64 and integers are never cast.
    Tensor d = randn({2}, kFloat64);
    EXPECT_TRUE(ac::cast(d, kBFloat16, kCPU).is_same(d));
  }
  Tensor c3, c4;
  {
    AutocastGuard g(kCPU, kBFloat16);
    c3 = ac::cast(w, kBFloat16, kCPU);
  }
  {
    AutocastGuard g(kCPU, kBFloat16);
    c4 = ac::cast(w, kBFloat16, kCPU);
  }
  EXPECT_FALSE(c3.is_same(c4));  // a new region casts again (the weight may have changed)
}

TEST(Autocast, ThreadLocal) {
  AutocastGuard g(kCPU, kBFloat16);
  Tensor a = rand({2, 2});
  Dtype other = kBool;
  std::thread t([&] { other = mm(a, a).dtype(); });
  t.join();
  EXPECT_EQ(other, kFloat32);
  EXPECT_EQ(mm(a, a).dtype(), kBFloat16);
}

TEST(Autocast, CudaMatmulAndLossTypes) {
  REQUIRE_CUDA();
  Tensor w = randn({8, 16}, Device("cuda")).requires_grad_();
  Tensor x = randn({4, 16}, Device("cuda"));
  Tensor target = randint(0, 8, {4}, Device("cuda"));
  Tensor logits, loss;
  {
    AutocastGuard g(kCUDA, kBFloat16);
    logits = F::linear(x, w);
    loss = F::cross_entropy(logits, target);
  }
  EXPECT_EQ(logits.dtype(), kBFloat16);
  EXPECT_EQ(loss.dtype(), kFloat32);
  loss.backward();
  EXPECT_EQ(w.grad().dtype(), kFloat32);
  Tensor ref =
      F::cross_entropy(F::linear(x.to(kBFloat16), w.detach().to(kBFloat16)).to(kFloat64).cpu(), target.cpu());
  EXPECT_NEAR(loss.item<double>(), ref.item<double>(), 1e-2);
}

}  // namespace
}  // namespace wick
