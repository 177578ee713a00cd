// The CPU GEMM's batch paths (src/cpu/gemm.cpp): batches large enough to be split over the
// OpenMP threads, one product per thread, with transposed and broadcast operands, a zero inner
// dimension, and products called from two threads at once; each against float64 loops.
#include <cmath>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "wick/wick.h"

using namespace wick;

namespace {

// out[q] = a[q] @ b[q] in float64, a [batch, n, k] and b [batch, k, m] given as float64 values.
std::vector<double> reference(const Tensor& a, const Tensor& b) {
  const int64_t batch = a.size(0), n = a.size(1), k = a.size(2), m = b.size(2);
  auto va = a.to(kFloat64).contiguous().to_vector<double>();
  auto vb = b.to(kFloat64).contiguous().to_vector<double>();
  std::vector<double> want(size_t(batch * n * m));
  for (int64_t q = 0; q < batch; ++q)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < m; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p)
          s += va[size_t((q * n + i) * k + p)] * vb[size_t((q * k + p) * m + j)];
        want[size_t((q * n + i) * m + j)] = s;
      }
  return want;
}

void expect_close(const Tensor& got, const std::vector<double>& want, double tol, const char* what) {
  auto g = got.to(kFloat64).contiguous().to_vector<double>();
  ASSERT_EQ(g.size(), want.size()) << what;
  for (size_t i = 0; i < g.size(); ++i)
    ASSERT_NEAR(g[i], want[i], tol * (1 + std::fabs(want[i]))) << what << " at " << i;
}

}  // namespace

TEST(CpuGemm, SplitBatchesMatchTheReference) {
  manual_seed(3);
  for (Dtype t : {kFloat32, kFloat64}) {
    const double tol = t == kFloat32 ? 1e-4 : 1e-12;
    // 24 items of 33x41 @ 41x29: more items than threads and small items, so split.
    Tensor a = randn({24, 33, 41}, t), b = randn({24, 41, 29}, t);
    expect_close(bmm(a, b), reference(a, b), tol, "plain");
    // Transposed operands (stored column-major per item).
    Tensor at = randn({24, 41, 33}, t).transpose(1, 2), bt = randn({24, 29, 41}, t).transpose(1, 2);
    expect_close(bmm(at, bt), reference(at, bt), tol, "transposed");
    // One b for every item (a broadcast batch dimension).
    Tensor b1 = randn({1, 41, 29}, t);
    expect_close(matmul(a, b1), reference(a, b1.expand({24, 41, 29})), tol, "broadcast b");
    // Two large items: fewer items than threads is split only below the small-item size.
    Tensor a2 = randn({2, 130, 140}, t), b2 = randn({2, 140, 150}, t);
    expect_close(bmm(a2, b2), reference(a2, b2), tol * 4, "two items");
  }
}

TEST(CpuGemm, ZeroInnerDimensionGivesZeros) {
  for (Dtype t : {kFloat32, kFloat64}) {
    Tensor out = bmm(empty({64, 40, 0}, t), empty({64, 0, 30}, t));
    ASSERT_EQ(out.dim(), 3);
    EXPECT_EQ(out.size(0), 64);
    EXPECT_EQ(out.size(1), 40);
    EXPECT_EQ(out.size(2), 30);
    EXPECT_EQ(out.abs().sum().item<double>(), 0.0);
    // addmm's beta scales the input where the product is empty; beta 0 ignores it.
    Tensor in = full({5, 6}, 2.0, t);
    expect_close(addmm(in, empty({5, 0}, t), empty({0, 6}, t), 0.5), std::vector<double>(30, 1.0), 0,
                 "beta 0.5");
    expect_close(addmm(in, empty({5, 0}, t), empty({0, 6}, t), 0), std::vector<double>(30, 0.0), 0, "beta 0");
  }
}

TEST(CpuGemm, TwoThreadsAtOnce) {
  // Each thread's split batches and single products run beside the other's.
  manual_seed(4);
  std::vector<Tensor> as, bs, outs(4);
  for (int i = 0; i < 4; ++i) {
    as.push_back(randn({8, 70, 50}));
    bs.push_back(randn({8, 50, 60}));
  }
  auto work = [&](int first) {
    for (int i = first; i < 4; i += 2) outs[size_t(i)] = bmm(as[size_t(i)], bs[size_t(i)]);
  };
  std::thread t0(work, 0), t1(work, 1);
  t0.join();
  t1.join();
  for (int i = 0; i < 4; ++i)
    expect_close(outs[size_t(i)], reference(as[size_t(i)], bs[size_t(i)]), 1e-4, "thread");
}
