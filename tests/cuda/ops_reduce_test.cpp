// CUDA reductions at sizes the table test does not reach: full sums of millions of elements
// (split across blocks), rows that start off 16-byte alignment, long columns (split along the
// reduced dim), ties and NaN in max/argmax, var of data with a large mean, every norm. The
// reference is the CPU in float64 (or the CPU's own result where it is exact).
#include "ops_test_util.h"

using namespace wick;
using namespace wick::test;

namespace {

// The error of a float sum is bounded by its length times the sum of magnitudes; this allows
// for tree-order accumulation in float plus one rounding of the result to the dtype.
void expect_sum_close(const Tensor& got, const Tensor& x64, IntArrayRef dims, Dtype t, const std::string& what) {
  auto want = dims.empty() ? x64.sum() : x64.sum(dims);
  auto mag = dims.empty() ? abs(x64).sum() : abs(x64).sum(dims);
  const auto g = values(got), w = values(want), m = values(mag);
  ASSERT_EQ(g.size(), w.size()) << what;
  const double round = t == kFloat16 ? 1e-3 : t == kBFloat16 ? 8e-3 : t == kFloat32 ? 1e-7 : 1e-15;
  const double acc = t == kFloat64 ? 1e-14 : 2e-6;
  for (size_t i = 0; i < g.size(); ++i)
    ASSERT_LE(std::abs(g[i] - w[i]), round * std::abs(w[i]) + acc * m[i] + 1e-30) << what << " at " << i;
}

}  // namespace

TEST(CudaOpsReduce, LongSums) {
  WICK_REQUIRE_CUDA();
  std::mt19937 rng(21);
  for (int64_t n : {int64_t(1), int64_t(3), int64_t(4097), int64_t(8193), (int64_t(1) << 20) + 3,
                    (int64_t(1) << 24) + 5}) {
    for (Dtype t : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
      if (!is_floating_point(t) || (element_size(t) == 2 && n > (1 << 20))) continue;
      auto x = random_cpu({n}, t, rng);
      for (int64_t shift : {0, 1}) {
        auto g = on_cuda(x, shift);
        const std::string what = "sum " + dt(t) + " n " + std::to_string(n) + " shift " + std::to_string(shift);
        expect_sum_close(g.sum(), x.to(kFloat64), {}, t, what);
        auto mean = g.mean();
        auto want = x.to(kFloat64).mean();
        expect_close(mean, want.to(t), t == kFloat64 ? 1e-13 : t == kFloat32 ? 1e-5 : 2e-2, "mean " + what);
      }
    }
    // Integers sum exactly in int64.
    for (Dtype t : {kInt32, kInt64, kUInt8, kInt8, kBool}) {
      auto x = random_cpu({n}, t, rng, t == kUInt8 || t == kBool ? 0 : -100, t == kBool ? 2 : 100);
      expect_equal(on_cuda(x, 1).sum(), x.sum(), "sum " + dt(t) + " n " + std::to_string(n));
    }
  }
}

TEST(CudaOpsReduce, RowsAndColumns) {
  WICK_REQUIRE_CUDA();
  std::mt19937 rng(22);
  for (Dtype t : {kFloat32, kFloat16, kFloat64}) {
    // Rows of odd length (each row starts at a different alignment), short and long.
    for (auto shape : {std::vector<int64_t>{37, 5001}, {1000, 7}, {3, 70001}, {2, 3}}) {
      auto x = random_cpu(shape, t, rng);
      expect_sum_close(on_cuda(x).sum({1}), x.to(kFloat64), {1}, t, "rows " + dt(t) + " " + str(shape));
      // Over dim 0: the column kernel, split along long columns.
      expect_sum_close(on_cuda(x).sum({0}), x.to(kFloat64), {0}, t, "columns " + dt(t) + " " + str(shape));
    }
    auto x = random_cpu({3, 50001, 5}, t, rng);
    expect_sum_close(on_cuda(x, 1).sum({1}), x.to(kFloat64), {1}, t, "middle dim " + dt(t));
    expect_sum_close(on_cuda(x).sum({0, 2}), x.to(kFloat64), {0, 2}, t, "outer dims " + dt(t));
  }
}

TEST(CudaOpsReduce, MaxMinAndIndicesWithTiesAndNan) {
  WICK_REQUIRE_CUDA();
  std::mt19937 rng(23);
  for (Dtype t : {kFloat32, kFloat16, kFloat64, kInt64, kInt32, kUInt8, kInt8, kBool}) {
    // Few distinct values: every row has many ties, and the first index must win.
    for (auto shape : {std::vector<int64_t>{4, 100003}, {50001, 7}, {9, 33}, {3, 20000, 3}}) {
      auto x = random_cpu(shape, t, rng, 0, t == kBool ? 2 : 10);
      auto g = on_cuda(x, 1);
      for (int64_t dim = 0; dim < int64_t(shape.size()); ++dim) {
        const std::string what = dt(t) + " " + str(shape) + " dim " + std::to_string(dim);
        auto [gv, gi] = max(g, dim);
        auto [cv, ci] = max(x, dim);
        expect_equal(gv, cv, "max values " + what);
        expect_equal(gi, ci, "max indices " + what);
        auto [hv, hi] = min(g, dim, true);
        auto [dv, di] = min(x, dim, true);
        expect_equal(hv, dv, "min values " + what);
        expect_equal(hi, di, "min indices " + what);
        if (t != kBool) {
          expect_equal(argmax(g, dim), argmax(x, dim), "argmax " + what);
          expect_equal(argmin(g, dim), argmin(x, dim), "argmin " + what);
        }
      }
      expect_equal(max(g), max(x), dt(t) + " max of all");
      expect_equal(min(g), min(x), dt(t) + " min of all");
    }
  }
  // NaN beats every number, and the first NaN's index wins.
  auto x = random_cpu({3, 40000}, kFloat32, rng);
  auto xa = x.accessor<float, 2>();
  xa[1][777] = NAN;
  xa[1][30000] = NAN;
  xa[2][39999] = NAN;
  auto [v, i] = max(x.to("cuda"), 1);
  auto vi = values(v), ii = values(i);
  EXPECT_FALSE(std::isnan(vi[0]));
  EXPECT_TRUE(std::isnan(vi[1]) && std::isnan(vi[2]));
  EXPECT_EQ(ii[1], 777);
  EXPECT_EQ(ii[2], 39999);
  EXPECT_EQ(values(argmin(x.to("cuda")))[0], 40000 + 777);
}

TEST(CudaOpsReduce, VarStdNorm) {
  WICK_REQUIRE_CUDA();
  std::mt19937 rng(24);
  for (Dtype t : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    const double tol = t == kFloat64 ? 1e-12 : t == kFloat32 ? 2e-5 : t == kFloat16 ? 4e-3 : 2e-2;
    for (auto shape : {std::vector<int64_t>{3, 200001}, {100000, 4}, {5, 9}, {2, 30000, 3}}) {
      // A large mean: var by sums of squares would lose every digit in float32.
      const double center = t == kFloat16 ? 8 : 1000;
      auto x = random_cpu(shape, t, rng, center - 1, center + 1);
      auto x64 = x.to(kFloat64);
      auto g = on_cuda(x, 1);
      for (int64_t dim = 0; dim < int64_t(shape.size()); ++dim) {
        const std::string what = dt(t) + " " + str(shape) + " dim " + std::to_string(dim);
        expect_close(var(g, {dim}), var(x64, {dim}).to(t), tol, "var " + what);
        expect_close(wick::std(g, {dim}, 0.0), wick::std(x64, {dim}, 0.0).to(t), tol, "std correction 0 " + what);
      }
      expect_close(var(g), var(x64).to(t), tol, "var of all " + dt(t));
    }
    auto x = random_cpu({5, 30001}, t, rng);
    auto x64 = x.to(kFloat64);
    for (double p : {2.0, 1.0, 3.0, 0.0, double(INFINITY), -double(INFINITY)}) {
      const std::string what = "norm p " + std::to_string(p) + " " + dt(t);
      expect_close(norm(on_cuda(x, 1), p, {1}), norm(x64, p, {1}).to(t), tol, what);
      expect_close(norm(on_cuda(x), p, {0}), norm(x64, p, {0}).to(t), tol, what + " dim 0");
    }
  }
}
