// wick::cdist: values against distance loops in float64 for p = 0, 0.5, 1, 2, 3 and inf,
// batched, unbatched and broadcast, by matrix products (p = 2, many rows) and without,
// gradients against central differences (and 0 where a distance is 0), non-contiguous
// inputs, each device, node names and errors.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../autograd/gradcheck.h"
#include "../nn/nn_test_util.h"
#include "wick/linalg_more.h"
#include "wick/wick.h"

using namespace wick;
using wick::testing::expect_close;
using wick::testing::names;
using TL = std::vector<Tensor>;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// x1 [B, P, M], x2 [B, R, M] -> [B, P, R], one distance at a time
Tensor cdist_ref(const Tensor& x1, const Tensor& x2, double p) {
  const int64_t b = x1.size(0), pn = x1.size(1), r = x2.size(1), m = x1.size(2);
  const std::vector<double> a = x1.contiguous().cpu().to_vector<double>(),
                            c = x2.contiguous().cpu().to_vector<double>();
  std::vector<double> out;
  for (int64_t ib = 0; ib < b; ++ib)
    for (int64_t i = 0; i < pn; ++i)
      for (int64_t j = 0; j < r; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < m; ++k) {
          const double d = std::abs(a[size_t((ib * pn + i) * m + k)] - c[size_t((ib * r + j) * m + k)]);
          if (p == 0) acc += d != 0;
          else if (std::isinf(p)) acc = std::max(acc, d);
          else acc += std::pow(d, p);
        }
        out.push_back(p == 0 || std::isinf(p) ? acc : std::pow(acc, 1.0 / p));
      }
  return tensor(out, TensorOptions(kFloat64)).view({b, pn, r});
}

}  // namespace

class CdistOnDevices : public wick::testing::OnEachDevice<35> {
 protected:
  Tensor rnd(IntArrayRef sizes) const { return randn(sizes, kFloat64).to(dev()); }
};

TEST_P(CdistOnDevices, MatchesDistanceLoops) {
  for (double p : {0.0, 0.5, 1.0, 2.0, 3.0, kInf}) {
    Tensor x1 = rnd({2, 5, 3}), x2 = rnd({2, 4, 3});
    // some equal coordinates, so that p = 0 counts fewer than M
    x2.select(1, 0).copy_(x1.select(1, 1));
    x2.select(2, 2).copy_(x1.select(1, 0).select(1, 2).unsqueeze(1).expand({2, 4}));
    const std::string what = "p=" + std::to_string(p);
    Tensor d = cdist(x1, x2, p);
    EXPECT_EQ(d.device(), dev());
    expect_close(d, cdist_ref(x1, x2, p), 1e-12, 1e-12, what);
    // unbatched [P, M] x [R, M], float32
    Tensor f = cdist(x1[0].to(kFloat32), x2[0].to(kFloat32), p);
    EXPECT_EQ(f.dtype(), kFloat32);
    expect_close(f, cdist_ref(x1[0].unsqueeze(0), x2[0].unsqueeze(0), p)[0], 1e-5, 1e-5, what + " float32");
    // non-contiguous inputs
    Tensor t1 = x1.transpose(1, 2).contiguous().transpose(1, 2),
           t2 = x2.transpose(0, 1).contiguous().transpose(0, 1);
    ASSERT_FALSE(t1.is_contiguous());
    ASSERT_FALSE(t2.is_contiguous());
    expect_close(cdist(t1, t2, p), cdist_ref(x1, x2, p), 1e-12, 1e-12, what + " non-contiguous");
  }
  // the batch dims broadcast: [2, 1, 5, 3] with [3, 4, 3] -> [2, 3, 5, 4]
  Tensor a = rnd({2, 1, 5, 3}), b = rnd({3, 4, 3});
  Tensor d = cdist(a, b, 1.0);
  ASSERT_EQ(d.sizes().vec(), (std::vector<int64_t>{2, 3, 5, 4}));
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      expect_close(d[i][j], cdist_ref(a[i], b[j].unsqueeze(0), 1.0)[0], 1e-12, 1e-12, "broadcast");
}

TEST_P(CdistOnDevices, EuclideanByMatrixProducts) {
  // more than 25 rows: p = 2 goes through matmul, as PyTorch's default compute mode
  Tensor x1 = rnd({2, 30, 4}), x2 = rnd({2, 7, 4});
  expect_close(cdist(x1, x2), cdist_ref(x1, x2, 2.0), 1e-10, 1e-10, "mm");
  for (int64_t mode : {0, 1, 2})
    expect_close(cdist(x1.narrow(1, 0, 5), x2, 2.0, mode), cdist_ref(x1.narrow(1, 0, 5), x2, 2.0), 1e-10,
                 1e-10, "mode " + std::to_string(mode));
  Tensor l1 = x1.detach().requires_grad_(), s1 = x1.narrow(1, 0, 5).detach().requires_grad_();
  EXPECT_EQ(cdist(l1, x2).grad_fn()->name(), "EuclideanDistBackward0");
  EXPECT_EQ(cdist(s1, x2).grad_fn()->name(), "CdistBackward0");
  EXPECT_EQ(cdist(s1, x2, 2.0, 1).grad_fn()->name(), "EuclideanDistBackward0");
  EXPECT_EQ(cdist(l1, x2, 2.0, 2).grad_fn()->name(), "CdistBackward0");
  EXPECT_EQ(cdist(l1, x2, 1.0).grad_fn()->name(), "CdistBackward0");
}

TEST_P(CdistOnDevices, Gradients) {
  for (double p : {1.0, 2.0, 3.0, 0.5, 1.5, kInf}) {
    Tensor x1 = randn({2, 4, 3}, kFloat64).requires_grad_(), x2 = randn({2, 3, 3}, kFloat64).requires_grad_();
    wick::testing::gradcheck([p](const TL& v) { return cdist(v[0], v[1], p); }, {x1, x2}, dev());
  }
  // by matrix products, and broadcast batch dims
  Tensor big = randn({1, 27, 2}, kFloat64).requires_grad_(),
         small = randn({3, 2, 2}, kFloat64).requires_grad_();
  wick::testing::gradcheck([](const TL& v) { return cdist(v[0], v[1]); }, {big, small}, dev());
  // p = 0: a gradient of zeros
  Tensor a = rnd({2, 3}).requires_grad_(), b = rnd({4, 3});
  cdist(a, b, 0.0).sum().backward();
  expect_close(a.grad(), zeros({2, 3}, kFloat64));
}

TEST_P(CdistOnDevices, NoGradientThroughAZeroDistance) {
  for (double p : {1.0, 2.0, 3.0, 0.5, kInf})
    for (int64_t mode : {1, 2}) {
      Tensor x1 = tensor({{1.0, 2.0}, {0.5, -1.0}}, kFloat64).to(dev()).requires_grad_();
      Tensor x2 = tensor({{1.0, 2.0}}, kFloat64).to(dev());
      cdist(x1, x2, p, mode).sum().backward();
      const std::vector<double> g = x1.grad().cpu().to_vector<double>();
      const std::string what = "p=" + std::to_string(p) + " mode " + std::to_string(mode);
      EXPECT_EQ(g[0], 0.0) << what;
      EXPECT_EQ(g[1], 0.0) << what;
      EXPECT_TRUE(std::isfinite(g[2]) && std::isfinite(g[3])) << what;
    }
}

TEST_P(CdistOnDevices, Errors) {
  Tensor a = rnd({2, 3}), b = rnd({4, 3});
  EXPECT_THROW(cdist(a, rnd({4, 2})), ValueError);
  EXPECT_THROW(cdist(rnd({3}), b), ValueError);
  EXPECT_THROW(cdist(a, b, -1.0), ValueError);
  EXPECT_THROW(cdist(a.to(kInt64), b.to(kInt64)), TypeError);
  EXPECT_THROW(cdist(a, b.to(kFloat32)), TypeError);
  EXPECT_THROW(cdist(a, b, 2.0, 3), ValueError);
  EXPECT_THROW(cdist(rnd({2, 2, 3}), rnd({3, 4, 3})), ValueError);  // batch dims 2 and 3
  EXPECT_TRUE(names([&] { cdist(a, rnd({4, 2})); }, "cdist"));
  EXPECT_EQ(wick::testing::error_of([&] {
              cdist(a, rnd({4, 2}));
            }),
            "[cdist] X1 and X2 must have the same number of columns. X1: 3 X2: 2");
  EXPECT_TRUE(names([&] { cdist(rnd({2, 2, 3}), rnd({3, 4, 3})); }, "cdist"));
  // empty sets of points
  EXPECT_EQ(cdist(rnd({0, 3}), b).sizes().vec(), (std::vector<int64_t>{0, 4}));
  expect_close(cdist(rnd({2, 0}), rnd({4, 0})), zeros({2, 4}, kFloat64));
}

WICK_INSTANTIATE_ON_DEVICES(CdistOnDevices);
