// sort, argsort, topk, multinomial, scatter, scatter_add, index_add and index_copy: hand values
// (PyTorch's documented examples), random inputs against references computed here in double
// (a stable sort of each row, loops over the scatter), non-contiguous views, every dtype,
// errors, the distribution of multinomial's samples (chi-square with a fixed seed and a loose
// bound), and on a GPU the CUDA results against the CPU's.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

#include "wick/cuda.h"
#include "wick/ops.h"
#include "wick/random.h"

namespace {

using namespace wick;

constexpr double kNan = NAN, kInf = INFINITY;

const std::vector<Dtype> kAllDtypes = {kBool,    kUInt8,    kInt8,    kInt16,   kInt32,
                                       kInt64,   kFloat16,  kBFloat16, kFloat32, kFloat64};

std::vector<int64_t> longs(const Tensor& t) { return t.cpu().to_vector<int64_t>(); }
std::vector<double> doubles(const Tensor& t) { return t.cpu().to(kFloat64).to_vector<double>(); }

// Bitwise-equal doubles, NaN equal to NaN.
void expect_same(const std::vector<double>& a, const std::vector<double>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(b[i])) EXPECT_TRUE(std::isnan(a[i])) << "at " << i;
    else EXPECT_EQ(a[i], b[i]) << "at " << i;
  }
}

// The indices of a stable sort of each row of x (last dim) compared in double, NaN largest.
std::vector<int64_t> stable_reference(const Tensor& x2d, bool descending) {
  const int64_t rows = x2d.size(0), n = x2d.size(1);
  std::vector<double> v = doubles(x2d.contiguous());
  std::vector<int64_t> out;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<int64_t> idx(static_cast<size_t>(n));
    std::iota(idx.begin(), idx.end(), 0);
    const double* row = v.data() + r * n;
    std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) {
      const double x = row[a], y = row[b];
      if (std::isnan(x) || std::isnan(y)) return descending ? (std::isnan(x) && !std::isnan(y))
                                                            : (!std::isnan(x) && std::isnan(y));
      return descending ? x > y : x < y;
    });
    out.insert(out.end(), idx.begin(), idx.end());
  }
  return out;
}

// A tensor of dtype with repeated values (ties) and, for floats, NaN, -0.0 and infinities.
Tensor sample(IntArrayRef sizes, Dtype dtype) {
  Tensor x = randint(-4, 5, sizes, TensorOptions(kFloat64));
  if (dtype == kBool) return x > 0;
  if (is_floating_point(dtype)) {
    x = x + rand(sizes, TensorOptions(kFloat64)).gt(0.5).to(kFloat64) * 0.5;
    Tensor flat = x.view({-1});
    if (flat.numel() > 6) {
      flat[0].fill_(NAN);
      flat[1].fill_(-0.0);
      flat[2].fill_(INFINITY);
      flat[3].fill_(-INFINITY);
      flat[5].fill_(NAN);
    }
  }
  return x.to(dtype);
}

// ---- sort

TEST(Sort, HandValuesNanLargestTiesInOrder) {
  Tensor x = tensor({3.0, 1.0, 2.0, kNan, -kInf, 1.0, -0.0, 0.0});
  auto [v, i] = sort(x);
  expect_same(doubles(v), {-INFINITY, -0.0, 0.0, 1.0, 1.0, 2.0, 3.0, kNan});
  EXPECT_EQ(longs(i), (std::vector<int64_t>{4, 6, 7, 1, 5, 2, 0, 3}));
  auto [vd, id] = x.sort(0, /*descending=*/true);
  expect_same(doubles(vd), {NAN, 3.0, 2.0, 1.0, 1.0, -0.0, 0.0, -kInf});
  EXPECT_EQ(longs(id), (std::vector<int64_t>{3, 0, 2, 1, 5, 6, 7, 4}));
  EXPECT_EQ(i.dtype(), kInt64);
  EXPECT_EQ(longs(argsort(x, 0, true)), longs(id));
}

TEST(Sort, RandomRowsAgainstStableReferenceEveryDim) {
  manual_seed(3);
  Tensor x = sample({4, 5, 6}, kFloat64);
  for (int64_t d : {0, 1, 2, -1}) {
    for (bool desc : {false, true}) {
      auto [v, i] = sort(x, d, desc, /*stable=*/true);
      ASSERT_EQ(v.sizes().vec(), x.sizes().vec());
      Tensor moved = x.transpose(d, -1).contiguous();
      const int64_t n = moved.size(-1);
      auto want = stable_reference(moved.reshape({-1, n}), desc);
      EXPECT_EQ(longs(i.transpose(d, -1).contiguous()), want) << "dim " << d << " desc " << desc;
      expect_same(doubles(v), doubles(gather(x, d, i)));
    }
  }
}

TEST(Sort, NonContiguousInput) {
  manual_seed(4);
  Tensor base = sample({6, 8}, kFloat32);
  Tensor x = base.t();  // [8, 6], strided
  auto [v, i] = sort(x, 1);
  auto want = stable_reference(x.contiguous(), false);
  EXPECT_EQ(longs(i), want);
  expect_same(doubles(v), doubles(gather(x.contiguous(), 1, i)));
}

TEST(Sort, EveryDtype) {
  manual_seed(5);
  for (Dtype dt : kAllDtypes) {
    SCOPED_TRACE(::testing::Message() << dt);
    Tensor x = sample({3, 17}, dt);
    for (bool desc : {false, true}) {
      auto [v, i] = sort(x, 1, desc);
      EXPECT_EQ(v.dtype(), dt);
      EXPECT_EQ(longs(i), stable_reference(x, desc));
    }
  }
}

TEST(Sort, ZeroDimAndEmpty) {
  auto [v, i] = sort(tensor({2.5}).reshape({}));
  EXPECT_EQ(v.dim(), 0);
  EXPECT_EQ(v.item<double>(), 2.5);
  EXPECT_EQ(i.item<int64_t>(), 0);
  auto [ve, ie] = sort(empty({3, 0}), 1);
  EXPECT_EQ(ve.sizes().vec(), (std::vector<int64_t>{3, 0}));
  EXPECT_EQ(ie.sizes().vec(), (std::vector<int64_t>{3, 0}));
  EXPECT_THROW(sort(ones({2, 3}), 2), IndexError);
}

// ---- topk

TEST(Topk, HandValues) {
  Tensor x = tensor({1.0, 5.0, 3.0, 5.0, kNan, 2.0});
  auto [v, i] = topk(x, 3);
  expect_same(doubles(v), {NAN, 5.0, 5.0});
  EXPECT_EQ(longs(i), (std::vector<int64_t>{4, 1, 3}));
  auto [vs, is] = x.topk(2, 0, /*largest=*/false);
  expect_same(doubles(vs), {1.0, 2.0});
  EXPECT_EQ(longs(is), (std::vector<int64_t>{0, 5}));
}

TEST(Topk, RandomAgainstSortPrefix) {
  manual_seed(6);
  for (Dtype dt : {kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64, kUInt8}) {
    SCOPED_TRACE(::testing::Message() << dt);
    Tensor x = sample({5, 40}, dt).t();  // [40, 5], sorting dim 0 (strided)
    for (bool largest : {true, false}) {
      for (int64_t k : {int64_t(0), int64_t(1), int64_t(7), int64_t(40)}) {
        auto [v, i] = topk(x, k, 0, largest);
        ASSERT_EQ(v.sizes().vec(), (std::vector<int64_t>{k, 5}));
        auto [sv, si] = sort(x, 0, largest);
        EXPECT_EQ(longs(i), longs(si.narrow(0, 0, k)));
        expect_same(doubles(v), doubles(sv.narrow(0, 0, k)));
      }
    }
  }
}

TEST(Topk, Errors) {
  Tensor x = ones({2, 3});
  EXPECT_THROW(topk(x, 4), ValueError);  // PyTorch's RuntimeError
  EXPECT_THROW(topk(x, -1), ValueError);
  EXPECT_THROW(topk(x, 1, 2), IndexError);
  EXPECT_THROW(topk(ones({3}, kBool), 1), TypeError);
  try {
    topk(x, 4);
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "[topk] selected index k out of range");
  }
}

// ---- scatter family: a reference in double

// self with src[i] written (or added) at index along d, for index/src of index's shape.
std::vector<double> scatter_reference(const Tensor& self, int64_t d, const Tensor& index, const Tensor& src, bool add) {
  Tensor out = self.to(kFloat64).contiguous().clone();
  auto o = out.data_ptr<double>();
  Tensor idx = index.contiguous();
  std::vector<int64_t> iv = longs(idx);
  Tensor s = src.to(kFloat64);
  const int64_t nd = idx.dim();
  std::vector<int64_t> c(size_t(nd), 0);
  for (int64_t e = 0; e < idx.numel(); ++e) {
    int64_t rem = e;
    for (int64_t k = nd - 1; k >= 0; --k) {
      c[size_t(k)] = rem % idx.size(k);
      rem /= idx.size(k);
    }
    Tensor sv = s;
    for (int64_t k = 0; k < nd; ++k) sv = sv.select(0, c[size_t(k)]);
    int64_t off = 0;
    for (int64_t k = 0; k < nd; ++k) off += (k == d ? iv[size_t(e)] : c[size_t(k)]) * out.stride(k);
    o[off] = add ? o[off] + sv.item<double>() : sv.item<double>();
  }
  return out.to_vector<double>();
}

TEST(Scatter, DocumentedExamples) {
  Tensor src = arange(1, 11).reshape({2, 5});
  Tensor index = tensor({{0, 1, 2, 0}});
  Tensor r = zeros({3, 5}, src.dtype()).scatter_(0, index, src);
  EXPECT_EQ(longs(r), (std::vector<int64_t>{1, 0, 0, 4, 0, 0, 2, 0, 0, 0, 0, 0, 3, 0, 0}));
  Tensor v = full({2, 4}, 2.0).scatter(1, tensor({{2}, {3}}), 1.23);
  expect_same(doubles(v), doubles(tensor({{2.0f, 2.0f, 1.23f, 2.0f}, {2.0f, 2.0f, 2.0f, 1.23f}})));
  Tensor a = zeros({3, 5}).scatter_add_(0, tensor({{0, 1, 2, 0, 0}}), ones({2, 5}));
  expect_same(doubles(a), {1, 0, 0, 1, 1, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0});
  Tensor a2 = zeros({3, 5}).scatter_add(0, tensor({{0, 1, 2, 0, 0}, {0, 1, 2, 2, 2}}), ones({2, 5}));
  expect_same(doubles(a2), {2, 0, 0, 1, 1, 0, 2, 0, 0, 0, 0, 0, 2, 1, 1});
}

TEST(Scatter, RandomAgainstReferenceNonContiguous) {
  manual_seed(7);
  Tensor self = randn({5, 6}).t();               // [6, 5] strided
  Tensor src = randn({8, 7}).t().narrow(0, 1, 5);  // [5, 8] strided, larger than index
  Tensor index = randint(0, 6, {4, 5});          // dim 0: values < 6; other dims within self
  for (bool add : {false, true}) {
    Tensor r = add ? scatter_add(self, 0, index, src) : scatter(self, 0, index, src);
    std::vector<double> want = scatter_reference(self, 0, index, src, add);
    std::vector<double> got = doubles(r);
    if (add) {
      for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i;
    } else {
      // Repeated indices leave an unspecified winner: compare the positions written once.
      Tensor counts = zeros({6, 5}).scatter_add(0, index, ones({4, 5}));
      std::vector<double> cv = doubles(counts);
      for (size_t i = 0; i < want.size(); ++i)
        if (cv[i] <= 1) {
          EXPECT_EQ(got[i], want[i]) << i;
        }
    }
  }
  // In place on a strided self.
  Tensor base = zeros({5, 6});
  Tensor view = base.t();
  view.scatter_add_(1, randint(0, 5, {6, 3}).remainder(5), ones({6, 3}));
  EXPECT_EQ(base.sum().item<double>(), 18.0);
}

TEST(Scatter, EveryDtypeAddAndCopy) {
  manual_seed(8);
  for (Dtype dt : kAllDtypes) {
    SCOPED_TRACE(::testing::Message() << dt);
    Tensor self = randint(0, 3, {4, 3}).to(dt);
    Tensor src = randint(0, 3, {4, 3}).to(dt);
    Tensor index = tensor({{0, 1, 2}, {3, 3, 0}, {1, 0, 3}, {2, 2, 1}});  // a permutation per column
    std::vector<double> want = scatter_reference(self, 0, index, src, false);
    EXPECT_EQ(doubles(scatter(self, 0, index, src)), want);
    Tensor dup = tensor({{0, 1, 2}, {0, 1, 2}, {0, 1, 2}, {3, 3, 3}});
    std::vector<double> want_add = scatter_reference(self, 0, dup, src, true);
    std::vector<double> got_add = doubles(scatter_add(self, 0, dup, src));
    if (dt == kBool) {
      for (double& w : want_add) w = w != 0;
    }
    EXPECT_EQ(got_add, want_add);
    Tensor src2 = randint(0, 3, {2, 3}).to(dt);
    Tensor c = index_copy(self, 0, tensor({3, 1}), src2);
    std::vector<double> cv = doubles(c), sv = doubles(src2), selfv = doubles(self);
    for (int64_t j = 0; j < 3; ++j) {
      EXPECT_EQ(cv[size_t(9 + j)], sv[size_t(j)]);
      EXPECT_EQ(cv[size_t(3 + j)], sv[size_t(3 + j)]);
      EXPECT_EQ(cv[size_t(j)], selfv[size_t(j)]);
    }
  }
}

TEST(IndexAdd, DocumentedExampleAlphaInt32AndDims) {
  Tensor t = arange(1, 10, 1, kFloat32).reshape({3, 3});
  Tensor r = ones({5, 3}).index_add_(0, tensor({0, 4, 2}), t);
  expect_same(doubles(r), {2, 3, 4, 1, 1, 1, 8, 9, 10, 1, 1, 1, 5, 6, 7});
  Tensor r2 = index_add(ones({5, 3}), 0, tensor({0, 4, 2}).to(kInt32), t, 2);
  expect_same(doubles(r2), {3, 5, 7, 1, 1, 1, 15, 17, 19, 1, 1, 1, 9, 11, 13});
  // dim 1 with a repeated index: both slices add.
  Tensor r3 = zeros({2, 3}).index_add(1, tensor({2, 2}), ones({2, 2}));
  expect_same(doubles(r3), {0, 0, 2, 0, 0, 2});
  // Against index_select's adjoint on random data: sum(index_add(0, i, s) * w) = sum(s * w[i]).
  manual_seed(9);
  Tensor s = randn({6, 4}, kFloat64), w = randn({3, 4}, kFloat64);
  Tensor i = randint(0, 3, {6});
  double lhs = (index_add(zeros({3, 4}, kFloat64), 0, i, s) * w).sum().item<double>();
  double rhs = (s * index_select(w, 0, i)).sum().item<double>();
  EXPECT_NEAR(lhs, rhs, 1e-12);
}

TEST(IndexCopy, DocumentedExample) {
  Tensor t = arange(1, 10, 1, kFloat32).reshape({3, 3});
  Tensor r = zeros({5, 3}).index_copy_(0, tensor({0, 4, 2}), t);
  expect_same(doubles(r), {1, 2, 3, 0, 0, 0, 7, 8, 9, 0, 0, 0, 4, 5, 6});
  Tensor c = zeros({2, 4}).index_copy(1, tensor({3, 0}), tensor({{1.0f, 2.0f}, {3.0f, 4.0f}}));
  expect_same(doubles(c), {2, 0, 0, 1, 4, 0, 0, 3});
}

TEST(Scatter, ErrorsChangeNothing) {
  Tensor x = zeros({3, 4});
  EXPECT_THROW(x.scatter_(0, tensor({{0, 3}}), ones({1, 2})), IndexError);
  EXPECT_THROW(x.scatter_(0, tensor({{0, -1}}), ones({1, 2})), IndexError);
  EXPECT_EQ(x.abs().sum().item<double>(), 0.0);
  EXPECT_THROW(x.scatter_(0, tensor({{0, 1}}).to(kInt32), ones({1, 2})), TypeError);
  EXPECT_THROW(x.scatter_(0, tensor({{0, 1}}), ones({1, 2}, kFloat64)), TypeError);
  EXPECT_THROW(x.scatter_(0, tensor({0, 1}), ones({2})), ValueError);
  EXPECT_THROW(x.scatter_(0, tensor({{0, 1, 0, 1, 2}}), ones({1, 5})), ValueError);
  EXPECT_THROW(x.scatter_(0, tensor({{0, 1, 2}}), ones({1, 2})), ValueError);
  EXPECT_THROW(x.scatter_(2, tensor({{0}}), ones({1, 1})), IndexError);
  EXPECT_THROW(x.index_add_(0, tensor({0, 3}), ones({2, 4})), IndexError);
  EXPECT_THROW(x.index_add_(0, tensor({0}), ones({2, 4})), IndexError);
  EXPECT_THROW(x.index_add_(0, tensor({0, 1}), ones({2, 5})), ValueError);
  EXPECT_THROW(x.index_add_(0, tensor({{0, 1}}), ones({2, 4})), IndexError);
  EXPECT_THROW(x.index_add_(0, tensor({0, 1}), ones({2, 4}, kFloat64)), TypeError);
  EXPECT_THROW(x.index_copy_(0, tensor({0, 1}).to(kInt32), ones({2, 4})), TypeError);
  EXPECT_THROW(x.index_copy_(0, tensor({0, 5}), ones({2, 4})), IndexError);
  EXPECT_EQ(x.abs().sum().item<double>(), 0.0);
  try {
    x.scatter_(0, tensor({{0, 3}}), ones({1, 2}));
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "[scatter_] index 3 is out of bounds for dimension with size 3");
  }
}

TEST(Scatter, ZeroDim) {
  Tensor x = tensor({1.0f}).reshape({});
  Tensor r = scatter(x, 0, tensor({int64_t(0)}).reshape({}), tensor({5.0f}).reshape({}));
  EXPECT_EQ(r.dim(), 0);
  EXPECT_EQ(r.item<float>(), 5.0f);
  Tensor a = index_add(x, 0, tensor({int64_t(0)}), tensor({2.0f}).reshape({}));
  EXPECT_EQ(a.item<float>(), 3.0f);
}

// ---- multinomial

double chi_square(const std::vector<int64_t>& samples, const std::vector<double>& p) {
  std::vector<double> counts(p.size(), 0);
  for (int64_t s : samples) counts[size_t(s)] += 1;
  double chi = 0;
  const double n = double(samples.size());
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] > 0) {
      chi += (counts[i] - n * p[i]) * (counts[i] - n * p[i]) / (n * p[i]);
    } else {
      EXPECT_EQ(counts[i], 0) << "category " << i << " has no weight";
    }
  return chi;
}

TEST(Multinomial, WithReplacementDistribution) {
  manual_seed(11);
  // Unnormalized weights; category 2 has none. df = 3: P(chi2 > 30) is about 1e-6.
  Tensor w = tensor({1.0, 2.0, 0.0, 3.0, 4.0});
  Tensor s = multinomial(w, 20000, true);
  ASSERT_EQ(s.sizes().vec(), (std::vector<int64_t>{20000}));
  EXPECT_EQ(s.dtype(), kInt64);
  EXPECT_LT(chi_square(longs(s), {0.1, 0.2, 0.0, 0.3, 0.4}), 30.0);
  // 2-D: each row its own distribution.
  Tensor w2 = tensor({{0.0, 1.0, 0.0}, {0.5, 0.0, 0.5}});
  std::vector<int64_t> v = longs(w2.multinomial(1000, true));
  for (int64_t j = 0; j < 1000; ++j) {
    EXPECT_EQ(v[size_t(j)], 1);
    EXPECT_NE(v[size_t(1000 + j)], 1);
  }
}

TEST(Multinomial, WithoutReplacement) {
  manual_seed(12);
  Tensor w = tensor({1.0f, 2.0f, 0.0f, 3.0f, 4.0f}).expand({4000, 5}).contiguous();
  Tensor s = multinomial(w, 4);
  ASSERT_EQ(s.sizes().vec(), (std::vector<int64_t>{4000, 4}));
  std::vector<int64_t> v = longs(s), first;
  for (int64_t r = 0; r < 4000; ++r) {
    std::vector<int64_t> row(v.begin() + r * 4, v.begin() + r * 4 + 4);
    std::sort(row.begin(), row.end());
    EXPECT_EQ(row, (std::vector<int64_t>{0, 1, 3, 4}));  // the zero-weight category never comes
    first.push_back(v[size_t(r * 4)]);
  }
  // The first draw is proportional to the weights.
  EXPECT_LT(chi_square(first, {0.1, 0.2, 0.0, 0.3, 0.4}), 30.0);
  // One sample with or without replacement: the same race.
  EXPECT_LT(chi_square(longs(multinomial(w, 1).view({-1})), {0.1, 0.2, 0.0, 0.3, 0.4}), 30.0);
}

TEST(Multinomial, SameSeedSameSamplesAndDtypes) {
  for (Dtype dt : {kFloat16, kBFloat16, kFloat32, kFloat64}) {
    Tensor w = tensor({0.2, 0.3, 0.5}).to(dt);
    manual_seed(13);
    auto a = longs(multinomial(w, 50, true));
    manual_seed(13);
    auto b = longs(multinomial(w, 50, true));
    EXPECT_EQ(a, b);
  }
}

TEST(Multinomial, Errors) {
  EXPECT_THROW(multinomial(tensor({0.5, -0.1}), 1), ValueError);
  EXPECT_THROW(multinomial(tensor({0.5, kInf}), 1, true), ValueError);
  EXPECT_THROW(multinomial(tensor({0.5, kNan}), 1), ValueError);
  EXPECT_THROW(multinomial(tensor({{0.5, 0.5}, {0.0, 0.0}}), 1, true), ValueError);
  EXPECT_THROW(multinomial(tensor({0.5, 0.5}), 3), ValueError);
  EXPECT_THROW(multinomial(tensor({0.5, 0.5}), 0, true), ValueError);
  EXPECT_THROW(multinomial(tensor({1, 2}), 1), TypeError);
  EXPECT_THROW(multinomial(ones({2, 2, 2}), 1), ValueError);
  try {
    multinomial(tensor({0.5, -0.1}), 1);
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "[multinomial] probability tensor contains either `inf`, `nan` or element < 0");
  }
  EXPECT_NO_THROW(multinomial(tensor({0.5, 0.5}), 3, true));
}

// ---- CUDA against the CPU

class SortScatterCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  }
};

TEST_F(SortScatterCuda, SortAndTopkMatchCpu) {
  manual_seed(21);
  for (Dtype dt : kAllDtypes) {
    SCOPED_TRACE(::testing::Message() << dt);
    Tensor x = sample({7, 300}, dt);
    Tensor xc = x.to("cuda");
    for (bool desc : {false, true}) {
      auto [v, i] = sort(x, 1, desc);
      auto [vc, ic] = sort(xc, 1, desc);
      EXPECT_EQ(longs(ic), longs(i));
      expect_same(doubles(vc), doubles(v));
      auto [tv, ti] = sort(x.t(), 0, desc);
      EXPECT_EQ(longs(std::get<1>(sort(xc.t(), 0, desc))), longs(ti));
      if (dt != kBool) {
        auto [kv, ki] = topk(x, 9, 1, desc);
        auto [kvc, kic] = topk(xc, 9, 1, desc);
        EXPECT_EQ(longs(kic), longs(ki));
        expect_same(doubles(kvc), doubles(kv));
      }
    }
  }
}

TEST_F(SortScatterCuda, ScatterFamilyMatchesCpu) {
  manual_seed(22);
  for (Dtype dt : kAllDtypes) {
    SCOPED_TRACE(::testing::Message() << dt);
    Tensor self = randint(0, 3, {6, 5}).to(dt).t();  // strided
    Tensor src = randint(0, 3, {5, 8}).to(dt);
    Tensor index = randint(0, 5, {4, 6});
    Tensor perm = tensor({{0, 1, 2, 3, 4, 0}, {1, 2, 3, 4, 0, 1}});
    Device c("cuda");
    EXPECT_EQ(doubles(scatter_add(self.to(c), 1, index.to(c), src.to(c))), doubles(scatter_add(self, 1, index, src)));
    EXPECT_EQ(doubles(scatter(self.to(c), 0, perm.to(c), src.to(c))), doubles(scatter(self, 0, perm, src)));
    EXPECT_EQ(doubles(scatter(self.to(c), 0, perm.to(c), 1)), doubles(scatter(self, 0, perm, 1)));
    Tensor idx = tensor({4, 0, 4});
    Tensor source = randint(0, 3, {5, 3}).to(dt);
    EXPECT_EQ(doubles(index_add(self.to(c), 1, idx.to(c), source.to(c))), doubles(index_add(self, 1, idx, source)));
    Tensor cidx = tensor({4, 0, 2});
    EXPECT_EQ(doubles(index_copy(self.to(c), 1, cidx.to(c), source.to(c))), doubles(index_copy(self, 1, cidx, source)));
  }
  Tensor x = zeros({3}, Device("cuda"));
  EXPECT_THROW(x.scatter_(0, tensor({3}).to("cuda"), ones({1}, Device("cuda"))), IndexError);
  EXPECT_EQ(x.abs().sum().item<double>(), 0.0);
  // Many float adds into few places (atomics): the sum is right within rounding.
  Tensor many = ones({100000}, Device("cuda"));
  Tensor tgt = zeros({4}, Device("cuda")).scatter_add(0, arange(100000, TensorOptions(kInt64).device(Device("cuda"))).remainder(4), many);
  expect_same(doubles(tgt), {25000, 25000, 25000, 25000});
}

TEST_F(SortScatterCuda, MultinomialSameSamplesAsCpu) {
  for (Dtype dt : {kFloat16, kBFloat16, kFloat32, kFloat64}) {
    SCOPED_TRACE(::testing::Message() << dt);
    manual_seed(23);
    Tensor w = rand({6, 50}).to(dt);
    for (bool repl : {true, false}) {
      manual_seed(31);
      auto a = longs(multinomial(w, 20, repl));
      manual_seed(31);
      auto b = longs(multinomial(w.to("cuda"), 20, repl));
      EXPECT_EQ(a, b);
    }
  }
}

}  // namespace
