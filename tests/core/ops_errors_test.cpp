// Misuse of the tensor ops: each error has the documented type and a message starting
// with "[op]", and an op that fails leaves its inputs unchanged. Also the finer semantics the
// table can't show: NaN propagation, first index among equal values, promotion with scalars,
// accuracy of long reductions.
#include <cmath>

#include "op_reference.h"

namespace wick::test {
namespace {

// Snapshot of a tensor's values and version, to show a failed op did not write.
struct Snapshot {
  explicit Snapshot(const Tensor& t) : t_(t), values_(t.to_vector<double>()), version_(t._version()) {}
  void expect_unchanged(const std::string& what) const {
    EXPECT_EQ(t_.to_vector<double>(), values_) << what << " changed its input";
    EXPECT_EQ(t_._version(), version_) << what << " bumped its input's version";
  }
  Tensor t_;
  std::vector<double> values_;
  uint32_t version_;
};

TEST(OpsErrors, ShapesAndBroadcasting) {
  auto a = ones({2, 3}), b = ones({4, 3});
  expect_error<ValueError>([&] { where(ones({2, 3}, kBool), a, b); }, "where", "where shapes");
  expect_error<ValueError>([&] { clamp(a, b, std::nullopt); }, "clamp", "clamp shapes");
  expect_error<ValueError>([&] { pow(a, b); }, "pow", "pow shapes");
  expect_error<ValueError>([&] { a < b; }, "lt", "lt shapes");
  expect_error<ValueError>([&] { mm(a, a); }, "mm", "mm inner dims");
  expect_error<ValueError>([&] { bmm(ones({2, 2, 3}), ones({3, 3, 4})); }, "bmm", "bmm batch");
  expect_error<ValueError>([&] { bmm(ones({2, 3}), ones({2, 3})); }, "bmm", "bmm rank");
  expect_error<ValueError>([&] { addmm(ones({4}), a, ones({3, 5})); }, "addmm", "addmm input");
  expect_error<ValueError>([&] { linear(a, ones({5, 4})); }, "linear", "linear in_features");
  expect_error<ValueError>([&] { matmul(ones({2, 3, 4}), ones({3, 4, 5})); }, "matmul", "matmul batch");
  expect_error<ValueError>([&] { cat({a, ones({2, 4})}, 0); }, "cat", "cat sizes");
  expect_error<ValueError>([&] { cat({a, ones({2})}, 0); }, "cat", "cat ranks");
  expect_error<ValueError>([&] { cat({ones({})}, 0); }, "cat", "cat 0-d");
  expect_error<ValueError>([&] { cat({}, 0); }, "cat", "cat empty list");
  expect_error<ValueError>([&] { stack({a, b}); }, "stack", "stack sizes");
  expect_error<ValueError>([&] { gather(a, 1, zeros({2}, kInt64)); }, "gather", "gather rank");
  expect_error<ValueError>([&] { gather(a, 1, zeros({3, 1}, kInt64)); }, "gather", "gather size");
  expect_error<IndexError>([&] { index_select(a, 0, zeros({2, 2}, kInt64)); }, "index_select", "2-D index");
  expect_error<ValueError>([&] { clamp(a); }, "clamp", "clamp without bounds");
  expect_error<ValueError>([&] { gelu(a, "fast"); }, "gelu", "gelu approximate");
}

TEST(OpsErrors, DimsOutOfRange) {
  auto a = ones({2, 3});
  expect_error<IndexError>([&] { max(a, 2); }, "max", "max dim");
  expect_error<IndexError>([&] { argmin(a, -3); }, "argmin", "argmin dim");
  expect_error<IndexError>([&] { var(a, {2}); }, "var", "var dim");
  expect_error<IndexError>([&] { norm(a, 2, {5}); }, "norm", "norm dim");
  expect_error<IndexError>([&] { softmax(a, 2); }, "softmax", "softmax dim");
  expect_error<IndexError>([&] { log_softmax(a, -3); }, "log_softmax", "log_softmax dim");
  expect_error<IndexError>([&] { index_select(a, 2, zeros({1}, kInt64)); }, "index_select",
                           "index_select dim");
  expect_error<IndexError>([&] { gather(a, 2, zeros({2, 3}, kInt64)); }, "gather", "gather dim");
  expect_error<IndexError>([&] { cat({a, a}, 2); }, "cat", "cat dim");
  expect_error<IndexError>([&] { stack({a, a}, 3); }, "stack", "stack dim");
  expect_error<ValueError>([&] { var(a, {1, 1}); }, "var", "repeated dim");
}

TEST(OpsErrors, DtypesNotSupported) {
  auto i = tensor({1, 2, 3});
  auto f = ones({3});
  expect_error<TypeError>([&] { where(f, f, f); }, "where", "float condition");
  expect_error<TypeError>([&] { masked_fill(f, i, 0); }, "masked_fill", "int mask");
  expect_error<TypeError>([&] { index_select(f, 0, f); }, "index_select", "float index");
  expect_error<TypeError>([&] { gather(f, 0, i.to(kInt32)); }, "gather", "int32 gather index");
  expect_error<TypeError>([&] { one_hot(i.to(kInt32)); }, "one_hot", "int32 one_hot");
  expect_error<TypeError>([&] { mm(ones({2, 2}), ones({2, 2}, kFloat64)); }, "mm", "mixed mm dtypes");
  expect_error<TypeError>(
      [&] {
        addmm(ones({2, 2}, kFloat64), ones({2, 2}), ones({2, 2}));
      },
      "addmm", "addmm input");
  expect_error<ValueError>(
      [&] {
        addmm(ones({2, 2}, kInt64), ones({2, 2}, kInt64), ones({2, 2}, kInt64), 0.5);
      },
      "addmm", "float beta with integers");
  expect_error<ValueError>([&] { pow(i, -1); }, "pow", "integer to a negative power");
  expect_error<ValueError>([&] { remainder(i, 0); }, "remainder", "integer remainder by zero");
  expect_error<ValueError>(
      [&] {
        remainder(i, tensor({1, 0, 1}));
      },
      "remainder", "integer remainder by a zero tensor");
  EXPECT_NO_THROW(remainder(f, 0));  // floats give nan
}

TEST(OpsErrors, IndicesOutOfBounds) {
  auto a = arange(6).view({2, 3}).to(kFloat32);
  expect_error<IndexError>([&] { index_select(a, 1, tensor({0, 3})); }, "index_select", "index 3 of 3");
  expect_error<IndexError>([&] { index_select(a, 0, tensor({-1})); }, "index_select", "negative index");
  expect_error<IndexError>([&] { gather(a, 1, tensor({{0, 5}})); }, "gather", "gather index 5");
  expect_error<IndexError>(
      [&] {
        index_select(ones({}), 0, tensor({0, 0}));
      },
      "index_select", "0-d, two indices");
  expect_error<ValueError>([&] { one_hot(tensor({0, -1})); }, "one_hot", "negative class");
  expect_error<ValueError>([&] { one_hot(tensor({0, 3}), 3); }, "one_hot", "class >= num_classes");
  expect_error<ValueError>([&] { one_hot(empty({0}, kInt64)); }, "one_hot", "empty without num_classes");
  expect_error<ValueError>([&] { max(empty({0})); }, "max", "max of nothing");
  expect_error<IndexError>([&] { min(empty({2, 0}), 1); }, "min", "min over an empty dim");
  expect_error<IndexError>([&] { norm(empty({0}), INFINITY); }, "norm", "inf norm of nothing");
}

TEST(OpsErrors, FailedInPlaceOpsLeaveInputsUnchanged) {
  auto i = tensor({4, 5, 6});
  auto f = tensor({1.5, -2.5, 3.5});
  {
    Snapshot s(i);
    expect_error<TypeError>([&] { i.exp_(); }, "exp_", "exp_ of int64");
    expect_error<TypeError>([&] { i.sqrt_(); }, "sqrt_", "sqrt_ of int64");
    expect_error<TypeError>([&] { i.clamp_(0.5, std::nullopt); }, "clamp_", "clamp_ to a float bound");
    expect_error<TypeError>([&] { i.pow_(0.5); }, "pow_", "pow_ to a float exponent");
    expect_error<ValueError>([&] { i.pow_(-2); }, "pow_", "pow_ to a negative power");
    // A zero divisor is found by the kernel, which names the op family.
    expect_error<ValueError>([&] { i.remainder_(tensor({1, 1, 0})); }, "remainder", "remainder_ by zero");
    expect_error<ValueError>([&] { i.remainder_(0); }, "remainder_", "remainder_ by scalar zero");
    expect_error<TypeError>([&] { i.masked_fill_(ones({3}), 1); }, "masked_fill_", "float mask");
    expect_error<ValueError>([&] { i.masked_fill_(ones({2, 3}, kBool), 1); }, "masked_fill_", "larger mask");
    expect_error<ValueError>([&] { i.masked_fill_(tensor({true}), ones({1})); }, "masked_fill_", "1-D value");
    s.expect_unchanged("failed in-place ops on int64");
  }
  {
    Snapshot s(f);
    expect_error<ValueError>([&] { f.clamp_(ones({2})); }, "clamp_", "clamp_ with a bad shape");
    expect_error<ValueError>([&] { f.pow_(ones({2, 3})); }, "pow_", "pow_ broadcasting self");
    expect_error<TypeError>([&] { tensor({true}).neg_(); }, "neg_", "neg_ of bool");
    expect_error<TypeError>([&] { tensor({true}).relu_(); }, "relu_", "relu_ of bool");
    s.expect_unchanged("failed in-place ops on float32");
  }
  // A failed out-of-place op leaves its inputs alone too.
  Snapshot s(f);
  expect_error<IndexError>([&] { index_select(f, 0, tensor({0, 7})); }, "index_select", "out of bounds");
  s.expect_unchanged("index_select");
}

TEST(OpsSemantics, NanPropagationAndTies) {
  auto x = tensor({1.0, double(NAN), 3.0, 3.0});
  EXPECT_TRUE(std::isnan(max(x).item<double>()));
  EXPECT_TRUE(std::isnan(min(x).item<double>()));
  EXPECT_EQ(argmax(x).item<int64_t>(), 1);
  EXPECT_EQ(argmin(x).item<int64_t>(), 1);
  EXPECT_TRUE(std::isnan(clamp(x, 0, 2).to_vector<double>()[1]));
  EXPECT_TRUE(std::isnan(relu(x).to_vector<double>()[1]));
  EXPECT_TRUE(std::isnan(norm(x, INFINITY).item<double>()));
  // The first of equal values wins, in a row long enough to be split among threads too.
  auto y = tensor({2.0, 5.0, 5.0, 1.0});
  EXPECT_EQ(std::get<1>(max(y, 0)).item<int64_t>(), 1);
  auto big = zeros({1 << 20});
  big.narrow(0, 700000, 10).fill_(1);
  big.narrow(0, 300000, 10).fill_(1);
  EXPECT_EQ(argmax(big).item<int64_t>(), 300000);
  EXPECT_EQ(argmin(-big).item<int64_t>(), 300000);
  // An all -inf row gives nan in softmax, as PyTorch does; a finite row never overflows.
  EXPECT_TRUE(std::isnan(softmax(full({3}, -INFINITY), 0).to_vector<double>()[0]));
  auto s = softmax(tensor({1000.0f, 1000.0f}), 0).to_vector<double>();
  EXPECT_EQ(s, (std::vector<double>{0.5, 0.5}));
  EXPECT_EQ(log_softmax(tensor({1000.0f, 0.0f}), 0).to_vector<double>()[1], -1000.0);
}

TEST(OpsSemantics, PromotionWithScalars) {
  auto i = tensor({1, 2, 3}).to(kInt32);
  EXPECT_EQ(pow(i, 2).dtype(), kInt32);
  EXPECT_EQ(pow(i, 2.0).dtype(), kFloat32);
  EXPECT_EQ(pow(2, i).dtype(), kInt32);
  EXPECT_EQ(pow(2.0, i).dtype(), kFloat32);
  EXPECT_EQ(clamp(i, 0, 2).dtype(), kInt32);
  EXPECT_EQ(clamp(i, 0.5, std::nullopt).dtype(), kFloat32);
  EXPECT_EQ(where(i > 1, i, 0).dtype(), kInt32);
  EXPECT_EQ(where(i > 1, i, 0.5).dtype(), kFloat32);
  EXPECT_EQ(where(i > 1, 1, 2.5).dtype(), kFloat32);
  EXPECT_EQ(masked_fill(i, i > 1, 2.7).to_vector<double>(), (std::vector<double>{1, 2, 2}));
  EXPECT_EQ((i < 2.5).to_vector<double>(), (std::vector<double>{1, 1, 0}));
  EXPECT_EQ(exp(i).dtype(), kFloat32);
  EXPECT_EQ(abs(i).dtype(), kInt32);
  EXPECT_EQ(remainder(tensor({-7, 7}), 3).to_vector<double>(), (std::vector<double>{2, 1}));
  EXPECT_EQ(remainder(tensor({-7.0, 7.0}), -3).to_vector<double>(), (std::vector<double>{-1, -2}));
  EXPECT_EQ(cat({i, ones({2}, kFloat64)}).dtype(), kFloat64);
  EXPECT_EQ(cat({empty({0}), ones({2, 2})}).sizes().vec(),
            (std::vector<int64_t>{2, 2}));  // legacy empty skipped
}

TEST(OpsSemantics, AccumulationOfLongReductions) {
  // float16/bfloat16 accumulate in float32: a long row of ones has norm and var a float16
  // running sum could never reach.
  EXPECT_EQ(norm(ones({1 << 15}, kFloat16), 1).item<double>(), 32768.0);
  EXPECT_EQ(norm(ones({1 << 16}, kBFloat16), 2).item<double>(), 256.0);
  EXPECT_EQ(var(ones({1 << 16}, kBFloat16)).item<double>(), 0.0);
  // float32 var/std accumulate in double: 1e4 + small noise keeps its variance.
  std::vector<float> v(size_t(1) << 20);
  std::mt19937 rng(5);
  double mean = 0;
  for (auto& x : v) mean += (x = 1e4f + std::uniform_real_distribution<float>(-1, 1)(rng));
  mean /= double(v.size());
  double want = 0;
  for (float x : v) want += (double(x) - mean) * (double(x) - mean);
  want /= double(v.size() - 1);
  auto t = from_blob(v.data(), {int64_t(v.size())}, kFloat32);
  EXPECT_NEAR(var(t).item<double>(), want, want * 1e-5);
  EXPECT_NEAR(t.view({1024, 1024}).var({0, 1}).item<double>(), want, want * 1e-5);
  EXPECT_NEAR(std(t.view({1024, 1024}).t(), {0, 1}, 0.0).item<double>(),
              std::sqrt(want * double(v.size() - 1) / double(v.size())), 1e-5);
}

TEST(OpsSemantics, MethodsAndOperatorsAgreeWithFunctions) {
  auto a = tensor({{1.0, -2.0}, {3.0, 0.5}});
  auto [vals, idx] = a.max(1, true);
  EXPECT_EQ(vals.sizes().vec(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(idx.to_vector<int64_t>(), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(a.softmax(1).to_vector<double>(), softmax(a, 1).to_vector<double>());
  EXPECT_EQ((a >= 1).to_vector<double>(), a.ge(1).to_vector<double>());
  EXPECT_EQ((1 < a).to_vector<double>(), (a > 1).to_vector<double>());
  EXPECT_EQ(a.where(a > 0, zeros({2, 2})).to_vector<double>(), (std::vector<double>{1, 0, 3, 0.5}));
  EXPECT_EQ(a.mm(a).to_vector<double>(), matmul(a, a).to_vector<double>());
  EXPECT_EQ(a.norm().item<double>(), norm(a).item<double>());
  auto b = a.clone();
  b.clamp_min_(0).clamp_max_(2);
  EXPECT_EQ(b.to_vector<double>(), (std::vector<double>{1, 0, 2, 0.5}));
}

}  // namespace
}  // namespace wick::test
