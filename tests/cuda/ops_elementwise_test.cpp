// CUDA elementwise math, comparisons, where, gather and softmax at sizes and alignments the
// table test does not reach: a million elements plus a tail (the vector path and its scalar
// end), unaligned operands (the strided path), rows for each softmax kernel (short, cached in
// registers, longer than the cache, unaligned), and the errors that must be raised before
// anything is written. References: the same op on float64 copies on the CPU.
#include "ops_test_util.h"

using namespace wick;
using namespace wick::test;

namespace {

double tol(Dtype t) {
  switch (t) {
    case kFloat16: return 2e-3;
    case kBFloat16: return 1.6e-2;
    case kFloat32: return 2e-6;
    case kFloat64: return 1e-13;
    default: return 0;
  }
}

}  // namespace

TEST(CudaOpsElementwise, UnaryMathLarge) {
  WICK_REQUIRE_CUDA();
  std::mt19937 rng(31);
  const int64_t n = (int64_t(1) << 20) + 3;
  using Op = Tensor (*)(const Tensor&);
  const std::pair<const char*, Op> ops[] = {
      {"neg", [](const Tensor& x) { return neg(x); }},      {"abs", [](const Tensor& x) { return abs(x); }},
      {"exp", [](const Tensor& x) { return exp(x); }},      {"log", [](const Tensor& x) { return log(abs(x) + 0.5); }},
      {"sqrt", [](const Tensor& x) { return sqrt(abs(x)); }}, {"rsqrt", [](const Tensor& x) { return rsqrt(abs(x) + 0.5); }},
      {"sin", [](const Tensor& x) { return sin(x); }},      {"cos", [](const Tensor& x) { return cos(x); }},
      {"tanh", [](const Tensor& x) { return tanh(x); }},    {"sigmoid", [](const Tensor& x) { return sigmoid(x); }},
      {"relu", [](const Tensor& x) { return relu(x); }},    {"gelu", [](const Tensor& x) { return gelu(x); }},
      {"gelu tanh", [](const Tensor& x) { return gelu(x, "tanh"); }},
      {"silu", [](const Tensor& x) { return silu(x); }},
      {"pow 3.5", [](const Tensor& x) { return pow(abs(x), 3.5); }},
      {"rpow", [](const Tensor& x) { return pow(1.7, x); }},
      {"remainder", [](const Tensor& x) { return remainder(x, -0.75); }},
      {"clamp", [](const Tensor& x) { return clamp(x, -0.5, 1.25); }},
  };
  for (Dtype t : {kFloat32, kFloat16, kBFloat16, kFloat64}) {
    auto x = random_cpu({n}, t, rng, -4, 4);
    for (int64_t shift : {0, 1}) {
      auto g = on_cuda(x, shift);
      for (auto& [name, f] : ops) {
        // log(|x| + 0.5) etc. round between steps on both sides: the reference takes the
        // same steps in the dtype on the CPU, each step in float64 inside.
        auto want = f(x.to(kFloat64)).to(t);
        auto got = f(g);
        const double scale = std::string(name) == "remainder" || std::string(name) == "pow 3.5" ? 8 : 2;
        expect_close(got, want, tol(t) * scale, std::string(name) + " " + dt(t) + " shift " + std::to_string(shift));
      }
    }
  }
  // Integer forms: exact against the CPU.
  for (Dtype t : {kInt32, kInt64, kInt8, kUInt8}) {
    auto x = random_cpu({n}, t, rng, t == kUInt8 ? 0 : -50, 50);
    auto g = on_cuda(x, 1);
    expect_equal(neg(g), neg(x), "neg " + dt(t));
    expect_equal(abs(g), abs(x), "abs " + dt(t));
    expect_equal(relu(g), relu(x), "relu " + dt(t));
    expect_equal(pow(g, 3), pow(x, 3), "pow " + dt(t));
    expect_equal(remainder(g, 7), remainder(x, 7), "remainder " + dt(t));
    if (t == kUInt8) expect_equal(remainder(g, 255), remainder(x, 255), "remainder 255 " + dt(t));
    expect_equal(clamp(g, 3, 20), clamp(x, 3, 20), "clamp " + dt(t));
  }
}

TEST(CudaOpsElementwise, TensorOperandsCompareWhere) {
  WICK_REQUIRE_CUDA();
  std::mt19937 rng(32);
  for (Dtype t : {kFloat32, kFloat16, kInt32, kInt64, kUInt8, kFloat64}) {
    const double lo = t == kUInt8 ? 0 : -20;
    auto a = random_cpu({1027, 513}, t, rng, lo, 20), b = random_cpu({1027, 513}, t, rng, lo, 20);
    auto c = random_cpu({513}, t, rng, lo, 20);
    auto cond = random_cpu({1027, 1}, kBool, rng, 0, 2);
    for (int64_t shift : {0, 1}) {
      auto ga = on_cuda(a, shift), gb = on_cuda(b), gc = on_cuda(c, shift), gcond = on_cuda(cond, shift);
      const std::string what = dt(t) + " shift " + std::to_string(shift);
      expect_equal(where(gcond, ga, gb), where(cond, a, b), "where broadcast cond " + what);
      expect_equal(where(ge(ga, gb), gb, ga), where(ge(a, b), b, a), "where same shapes " + what);
      expect_equal(where(gt(ga, gb), ga, gc), where(gt(a, b), a, c), "where " + what);
      expect_equal(clamp(ga, gc, gb), clamp(a, c, b), "clamp tensors " + what);
      expect_equal(clamp_min(ga, gc), clamp_min(a, c), "clamp_min " + what);
      expect_equal(clamp_max(ga.t(), gc.unsqueeze(1)), clamp_max(a.t(), c.unsqueeze(1)), "clamp_max transposed " + what);
      for (auto [name, got, want] : {std::tuple{"eq", eq(ga, gb), eq(a, b)}, std::tuple{"ne", ne(ga, gc), ne(a, c)},
                                     std::tuple{"lt", lt(ga, gb), lt(a, b)}, std::tuple{"le", le(ga.t(), 3), le(a.t(), 3)},
                                     std::tuple{"gt", gt(ga, gc), gt(a, c)}, std::tuple{"ge", ge(ga, 2), ge(a, 2)}})
        expect_equal(got, want, std::string(name) + " " + what);
      // pow and remainder of tensors (nonzero divisors).
      auto d = where(eq(b, 0), ones_like(b), b);
      expect_close(remainder(ga, on_cuda(d)), remainder(a.to(kFloat64), d.to(kFloat64)).to(t), tol(t) * 40,
                   "remainder " + what);
      auto e = random_cpu({1027, 513}, t, rng, 0, 3);
      auto base = is_floating_point(t) ? abs(a) / 10 : a;
      auto want = is_floating_point(t) ? pow(base.to(kFloat64), e.to(kFloat64)).to(t) : pow(base, e);
      expect_close(pow(on_cuda(base, shift), on_cuda(e)), want, tol(t) * 4, "pow " + what);
    }
  }
}

// Errors raised before writing: integer remainder by 0, indices out of range.
TEST(CudaOpsElementwise, ErrorsLeaveOutputsUntouched) {
  WICK_REQUIRE_CUDA();
  auto x = arange(1, 10001, 1, TensorOptions(kInt32).device("cuda"));
  auto y = full({10000}, 3, TensorOptions(kInt32).device("cuda"));
  y.narrow(0, 9000, 1).fill_(0);
  auto before = values(x);
  EXPECT_THROW(x.remainder_(y), ValueError);
  EXPECT_EQ(values(x), before);
  auto src = arange(0, 100, 1, TensorOptions(kFloat32).device("cuda")).view({10, 10});
  auto bad = tensor({0, 3, 10}).to("cuda");
  try {
    index_select(src, 1, bad);
    ADD_FAILURE() << "index_select with index 10 of 10 did not throw";
  } catch (const IndexError& e) {
    EXPECT_NE(std::string(e.what()).find("index 10 is out of bounds"), std::string::npos) << e.what();
  }
  EXPECT_THROW(gather(src, 0, full({2, 10}, -1, TensorOptions(kInt64).device("cuda"))), IndexError);
  // After the errors the device still works.
  // Rows 9 and 0: 90 + ... + 99 and 0 + ... + 9.
  expect_equal(index_select(src, 0, tensor({9, 0}).to("cuda")).sum(), full({}, 990.0), "index_select after an error");
}

TEST(CudaOpsElementwise, GatherAndIndexSelectLarge) {
  WICK_REQUIRE_CUDA();
  std::mt19937 rng(33);
  for (Dtype t : {kFloat32, kFloat16, kInt64, kUInt8, kFloat64}) {
    auto x = random_cpu({300, 1001}, t, rng, 0, 100);
    auto idx = random_cpu({5000}, kInt64, rng, 0, 300);
    auto idx32 = random_cpu({700}, kInt32, rng, 0, 1001);
    auto g = on_cuda(x, 1);
    expect_equal(index_select(g, 0, idx.to("cuda")), index_select(x, 0, idx), "index_select dim 0 " + dt(t));
    expect_equal(index_select(g, 1, on_cuda(idx32, 1)), index_select(x, 1, idx32), "index_select dim 1 int32 " + dt(t));
    auto gidx = random_cpu({300, 64}, kInt64, rng, 0, 1001);
    expect_equal(gather(g, 1, gidx.to("cuda")), gather(x, 1, gidx), "gather " + dt(t));
    expect_equal(gather(g.t(), 0, gidx.t().contiguous().to("cuda")), gather(x.t(), 0, gidx.t().contiguous()),
                 "gather transposed " + dt(t));
  }
}

TEST(CudaOpsElementwise, SoftmaxEveryKernel) {
  WICK_REQUIRE_CUDA();
  std::mt19937 rng(34);
  // n: warp rows, block rows, register-cached rows (up to 8192 floats / 16384 halves / 4096
  // doubles), and longer rows that take the two-pass kernel.
  for (Dtype t : {kFloat32, kFloat16, kBFloat16, kFloat64}) {
    for (int64_t n : {5, 1000, 1032, 4096, 8192, 8200, 16384, 20000}) {
      auto x = random_cpu({6, n}, t, rng, -8, 8);
      for (int64_t shift : {0, 1}) {
        auto g = on_cuda(x, shift);
        const std::string what = dt(t) + " n " + std::to_string(n) + " shift " + std::to_string(shift);
        // Probabilities are small: compare them by relative norm, log-probabilities one by one.
        EXPECT_LT(rel_error(softmax(g, 1), softmax(x.to(kFloat64), 1)), tol(t) * 2) << "softmax " << what;
        expect_close(log_softmax(g, -1), log_softmax(x.to(kFloat64), -1).to(t), tol(t) * 8, "log_softmax " + what);
      }
    }
    // Over a dim that is not the last (the column kernel), and a long one.
    auto x = random_cpu({3, 2000, 7}, t, rng, -8, 8);
    EXPECT_LT(rel_error(softmax(on_cuda(x), 1), softmax(x.to(kFloat64), 1)), tol(t) * 2) << "softmax dim 1 " << dt(t);
    expect_close(log_softmax(on_cuda(x, 1), 0), log_softmax(x.to(kFloat64), 0).to(t), tol(t) * 8,
                 "log_softmax dim 0 " + dt(t));
  }
  // A row of -inf gives nan; a row with one -inf gives 0 there.
  auto x = random_cpu({2, 3000}, kFloat32, rng);
  auto xa = x.accessor<float, 2>();
  for (int64_t j = 0; j < 3000; ++j) xa[0][j] = -INFINITY;
  xa[1][5] = -INFINITY;
  auto s = values(softmax(x.to("cuda"), 1));
  EXPECT_TRUE(std::isnan(s[0]));
  EXPECT_EQ(s[3000 + 5], 0.0);
  // Rows whose values dwarf log(sum): log_softmax is (x - max) - log(sum), -log(n) here (max +
  // log(sum) first would round to the value itself and give 0). Each kernel: a cached row, a
  // long row, a column.
  for (int64_t n : {int64_t(4), int64_t(1000), int64_t(100000)}) {
    auto big = full({2, n}, 1e30, TensorOptions(kFloat32).device(Device("cuda")));
    for (double v : values(log_softmax(big, 1)))
      ASSERT_NEAR(v, -std::log(double(n)), 1e-5 * std::log(double(n)));
  }
  auto col = full({8, 3}, -1e30, TensorOptions(kFloat32).device(Device("cuda")));
  for (double v : values(log_softmax(col, 0))) ASSERT_NEAR(v, -std::log(8.0), 1e-5);
}

// Views whose innermost dimension is unit-strided in every operand (a transpose of outer
// dimensions, a slice of rows) take the strided kernel a 16-byte vector at a time
// instead of one element at a time: copies, casts and binary ops on such
// views against the same ops on the CPU, exactly; with rows that do not split into vectors, an
// operand shifted off the vectors' alignment, a broadcast operand and bool and integer dtypes.
TEST(CudaOpsElementwise, InnerContiguousViewsExactly) {
  WICK_REQUIRE_CUDA();
  std::mt19937 rng(57);
  for (Dtype t : {kBFloat16, kFloat16, kFloat32, kFloat64, kInt64, kInt32, kInt8, kBool}) {
    for (int64_t d : {64, 24, 7}) {
      for (int64_t shift : {0, 1}) {
        SCOPED_TRACE(::testing::Message() << t << " d " << d << " shift " << shift);
        const Tensor x = random_cpu({3, 5, 6, d}, t, rng, -9, 9);
        const Tensor y = random_cpu({3, 6, 5, d}, t, rng, -9, 9);
        const Tensor gx = on_cuda(x, shift), gy = on_cuda(y, shift);
        // [3, 5, 6, d] -> [3, 6, 5, d]: the transpose copied, and into a given output
        EXPECT_TRUE(equal(gx.transpose(1, 2).contiguous().cpu(), x.transpose(1, 2).contiguous()));
        Tensor into = empty({3, 6, 5, d}, TensorOptions(t).device("cuda"));
        into.copy_(gx.transpose(1, 2));
        EXPECT_TRUE(equal(into.cpu(), x.transpose(1, 2).contiguous()));
        // a strided output: written through the transposed view
        Tensor out = zeros({3, 5, 6, d}, TensorOptions(t).device("cuda"));
        out.transpose(1, 2).copy_(gy);
        EXPECT_TRUE(equal(out.cpu(), y.transpose(1, 2).contiguous()));
        // casts of a transposed view
        for (Dtype to : {kFloat32, kBFloat16, kInt64}) {
          EXPECT_TRUE(equal(gx.transpose(1, 2).to(to).cpu(), x.transpose(1, 2).to(to))) << "to " << to;
        }
        if (t == kBool) continue;
        // binary ops of two views, and of a view and a broadcast row
        EXPECT_TRUE(equal((gx.transpose(1, 2) + gy).cpu(), x.transpose(1, 2) + y));
        EXPECT_TRUE(equal((gx.narrow(2, 1, 4) * gx.narrow(2, 0, 4)).cpu(), x.narrow(2, 1, 4) * x.narrow(2, 0, 4)));
        const Tensor row = random_cpu({1, 1, 1, d}, t, rng, -9, 9);
        EXPECT_TRUE(equal((gx.transpose(1, 2) - row.cuda()).cpu(), x.transpose(1, 2) - row));
        // an in-place op on a slice of rows
        Tensor inplace = gx.clone();
        inplace.narrow(1, 1, 3).add_(gx.narrow(1, 0, 3));
        Tensor want = x.clone();
        want.narrow(1, 1, 3).add_(x.narrow(1, 0, 3));
        EXPECT_TRUE(equal(inplace.cpu(), want));
      }
    }
  }
}

// A float32 tensor with a float16 or bfloat16 one (autocast's residual stream): the result is
// float32 and has exactly the values of casting the 16-bit operand to float32 first, on either
// side, for + - * / and alpha, contiguous, broadcast, transposed, into a float32 output in place,
// and with a 0-d operand (whose dtype does not count: the result stays 16-bit). The kernel reads
// the 16-bit operand as it is.
TEST(CudaOpsElementwise, FloatWithSixteenBitOperandsExactly) {
  WICK_REQUIRE_CUDA();
  std::mt19937 rng(58);
  for (Dtype h : {kBFloat16, kFloat16}) {
    SCOPED_TRACE(::testing::Message() << h);
    const Tensor f = random_cpu({4, 33, 40}, kFloat32, rng, -3, 3).cuda();
    const Tensor s = random_cpu({4, 33, 40}, h, rng, 0.5, 3).cuda();
    const Tensor st = random_cpu({4, 40, 33}, h, rng, 0.5, 3).cuda().transpose(1, 2);
    const Tensor row = random_cpu({40}, h, rng, 0.5, 3).cuda();
    auto same = [](const Tensor& got, const Tensor& want) {
      EXPECT_EQ(got.dtype(), want.dtype());
      EXPECT_EQ(got.sizes(), want.sizes());
      EXPECT_TRUE(equal(got.cpu(), want.cpu()));
    };
    for (const Tensor* o : {&s, &st, &row}) {
      const Tensor of = o->to(kFloat32);
      same(f + *o, f + of);
      same(*o + f, of + f);
      same(f - *o, f - of);
      same(*o - f, of - f);
      same(f * *o, f * of);
      same(f / *o, f / of);
      same(*o / f, of / f);
      same(add(f, *o, 0.25), add(f, of, 0.25));
      same(sub(*o, f, 3), sub(of, f, 3));
      Tensor in_place = f.clone(), want = f.clone();
      in_place += *o;
      want += of;
      same(in_place, want);
    }
    // a transposed float32 operand with a contiguous 16-bit one
    same(f.transpose(0, 2) + s.transpose(0, 2), f.transpose(0, 2) + s.transpose(0, 2).to(kFloat32));
    // 0-d operands: the one with dims decides the dtype
    const Tensor f0 = full({}, 1.5, TensorOptions(kFloat32).device("cuda"));
    same(f0 + s, f0.to(h) + s);
    same(f + full({}, 1.5, TensorOptions(h).device("cuda")), f + 1.5);
  }
}
