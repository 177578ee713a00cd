// unique, unique_consecutive and LibTorch's spellings of them (_unique, _unique2, unique_dim,
// unique_dim_consecutive): values, inverse and counts against references computed here on the
// host (a std::map of the values or of the slices, a loop over runs), t rebuilt from
// values.index_select(inverse), every dtype, random inputs with many repeats, a transposed view,
// dims 0, 1 and -1 of 2-D and 3-D inputs, NaN, empty and 0-d inputs, the flags, the errors.
#include <cmath>
#include <map>
#include <optional>
#include <vector>

#include <gtest/gtest.h>

#include "../nn/nn_test_util.h"
#include "wick/wick.h"

using namespace wick;
using wick::testing::error_of;

namespace {

const std::vector<Dtype> kDtypes = {kBool,  kUInt8,   kInt8,     kInt16,   kInt32,
                                    kInt64, kFloat16, kBFloat16, kFloat32, kFloat64};

std::vector<double> host(const Tensor& t) {
  return t.detach().cpu().contiguous().to(kFloat64).to_vector<double>();
}
std::vector<int64_t> longs(const Tensor& t) { return t.cpu().contiguous().to_vector<int64_t>(); }
std::vector<int64_t> shape(const Tensor& t) { return t.sizes().vec(); }

// Equal doubles, NaN equal to NaN.
void expect_same(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) EXPECT_TRUE(std::isnan(got[i])) << "at " << i;
    else EXPECT_EQ(got[i], want[i]) << "at " << i;
  }
}

struct Reference {
  std::vector<std::vector<double>> values;  // one entry per value (slice), in the result's order
  std::vector<int64_t> inverse, counts;
};

// torch.unique over items (elements or slices): sorted by a std::map; an item holding a NaN is
// equal to nothing and comes after the others, in its order in the input (as wick's stable
// sort leaves them; the NaN-free items are what PyTorch specifies).
Reference unique_reference(const std::vector<std::vector<double>>& items) {
  auto has_nan = [](const std::vector<double>& v) {
    for (double x : v)
      if (std::isnan(x)) return true;
    return false;
  };
  std::map<std::vector<double>, int64_t> counts;
  int64_t nans = 0;
  for (const auto& v : items) has_nan(v) ? ++nans : ++counts[v];
  Reference r;
  std::map<std::vector<double>, int64_t> index;
  for (const auto& [v, c] : counts) {
    index[v] = int64_t(r.values.size());
    r.values.push_back(v);
    r.counts.push_back(c);
  }
  for (const auto& v : items) {
    if (!has_nan(v)) {
      r.inverse.push_back(index[v]);
      continue;
    }
    r.inverse.push_back(int64_t(r.values.size()));
    r.values.push_back(v);
    r.counts.push_back(1);
  }
  return r;
}

// torch.unique_consecutive over items: a run ends where an item is not equal (==, so never
// for a NaN) to the one before.
Reference consecutive_reference(const std::vector<std::vector<double>>& items) {
  Reference r;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i == 0 || !(items[i] == items[i - 1])) {
      r.values.push_back(items[i]);
      r.counts.push_back(0);
    }
    ++r.counts.back();
    r.inverse.push_back(int64_t(r.values.size()) - 1);
  }
  return r;
}

// t's elements (no dim) or its slices along dim, each as a row-major list.
std::vector<std::vector<double>> items_of(const Tensor& t, std::optional<int64_t> dim) {
  std::vector<std::vector<double>> items;
  if (!dim) {
    for (double x : host(t)) items.push_back({x});
    return items;
  }
  for (int64_t i = 0; i < t.size(*dim); ++i) items.push_back(host(t.select(*dim, i)));
  return items;
}

// unique (or unique_consecutive) of x against the reference: values, inverse, counts, and x
// rebuilt as values.index_select(inverse).
void expect_unique(const Tensor& x, std::optional<int64_t> dim, bool consecutive) {
  SCOPED_TRACE(::testing::Message() << "dtype " << x.dtype() << " sizes " << x.sizes() << " dim "
                                    << (dim ? std::to_string(*dim) : "none")
                                    << (consecutive ? " consecutive" : ""));
  auto [values, inverse, counts] =
      consecutive ? unique_consecutive(x, true, true, dim) : unique(x, true, true, true, dim);
  const std::vector<std::vector<double>> items = items_of(x, dim);
  const Reference want = consecutive ? consecutive_reference(items) : unique_reference(items);
  EXPECT_EQ(values.dtype(), x.dtype());
  EXPECT_EQ(inverse.dtype(), kInt64);
  EXPECT_EQ(counts.dtype(), kInt64);
  EXPECT_EQ(values.device(), x.device());
  EXPECT_EQ(inverse.device(), x.device());
  EXPECT_EQ(counts.device(), x.device());
  const int64_t k = int64_t(want.values.size());
  if (dim) {
    std::vector<int64_t> sizes = shape(x);
    const int64_t d = *dim < 0 ? *dim + x.dim() : *dim;
    sizes[size_t(d)] = k;
    ASSERT_EQ(shape(values), sizes);
    EXPECT_EQ(shape(inverse), (std::vector<int64_t>{x.size(d)}));
    for (int64_t i = 0; i < k; ++i) expect_same(host(values.select(d, i)), want.values[size_t(i)]);
    expect_same(host(values.index_select(d, inverse)), host(x));
  } else {
    ASSERT_EQ(shape(values), (std::vector<int64_t>{k}));
    EXPECT_EQ(shape(inverse), shape(x));
    std::vector<double> flat;
    for (const auto& v : want.values) flat.push_back(v[0]);
    expect_same(host(values), flat);
    expect_same(host(values.index_select(0, inverse.reshape({-1}))), host(x));
  }
  EXPECT_EQ(longs(inverse), want.inverse);
  EXPECT_EQ(longs(counts), want.counts);
}

// Values in [0, high) of dtype (0 and 1 for bool): many repeats.
Tensor repeats(IntArrayRef sizes, Dtype dtype, Device dev, int64_t high = 4) {
  return randint(0, dtype == kBool ? 2 : high, sizes, TensorOptions(kInt64).device(dev)).to(dtype);
}

// x of sizes with size(dim) slices drawn from a pool of 3: repeated slices along dim.
Tensor repeated_slices(IntArrayRef sizes, int64_t dim, Dtype dtype, Device dev) {
  std::vector<int64_t> pool_sizes = sizes.vec();
  pool_sizes[size_t(dim)] = 3;
  Tensor pool = repeats(pool_sizes, dtype, dev, 3);
  return pool.index_select(dim, randint(0, 3, {sizes[size_t(dim)]}, TensorOptions(kInt64).device(dev)));
}

class UniqueTest : public wick::testing::OnEachDevice<2718> {};

TEST_P(UniqueTest, FlatMatchesAMapOfTheValuesOnEveryDtype) {
  for (Dtype dt : kDtypes) {
    expect_unique(repeats({50}, dt, dev()), std::nullopt, false);
    expect_unique(repeats({4, 3, 5}, dt, dev(), 7), std::nullopt, false);
    expect_unique(repeats({1}, dt, dev()), std::nullopt, false);
  }
  // A wider range: some values seen once.
  expect_unique(randint(-1000, 1000, {300}, TensorOptions(kInt64).device(dev())), std::nullopt, false);
}

TEST_P(UniqueTest, HandValues) {
  Tensor x = tensor(std::vector<int64_t>{2, 3, 1, 3, 2, 2}).to(dev());
  auto [values, inverse, counts] = unique(x, true, true, true);
  EXPECT_EQ(longs(values), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(longs(inverse), (std::vector<int64_t>{1, 2, 0, 2, 1, 1}));
  EXPECT_EQ(longs(counts), (std::vector<int64_t>{1, 3, 2}));
  // Rows [1, 3], [2, 3], [1, 3], [1, 2] along dim 0, and the columns along dim 1.
  Tensor m = tensor(std::vector<int64_t>{1, 3, 2, 3, 1, 3, 1, 2}).view({4, 2}).to(dev());
  auto [rows, row_inverse, row_counts] = unique(m, true, true, true, 0);
  EXPECT_EQ(longs(rows), (std::vector<int64_t>{1, 2, 1, 3, 2, 3}));
  EXPECT_EQ(longs(row_inverse), (std::vector<int64_t>{1, 2, 1, 0}));
  EXPECT_EQ(longs(row_counts), (std::vector<int64_t>{1, 2, 1}));
  auto [columns, column_inverse, column_counts] = unique(m, true, true, true, 1);
  EXPECT_EQ(longs(columns), longs(m));
  EXPECT_EQ(longs(column_inverse), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(longs(column_counts), (std::vector<int64_t>{1, 1}));
  // unique_consecutive's runs: [1, 1, 2, 2, 3, 1, 1, 2].
  Tensor r = tensor(std::vector<int64_t>{1, 1, 2, 2, 3, 1, 1, 2}).to(dev());
  auto [runs, run_inverse, run_counts] = unique_consecutive(r, true, true);
  EXPECT_EQ(longs(runs), (std::vector<int64_t>{1, 2, 3, 1, 2}));
  EXPECT_EQ(longs(run_inverse), (std::vector<int64_t>{0, 0, 1, 1, 2, 3, 3, 4}));
  EXPECT_EQ(longs(run_counts), (std::vector<int64_t>{2, 2, 1, 2, 1}));
}

TEST_P(UniqueTest, NonContiguousInput) {
  for (Dtype dt : {kInt64, kFloat32, kBool}) {
    Tensor x = repeats({6, 9}, dt, dev()).t();  // a transposed view
    ASSERT_FALSE(x.is_contiguous());
    expect_unique(x, std::nullopt, false);
    expect_unique(x, 0, false);
    expect_unique(x, 1, false);
    expect_unique(x, std::nullopt, true);
    expect_unique(x, 1, true);
    Tensor y = repeated_slices({5, 7}, 1, dt, dev()).t();
    expect_unique(y, 0, false);
  }
}

TEST_P(UniqueTest, DimMatchesAMapOfTheSlices) {
  for (Dtype dt : {kInt64, kInt32, kUInt8, kBool, kFloat32, kFloat64, kBFloat16}) {
    for (int64_t dim : {0, 1, -1}) {
      // Slices of 5 (odd: a column left over in the pairing rounds) and 7 elements.
      expect_unique(repeated_slices({9, 5}, dim < 0 ? 1 : dim, dt, dev()), dim, false);
      expect_unique(repeated_slices({7, 7}, dim < 0 ? 1 : dim, dt, dev()), dim, false);
      // 3-D: slices of 6, 8 and 12 elements, compared in moveaxis(t, dim, 0)'s order.
      const int64_t d = dim < 0 ? 2 : dim;
      expect_unique(repeated_slices({4, 3, 2}, d, dt, dev()), dim, false);
      expect_unique(repeats({4, 3, 2}, dt, dev(), 2), dim, false);  // slices that differ late
    }
    expect_unique(repeated_slices({10}, 0, dt, dev()), 0, false);      // 1-D: the elements
    expect_unique(repeated_slices({12, 1}, 0, dt, dev()), -2, false);  // slices of one element
    expect_unique(repeated_slices({3, 6, 2}, 1, dt, dev()), 1, false);
  }
}

TEST_P(UniqueTest, ConsecutiveMatchesALoopOverRuns) {
  for (Dtype dt : kDtypes) {
    expect_unique(repeats({40}, dt, dev(), 2), std::nullopt, true);
    expect_unique(repeats({3, 4, 5}, dt, dev(), 2), std::nullopt, true);
    for (int64_t dim : {0, 1, -1}) {
      const int64_t d = dim < 0 ? 2 : dim;
      // Slices of a pool of 3 repeat in runs often enough.
      expect_unique(repeated_slices({8, 3, 2}, d, dt, dev()), dim, true);
      expect_unique(repeated_slices({9, 2}, dim < 0 ? 1 : dim, dt, dev()), dim, true);
    }
  }
}

TEST_P(UniqueTest, NaNEqualsNothing) {
  const double nan = NAN;
  for (Dtype dt : {kFloat32, kFloat64, kBFloat16, kFloat16}) {
    SCOPED_TRACE(::testing::Message() << dt);
    Tensor x = tensor(std::vector<double>{1, nan, 1, nan, 0}).to(dt).to(dev());
    auto [values, inverse, counts] = unique(x, true, true, true);
    expect_same(host(values), {0, 1, nan, nan});
    EXPECT_EQ(longs(inverse), (std::vector<int64_t>{1, 2, 1, 3, 0}));
    EXPECT_EQ(longs(counts), (std::vector<int64_t>{1, 2, 1, 1}));
    // Rows [1, nan] twice and [0, 1]: the NaN rows stay two.
    Tensor m = tensor(std::vector<double>{1, nan, 1, nan, 0, 1}).view({3, 2}).to(dt).to(dev());
    auto [rows, row_inverse, row_counts] = unique(m, true, true, true, 0);
    expect_same(host(rows), {0, 1, 1, nan, 1, nan});
    EXPECT_EQ(longs(row_inverse), (std::vector<int64_t>{1, 2, 0}));
    EXPECT_EQ(longs(row_counts), (std::vector<int64_t>{1, 1, 1}));
    auto [runs, run_inverse, run_counts] =
        unique_consecutive(tensor(std::vector<double>{nan, nan, 2, 2}).to(dt).to(dev()), true, true);
    expect_same(host(runs), {nan, nan, 2});
    EXPECT_EQ(longs(run_inverse), (std::vector<int64_t>{0, 1, 2, 2}));
    EXPECT_EQ(longs(run_counts), (std::vector<int64_t>{1, 1, 2}));
    // Random values with NaN among them, against the references.
    Tensor r = repeats({30}, dt, dev())
                   .masked_fill(randint(0, 4, {30}, TensorOptions(kInt64).device(dev())) == 0, nan);
    expect_unique(r, std::nullopt, false);
    expect_unique(r, std::nullopt, true);
    Tensor s = repeated_slices({8, 3}, 0, dt, dev());
    s = s.masked_fill(randint(0, 6, {8, 3}, TensorOptions(kInt64).device(dev())) == 0, nan);
    expect_unique(s, 0, true);
  }
}

TEST_P(UniqueTest, EmptyAndZeroDimInputs) {
  const TensorOptions o = TensorOptions(kFloat32).device(dev());
  for (auto f : {+[](const Tensor& t) { return unique(t, true, true, true); },
                 +[](const Tensor& t) { return unique_consecutive(t, true, true); }}) {
    auto [values, inverse, counts] = f(empty({2, 0}, o));
    EXPECT_EQ(shape(values), (std::vector<int64_t>{0}));
    EXPECT_EQ(shape(inverse), (std::vector<int64_t>{2, 0}));
    EXPECT_EQ(shape(counts), (std::vector<int64_t>{0}));
    EXPECT_EQ(inverse.dtype(), kInt64);
    auto [v0, i0, c0] = f(full({}, 5.0, o));  // 0-d: one value, a 0-d inverse
    EXPECT_EQ(shape(v0), (std::vector<int64_t>{1}));
    EXPECT_EQ(host(v0), (std::vector<double>{5}));
    EXPECT_EQ(shape(i0), (std::vector<int64_t>{}));
    EXPECT_EQ(longs(i0), (std::vector<int64_t>{0}));
    EXPECT_EQ(longs(c0), (std::vector<int64_t>{1}));
  }
  // With dim: size(dim) 0 (and no other size 0) gives t's empty shape back.
  for (bool consecutive : {false, true}) {
    Tensor x = empty({0, 3}, o);
    auto [values, inverse, counts] =
        consecutive ? unique_consecutive(x, true, true, 0) : unique(x, true, true, true, 0);
    EXPECT_EQ(shape(values), (std::vector<int64_t>{0, 3}));
    EXPECT_EQ(inverse.numel(), 0);
    EXPECT_EQ(counts.numel(), 0);
    auto [v1, i1, c1] = consecutive ? unique_consecutive(empty({0}, o), true, true, 0)
                                    : unique(empty({0}, o), true, true, true, 0);
    EXPECT_EQ(shape(v1), (std::vector<int64_t>{0}));
  }
}

TEST_P(UniqueTest, FlagsResultsAndGrad) {
  Tensor x = repeats({5, 4}, kFloat32, dev()).requires_grad_(true);
  for (std::optional<int64_t> dim : {std::optional<int64_t>(), std::optional<int64_t>(1)}) {
    auto [values, inverse, counts] = unique(x, true, false, false, dim);
    EXPECT_FALSE(values.requires_grad());
    for (const Tensor& e : {inverse, counts}) {
      EXPECT_EQ(e.numel(), 0);
      EXPECT_EQ(e.dtype(), kInt64);
      EXPECT_EQ(e.device(), x.device());
    }
    // sorted = false gives the sorted order too; one flag leaves the other result empty.
    auto [unsorted, inv, none] = unique(x, false, true, false, dim);
    EXPECT_EQ(host(unsorted), host(values));
    EXPECT_GT(inv.numel(), 0);
    EXPECT_EQ(none.numel(), 0);
    auto [runs, run_inverse, run_counts] = unique_consecutive(x, false, true, dim);
    EXPECT_FALSE(runs.requires_grad());
    EXPECT_EQ(run_inverse.numel(), 0);
    EXPECT_GT(run_counts.numel(), 0);
  }
}

TEST_P(UniqueTest, LibTorchSpellings) {
  Tensor x = repeats({6, 4}, kInt32, dev(), 2);
  auto [values, inverse, counts] = unique(x, true, true, true);
  auto [v1, i1] = _unique(x, true, true);
  EXPECT_EQ(longs(v1.to(kInt64)), longs(values.to(kInt64)));
  EXPECT_EQ(longs(i1), longs(inverse));
  auto [v2, i2, c2] = _unique2(x, true, true, true);
  EXPECT_EQ(longs(v2.to(kInt64)), longs(values.to(kInt64)));
  EXPECT_EQ(longs(i2), longs(inverse));
  EXPECT_EQ(longs(c2), longs(counts));
  auto [rows, row_inverse, row_counts] = unique(x, true, true, true, 0);
  auto [v3, i3, c3] = unique_dim(x, 0, true, true, true);
  EXPECT_EQ(longs(v3.to(kInt64)), longs(rows.to(kInt64)));
  EXPECT_EQ(longs(i3), longs(row_inverse));
  EXPECT_EQ(longs(c3), longs(row_counts));
  auto [runs, run_inverse, run_counts] = unique_consecutive(x, true, true, -1);
  auto [v4, i4, c4] = unique_dim_consecutive(x, -1, true, true);
  EXPECT_EQ(longs(v4.to(kInt64)), longs(runs.to(kInt64)));
  EXPECT_EQ(longs(i4), longs(run_inverse));
  EXPECT_EQ(longs(c4), longs(run_counts));
}

TEST_P(UniqueTest, Errors) {
  const TensorOptions o = TensorOptions(kFloat32).device(dev());
  Tensor x = zeros({2, 3}, o);
  EXPECT_THROW(unique(x, true, false, false, 2), IndexError);
  EXPECT_EQ(error_of([&] { unique(x, true, false, false, 2); }),
            "[unique] Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  EXPECT_EQ(error_of([&] { unique_consecutive(x, false, false, -3); }),
            "[unique_consecutive] Dimension out of range (expected to be in range of [-2, 1], but got -3)");
  EXPECT_EQ(error_of([&] { unique_dim(x, 5); }),
            "[unique_dim] Dimension out of range (expected to be in range of [-2, 1], but got 5)");
  EXPECT_EQ(
      error_of([&] { unique_dim_consecutive(x, 2); }),
      "[unique_dim_consecutive] Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  EXPECT_THROW(unique(full({}, 1.0, o), true, false, false, 0), IndexError);
  EXPECT_EQ(error_of([&] { unique(full({}, 1.0, o), true, false, false, 0); }),
            "[unique] Dimension specified as 0 but tensor has no dimensions");
  EXPECT_THROW(unique(empty({0, 3}, o), true, false, false, 1), ValueError);
  EXPECT_EQ(error_of([&] {
              unique(empty({0, 3}, o), true, false, false, 1);
            }),
            "[unique] There are 0 sized dimensions, and they aren't selected, so unique cannot be applied");
  EXPECT_EQ(
      error_of([&] {
        unique_consecutive(empty({0, 0}, o), false, false, 0);
      }),
      "[unique_consecutive] Number of zero sized dimensions is more than one, so unique cannot be applied");
  EXPECT_EQ(error_of([&] { unique(Tensor()); }).rfind("[unique] expected a defined tensor", 0), 0u);
  EXPECT_EQ(error_of([&] { _unique2(Tensor()); }).rfind("[_unique2] ", 0), 0u);
}

WICK_INSTANTIATE_ON_DEVICES(UniqueTest);

}  // namespace
