// The CUDA matmul family against float64 products computed on the CPU: shapes from 1x1x1 to
// sizes that are not multiples of any tile, every transpose combination, unaligned operands,
// batches with and without a broadcast operand, addmm's beta/alpha, integer dtypes (exact,
// wrapping), and the TF32 switch of set_float32_matmul_precision.
#include "core/linalg.h"
#include "core/tensor_ops.h"
#include "ops_test_util.h"
#include "wick/backends.h"

using namespace wick;
using namespace wick::test;

namespace {

// Keeps the process-wide precision setting from leaking out of a test.
struct PrecisionScope {
  explicit PrecisionScope(const char* p) { set_float32_matmul_precision(p); }
  ~PrecisionScope() { set_float32_matmul_precision("highest"); }
};

// Relative (norm-wise) error allowed against the float64 product: the inputs are rounded to
// the dtype before the reference is taken, so this is accumulation plus output rounding.
double gemm_tol(Dtype t) {
  switch (t) {
    case kFloat16: return 2e-3;
    case kBFloat16: return 1e-2;
    case kFloat32: return 1e-5;
    default: return 1e-12;
  }
}

// A [rows, cols] matrix with those values, stored transposed (column-major) when `trans`.
Tensor stored(const Tensor& m, bool trans) { return trans ? m.t().contiguous().t() : m; }

}  // namespace

TEST(CudaOpsGemm, ShapesAndTransposes) {
  WICK_REQUIRE_CUDA();
  std::mt19937 rng(11);
  const int64_t shapes[][3] = {{1, 1, 1}, {7, 5, 3}, {64, 48, 40}, {257, 129, 65}, {384, 512, 1000}};
  for (Dtype t : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    for (auto [m, n, k] : shapes) {
      for (int ta = 0; ta < 2; ++ta) {
        for (int tb = 0; tb < 2; ++tb) {
          auto a = random_cpu({m, k}, t, rng), b = random_cpu({k, n}, t, rng);
          auto ga = stored(a.to("cuda"), ta), gb = stored(b.to("cuda"), tb);
          auto got = matmul(ga, gb);
          auto want = matmul(a.to(kFloat64), b.to(kFloat64));
          const std::string what = dt(t) + " " + std::to_string(m) + "x" + std::to_string(k) + "@" +
                                   std::to_string(k) + "x" + std::to_string(n) + " trans " + std::to_string(ta) +
                                   std::to_string(tb);
          ASSERT_EQ(got.dtype(), t) << what;
          ASSERT_EQ(got.sizes().vec(), want.sizes().vec()) << what;
          EXPECT_LT(rel_error(got, want), gemm_tol(t)) << what;
        }
      }
    }
  }
}

// Operands one element past an aligned address, with odd leading dimensions: cuBLASLt must be
// told the real alignment or it picks kernels that fault or read wrong data.
TEST(CudaOpsGemm, UnalignedOperands) {
  WICK_REQUIRE_CUDA();
  std::mt19937 rng(12);
  for (Dtype t : {kFloat32, kFloat16, kBFloat16, kFloat64}) {
    auto a = random_cpu({33, 67}, t, rng), b = random_cpu({67, 45}, t, rng);
    auto ga = on_cuda(a, 1), gb = on_cuda(b, 3);
    auto want = mm(a.to(kFloat64), b.to(kFloat64));
    EXPECT_LT(rel_error(mm(ga, gb), want), gemm_tol(t)) << dt(t);
    // A column slice: row stride 68, data 1 element in.
    auto wide = random_cpu({33, 68}, t, rng);
    auto ga2 = wide.to("cuda").narrow(1, 1, 67);
    EXPECT_LT(rel_error(mm(ga2, gb), mm(wide.narrow(1, 1, 67).to(kFloat64), b.to(kFloat64))), gemm_tol(t))
        << dt(t) << " sliced";
  }
}

TEST(CudaOpsGemm, BatchedAndBroadcast) {
  WICK_REQUIRE_CUDA();
  std::mt19937 rng(13);
  for (Dtype t : {kFloat32, kFloat16, kFloat64}) {
    auto a = random_cpu({6, 17, 24}, t, rng), b = random_cpu({6, 24, 9}, t, rng);
    auto a64 = a.to(kFloat64), b64 = b.to(kFloat64);
    EXPECT_LT(rel_error(bmm(a.to("cuda"), b.to("cuda")), bmm(a64, b64)), gemm_tol(t)) << dt(t) << " bmm";
    // Each batch item stored transposed.
    auto at = a.transpose(1, 2).contiguous().to("cuda").transpose(1, 2);
    EXPECT_LT(rel_error(bmm(at, b.to("cuda")), bmm(a64, b64)), gemm_tol(t)) << dt(t) << " bmm transposed";
    // A 2-D operand broadcast over the batch (batch stride 0), on either side.
    auto m = random_cpu({17, 24}, t, rng), w = random_cpu({24, 9}, t, rng);
    EXPECT_LT(rel_error(matmul(m.to("cuda"), b.to("cuda")), matmul(m.to(kFloat64), b64)), gemm_tol(t))
        << dt(t) << " broadcast a";
    EXPECT_LT(rel_error(matmul(a.to("cuda"), w.to("cuda")), matmul(a64, w.to(kFloat64))), gemm_tol(t))
        << dt(t) << " broadcast b";
    // Batch dims that broadcast against each other: [2, 1, 17, 24] @ [3, 24, 9].
    auto a4 = random_cpu({2, 1, 17, 24}, t, rng), b3 = random_cpu({3, 24, 9}, t, rng);
    EXPECT_LT(rel_error(matmul(a4.to("cuda"), b3.to("cuda")), matmul(a4.to(kFloat64), b3.to(kFloat64))),
              gemm_tol(t))
        << dt(t) << " 4-D broadcast";
  }
}

TEST(CudaOpsGemm, AddmmBetaAlphaAndLinear) {
  WICK_REQUIRE_CUDA();
  std::mt19937 rng(14);
  for (Dtype t : {kFloat32, kFloat16, kBFloat16, kFloat64}) {
    auto in = random_cpu({31, 19}, t, rng), a = random_cpu({31, 40}, t, rng), b = random_cpu({40, 19}, t, rng);
    auto want = addmm(in.to(kFloat64), a.to(kFloat64), b.to(kFloat64), 0.5, -1.5);
    EXPECT_LT(rel_error(addmm(in.to("cuda"), a.to("cuda"), b.to("cuda"), 0.5, -1.5), want), gemm_tol(t)) << dt(t);
    // beta == 0 ignores the input, nan included.
    auto nan_in = full({31, 19}, NAN, TensorOptions(t).device("cuda"));
    auto got = addmm(nan_in, a.to("cuda"), b.to("cuda"), 0, 1);
    EXPECT_LT(rel_error(got, mm(a.to(kFloat64), b.to(kFloat64))), gemm_tol(t)) << dt(t) << " beta 0";
    // A broadcast bias row, as linear uses it.
    auto x = random_cpu({8, 40}, t, rng), wt = random_cpu({19, 40}, t, rng), bias = random_cpu({19}, t, rng);
    auto lin = linear(x.to("cuda"), wt.to("cuda"), bias.to("cuda"));
    EXPECT_LT(rel_error(lin, linear(x.to(kFloat64), wt.to(kFloat64), bias.to(kFloat64))), gemm_tol(t))
        << dt(t) << " linear";
  }
}

// Integers: exact, and wrapping like the CPU (int8 products of 40 terms overflow).
TEST(CudaOpsGemm, IntegerDtypesMatchTheCpu) {
  WICK_REQUIRE_CUDA();
  std::mt19937 rng(15);
  for (Dtype t : {kUInt8, kInt8, kInt16, kInt32, kInt64}) {
    const double lo = t == kUInt8 ? 0 : -10;
    auto a = random_cpu({5, 23, 40}, t, rng, lo, 11), b = random_cpu({5, 40, 18}, t, rng, lo, 11);
    expect_equal(bmm(a.to("cuda"), b.to("cuda")), bmm(a, b), dt(t) + " bmm");
    auto at = a.select(0, 0).t().contiguous().t();
    expect_equal(mm(at.to("cuda"), b.select(0, 1).to("cuda")), mm(at, b.select(0, 1)), dt(t) + " mm transposed");
    auto in = random_cpu({23, 18}, t, rng, lo, 11);
    expect_equal(addmm(in.to("cuda"), a.select(0, 2).to("cuda"), b.select(0, 2).to("cuda"), 2, 3),
                 addmm(in, a.select(0, 2), b.select(0, 2), 2, 3), dt(t) + " addmm");
  }
  // int64 against float64 where nothing overflows.
  auto a = random_cpu({9, 30}, kInt64, rng, -1000, 1000), b = random_cpu({30, 7}, kInt64, rng, -1000, 1000);
  expect_equal(mm(a.to("cuda"), b.to("cuda")).to(kFloat64), mm(a.to(kFloat64), b.to(kFloat64)), "int64 vs float64");
}

TEST(CudaOpsGemm, EmptyInnerDimension) {
  WICK_REQUIRE_CUDA();
  auto a = empty({4, 0}, Device("cuda")), b = empty({0, 3}, Device("cuda"));
  expect_equal(mm(a, b), zeros({4, 3}), "mm with k = 0");
  auto in = full({4, 3}, 2.0, Device("cuda"));
  expect_equal(addmm(in, a, b, 0.5, 1), full({4, 3}, 1.0), "addmm with k = 0");
}

TEST(CudaOpsGemm, Float32PrecisionSwitchesTf32) {
  WICK_REQUIRE_CUDA();
  EXPECT_EQ(get_float32_matmul_precision(), "highest");
  EXPECT_THROW(set_float32_matmul_precision("fast"), ValueError);
  std::mt19937 rng(16);
  auto a = random_cpu({512, 768}, kFloat32, rng), b = random_cpu({768, 256}, kFloat32, rng);
  auto want = mm(a.to(kFloat64), b.to(kFloat64));
  auto ga = a.to("cuda"), gb = b.to("cuda");
  const double exact = rel_error(mm(ga, gb), want);
  EXPECT_LT(exact, 1e-6) << "float32 products by default";
  for (const char* p : {"high", "medium"}) {
    PrecisionScope scope(p);
    EXPECT_EQ(get_float32_matmul_precision(), p);
    // TF32 keeps 10 mantissa bits: errors near 2^-11 / sqrt(terms), far above float32's.
    const double tf32 = rel_error(mm(ga, gb), want);
    EXPECT_GT(tf32, 2e-5) << p << ": TF32 was not used";
    EXPECT_LT(tf32, 5e-3) << p;
    // float64 and float16 ignore the setting.
    EXPECT_LT(rel_error(mm(a.to(kFloat64).to("cuda"), b.to(kFloat64).to("cuda")), want), 1e-12) << p;
  }
  EXPECT_EQ(get_float32_matmul_precision(), "highest");
  EXPECT_LT(rel_error(mm(ga, gb), want), 1e-6) << "back to float32 products";
}

// Small float32 products take one kernel of wick's own (a few million multiply-adds or fewer):
// shapes on and off its 16 x 16 tiles and 32-long k chunks, k split over clusters of 1 to 8
// blocks, every transpose pair, padded rows,
// alpha/beta, the bias row and the operand sums of a linear layer's backward, against float64
// products on the CPU. The largest shape here is past the kernel's bound and runs on cuBLASLt.
TEST(CudaOpsGemm, SmallFloat32Products) {
  WICK_REQUIRE_CUDA();
  std::mt19937 rng(17);
  const int64_t shapes[][3] = {{1, 1, 1},   {1, 1, 70},   {16, 16, 32},  {17, 15, 33},  {64, 128, 784},
                               {64, 10, 128}, {10, 128, 64}, {128, 784, 64}, {3, 300, 7},  {100, 1, 50},
                               {1, 100, 500}, {2000, 3, 2},  {33, 47, 300}, {200, 200, 220}, {5, 7, 8000},
                               {20, 33, 2100}, {31, 17, 257}};
  for (auto [m, n, k] : shapes) {
    for (int ta = 0; ta < 2; ++ta) {
      for (int tb = 0; tb < 2; ++tb) {
        const std::string what = std::to_string(m) + "x" + std::to_string(k) + "@" + std::to_string(k) + "x" +
                                 std::to_string(n) + " trans " + std::to_string(ta) + std::to_string(tb);
        auto a = random_cpu({m, k}, kFloat32, rng), b = random_cpu({k, n}, kFloat32, rng);
        auto a64 = a.to(kFloat64), b64 = b.to(kFloat64);
        auto ga = stored(a.to("cuda"), ta), gb = stored(b.to("cuda"), tb);
        EXPECT_LT(rel_error(mm(ga, gb), mm(a64, b64)), 1e-5) << what;
        auto in = random_cpu({m, n}, kFloat32, rng);
        EXPECT_LT(rel_error(addmm(in.to("cuda"), ga, gb, 0.5, -1.5), addmm(in.to(kFloat64), a64, b64, 0.5, -1.5)),
                  1e-5)
            << what << " addmm";
        auto bias = random_cpu({n}, kFloat32, rng);
        EXPECT_LT(rel_error(addmm(bias.to("cuda"), ga, gb), addmm(bias.to(kFloat64), a64, b64)), 1e-5)
            << what << " bias row";
        // The bias gradient of a linear layer: sums over k of either operand, with the product.
        for (int which : {1, 2}) {
          Tensor sums;
          auto got = wick::detail::mm_with_sums(ga, gb, which, sums);
          EXPECT_LT(rel_error(got, mm(a64, b64)), 1e-5) << what << " with sums " << which;
          auto want_sums = which == 1 ? a64.sum(1) : b64.sum(0);
          ASSERT_TRUE(sums.defined()) << what;
          EXPECT_LT(rel_error(sums, want_sums), 1e-5) << what << " sums " << which;
        }
      }
    }
  }
  // Rows padded past their length (a narrowed wider matrix), on both operands.
  auto wa = random_cpu({37, 90}, kFloat32, rng), wb = random_cpu({60, 51}, kFloat32, rng);
  auto na = wa.to("cuda").narrow(1, 3, 60), nb = wb.to("cuda").narrow(1, 1, 29);
  EXPECT_LT(rel_error(mm(na, nb), mm(wa.narrow(1, 3, 60).to(kFloat64), wb.narrow(1, 1, 29).to(kFloat64))), 1e-5)
      << "padded rows";
  EXPECT_LT(rel_error(mm(nb.t(), na.t()), mm(wb.narrow(1, 1, 29).t().to(kFloat64), wa.narrow(1, 3, 60).t().to(kFloat64))),
            1e-5)
      << "padded columns";
  // Special values go through: inf and nan in an operand reach the outputs they touch.
  auto x = zeros({4, 5}, TensorOptions(kFloat32).device("cuda")), y = ones({5, 3}, TensorOptions(kFloat32).device("cuda"));
  x.select(0, 1).select(0, 2).fill_(INFINITY);
  x.select(0, 3).select(0, 0).fill_(NAN);
  auto p = mm(x, y).cpu();
  EXPECT_EQ(p.select(0, 0).sum().item<float>(), 0.f);
  EXPECT_TRUE(std::isinf(p.select(0, 1).select(0, 2).item<float>()));
  EXPECT_TRUE(std::isnan(p.select(0, 3).select(0, 1).item<float>()));
}

// A small linear layer's gradients (weight GEMM with the bias gradient in it, input GEMM)
// against float64 on the CPU.
TEST(CudaOpsGemm, SmallLinearGradients) {
  WICK_REQUIRE_CUDA();
  std::mt19937 rng(18);
  for (auto [batch, in_f, out_f] : {std::tuple{64, 784, 128}, std::tuple{64, 128, 10}, std::tuple{5, 3, 7}}) {
    auto x = random_cpu({batch, in_f}, kFloat32, rng), w = random_cpu({out_f, in_f}, kFloat32, rng);
    auto b = random_cpu({out_f}, kFloat32, rng), go = random_cpu({batch, out_f}, kFloat32, rng);
    auto run = [&](const Device& d, Dtype t) {
      auto xv = x.to(t).to(d).requires_grad_(), wv = w.to(t).to(d).requires_grad_(),
           bv = b.to(t).to(d).requires_grad_();
      linear(xv, wv, bv).backward(go.to(t).to(d));
      return std::tuple{xv.grad(), wv.grad(), bv.grad()};
    };
    auto [gx, gw, gb] = run(Device("cuda"), kFloat32);
    auto [rx, rw, rb] = run(Device("cpu"), kFloat64);
    const std::string what = std::to_string(batch) + "x" + std::to_string(in_f) + "->" + std::to_string(out_f);
    EXPECT_LT(rel_error(gx, rx), 1e-5) << what << " input";
    EXPECT_LT(rel_error(gw, rw), 1e-5) << what << " weight";
    EXPECT_LT(rel_error(gb, rb), 1e-5) << what << " bias";
  }
}
