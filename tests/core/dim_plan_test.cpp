// The "along a dim" planner (src/core/dim_plan.h): which layouts are read in place and which
// are copied, the [outer, n, inner] it gives, the result's shape, and its errors. Then every
// reduction over several dims and layouts that take each of the planner's paths, on every
// device, against float64 references computed with plain loops over the input's values.
#include "core/dim_plan.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "wick/wick.h"

using namespace wick;
using wick::detail::DimPlan;
using wick::detail::plan_along;
using wick::detail::plan_dims;
using wick::detail::PlanMode;

namespace {

using Shape = std::vector<int64_t>;

std::string dtype_name(Dtype t) {
  std::ostringstream os;
  os << t;
  return os.str();
}

Shape sizes_of(const DimPlan& p) { return {p.outer, p.n, p.inner}; }
Shape vec(IntArrayRef a) { return Shape(a.begin(), a.end()); }

Tensor arange_f(Shape sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return arange(n, TensorOptions(kFloat32)).view(sizes);
}

// The plan's input holds t's values over [outer, n, inner]: in[o, r, j] is t's element whose
// kept index is column o * inner + j and whose reduced index is r (both in row-major order).
void expect_plan_reads(const Tensor& t, const DimPlan& p, const std::vector<int64_t>& reduced) {
  const auto tv = t.contiguous().to_vector<float>();
  const auto iv = p.in.contiguous().to_vector<float>();
  const int64_t nd = t.dim();
  ASSERT_EQ(int64_t(iv.size()), p.outer * p.n * p.inner);
  std::vector<int64_t> idx(size_t(nd), 0);
  std::vector<int64_t> next_r(size_t(p.outer * p.inner), 0);
  for (size_t e = 0; e < tv.size(); ++e) {
    int64_t col = 0, r = 0;
    for (int64_t d = 0; d < nd; ++d) {
      if (std::find(reduced.begin(), reduced.end(), d) != reduced.end()) r = r * t.size(d) + idx[size_t(d)];
      else col = col * t.size(d) + idx[size_t(d)];
    }
    const int64_t o = col / p.inner, j = col % p.inner;
    EXPECT_EQ(iv[size_t((o * p.n + r) * p.inner + j)], tv[e]) << "element " << e;
    for (int64_t d = nd - 1; d >= 0; --d) {
      if (++idx[size_t(d)] < t.size(d)) break;
      idx[size_t(d)] = 0;
    }
  }
}

}  // namespace

TEST(DimPlan, ContiguousAdjacentDimsAreViews) {
  Tensor t = arange_f({2, 3, 4});
  DimPlan p = plan_dims(t, {1}, false, "sum");
  EXPECT_EQ(p.mode, PlanMode::View);
  EXPECT_EQ(sizes_of(p), (Shape{2, 3, 4}));
  EXPECT_EQ(vec(p.out_sizes), (Shape{2, 4}));
  EXPECT_EQ(p.in.data_ptr(), t.data_ptr());
  expect_plan_reads(t, p, {1});

  p = plan_dims(t, {1}, true, "sum");
  EXPECT_EQ(vec(p.out_sizes), (Shape{2, 1, 4}));

  p = plan_dims(t, {0, 1}, false, "sum");
  EXPECT_EQ(p.mode, PlanMode::View);
  EXPECT_EQ(sizes_of(p), (Shape{1, 6, 4}));
  EXPECT_EQ(vec(p.out_sizes), (Shape{4}));
  expect_plan_reads(t, p, {0, 1});

  p = plan_dims(t, {2}, false, "sum");
  EXPECT_EQ(sizes_of(p), (Shape{6, 4, 1}));
  EXPECT_EQ(p.mode, PlanMode::View);
}

TEST(DimPlan, NegativeDimsAndOrder) {
  Tensor t = arange_f({2, 3, 4});
  DimPlan a = plan_dims(t, {-1, -2}, true, "sum"), b = plan_dims(t, {1, 2}, true, "sum");
  EXPECT_EQ(sizes_of(a), (Shape{2, 12, 1}));
  EXPECT_EQ(sizes_of(a), sizes_of(b));
  EXPECT_EQ(vec(a.out_sizes), (Shape{2, 1, 1}));
  DimPlan c = plan_along(t, -3, false, "max");
  EXPECT_EQ(sizes_of(c), (Shape{1, 2, 12}));
  EXPECT_EQ(vec(c.out_sizes), (Shape{3, 4}));
}

TEST(DimPlan, EmptyDimsReduceEverything) {
  Tensor t = arange_f({2, 3, 4});
  DimPlan p = plan_dims(t, {}, false, "sum");
  EXPECT_EQ(p.mode, PlanMode::View);
  EXPECT_EQ(sizes_of(p), (Shape{1, 24, 1}));
  EXPECT_TRUE(p.out_sizes.empty());
  p = plan_dims(t, {}, true, "sum");
  EXPECT_EQ(vec(p.out_sizes), (Shape{1, 1, 1}));
  // A 0-dim tensor: one element, its dim named as 0 or -1.
  Tensor s = full({}, 5.0);
  for (Shape dims : {Shape{}, Shape{0}, Shape{-1}}) {
    for (bool keepdim : {false, true}) {
      p = plan_dims(s, dims, keepdim, "sum");
      EXPECT_EQ(sizes_of(p), (Shape{1, 1, 1}));
      EXPECT_TRUE(p.out_sizes.empty());
    }
  }
  p = plan_along(s, -1, true, "max");
  EXPECT_EQ(sizes_of(p), (Shape{1, 1, 1}));
}

TEST(DimPlan, SizeOneAndSizeZeroDims) {
  // A kept dim of size 1 between reduced ones does not break adjacency.
  Tensor t = arange_f({2, 1, 4});
  DimPlan p = plan_dims(t, {0, 2}, false, "sum");
  EXPECT_EQ(p.mode, PlanMode::View);
  EXPECT_EQ(sizes_of(p), (Shape{1, 8, 1}));
  EXPECT_EQ(vec(p.out_sizes), (Shape{1}));
  expect_plan_reads(t, p, {0, 2});
  // Reducing a size-1 dim only.
  p = plan_dims(t, {1}, true, "sum");
  EXPECT_EQ(p.n, 1);
  EXPECT_EQ(p.outer * p.inner, 8);
  EXPECT_EQ(vec(p.out_sizes), (Shape{2, 1, 4}));
  expect_plan_reads(t, p, {1});

  Tensor z = zeros({3, 0, 2});
  p = plan_dims(z, {1}, false, "sum");
  EXPECT_EQ(sizes_of(p), (Shape{3, 0, 2}));
  EXPECT_EQ(vec(p.out_sizes), (Shape{3, 2}));
  p = plan_dims(z, {0, 2}, true, "sum");
  EXPECT_EQ(p.n, 6);
  EXPECT_EQ(p.outer * p.inner, 0);
  EXPECT_EQ(vec(p.out_sizes), (Shape{1, 0, 1}));
}

TEST(DimPlan, NonAdjacentDimsOfContiguousAreCopied) {
  Tensor t = arange_f({2, 3, 4});
  DimPlan p = plan_dims(t, {0, 2}, false, "sum");
  EXPECT_EQ(p.mode, PlanMode::Copy);
  EXPECT_EQ(sizes_of(p), (Shape{3, 8, 1}));
  EXPECT_EQ(vec(p.out_sizes), (Shape{3}));
  EXPECT_NE(p.in.data_ptr(), t.data_ptr());
  expect_plan_reads(t, p, {0, 2});
}

TEST(DimPlan, PermutedLayoutsAreViewsWhenTheyCanBe) {
  // x.t(): reducing dim 0 reads x's rows (kept, reduced order), dim 1 x's columns.
  Tensor x = arange_f({4, 3});
  Tensor t = x.t();
  DimPlan p = plan_along(t, 0, false, "max");
  EXPECT_EQ(p.mode, PlanMode::View);
  EXPECT_EQ(sizes_of(p), (Shape{4, 3, 1}));
  EXPECT_EQ(p.in.data_ptr(), x.data_ptr());
  expect_plan_reads(t, p, {0});
  p = plan_along(t, 1, true, "max");
  EXPECT_EQ(p.mode, PlanMode::View);
  EXPECT_EQ(sizes_of(p), (Shape{1, 4, 3}));
  EXPECT_EQ(vec(p.out_sizes), (Shape{3, 1}));
  expect_plan_reads(t, p, {1});

  // Three dims: (kept, reduced) contiguous, then (reduced, kept), then neither.
  Tensor y = arange_f({5, 6, 4});
  Tensor u = y.permute({2, 0, 1});  // [4, 5, 6], strides (1, 24, 4)
  p = plan_dims(u, {0}, false, "sum");
  EXPECT_EQ(p.mode, PlanMode::View);
  EXPECT_EQ(sizes_of(p), (Shape{30, 4, 1}));
  expect_plan_reads(u, p, {0});
  p = plan_dims(u, {1, 2}, false, "sum");
  EXPECT_EQ(p.mode, PlanMode::View);
  EXPECT_EQ(sizes_of(p), (Shape{1, 30, 4}));
  expect_plan_reads(u, p, {1, 2});
  p = plan_dims(u, {1}, false, "sum");
  EXPECT_EQ(p.mode, PlanMode::Copy);
  EXPECT_EQ(sizes_of(p), (Shape{24, 5, 1}));
  expect_plan_reads(u, p, {1});
}

TEST(DimPlan, StridedAndBroadcastInputsAreCopied) {
  Tensor x = arange_f({4, 6});
  Tensor s = x.slice(1, 0, 6, 2);  // [4, 3], strides (6, 2)
  DimPlan p = plan_dims(s, {1}, false, "sum");
  EXPECT_EQ(p.mode, PlanMode::Copy);
  EXPECT_EQ(sizes_of(p), (Shape{4, 3, 1}));
  expect_plan_reads(s, p, {1});
  Tensor b = arange_f({1, 5}).expand({3, 5});
  p = plan_dims(b, {0}, false, "sum");
  EXPECT_EQ(p.mode, PlanMode::Copy);
  EXPECT_EQ(sizes_of(p), (Shape{5, 3, 1}));
  expect_plan_reads(b, p, {0});
}

TEST(DimPlan, InOrderKeepsTheDimOrder) {
  Tensor t = arange_f({4, 3}).t();  // [3, 4]
  DimPlan p = plan_along(t, 0, true, "softmax", /*in_order=*/true);
  EXPECT_EQ(p.mode, PlanMode::Copy);
  EXPECT_EQ(sizes_of(p), (Shape{1, 3, 4}));
  expect_plan_reads(t, p, {0});
  Tensor c = arange_f({2, 3, 4});
  p = plan_along(c, 1, true, "softmax", true);
  EXPECT_EQ(p.mode, PlanMode::View);
  EXPECT_EQ(sizes_of(p), (Shape{2, 3, 4}));
}

TEST(DimPlan, BadDimsThrow) {
  Tensor t = arange_f({2, 3, 4});
  EXPECT_THROW(plan_dims(t, {3}, false, "sum"), IndexError);
  EXPECT_THROW(plan_dims(t, {-4}, false, "sum"), IndexError);
  EXPECT_THROW(plan_along(t, 5, false, "max"), IndexError);
  try {
    plan_dims(t, {1, -2}, false, "sum");
    ADD_FAILURE() << "no throw";
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[sum] dim 1 appears multiple times", 0), 0u) << e.what();
  }
  EXPECT_THROW(plan_dims(full({}, 1.0), {0, -1}, false, "sum"), ValueError);
  EXPECT_THROW(plan_dims(full({}, 1.0), {1}, false, "sum"), IndexError);
}

// ---- values of every reduction, on every device

namespace {

std::vector<Device> devices() {
  std::vector<Device> d{Device("cpu")};
  if (cuda::is_available()) d.push_back(Device("cuda"));
  return d;
}

// The float64 values of t's elements grouped by result element: groups[c] holds the reduced
// elements of result column c in row-major order of the reduced dims.
std::vector<std::vector<double>> groups_of(const Tensor& t, const std::vector<int64_t>& dims) {
  const auto v = t.cpu().to(kFloat64).contiguous().to_vector<double>();
  const int64_t nd = t.dim();
  std::vector<bool> red(size_t(nd), dims.empty());
  for (int64_t d : dims) red[size_t(d < 0 ? d + nd : d)] = true;
  int64_t cols = 1;
  for (int64_t d = 0; d < nd; ++d)
    if (!red[size_t(d)]) cols *= t.size(d);
  std::vector<std::vector<double>> g(static_cast<size_t>(cols));
  std::vector<int64_t> idx(size_t(nd), 0);
  for (double x : v) {
    int64_t c = 0;
    for (int64_t d = 0; d < nd; ++d)
      if (!red[size_t(d)]) c = c * t.size(d) + idx[size_t(d)];
    g[size_t(c)].push_back(x);
    for (int64_t d = nd - 1; d >= 0; --d) {
      if (++idx[size_t(d)] < t.size(d)) break;
      idx[size_t(d)] = 0;
    }
  }
  return g;
}

double ref_sum(const std::vector<double>& g) {
  double s = 0;
  for (double x : g) s += x;
  return s;
}
double ref_var(const std::vector<double>& g, double correction) {
  const double m = ref_sum(g) / double(g.size());
  double s = 0;
  for (double x : g) s += (x - m) * (x - m);
  return s / std::max(double(g.size()) - correction, 0.0);
}
double ref_norm(const std::vector<double>& g, double p) {
  if (std::isinf(p)) {
    double m = 0;
    for (double x : g) m = std::max(m, std::abs(x));
    return m;
  }
  double s = 0;
  for (double x : g) s += std::pow(std::abs(x), p);
  return std::pow(s, 1 / p);
}
int64_t ref_arg(const std::vector<double>& g, bool is_max) {
  int64_t best = 0;
  for (size_t i = 1; i < g.size(); ++i)
    if (is_max ? g[i] > g[size_t(best)] : g[i] < g[size_t(best)]) best = int64_t(i);
  return best;
}

void expect_values(const Tensor& got, const std::vector<double>& want, double tol, const std::string& what) {
  const auto g = got.cpu().to(kFloat64).contiguous().to_vector<double>();
  ASSERT_EQ(g.size(), want.size()) << what;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(want[i])) EXPECT_TRUE(std::isnan(g[i])) << what << " at " << i;
    else
      EXPECT_LE(std::abs(g[i] - want[i]), tol * std::max(1.0, std::abs(want[i])))
          << what << " at " << i << ": got " << g[i] << ", want " << want[i];
  }
}

// Inputs whose layouts take each of the planner's paths: contiguous, transposed, permuted,
// sliced with a step, broadcast.
std::vector<std::pair<std::string, Tensor>> layouts(Dtype t, Device dev, std::mt19937& rng, double lo,
                                                    double hi) {
  auto rnd = [&](Shape s) {
    int64_t n = 1;
    for (int64_t x : s) n *= x;
    std::vector<double> v(static_cast<size_t>(n));
    std::uniform_real_distribution<double> u(lo, hi);
    for (auto& x : v) x = is_floating_point(t) ? u(rng) : std::floor(u(rng));
    return from_blob(v.data(), s, kFloat64).clone().to(t).to(dev);
  };
  return {
      {"contiguous", rnd({4, 5, 6})},
      {"transposed", rnd({5, 4, 6}).transpose(0, 1)},
      {"permuted", rnd({5, 6, 4}).permute({2, 0, 1})},
      {"sliced", rnd({4, 10, 6}).slice(1, 1, 10, 2)},
      {"broadcast", rnd({4, 1, 6}).expand({4, 5, 6})},
      {"long columns", rnd({300, 2, 70})},
  };
}

const std::vector<Shape> kDimSets = {{0}, {1}, {2}, {-1}, {0, 1}, {1, 2}, {0, 2}, {2, 0}, {0, 1, 2}, {}};

}  // namespace

TEST(DimPlanValues, SumMeanVarStdNormOverSeveralDims) {
  std::mt19937 rng(7);
  for (Device dev : devices()) {
    for (Dtype t : {kFloat32, kFloat64}) {
      const double tol = t == kFloat32 ? 2e-5 : 1e-12;
      for (auto& [name, x] : layouts(t, dev, rng, -1, 1)) {
        for (const Shape& dims : kDimSets) {
          for (bool keepdim : {false, true}) {
            const std::string what = dev.str() + " " + std::string(name) + " " + dtype_name(t) + " dims " +
                                     ::testing::PrintToString(dims) + (keepdim ? " keepdim" : "");
            const auto g = groups_of(x, dims);
            std::vector<double> s, m, v, sd, n2, n1, n3, ninf;
            for (auto& grp : g) {
              s.push_back(ref_sum(grp));
              m.push_back(ref_sum(grp) / double(grp.size()));
              v.push_back(ref_var(grp, 1));
              sd.push_back(std::sqrt(ref_var(grp, 0)));
              n2.push_back(ref_norm(grp, 2));
              n1.push_back(ref_norm(grp, 1));
              n3.push_back(ref_norm(grp, 3));
              ninf.push_back(ref_norm(grp, INFINITY));
            }
            Tensor got = x.sum(dims, keepdim);
            Shape want_shape;
            for (int64_t d = 0; d < x.dim(); ++d) {
              bool r = dims.empty();
              for (int64_t e : dims) r |= (e < 0 ? e + x.dim() : e) == d;
              if (!r) want_shape.push_back(x.size(d));
              else if (keepdim) want_shape.push_back(1);
            }
            EXPECT_EQ(vec(got.sizes()), want_shape) << what;
            EXPECT_TRUE(got.is_contiguous()) << what;
            expect_values(got, s, tol * 10, "sum " + what);
            expect_values(x.mean(dims, keepdim), m, tol, "mean " + what);
            expect_values(var(x, dims, true, keepdim), v, tol * 10, "var " + what);
            expect_values(wick::std(x, dims, 0.0, keepdim), sd, tol * 10, "std " + what);
            expect_values(norm(x, 2, dims, keepdim), n2, tol * 10, "norm 2 " + what);
            expect_values(norm(x, 1, dims, keepdim), n1, tol * 10, "norm 1 " + what);
            expect_values(norm(x, 3, dims, keepdim), n3, tol * 10, "norm 3 " + what);
            expect_values(norm(x, INFINITY, dims, keepdim), ninf, tol, "norm inf " + what);
          }
        }
      }
    }
    // Integers sum exactly in int64.
    for (auto& [name, x] : layouts(kInt32, dev, rng, -50, 50)) {
      for (const Shape& dims : kDimSets) {
        std::vector<double> s;
        for (auto& grp : groups_of(x, dims)) s.push_back(ref_sum(grp));
        Tensor got = x.sum(dims);
        EXPECT_EQ(got.dtype(), kInt64);
        expect_values(got, s, 0, dev.str() + " int32 sum " + name);
      }
    }
  }
}

TEST(DimPlanValues, MaxMinArgmaxArgminAlongEachDim) {
  std::mt19937 rng(8);
  for (Device dev : devices()) {
    // Integers from a small range: many ties, where the first index must win.
    for (Dtype t : {kFloat32, kFloat64, kInt32}) {
      for (auto& [name, x] : layouts(t, dev, rng, t == kInt32 ? 0 : -1, t == kInt32 ? 4 : 1)) {
        for (int64_t dim : {0, 1, 2, -1}) {
          for (bool keepdim : {false, true}) {
            const std::string what = dev.str() + " " + std::string(name) + " " + dtype_name(t) + " dim " +
                                     std::to_string(dim) + (keepdim ? " keepdim" : "");
            std::vector<double> mx, mn, imx, imn;
            for (auto& grp : groups_of(x, {dim})) {
              imx.push_back(double(ref_arg(grp, true)));
              imn.push_back(double(ref_arg(grp, false)));
              mx.push_back(grp[size_t(imx.back())]);
              mn.push_back(grp[size_t(imn.back())]);
            }
            auto [v1, i1] = max(x, dim, keepdim);
            auto [v2, i2] = min(x, dim, keepdim);
            expect_values(v1, mx, 0, "max " + what);
            expect_values(i1, imx, 0, "max indices " + what);
            expect_values(v2, mn, 0, "min " + what);
            expect_values(i2, imn, 0, "min indices " + what);
            expect_values(argmax(x, dim, keepdim), imx, 0, "argmax " + what);
            expect_values(argmin(x, dim, keepdim), imn, 0, "argmin " + what);
          }
        }
        // Over every element, counted in row-major order.
        const auto all = groups_of(x, {});
        expect_values(argmax(x), {double(ref_arg(all[0], true))}, 0, dev.str() + " argmax all " + name);
        expect_values(argmin(x), {double(ref_arg(all[0], false))}, 0, dev.str() + " argmin all " + name);
        expect_values(x.max(), {all[0][size_t(ref_arg(all[0], true))]}, 0, dev.str() + " max all " + name);
      }
    }
  }
}

TEST(DimPlanValues, EmptyAndSizeOneDims) {
  for (Device dev : devices()) {
    const std::string d = dev.str();
    Tensor z = zeros({3, 0, 2}, TensorOptions(kFloat32).device(dev));
    expect_values(z.sum({1}), std::vector<double>(6, 0.0), 0, d + " sum over size 0");
    expect_values(z.mean({1}), std::vector<double>(6, NAN), 0, d + " mean over size 0");
    expect_values(var(z, {1}), std::vector<double>(6, NAN), 0, d + " var over size 0");
    expect_values(norm(z, 2, {1}), std::vector<double>(6, 0.0), 0, d + " norm over size 0");
    EXPECT_EQ(vec(z.sum({0, 2}, true).sizes()), (Shape{1, 0, 1})) << d;
    EXPECT_EQ(vec(std::get<0>(max(z, 0)).sizes()), (Shape{0, 2})) << d;
    EXPECT_THROW(max(z, 1), IndexError) << d;
    Tensor o = arange(6, TensorOptions(kFloat64).device(dev)).view({2, 1, 3});
    expect_values(o.sum({1}), {0, 1, 2, 3, 4, 5}, 0, d + " sum over size 1");
    expect_values(std::get<1>(max(o, 1)), std::vector<double>(6, 0.0), 0, d + " argmax over size 1");
    expect_values(o.sum({0, 2}), {15}, 0, d + " sum around size 1");
  }
}

TEST(DimPlanValues, SoftmaxOfPermutedInputIsContiguous) {
  for (Device dev : devices()) {
    Tensor x = arange(12, TensorOptions(kFloat64).device(dev)).view({4, 3}).t();  // [3, 4]
    for (int64_t dim : {0, 1}) {
      Tensor got = softmax(x, dim);
      EXPECT_TRUE(got.is_contiguous());
      const auto xv = x.cpu().contiguous().to_vector<double>();
      std::vector<double> want(12);
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 4; ++j) {
          double s = 0;
          for (int64_t k = 0; k < (dim == 0 ? 3 : 4); ++k)
            s += std::exp(dim == 0 ? xv[size_t(k * 4 + j)] : xv[size_t(i * 4 + k)]);
          want[size_t(i * 4 + j)] = std::exp(xv[size_t(i * 4 + j)]) / s;
        }
      expect_values(got, want, 1e-12, dev.str() + " softmax dim " + std::to_string(dim));
    }
  }
}
