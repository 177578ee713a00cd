// scatter_reduce ("sum", "prod", "mean", "amax", "amin", with and without self), scatter with
// reduce "add"/"multiply", multinomial with a Generator, and which tensors are views: PyTorch's
// documented values, every dtype against a float64 loop written here (strided inputs, repeated
// indices, src larger than index), the errors, and CUDA against the CPU.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "wick/wick.h"

namespace {

using namespace wick;

const std::vector<Dtype> kAllDtypes = {kBool,    kUInt8,    kInt8,    kInt16,   kInt32,
                                       kInt64,   kFloat16,  kBFloat16, kFloat32, kFloat64};
const std::vector<std::string> kReductions = {"sum", "prod", "mean", "amax", "amin"};

std::vector<double> doubles(const Tensor& t) { return t.cpu().to(kFloat64).contiguous().to_vector<double>(); }
std::vector<int64_t> longs(const Tensor& t) { return t.cpu().to_vector<int64_t>(); }

// NaN equal to NaN; within tol * max(1, |want|).
void expect_close(const std::vector<double>& got, const std::vector<double>& want, double tol = 0) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) EXPECT_TRUE(std::isnan(got[i])) << "at " << i;
    else EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::abs(want[i]))) << "at " << i;
  }
}

// scatter_reduce by a loop in float64: the values each position of self receives, reduced with
// self's value first (include_self) or alone; integer means floor, bool results are value != 0.
std::vector<double> reference(const Tensor& self, int64_t d, const Tensor& index, const Tensor& src,
                              const std::string& r, bool include_self) {
  const Tensor out = self.to(kFloat64).contiguous();
  std::vector<double> sv = out.to_vector<double>();
  std::vector<std::vector<double>> got(sv.size());
  const Tensor s = src.to(kFloat64);
  const std::vector<int64_t> iv = longs(index.contiguous());
  const int64_t nd = index.dim();
  std::vector<int64_t> c(size_t(nd), 0);
  for (int64_t e = 0; e < index.numel(); ++e) {
    int64_t rem = e;
    for (int64_t k = nd - 1; k >= 0; --k) {
      c[size_t(k)] = rem % index.size(k);
      rem /= index.size(k);
    }
    Tensor v = s;
    for (int64_t k = 0; k < nd; ++k) v = v.select(0, c[size_t(k)]);
    int64_t off = 0;
    for (int64_t k = 0; k < nd; ++k) off += (k == d ? iv[size_t(e)] : c[size_t(k)]) * out.stride(k);
    got[size_t(off)].push_back(v.item<double>());
  }
  const bool integral = !is_floating_point(self.dtype());
  for (size_t p = 0; p < sv.size(); ++p) {
    if (got[p].empty()) continue;
    std::vector<double> vals = got[p];
    if (include_self) vals.insert(vals.begin(), sv[p]);
    double acc = r == "prod" ? 1 : r == "amax" ? -INFINITY : r == "amin" ? INFINITY : 0;
    for (double v : vals) {
      if (r == "sum" || r == "mean") acc += v;
      else if (r == "prod") acc *= v;
      else if (std::isnan(v) || std::isnan(acc)) acc = NAN;
      else acc = r == "amax" ? std::max(acc, v) : std::min(acc, v);
    }
    if (r == "mean") acc = integral ? std::floor(acc / double(vals.size())) : acc / double(vals.size());
    if (self.dtype() == kBool) acc = acc != 0;
    sv[p] = acc;
  }
  return sv;
}

// Values of dtype small enough that sums and products of a few stay exact in every dtype.
Tensor small(IntArrayRef sizes, Dtype dt) {
  if (dt == kBool) return randint(0, 2, sizes).to(dt);
  if (dt == kUInt8) return randint(0, 3, sizes).to(dt);
  return randint(-2, 3, sizes).to(dt);
}

TEST(ScatterReduce, DocumentedExamples) {
  Tensor src = tensor({1., 2., 3., 4., 5., 6.});
  Tensor index = tensor({0, 1, 0, 1, 2, 1});
  Tensor input = tensor({1., 2., 3., 4.});
  EXPECT_EQ(doubles(input.scatter_reduce(0, index, src, "sum")), std::vector<double>({5, 14, 8, 4}));
  EXPECT_EQ(doubles(input.scatter_reduce(0, index, src, "sum", false)), std::vector<double>({4, 12, 5, 4}));
  Tensor input2 = tensor({5., 4., 3., 2.});
  EXPECT_EQ(doubles(input2.scatter_reduce(0, index, src, "amax")), std::vector<double>({5, 6, 5, 2}));
  EXPECT_EQ(doubles(input2.scatter_reduce(0, index, src, "amax", false)), std::vector<double>({3, 6, 5, 2}));
  EXPECT_EQ(doubles(input.scatter_reduce(0, index, src, "prod")), std::vector<double>({3, 96, 15, 4}));
  expect_close(doubles(input.scatter_reduce(0, index, src, "mean")), {5.0 / 3, 14.0 / 4, 4, 4}, 1e-6);
  EXPECT_EQ(doubles(input.scatter_reduce(0, index, src, "mean", false)), std::vector<double>({2, 4, 5, 4}));
  EXPECT_EQ(doubles(input.scatter_reduce(0, index, src, "amin", false)), std::vector<double>({1, 2, 5, 4}));
  // Integer means floor: -7 / 3 gives -3, -7 / 2 gives -4.
  EXPECT_EQ(longs(tensor({-1, 0}).scatter_reduce(0, tensor({0, 0}), tensor({-2, -4}), "mean")),
            std::vector<int64_t>({-3, 0}));
  EXPECT_EQ(longs(tensor({0, 0}).scatter_reduce(0, tensor({0, 0}), tensor({-3, -4}), "mean", false)),
            std::vector<int64_t>({-4, 0}));
  // scatter's reduce forms (torch.Tensor.scatter_'s examples).
  Tensor m = full({2, 4}, 2.0).scatter_(1, tensor({{2}, {3}}), 1.23, "multiply");
  expect_close(doubles(m), doubles(tensor({{2.f, 2.f, 2.46f, 2.f}, {2.f, 2.f, 2.f, 2.46f}})));
  Tensor a = full({2, 4}, 2.0).scatter(1, tensor({{2}, {3}}), 1.23, "add");
  expect_close(doubles(a), doubles(tensor({{2.f, 2.f, 3.23f, 2.f}, {2.f, 2.f, 2.f, 3.23f}})), 1e-6);
  Tensor t = ones({3}).scatter(0, tensor({0, 0, 2}), tensor({2.f, 3.f, 4.f}), "multiply");
  EXPECT_EQ(doubles(t), std::vector<double>({6, 1, 4}));
}

TEST(ScatterReduce, EveryDtypeAndReductionAgainstLoop) {
  manual_seed(41);
  for (Dtype dt : kAllDtypes) {
    for (const std::string& r : kReductions) {
      if (dt == kBool && r == "mean") continue;  // an error, below
      for (bool self_in : {true, false}) {
        for (int64_t d : {0, 1}) {
          SCOPED_TRACE(::testing::Message() << dt << " " << r << " include_self " << self_in << " dim " << d);
          Tensor self = small({5, 4}, dt).t();                   // [4, 5] strided
          Tensor src = small({6, 7}, dt).t().narrow(0, 1, 5);    // [5, 6] strided, larger than index
          // At most three values and self meet at a position: int8 products stay in range.
          Tensor index = d == 0 ? randint(0, 4, {3, 5}) : randint(0, 5, {4, 3});
          Tensor got = scatter_reduce(self, d, index, src, r, self_in);
          EXPECT_EQ(got.dtype(), dt);
          const double tol = dt == kFloat16 || dt == kBFloat16 ? 1e-2 : is_floating_point(dt) ? 1e-6 : 0;
          expect_close(doubles(got), reference(self, d, index, src, r, self_in), tol);
          // In place on the strided self gives the same values and leaves src alone.
          Tensor base = self.clone().t().contiguous();
          Tensor view = base.t();
          view.scatter_reduce_(d, index, src, r, self_in);
          EXPECT_EQ(doubles(view), doubles(got));
        }
      }
    }
  }
}

TEST(ScatterReduce, NanPropagatesThroughAmaxAndAmin) {
  Tensor self = tensor({1.0, 2.0, double(NAN)});
  Tensor src = tensor({double(NAN), 5.0, -1.0, 0.0});
  Tensor index = tensor({0, 1, 1, 2});
  for (const char* r : {"amax", "amin"}) {
    SCOPED_TRACE(r);
    expect_close(doubles(scatter_reduce(self, 0, index, src, r)), reference(self, 0, index, src, r, true));
    expect_close(doubles(scatter_reduce(self, 0, index, src, r, false)), reference(self, 0, index, src, r, false));
  }
  EXPECT_TRUE(std::isnan(doubles(scatter_reduce(self, 0, index, src, "amax"))[0]));
}

TEST(ScatterReduce, ErrorsChangeNothing) {
  Tensor x = zeros({3});
  const Tensor idx = tensor({0, 1});
  const Tensor src = ones({2});
  try {
    (void)scatter_reduce(x, 0, idx, src, "max");
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()),
              "[scatter_reduce] reduce argument must be either sum, prod, mean, amax or amin, got max");
  }
  try {
    (void)scatter(x, 0, idx, src, "sum");
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()), "[scatter] reduce argument must be either add or multiply.");
  }
  EXPECT_THROW(x.scatter_(0, idx, 1.0, "mean"), ValueError);
  EXPECT_THROW(x.scatter_reduce_(0, tensor({0, 3}), src, "sum"), IndexError);
  EXPECT_THROW(x.scatter_reduce_(0, tensor({0, 1}), ones({2}, kFloat64), "sum"), TypeError);
  EXPECT_THROW(x.scatter_reduce_(0, tensor({0, 1}).to(kInt32), src, "sum"), TypeError);
  EXPECT_THROW(x.scatter_(0, tensor({-1, 1}), src, "add"), IndexError);
  EXPECT_THROW(zeros({2}, kBool).scatter_reduce(0, tensor({0}), ones({1}, kBool), "mean"), TypeError);
  EXPECT_THROW(x.scatter_reduce_(1, idx, src, "sum"), IndexError);
  EXPECT_EQ(doubles(x), std::vector<double>({0, 0, 0}));
  EXPECT_EQ(x._version(), 0u);
  // An empty index leaves self's values.
  EXPECT_EQ(doubles(scatter_reduce(ones({2}), 0, zeros({0}, kInt64), ones({0}), "prod", false)),
            std::vector<double>({1, 1}));
}

// ---- multinomial with a Generator

TEST(GeneratorMultinomial, SeededGeneratorGivesTheDefaultGeneratorsNumbers) {
  const Tensor w = tensor({{0.1, 0.2, 0.3, 0.4}, {0.5, 0.0, 0.25, 0.25}});
  for (bool repl : {true, false}) {
    SCOPED_TRACE(repl);
    manual_seed(5);
    const auto a = longs(multinomial(w, repl ? 30 : 3, repl));
    manual_seed(1234);
    Generator g;
    g.manual_seed(5);
    EXPECT_EQ(g.initial_seed(), 5u);
    EXPECT_EQ(longs(multinomial(w, repl ? 30 : 3, repl, g)), a);
    // The default generator was not drawn from.
    const Tensor state = get_rng_state();
    manual_seed(1234);
    EXPECT_EQ(state.to_vector<int>(), get_rng_state().to_vector<int>());
  }
  // The method form, a copy sharing the state, and get_state/set_state.
  Generator g;
  g.manual_seed(9);
  const Tensor s = g.get_state();
  Generator alias = g;
  const auto first = longs(w.multinomial(10, true, alias));
  EXPECT_NE(doubles(g.get_state()), doubles(s));  // the copy advanced the shared state
  g.set_state(s);
  EXPECT_EQ(longs(multinomial(w, 10, true, g)), first);
  EXPECT_THROW(g.set_state(ones({3}, kUInt8)), ValueError);
  EXPECT_EQ(Generator().initial_seed(), 67280421310721u);  // PyTorch's default seed
}

// ---- views

TEST(Views, ViewOpsMakeViewsAndCopiesDoNot) {
  const Tensor a = arange(6, kFloat32).view({2, 3});
  EXPECT_TRUE(a.is_view());
  const Tensor b = ones({2, 3});
  EXPECT_FALSE(b.is_view());
  EXPECT_TRUE(b.view({6}).is_view());
  EXPECT_TRUE(b.t().is_view());
  EXPECT_TRUE(b.select(0, 1).is_view());
  EXPECT_TRUE(b.narrow(1, 0, 2).is_view());
  EXPECT_TRUE(b.unsqueeze(0).expand({2, 2, 3}).is_view());
  EXPECT_TRUE(b.reshape({3, 2}).is_view());
  EXPECT_TRUE(b.chunk(2, 1)[0].is_view());
  EXPECT_FALSE(b.t().reshape({6}).is_view());  // reshape had to copy
  EXPECT_FALSE(b.t().contiguous().is_view());
  EXPECT_FALSE(b.detach().is_view());
  EXPECT_FALSE(b.clone().is_view());
  EXPECT_FALSE((b + 1).is_view());
}

// ---- CUDA against the CPU

class ScatterReduceCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  }
};

TEST_F(ScatterReduceCuda, EveryDtypeAndReductionMatchesCpu) {
  manual_seed(43);
  const Device c("cuda");
  for (Dtype dt : kAllDtypes) {
    for (const std::string& r : kReductions) {
      if (dt == kBool && r == "mean") continue;
      for (bool self_in : {true, false}) {
        SCOPED_TRACE(::testing::Message() << dt << " " << r << " include_self " << self_in);
        Tensor self = small({6, 5}, dt).t();
        Tensor src = small({5, 8}, dt);
        Tensor index = randint(0, 5, {4, 6});
        // Small integers: every order of the float reductions gives the same values.
        EXPECT_EQ(doubles(scatter_reduce(self.to(c), 1, index.to(c), src.to(c), r, self_in)),
                  doubles(scatter_reduce(self, 1, index, src, r, self_in)));
      }
    }
    SCOPED_TRACE(::testing::Message() << dt);
    Tensor self = small({3, 4}, dt);
    Tensor src = small({3, 4}, dt);
    Tensor index = randint(0, 3, {3, 4});
    EXPECT_EQ(doubles(scatter(self.to(c), 0, index.to(c), src.to(c), "multiply")),
              doubles(scatter(self, 0, index, src, "multiply")));
    EXPECT_EQ(doubles(scatter(self.to(c), 0, index.to(c), 1, "add")), doubles(scatter(self, 0, index, 1, "add")));
  }
  // Many values into few places: amax, amin and (float) sum right under contention.
  Tensor vals = randn({100000}, TensorOptions(kFloat32).device(c));
  Tensor idx = arange(100000, TensorOptions(kInt64).device(c)).remainder(4);
  for (const char* r : {"amax", "amin", "mean"}) {
    SCOPED_TRACE(r);
    expect_close(doubles(scatter_reduce(zeros({4}, c), 0, idx, vals, r, false)),
                 doubles(scatter_reduce(zeros({4}), 0, idx.cpu(), vals.cpu(), r, false)), 1e-4);
  }
  Tensor x = zeros({3}, c);
  EXPECT_THROW(x.scatter_reduce_(0, tensor({3}).to(c), ones({1}, c), "amax"), IndexError);
  EXPECT_EQ(doubles(x), std::vector<double>({0, 0, 0}));
}

TEST_F(ScatterReduceCuda, GeneratorMultinomialMatchesCpu) {
  const Tensor w = rand({3, 40});
  manual_seed(77);
  const auto want = longs(multinomial(w, 25, true));
  Generator g(Device("cuda"));
  g.manual_seed(77);
  EXPECT_EQ(longs(multinomial(w.to("cuda"), 25, true, g)), want);
  Generator cpu_gen;
  EXPECT_THROW(multinomial(w.to("cuda"), 2, true, cpu_gen), DeviceError);
  EXPECT_THROW(multinomial(w, 2, true, g), DeviceError);
}

}  // namespace
