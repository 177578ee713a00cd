// Double backward (create_graph): second derivatives of the ops against finite differences of
// their first derivatives and against hand formulas, the gradient penalty recipe, and the
// errors PyTorch raises.
#include <cmath>
#include <optional>

#include <gtest/gtest.h>

#include "gradcheck.h"
#include "wick/wick.h"

namespace wick {
namespace {

using testing::gradgradcheck;
using testing::rnd;
using testing::test_devices;
namespace F = nn::functional;

// A float64 tensor of values in [lo, hi] that requires grad.
Tensor uniform(IntArrayRef sizes, double lo, double hi) {
  return (rand(sizes, TensorOptions(kFloat64)) * (hi - lo) + lo).requires_grad_();
}

std::vector<double> values(const Tensor& t) { return t.detach().cpu().contiguous().to_vector<double>(); }

TEST(DoubleBackward, HandFormulasOfUnaryOps) {
  // d2/dx2 of f(x) summed: the derivative of the first derivative, against its closed form.
  struct Case {
    const char* name;
    std::function<Tensor(const Tensor&)> f;
    std::function<double(double)> f2;
    double lo, hi;
  };
  const Case cases[] = {
      {"tanh", [](const Tensor& x) { return wick::tanh(x); },
       [](double x) { return -2 * std::tanh(x) * (1 - std::tanh(x) * std::tanh(x)); }, -2, 2},
      {"sigmoid", [](const Tensor& x) { return wick::sigmoid(x); },
       [](double x) {
         const double s = 1 / (1 + std::exp(-x));
         return s * (1 - s) * (1 - 2 * s);
       },
       -3, 3},
      {"exp", [](const Tensor& x) { return wick::exp(x); }, [](double x) { return std::exp(x); }, -2, 2},
      {"log", [](const Tensor& x) { return wick::log(x); }, [](double x) { return -1 / (x * x); }, 0.5, 3},
      {"pow3", [](const Tensor& x) { return x.pow(3); }, [](double x) { return 6 * x; }, -2, 2},
      {"relu", [](const Tensor& x) { return wick::relu(x); }, [](double) { return 0.0; }, -2, 2},
      {"x*x", [](const Tensor& x) { return x * x; }, [](double) { return 2.0; }, -2, 2},
      {"1/x", [](const Tensor& x) { return 1.0 / x; }, [](double x) { return 2 / (x * x * x); }, 0.5, 2},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Tensor x = uniform({7}, c.lo, c.hi);
    Tensor g = autograd::grad({c.f(x).sum()}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];
    // relu's first derivative is piecewise constant: it records nothing that leads to x
    if (std::string(c.name) == "relu") {
      EXPECT_EQ(values(g), values((x > 0).to(kFloat64)));
      continue;
    }
    ASSERT_TRUE(g.requires_grad());
    Tensor g2 = autograd::grad({g.sum()}, {x})[0];
    std::vector<double> xv = values(x), got = values(g2);
    for (size_t i = 0; i < xv.size(); ++i) EXPECT_NEAR(got[i], c.f2(xv[i]), 1e-10 * (1 + std::abs(c.f2(xv[i]))));
  }
}

TEST(DoubleBackward, BackwardWithCreateGraphAccumulatesAGradWithAGraph) {
  Tensor x = uniform({4}, -1, 1);
  (x * x * x).sum().backward({}, std::nullopt, /*create_graph=*/true);
  ASSERT_TRUE(x.grad().requires_grad());  // 3 x^2, with its graph
  EXPECT_EQ(x.grad().grad_fn()->name(), "CloneBackward0");
  Tensor g1 = x.grad();
  x.set_grad(Tensor());
  g1.sum().backward();  // d/dx sum(3 x^2) = 6 x
  std::vector<double> xv = values(x), got = values(x.grad());
  for (size_t i = 0; i < xv.size(); ++i) EXPECT_NEAR(got[i], 6 * xv[i], 1e-12);
}

TEST(DoubleBackward, RetainGraphDefaultsToCreateGraph) {
  Tensor x = uniform({3}, -1, 1);
  Tensor y = (x.exp() * x).sum();
  (void)autograd::grad({y}, {x}, {}, std::nullopt, /*create_graph=*/true);
  // the graph was kept: a second pass works
  Tensor g = autograd::grad({y}, {x})[0];
  std::vector<double> xv = values(x), got = values(g);
  for (size_t i = 0; i < xv.size(); ++i) EXPECT_NEAR(got[i], std::exp(xv[i]) * (1 + xv[i]), 1e-12);
  // and now it is freed
  EXPECT_THROW((void)autograd::grad({y}, {x}), ValueError);
}

TEST(DoubleBackward, GradOutputsKeepTheirGraph) {
  // d/dv of <d(x^2)/dx, v> taken through grad_outputs = v: 2 x
  Tensor x = uniform({5}, -1, 1), v = uniform({5}, -1, 1);
  Tensor g = autograd::grad({x * x}, {x}, {v}, std::nullopt, /*create_graph=*/true)[0];
  Tensor dv = autograd::grad({g.sum()}, {v})[0];
  std::vector<double> xv = values(x), got = values(dv);
  for (size_t i = 0; i < xv.size(); ++i) EXPECT_NEAR(got[i], 2 * xv[i], 1e-12);
}

TEST(DoubleBackward, ElementwiseOps) {
  for (Device d : test_devices()) {
    SCOPED_TRACE(d.str());
    gradgradcheck([](const auto& in) { return wick::tanh(in[0]); }, {rnd({3, 4})}, d);
    gradgradcheck([](const auto& in) { return wick::sigmoid(in[0]); }, {rnd({3, 4})}, d);
    gradgradcheck([](const auto& in) { return wick::exp(in[0]); }, {rnd({3, 4})}, d);
    gradgradcheck([](const auto& in) { return wick::log(in[0]); }, {uniform({3, 4}, 0.5, 2)}, d);
    gradgradcheck([](const auto& in) { return wick::gelu(in[0]); }, {rnd({3, 4})}, d);
    gradgradcheck([](const auto& in) { return wick::gelu(in[0], "tanh"); }, {rnd({3, 4})}, d);
    gradgradcheck([](const auto& in) { return wick::silu(in[0]); }, {rnd({3, 4})}, d);
    // relu away from its kink (finite differences would straddle it)
    Tensor r = rnd({3, 4}, false);
    r = wick::where(r > 0, r + 0.1, r - 0.1).requires_grad_();
    gradgradcheck([](const auto& in) { return wick::relu(in[0]) * in[0]; }, {r}, d);
    gradgradcheck([](const auto& in) { return in[0].pow(3.0); }, {rnd({3, 4})}, d);
    gradgradcheck([](const auto& in) { return wick::pow(in[0], in[1]); },
                  {uniform({3, 4}, 0.5, 2), uniform({3, 4}, -1, 2)}, d);
    gradgradcheck([](const auto& in) { return in[0] * in[1]; }, {rnd({3, 4}), rnd({4})}, d);
    gradgradcheck([](const auto& in) { return in[0] / in[1]; }, {rnd({3, 4}), uniform({3, 4}, 0.5, 2)}, d);
    // a non-contiguous view in
    gradgradcheck([](const auto& in) { return wick::tanh(in[0].t()) * in[0].t(); }, {rnd({4, 3})}, d);
  }
}

TEST(DoubleBackward, LinearAlgebra) {
  for (Device d : test_devices()) {
    SCOPED_TRACE(d.str());
    gradgradcheck([](const auto& in) { return wick::matmul(in[0], in[1]); }, {rnd({3, 4}), rnd({4, 2})}, d);
    gradgradcheck([](const auto& in) { return wick::matmul(in[0], in[1]); }, {rnd({2, 3, 4}), rnd({4})}, d);
    gradgradcheck([](const auto& in) { return wick::matmul(in[0], in[1]); }, {rnd({2, 3, 4}), rnd({2, 4, 2})}, d);
    // linear's fused bias + weight gradient is not taken under create_graph
    gradgradcheck([](const auto& in) { return wick::tanh(F::linear(in[0], in[1], in[2])); },
                  {rnd({5, 3}), rnd({4, 3}), rnd({4})}, d);
    gradgradcheck([](const auto& in) { return F::linear(in[0], in[1]) * F::linear(in[0], in[1]); },
                  {rnd({5, 3}), rnd({4, 3})}, d);
  }
}

TEST(DoubleBackward, Reductions) {
  for (Device d : test_devices()) {
    SCOPED_TRACE(d.str());
    gradgradcheck([](const auto& in) { return (in[0] * in[0]).sum(); }, {rnd({3, 4})}, d);
    gradgradcheck([](const auto& in) { return (in[0] * in[0]).sum({1}); }, {rnd({3, 4})}, d);
    gradgradcheck([](const auto& in) { return (in[0] * in[0]).mean(); }, {rnd({3, 4})}, d);
    gradgradcheck([](const auto& in) { return wick::exp(in[0]).mean({0}, true); }, {rnd({3, 4})}, d);
    gradgradcheck([](const auto& in) { return wick::softmax(in[0], 1); }, {rnd({3, 4})}, d);
    gradgradcheck([](const auto& in) { return wick::softmax(in[0], 0); }, {rnd({3, 4})}, d);
    gradgradcheck([](const auto& in) { return wick::log_softmax(in[0], 1); }, {rnd({3, 4})}, d);
    gradgradcheck([](const auto& in) { return wick::cumsum(in[0] * in[0], 1); }, {rnd({3, 4})}, d);
  }
}

TEST(DoubleBackward, Losses) {
  for (Device d : test_devices()) {
    SCOPED_TRACE(d.str());
    Tensor target = rnd({4, 3}, false);
    gradgradcheck([&](const auto& in) { return F::mse_loss(in[0] * in[0], target.to(in[0].device())); },
                  {rnd({4, 3})}, d);
    gradgradcheck([&](const auto& in) { return F::mse_loss(in[0], in[1], "none"); }, {rnd({4, 3}), rnd({4, 3})}, d);
    Tensor labels = tensor<int64_t>({2, 0, 1, 2});
    gradgradcheck([&](const auto& in) { return F::cross_entropy(in[0], labels.to(in[0].device())); },
                  {rnd({4, 3})}, d);
    gradgradcheck(
        [&](const auto& in) {
          return F::cross_entropy(in[0], labels.to(in[0].device()), in[1].detach(), -100, "none");
        },
        {rnd({4, 3}), uniform({3}, 0.5, 1.5).detach()}, d);
    gradgradcheck([&](const auto& in) { return F::nll_loss(wick::log_softmax(in[0], 1), labels.to(in[0].device())); },
                  {rnd({4, 3})}, d);
    // spatial: [N, C, H, W] logits
    Tensor labels2 = tensor<int64_t>({0, 1, 2, 1, 0, 2, 2, 1}).view({2, 2, 2});
    gradgradcheck([&](const auto& in) { return F::cross_entropy(in[0], labels2.to(in[0].device()), {}, -100, "sum"); },
                  {rnd({2, 3, 2, 2})}, d);
    Tensor bt = rand({4, 3}, TensorOptions(kFloat64));
    gradgradcheck([&](const auto& in) { return F::binary_cross_entropy_with_logits(in[0], bt.to(in[0].device())); },
                  {rnd({4, 3})}, d);
  }
}

TEST(DoubleBackward, ConvolutionAndPooling) {
  for (Device d : test_devices()) {
    SCOPED_TRACE(d.str());
    gradgradcheck([](const auto& in) { return F::conv2d(in[0], in[1], in[2]); },
                  {rnd({2, 2, 5, 5}), rnd({3, 2, 3, 3}), rnd({3})}, d);
    gradgradcheck([](const auto& in) { return wick::tanh(F::conv2d(in[0], in[1], {}, 2, 1, 1, 2)); },
                  {rnd({1, 4, 5, 6}), rnd({2, 2, 3, 2})}, d, 1e-5, 1e-4);
    // third order: the double backward's nodes record as well
    {
      Tensor x = rnd({1, 1, 4, 4}).to(d), w = rnd({1, 1, 2, 2}).to(d);
      Tensor y = F::conv2d(x, w);
      Tensor gx = autograd::grad({(y * y).sum()}, {x}, {}, std::nullopt, true)[0];
      Tensor gw = autograd::grad({gx.sum()}, {w}, {}, std::nullopt, true)[0];
      EXPECT_TRUE(gw.requires_grad());
    }
    gradgradcheck([](const auto& in) { return F::max_pool2d(in[0] * in[0], 2); }, {rnd({2, 2, 4, 4})}, d);
    gradgradcheck([](const auto& in) { return F::max_pool2d(in[0], 3, 2, 1) * F::max_pool2d(in[0], 3, 2, 1); },
                  {rnd({1, 2, 5, 5})}, d);
    gradgradcheck([](const auto& in) { return F::avg_pool2d(in[0] * in[0], 2); }, {rnd({2, 2, 4, 4})}, d);
    gradgradcheck([](const auto& in) { return F::avg_pool2d(wick::exp(in[0]), 3, 2, 1, false, false); },
                  {rnd({1, 2, 5, 5})}, d);
  }
}

// The gradient penalty of WGAN-GP: for a critic D with parameters, the mean over samples of
// (||d D(x) / dx||_2 - 1)^2 at x, differentiated wrt the parameters through create_graph.
TEST(DoubleBackward, GradientPenaltyMatchesFiniteDifferences) {
  for (Device d : test_devices()) {
    SCOPED_TRACE(d.str());
    std::vector<Tensor> params = {rnd({6, 4}), rnd({6}), rnd({1, 6}), rnd({1})};
    for (Tensor& p : params) p = p.detach().to(d).requires_grad_();
    Tensor real = rnd({5, 4}, false).to(d), fake = rnd({5, 4}, false).to(d);
    Tensor alpha = rand({5, 1}, TensorOptions(kFloat64)).to(d);
    auto penalty = [&](const std::vector<Tensor>& p, bool create) {
      Tensor x = (alpha * real + (1.0 - alpha) * fake).requires_grad_();
      Tensor h = F::linear(x, p[0], p[1]);
      Tensor score = F::linear(wick::tanh(h) + F::gelu(h) * 0.5, p[2], p[3]);
      Tensor gx = autograd::grad({score}, {x}, {ones_like(score)}, std::nullopt, create)[0];
      Tensor norm = (gx * gx).sum({1}).sqrt();
      return ((norm - 1.0) * (norm - 1.0)).mean();
    };
    Tensor gp = penalty(params, true);
    gp.backward();
    const double eps = 1e-6;
    for (size_t i = 0; i < params.size(); ++i) {
      // the last bias does not reach d score / dx: no gradient (as PyTorch's None), and zero
      // by finite differences
      ASSERT_EQ(params[i].grad().defined(), i != 3) << "parameter " << i;
      std::vector<double> analytic =
          i == 3 ? std::vector<double>(size_t(params[i].numel()), 0.0) : values(params[i].grad());
      Tensor base = params[i].detach().cpu().contiguous().clone();
      double* b = base.data_ptr<double>();
      for (int64_t j = 0; j < base.numel(); ++j) {
        auto eval = [&](double delta) {
          const double keep = b[j];
          b[j] = keep + delta;
          std::vector<Tensor> q = params;
          q[i] = base.to(d, false, true);
          b[j] = keep;
          return penalty(q, false).item<double>();
        };
        const double numeric = (eval(eps) - eval(-eps)) / (2 * eps);
        EXPECT_NEAR(analytic[size_t(j)], numeric, 1e-6 + 1e-5 * std::abs(numeric))
            << "parameter " << i << " element " << j;
      }
    }
    // and with a convolutional critic
    Tensor w = rnd({2, 1, 3, 3}).to(d).detach().requires_grad_();
    Tensor img = rnd({2, 1, 5, 5}, false).to(d);
    auto conv_penalty = [&](const Tensor& wt, bool create) {
      Tensor x = img.detach().requires_grad_();
      Tensor score = wick::tanh(F::conv2d(x, wt, {}, 1, 1)).sum();
      Tensor gx = autograd::grad({score}, {x}, {}, std::nullopt, create)[0];
      return ((gx * gx).sum() - 1.0).pow(2.0);
    };
    conv_penalty(w, true).backward();
    std::vector<double> analytic = values(w.grad());
    Tensor base = w.detach().cpu().contiguous().clone();
    double* b = base.data_ptr<double>();
    for (int64_t j = 0; j < base.numel(); ++j) {
      auto eval = [&](double delta) {
        const double keep = b[j];
        b[j] = keep + delta;
        Tensor moved = base.to(d, false, true);
        b[j] = keep;
        return conv_penalty(moved, false).item<double>();
      };
      const double numeric = (eval(eps) - eval(-eps)) / (2 * eps);
      EXPECT_NEAR(analytic[size_t(j)], numeric, 1e-6 + 1e-5 * std::abs(numeric)) << "conv weight element " << j;
    }
  }
}

TEST(DoubleBackward, SavedOutputUnpacksWithItsNode) {
  // exp saves its result: its double backward must see exp's node through the saved output
  Tensor x = uniform({3}, -1, 1);
  Tensor y = wick::exp(x);
  Tensor g = autograd::grad({y.sum()}, {x}, {}, std::nullopt, true)[0];
  ASSERT_TRUE(g.grad_fn() != nullptr);
  Tensor g2 = autograd::grad({g.sum()}, {x})[0];
  EXPECT_EQ(values(g2), values(y));
}

TEST(DoubleBackward, Errors) {
  // a second backward through a freed graph
  Tensor x = uniform({3}, -1, 1);
  Tensor y = (x.exp() * x).sum();
  y.backward();
  try {
    y.backward();
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("[backward] Trying to backward through the graph a second time"),
              std::string::npos)
        << e.what();
  }
  // the first derivative freed the graph (retain_graph=false with create_graph): its own
  // backward needs the saved tensors
  Tensor z = uniform({3}, -1, 1);
  Tensor gz = autograd::grad({(z.exp()).sum()}, {z}, {}, /*retain_graph=*/false, /*create_graph=*/true)[0];
  ASSERT_TRUE(gz.requires_grad());
  EXPECT_THROW((void)autograd::grad({gz.sum()}, {z}), ValueError);
  // a formula without a double backward
  Tensor c = uniform({4}, 0.5, 1.5);
  try {
    (void)autograd::grad({wick::cumprod(c, 0).sum()}, {c}, {}, std::nullopt, true);
    FAIL() << "no error";
  } catch (const NotImplementedError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[grad] double backward is not implemented for CumprodBackward0", 0), 0u)
        << e.what();
  }
  try {
    wick::cumprod(c, 0).sum().backward({}, std::nullopt, true);
    FAIL() << "no error";
  } catch (const NotImplementedError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[backward] double backward is not implemented for CumprodBackward0", 0),
              0u)
        << e.what();
  }
  // without create_graph, cumprod's backward works
  EXPECT_NO_THROW((void)autograd::grad({wick::cumprod(c, 0).sum()}, {c}));
  // grad_outputs with create_graph are checked as without
  EXPECT_THROW((void)autograd::grad({x * 2}, {x}, {ones({2}, TensorOptions(kFloat64))}, std::nullopt, true),
               ValueError);
}

}  // namespace
}  // namespace wick
