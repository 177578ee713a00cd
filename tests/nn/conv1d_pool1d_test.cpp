// Conv1d, MaxPool1d, AvgPool1d and AdaptiveAvgPool1d (and their functional forms) against
// float64 references computed here by direct loops, their gradients by central differences,
// their printing and node names against PyTorch's, and their errors.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "../autograd/gradcheck.h"
#include "nn_test_util.h"
#include "wick/wick.h"

using namespace wick;
using wick::testing::error_of;
using wick::testing::expect_close;
namespace F = wick::nn::functional;

namespace {

struct Conv1dCase {
  int64_t n, c, l, o, k, stride, padding, dilation, groups;
};

int64_t out_len(int64_t l, int64_t k, int64_t s, int64_t p, int64_t d) { return (l + 2 * p - d * (k - 1) - 1) / s + 1; }

// y[n, o, j] = b[o] + sum over the group's channels c and taps t of x[n, c, j s - p + t d] w[o, c', t].
std::vector<double> conv1d_reference(const Conv1dCase& k, const std::vector<double>& x, const std::vector<double>& w,
                                     const std::vector<double>& b) {
  const int64_t ol = out_len(k.l, k.k, k.stride, k.padding, k.dilation);
  const int64_t cg = k.c / k.groups, og = k.o / k.groups;
  std::vector<double> y;
  for (int64_t n = 0; n < k.n; ++n)
    for (int64_t o = 0; o < k.o; ++o)
      for (int64_t j = 0; j < ol; ++j) {
        double acc = b.empty() ? 0.0 : b[size_t(o)];
        const int64_t g = o / og;
        for (int64_t ci = 0; ci < cg; ++ci)
          for (int64_t t = 0; t < k.k; ++t) {
            const int64_t pos = j * k.stride - k.padding + t * k.dilation;
            if (pos < 0 || pos >= k.l) continue;
            acc += x[size_t((n * k.c + g * cg + ci) * k.l + pos)] * w[size_t((o * cg + ci) * k.k + t)];
          }
        y.push_back(acc);
      }
  return y;
}

class Conv1dTest : public wick::testing::OnEachDevice<71> {};

TEST_P(Conv1dTest, MatchesTheFloat64ReferenceAcrossGeometries) {
  const std::vector<Conv1dCase> cases{{2, 3, 10, 4, 3, 1, 0, 1, 1}, {1, 4, 9, 6, 2, 2, 1, 1, 2},
                                      {3, 2, 12, 2, 3, 1, 2, 2, 1}, {2, 6, 7, 6, 1, 3, 0, 1, 3},
                                      {1, 1, 5, 1, 5, 1, 2, 1, 1}};
  for (const Conv1dCase& k : cases) {
    SCOPED_TRACE(::testing::Message() << "case n=" << k.n << " c=" << k.c << " l=" << k.l << " o=" << k.o
                                      << " k=" << k.k << " s=" << k.stride << " p=" << k.padding
                                      << " d=" << k.dilation << " g=" << k.groups);
    for (Dtype dt : {kFloat32, kFloat64}) {
      Tensor x = randn({k.n, k.c, k.l}, TensorOptions(kFloat64));
      Tensor w = randn({k.o, k.c / k.groups, k.k}, TensorOptions(kFloat64));
      Tensor b = randn({k.o}, TensorOptions(kFloat64));
      const auto want = conv1d_reference(k, x.to_vector<double>(), w.to_vector<double>(), b.to_vector<double>());
      Tensor y = F::conv1d(x.to(dev(), dt), w.to(dev(), dt), b.to(dev(), dt), k.stride, k.padding, k.dilation,
                           k.groups);
      ASSERT_EQ(y.sizes().vec(),
                (std::vector<int64_t>{k.n, k.o, out_len(k.l, k.k, k.stride, k.padding, k.dilation)}));
      EXPECT_EQ(y.dtype(), dt);
      EXPECT_EQ(y.device(), dev());
      expect_close(y, want, dt == kFloat32 ? 1e-4 : 1e-10);
      // no bias
      const auto want_nb = conv1d_reference(k, x.to_vector<double>(), w.to_vector<double>(), {});
      expect_close(F::conv1d(x.to(dev(), dt), w.to(dev(), dt), {}, k.stride, k.padding, k.dilation, k.groups),
                   want_nb, dt == kFloat32 ? 1e-4 : 1e-10);
    }
  }
}

TEST_P(Conv1dTest, UnbatchedAndNonContiguousInputs) {
  const Conv1dCase k{1, 3, 8, 2, 3, 1, 1, 1, 1};
  Tensor x = randn({3, 8}, TensorOptions(kFloat64));
  Tensor w = randn({2, 3, 3}, TensorOptions(kFloat64));
  const auto want = conv1d_reference(k, x.to_vector<double>(), w.to_vector<double>(), {});
  Tensor y = F::conv1d(x.to(dev()), w.to(dev()), {}, 1, 1);
  ASSERT_EQ(y.sizes().vec(), (std::vector<int64_t>{2, 8}));
  expect_close(y, want, 1e-10);
  // The same input stored transposed ([8, 3] seen as [3, 8]).
  Tensor xt = x.t().contiguous().to(dev()).t();
  ASSERT_FALSE(xt.is_contiguous());
  expect_close(F::conv1d(xt, w.to(dev()), {}, 1, 1), want, 1e-10);
  // torch::conv1d spelled in namespace wick
  expect_close(wick::conv1d(x.to(dev()), w.to(dev()), {}, 1, 1), want, 1e-10);
}

TEST_P(Conv1dTest, GradientsMatchCentralDifferences) {
  Tensor x = randn({2, 4, 7}, TensorOptions(kFloat64)).requires_grad_();
  Tensor w = randn({6, 2, 3}, TensorOptions(kFloat64)).requires_grad_();
  Tensor b = randn({6}, TensorOptions(kFloat64)).requires_grad_();
  auto f = [](const std::vector<Tensor>& in) { return F::conv1d(in[0], in[1], in[2], 2, 1, 1, 2); };
  wick::testing::gradcheck(f, {x, w, b}, dev());
  wick::testing::gradgradcheck(f, {x, w, b}, dev());
  // unbatched
  Tensor xu = randn({4, 7}, TensorOptions(kFloat64)).requires_grad_();
  wick::testing::gradcheck([](const std::vector<Tensor>& in) { return F::conv1d(in[0], in[1], {}, 1, 2, 2); },
                           {xu, randn({3, 4, 2}, TensorOptions(kFloat64)).requires_grad_()}, dev());
}

TEST_P(Conv1dTest, NodeIsConvolutionBackward0) {
  Tensor x = randn({2, 3, 6}).to(dev()).requires_grad_();
  Tensor w = randn({4, 3, 3}).to(dev());
  Tensor y = F::conv1d(x, w);
  ASSERT_TRUE(y.grad_fn());
  EXPECT_EQ(y.grad_fn()->name(), "ConvolutionBackward0");
  // An unbatched input gains and loses its batch dim, as PyTorch's.
  EXPECT_EQ(F::conv1d(x[0], w).grad_fn()->name(), "SqueezeBackward1");
}

TEST_P(Conv1dTest, ModuleShapesInitializationAndPrinting) {
  nn::Conv1d conv(nn::Conv1dOptions(2, 4, 3).stride(2).padding(1).dilation(2).groups(2).bias(false));
  conv->to(dev());
  EXPECT_EQ(conv->weight.sizes().vec(), (std::vector<int64_t>{4, 1, 3}));
  EXPECT_FALSE(conv->bias.defined());
  std::ostringstream os;
  os << *conv;
  EXPECT_EQ(os.str(), "Conv1d(2, 4, kernel_size=(3,), stride=(2,), padding=(1,), dilation=(2,), groups=2, bias=False)");
  nn::Conv1d plain(1, 8, 3);
  std::ostringstream os2;
  os2 << *plain;
  EXPECT_EQ(os2.str(), "Conv1d(1, 8, kernel_size=(3,), stride=(1,))");
  // kaiming_uniform_(a = sqrt(5)) bounds: 1 / sqrt(fan_in), fan_in = 1 * 3
  const double bound = 1.0 / std::sqrt(3.0);
  for (double v : plain->weight.to_vector<double>()) EXPECT_LE(std::abs(v), bound + 1e-7);
  for (double v : plain->bias.to_vector<double>()) EXPECT_LE(std::abs(v), bound + 1e-7);
  Tensor x = randn({3, 2, 11}).to(dev());
  Tensor y = conv(x);
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{3, 4, 5}));
  expect_close(y, F::conv1d(x, conv->weight, {}, 2, 1, 2, 2), 1e-6);
  // the named parameters
  auto names = plain->named_parameters().keys();
  EXPECT_EQ(names, (std::vector<std::string>{"weight", "bias"}));
}

TEST_P(Conv1dTest, BadInputsNameConv1dAndChangeNothing) {
  Tensor x = randn({2, 3, 6}).to(dev());
  Tensor w = randn({4, 3, 3}).to(dev());
  EXPECT_EQ(error_of([&] { F::conv1d(x[0][0], w); }).rfind("[conv1d] Expected 2D (unbatched) or 3D (batched)", 0), 0u);
  EXPECT_EQ(error_of([&] { F::conv1d(x, w[0]); }).rfind("[conv1d] weight must be 3-D", 0), 0u);
  EXPECT_THROW(F::conv1d(x, randn({4, 2, 3}).to(dev())), ValueError);  // channels
  EXPECT_EQ(error_of([&] { F::conv1d(x, randn({4, 2, 3}).to(dev())); }).rfind("[conv1d] ", 0), 0u);
  EXPECT_EQ(error_of([&] { F::conv1d(x, w, {}, 0); }).rfind("[conv1d] ", 0), 0u);
  EXPECT_EQ(error_of([&] { F::conv1d(x, w, {}, 1, -1); }).rfind("[conv1d] ", 0), 0u);
  EXPECT_EQ(error_of([&] { F::conv1d(x, randn({4, 3, 9}).to(dev())); }).rfind("[conv1d] ", 0), 0u);  // kernel too long
  EXPECT_THROW(F::conv1d(x, w, randn({3}).to(dev())), ValueError);
  EXPECT_THROW(F::conv1d(x, w.to(kFloat64)), TypeError);
  EXPECT_THROW(nn::Conv1d(nn::Conv1dOptions(3, 4, 3).groups(2)), ValueError);
  EXPECT_EQ(x.sizes().vec(), (std::vector<int64_t>{2, 3, 6}));
}

WICK_INSTANTIATE_ON_DEVICES(Conv1dTest);

// max or mean over each window of x [N, C, L] (padding: -inf for max, 0 counted or not for mean).
std::vector<double> pool1d_reference(const std::vector<double>& x, int64_t rows, int64_t l, int64_t k, int64_t s,
                                     int64_t p, int64_t d, bool max, bool count_include_pad, int64_t ol) {
  std::vector<double> y;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < ol; ++j) {
      double acc = max ? -std::numeric_limits<double>::infinity() : 0.0;
      int64_t count = 0;
      for (int64_t t = 0; t < k; ++t) {
        const int64_t pos = j * s - p + t * d;
        if (!max && pos < l + p) ++count;  // avg: the window within the padded input
        if (pos < 0 || pos >= l) continue;
        const double v = x[size_t(r * l + pos)];
        if (max) {
          acc = std::max(acc, v);
        } else {
          acc += v;
        }
      }
      if (!max) {
        int64_t inside = 0;
        for (int64_t t = 0; t < k; ++t) {
          const int64_t pos = j * s - p + t * d;
          if (pos >= 0 && pos < l) ++inside;
        }
        acc /= double(count_include_pad ? count : inside);
      }
      y.push_back(acc);
    }
  return y;
}

class Pool1dTest : public wick::testing::OnEachDevice<72> {};

TEST_P(Pool1dTest, MaxPoolMatchesTheReference) {
  struct C {
    int64_t k, s, p, d;
    bool ceil;
  };
  for (C c : {C{2, 2, 0, 1, false}, C{3, 1, 1, 1, false}, C{3, 2, 1, 2, false}, C{2, 3, 0, 1, true}}) {
    SCOPED_TRACE(::testing::Message() << "k=" << c.k << " s=" << c.s << " p=" << c.p << " d=" << c.d);
    Tensor x = randn({2, 3, 11}, TensorOptions(kFloat64));
    Tensor y = F::max_pool1d(x.to(dev()), c.k, c.s, c.p, c.d, c.ceil);
    int64_t num = 11 + 2 * c.p - c.d * (c.k - 1) - 1 + (c.ceil ? c.s - 1 : 0);
    int64_t ol = num / c.s + 1;
    if (c.ceil && (ol - 1) * c.s >= 11 + c.p) --ol;
    ASSERT_EQ(y.sizes().vec(), (std::vector<int64_t>{2, 3, ol}));
    expect_close(y, pool1d_reference(x.to_vector<double>(), 6, 11, c.k, c.s, c.p, c.d, true, false, ol), 0);
    // float32, unbatched
    Tensor yu = F::max_pool1d(x[1].to(dev(), kFloat32), c.k, c.s, c.p, c.d, c.ceil);
    ASSERT_EQ(yu.sizes().vec(), (std::vector<int64_t>{3, ol}));
    expect_close(yu, y[1], 1e-6);
  }
}

TEST_P(Pool1dTest, AvgPoolMatchesTheReference) {
  for (bool include : {true, false}) {
    Tensor x = randn({2, 2, 9}, TensorOptions(kFloat64));
    Tensor y = F::avg_pool1d(x.to(dev()), 3, 2, 1, false, include);
    ASSERT_EQ(y.sizes().vec(), (std::vector<int64_t>{2, 2, 5}));
    expect_close(y, pool1d_reference(x.to_vector<double>(), 4, 9, 3, 2, 1, 1, false, include, 5), 1e-12);
  }
  // adaptive: output_size windows [floor(i L / o), ceil((i + 1) L / o))
  Tensor x = randn({1, 2, 10}, TensorOptions(kFloat64));
  Tensor y = F::adaptive_avg_pool1d(x.to(dev()), 4);
  ASSERT_EQ(y.sizes().vec(), (std::vector<int64_t>{1, 2, 4}));
  std::vector<double> want;
  const auto xv = x.to_vector<double>();
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t i = 0; i < 4; ++i) {
      const int64_t lo = (i * 10) / 4, hi = ((i + 1) * 10 + 3) / 4;
      double s = 0;
      for (int64_t j = lo; j < hi; ++j) s += xv[size_t(r * 10 + j)];
      want.push_back(s / double(hi - lo));
    }
  expect_close(y, want, 1e-12);
}

TEST_P(Pool1dTest, GradientsAndNodes) {
  Tensor x = randn({2, 3, 8}, TensorOptions(kFloat64)).requires_grad_();
  wick::testing::gradcheck([](const std::vector<Tensor>& in) { return F::max_pool1d(in[0], 3, 2, 1); }, {x}, dev());
  wick::testing::gradcheck([](const std::vector<Tensor>& in) { return F::avg_pool1d(in[0], 3, 2, 1, true, false); },
                           {x}, dev());
  wick::testing::gradcheck([](const std::vector<Tensor>& in) { return F::adaptive_avg_pool1d(in[0], 3); }, {x},
                           dev());
  Tensor xd = x.detach().to(dev()).requires_grad_();
  // PyTorch's 1-D poolings are composite: unsqueeze, the 2-D pooling, squeeze.
  EXPECT_EQ(F::max_pool1d(xd, 2).grad_fn()->name(), "SqueezeBackward1");
  EXPECT_EQ(F::avg_pool1d(xd, 2).grad_fn()->name(), "SqueezeBackward1");
  EXPECT_EQ(F::adaptive_avg_pool1d(xd, 2).grad_fn()->name(), "SqueezeBackward1");
}

TEST_P(Pool1dTest, ModulesAndPrinting) {
  nn::MaxPool1d mp(2);
  nn::AvgPool1d ap(nn::AvgPool1dOptions(3).stride(2).padding(1));
  nn::AdaptiveAvgPool1d gap(4);
  auto repr = [](const nn::Module& m) {
    std::ostringstream os;
    os << m;
    return os.str();
  };
  EXPECT_EQ(repr(*mp), "MaxPool1d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)");
  EXPECT_EQ(repr(*ap), "AvgPool1d(kernel_size=(3,), stride=(2,), padding=(1,))");
  EXPECT_EQ(repr(*gap), "AdaptiveAvgPool1d(output_size=4)");
  Tensor x = randn({2, 3, 12}).to(dev());
  expect_close(mp(x), F::max_pool1d(x, 2), 0);
  expect_close(ap(x), F::avg_pool1d(x, 3, 2, 1), 1e-6);
  expect_close(gap(x), F::adaptive_avg_pool1d(x, 4), 1e-6);
  EXPECT_EQ(mp(x).sizes().vec(), (std::vector<int64_t>{2, 3, 6}));
}

TEST_P(Pool1dTest, BadInputsNameTheOp) {
  Tensor x = randn({2, 3, 6}).to(dev());
  EXPECT_EQ(error_of([&] { F::max_pool1d(x[0][0], 2); }).rfind("[max_pool1d] Expected 2D or 3D", 0), 0u);
  EXPECT_EQ(error_of([&] { F::avg_pool1d(x.unsqueeze(0), 2); }).rfind("[avg_pool1d] Expected 2D or 3D", 0), 0u);
  EXPECT_EQ(error_of([&] { F::max_pool1d(x, 0); }).rfind("[max_pool1d] ", 0), 0u);
  EXPECT_EQ(error_of([&] { F::max_pool1d(x, 2, 2, 2); }).rfind("[max_pool1d] ", 0), 0u);  // pad > k / 2
  EXPECT_EQ(error_of([&] { F::avg_pool1d(x, 9); }).rfind("[avg_pool1d] ", 0), 0u);       // window past the input
  EXPECT_EQ(error_of([&] { F::adaptive_avg_pool1d(x[0][0], 2); }).rfind("[adaptive_avg_pool1d] ", 0), 0u);
}

WICK_INSTANTIATE_ON_DEVICES(Pool1dTest);

}  // namespace
